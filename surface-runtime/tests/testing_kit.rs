//! The test kit itself (`surface_runtime::testing`): what its calls do to
//! the registry, what its assertions print, and that its serialization is
//! stable. The devices console's own tests on it are `tests/devices_surface.rs`
//! at the workspace root.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use surface_runtime::policy::{has_permission, rate_limit};
use surface_runtime::testing::{
    assert_fails_with, serialize_surface_snapshot, ExecutedCall, TestSurface, TEST_START_MS,
};
use surface_runtime::{
    AgentConsumer, AgentProcedureBinding, ErrorCode, ExecutionError, Principal, Retry,
    SurfaceRegistry,
};

fn panic_text(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the assertion fails");
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| payload.downcast_ref::<&str>().unwrap().to_string())
}

fn rename(surface: &TestSurface) -> surface_runtime::RegistrationHandle {
    surface
        .registry()
        .register_procedure(
            AgentProcedureBinding::new(procedure(surface.registry().authority(), "devices.rename"))
                .bind(|| RenameBinding {
                    device_id: "d1".into(),
                }),
        )
        .unwrap()
}

#[test]
fn calls_reach_the_fake_executor_with_the_effective_input() {
    let surface = TestSurface::new(authority());
    let _h = rename(&surface);
    surface
        .executor()
        .respond("devices.rename", json!({"renamed": true}));
    let result = surface.call("domain:devices.rename", json!({"name": "Lobby"}));
    assert_eq!(result.output(), Some(&json!({"renamed": true})));
    // Ids count up across the process's test surfaces: `test-<n>`.
    assert!(result.invocation_id().starts_with("test-"));
    assert_eq!(
        surface.executor().calls(),
        vec![ExecutedCall {
            path: "devices.rename".into(),
            input: json!({"deviceId": "d1", "name": "Lobby"}),
            invocation_id: result.invocation_id().to_string(),
            confirmed: false,
        }]
    );
    // A path with no answer set gets `null`; a failure set is mapped.
    let _l = register_plain(surface.registry(), "devices.list");
    assert_eq!(
        surface.call("domain:devices.list", json!({})).output(),
        None
    );
    surface.executor().fail(
        "devices.list",
        ExecutionError::new(ErrorCode::ExecutionFailed, "down", Retry::Yes),
    );
    let failed = surface.call("domain:devices.list", json!({}));
    assert_eq!(
        assert_fails_with(&failed, ErrorCode::ExecutionFailed).message,
        "down"
    );
    assert_eq!(surface.executor().calls_of("devices.list").len(), 2);
}

#[test]
fn a_test_surface_over_an_existing_registry_replaces_its_executor() {
    let registry = SurfaceRegistry::new(authority());
    let _h = register_plain(&registry, "devices.list");
    let surface = TestSurface::over(registry.clone());
    surface.call("domain:devices.list", json!({}));
    assert_eq!(surface.executor().calls().len(), 1);
    let text = panic_text(|| surface.advance(Duration::from_secs(1)));
    assert_eq!(
        text,
        "this TestSurface has no test clock: build it with TestSurface::new or TestSurface::with"
    );
}

#[test]
fn policies_and_principals_are_tested_through_the_builder_and_the_clock() {
    let surface = TestSurface::with(authority(), |b| {
        b.principal(Principal::new("u1"))
            .policy(rate_limit(1, Duration::from_secs(30)))
    });
    let _h = surface
        .registry()
        .register_procedure(
            AgentProcedureBinding::new(procedure(surface.registry().authority(), "devices.list"))
                .policy(has_permission("devices:read")),
        )
        .unwrap();
    surface.assert_not_exposed("domain:devices.list");
    surface
        .registry()
        .set_principal(Some(Principal::new("u1").permission("devices:read")));
    surface.assert_exposes("domain:devices.list");
    assert!(surface.call("domain:devices.list", json!({})).is_ok());
    surface.assert_exposes_unavailable(
        "domain:devices.list",
        "Rate limit reached: at most 1 call(s) every 30000 ms. Try again in 30 s.",
    );
    surface.advance(Duration::from_secs(30));
    surface.assert_exposes("domain:devices.list");
    // A headless consumer sees the same procedure, and no view.
    let headless = TestSurface::new(authority()).as_consumer(AgentConsumer::headless("h"));
    assert_eq!(headless.consumer().id.as_ref(), "h");
}

#[test]
fn assertions_say_what_was_expected_and_show_the_surface() {
    let surface = TestSurface::new(authority());
    let _h = register_plain(surface.registry(), "devices.list");
    assert_eq!(
        panic_text(|| {
            surface.assert_not_exposed("domain:devices.list");
        }),
        "expected the agent not to see `domain:devices.list`\nit is listed\nthe surface (test-agent):\nsurfaceVersion 1\n  domain:devices.list  r1  available  confirmation never\n"
    );
    assert_eq!(
        panic_text(|| {
            surface.assert_exposes_unavailable("domain:devices.rename", "x");
        }),
        "expected the agent to see `domain:devices.rename` unavailable: x\nit is not listed\nthe surface (test-agent):\nsurfaceVersion 1\n  domain:devices.list  r1  available  confirmation never\n"
    );
    assert_eq!(
        panic_text(|| {
            surface.assert_locked("domain:devices.list", "query");
        }),
        "expected the agent not to be able to set `query` of `domain:devices.list`\nit is not a locked bound field\nthe surface (test-agent):\nsurfaceVersion 1\n  domain:devices.list  r1  available  confirmation never\n"
    );
    let ok = surface.call("domain:devices.list", json!({}));
    let text = panic_text(|| {
        assert_fails_with(&ok, ErrorCode::NotAuthorized);
    });
    assert!(
        text.starts_with(
            "expected the call to fail with NOT_AUTHORIZED, got:\n{\n  \"status\": \"ok\""
        ),
        "{text}"
    );
    // A call that is not asked for confirmation cannot be approved.
    let text = panic_text(|| {
        surface.call_approved("domain:devices.list", json!({}));
    });
    assert!(
        text.starts_with("expected `domain:devices.list` to ask for confirmation, got:\n"),
        "{text}"
    );
}

#[test]
fn a_call_whose_handler_waits_is_awaited_not_completed_at_once() {
    let surface = TestSurface::new(authority());
    let (tx, rx) = futures_channel::oneshot::channel::<Value>();
    let rx = std::sync::Mutex::new(Some(rx));
    let _c = surface
        .registry()
        .register_component(
            surface_runtime::ComponentDefinition::new("panel", "main").capability(
                surface_runtime::ViewCapability::with_schema(
                    "wait",
                    "Waits",
                    json!({"type": "object"}),
                    move |_v: Value| {
                        let rx = rx.lock().unwrap().take().unwrap();
                        async move { Ok(rx.await.unwrap()) }
                    },
                ),
            ),
        )
        .unwrap();
    let text = panic_text(|| {
        surface.call("view:panel.wait", json!({}));
    });
    assert_eq!(
        text,
        "the call of `view:panel.wait` did not complete at once (its handler or executor waits): use TestSurface::invoke and await it"
    );
    drop(tx);
}

#[test]
fn the_serialization_sorts_keys_and_leaves_out_what_changes_between_runs() {
    let surface = TestSurface::new(authority());
    let _h = register_plain(surface.registry(), "devices.list");
    let snapshot = surface.snapshot();
    assert_eq!(snapshot.captured_at, "2026-01-01T00:00:00.000Z");
    assert_eq!(TEST_START_MS, 1_767_225_600_000);
    let text = serialize_surface_snapshot(&snapshot);
    assert!(text.starts_with("{\n  \"capturedAt\": \"<captured-at>\",\n  \"components\": [],\n  \"procedures\": [\n    {\n      \"available\": true,\n      \"boundFields\": [],\n      \"confirmation\": \"never\",\n      \"description\": \"List devices\",\n      \"effect\": \"server-query\",\n"), "{text}");
    assert!(
        text.ends_with("  \"surfaceId\": \"<surface-id>\",\n  \"surfaceVersion\": \"1\"\n}\n"),
        "{text}"
    );
    // Another registry (another random surface id) writes the same text.
    let other = TestSurface::over(SurfaceRegistry::new(authority()));
    let _o = register_plain(other.registry(), "devices.list");
    let mut later = other.snapshot();
    later.captured_at = "2031-05-05T00:00:00.000Z".into();
    assert_eq!(serialize_surface_snapshot(&later), text);
}
