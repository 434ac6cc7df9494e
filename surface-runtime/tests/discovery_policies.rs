//! Policies at discovery (docs/pipeline.md, "Policies at discovery"):
//! authority hides, state discloses. A hidden capability is absent from the
//! snapshot and every export, and a call naming it anyway is
//! `CAPABILITY_NOT_FOUND`, never run; a disclosed one is listed unavailable
//! with the policy's reason. The built-ins, one test each.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use surface_runtime::export::ToolCatalog;
use surface_runtime::policy::{
    authenticated, authorize_with, environment, has_permission, rate_limit, tenant_boundary,
    RATE_LIMIT_MAX_KEYS,
};
use surface_runtime::registry::ChangeReason;
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentPolicy, AgentProcedureBinding, AuditEvent,
    ComponentDefinition, Discovery, ErrorCode, PolicyDecision, PolicyExt, PolicyStage, Principal,
    SurfaceRegistry, ViewCapability,
};

fn bind_with(
    registry: &SurfaceRegistry,
    path: &str,
    policy: impl AgentPolicy + 'static,
) -> surface_runtime::RegistrationHandle {
    registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(registry.authority(), path)).policy(policy),
        )
        .unwrap()
}

fn listed(registry: &SurfaceRegistry) -> Vec<(String, bool, Option<String>)> {
    registry
        .snapshot(&consumer())
        .procedures
        .into_iter()
        .map(|p| (p.procedure_id, p.available, p.unavailable_reason))
        .collect()
}

fn shown(id: &str) -> (String, bool, Option<String>) {
    (id.to_string(), true, None)
}

#[test]
fn authenticated_hides_until_a_principal_is_set_and_a_hidden_call_is_not_found() {
    let f = fixture();
    let _list = register_plain(&f.registry, "devices.list");
    let _h = bind_with(&f.registry, "devices.rename", authenticated());
    assert_eq!(listed(&f.registry), vec![shown("domain:devices.list")]);
    // The exports are built from the snapshot: the tool is absent there too.
    let catalog = ToolCatalog::new(&f.registry.snapshot(&consumer())).unwrap();
    let names: Vec<String> = catalog.mcp_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, vec!["devices__list".to_string()]);

    // Called anyway: the same answer as a capability that does not exist,
    // and nothing runs.
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"deviceId": "d1", "name": "x"}),
    );
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_FOUND"));
    assert_eq!(
        r.error().unwrap().message,
        "This capability does not exist in the current surface. Refresh the surface catalog before the next step."
    );
    assert!(f.executor.calls().is_empty());
    // The audit names the hiding policy; the agent's answer does not.
    assert!(!serde_json::to_string(&r).unwrap().contains("authenticated"));
    assert!(f.audit.lock().unwrap().iter().any(|e| matches!(e,
        AuditEvent::InvocationRejected { code: ErrorCode::CapabilityNotFound, internal: Some(i), .. }
            if i == &json!({"hiddenBy": "authenticated"}))));

    // Signing in bumps the version (reason `principal`) and shows it.
    let changes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = changes.clone();
    let _sub = f
        .registry
        .subscribe(move |c| sink.lock().unwrap().push(c.reason.clone()));
    let before = f.registry.surface_version();
    assert!(f.registry.set_principal(Some(Principal::new("u1"))));
    assert_eq!(f.registry.surface_version(), before + 1);
    assert_eq!(*changes.lock().unwrap(), vec![ChangeReason::Principal]);
    // The same principal again changes nothing.
    assert!(!f.registry.set_principal(Some(Principal::new("u1"))));
    assert_eq!(f.registry.surface_version(), before + 1);
    assert_eq!(
        listed(&f.registry),
        vec![shown("domain:devices.list"), shown("domain:devices.rename")]
    );
    let r = call(
        &f.registry,
        "i2",
        "domain:devices.rename",
        json!({"deviceId": "d1", "name": "x"}),
    );
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(f.executor.calls().len(), 1);
}

#[test]
fn has_permission_hides_without_the_permission_and_discloses_when_asked_to() {
    let f = fixture_with(|b| b.principal(Principal::new("u1").permission("devices:read")));
    let _h = bind_with(
        &f.registry,
        "devices.rename",
        has_permission("devices:write"),
    );
    let _l = bind_with(
        &f.registry,
        "devices.list",
        has_permission("devices:admin").at_discovery(Discovery::Disclose),
    );
    assert_eq!(
        listed(&f.registry),
        vec![(
            "domain:devices.list".to_string(),
            false,
            Some("You do not have the permission this capability needs.".to_string())
        )]
    );
    // Disclosed: the call is refused by phase 4 with the same message.
    let r = call(&f.registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("NOT_AUTHORIZED"));
    assert_eq!(
        r.error().unwrap().message,
        "You do not have the permission this capability needs."
    );
    f.registry.set_principal(Some(
        Principal::new("u1")
            .permission("devices:write")
            .permission("devices:admin"),
    ));
    assert_eq!(
        listed(&f.registry),
        vec![shown("domain:devices.rename"), shown("domain:devices.list")]
    );
}

#[test]
fn tenant_boundary_hides_another_tenants_capability() {
    // The resource's tenant comes from the owning component's instance id.
    let tenant_of =
        |ctx: &surface_runtime::PolicyContext<'_>| ctx.context.map(|c| c.instance_id.clone());
    // A registry-wide policy applies to view capabilities too.
    let f = fixture_with(|b| {
        b.principal(Principal::new("u1").tenant("acme"))
            .policy(tenant_boundary(tenant_of))
    });
    let _own = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "acme").capability(
                ViewCapability::with_schema(
                    "select",
                    "Select rows",
                    json!({"type": "object"}),
                    |_v: Value| async { Ok(json!("selected")) },
                ),
            ),
        )
        .unwrap();
    let other = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "globex").capability(
                ViewCapability::with_schema(
                    "select",
                    "Select rows",
                    json!({"type": "object"}),
                    |_v: Value| async { Ok(json!("selected")) },
                ),
            ),
        )
        .unwrap();
    let snapshot = f.registry.snapshot(&consumer());
    let instances: Vec<&str> = snapshot
        .components
        .iter()
        .map(|c| c.instance_id.as_str())
        .collect();
    assert_eq!(instances, vec!["acme"]);
    // The other tenant's instance, called by its registration id: not found.
    let mut inv = AgentInvocation::new("i1", "view:devices.table.select");
    inv.registration_id = Some(other.registration_id().to_string());
    inv.instance_id = Some("globex".into());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_FOUND"));
    let mut inv = AgentInvocation::new("i2", "view:devices.table.select");
    inv.instance_id = Some("acme".into());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert_eq!(r.output(), Some(&json!("selected")), "{r:?}");
}

#[test]
fn environment_hides_outside_its_environments_and_without_one() {
    let staging = fixture_with(|b| b.environment("staging"));
    let _s = bind_with(
        &staging.registry,
        "devices.rename",
        environment(["development", "staging"]),
    );
    assert_eq!(
        listed(&staging.registry),
        vec![shown("domain:devices.rename")]
    );
    assert_eq!(staging.registry.environment(), Some("staging"));

    let production = fixture_with(|b| b.environment("production"));
    let _p = bind_with(
        &production.registry,
        "devices.rename",
        environment(["development", "staging"]),
    );
    assert_eq!(listed(&production.registry), vec![]);

    let unset = fixture();
    let _u = bind_with(
        &unset.registry,
        "devices.rename",
        environment(["production"]),
    );
    assert_eq!(listed(&unset.registry), vec![]);
}

#[test]
fn rate_limit_discloses_counts_calls_only_and_answers_rate_limited() {
    let f = fixture_with(|b| b.policy(rate_limit(2, Duration::from_secs(10))));
    let _h = register_plain(&f.registry, "devices.list");
    // Snapshots are not calls: nothing is counted.
    for _ in 0..5 {
        assert_eq!(listed(&f.registry), vec![shown("domain:devices.list")]);
    }
    assert!(call(&f.registry, "i1", "domain:devices.list", json!({})).is_ok());
    f.clock.advance(Duration::from_secs(4));
    assert!(call(&f.registry, "i2", "domain:devices.list", json!({})).is_ok());
    let message = "Rate limit reached: at most 2 call(s) every 10000 ms. Try again in 6 s.";
    assert_eq!(
        listed(&f.registry),
        vec![(
            "domain:devices.list".to_string(),
            false,
            Some(message.to_string())
        )]
    );
    let r = call(&f.registry, "i3", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("RATE_LIMITED"));
    assert_eq!(r.error().unwrap().message, message);
    assert_eq!(r.error().unwrap().details["retryAfterMs"], json!(6_000));
    assert_eq!(f.executor.calls().len(), 2);
    // Another consumer has its own window.
    let other = AgentConsumer::embedded("user-2");
    let mut inv = AgentInvocation::new("i4", "domain:devices.list");
    inv.input = json!({});
    assert!(now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &other))
    .is_ok());
    // The first call leaves the window after 10 s.
    f.clock.advance(Duration::from_secs(6));
    assert_eq!(listed(&f.registry), vec![shown("domain:devices.list")]);
    assert!(call(&f.registry, "i5", "domain:devices.list", json!({})).is_ok());
}

#[test]
fn rate_limit_tracks_a_bounded_number_of_pairs() {
    let f = fixture_with(|b| b.policy(rate_limit(1, Duration::from_secs(60))));
    let _h = register_plain(&f.registry, "devices.list");
    let invoke_as = |who: &str, id: &str| {
        let mut inv = AgentInvocation::new(id, "domain:devices.list");
        inv.input = json!({});
        now(f.registry.invoke(
            at_current_version(&f.registry, inv),
            &AgentConsumer::embedded(who),
        ))
    };
    assert!(invoke_as("first", "first-1").is_ok());
    assert_eq!(
        error_code(&invoke_as("first", "first-2")),
        Some("RATE_LIMITED")
    );
    // Filling the table with other consumers evicts the oldest pair.
    for n in 0..RATE_LIMIT_MAX_KEYS {
        f.clock.advance(Duration::from_millis(1));
        assert!(invoke_as(&format!("c{n}"), &format!("c{n}")).is_ok());
    }
    assert!(
        invoke_as("first", "first-3").is_ok(),
        "the oldest pair was dropped"
    );
}

#[test]
fn a_hiding_denial_wins_over_a_disclosing_one_and_closures_can_opt_in() {
    let f = fixture();
    let stages = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = stages.clone();
    let _h = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.list"))
                .policy(
                    authorize_with("maintenance", |_| {
                        PolicyDecision::deny("Down for maintenance")
                    })
                    .at_discovery(Discovery::Disclose),
                )
                .policy(
                    authorize_with("admins", move |ctx| {
                        seen.lock()
                            .unwrap()
                            .push((ctx.stage, ctx.invocation_id.to_string()));
                        PolicyDecision::deny("Admins only")
                    })
                    .at_discovery(Discovery::Hide),
                ),
        )
        .unwrap();
    assert_eq!(listed(&f.registry), vec![]);
    let r = call(&f.registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_FOUND"));
    // Discovery (the snapshot), then the call's discovery check: both at
    // the discovery stage, the first without an invocation id.
    assert_eq!(
        *stages.lock().unwrap(),
        vec![
            (PolicyStage::Discovery, String::new()),
            (PolicyStage::Discovery, String::new())
        ]
    );
}

#[test]
fn policies_that_do_not_take_part_in_discovery_are_not_run_by_a_snapshot() {
    let f = fixture();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let _h = bind_with(
        &f.registry,
        "devices.list",
        authorize_with("counted", move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            PolicyDecision::deny("no")
        }),
    );
    assert_eq!(listed(&f.registry), vec![shown("domain:devices.list")]);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let r = call(&f.registry, "i1", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("NOT_AUTHORIZED"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_component_whose_every_capability_is_hidden_is_left_out() {
    let f = fixture_with(|b| {
        b.policy(
            authorize_with("no-views", |ctx| {
                if ctx.capability_id.starts_with("view:") {
                    PolicyDecision::deny("hidden")
                } else {
                    PolicyDecision::Allow
                }
            })
            .at_discovery(Discovery::Hide),
        )
    });
    let _c = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "main").capability(
                ViewCapability::with_schema(
                    "select",
                    "Select rows",
                    json!({"type": "object"}),
                    |_v: Value| async { Ok(Value::Null) },
                ),
            ),
        )
        .unwrap();
    let _l = register_plain(&f.registry, "devices.list");
    let snapshot = f.registry.snapshot(&consumer());
    assert!(snapshot.components.is_empty());
    assert_eq!(snapshot.procedures.len(), 1);
}
