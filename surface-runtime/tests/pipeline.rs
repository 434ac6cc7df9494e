//! The invocation pipeline, phase by phase (`docs/pipeline.md`), and the
//! binding rules (`docs/bindings.md`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use surface_runtime::policy::{authorize_with, check_input_with, RequireConfirmation};
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentInvocationResult, AgentProcedureBinding, AuditEvent,
    Cancellation, ComponentDefinition, ConfirmationLevel, ErrorCode, ExecutionError, Phase,
    PolicyDecision, Retry, Timer, ViewCapability,
};

fn selection(ids: &[&str]) -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(ids.iter().map(|s| s.to_string()).collect()))
}

fn disable_ref(f: &Fixture, sel: &Arc<Mutex<Vec<String>>>) -> AgentProcedureBinding<Value> {
    let sel = sel.clone();
    AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable")).bind(
        move || DisableBinding {
            device_ids: sel.lock().unwrap().clone(),
        },
    )
}

fn invocation(id: &str, cap: &str, input: Value) -> AgentInvocation {
    let mut inv = AgentInvocation::new(id, cap);
    inv.input = input;
    inv
}

fn details(result: &AgentInvocationResult) -> serde_json::Map<String, Value> {
    result.error().expect("an error").details.clone()
}

fn retry(result: &AgentInvocationResult) -> Retry {
    result.error().expect("an error").retry
}

/// The pending confirmation a `CONFIRMATION_REQUIRED` answer asks for:
/// what the application shows the user (its `details.summary` is the
/// text of it).
fn pending(f: &Fixture, result: &AgentInvocationResult) -> surface_runtime::PendingConfirmation {
    let id = details(result)["confirmationId"]
        .as_str()
        .expect("a confirmation")
        .to_string();
    let pending = f.registry.pending_confirmation(&id).expect("pending");
    assert_eq!(details(result)["summary"], json!(pending.summary()));
    pending
}

// ----- phase 1: resolve ---------------------------------------------------

#[test]
fn phase1_unknown_capability() {
    let f = fixture();
    let r = call(&f.registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_FOUND"));
    assert_eq!(retry(&r), Retry::AfterRefresh);
    let r = call(&f.registry, "i2", "domain:nope", json!({}));
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_FOUND"));
    assert!(f.executor.calls().is_empty());
}

#[test]
fn phase1_a_named_registration_that_does_not_serve_is_answered_as_the_original() {
    let f = fixture();
    let named = |id: &str, registration: &str| {
        let mut inv = invocation(id, "domain:devices.list", json!({}));
        inv.registration_id = Some(registration.into());
        let r = now(f
            .registry
            .invoke(at_current_version(&f.registry, inv), &consumer()));
        let e = r.error().expect("refused").clone();
        (e.code.to_string(), e.retry, Value::Object(e.details))
    };
    let h = register_plain(&f.registry, "devices.list");
    let gone = h.registration_id().to_string();
    drop(h);
    // Gone, and nothing serves the capability: the component unmounted.
    assert_eq!(
        named("i1", &gone),
        (
            "COMPONENT_UNMOUNTED".into(),
            Retry::AfterRefresh,
            json!({"phase": "resolve"})
        )
    );
    // Never issued, nothing serves it: unknown.
    assert_eq!(named("i2", "r999").0, "CAPABILITY_NOT_FOUND");
    // Another registration serves it now: gone is `registration-replaced`,
    // never issued is `surface-reloaded`, both naming the live one.
    let live = register_plain(&f.registry, "devices.list");
    let live_id = live.registration_id().to_string();
    assert_eq!(
        named("i3", &gone),
        (
            "STALE_CAPABILITY".into(),
            Retry::AfterRefresh,
            json!({"reason": "registration-replaced", "liveRegistrationId": live_id})
        )
    );
    assert_eq!(
        named("i4", "r999").2,
        json!({"reason": "surface-reloaded", "liveRegistrationId": live_id})
    );
    // With two serving, no live registration is named.
    let _second = register_plain(&f.registry, "devices.list");
    assert_eq!(
        named("i5", &gone).2,
        json!({"reason": "registration-replaced"})
    );
    assert!(f.executor.calls().is_empty());
    let message = now(f.registry.invoke(
        {
            let mut inv = invocation("i6", "domain:devices.list", json!({}));
            inv.registration_id = Some(gone.clone());
            at_current_version(&f.registry, inv)
        },
        &consumer(),
    ));
    assert_eq!(
        message.error().unwrap().message,
        "The invocation references a superseded surface snapshot. Refresh the catalog and re-resolve the target."
    );
}

#[test]
fn two_references_to_one_procedure_are_ambiguous_until_registration_id_given() {
    let f = fixture();
    let table_a = f
        .registry
        .register_component(ComponentDefinition::new("devices.table", "a"))
        .unwrap();
    let table_b = f
        .registry
        .register_component(ComponentDefinition::new("devices.table", "b"))
        .unwrap();
    let sel_a = selection(&["d1"]);
    let sel_b = selection(&["d2", "d3"]);
    let ha = f
        .registry
        .register_procedure(disable_ref(&f, &sel_a).context(&table_a))
        .unwrap();
    let hb = f
        .registry
        .register_procedure(disable_ref(&f, &sel_b).context(&table_b))
        .unwrap();

    let r = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    assert_eq!(error_code(&r), Some("AMBIGUOUS_INSTANCE"));
    assert_eq!(retry(&r), Retry::WithChanges);
    assert_eq!(
        details(&r)["instances"],
        json!([
            {"instanceId": "a", "registrationId": ha.registration_id(), "context": {"type": "devices.table", "instanceId": "a"}},
            {"instanceId": "b", "registrationId": hb.registration_id(), "context": {"type": "devices.table", "instanceId": "b"}},
        ])
    );

    // Resolved by registrationId: B's binding executes.
    let f2 = &f;
    let consumer = consumer();
    let mut inv = invocation("i2", "domain:devices.disable", json!({}));
    inv.registration_id = Some(hb.registration_id().to_string());
    let r = now(f2
        .registry
        .invoke(at_current_version(&f2.registry, inv), &consumer));
    assert_eq!(error_code(&r), Some("CONFIRMATION_REQUIRED"));
    let asked = pending(f2, &r);
    assert_eq!(asked.input, json!({"deviceIds": ["d2", "d3"]}));
    assert_eq!(asked.registration_id, hb.registration_id());

    // Also resolved by `instance`.
    let mut inv = invocation("i3", "domain:devices.disable", json!({}));
    inv.instance_id = Some("a".into());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer));
    assert_eq!(pending(&f, &r).input, json!({"deviceIds": ["d1"]}));
}

// ----- phase 2: staleness ---------------------------------------------------

#[test]
fn phase2_destructive_call_with_old_surface_version_is_stale() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let _h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let seen = f.registry.snapshot(&consumer()).surface_version;
    let _other = register_plain(&f.registry, "devices.list");
    let mut inv = invocation("i1", "domain:devices.disable", json!({}));
    inv.surface_version = Some(seen);
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert_eq!(error_code(&r), Some("STALE_CAPABILITY"));
    assert_eq!(retry(&r), Retry::AfterRefresh);
    assert_eq!(details(&r)["reason"], json!("surface-version-mismatch"));

    // A query with the same old version is not stale.
    let mut inv = invocation("i2", "domain:devices.list", json!({}));
    inv.surface_version = Some(seen);
    assert!(now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()))
    .error()
    .is_none());

    // External side effects are stale too.
    let _mail = register_plain(&f.registry, "mail.send");
    let mut inv = invocation("i3", "cap:mail.send", json!({"to": "a@b"}));
    inv.surface_version = Some(seen);
    assert_eq!(
        error_code(&now(f
            .registry
            .invoke(at_current_version(&f.registry, inv), &consumer()))),
        Some("STALE_CAPABILITY")
    );
}

// ----- phase 3: availability ------------------------------------------------

#[test]
fn phase3_unavailable_reference_never_runs_even_when_named() {
    let f = fixture();
    let sel = selection(&[]);
    let s2 = sel.clone();
    let _h = f
        .registry
        .register_procedure(
            disable_ref(&f, &sel)
                .when(move || !s2.lock().unwrap().is_empty())
                .unavailable_reason("Select at least one device first"),
        )
        .unwrap();
    let r = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_AVAILABLE"));
    let e = r.error().unwrap();
    assert_eq!(
        e.message,
        "This capability exists but is currently unavailable: Select at least one device first. Perform the enabling step first, then refresh."
    );
    assert_eq!(e.retry, Retry::AfterRefresh);
    assert_eq!(
        e.details["reason"],
        json!("Select at least one device first")
    );
    assert!(f.executor.calls().is_empty());
}

// ----- phase 4: pre-input policies --------------------------------------------

#[test]
fn phase4_pre_input_policy_denies_with_not_authorized() {
    let f = fixture();
    let seen_kind = Arc::new(Mutex::new(None));
    let sk = seen_kind.clone();
    let bind_calls = Arc::new(AtomicUsize::new(0));
    let bc = bind_calls.clone();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                .bind(move || {
                    bc.fetch_add(1, Ordering::SeqCst);
                    RenameBinding {
                        device_id: "d1".into(),
                    }
                })
                .policy(authorize_with("tenant", move |ctx| {
                    *sk.lock().unwrap() = Some((ctx.consumer.kind, ctx.path.map(str::to_string)));
                    PolicyDecision::Deny {
                        message: "Not allowed in this workspace".into(),
                        internal: Some(json!({"tenant": "t-9"})),
                    }
                })),
        )
        .unwrap();
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"name": "x"}),
    );
    assert_eq!(error_code(&r), Some("NOT_AUTHORIZED"));
    assert_eq!(r.error().unwrap().message, "Not allowed in this workspace");
    assert_eq!(retry(&r), Retry::No);
    // The policy ran before the input phase: bind() was never called.
    assert_eq!(bind_calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        *seen_kind.lock().unwrap(),
        Some((
            surface_runtime::ConsumerKind::Embedded,
            Some("devices.rename".to_string())
        ))
    );
    // The internal detail is audit-only.
    assert!(!serde_json::to_string(&r).unwrap().contains("t-9"));
    let audit = f.audit.lock().unwrap();
    assert!(audit.iter().any(|e| matches!(e, AuditEvent::InvocationRejected { phase: Phase::Authorize, code: ErrorCode::NotAuthorized, internal: Some(i), .. } if i.to_string().contains("t-9"))));
}

// ----- phase 5: effective input ----------------------------------------------

#[test]
fn phase5_non_object_input_is_invalid() {
    let f = fixture();
    let _h = register_plain(&f.registry, "devices.list");
    let r = call(&f.registry, "i1", "domain:devices.list", json!([1]));
    assert_eq!(error_code(&r), Some("INVALID_INPUT"));
    assert_eq!(retry(&r), Retry::WithChanges);
    // As the original answers a procedure's: its generic message, one
    // issue at the input itself.
    assert_eq!(
        r.error().unwrap().message,
        "The input does not match the capability's schema. Fix the listed issues and retry."
    );
    assert_eq!(
        details(&r)["issues"],
        json!([{"path": "", "message": "input must be an object", "keyword": "type"}])
    );
}

#[test]
fn phase5_schema_errors_report_instance_paths() {
    let f = fixture();
    let _h = register_plain(&f.registry, "devices.list");
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.list",
        json!({"query": 5, "extra": true}),
    );
    assert_eq!(error_code(&r), Some("INVALID_INPUT"));
    let errors = details(&r)["issues"].as_array().unwrap().clone();
    let mut pairs: Vec<(String, String)> = errors
        .iter()
        .map(|e| {
            (
                e["path"].to_string(),
                e["keyword"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        vec![
            (r#""extra""#.to_string(), "additionalProperties".to_string()),
            (r#""query""#.to_string(), "type".to_string()),
        ]
    );
    assert!(f.executor.calls().is_empty());
}

#[test]
fn d7_agent_schema_is_manifest_schema_minus_locked_fields() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    let d = snap.procedure(h.registration_id()).unwrap();
    assert_eq!(
        *d.input_schema,
        json!({"type": "object",
               "properties": {"reason": {"type": "string", "description": "Why", "maxLength": 40}},
               "additionalProperties": false})
    );
    assert_eq!(
        serde_json::to_value(&d.bound_fields).unwrap(),
        json!([{"path": "deviceIds", "locked": true, "source": "ui-state"}])
    );
}

#[test]
fn d7_all_bound_schema_is_an_empty_closed_object() {
    let f = fixture();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                .bind(|| DisableWithReason {
                    device_ids: vec!["d1".into()],
                    reason: "r".into(),
                })
                .overridable(Vec::<String>::new()),
        )
        .unwrap();
    // `reason` is overridable: it stays. Lock everything with a binding
    // whose fields are all locked:
    struct AllLocked;
    impl surface_runtime::BoundInput for AllLocked {
        type Input = Value;
        const PROCEDURE: &'static str = "devices.rename";
        fn bound_fields() -> &'static [surface_runtime::BoundField] {
            &[
                surface_runtime::BoundField {
                    name: "deviceId",
                    locked: true,
                },
                surface_runtime::BoundField {
                    name: "name",
                    locked: true,
                },
            ]
        }
        fn to_bound_json(&self) -> Result<serde_json::Map<String, Value>, serde_json::Error> {
            Ok(json!({"deviceId": "d1", "name": "n"})
                .as_object()
                .unwrap()
                .clone())
        }
    }
    let h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                .bind(|| AllLocked),
        )
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    assert_eq!(
        *snap.procedure(h.registration_id()).unwrap().input_schema,
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    let r = call(&f.registry, "i1", "domain:devices.rename", json!({}));
    assert!(r.error().is_none(), "{r:?}");
    assert_eq!(
        f.executor.calls()[0].input,
        json!({"deviceId": "d1", "name": "n"})
    );
}

#[test]
fn d8_locked_field_rejected_before_merge() {
    let f = fixture();
    let bind_calls = Arc::new(AtomicUsize::new(0));
    let bc = bind_calls.clone();
    let _h =
        f.registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                    .bind(move || {
                        bc.fetch_add(1, Ordering::SeqCst);
                        RenameBinding {
                            device_id: "d1".into(),
                        }
                    }),
            )
            .unwrap();
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"deviceId": "d-evil", "name": "x"}),
    );
    assert_eq!(error_code(&r), Some("INVALID_INPUT"));
    assert_eq!(details(&r)["lockedFields"], json!(["deviceId"]));
    assert_eq!(retry(&r), Retry::WithChanges);
    assert_eq!(
        bind_calls.load(Ordering::SeqCst),
        0,
        "checked before bind/merge"
    );
    assert!(f.executor.calls().is_empty());
}

#[test]
fn d8_overridable_field_agent_value_wins_else_bound_value() {
    let f = fixture_with(|b| b.confirmation_ttl(Duration::from_secs(60)));
    let h =
        f.registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                    .bind(|| DisableWithReason {
                        device_ids: vec!["d1".into()],
                        reason: "UI reason".into(),
                    }),
            )
            .unwrap();
    let snap = f.registry.snapshot(&consumer());
    let d = snap.procedure(h.registration_id()).unwrap();
    assert_eq!(
        *d.input_schema,
        json!({"type": "object",
               "properties": {"reason": {"type": "string", "maxLength": 40,
                   "description": "Why (Optional: defaults to the current UI value at execution when omitted.)"}},
               "additionalProperties": false})
    );
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.disable",
        json!({"reason": "agent reason"}),
    );
    assert_eq!(
        pending(&f, &r).input,
        json!({"deviceIds": ["d1"], "reason": "agent reason"})
    );
    let r = call(&f.registry, "i2", "domain:devices.disable", json!({}));
    assert_eq!(
        pending(&f, &r).input,
        json!({"deviceIds": ["d1"], "reason": "UI reason"})
    );
}

#[test]
fn d21_binding_runs_at_execution_time_not_discovery() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    // Discovery carries metadata, never values.
    assert!(!serde_json::to_string(&snap).unwrap().contains("d1"));
    *sel.lock().unwrap() = vec!["d7".into(), "d8".into()];

    let r = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    assert_eq!(error_code(&r), Some("CONFIRMATION_REQUIRED"));
    let cid = details(&r)["confirmationId"].as_str().unwrap().to_string();
    assert_eq!(
        details(&r)["summary"],
        json!(r#"Disable devices — input: {"deviceIds":["d7","d8"]}"#)
    );
    assert_eq!(
        f.registry.pending_confirmation(&cid).unwrap().input,
        json!({"deviceIds": ["d7", "d8"]})
    );
    f.registry.confirm(&cid).unwrap();
    let mut inv = invocation("i2", "domain:devices.disable", json!({}));
    inv.registration_id = Some(h.registration_id().into());
    inv.confirmation_id = Some(cid.clone());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert!(r.error().is_none(), "{r:?}");
    let calls = f.executor.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].input, json!({"deviceIds": ["d7", "d8"]}));
    assert_eq!(calls[0].confirmation.as_ref().unwrap().id, cid);
}

#[test]
fn d21_binding_change_after_confirmation_invalidates_the_evidence() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let _h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let r = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    let cid = details(&r)["confirmationId"].as_str().unwrap().to_string();
    f.registry.confirm(&cid).unwrap();

    // The user changes the selection after approving.
    *sel.lock().unwrap() = vec!["d2".into()];
    let mut inv = invocation("i2", "domain:devices.disable", json!({}));
    inv.confirmation_id = Some(cid.clone());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert_eq!(error_code(&r), Some("CONFIRMATION_INVALID"));
    assert_eq!(details(&r)["reason"], json!("mismatch"));
    assert!(f.executor.calls().is_empty());

    // A fresh request shows the new value.
    let r = call(&f.registry, "i3", "domain:devices.disable", json!({}));
    assert_eq!(pending(&f, &r).input, json!({"deviceIds": ["d2"]}));
}

#[test]
fn binding_failed_when_bind_errors() {
    let f = fixture();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                .try_bind(|| Err::<DisableBinding, _>("no selection model (secret-detail)")),
        )
        .unwrap();
    let r = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    assert_eq!(error_code(&r), Some("PRECONDITION_FAILED"));
    assert_eq!(details(&r)["reason"], json!("binding-failed"));
    assert!(!serde_json::to_string(&r).unwrap().contains("secret-detail"));
    assert!(f.audit.lock().unwrap().iter().any(|e| matches!(e,
        AuditEvent::InvocationRejected { code: ErrorCode::PreconditionFailed, internal: Some(i), .. }
        if i.to_string().contains("secret-detail"))));
}

#[test]
fn binding_failed_when_bound_values_violate_the_full_schema() {
    let f = fixture();
    let sel = selection(&[]);
    let _h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    // `deviceIds` must have at least one item: the binding is wrong, not the agent.
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.disable",
        json!({"reason": "x"}),
    );
    assert_eq!(error_code(&r), Some("PRECONDITION_FAILED"));
    assert_eq!(details(&r)["reason"], json!("binding-failed"));
    assert_eq!(retry(&r), Retry::AfterRefresh);
    // An agent error on an unlocked field is still INVALID_INPUT.
    *sel.lock().unwrap() = vec!["d1".into()];
    let r = call(
        &f.registry,
        "i2",
        "domain:devices.disable",
        json!({"reason": "x".repeat(41)}),
    );
    assert_eq!(error_code(&r), Some("INVALID_INPUT"));
    assert_eq!(details(&r)["issues"][0]["path"], json!("reason"));
    assert!(f.executor.calls().is_empty());
}

// ----- phase 6: post-input policies and confirmation -----------------------

#[test]
fn phase6_post_input_policy_sees_effective_input_and_denies() {
    let f = fixture();
    let seen = Arc::new(Mutex::new(Value::Null));
    let s = seen.clone();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                .bind(|| RenameBinding {
                    device_id: "d1".into(),
                })
                .policy(check_input_with("names", move |_ctx, input| {
                    *s.lock().unwrap() = input.clone();
                    if input["name"] == json!("root") {
                        PolicyDecision::deny("That name is reserved")
                    } else {
                        PolicyDecision::Allow
                    }
                })),
        )
        .unwrap();
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"name": "root"}),
    );
    assert_eq!(error_code(&r), Some("NOT_AUTHORIZED"));
    assert_eq!(r.error().unwrap().message, "That name is reserved");
    assert_eq!(retry(&r), Retry::No);
    assert_eq!(
        *seen.lock().unwrap(),
        json!({"deviceId": "d1", "name": "root"})
    );
    let r = call(
        &f.registry,
        "i2",
        "domain:devices.rename",
        json!({"name": "ok"}),
    );
    assert!(r.error().is_none(), "{r:?}");
}

#[test]
fn phase6_confirmation_level_is_the_max_of_floor_reference_and_policies() {
    let f = fixture();
    // Query floor `never`, reference asks `required`.
    let h1 = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.list"))
                .confirmation(ConfirmationLevel::Required),
        )
        .unwrap();
    // Destructive floor `required`; the reference cannot lower it.
    let sel = selection(&["d1"]);
    let h2 = f
        .registry
        .register_procedure(disable_ref(&f, &sel).confirmation(ConfirmationLevel::Never))
        .unwrap();
    // Mutation floor `optional`; a policy's static level raises it.
    let h3 = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                .bind(|| RenameBinding {
                    device_id: "d1".into(),
                })
                .policy(RequireConfirmation(ConfirmationLevel::Required)),
        )
        .unwrap();
    let snap = f.registry.snapshot(&consumer());
    for h in [&h1, &h2, &h3] {
        assert_eq!(
            snap.procedure(h.registration_id()).unwrap().confirmation,
            ConfirmationLevel::Required
        );
    }
    for (i, cap, input) in [
        ("i1", "domain:devices.list", json!({})),
        ("i2", "domain:devices.disable", json!({})),
        ("i3", "domain:devices.rename", json!({"name": "n"})),
    ] {
        assert_eq!(
            error_code(&call(&f.registry, i, cap, input)),
            Some("CONFIRMATION_REQUIRED"),
            "{cap}"
        );
    }
    assert!(f.executor.calls().is_empty());
}

#[test]
fn optional_confirmation_runs_unless_a_policy_asks_or_the_registry_enforces_it() {
    // requiresApproval is a server hint: devices.rename (mutation, hint set)
    // runs without a local prompt.
    let f = fixture();
    let h =
        f.registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                    .bind(|| RenameBinding {
                        device_id: "d1".into(),
                    }),
            )
            .unwrap();
    assert_eq!(
        f.registry
            .snapshot(&consumer())
            .procedure(h.registration_id())
            .unwrap()
            .confirmation,
        ConfirmationLevel::Optional
    );
    assert!(call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"name": "n"})
    )
    .error()
    .is_none());

    // A post-input policy asks for this input.
    let f = fixture();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                .bind(|| RenameBinding {
                    device_id: "d1".into(),
                })
                .policy(check_input_with("long-names", |_c, input| {
                    if input["name"].as_str().unwrap_or("").len() > 5 {
                        PolicyDecision::RequireConfirmation
                    } else {
                        PolicyDecision::Allow
                    }
                })),
        )
        .unwrap();
    assert!(call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"name": "n"})
    )
    .error()
    .is_none());
    assert_eq!(
        error_code(&call(
            &f.registry,
            "i2",
            "domain:devices.rename",
            json!({"name": "longname"})
        )),
        Some("CONFIRMATION_REQUIRED")
    );

    // The registry enforces optional.
    let f = fixture_with(|b| b.confirm_optional(true));
    let _h =
        f.registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                    .bind(|| RenameBinding {
                        device_id: "d1".into(),
                    }),
            )
            .unwrap();
    assert_eq!(
        error_code(&call(
            &f.registry,
            "i1",
            "domain:devices.rename",
            json!({"name": "n"})
        )),
        Some("CONFIRMATION_REQUIRED")
    );
}

fn confirmed_setup() -> (Fixture, String, String) {
    let f = fixture();
    let sel = selection(&["d1"]);
    let h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    std::mem::forget(h); // keep registered for the fixture's lifetime
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.disable",
        json!({"reason": "cleanup"}),
    );
    assert_eq!(error_code(&r), Some("CONFIRMATION_REQUIRED"));
    assert_eq!(retry(&r), Retry::WithConfirmation);
    let d = details(&r);
    let cid = d["confirmationId"].as_str().unwrap().to_string();
    // The originals' details: the summary text, an ISO expiry, the effect
    // and where the confirmation comes from.
    assert_eq!(
        d.clone(),
        serde_json::from_value::<serde_json::Map<String, Value>>(json!({
            "confirmationId": cid,
            "summary": r#"Disable devices — input: {"deviceIds":["d1"],"reason":"cleanup"}"#,
            "expiresAt": "1970-01-01T00:21:40.000Z",
            "effect": "destructive",
            "origin": "client"
        }))
        .unwrap()
    );
    let approved = f.registry.confirm(&cid).unwrap();
    assert_eq!(approved.approved_at_ms, Some(1_000_000));
    (f, cid.clone(), cid)
}

fn retry_with(
    f: &Fixture,
    id: &str,
    confirmation_id: String,
    reason: &str,
) -> AgentInvocationResult {
    let mut inv = invocation(id, "domain:devices.disable", json!({"reason": reason}));
    inv.confirmation_id = Some(confirmation_id);
    now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()))
}

#[test]
fn confirmation_evidence_authorizes_one_retry_with_a_fresh_invocation_id() {
    let (f, cid, ev) = confirmed_setup();
    let r = retry_with(&f, "i2", ev.clone(), "cleanup");
    assert_eq!(
        r,
        AgentInvocationResult::ok(
            "i2",
            "domain:devices.disable",
            json!({"ok": true}),
            f.registry.surface_version()
        )
    );
    let calls = f.executor.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].confirmation,
        Some(surface_runtime::ConfirmationInfo {
            id: cid.clone(),
            approved_at_ms: 1_000_000
        })
    );
    // Single use.
    let r = retry_with(&f, "i3", ev, "cleanup");
    assert_eq!(error_code(&r), Some("CONFIRMATION_INVALID"));
    assert_eq!(details(&r)["reason"], json!("consumed"));
    assert_eq!(f.executor.calls().len(), 1);
    let audit = f.audit.lock().unwrap();
    let kinds: Vec<&str> = audit
        .iter()
        .map(|e| match e {
            AuditEvent::InvocationStarted { .. } => "started",
            AuditEvent::ConfirmationRequested { .. } => "requested",
            AuditEvent::ConfirmationApproved { .. } => "approved",
            AuditEvent::Executed { .. } => "executed",
            AuditEvent::InvocationRejected { .. } => "rejected",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "started",
            "requested",
            "approved",
            "started",
            "executed",
            "started",
            "rejected"
        ]
    );
}

#[test]
fn confirmation_evidence_for_a_different_input_is_invalid() {
    let (f, _cid, ev) = confirmed_setup();
    let r = retry_with(&f, "i2", ev, "other reason");
    assert_eq!(error_code(&r), Some("CONFIRMATION_INVALID"));
    assert_eq!(details(&r)["reason"], json!("mismatch"));
    assert!(f.executor.calls().is_empty());
}

#[test]
fn made_up_or_foreign_confirmation_ids_are_invalid() {
    let (f, _cid, ev) = confirmed_setup();
    // An id the registry never issued, and its neighbours.
    for (n, forged) in [
        "conf_000000000000000000000000".to_string(),
        format!("{ev}0"),
        ev[..ev.len() - 1].to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(
            details(&retry_with(&f, &format!("i{}", n + 2), forged, "cleanup"))["reason"],
            json!("mismatch")
        );
    }
    // An id another registry (another secret) issued and approved grants
    // nothing here.
    let other = fixture_with(|b| b.secret([1; 32]));
    let sel = selection(&["d1"]);
    let _h = other
        .registry
        .register_procedure(disable_ref(&other, &sel))
        .unwrap();
    let r = call(
        &other.registry,
        "x1",
        "domain:devices.disable",
        json!({"reason": "cleanup"}),
    );
    let foreign = details(&r)["confirmationId"].as_str().unwrap().to_string();
    assert_ne!(foreign, ev, "ids are derived from each registry's secret");
    other.registry.confirm(&foreign).unwrap();
    assert_eq!(
        details(&retry_with(&f, "i5", foreign, "cleanup"))["reason"],
        json!("mismatch")
    );
    assert!(f.executor.calls().is_empty());
    // The genuine one still works afterwards.
    assert!(retry_with(&f, "i6", ev, "cleanup").error().is_none());
}

#[test]
fn expired_evidence_is_invalid() {
    let (f, _cid, ev) = confirmed_setup();
    f.clock.advance(Duration::from_secs(301));
    let r = retry_with(&f, "i2", ev, "cleanup");
    assert_eq!(details(&r)["reason"], json!("expired"));
    assert!(f.executor.calls().is_empty());
}

#[test]
fn rejected_confirmation_cannot_be_approved_or_used() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let _h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let r = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    let cid = details(&r)["confirmationId"].as_str().unwrap().to_string();
    f.registry.reject(&cid).unwrap();
    assert!(f.registry.pending_confirmation(&cid).is_none());
    assert_eq!(
        f.registry.confirm(&cid),
        Err(surface_runtime::ConfirmationError::Unknown(cid.clone()))
    );
    assert!(f.audit.lock().unwrap().iter().any(|e| matches!(e, AuditEvent::ConfirmationRejected { confirmation_id, .. } if *confirmation_id == cid)));
}

#[test]
fn evidence_is_bound_to_its_registration() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let h1 = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let r = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    let ev = f
        .registry
        .confirm(details(&r)["confirmationId"].as_str().unwrap())
        .unwrap();
    let registration = ev.registration_id.clone();
    let ev = ev.confirmation_id;
    // Same procedure, same selection, another reference.
    let h2 = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let mut inv = invocation("i2", "domain:devices.disable", json!({}));
    inv.registration_id = Some(h2.registration_id().into());
    inv.confirmation_id = Some(ev.clone());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert_eq!(details(&r)["reason"], json!("mismatch"));
    // The original registration, re-registered under a new id, is stale.
    drop(h1);
    let mut inv = invocation("i3", "domain:devices.disable", json!({}));
    inv.registration_id = Some(registration);
    inv.confirmation_id = Some(ev);
    assert_eq!(
        error_code(&now(f
            .registry
            .invoke(at_current_version(&f.registry, inv), &consumer()))),
        Some("STALE_CAPABILITY")
    );
    assert!(f.executor.calls().is_empty());
}

// ----- invocation ids --------------------------------------------------------

#[test]
fn registry_never_executes_one_invocation_id_twice() {
    let f = fixture();
    let _h = register_plain(&f.registry, "devices.list");
    let first = call(
        &f.registry,
        "i1",
        "domain:devices.list",
        json!({"query": "a"}),
    );
    let replay = call(
        &f.registry,
        "i1",
        "domain:devices.list",
        json!({"query": "a"}),
    );
    assert_eq!(first, replay);
    assert_eq!(f.executor.calls().len(), 1);
    let changed = call(
        &f.registry,
        "i1",
        "domain:devices.list",
        json!({"query": "b"}),
    );
    assert_eq!(error_code(&changed), Some("INVOCATION_CONFLICT"));
    assert_eq!(retry(&changed), Retry::WithChanges);
    assert_eq!(
        details(&changed)["reason"],
        json!("id-reused-with-different-request")
    );
    assert_eq!(f.executor.calls().len(), 1);
}

#[test]
fn evicted_results_still_never_execute_twice() {
    let f = fixture_with(|b| b.recorded_results(1));
    let _h = register_plain(&f.registry, "devices.list");
    call(&f.registry, "i1", "domain:devices.list", json!({}));
    call(&f.registry, "i2", "domain:devices.list", json!({}));
    let again = call(&f.registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(details(&again)["reason"], json!("duplicate-invocation"));
    assert_eq!(f.executor.calls().len(), 2);
}

// ----- phase 7: execution ----------------------------------------------------

#[test]
fn phase7_executor_receives_path_capability_and_effective_input() {
    let f = fixture();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "mail.send"))
                .confirmation(ConfirmationLevel::Required),
        )
        .unwrap();
    let r = call(&f.registry, "i1", "cap:mail.send", json!({"to": "a@b"}));
    let ev = f
        .registry
        .confirm(details(&r)["confirmationId"].as_str().unwrap())
        .unwrap();
    assert_eq!(ev.capability_id, "cap:mail.send");
    let mut inv = invocation("i2", "domain:mail.send", json!({"to": "a@b"}));
    inv.confirmation_id = Some(ev.confirmation_id);
    assert!(now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()))
    .error()
    .is_none());
    let c = &f.executor.calls()[0];
    assert_eq!(
        (
            c.path.as_str(),
            c.capability_id.as_str(),
            c.invocation_id.as_str()
        ),
        ("mail.send", "cap:mail.send", "i2")
    );
}

#[test]
fn phase7_executor_errors_are_sanitized() {
    let f = fixture();
    let _h = register_plain(&f.registry, "devices.list");
    *f.executor.fail_with.lock().unwrap() = Some(
        ExecutionError::new(
            ErrorCode::DomainApprovalRequired,
            "Approval pending",
            Retry::No,
        )
        .with_detail("approvalId", "ap-1")
        .with_internal("server said: db host 10.0.0.7"),
    );
    let r = call(&f.registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("DOMAIN_APPROVAL_REQUIRED"));
    assert_eq!(details(&r)["approvalId"], json!("ap-1"));
    assert!(!serde_json::to_string(&r).unwrap().contains("10.0.0.7"));

    // A code an executor may not answer (a local confirmation, an
    // ambiguity, a code this version does not know) becomes
    // EXECUTION_FAILED.
    for (n, code) in [
        ErrorCode::ConfirmationRequired,
        ErrorCode::AmbiguousInstance,
        ErrorCode::Unrecognized("PG_ERROR".into()),
    ]
    .into_iter()
    .enumerate()
    {
        *f.executor.fail_with.lock().unwrap() =
            Some(ExecutionError::new(code, "pg: column x (leak)", Retry::Yes));
        let r = call(
            &f.registry,
            &format!("i2-{n}"),
            "domain:devices.list",
            json!({}),
        );
        let e = r.error().unwrap();
        assert_eq!(
            (e.code.clone(), e.message.as_str(), e.retry),
            (ErrorCode::ExecutionFailed, "The call failed.", Retry::No)
        );
    }
    let audit = f.audit.lock().unwrap();
    assert!(audit.iter().any(|e| matches!(e, AuditEvent::ExecutionFailed { internal: Some(i), .. } if i.to_string().contains("10.0.0.7"))));
    assert!(audit.iter().any(|e| matches!(e, AuditEvent::ExecutionFailed { code: ErrorCode::ExecutionFailed, internal: Some(i), .. } if i.to_string().contains("(leak)"))));
}

#[test]
fn phase7_without_executor_is_execution_failed() {
    let registry = surface_runtime::SurfaceRegistry::new(authority());
    let _h = register_plain(&registry, "devices.list");
    let r = call(&registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("EXECUTION_FAILED"));
}

struct Never;
impl surface_runtime::AgentProcedureExecutor for Never {
    fn execute(
        &self,
        req: surface_runtime::ExecuteRequest,
    ) -> surface_runtime::sync::BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(async move {
            req.info.cancellation.cancelled().await;
            Err(ExecutionError::new(
                ErrorCode::Cancelled,
                "stopped",
                Retry::No,
            ))
        })
    }
}

struct Immediate(Arc<AtomicUsize>);
impl Timer for Immediate {
    fn sleep(&self, d: Duration) -> surface_runtime::sync::BoxFuture<'static, ()> {
        self.0.store(d.as_millis() as usize, Ordering::SeqCst);
        Box::pin(std::future::ready(()))
    }
}

#[test]
fn phase7_timeout_through_the_injected_timer() {
    let slept = Arc::new(AtomicUsize::new(0));
    let f = fixture_with(|b| {
        b.timer(Arc::new(Immediate(slept.clone())))
            .timeout(Duration::from_millis(250))
    });
    f.registry.set_procedure_executor(Arc::new(Never));
    let _h = register_plain(&f.registry, "devices.list");
    let r = call(&f.registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("TIMEOUT"));
    // A server-query is idempotent: the original's answer says so.
    assert_eq!(retry(&r), Retry::Yes);
    assert_eq!(
        Value::Object(details(&r)),
        json!({"timeoutMs": 250, "idempotent": true})
    );
    assert_eq!(
        r.error().unwrap().message,
        "The capability timed out. It is idempotent; retrying with a new invocationId is safe."
    );
    assert_eq!(slept.load(Ordering::SeqCst), 250);
}

/// Waits for its cancellation token and keeps it for inspection.
#[derive(Default)]
struct Waiting(Mutex<Option<Cancellation>>);
impl surface_runtime::AgentProcedureExecutor for Waiting {
    fn execute(
        &self,
        req: surface_runtime::ExecuteRequest,
    ) -> surface_runtime::sync::BoxFuture<'_, Result<Value, ExecutionError>> {
        *self.0.lock().unwrap() = Some(req.info.cancellation.clone());
        Box::pin(async move {
            req.info.cancellation.cancelled().await;
            Err(ExecutionError::new(
                ErrorCode::Cancelled,
                "stopped",
                Retry::No,
            ))
        })
    }
}

#[test]
fn phase7_caller_cancellation_reaches_the_executor() {
    let f = fixture();
    let executor = Arc::new(Waiting::default());
    f.registry.set_procedure_executor(executor.clone());
    let _h = register_plain(&f.registry, "devices.list");
    let cancel = Cancellation::new();
    let consumer = consumer();
    let mut fut = Box::pin(f.registry.invoke_with_cancellation(
        invocation("i1", "domain:devices.list", json!({})),
        &consumer,
        &cancel,
    ));
    assert!(
        futures_util::FutureExt::now_or_never(fut.as_mut()).is_none(),
        "pending while the executor waits"
    );
    let token = executor.0.lock().unwrap().clone().expect("executor called");
    assert!(!token.is_cancelled());
    cancel.cancel();
    let r = now(fut);
    assert_eq!(error_code(&r), Some("CANCELLED"));
    assert!(token.is_cancelled(), "the executor's signal fired");
}

#[test]
fn phase7_timeout_fires_the_executor_cancellation() {
    let f = fixture_with(|b| b.timer(Arc::new(Immediate(Arc::default()))));
    let executor = Arc::new(Waiting::default());
    f.registry.set_procedure_executor(executor.clone());
    let _h =
        f.registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                    .bind(|| RenameBinding {
                        device_id: "d1".into(),
                    }),
            )
            .unwrap();
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"name": "n"}),
    );
    assert_eq!(error_code(&r), Some("TIMEOUT"));
    // A mutation may have taken effect: do not retry blindly.
    assert_eq!(retry(&r), Retry::No);
    assert_eq!(
        Value::Object(details(&r)),
        json!({"timeoutMs": 30_000, "idempotent": false})
    );
    assert_eq!(
        r.error().unwrap().message,
        "The capability timed out and side effects may or may not have occurred. Verify state with an observation before repeating."
    );
    assert!(executor.0.lock().unwrap().as_ref().unwrap().is_cancelled());
}

#[tokio::test]
async fn invoke_runs_under_tokio_with_a_real_timer() {
    struct TokioSleep;
    impl Timer for TokioSleep {
        fn sleep(&self, d: Duration) -> surface_runtime::sync::BoxFuture<'static, ()> {
            Box::pin(tokio::time::sleep(d))
        }
    }
    let f = fixture_with(|b| {
        b.timer(Arc::new(TokioSleep))
            .timeout(Duration::from_millis(20))
    });
    f.registry.set_procedure_executor(Arc::new(Never));
    let _h = register_plain(&f.registry, "devices.list");
    let registry = f.registry.clone();
    // The invoke future is Send: it can be spawned.
    let r = tokio::spawn(async move {
        registry
            .invoke(
                invocation("i1", "domain:devices.list", json!({})),
                &consumer(),
            )
            .await
    })
    .await
    .unwrap();
    assert_eq!(error_code(&r), Some("TIMEOUT"));
}

// ----- view capabilities -----------------------------------------------------

/// A view capability with a runtime schema (`from_json_schema`: derived
/// with schemars, compiled at registration; feature `dynamic`).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SelectInput {
    ids: Vec<String>,
}

fn table(f: &Fixture, selected: Arc<Mutex<Vec<String>>>) -> surface_runtime::RegistrationHandle {
    f.registry
        .register_component(
            ComponentDefinition::new("devices.table", "main").capability(
                ViewCapability::from_json_schema::<SelectInput, _, _>(
                    "select",
                    "Select rows",
                    move |input: SelectInput| {
                        let selected = selected.clone();
                        async move {
                            let n = input.ids.len();
                            *selected.lock().unwrap() = input.ids;
                            Ok(json!({"selected": n}))
                        }
                    },
                ),
            ),
        )
        .unwrap()
}

#[test]
fn view_capability_runs_its_local_handler_with_validated_input() {
    let f = fixture();
    let selected = Arc::new(Mutex::new(Vec::new()));
    let _t = table(&f, selected.clone());
    let r = call(
        &f.registry,
        "i1",
        "view:devices.table.select",
        json!({"ids": ["d1", "d2"]}),
    );
    assert_eq!(
        r,
        AgentInvocationResult::ok(
            "i1",
            "view:devices.table.select",
            json!({"selected": 2}),
            f.registry.surface_version()
        )
    );
    assert_eq!(
        *selected.lock().unwrap(),
        vec!["d1".to_string(), "d2".to_string()]
    );
    let r = call(
        &f.registry,
        "i2",
        "view:devices.table.select",
        json!({"ids": "d1"}),
    );
    assert_eq!(error_code(&r), Some("INVALID_INPUT"));
    assert_eq!(
        details(&r)["issues"],
        json!([{"path": "ids", "message": "expected array, got string", "keyword": "type"}])
    );
    let snap = f.registry.snapshot(&consumer());
    let cap = &snap.components[0].actions[0];
    assert_eq!(cap.capability_id, "view:devices.table.select");
    assert_eq!(
        cap.input_schema["properties"]["ids"]["type"],
        json!("array")
    );
    assert_eq!(cap.input_schema["required"], json!(["ids"]));
}

/// View capability inputs typed and validated at compile time
/// (`view_inputs!`, docs/codegen.md).
mod view {
    surface_macros::view_inputs!("tests/common/view-inputs.json", crate = ::surface_runtime);
}

fn generated_table(f: &Fixture) -> surface_runtime::RegistrationHandle {
    f.registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .capability(ViewCapability::new::<view::SelectRows, _, _>(
                    "select",
                    "Select rows",
                    |input: view::SelectRows| async move { Ok(json!({"selected": input.ids})) },
                ))
                .capability(ViewCapability::new::<view::RenameShown, _, _>(
                    "rename",
                    "Rename the shown device",
                    |input: view::RenameShown| async move {
                        Ok(json!({"renamed": input.device_id, "to": input.name}))
                    },
                )),
        )
        .unwrap()
}

#[test]
fn a_view_inputs_capability_runs_with_its_generated_validator_and_schema() {
    let f = fixture();
    let _t = generated_table(&f);
    let r = call(
        &f.registry,
        "i1",
        "view:devices.table.select",
        json!({"ids": ["d1", "d2"]}),
    );
    let version = f.registry.surface_version().to_string();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"status": "ok", "invocationId": "i1", "capabilityId": "view:devices.table.select",
               "output": {"selected": ["d1", "d2"]}, "surfaceVersion": version})
    );
    let r = call(
        &f.registry,
        "i2",
        "view:devices.table.select",
        json!({"ids": ["d1", ""], "extend": true}),
    );
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"status": "error", "invocationId": "i2", "capabilityId": "view:devices.table.select",
            "error": {
            "code": "INVALID_INPUT",
            "message": "The input does not match the capability's schema. Fix the listed issues and retry.",
            "retry": "with-changes",
            "details": {"issues": [
                {"path": "ids[1]", "message": "must be at least 1 characters", "keyword": "minLength"},
                {"path": "extend", "message": "is not an allowed property", "keyword": "additionalProperties"}
            ]}
        }, "surfaceVersion": version})
    );
    // The agent sees the schema the validator was generated from.
    let snap = f.registry.snapshot(&consumer());
    let cap = &snap.components[0].actions[0];
    assert_eq!(cap.capability_id, "view:devices.table.select");
    assert_eq!(
        *cap.input_schema,
        serde_json::from_str::<Value>(
            <view::SelectRows as surface_runtime::ViewInput>::INPUT_SCHEMA_JSON
        )
        .unwrap()
    );
    assert_eq!(
        cap.input_schema["properties"]["ids"]["description"],
        json!("Ids of the rows to select.")
    );
}

#[test]
fn a_view_inputs_capability_fails_validation_exactly_as_a_procedure_input_does() {
    // `RenameShown` is `devices.rename`'s input schema: the same wrong
    // input gets the same error from both paths.
    let f = fixture();
    let _t = generated_table(&f);
    let _rename = register_plain(&f.registry, "devices.rename");
    for (i, input) in [
        json!({"deviceId": 7, "name": ""}),
        json!({"name": "x", "more": 1}),
        json!({}),
    ]
    .into_iter()
    .enumerate()
    {
        let view = call(
            &f.registry,
            &format!("v{i}"),
            "view:devices.table.rename",
            input.clone(),
        );
        let procedure = call(
            &f.registry,
            &format!("p{i}"),
            "domain:devices.rename",
            input.clone(),
        );
        assert_eq!(error_code(&view), Some("INVALID_INPUT"), "{input}");
        assert_eq!(view.error(), procedure.error(), "{input}");
    }
}

#[test]
fn headless_consumers_neither_see_nor_invoke_view_capabilities() {
    let f = fixture();
    let selected = Arc::new(Mutex::new(Vec::new()));
    let _t = table(&f, selected.clone());
    let headless = AgentConsumer::headless("bot");
    assert!(f.registry.snapshot(&headless).components.is_empty());
    let r = now(f.registry.invoke(
        invocation("i1", "view:devices.table.select", json!({"ids": []})),
        &headless,
    ));
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_FOUND"));
    assert!(selected.lock().unwrap().is_empty());
}

// ----- bounds of what agent traffic can make the registry keep -------------

#[test]
fn max_invocation_ids_bounds_the_lifetime_id_table() {
    let f = fixture_with(|b| b.max_invocation_ids(3).recorded_results(1));
    let _h = register_plain(&f.registry, "devices.list");
    for id in ["i1", "i2", "i3"] {
        assert!(call(&f.registry, id, "domain:devices.list", json!({}))
            .error()
            .is_none());
    }
    assert_eq!(f.registry.remembered_invocation_ids(), 3);
    let r = call(&f.registry, "i4", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("PRECONDITION_FAILED"));
    assert_eq!(retry(&r), Retry::AfterRefresh);
    assert_eq!(details(&r)["reason"], json!("invocation-ids-exhausted"));
    assert_eq!(f.registry.remembered_invocation_ids(), 3);
    // Known ids are still answered, never run again.
    assert!(call(&f.registry, "i3", "domain:devices.list", json!({}))
        .error()
        .is_none());
    assert_eq!(
        details(&call(&f.registry, "i1", "domain:devices.list", json!({})))["reason"],
        json!("duplicate-invocation")
    );
    assert_eq!(f.executor.calls().len(), 3);
    assert!(f.audit.lock().unwrap().iter().any(|e| matches!(
        e,
        AuditEvent::InvocationRejected { invocation_id, phase: Phase::Admission, code: ErrorCode::PreconditionFailed, .. }
            if invocation_id == "i4"
    )));
}

#[test]
fn max_pending_confirmations_refuses_a_new_one_and_keeps_every_pending_one() {
    assert_eq!(
        surface_runtime::registry::DEFAULT_MAX_PENDING_CONFIRMATIONS,
        100
    );
    let f = fixture_with(|b| b.max_pending_confirmations(2));
    let _h = register_plain(&f.registry, "mail.send");
    let ask = |id: &str| call(&f.registry, id, "cap:mail.send", json!({"to": id}));
    let confirmation =
        |r: &AgentInvocationResult| details(r)["confirmationId"].as_str().unwrap().to_string();
    let (c1, c2) = (confirmation(&ask("i1")), confirmation(&ask("i2")));
    let full = ask("i3");
    assert_eq!(error_code(&full), Some("RATE_LIMITED"));
    assert_eq!(retry(&full), Retry::AfterDelay);
    // c1 is approved: no longer pending, so there is room for c3.
    let approved = f.registry.confirm(&c1).unwrap();
    let c3 = confirmation(&ask("i3b"));
    let live: Vec<String> = f
        .registry
        .pending_confirmations()
        .into_iter()
        .map(|p| p.confirmation_id)
        .collect();
    assert_eq!(live, [c1.clone(), c2.clone(), c3.clone()]);
    // The approved one still authorizes its retry.
    let mut retry_inv = invocation("i4", "cap:mail.send", json!({"to": "i1"}));
    retry_inv.confirmation_id = Some(approved.confirmation_id);
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, retry_inv), &consumer()));
    assert!(r.error().is_none(), "{r:?}");
}

#[test]
fn a_repeat_before_the_decision_is_asked_again_for_the_same_confirmation() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let _h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let first = call(&f.registry, "i1", "domain:devices.disable", json!({}));
    let cid = details(&first)["confirmationId"]
        .as_str()
        .unwrap()
        .to_string();
    // The agent polls: the same call without and with the id is the same
    // confirmation, still waiting, not a new dialog.
    let again = call(&f.registry, "i2", "domain:devices.disable", json!({}));
    assert_eq!(details(&again)["confirmationId"], json!(cid));
    let mut inv = invocation("i3", "domain:devices.disable", json!({}));
    inv.confirmation_id = Some(cid.clone());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert_eq!(error_code(&r), Some("CONFIRMATION_REQUIRED"));
    assert_eq!(details(&r)["confirmationId"], json!(cid));
    assert_eq!(f.registry.pending_confirmations().len(), 1);
    // The user declines: the agent is told not to retry.
    f.registry.reject(&cid).unwrap();
    let mut inv = invocation("i4", "domain:devices.disable", json!({}));
    inv.confirmation_id = Some(cid);
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert_eq!(error_code(&r), Some("CONFIRMATION_INVALID"));
    assert_eq!(retry(&r), Retry::No);
    assert_eq!(details(&r)["reason"], json!("denied"));
    assert_eq!(
        r.error().unwrap().message,
        "The user declined this action. Do not retry; respect the decision."
    );
    assert!(f.executor.calls().is_empty());
}

#[test]
fn an_approval_is_bound_to_the_consumer_it_was_asked_for() {
    let f = fixture();
    let sel = selection(&["d1"]);
    let _h = f
        .registry
        .register_procedure(disable_ref(&f, &sel))
        .unwrap();
    let alice = AgentConsumer::embedded("alice");
    let mallory = AgentConsumer::embedded("mallory");
    let ask = invocation("i1", "domain:devices.disable", json!({}));
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, ask), &alice));
    let cid = details(&r)["confirmationId"].as_str().unwrap().to_string();
    f.registry.confirm(&cid).unwrap();
    let mut stolen = invocation("i2", "domain:devices.disable", json!({}));
    stolen.confirmation_id = Some(cid.clone());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, stolen), &mallory));
    assert_eq!(details(&r)["reason"], json!("mismatch"));
    assert!(f.executor.calls().is_empty());
    // Alice's own retry runs.
    let mut retry_inv = invocation("i3", "domain:devices.disable", json!({}));
    retry_inv.confirmation_id = Some(cid);
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, retry_inv), &alice));
    assert!(r.error().is_none(), "{r:?}");
}

#[test]
fn invalid_input_lists_at_most_32_validation_errors() {
    let f = fixture();
    let _h = register_plain(&f.registry, "devices.disable");
    // 40 items of the wrong type: 40 validation errors.
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.disable",
        json!({"deviceIds": vec![1; 40]}),
    );
    assert_eq!(error_code(&r), Some("INVALID_INPUT"));
    let d = details(&r);
    let errors = d["issues"].as_array().unwrap();
    assert_eq!(
        errors.len(),
        surface_runtime::pipeline::MAX_REPORTED_VALIDATION_ERRORS
    );
    assert_eq!(errors[0]["path"], json!("deviceIds[0]"));
    // The issues are the matrix's only INVALID_INPUT detail: no truncation
    // flag reaches the agent (the audit record has it).
    assert_eq!(d.keys().collect::<Vec<_>>(), ["issues"]);
    let r = call(
        &f.registry,
        "i2",
        "domain:devices.disable",
        json!({"deviceIds": vec![1; 32]}),
    );
    assert_eq!(details(&r)["issues"].as_array().unwrap().len(), 32);
}

// ----- generated validators ---------------------------------------------------

/// The fixture's authority carries a validator `manifest!` generated for
/// every input, and every input's result — valid or not, errors, paths,
/// keywords, messages, truncation — is the one the runtime-compiled
/// validator of the same schema gives.
#[test]
fn generated_validators_answer_like_runtime_compiled_ones() {
    let generated = fixture();
    let runtime = runtime_fixture();
    for path in [
        "devices.disable",
        "devices.list",
        "devices.rename",
        "mail.send",
    ] {
        assert!(
            generated
                .registry
                .authority()
                .input_validator(path)
                .is_some(),
            "{path}"
        );
        assert!(
            runtime.registry.authority().input_validator(path).is_none(),
            "{path}"
        );
    }
    // Declared output schemas get one too.
    assert!(generated
        .registry
        .authority()
        .output_validator("devices.list")
        .is_some());
    assert!(generated
        .registry
        .authority()
        .output_validator("devices.rename")
        .is_none());
    let mut handles = Vec::new();
    for f in [&generated, &runtime] {
        for path in [
            "devices.disable",
            "devices.list",
            "devices.rename",
            "mail.send",
        ] {
            handles.push(register_plain(&f.registry, path));
        }
    }
    let long = "x".repeat(41);
    let cases = [
        ("domain:devices.disable", json!({"deviceIds": ["a"]})),
        ("domain:devices.disable", json!({})),
        ("domain:devices.disable", json!({"deviceIds": []})),
        (
            "domain:devices.disable",
            json!({"deviceIds": [""], "reason": long}),
        ),
        (
            "domain:devices.disable",
            json!({"deviceIds": vec![1; 40], "x": 1, "y": 2}),
        ),
        (
            "domain:devices.disable",
            json!({"deviceIds": "a", "reason": 7}),
        ),
        ("domain:devices.list", json!({"query": 5, "extra": true})),
        ("domain:devices.list", json!(null)),
        ("domain:devices.rename", json!({"deviceId": 1})),
        (
            "domain:devices.rename",
            json!({"deviceId": "d", "name": ""}),
        ),
        ("cap:mail.send", json!({"to": ["a"], "cc": 1})),
        ("cap:mail.send", json!({"to": "a@b"})),
    ];
    for (n, (capability, input)) in cases.iter().enumerate() {
        let id = format!("i{n}");
        let g = call(&generated.registry, &id, capability, input.clone());
        let r = call(&runtime.registry, &id, capability, input.clone());
        assert_eq!(g, r, "{capability} {input}");
    }
    // Only `devices.list` runs at once (the valid destructive and
    // external calls wait for confirmation, in both registries alike).
    assert_eq!(generated.executor.calls().len(), 1);
    assert_eq!(runtime.executor.calls().len(), 1);
}
