//! Attacks on policies at discovery, rate limits, concurrency groups, meta
//! mode and the test kit, from a review of that work: each test names what
//! went wrong before it was fixed (in its comment) and holds the right
//! behaviour; the ones marked "Probe (held up)" held from the start.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use surface_runtime::policy::{authenticated, rate_limit, tenant_boundary};
use surface_runtime::{
    AgentInvocation, AgentPolicy, AgentProcedureBinding, ComponentDefinition, Principal,
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

/// The answer to a capability that does not exist at all, for comparison.
fn unknown_answer(registry: &SurfaceRegistry, inv: AgentInvocation) -> Value {
    let r = now(registry.invoke(inv, &consumer()));
    let e = r.error().expect("an error");
    json!({"code": e.code.as_str(), "message": e.message, "details": e.details})
}

fn answer(registry: &SurfaceRegistry, inv: AgentInvocation) -> Value {
    unknown_answer(registry, inv)
}

/// Phase 2 (staleness) runs before the discovery check: a HIDDEN
/// destructive capability called without a `surfaceVersion` answers
/// `STALE_CAPABILITY` ("This capability has a destructive or external
/// effect…"), while a capability that does not exist answers
/// `CAPABILITY_NOT_FOUND`. The difference reveals that the hidden
/// capability exists, and that it is destructive.
/// Right behaviour: `CAPABILITY_NOT_FOUND`, exactly as for an unknown id
/// (the discovery check must run before phase 2).
#[test]
fn hidden_destructive_capability_without_surface_version_is_not_found() {
    let f = fixture();
    let _h = bind_with(&f.registry, "devices.disable", authenticated());
    assert!(f.registry.snapshot(&consumer()).procedures.is_empty());

    let mut unknown = AgentInvocation::new("u1", "domain:devices.nope");
    unknown.input = json!({"deviceIds": ["d1"]});
    let mut hidden = AgentInvocation::new("h1", "domain:devices.disable");
    hidden.input = json!({"deviceIds": ["d1"]});
    assert_eq!(
        answer(&f.registry, hidden),
        unknown_answer(&f.registry, unknown),
        "a hidden capability must answer as an unknown one"
    );
    // Same with an old surfaceVersion (`surface-version-mismatch`).
    let mut unknown = AgentInvocation::new("u2", "domain:devices.nope");
    unknown.surface_version = Some(0);
    let mut hidden = AgentInvocation::new("h2", "domain:devices.disable");
    hidden.surface_version = Some(0);
    hidden.input = json!({"deviceIds": ["d1"]});
    assert_eq!(
        answer(&f.registry, hidden),
        unknown_answer(&f.registry, unknown)
    );
    assert!(f.executor.calls().is_empty());
}

/// Phase 1 answers a wrong `registrationId` with `STALE_CAPABILITY` and
/// `details.liveRegistrationId` before the discovery check runs: a call
/// naming a HIDDEN capability with any made-up registration id gets the
/// hidden registration's id back.
/// Right behaviour: `CAPABILITY_NOT_FOUND` with no details, as for an
/// unknown capability; the hidden registration id is never disclosed.
#[test]
fn hidden_capability_with_a_wrong_registration_id_leaks_the_live_one() {
    let f = fixture();
    let h = bind_with(&f.registry, "devices.list", authenticated());
    assert!(f.registry.snapshot(&consumer()).procedures.is_empty());
    let mut inv = AgentInvocation::new("h1", "domain:devices.list");
    inv.input = json!({});
    inv.registration_id = Some("made-up".into());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    let text = serde_json::to_string(&r).unwrap();
    assert!(
        !text.contains(h.registration_id()),
        "the hidden registration id leaked: {text}"
    );
    assert_eq!(error_code(&r), Some("CAPABILITY_NOT_FOUND"), "{text}");
}

fn select_view() -> ViewCapability {
    ViewCapability::with_schema(
        "select",
        "Select rows",
        json!({"type": "object"}),
        |_v: Value| async { Ok(json!("selected")) },
    )
}

/// With `tenant_boundary`, the snapshot lists only the principal's own
/// instance ("acme"), so a call without `instanceId` should resolve to it.
/// Instead phase 1 counts the hidden instance as a candidate and answers
/// `AMBIGUOUS_INSTANCE` with `details.instances` listing the OTHER
/// tenant's instance id and registration id ("globex").
/// Right behaviour: candidates hidden by a discovery policy are not
/// candidates: the call runs on "acme" (and "globex" never appears).
#[test]
fn tenant_boundary_hidden_instance_is_not_listed_in_ambiguous_instance() {
    let tenant_of =
        |ctx: &surface_runtime::PolicyContext<'_>| ctx.context.map(|c| c.instance_id.clone());
    let f = fixture_with(|b| {
        b.principal(Principal::new("u1").tenant("acme"))
            .policy(tenant_boundary(tenant_of))
    });
    let _own = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "acme").capability(select_view()),
        )
        .unwrap();
    let _other = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "globex").capability(select_view()),
        )
        .unwrap();
    let snapshot = f.registry.snapshot(&consumer());
    assert_eq!(snapshot.components.len(), 1, "only acme is listed");
    let inv = AgentInvocation::new("i1", "view:devices.table.select");
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    let text = serde_json::to_string(&r).unwrap();
    assert!(
        !text.contains("globex"),
        "another tenant's instance leaked: {text}"
    );
    assert_eq!(r.output(), Some(&json!("selected")), "{text}");
}

/// `rate_limit(n, Duration::MAX)` ("n calls, ever") computes
/// `oldest + window_ms` with `window_ms == u64::MAX`: an arithmetic
/// overflow — a panic in debug builds (inside the policy, while holding its
/// lock), a wrapped, tiny `retryAfterMs` in release.
/// Right behaviour: `RATE_LIMITED` with a saturated `retryAfterMs`.
#[test]
fn rate_limit_with_a_huge_window_does_not_overflow() {
    let f = fixture_with(|b| b.policy(rate_limit(1, Duration::MAX)));
    let _h = register_plain(&f.registry, "devices.list");
    assert!(call(&f.registry, "i1", "domain:devices.list", json!({})).is_ok());
    let second = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        call(&f.registry, "i2", "domain:devices.list", json!({}))
    }));
    let second = second.expect("the second call panicked (u64 overflow in RateLimit::full)");
    assert_eq!(error_code(&second), Some("RATE_LIMITED"));
    // The snapshot (a disclosing discovery check) must not panic either.
    let listed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f.registry.snapshot(&consumer())
    }));
    assert!(listed.is_ok(), "the snapshot panicked");
}

/// A clock that steps back (NTP correction, `ManualClock::set`) leaves the
/// counted call times "in the future": they never leave the window until
/// the clock catches up, and `retryAfterMs` becomes the size of the step
/// plus the window (here an hour for a 10 s window).
/// Right behaviour: a call never waits longer than one window: a time
/// after `now` counts as `now` (or `retryAfterMs` is capped at the window).
#[test]
fn rate_limit_after_the_clock_steps_back_waits_at_most_one_window() {
    let f = fixture_with(|b| b.policy(rate_limit(1, Duration::from_secs(10))));
    let _h = register_plain(&f.registry, "devices.list");
    let start = 10_000_000;
    f.clock.set(start);
    assert!(call(&f.registry, "i1", "domain:devices.list", json!({})).is_ok());
    f.clock.set(start - 3_600_000); // one hour back
    let r = call(&f.registry, "i2", "domain:devices.list", json!({}));
    assert_eq!(error_code(&r), Some("RATE_LIMITED"));
    let wait = r.error().unwrap().details["retryAfterMs"].as_u64().unwrap();
    assert!(
        wait <= 10_000,
        "retryAfterMs {wait} exceeds the 10 s window"
    );
    f.clock.set(start - 3_600_000 + 10_000);
    assert!(
        call(&f.registry, "i3", "domain:devices.list", json!({})).is_ok(),
        "one window after the step the call passes"
    );
}

/// `surface_act`'s schema is `{"tool", "arguments"}` with
/// `additionalProperties: false`, but `resolve_call` silently drops any
/// other key. A model that flattens the tool's arguments into the
/// `surface_act` call (a common slip) has them discarded and the tool
/// runs with different input: here `devices__list` runs unfiltered
/// although the model asked for `query: "lost"`.
/// Right behaviour: `INVALID_INPUT` (retry `with-changes`) naming the
/// unexpected key, as the schema the model was given says.
#[test]
fn surface_act_does_not_silently_drop_flattened_arguments() {
    use surface_runtime::export::{ExportOptions, ResolvedCall, ToolCall, ToolCatalog, ToolMode};
    let f = fixture();
    let _h = register_plain(&f.registry, "devices.list");
    let options = ExportOptions {
        mode: ToolMode::Meta,
        ..ExportOptions::default()
    };
    let catalog = ToolCatalog::with_options(&f.registry.snapshot(&consumer()), &options).unwrap();
    let act = ToolCall::new(
        "surface_act",
        "call-1",
        Some(json!({"tool": "devices__list", "query": "lost"})),
    );
    match catalog.resolve_call(act) {
        Ok(ResolvedCall::Tool(call)) => panic!(
            "the flattened `query` was dropped; the tool would run with {:?}",
            call.arguments
        ),
        Ok(other) => panic!("unexpected: {other:?}"),
        Err(error) => assert_eq!(error.agent_error().code.as_str(), "INVALID_INPUT"),
    }
}

/// A policy that panics (a bug in application code, an `unwrap` on a
/// missing claim) unwinds out of `invoke` after admission recorded the
/// invocation id and before its result was recorded. Probe: what does a
/// retry with the same id get, and does the registry still work?
#[test]
fn a_panicking_policy_does_not_wedge_its_invocation_id() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use surface_runtime::policy::authorize_with;
    use surface_runtime::PolicyDecision;
    let armed = std::sync::Arc::new(AtomicBool::new(true));
    let trigger = armed.clone();
    let f = fixture();
    let _h = bind_with(
        &f.registry,
        "devices.list",
        authorize_with("flaky", move |_| {
            if trigger.swap(false, Ordering::SeqCst) {
                panic!("policy bug");
            }
            PolicyDecision::Allow
        }),
    );
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        call(&f.registry, "p1", "domain:devices.list", json!({}))
    }));
    assert!(first.is_err(), "the policy panicked");
    // A new id works.
    assert!(call(&f.registry, "p2", "domain:devices.list", json!({})).is_ok());
    // The same id again: the call never completed, so it must either run
    // now or be answered definitively — not hang.
    let mut inv = AgentInvocation::new("p1", "domain:devices.list");
    inv.input = json!({});
    inv.surface_version = Some(f.registry.surface_version());
    let again = futures_util::FutureExt::now_or_never(f.registry.invoke(inv, &consumer()));
    let again = again.expect("a retry of the panicked id hangs (in flight forever)");
    // Today: INVOCATION_CONFLICT, reason `invocation-in-flight` ("wait for
    // its result") — forever: the entry is never completed, and it holds a
    // slot of the bounded id table. Right behaviour: unwinding through
    // phases 1–6 (a policy, `when()`, `bind()`) completes or forgets the
    // admitted id (e.g. a drop guard recording EXECUTION_FAILED), so the
    // retry is answered definitively or runs.
    let text = serde_json::to_string(&again).unwrap();
    assert!(
        !text.contains("invocation-in-flight"),
        "the id of a call that unwound is in flight forever: {text}"
    );
}

/// Probe (held up when written): dropping the call that holds a group's
/// turn (a browser session aborting it) lets the next call of the group
/// run, and dropping a waiting call does not block the group.
#[test]
fn dropping_calls_of_a_concurrency_group_never_wedges_it() {
    use futures_channel::oneshot;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Waker};
    fn poll<F: Future + ?Sized>(f: &mut Pin<Box<F>>) -> Poll<F::Output> {
        f.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    }
    let started = Arc::new(Mutex::new(Vec::new()));
    let view = |name: &'static str, gate: Option<oneshot::Receiver<()>>| {
        let started = started.clone();
        let gate = Mutex::new(gate);
        ViewCapability::with_schema(name, name, json!({"type": "object"}), move |_v: Value| {
            started.lock().unwrap().push(name);
            let gate = gate.lock().unwrap().take();
            async move {
                if let Some(gate) = gate {
                    gate.await.ok();
                }
                Ok(Value::Null)
            }
        })
    };
    let (_never_a, a) = oneshot::channel::<()>();
    let registry = SurfaceRegistry::new(authority());
    let _t = registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .concurrency_group("g")
                .capability(view("a", Some(a)))
                .capability(view("b", None))
                .capability(view("c", None)),
        )
        .unwrap();
    let inv = |id: &str, cap: &str| {
        let mut inv = AgentInvocation::new(id, cap);
        inv.surface_version = Some(registry.surface_version());
        inv
    };
    let consumer = consumer();
    let mut first = Box::pin(registry.invoke(inv("i1", "view:devices.table.a"), &consumer));
    let mut second = Box::pin(registry.invoke(inv("i2", "view:devices.table.b"), &consumer));
    let mut third = Box::pin(registry.invoke(inv("i3", "view:devices.table.c"), &consumer));
    assert!(poll(&mut first).is_pending());
    assert!(poll(&mut second).is_pending());
    assert!(poll(&mut third).is_pending());
    drop(second); // a waiter goes away
    drop(first); // the holder goes away
    assert!(matches!(poll(&mut third), Poll::Ready(r) if r.is_ok()));
    assert_eq!(*started.lock().unwrap(), ["a", "c"]);
}

/// The contract `agent-surface snapshot` writes names a built-in policy by
/// its kind only: a binding guarded by `has_permission("devices:admin")`
/// and one guarded by `has_permission("devices:read")` (or
/// `environment(["staging"])` vs `environment(["staging", "production"])`,
/// `rate_limit(1, …)` vs `rate_limit(1000, …)`) have the SAME contract, so
/// the drift gate cannot see a permission being relaxed.
/// Right behaviour: the policy's label carries its argument
/// ("has-permission(devices:admin) [hides]"), so the change reads as
/// `policy-removed` + `policy-added`: widening.
#[test]
fn a_relaxed_permission_changes_the_contract() {
    use surface_runtime::contract::SurfaceContract;
    use surface_runtime::policy::{environment, has_permission};
    let contract =
        |policy: Box<dyn Fn(&SurfaceRegistry) -> surface_runtime::RegistrationHandle>| {
            let f = fixture();
            let _h = policy(&f.registry);
            SurfaceContract::from_registry(&f.registry).to_json()
        };
    let admin = contract(Box::new(|r| {
        bind_with(r, "devices.disable", has_permission("devices:admin"))
    }));
    let read = contract(Box::new(|r| {
        bind_with(r, "devices.disable", has_permission("devices:read"))
    }));
    assert!(
        admin != read,
        "has_permission(admin) → (read) is invisible to the drift gate"
    );
    let staging = contract(Box::new(|r| {
        bind_with(r, "devices.disable", environment(["staging"]))
    }));
    let everywhere = contract(Box::new(|r| {
        bind_with(r, "devices.disable", environment(["staging", "production"]))
    }));
    assert!(staging != everywhere, "environment widened invisibly");
}

/// docs/pipeline.md, "Large surfaces": under a `scope` "a component keeps
/// its capabilities in scope and is left out when none is". A component
/// with no capabilities at all (one registered only to own a concurrency
/// group or a context, as the doc's own example does) is kept under EVERY
/// scope: `scoped` keeps `had == 0`. Under a budget it also costs 1
/// although it lists nothing. Minor; either the doc says so or the scope
/// leaves it out.
#[test]
fn a_component_without_capabilities_is_left_out_of_a_scope() {
    use surface_runtime::SnapshotOptions;
    let f = fixture();
    let _bare = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "main").concurrency_group("g"),
        )
        .unwrap();
    let _l = register_plain(&f.registry, "devices.list");
    let options = SnapshotOptions {
        scope: vec!["domain:devices.".into()],
        budget: None,
    };
    let snapshot = f.registry.snapshot_with(&consumer(), &options);
    assert_eq!(snapshot.procedures.len(), 1);
    assert!(
        snapshot.components.is_empty(),
        "a component with no capability in scope is listed: {:?}",
        snapshot
            .components
            .iter()
            .map(|c| &c.component_type)
            .collect::<Vec<_>>()
    );
}

/// `TestSurface` numbers its invocation ids `test-1`, `test-2`, … per
/// TestSurface. Two `TestSurface::over` the same registry (a helper that
/// wraps the page's registry per test step, or `over` after the page's own
/// test calls) reuse `test-1`: the second surface's first call of the same
/// capability with the same input is a REPLAY of the first surface's
/// result — its fake executor is never asked, and a test asserting on
/// `executor().calls()` or on a changed response sees stale data.
/// Right behaviour: ids unique per registry (random, or a process-wide
/// counter), so every `call` runs.
#[test]
fn two_test_surfaces_over_one_registry_do_not_replay_each_others_calls() {
    use surface_runtime::testing::TestSurface;
    let registry = SurfaceRegistry::new(authority());
    let _h = register_plain(&registry, "devices.list");
    let first = TestSurface::over(registry.clone());
    first.executor().respond("devices.list", json!(["old"]));
    assert_eq!(
        first.call("domain:devices.list", json!({})).output(),
        Some(&json!(["old"]))
    );
    let second = TestSurface::over(registry.clone());
    second.executor().respond("devices.list", json!(["new"]));
    let r = second.call("domain:devices.list", json!({}));
    assert_eq!(
        second.executor().calls().len(),
        1,
        "the second surface's call never reached its executor: {}",
        serde_json::to_string(&r).unwrap()
    );
    assert_eq!(r.output(), Some(&json!(["new"])));
}

/// `rate_limit` counts every call that reaches phase 4 — including the
/// first call of a confirmation flow, which only asks the user
/// (`CONFIRMATION_REQUIRED`) and runs nothing. With `rate_limit(1, 60 s)`
/// on a capability that needs confirmation, the approved retry is then
/// `RATE_LIMITED`: the user approved, the action cannot run for a minute,
/// and a window longer than the confirmation TTL makes every approval
/// useless.
/// Right behaviour: one confirmed action is one call — count the call
/// that executes (or do not count a call that ends `CONFIRMATION_REQUIRED`).
#[test]
fn rate_limit_does_not_refuse_the_approved_retry_of_one_action() {
    let f = fixture_with(|b| b.policy(rate_limit(1, Duration::from_secs(60))));
    let _h = register_plain(&f.registry, "devices.disable");
    let first = call(
        &f.registry,
        "i1",
        "domain:devices.disable",
        json!({"deviceIds": ["d1"]}),
    );
    assert_eq!(
        error_code(&first),
        Some("CONFIRMATION_REQUIRED"),
        "{first:?}"
    );
    let id = first.error().unwrap().details["confirmationId"]
        .as_str()
        .unwrap()
        .to_string();
    f.registry.confirm(&id).unwrap();
    let mut retry = AgentInvocation::new("i2", "domain:devices.disable");
    retry.input = json!({"deviceIds": ["d1"]});
    retry.confirmation_id = Some(id);
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, retry), &consumer()));
    assert!(
        r.is_ok(),
        "the approved action was refused: {}",
        serde_json::to_string(&r).unwrap()
    );
    assert_eq!(f.executor.calls().len(), 1);
}

/// Probe (held up): a policy that (against the docs' advice) reads the
/// registry — its principal, version, a pending confirmation — while a
/// snapshot or a call evaluates it does not deadlock: neither holds the
/// registry lock while policies run.
#[test]
fn a_policy_reading_the_registry_does_not_deadlock() {
    use std::sync::{mpsc, Arc, OnceLock};
    use surface_runtime::policy::authorize_with;
    use surface_runtime::{Discovery, PolicyDecision, PolicyExt};
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let f = fixture();
        let slot: Arc<OnceLock<SurfaceRegistry>> = Arc::new(OnceLock::new());
        let seen = slot.clone();
        let _h = bind_with(
            &f.registry,
            "devices.list",
            authorize_with("reads-registry", move |_| {
                let r = seen.get().expect("set");
                let _ = (
                    r.surface_version(),
                    r.principal(),
                    r.pending_confirmation("x"),
                );
                PolicyDecision::Allow
            })
            .at_discovery(Discovery::Hide),
        );
        slot.set(f.registry.clone()).ok();
        assert_eq!(f.registry.snapshot(&consumer()).procedures.len(), 1);
        assert!(call(&f.registry, "i1", "domain:devices.list", json!({})).is_ok());
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(20))
        .expect("deadlock: a policy reading the registry never returned");
}

/// Confirmations are not tied to the principal: a confirmation the agent
/// requested while user A was signed in stays pending after
/// `set_principal` switches to user B (the page's confirmation UI shows
/// B a request made on A's behalf), B can approve it, and once A is back
/// the agent's retry with that confirmationId runs — approved by someone
/// else. `set_principal` bumps the version but leaves the queue as is.
/// Right behaviour: a change of principal expires (or denies) the pending
/// and approved confirmations issued under the previous one (or the
/// confirmation records the principal and `consume` refuses another).
#[test]
fn a_confirmation_does_not_survive_a_change_of_principal() {
    use surface_runtime::policy::has_permission;
    let alice = Principal::new("alice").permission("devices:admin");
    let f = fixture_with(|b| b.principal(alice.clone()));
    let _h = bind_with(
        &f.registry,
        "devices.disable",
        has_permission("devices:admin"),
    );
    let first = call(
        &f.registry,
        "i1",
        "domain:devices.disable",
        json!({"deviceIds": ["d1"]}),
    );
    assert_eq!(error_code(&first), Some("CONFIRMATION_REQUIRED"));
    let id = first.error().unwrap().details["confirmationId"]
        .as_str()
        .unwrap()
        .to_string();
    f.registry.set_principal(Some(Principal::new("bob")));
    // Bob's page shows the queue; bob approves what alice's agent asked.
    let offered = f.registry.pending_confirmation(&id).is_some();
    let approved_by_bob = f.registry.confirm(&id).is_ok();
    f.registry.set_principal(Some(alice));
    let mut retry = AgentInvocation::new("i2", "domain:devices.disable");
    retry.input = json!({"deviceIds": ["d1"]});
    retry.confirmation_id = Some(id);
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, retry), &consumer()));
    assert!(
        !r.is_ok() && f.executor.calls().is_empty(),
        "offered to bob: {offered}, approved by bob: {approved_by_bob}, then alice's agent ran it: {}",
        serde_json::to_string(&r).unwrap()
    );
}

/// A call that times out while it is still WAITING for its concurrency
/// group's turn never reached its handler or executor, yet its `TIMEOUT`
/// says "side effects may or may not have occurred. Verify state with an
/// observation before repeating" with retry `no` (non-idempotent
/// capability). The agent is told to distrust a state nothing touched,
/// and not to retry what is safe to retry.
/// Right behaviour: a timeout (or cancellation) during the wait says that
/// nothing ran (e.g. `details.reason: "concurrency-group-wait"`) with a
/// retry that allows repeating it.
#[test]
fn a_timeout_while_waiting_for_the_group_says_nothing_ran() {
    use futures_channel::oneshot;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Waker};
    use surface_runtime::sync::BoxFuture;
    use surface_runtime::Timer;
    #[derive(Default)]
    struct FiredTimer(Mutex<Vec<oneshot::Sender<()>>>);
    impl Timer for FiredTimer {
        fn sleep(&self, _: Duration) -> BoxFuture<'static, ()> {
            let (tx, rx) = oneshot::channel();
            self.0.lock().unwrap().push(tx);
            Box::pin(async move {
                let _ = rx.await;
            })
        }
    }
    fn poll<F: Future + ?Sized>(f: &mut Pin<Box<F>>) -> Poll<F::Output> {
        f.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    }
    let timer = Arc::new(FiredTimer::default());
    let registry = SurfaceRegistry::builder(authority())
        .timer(timer.clone())
        .timeout(Duration::from_secs(5))
        .build();
    let started = Arc::new(Mutex::new(Vec::new()));
    let view = |name: &'static str| {
        let started = started.clone();
        ViewCapability::with_schema(name, name, json!({"type": "object"}), move |_v: Value| {
            started.lock().unwrap().push(name);
            async { std::future::pending::<Result<Value, _>>().await }
        })
    };
    let _t = registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .concurrency_group("g")
                .capability(view("a"))
                .capability(view("b")),
        )
        .unwrap();
    let inv = |id: &str, cap: &str| {
        let mut inv = AgentInvocation::new(id, cap);
        inv.surface_version = Some(registry.surface_version());
        inv
    };
    let consumer = consumer();
    let mut first = Box::pin(registry.invoke(inv("i1", "view:devices.table.a"), &consumer));
    let mut second = Box::pin(registry.invoke(inv("i2", "view:devices.table.b"), &consumer));
    assert!(poll(&mut first).is_pending());
    assert!(poll(&mut second).is_pending());
    // The second call's timeout fires while it waits for its turn.
    let fire = timer.0.lock().unwrap().pop().expect("b's timer");
    fire.send(()).unwrap();
    let Poll::Ready(r) = poll(&mut second) else {
        panic!("b timed out")
    };
    assert_eq!(*started.lock().unwrap(), ["a"], "b's handler never ran");
    let e = r.error().expect("TIMEOUT");
    assert_eq!(e.code.as_str(), "TIMEOUT");
    assert!(
        !e.message.contains("may or may not have occurred"),
        "nothing ran, but the agent is told side effects may have occurred: {} (retry {:?})",
        e.message,
        e.retry
    );
}

/// `TestSurface::assert_locked` proves the refusal with a real call, which
/// reaches phase 4 and so is COUNTED by `rate_limit`: an assertion changes
/// the state under test. With `rate_limit(1, …)`, asserting the lock and
/// then making the one call the test is about gives `RATE_LIMITED`.
/// Right behaviour: an assertion has no side effect on what it asserts
/// about (e.g. check the lock with a call as another consumer, or a
/// dry-run through phase 5 that runs no policy).
#[test]
fn assert_locked_does_not_use_up_a_rate_limit() {
    use surface_runtime::testing::TestSurface;
    let surface = TestSurface::with(authority(), |b| {
        b.policy(rate_limit(1, Duration::from_secs(60)))
    });
    let _h = surface
        .registry()
        .register_procedure(
            AgentProcedureBinding::new(procedure(surface.registry().authority(), "devices.list"))
                .bind(|| BogusListBinding),
        )
        .unwrap();
    surface.assert_locked("domain:devices.list", "query");
    let r = surface.call("domain:devices.list", json!({}));
    assert!(
        r.is_ok(),
        "the assertion used up the rate limit: {}",
        serde_json::to_string(&r).unwrap()
    );
}

/// `devices.list` with `query` bound and locked.
struct BogusListBinding;

impl surface_runtime::BoundInput for BogusListBinding {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.list";
    fn bound_fields() -> &'static [surface_runtime::BoundField] {
        &[surface_runtime::BoundField {
            name: "query",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<serde_json::Map<String, Value>, serde_json::Error> {
        Ok(serde_json::Map::from_iter([(
            "query".to_string(),
            json!("mine"),
        )]))
    }
}
