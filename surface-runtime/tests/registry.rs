//! Registration, snapshot and surface version (`docs/bindings.md`).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{json, Value};
use surface_runtime::{
    AgentManifest, AgentProcedureBinding, AgentProcedureRef, AuditEvent, Authority, ChangeReason,
    ComponentDefinition, RegistrationError, RegistrationKind, SurfaceChange, ViewCapability,
};

fn noop_view(name: &str) -> ViewCapability {
    ViewCapability::with_schema(name, "noop", json!({"type": "object"}), |_v: Value| async {
        Ok(Value::Null)
    })
}

fn rejected(f: &Fixture) -> Vec<(RegistrationKind, String, String)> {
    f.audit
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AuditEvent::ComponentRejected { kind, name, reason } => {
                Some((*kind, name.clone(), reason.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn reference_outside_the_authority_registers_nothing_and_is_audited() {
    let f = fixture();
    // A ref built from a wider manifest the app was not compiled against.
    let wider = Authority::from_manifest(
        AgentManifest::from_json_str(
            r#"{"tools":{"admin.wipe":{"description":"Wipe","inputSchema":{"type":"object"},"effect":"destructive"}}}"#,
        )
        .unwrap(),
    );
    let foreign: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(&wider, "admin.wipe").unwrap();
    let v = f.registry.surface_version();
    let err = f
        .registry
        .register_procedure(AgentProcedureBinding::new(foreign))
        .unwrap_err();
    assert_eq!(
        err,
        RegistrationError::OutsideAuthority {
            path: "admin.wipe".into()
        }
    );
    assert_eq!(f.registry.surface_version(), v);
    assert!(f.registry.snapshot(&consumer()).procedures.is_empty());
    assert_eq!(
        rejected(&f),
        vec![(
            RegistrationKind::Procedure,
            "admin.wipe".to_string(),
            err.to_string()
        )]
    );

    // Same path, different manifest entry (e.g. a changed schema): also outside.
    let changed = Authority::from_manifest(
        AgentManifest::from_json_str(
            r#"{"tools":{"devices.list":{"description":"List devices","inputSchema":{"type":"object"},"effect":"server-query"}}}"#,
        )
        .unwrap(),
    );
    let stale_ref: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(&changed, "devices.list").unwrap();
    assert!(matches!(
        f.registry
            .register_procedure(AgentProcedureBinding::new(stale_ref)),
        Err(RegistrationError::OutsideAuthority { .. })
    ));
}

#[test]
fn narrowed_authority_rejects_procedures_it_dropped() {
    let full = authority();
    let fetched = AgentManifest::from_json_str(
        r#"{"tools":{"devices.list":{"description":"List devices","inputSchema":{"type":"object","properties":{"query":{"type":"string"}},"additionalProperties":false},"outputSchema":{"type":"array"},"effect":"server-query"}}}"#,
    )
    .unwrap();
    let (narrow, dropped) = full.narrow_to(&fetched);
    assert!(dropped.is_empty());
    let registry = surface_runtime::SurfaceRegistry::new(narrow);
    assert!(registry
        .register_procedure(AgentProcedureBinding::new(procedure(&full, "devices.list")))
        .is_ok());
    assert!(matches!(
        registry.register_procedure(AgentProcedureBinding::new(procedure(
            &full,
            "devices.disable"
        ))),
        Err(RegistrationError::OutsideAuthority { .. })
    ));
}

#[test]
fn binding_errors_are_registration_errors() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let err = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.disable")).bind(|| BogusBinding),
        )
        .unwrap_err();
    assert_eq!(
        err,
        RegistrationError::UnknownBoundField {
            path: "devices.disable".into(),
            field: "tenant".into()
        }
    );
    // A binding type declared for another procedure.
    let err = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.list"))
                .bind(|| DisableBinding { device_ids: vec![] }),
        )
        .unwrap_err();
    assert_eq!(
        err,
        RegistrationError::BindingMismatch {
            path: "devices.list".into(),
            binding: "devices.disable".into()
        }
    );
    let err = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.disable"))
                .bind(|| DisableBinding { device_ids: vec![] })
                .overridable(["reason"]),
        )
        .unwrap_err();
    assert_eq!(
        err,
        RegistrationError::OverridableNotBound {
            path: "devices.disable".into(),
            field: "reason".into()
        }
    );
    assert_eq!(rejected(&f).len(), 3);
    assert_eq!(f.registry.surface_version(), 0);
}

#[test]
fn view_capability_named_like_a_manifest_path_is_the_collision_diagnostic() {
    let f = fixture();
    let err = f
        .registry
        .register_component(
            ComponentDefinition::new("devices", "main").capability(noop_view("list")),
        )
        .unwrap_err();
    assert_eq!(
        err,
        RegistrationError::ViewCollision {
            capability_id: "view:devices.list".into(),
            path: "devices.list".into()
        }
    );
    let err = f
        .registry
        .register_component(
            ComponentDefinition::new("panel", "main").capability(noop_view("devices.disable")),
        )
        .unwrap_err();
    assert!(
        matches!(err, RegistrationError::ViewCollision { path, .. } if path == "devices.disable")
    );
    assert_eq!(rejected(&f).len(), 2);
    assert!(rejected(&f)[0]
        .2
        .contains("collides with manifest procedure `devices.list`"));
}

#[test]
fn component_registration_errors() {
    let f = fixture();
    let _a = f
        .registry
        .register_component(ComponentDefinition::new("devices.table", "main"))
        .unwrap();
    assert_eq!(
        f.registry
            .register_component(ComponentDefinition::new("devices.table", "main"))
            .unwrap_err(),
        RegistrationError::DuplicateComponent {
            component_type: "devices.table".into(),
            instance_id: "main".into()
        }
    );
    assert_eq!(
        f.registry
            .register_component(
                ComponentDefinition::new("t", "x")
                    .capability(noop_view("a"))
                    .capability(noop_view("a"))
            )
            .unwrap_err(),
        RegistrationError::DuplicateCapability {
            component_type: "t".into(),
            name: "a".into()
        }
    );
    assert!(matches!(
        f.registry
            .register_component(ComponentDefinition::new("t", "x").capability(
                ViewCapability::with_schema("bad", "d", json!({"type": 5}), |_v: Value| async {
                    Ok(Value::Null)
                })
            )),
        Err(RegistrationError::InvalidSchema { name, .. }) if name == "view:t.bad"
    ));
    assert_eq!(
        f.registry
            .register_component(ComponentDefinition::new("", "x"))
            .unwrap_err(),
        RegistrationError::EmptyComponentType {
            instance_id: "x".into()
        }
    );
}

#[test]
fn empty_component_names_are_refused_naming_what_is_empty() {
    let f = fixture();
    let refused = |definition| f.registry.register_component(definition).unwrap_err();
    let err = refused(ComponentDefinition::new("devices.table", ""));
    assert_eq!(
        err,
        RegistrationError::EmptyInstanceId {
            component_type: "devices.table".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "component `devices.table` has an empty instance id; give each instance a non-empty id, for example `main`"
    );
    assert_eq!(
        refused(ComponentDefinition::new("devices.table", "main").capability(noop_view(""))),
        RegistrationError::EmptyCapabilityName {
            component_type: "devices.table".into()
        }
    );
    assert!(f
        .registry
        .snapshot(&surface_runtime::AgentConsumer::embedded("u"))
        .components
        .is_empty());
}

#[test]
fn context_must_be_a_live_component() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let table = f
        .registry
        .register_component(ComponentDefinition::new("devices.table", "main"))
        .unwrap();
    let list = f
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(&auth, "devices.list")))
        .unwrap();
    // A procedure handle is not a component.
    assert!(matches!(
        f.registry.register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.list")).context(&list)
        ),
        Err(RegistrationError::ContextNotLive { .. })
    ));
    let reference = AgentProcedureBinding::new(procedure(&auth, "devices.list")).context(&table);
    drop(table);
    assert_eq!(
        f.registry.register_procedure(reference).unwrap_err(),
        RegistrationError::ContextNotLive {
            registration_id: "r1".into()
        }
    );
}

#[test]
fn snapshot_descriptor_has_the_documented_shape_and_never_bound_values() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let table = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .description("The devices table")
                .capability(noop_view("select")),
        )
        .unwrap();
    let sel = Arc::new(Mutex::new(vec!["secret-device-7".to_string()]));
    let s1 = sel.clone();
    let s2 = sel.clone();
    let h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.disable"))
                .bind(move || DisableBinding {
                    device_ids: s1.lock().unwrap().clone(),
                })
                .describe(move || {
                    format!(
                        "Bound to the {} selected device(s)",
                        s2.lock().unwrap().len()
                    )
                })
                .meta(json!({"icon": "power"}))
                .context(&table),
        )
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    let value = serde_json::to_value(&snap).unwrap();
    assert_eq!(
        value,
        json!({
            "surfaceId": f.registry.surface_id(),
            "surfaceVersion": "2",
            // The fixture's manual clock: 1,000,000 ms after the epoch.
            "capturedAt": "1970-01-01T00:16:40.000Z",
            "components": [{
                "type": "devices.table", "instanceId": "main", "registrationId": table.registration_id(),
                "description": "The devices table",
                "observations": [],
                "actions": [{"capabilityId": "view:devices.table.select", "name": "select",
                    "description": "noop", "inputSchema": {"type": "object"},
                    "effect": "local-state", "idempotent": false, "reversible": true,
                    "confirmation": "never", "available": true}]
            }],
            "procedures": [{
                "procedureId": "domain:devices.disable",
                "description": "Disable devices",
                "contextualNote": "Bound to the 1 selected device(s)",
                "inputSchema": {"type": "object",
                    "properties": {"reason": {"type": "string", "description": "Why", "maxLength": 40}},
                    "additionalProperties": false},
                "effect": "destructive",
                "confirmation": "required",
                "available": true,
                "boundFields": [{"path": "deviceIds", "locked": true, "source": "ui-state"}],
                "registrationId": h.registration_id(),
                "context": {"type": "devices.table", "instanceId": "main"},
                "meta": {"icon": "power"}
            }]
        })
    );
    assert!(!value.to_string().contains("secret-device-7"));
    // Round-trips (hosts deserialize announced snapshots).
    let back: surface_runtime::SurfaceSnapshot = serde_json::from_value(value).unwrap();
    assert_eq!(back, snap);
}

#[test]
fn snapshot_keeps_the_capability_override_internal_and_reports_output_schema() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let _m = f
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(&auth, "mail.send")))
        .unwrap();
    let _l = f
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(&auth, "devices.list")))
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    let mail = snap.procedures_for("domain:mail.send").next().unwrap();
    // The original's descriptor has no capabilityId: calls name the
    // procedure id; the override is the executor's business.
    let wire = serde_json::to_value(mail).unwrap();
    assert_eq!(wire.get("capabilityId"), None);
    assert_eq!(wire["procedureId"], json!("domain:mail.send"));
    assert_eq!(
        mail.confirmation,
        surface_runtime::ConfirmationLevel::Required
    );
    let list = snap.procedures_for("domain:devices.list").next().unwrap();
    assert_eq!(
        list.output_schema.as_deref(),
        Some(&json!({"type": "array"}))
    );
    assert_eq!(list.confirmation, surface_runtime::ConfirmationLevel::Never);
}

#[test]
fn surface_version_increases_on_registration_unregistration_and_availability() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let changes: Arc<Mutex<Vec<SurfaceChange>>> = Arc::default();
    let sink = changes.clone();
    let sub = f
        .registry
        .subscribe(move |c| sink.lock().unwrap().push(c.clone()));

    let available = Arc::new(AtomicBool::new(true));
    let a = available.clone();
    let h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.list"))
                .when(move || a.load(Ordering::SeqCst))
                .unavailable_reason_with(|| "Open the devices page".to_string()),
        )
        .unwrap();
    assert_eq!(f.registry.surface_version(), 1);
    let s1 = f.registry.snapshot(&consumer());
    assert_eq!(s1.surface_version, 1, "first observation does not bump");
    assert!(s1.procedures[0].available);

    available.store(false, Ordering::SeqCst);
    let s2 = f.registry.snapshot(&consumer());
    assert_eq!(s2.surface_version, 2);
    assert!(!s2.procedures[0].available);
    assert_eq!(
        s2.procedures[0].unavailable_reason.as_deref(),
        Some("Open the devices page")
    );
    assert_eq!(
        f.registry.snapshot(&consumer()).surface_version,
        2,
        "no change, no bump"
    );

    available.store(true, Ordering::SeqCst);
    assert!(f.registry.refresh_availability());
    assert!(!f.registry.refresh_availability());
    assert_eq!(f.registry.surface_version(), 3);
    assert_eq!(f.registry.notify_changed(), 4);
    drop(h);
    assert_eq!(f.registry.surface_version(), 5);

    let rid = "r1".to_string();
    assert_eq!(
        *changes.lock().unwrap(),
        vec![
            SurfaceChange {
                surface_version: 1,
                reason: ChangeReason::Registered {
                    registration_id: rid.clone()
                }
            },
            SurfaceChange {
                surface_version: 2,
                reason: ChangeReason::Availability
            },
            SurfaceChange {
                surface_version: 3,
                reason: ChangeReason::Availability
            },
            SurfaceChange {
                surface_version: 4,
                reason: ChangeReason::Notified
            },
            SurfaceChange {
                surface_version: 5,
                reason: ChangeReason::Unregistered {
                    registration_id: rid
                }
            },
        ]
    );
    drop(sub);
    let _again = f
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(&auth, "devices.list")))
        .unwrap();
    assert_eq!(
        changes.lock().unwrap().len(),
        5,
        "dropped subscription hears nothing"
    );
}

#[test]
fn registration_ids_are_never_reused() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20 {
        let h = f
            .registry
            .register_procedure(AgentProcedureBinding::new(procedure(&auth, "devices.list")))
            .unwrap();
        assert!(seen.insert(h.registration_id().to_string()));
    }
}

#[test]
fn closures_may_use_the_registry_without_deadlock() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let r2 = f.registry.clone();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.list"))
                .when(move || r2.surface_version() < 1_000)
                .describe({
                    let r3 = f.registry.clone();
                    move || format!("v{}", r3.surface_version())
                }),
        )
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    assert!(snap.procedures[0].available);
    assert_eq!(snap.procedures[0].description, "List devices");
    assert_eq!(snap.procedures[0].contextual_note.as_deref(), Some("v1"));
    assert!(call(&f.registry, "i1", "domain:devices.list", json!({}))
        .error()
        .is_none());
}

#[test]
fn dropping_the_registry_leaves_handles_harmless() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    let h = f
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(&auth, "devices.list")))
        .unwrap();
    let id = f.registry.snapshot(&consumer()).procedures[0]
        .registration_id
        .clone();
    let Fixture { registry, .. } = f;
    drop(registry);
    // The handle still answers, and dropping it touches nothing live: a
    // registry made afterwards keeps its own registration.
    assert_eq!(h.registration_id(), id);
    let g = fixture();
    let _kept = g
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            g.registry.authority(),
            "devices.list",
        )))
        .unwrap();
    drop(h);
    assert_eq!(g.registry.snapshot(&consumer()).procedures.len(), 1);
}

#[test]
fn an_observation_ignores_its_input() {
    // As the original: any object is accepted and never reaches the
    // handler. A non-object still breaks the pipeline's rule that an input
    // is an object (the original never reads an observation's input):
    // checked against the input schema as an action's is.
    let f = fixture();
    let seen = Arc::new(Mutex::new(0_usize));
    let calls = seen.clone();
    let _table = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "main").capability(
                ViewCapability::observation(
                    "readState",
                    "Visible rows",
                    json!({"type": "object"}),
                    move || {
                        *calls.lock().unwrap() += 1;
                        async { Ok(json!({"selectedIds": ["d1"]})) }
                    },
                ),
            ),
        )
        .unwrap();
    let version = f.registry.surface_version().to_string();
    for (id, input) in [
        ("i1", json!({})),
        ("i2", Value::Null),
        ("i3", json!({"filter": "all", "limit": 5})),
        ("i4", json!({"nested": {"deep": [1, 2, 3]}})),
    ] {
        let result = call(&f.registry, id, "view:devices.table.readState", input);
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"status": "ok", "invocationId": id,
                   "capabilityId": "view:devices.table.readState",
                   "output": {"selectedIds": ["d1"]}, "surfaceVersion": version}),
            "{id}"
        );
    }
    assert_eq!(*seen.lock().unwrap(), 4);
    for (id, input, got) in [
        ("i5", json!([1]), "array"),
        ("i6", json!("all"), "string"),
        ("i7", json!(3), "number"),
    ] {
        let result = call(&f.registry, id, "view:devices.table.readState", input);
        let error = result.error().expect("a non-object is refused");
        assert_eq!(
            (
                error.code.as_str(),
                error.message.as_str(),
                serde_json::to_value(error.retry).unwrap()
            ),
            (
                "INVALID_INPUT",
                "The input does not match the capability's schema. Fix the listed issues and retry.",
                json!("with-changes")
            ),
            "{id}"
        );
        assert_eq!(
            error.details["issues"],
            json!([{"path": "", "message": format!("expected object, got {got}"), "keyword": "type"}]),
            "{id}"
        );
    }
    assert_eq!(*seen.lock().unwrap(), 4);
}

#[test]
fn two_instances_of_a_view_capability_are_listed_as_the_original_lists_them() {
    let f = fixture();
    let a = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "a")
                .description("The devices of site A")
                .capability(noop_view("clear")),
        )
        .unwrap();
    let b = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "b").capability(noop_view("clear")),
        )
        .unwrap();
    let result = call(&f.registry, "i1", "view:devices.table.clear", json!({}));
    let error = result.error().expect("ambiguous");
    assert_eq!(error.code.as_str(), "AMBIGUOUS_INSTANCE");
    assert_eq!(
        error.message,
        "More than one live instance matches this capability. Re-issue the call with an explicit instanceId or registrationId."
    );
    assert_eq!(
        error.details["instances"],
        json!([
            {"instanceId": "a", "registrationId": a.registration_id(),
             "description": "The devices of site A"},
            {"instanceId": "b", "registrationId": b.registration_id()},
        ])
    );
}

thread_local! {
    /// Whether the registry's evaluation scope is running (test below).
    static IN_SCOPE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[test]
fn evaluation_scope_wraps_every_closure_of_later_registrations() {
    let f = fixture();
    let auth = f.registry.authority().clone();
    // Registered before the scope is set: evaluated as is.
    let seen_before = Arc::new(Mutex::new(Vec::<bool>::new()));
    let before = seen_before.clone();
    let _early = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.list")).when(move || {
                before.lock().unwrap().push(IN_SCOPE.with(|s| s.get()));
                true
            }),
        )
        .unwrap();
    let scopes = Arc::new(Mutex::new(0u32));
    let counted = scopes.clone();
    f.registry.set_evaluation_scope(move |evaluate| {
        *counted.lock().unwrap() += 1;
        IN_SCOPE.with(|s| s.set(true));
        evaluate();
        IN_SCOPE.with(|s| s.set(false));
    });
    let seen = Arc::new(Mutex::new(Vec::<(&str, bool)>::new()));
    let (w, r, d) = (seen.clone(), seen.clone(), seen.clone());
    let h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&auth, "devices.disable"))
                .when(move || {
                    w.lock().unwrap().push(("when", IN_SCOPE.with(|s| s.get())));
                    false
                })
                .unavailable_reason_with(move || {
                    r.lock()
                        .unwrap()
                        .push(("reason", IN_SCOPE.with(|s| s.get())));
                    "Select a device first".to_string()
                })
                .describe(move || {
                    d.lock()
                        .unwrap()
                        .push(("describe", IN_SCOPE.with(|s| s.get())));
                    "Applies to 0 device(s).".to_string()
                }),
        )
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    let disable = snap
        .procedures
        .iter()
        .find(|p| p.procedure_id == "domain:devices.disable")
        .unwrap();
    assert!(!disable.available);
    assert_eq!(
        disable.unavailable_reason.as_deref(),
        Some("Select a device first")
    );
    assert_eq!(
        disable.contextual_note.as_deref(),
        Some("Applies to 0 device(s).")
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [("when", true), ("reason", true), ("describe", true)]
    );
    assert_eq!(*scopes.lock().unwrap(), 3);
    assert_eq!(*seen_before.lock().unwrap(), [false]);

    seen.lock().unwrap().clear();
    let observed = f.registry.observe(&h).unwrap();
    assert_eq!(observed.items().len(), 1);
    assert!(!observed.items()[0].available);
    assert_eq!(
        *seen.lock().unwrap(),
        [("describe", true), ("when", true), ("reason", true)]
    );
    assert_eq!(*scopes.lock().unwrap(), 6);
}
