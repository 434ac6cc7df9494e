//! Regression tests against hostile agents: one per defect, each
//! named after the rule it restores. They use only APIs that already
//! existed before the fix, so each fails by assertion on the old code.
//! (The duplicate-path defect is checked in `manifest.rs`'s unit tests,
//! memory at the bounds in `tests/memory.rs`.)

mod common;
mod host_support;

use common::{at_current_version, call, consumer, error_code, fixture, now, register_plain};
use serde_json::{json, Value};
use surface_runtime::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceOutcome, BrowserSurfaceResult,
    KnownBuild, RejectionReason, ResultDisposition, ToolCallRequest, MAX_ENVELOPE_CHARS,
};
use surface_runtime::{AgentInvocation, AgentInvocationResult, ConsumerKind, ErrorCode, Retry};

fn details(result: &AgentInvocationResult) -> serde_json::Map<String, Value> {
    result.error().expect("an error").details.clone()
}

/// Ids that break the invocation-id rule (1–256 visible ASCII characters),
/// each next to what makes it invalid.
fn invalid_ids() -> Vec<(&'static str, String)> {
    vec![
        ("empty", String::new()),
        ("257 characters", "a".repeat(257)),
        ("255,000 characters", "a".repeat(255_000)),
        ("CR LF", "inv-1\r\nx-injected: 1".to_string()),
        ("LF", "inv\n1".to_string()),
        ("DEL", "inv\u{7f}1".to_string()),
        ("NUL", "inv\u{0}1".to_string()),
        ("TAB", "inv\t1".to_string()),
        ("space", "inv 1".to_string()),
        ("non-ASCII", "inv-é".to_string()),
    ]
}

// ----- defect 8 + 14: the invocation-id rule --------------------------------

#[test]
fn registry_refuses_invalid_invocation_ids_before_admission() {
    let f = fixture();
    let _h = register_plain(&f.registry, "devices.list");
    for (what, id) in invalid_ids() {
        let r = call(&f.registry, &id, "domain:devices.list", json!({}));
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{what}");
        let error = r.error().unwrap();
        assert_eq!(error.retry, Retry::WithChanges, "{what}");
        assert_eq!(
            Value::Object(error.details.clone()),
            json!({"issues": [{"path": "invocationId", "keyword": "invocationId",
                "message": "The invocationId must be 1 to 256 visible ASCII characters (0x21-0x7E, no spaces or control characters); send a fresh id such as a UUID."}]}),
            "{what}"
        );
        assert_eq!(r.invocation_id(), id, "{what}: the id is echoed");
        // Refused ids are not recorded: the same id is refused again the
        // same way (not answered as a repeat).
        let again = call(&f.registry, &id, "domain:devices.list", json!({}));
        assert_eq!(again, r, "{what}");
    }
    assert!(f.executor.calls().is_empty(), "nothing was executed");
    // The boundary: 256 visible ASCII characters are accepted.
    let longest = "~".repeat(256);
    let r = call(&f.registry, &longest, "domain:devices.list", json!({}));
    assert!(r.error().is_none(), "{r:?}");
    assert_eq!(f.executor.calls()[0].invocation_id, longest);
}

#[tokio::test]
async fn session_refuses_invalid_invocation_ids_as_invalid_call() {
    let s = host_support::session();
    s.session.connect("conn-1").unwrap();
    for (what, id) in invalid_ids() {
        let call = s.call("conn-1", &id, "domain:devices.list", json!({}));
        let r = s.session.invoke(call.clone()).await;
        assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall), "{what}");
        let text = serde_json::to_string(&call).unwrap();
        let r = s.session.invoke_json(&text).await;
        assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall), "{what}");
    }
    assert_eq!(s.source.invokes(), 0, "nothing reached the registry");
    assert_eq!(s.session.usage().calls, 0, "nothing was recorded");
    let longest = "~".repeat(256);
    let r = s
        .session
        .invoke(s.call("conn-1", &longest, "domain:devices.list", json!({})))
        .await;
    assert_eq!(r.rejection(), None);
    assert_eq!(r.invocation_result().unwrap().invocation_id(), longest);
}

fn host() -> AgentHost {
    AgentHost::new().with_known_build(KnownBuild::new(
        "console",
        "build-1",
        host_support::authority(),
    ))
}

fn auth(connection_id: &str) -> AuthenticatedConnection {
    AuthenticatedConnection::new(connection_id, "sess-1", "user-1")
}

fn run(run_id: &str) -> AgentRun {
    AgentRun {
        run_id: run_id.into(),
        session_id: "sess-1".into(),
        tab_id: Some("tab-1".into()),
        kind: ConsumerKind::Embedded,
    }
}

fn list_request(tool_call_id: &str, invocation_id: &str) -> ToolCallRequest {
    ToolCallRequest::new(
        "run-1",
        tool_call_id,
        invocation_id,
        "domain:devices.list",
        json!({}),
    )
}

#[test]
fn host_refuses_invalid_invocation_ids_before_dispatch() {
    let s = host_support::session();
    let host = host();
    host.accept_announcement(&auth("conn-1"), &s.session.connect("conn-1").unwrap())
        .unwrap();
    host.start_run(run("run-1")).unwrap();
    for (what, id) in invalid_ids() {
        let err = host
            .dispatch(list_request("tc-1", &id))
            .expect_err(what)
            .to_string();
        assert!(err.starts_with("invalid invocation id: "), "{what}: {err}");
        assert!(
            !err.contains('\r') && !err.contains('\n'),
            "{what}: the message never repeats the id"
        );
    }
    assert!(host.outstanding().is_empty());
    host.dispatch(list_request("tc-1", &"~".repeat(256)))
        .unwrap();
}

// ----- defect 8: pending confirmations are bounded ----------------------------

#[test]
fn pending_confirmations_are_bounded_and_none_is_dropped_for_a_new_one() {
    let f = fixture();
    let _h = register_plain(&f.registry, "mail.send");
    let mut ids = Vec::new();
    for i in 0..100 {
        let r = call(
            &f.registry,
            &format!("i{i}"),
            "cap:mail.send",
            json!({"to": format!("user{i}@example.com")}),
        );
        assert_eq!(error_code(&r), Some("CONFIRMATION_REQUIRED"), "call {i}");
        ids.push(details(&r)["confirmationId"].as_str().unwrap().to_string());
    }
    // The 101st is refused as the original refuses it: nothing the user may
    // be reading is dropped to make room.
    let r = call(
        &f.registry,
        "i100",
        "cap:mail.send",
        json!({"to": "user100@example.com"}),
    );
    assert_eq!(error_code(&r), Some("RATE_LIMITED"));
    let e = r.error().unwrap();
    assert_eq!(e.retry, Retry::AfterDelay);
    // The oldest was requested at the fixture's time and lives 5 minutes.
    assert_eq!(
        Value::Object(e.details.clone()),
        json!({"reason": "queue-full", "retryAfterMs": 300_000})
    );
    let live: Vec<String> = f
        .registry
        .pending_confirmations()
        .into_iter()
        .map(|p| p.confirmation_id)
        .collect();
    assert_eq!(live, ids, "the 100 live ones, all kept");
    // Asking again for the same call is the same confirmation, not a new one.
    let again = call(
        &f.registry,
        "i101",
        "cap:mail.send",
        json!({"to": "user0@example.com"}),
    );
    assert_eq!(details(&again)["confirmationId"], json!(ids[0]));
    // A decision frees a place.
    f.registry.reject(&ids[0]).unwrap();
    let r = call(
        &f.registry,
        "i102",
        "cap:mail.send",
        json!({"to": "user100@example.com"}),
    );
    assert_eq!(error_code(&r), Some("CONFIRMATION_REQUIRED"));
}

// ----- defect 9: no staleness check skipped ------------------------------------

#[test]
fn destructive_call_without_surface_version_is_stale() {
    let f = fixture();
    let _disable = register_plain(&f.registry, "devices.disable");
    let _mail = register_plain(&f.registry, "mail.send");
    for (capability, input) in [
        ("domain:devices.disable", json!({"deviceIds": ["d1"]})),
        ("cap:mail.send", json!({"to": "a@example.com"})),
    ] {
        let mut inv = AgentInvocation::new(format!("no-version-{capability}"), capability);
        inv.input = input;
        let r = now(f.registry.invoke(inv, &consumer()));
        let error = r.error().expect("refused");
        assert_eq!(error.code, ErrorCode::StaleCapability, "{capability}");
        assert_eq!(error.retry, Retry::AfterRefresh, "{capability}");
        assert_eq!(
            Value::Object(error.details.clone()),
            json!({"reason": "surface-version-required"}),
            "{capability}"
        );
    }
    assert!(
        f.registry.pending_confirmations().is_empty(),
        "no confirmation was requested on the agent's behalf"
    );
    assert!(f.executor.calls().is_empty());
    // Queries and mutations keep working without a version.
    let _list = register_plain(&f.registry, "devices.list");
    let r = now(f.registry.invoke(
        AgentInvocation::new("query", "domain:devices.list"),
        &consumer(),
    ));
    assert!(r.error().is_none(), "{r:?}");
}

// ----- defect 10: registration ids have one spelling ---------------------------

#[test]
fn registration_id_aliases_do_not_resolve() {
    let f = fixture();
    let mut handles = Vec::new();
    for _ in 0..4 {
        handles.push(register_plain(&f.registry, "devices.list"));
    }
    assert_eq!(handles[3].registration_id(), "r4");
    for (i, alias) in ["r04", "r+4", "r00004", "r4 ", " r4", "R4", "r٤"]
        .into_iter()
        .enumerate()
    {
        let mut inv = AgentInvocation::new(format!("alias-{i}"), "domain:devices.list");
        inv.registration_id = Some(alias.to_string());
        let r = now(f
            .registry
            .invoke(at_current_version(&f.registry, inv), &consumer()));
        // Not one of this registry's ids while others serve the
        // capability: the original's `surface-reloaded`.
        assert_eq!(error_code(&r), Some("STALE_CAPABILITY"), "{alias:?}");
        assert_eq!(
            r.error().unwrap().details["reason"],
            json!("surface-reloaded"),
            "{alias:?}"
        );
    }
    assert!(f.executor.calls().is_empty());
    let mut inv = AgentInvocation::new("canonical", "domain:devices.list");
    inv.registration_id = Some("r4".into());
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()));
    assert!(r.error().is_none(), "{r:?}");
    // An alias of a registration that is gone was never issued
    // (`surface-reloaded`); only its canonical id is `registration-replaced`.
    let gone = handles.remove(0);
    assert_eq!(gone.registration_id(), "r1");
    drop(gone);
    for (spelling, reason) in [("r01", "surface-reloaded"), ("r1", "registration-replaced")] {
        let mut inv = AgentInvocation::new(format!("gone-{spelling}"), "domain:devices.list");
        inv.registration_id = Some(spelling.to_string());
        let r = now(f
            .registry
            .invoke(at_current_version(&f.registry, inv), &consumer()));
        assert_eq!(error_code(&r), Some("STALE_CAPABILITY"), "{spelling}");
        assert_eq!(
            r.error().unwrap().details["reason"],
            json!(reason),
            "{spelling}"
        );
    }
}

#[test]
fn registration_id_aliases_do_not_resolve_view_capabilities() {
    let f = fixture();
    let _table = f
        .registry
        .register_component(
            surface_runtime::ComponentDefinition::new("devices.table", "main").capability(
                surface_runtime::ViewCapability::with_schema(
                    "clear",
                    "Clear the selection",
                    json!({"type": "object"}),
                    |_| async { Ok(json!("cleared")) },
                ),
            ),
        )
        .unwrap();
    for (spelling, ok) in [("r01", false), ("r+1", false), ("r1", true)] {
        let mut inv = AgentInvocation::new(format!("v-{spelling}"), "view:devices.table.clear");
        inv.registration_id = Some(spelling.to_string());
        let r = now(f
            .registry
            .invoke(at_current_version(&f.registry, inv), &consumer()));
        assert_eq!(r.error().is_none(), ok, "{spelling}: {r:?}");
    }
}

// ----- defect 11: the envelope limit measures the text received ----------------

/// Call text for `devices.list` of exactly `chars` UTF-16 units, written
/// the way another JSON writer might: without the defaulted
/// `protocolVersion`, and with numbers in exponent form — both of which a
/// re-serialization would lengthen.
fn received_text_of_length(s: &host_support::SessionFixture, id: &str, chars: usize) -> String {
    let call = s.call("conn-1", id, "domain:devices.list", json!({}));
    let value = serde_json::to_value(&call).unwrap();
    let template = |pad: usize| {
        let mut v = value.clone();
        v["invocation"]["input"] = json!({"n": "N", "pad": "x".repeat(pad)});
        serde_json::to_string(&v).unwrap().replace("\"N\"", "1e1")
    };
    let base = template(0).encode_utf16().count();
    let text = template(chars - base);
    assert_eq!(text.encode_utf16().count(), chars);
    text
}

#[tokio::test]
async fn session_envelope_limit_applies_to_the_text_received() {
    let s = host_support::session();
    s.session.connect("conn-1").unwrap();
    let at = received_text_of_length(&s, "inv-at", MAX_ENVELOPE_CHARS);
    // Written back, the same call is longer than the limit.
    let parsed: surface_runtime::host::BrowserSurfaceCall = serde_json::from_str(&at).unwrap();
    let rewritten = serde_json::to_string(&parsed).unwrap();
    assert!(rewritten.encode_utf16().count() > MAX_ENVELOPE_CHARS);
    let r = s.session.invoke_json(&at).await;
    assert_eq!(
        r.rejection(),
        None,
        "262,144 characters received are accepted"
    );
    assert_eq!(r.invocation_result().unwrap().error(), None, "and executed");
    let over = received_text_of_length(&s, "inv-over", MAX_ENVELOPE_CHARS + 1);
    let r = s.session.invoke_json(&over).await;
    assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall));
    assert_eq!(r.invocation_id, "", "refused before parsing");
    assert_eq!(s.source.invokes(), 1);
    // A repeat of the accepted text is recognised as the same envelope.
    let again = s.session.invoke_json(&at).await;
    assert_eq!(again, s.session.invoke_json(&at).await);
    assert_eq!(s.source.invokes(), 1);
}

// ----- defect 13: the host never dispatches an id twice -------------------------

#[tokio::test]
async fn completed_invocation_id_is_never_dispatched_again() {
    let s = host_support::session();
    let host = host().with_completed_memory(1);
    host.accept_announcement(&auth("conn-1"), &s.session.connect("conn-1").unwrap())
        .unwrap();
    host.start_run(run("run-1")).unwrap();
    for (tool_call, id) in [("tc-1", "inv-1"), ("tc-2", "inv-2"), ("tc-3", "inv-3")] {
        let call = host.dispatch(list_request(tool_call, id)).unwrap();
        let result = s.session.invoke(call).await;
        assert!(matches!(
            host.accept_result(&auth("conn-1"), &result).unwrap(),
            ResultDisposition::Completed(_)
        ));
    }
    // inv-1 and inv-2 left the completed-result memory (it keeps one); they
    // are still never dispatched again, with any envelope.
    for (tool_call, id) in [("tc-1", "inv-1"), ("tc-9", "inv-1"), ("tc-2", "inv-2")] {
        assert_eq!(
            host.dispatch(list_request(tool_call, id)).unwrap_err(),
            surface_runtime::host::HostError::InvocationConflict(id.into()),
            "{id} via {tool_call}"
        );
    }
    assert!(host.outstanding().is_empty());
    assert_eq!(s.fx.executor.count(), 3);
}

#[test]
fn interrupted_invocation_id_is_never_dispatched_again() {
    let s = host_support::session();
    let host = host();
    host.accept_announcement(&auth("conn-1"), &s.session.connect("conn-1").unwrap())
        .unwrap();
    host.start_run(run("run-1")).unwrap();
    let call = host.dispatch(list_request("tc-1", "inv-1")).unwrap();
    let interrupted = host.connection_closed("conn-1");
    assert_eq!(interrupted.len(), 1);
    // The tab reconnects; the interrupted id must be reconciled, never sent
    // again.
    host.accept_announcement(&auth("conn-2"), &s.session.connect("conn-2").unwrap())
        .unwrap();
    assert_eq!(
        host.dispatch(list_request("tc-1", "inv-1")).unwrap_err(),
        surface_runtime::host::HostError::InvocationConflict("inv-1".into())
    );
    // A late result of the interrupted call stays unsolicited.
    let late = BrowserSurfaceResult::for_call(
        &call.identity,
        &call,
        BrowserSurfaceOutcome::rejected(RejectionReason::Disconnected),
    );
    assert_eq!(
        host.accept_result(&auth("conn-1"), &late).unwrap_err(),
        surface_runtime::host::HostError::Unsolicited("inv-1".into())
    );
    host.dispatch(list_request("tc-2", "inv-2")).unwrap();
}
