//! Browser side of the session protocol (`docs/host.md`): `BrowserSurfaceSession` rules, each
//! rejection reason, every limit at its exact boundary, expiry, disconnect
//! during a call, reload with a new identity.

mod host_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use host_support::*;
use serde_json::{json, Value};
use surface_runtime::host::{
    serialized_chars, BrowserSurfaceAnnouncement, BrowserSurfaceIdentity, BrowserSurfaceOutcome,
    BrowserSurfaceResult, BrowserSurfaceSession, BrowserSurfaceSessionOptions, RejectionReason,
    SessionCollection, SessionError, SessionUsage, MAX_ENVELOPE_CHARS,
};
use surface_runtime::{AgentConsumer, AgentInvocationResult};

fn output(result: &BrowserSurfaceResult) -> &Value {
    match result.invocation_result() {
        Some(AgentInvocationResult::Ok {
            output: Some(output),
            ..
        }) => output,
        other => panic!("expected success, got {other:?}"),
    }
}

// ----- AS-HOST-001/002/003 ---------------------------------------------------

#[tokio::test]
async fn as_host_001_announcement_call_and_result_correlate_by_identity_and_connection() {
    let s = session();
    let announcement = s.session.connect("conn-1").expect("connects");
    assert_eq!(announcement.protocol_version, 1);
    assert_eq!(announcement.identity, identity());
    assert_eq!(announcement.connection_id, "conn-1");
    assert_eq!(
        announcement.snapshot.surface_version,
        s.fx.registry.surface_version()
    );
    let wire = serde_json::to_value(&announcement).unwrap();
    assert_eq!(
        wire["identity"],
        json!({"appId":"console","buildId":"build-1","sessionId":"sess-1","tabId":"tab-1"})
    );
    assert_eq!(wire["connectionId"], json!("conn-1"));

    let call = s.call(
        "conn-1",
        "inv-1",
        "domain:devices.list",
        json!({"limit": 5}),
    );
    let result = s.session.invoke(call.clone()).await;
    assert_eq!(result.connection_id, "conn-1");
    assert_eq!(result.run_id, "run-1");
    assert_eq!(result.tool_call_id, "tc-inv-1");
    assert_eq!(result.invocation_id, "inv-1");
    assert_eq!(
        output(&result),
        &json!({"path": "devices.list", "input": {"limit": 5}})
    );
    assert_eq!(result.invocation_result().unwrap().invocation_id(), "inv-1");
    assert_eq!(s.source.invokes(), 1);
    assert_eq!(s.fx.executor.count(), 1);
}

#[tokio::test]
async fn as_host_002_wrong_tab_and_stale_calls_never_reach_registry() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let good = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));

    for (field, identity) in [
        (
            "tab",
            BrowserSurfaceIdentity::new("console", "build-1", "sess-1", "tab-2"),
        ),
        (
            "session",
            BrowserSurfaceIdentity::new("console", "build-1", "sess-2", "tab-1"),
        ),
        (
            "app",
            BrowserSurfaceIdentity::new("other", "build-1", "sess-1", "tab-1"),
        ),
        (
            "build",
            BrowserSurfaceIdentity::new("console", "build-2", "sess-1", "tab-1"),
        ),
    ] {
        let mut call = good.clone();
        call.identity = identity;
        let r = s.session.invoke(call).await;
        assert_eq!(
            r.rejection(),
            Some(RejectionReason::WrongSession),
            "wrong {field}"
        );
    }

    // Stale: the surface moved on (an availability/registration change).
    let mut stale = good.clone();
    stale.invocation.surface_version = Some(s.fx.registry.surface_version() - 1);
    assert_eq!(
        s.session.invoke(stale).await.rejection(),
        Some(RejectionReason::StaleSurface)
    );
    let mut future = good.clone();
    future.invocation.surface_version = Some(s.fx.registry.surface_version() + 1);
    assert_eq!(
        s.session.invoke(future).await.rejection(),
        Some(RejectionReason::StaleSurface)
    );
    // Even reads need the current revision after a change.
    let read_before_change = good.clone();
    s.fx.registry.notify_changed();
    assert_eq!(
        s.session.invoke(read_before_change).await.rejection(),
        Some(RejectionReason::StaleSurface)
    );

    assert_eq!(s.source.invokes(), 0, "nothing reached the registry");
    assert_eq!(s.fx.executor.count(), 0);
    assert_eq!(s.session.usage().calls, 0, "rejections are not recorded");
}

#[tokio::test]
async fn as_host_003_replay_joins_in_flight_freezes_results_and_refuses_changed_envelopes() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let gate = s.fx.executor.close_gate();
    let call = s.call(
        "conn-1",
        "inv-1",
        "domain:devices.list",
        json!({"limit": 1}),
    );

    // Identical envelopes join the call in flight: one execution.
    let first = tokio::spawn({
        let session = s.session.clone();
        let call = call.clone();
        async move { session.invoke(call).await }
    });
    tokio::task::yield_now().await;
    let second = tokio::spawn({
        let session = s.session.clone();
        let call = call.clone();
        async move { session.invoke(call).await }
    });
    tokio::task::yield_now().await;
    assert_eq!(s.session.usage().pending_calls, 1);
    gate.cancel();
    let (a, b) = (first.await.unwrap(), second.await.unwrap());
    assert_eq!(a, b);
    assert_eq!(
        output(&a),
        &json!({"path": "devices.list", "input": {"limit": 1}})
    );
    assert_eq!(s.fx.executor.count(), 1);
    assert_eq!(s.source.invokes(), 1);

    // Frozen: the same envelope later returns the recorded result, even
    // after the registration it used is gone and the surface moved on.
    let list_registration = call.invocation.registration_id.clone().unwrap();
    let mut fx = s.fx;
    let idx = fx
        .handles
        .iter()
        .position(|h| h.registration_id() == list_registration)
        .unwrap();
    fx.handles.remove(idx).unregister();
    assert_ne!(
        Some(fx.registry.surface_version()),
        call.invocation.surface_version
    );
    let replay = s.session.invoke(call.clone()).await;
    assert_eq!(replay, a);
    assert_eq!(fx.executor.count(), 1);

    // Same id, changed envelope ⇒ invocation-conflict (input, run, tool
    // call, connection, capability).
    let mut changed_input = call.clone();
    changed_input.invocation.input = json!({"limit": 2});
    let mut changed_run = call.clone();
    changed_run.run_id = "run-2".into();
    let mut changed_tool_call = call.clone();
    changed_tool_call.tool_call_id = "tc-other".into();
    for changed in [changed_input, changed_run, changed_tool_call] {
        assert_eq!(
            s.session.invoke(changed).await.rejection(),
            Some(RejectionReason::InvocationConflict)
        );
    }
    s.session.connect("conn-2").unwrap();
    let mut changed_connection = call.clone();
    changed_connection.connection_id = "conn-2".into();
    assert_eq!(
        s.session.invoke(changed_connection).await.rejection(),
        Some(RejectionReason::InvocationConflict)
    );
    assert_eq!(fx.executor.count(), 1);
    assert_eq!(s.source.invokes(), 1);
}

#[tokio::test]
async fn replay_identity_is_the_canonical_json_of_the_envelope_as_received() {
    // `invoke_json`: the digest is the canonical JSON (keys sorted, no
    // whitespace) of the text as received — unknown fields count, an
    // absent `input` is not `{}`; key order and whitespace do not.
    let s = session();
    s.session.connect("conn-1").unwrap();
    let mut sent =
        serde_json::to_value(s.call("conn-1", "inv-1", "domain:devices.list", json!({}))).unwrap();
    sent["invocation"].as_object_mut().unwrap().remove("input");
    let first = s.session.invoke_json(&sent.to_string()).await;
    assert_eq!(
        output(&first),
        &json!({"path": "devices.list", "input": {}})
    );

    // Reordered keys and whitespace: the same envelope, the frozen result.
    let o = sent.as_object().unwrap();
    let reordered = format!(
        "{{ \"invocation\" : {},\n \"toolCallId\": {}, \"runId\": {}, \"connectionId\": {}, \"identity\": {}, \"type\": {}, \"protocolVersion\": 1 }}",
        o["invocation"], o["toolCallId"], o["runId"], o["connectionId"], o["identity"], o["type"]
    );
    assert_eq!(s.session.invoke_json(&reordered).await, first);

    // An explicit `{}` where the first had no input: another envelope.
    let mut with_empty_input = sent.clone();
    with_empty_input["invocation"]["input"] = json!({});
    let r = s.session.invoke_json(&with_empty_input.to_string()).await;
    assert_eq!(
        (r.invocation_id.as_str(), r.rejection()),
        ("inv-1", Some(RejectionReason::InvocationConflict))
    );
    // A field this project does not read: another envelope too.
    let mut with_unknown = sent.clone();
    with_unknown["traceId"] = json!("t-1");
    assert_eq!(
        s.session
            .invoke_json(&with_unknown.to_string())
            .await
            .rejection(),
        Some(RejectionReason::InvocationConflict)
    );
    let mut with_unknown_inside = sent.clone();
    with_unknown_inside["invocation"]["hint"] = json!(null);
    assert_eq!(
        s.session
            .invoke_json(&with_unknown_inside.to_string())
            .await
            .rejection(),
        Some(RejectionReason::InvocationConflict)
    );
    assert_eq!(s.fx.executor.count(), 1);

    // `invoke`: the canonical JSON of the parsed call's serialization, where
    // an absent input is `{}`.
    let parsed = s.call("conn-1", "inv-2", "domain:devices.list", json!({}));
    let second = s.session.invoke(parsed.clone()).await;
    assert_eq!(s.session.invoke(parsed).await, second);
    let text =
        serde_json::to_value(s.call("conn-1", "inv-2", "domain:devices.list", json!({}))).unwrap();
    assert_eq!(s.session.invoke_json(&text.to_string()).await, second);
    assert_eq!(s.fx.executor.count(), 2);
}

// ----- one test per rejection reason -----------------------------------------

#[tokio::test]
async fn rejection_invalid_call_for_missing_or_empty_fields() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let good = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));
    let mut cases = Vec::new();
    let mut c = good.clone();
    c.invocation.registration_id = None;
    cases.push(("no registrationId", c));
    let mut c = good.clone();
    c.invocation.surface_version = None;
    cases.push(("no surfaceVersion", c));
    let mut c = good.clone();
    c.invocation.registration_id = Some(String::new());
    cases.push(("empty registrationId", c));
    let mut c = good.clone();
    c.invocation.invocation_id = String::new();
    cases.push(("empty invocationId", c));
    let mut c = good.clone();
    c.run_id = String::new();
    cases.push(("empty runId", c));
    let mut c = good.clone();
    c.tool_call_id = String::new();
    cases.push(("empty toolCallId", c));
    let mut c = good.clone();
    c.protocol_version = 2;
    cases.push(("protocol 2", c));
    for (what, call) in cases {
        assert_eq!(
            s.session.invoke(call).await.rejection(),
            Some(RejectionReason::InvalidCall),
            "{what}"
        );
    }
    assert_eq!(s.source.invokes(), 0);
}

#[tokio::test]
async fn a_non_canonical_surface_version_is_an_invalid_call() {
    // Stricter than the original, which compares the string with its own
    // and answers `stale-surface`: here `surfaceVersion` must be a
    // canonical decimal string, or the call is not a call.
    let s = session();
    s.session.connect("conn-1").unwrap();
    let call =
        serde_json::to_value(s.call("conn-1", "inv-1", "domain:devices.list", json!({}))).unwrap();
    let current = s.fx.registry.surface_version();
    for version in [
        json!(format!("0{current}")),
        json!("abc"),
        json!(format!("+{current}")),
        json!(format!("{current}.0")),
        json!(format!(" {current}")),
        json!(""),
        json!(current),
    ] {
        let mut sent = call.clone();
        sent["invocation"]["surfaceVersion"] = version.clone();
        let r = s.session.invoke_json(&sent.to_string()).await;
        assert_eq!(
            (
                r.connection_id.as_str(),
                r.invocation_id.as_str(),
                r.rejection()
            ),
            ("conn-1", "inv-1", Some(RejectionReason::InvalidCall)),
            "{version}"
        );
    }
    assert_eq!(s.source.invokes(), 0);
    // The canonical spelling of the same version is dispatched.
    let r = s.session.invoke_json(&call.to_string()).await;
    assert_eq!(output(&r), &json!({"path": "devices.list", "input": {}}));
}

#[tokio::test]
async fn rejection_invalid_call_for_unparseable_json_echoes_readable_ids() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let r = s.session.invoke_json("{not json").await;
    assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall));
    assert_eq!(r.invocation_id, "");
    // Missing surfaceVersion in raw JSON: parsed, then refused; ids echoed.
    let mut raw =
        serde_json::to_value(s.call("conn-1", "inv-9", "domain:devices.list", json!({}))).unwrap();
    raw["invocation"]
        .as_object_mut()
        .unwrap()
        .remove("surfaceVersion");
    let r = s.session.invoke_json(&raw.to_string()).await;
    assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall));
    assert_eq!(
        (r.connection_id.as_str(), r.invocation_id.as_str()),
        ("conn-1", "inv-9")
    );
    // Missing identity: not a call at all.
    raw.as_object_mut().unwrap().remove("identity");
    let r = s.session.invoke_json(&raw.to_string()).await;
    assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall));
    assert_eq!(r.run_id, "run-1");
    assert_eq!(s.source.invokes(), 0);
}

/// `call` as text, with every `"LONE"` string in it written as `lone`
/// (a JSON escape sequence no Rust string can hold, written as JavaScript's
/// `JSON.stringify` writes it).
fn text_with(call: &impl serde::Serialize, lone: &str) -> String {
    let text = serde_json::to_string(call).unwrap();
    assert!(text.contains("LONE"), "{text}");
    text.replace("LONE", lone)
}

fn ids(r: &BrowserSurfaceResult) -> [&str; 4] {
    [
        r.connection_id.as_str(),
        r.run_id.as_str(),
        r.tool_call_id.as_str(),
        r.invocation_id.as_str(),
    ]
}

#[tokio::test]
async fn a_lone_surrogate_in_a_call_is_an_invalid_call_that_echoes_its_ids() {
    // A TypeScript host writes a string cut in the middle of an emoji as a
    // lone surrogate escape; the call is refused (never run with altered
    // input), and its answer carries the call's ids so the host can match
    // it to the pending tool call.
    let s = session();
    s.session.connect("conn-1").unwrap();
    let call = s.call(
        "conn-1",
        "inv-1",
        "domain:devices.disable",
        json!({"reason": "LONE"}),
    );
    for lone in [
        r"maintenance \ud83d",
        r"\ude00 maintenance",
        r"\uD83D\uD83D",
        r"\ud83d\\ude00",
    ] {
        let r = s.session.invoke_json(&text_with(&call, lone)).await;
        assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall), "{lone}");
        assert_eq!(ids(&r), ["conn-1", "run-1", "tc-inv-1", "inv-1"], "{lone}");
        assert_eq!(r.identity, identity(), "{lone}");
    }
    assert_eq!(s.source.invokes(), 0);
    // Not a call besides (no identity): still refused, ids still echoed.
    let mut no_identity = serde_json::to_value(&call).unwrap();
    no_identity.as_object_mut().unwrap().remove("identity");
    let r = s
        .session
        .invoke_json(&text_with(&no_identity, r"\ud83d"))
        .await;
    assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall));
    assert_eq!(ids(&r), ["conn-1", "run-1", "tc-inv-1", "inv-1"]);
    // An id holding one is echoed with U+FFFD in its place.
    let mut lone_run = call.clone();
    lone_run.run_id = "run-LONE".into();
    lone_run.invocation.input = json!({"reason": "lost"});
    let r = s
        .session
        .invoke_json(&text_with(&lone_run, r"\ud83d"))
        .await;
    assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall));
    assert_eq!(ids(&r), ["conn-1", "run-\u{FFFD}", "tc-inv-1", "inv-1"]);
    // The invocation id was never recorded: the same call, well formed,
    // runs.
    let mut fine = call.clone();
    fine.invocation.input = json!({"reason": "lost"});
    let r = s
        .session
        .invoke_json(&serde_json::to_string(&fine).unwrap())
        .await;
    assert_eq!(r.rejection(), None);
    assert_eq!(s.source.invokes(), 1);
}

#[tokio::test]
async fn escaped_backslashes_and_surrogate_pairs_in_a_call_are_text() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let cases = [
        // A backslash and the text `ud83d`, not an escape.
        ("inv-1", r"\\ud83d", "\\ud83d"),
        // A pair: one emoji.
        ("inv-2", r"\ud83d\ude00", "\u{1F600}"),
        ("inv-3", r"\uD83D\uDE00!", "\u{1F600}!"),
    ];
    for (id, sent, read) in cases {
        let call = s.call(
            "conn-1",
            id,
            "domain:devices.disable",
            json!({"reason": "LONE"}),
        );
        let r = s.session.invoke_json(&text_with(&call, sent)).await;
        assert_eq!(r.rejection(), None, "{sent}");
        assert_eq!(output(&r)["input"]["reason"], json!(read), "{sent}");
    }
    assert_eq!(s.source.invokes(), 3);
}

#[tokio::test]
async fn a_lone_surrogate_before_the_checks_or_over_the_limit() {
    // Step 1 (not connected) echoes the ids of the lossy copy too.
    let s = session();
    let call = s.call(
        "conn-1",
        "inv-1",
        "domain:devices.list",
        json!({"pad": "LONE"}),
    );
    let r = s.session.invoke_json(&text_with(&call, r"\ud83d")).await;
    assert_eq!(r.rejection(), Some(RejectionReason::Disconnected));
    assert_eq!(ids(&r), ["conn-1", "run-1", "tc-inv-1", "inv-1"]);
    // Text over the envelope limit is not parsed, lone surrogate or not.
    s.session.connect("conn-1").unwrap();
    let mut long = call_of_length(&s, "inv-long", MAX_ENVELOPE_CHARS + 1);
    long.invocation.input["pad"] = json!(format!(
        "LONE{}",
        &long.invocation.input["pad"].as_str().unwrap()[6..]
    ));
    let text = text_with(&long, r"\ud83d");
    assert_eq!(serialized_chars(&text), MAX_ENVELOPE_CHARS + 1);
    let r = s.session.invoke_json(&text).await;
    assert_eq!(r.rejection(), Some(RejectionReason::InvalidCall));
    assert_eq!(ids(&r), ["", "", "", ""]);
    assert_eq!(s.source.invokes(), 0);
}

#[tokio::test]
async fn rejection_disconnected_for_a_connection_id_never_opened() {
    // The original answers a connection it never opened as it answers a
    // closed one.
    let s = session();
    s.session.connect("conn-1").unwrap();
    let call = s.call(
        "conn-never-opened",
        "inv-1",
        "domain:devices.list",
        json!({}),
    );
    assert_eq!(
        s.session.invoke(call).await.rejection(),
        Some(RejectionReason::Disconnected)
    );
    assert_eq!(s.source.invokes(), 0);
}

#[tokio::test]
async fn rejection_disconnected_when_not_connected_or_connection_closed() {
    let s = session();
    let call = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));
    assert_eq!(
        s.session.invoke(call.clone()).await.rejection(),
        Some(RejectionReason::Disconnected),
        "never connected"
    );
    s.session.connect("conn-1").unwrap();
    s.session.disconnect();
    assert_eq!(
        s.session.invoke(call.clone()).await.rejection(),
        Some(RejectionReason::Disconnected),
        "after disconnect"
    );
    s.session.connect("conn-2").unwrap();
    assert_eq!(
        s.session.invoke(call).await.rejection(),
        Some(RejectionReason::Disconnected),
        "old connection after reconnect"
    );
    assert_eq!(s.source.invokes(), 0);
}

#[tokio::test]
async fn not_connected_answers_disconnected_before_shape_and_identity() {
    // The original answers `disconnected` first when no connection is open
    // (never connected, or after `disconnect()`): a foreign identity, an
    // empty `runId`, another protocol or text that is not a call are all
    // `disconnected` then, echoing whichever ids can be read.
    let s = session();
    let good = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));
    let mut foreign = good.clone();
    foreign.identity = BrowserSurfaceIdentity::new("other", "build-9", "sess-9", "tab-9");
    let mut empty_run = good.clone();
    empty_run.run_id = String::new();
    let mut protocol_2 = good.clone();
    protocol_2.protocol_version = 2;
    let mut no_version = serde_json::to_value(&foreign).unwrap();
    no_version["invocation"]
        .as_object_mut()
        .unwrap()
        .remove("surfaceVersion");
    let echoed = |r: &BrowserSurfaceResult| {
        (
            r.connection_id.clone(),
            r.run_id.clone(),
            r.tool_call_id.clone(),
            r.invocation_id.clone(),
            r.identity.clone(),
            r.rejection(),
        )
    };
    let expected = |run: &str| {
        (
            "conn-1".to_string(),
            run.to_string(),
            "tc-inv-1".to_string(),
            "inv-1".to_string(),
            identity(),
            Some(RejectionReason::Disconnected),
        )
    };
    for moment in ["never connected", "after disconnect"] {
        if moment == "after disconnect" {
            s.session.connect("conn-1").unwrap();
            s.session.disconnect();
        }
        let r = s.session.invoke(foreign.clone()).await;
        assert_eq!(echoed(&r), expected("run-1"), "{moment}: foreign identity");
        let r = s.session.invoke(empty_run.clone()).await;
        assert_eq!(echoed(&r), expected(""), "{moment}: empty runId");
        let r = s.session.invoke(protocol_2.clone()).await;
        assert_eq!(echoed(&r), expected("run-1"), "{moment}: protocol 2");
        let text = serde_json::to_string(&foreign).unwrap();
        let r = s.session.invoke_json(&text).await;
        assert_eq!(echoed(&r), expected("run-1"), "{moment}: json, foreign");
        let r = s.session.invoke_json(&no_version.to_string()).await;
        assert_eq!(echoed(&r), expected("run-1"), "{moment}: json, no version");
        let r = s.session.invoke_json("{not json").await;
        assert_eq!(
            echoed(&r),
            (
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                identity(),
                Some(RejectionReason::Disconnected)
            ),
            "{moment}: not JSON"
        );
    }
    // Text over the envelope limit is not parsed to echo its ids.
    let long = serde_json::to_string(&call_of_length(&s, "inv-1", 262_145)).unwrap();
    let r = s.session.invoke_json(&long).await;
    assert_eq!(
        (
            r.rejection(),
            r.connection_id.as_str(),
            r.invocation_id.as_str()
        ),
        (Some(RejectionReason::Disconnected), "", "")
    );
    // Connected again, the same calls get their own answers.
    s.session.connect("conn-2").unwrap();
    foreign.connection_id = "conn-2".into();
    empty_run.connection_id = "conn-2".into();
    assert_eq!(
        s.session.invoke(foreign).await.rejection(),
        Some(RejectionReason::WrongSession)
    );
    assert_eq!(
        s.session.invoke(empty_run).await.rejection(),
        Some(RejectionReason::InvalidCall)
    );
    assert_eq!(
        s.session.invoke_json("{not json").await.rejection(),
        Some(RejectionReason::InvalidCall)
    );
    // Expired and disposed keep their answers.
    let expiring = session_with(AgentConsumer::embedded("u1"), 10, Duration::from_secs(60));
    expiring.clock.advance(Duration::from_secs(60));
    let mut foreign_expired = good.clone();
    foreign_expired.identity.tab_id = "tab-9".into();
    assert_eq!(
        expiring.session.invoke(foreign_expired).await.rejection(),
        Some(RejectionReason::SessionExpired)
    );
    assert_eq!(
        expiring.session.invoke_json("{not json").await.rejection(),
        Some(RejectionReason::SessionExpired)
    );
    s.session.dispose();
    assert_eq!(
        s.session.invoke(empty_run_on(&s)).await.rejection(),
        Some(RejectionReason::Disconnected)
    );
    assert_eq!(s.source.invokes(), 0);
}

fn empty_run_on(s: &SessionFixture) -> surface_runtime::host::BrowserSurfaceCall {
    let mut call = s.call("conn-2", "inv-1", "domain:devices.list", json!({}));
    call.run_id = String::new();
    call
}

#[tokio::test]
async fn rejection_stale_surface_for_destructive_and_read_alike() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let purge = s.call(
        "conn-1",
        "inv-1",
        "domain:devices.purge",
        json!({"deviceIds": ["d1"]}),
    );
    let list = s.call("conn-1", "inv-2", "domain:devices.list", json!({}));
    s.fx.registry.notify_changed();
    for call in [purge, list] {
        assert_eq!(
            s.session.invoke(call).await.rejection(),
            Some(RejectionReason::StaleSurface)
        );
    }
    assert_eq!(s.source.invokes(), 0);
}

#[tokio::test]
async fn rejection_invocation_conflict_for_reused_id_on_another_capability() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let list = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));
    s.session.invoke(list).await;
    let other = s.call(
        "conn-1",
        "inv-1",
        "view:devices.table.select",
        json!({"ids": ["a"]}),
    );
    assert_eq!(
        s.session.invoke(other).await.rejection(),
        Some(RejectionReason::InvocationConflict)
    );
    assert_eq!(s.source.invokes(), 1);
}

#[tokio::test]
async fn rejection_capacity_exceeded_never_evicts_accepted_calls() {
    let s = session_with(AgentConsumer::embedded("u1"), 2, Duration::from_secs(60));
    s.session.connect("conn-1").unwrap();
    let first = s
        .session
        .invoke(s.call("conn-1", "inv-1", "domain:devices.list", json!({})))
        .await;
    s.session
        .invoke(s.call("conn-1", "inv-2", "domain:devices.list", json!({})))
        .await;
    let third = s
        .session
        .invoke(s.call("conn-1", "inv-3", "domain:devices.list", json!({})))
        .await;
    assert_eq!(third.rejection(), Some(RejectionReason::CapacityExceeded));
    // The first accepted call is still answered from its frozen result.
    let replay = s
        .session
        .invoke(s.call("conn-1", "inv-1", "domain:devices.list", json!({})))
        .await;
    assert_eq!(replay, first);
    assert_eq!(s.source.invokes(), 2);
}

#[tokio::test]
async fn rejection_session_expired_after_ttl() {
    let s = session_with(AgentConsumer::embedded("u1"), 10, Duration::from_secs(60));
    s.session.connect("conn-1").unwrap();
    s.clock.advance(Duration::from_secs(60));
    let call = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));
    assert_eq!(
        s.session.invoke(call).await.rejection(),
        Some(RejectionReason::SessionExpired)
    );
    assert_eq!(s.source.invokes(), 0);
}

#[tokio::test]
async fn undiscoverable_capability_is_a_stale_surface_without_dispatch() {
    // A headless consumer does not see view capabilities: a call naming one
    // is not dispatched, whatever the host sends — the original answers a
    // capability or registration missing from the snapshot `stale-surface`.
    let s = session_with(AgentConsumer::headless("u1"), 10, Duration::from_secs(60));
    let announcement = s.session.connect("conn-1").unwrap();
    assert!(announcement.snapshot.components.is_empty());
    let view = s.call(
        "conn-1",
        "inv-1",
        "view:devices.table.select",
        json!({"ids": ["a"]}),
    );
    let r = s.session.invoke(view).await;
    assert_eq!(r.rejection(), Some(RejectionReason::StaleSurface));
    // A registration id that is not the capability's is not discoverable
    // either.
    let mut wrong_reg = s.call("conn-1", "inv-2", "domain:devices.list", json!({}));
    wrong_reg.invocation.registration_id = Some(s.fx.registration("domain:devices.purge"));
    let r = s.session.invoke(wrong_reg).await;
    assert_eq!(r.rejection(), Some(RejectionReason::StaleSurface));
    assert_eq!(s.source.invokes(), 0);
    assert_eq!(s.session.usage().calls, 0);
}

#[tokio::test]
async fn a_call_naming_another_instance_is_a_stale_surface_without_dispatch() {
    // The original's `present` check: when the call carries
    // `invocation.instanceId`, the registration's component must be that
    // instance. `devices.table` is mounted as `main`; `devices.disable` is
    // bound inside it (`context.instanceId: "main"`); `devices.list` has
    // no component.
    let s = session();
    s.session.connect("conn-1").unwrap();
    let with_instance = |id: &str, capability: &str, input: Value, instance: &str| {
        let mut call = s.call("conn-1", id, capability, input);
        call.invocation.instance_id = Some(instance.to_string());
        call
    };
    let select = |id: &str, instance: &str| {
        with_instance(
            id,
            "view:devices.table.select",
            json!({"ids": ["a"]}),
            instance,
        )
    };
    let disable =
        |id: &str, instance: &str| with_instance(id, "domain:devices.disable", json!({}), instance);
    let refused = [
        select("inv-1", "other"),
        disable("inv-2", "other"),
        with_instance("inv-3", "domain:devices.list", json!({}), "main"),
    ];
    for call in refused {
        let id = call.invocation.invocation_id.clone();
        let r = s.session.invoke(call).await;
        assert_eq!(
            (r.invocation_id.as_str(), r.rejection()),
            (id.as_str(), Some(RejectionReason::StaleSurface))
        );
    }
    assert_eq!(s.source.invokes(), 0);
    assert_eq!(s.session.usage().calls, 0);
    // The mounted instance is dispatched.
    let r = s.session.invoke(select("inv-4", "main")).await;
    assert_eq!(output(&r), &json!({"selected": ["a"]}));
    let r = s.session.invoke(disable("inv-5", "main")).await;
    assert_eq!(
        output(&r),
        &json!({"path": "devices.disable", "input": {"deviceIds": ["d1", "d2"]}})
    );
    assert_eq!(s.source.invokes(), 2);
}

// ----- limits at their exact boundary -----------------------------------------

/// A `devices.list` call whose serialized envelope is exactly `chars` long
/// (padding an ASCII string in the input).
fn call_of_length(
    s: &SessionFixture,
    id: &str,
    chars: usize,
) -> surface_runtime::host::BrowserSurfaceCall {
    let base = s.call("conn-1", id, "domain:devices.list", json!({"pad": ""}));
    let base_len = serialized_chars(&serde_json::to_string(&base).unwrap());
    let call = s.call(
        "conn-1",
        id,
        "domain:devices.list",
        json!({"pad": "x".repeat(chars - base_len)}),
    );
    assert_eq!(
        serialized_chars(&serde_json::to_string(&call).unwrap()),
        chars
    );
    call
}

#[tokio::test]
async fn limit_envelope_262144_chars_accepted_262145_rejected() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    assert_eq!(MAX_ENVELOPE_CHARS, 262_144);
    let at = call_of_length(&s, "inv-at", 262_144);
    let r = s.session.invoke(at).await;
    assert_eq!(r.rejection(), None);
    assert_eq!(output(&r)["path"], json!("devices.list"));
    let over = call_of_length(&s, "inv-over", 262_145);
    assert_eq!(
        s.session.invoke(over.clone()).await.rejection(),
        Some(RejectionReason::InvalidCall)
    );
    // The same boundary through the JSON entry point.
    let text = serde_json::to_string(&over).unwrap();
    assert_eq!(
        s.session.invoke_json(&text).await.rejection(),
        Some(RejectionReason::InvalidCall)
    );
    let at_text = serde_json::to_string(&call_of_length(&s, "inv-at-2", 262_144)).unwrap();
    assert_eq!(s.session.invoke_json(&at_text).await.rejection(), None);
    assert_eq!(s.source.invokes(), 2);
}

#[test]
fn limit_envelope_counts_utf16_units_like_javascript() {
    // "😀" is one char in Rust but two UTF-16 units (JS `.length`).
    assert_eq!(serialized_chars("\"😀\""), 4);
}

#[tokio::test]
async fn limit_calls_1000th_accepted_1001st_rejected() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    for i in 1..=1_000 {
        let r = s
            .session
            .invoke(s.call(
                "conn-1",
                &format!("inv-{i}"),
                "domain:devices.list",
                json!({}),
            ))
            .await;
        assert_eq!(r.rejection(), None, "call {i}");
    }
    assert_eq!(s.session.usage().calls, 1_000);
    let r = s
        .session
        .invoke(s.call("conn-1", "inv-1001", "domain:devices.list", json!({})))
        .await;
    assert_eq!(r.rejection(), Some(RejectionReason::CapacityExceeded));
    assert_eq!(s.source.invokes(), 1_000);
    assert_eq!(s.session.usage().calls, 1_000);
}

#[tokio::test]
async fn limit_connection_ids_1000th_accepted_1001st_rejected() {
    let s = session();
    for i in 1..=1_000 {
        s.session
            .connect(format!("conn-{i}"))
            .unwrap_or_else(|e| panic!("connect {i}: {e}"));
    }
    assert_eq!(s.session.usage().connection_ids, 1_000);
    assert_eq!(
        s.session.connect("conn-1001").unwrap_err(),
        SessionError::CapacityExceeded {
            collection: SessionCollection::ConnectionIds,
            max: 1_000
        }
    );
    // The 1,000th connection is still the live one.
    assert_eq!(s.session.announcement().unwrap().connection_id, "conn-1000");
    assert_eq!(
        s.session.connect("conn-5").unwrap_err(),
        SessionError::ConnectionIdReused("conn-5".into())
    );
}

#[test]
fn limit_listeners_1000th_accepted_1001st_rejected() {
    let s = session();
    let mut subs: Vec<_> = (1..=1_000)
        .map(|i| {
            s.session
                .subscribe(|_| {})
                .unwrap_or_else(|e| panic!("listener {i}: {e}"))
        })
        .collect();
    assert_eq!(s.session.usage().listeners, 1_000);
    assert_eq!(
        s.session.subscribe(|_| {}).unwrap_err(),
        SessionError::CapacityExceeded {
            collection: SessionCollection::Listeners,
            max: 1_000
        }
    );
    drop(subs.pop());
    assert_eq!(s.session.usage().listeners, 999);
    let _again = s.session.subscribe(|_| {}).expect("room after unsubscribe");
}

// ----- announcements, expiry, disconnect, dispose, reload ----------------------

#[test]
fn registry_changes_publish_refreshed_announcements_only_while_connected() {
    let s = session();
    let seen: Arc<Mutex<Vec<BrowserSurfaceAnnouncement>>> = Arc::default();
    let _sub = s
        .session
        .subscribe({
            let seen = seen.clone();
            move |a| seen.lock().unwrap().push(a.clone())
        })
        .unwrap();
    assert_eq!(s.session.announcement(), None, "not connected yet");
    s.fx.registry.notify_changed();
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing published while disconnected"
    );

    s.session.connect("conn-1").unwrap();
    let v = s.fx.registry.notify_changed();
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].connection_id, "conn-1");
        assert_eq!(seen[0].snapshot.surface_version, v);
    }
    assert_eq!(
        s.session.announcement().unwrap().snapshot.surface_version,
        v
    );

    s.session.disconnect();
    assert_eq!(s.session.announcement(), None);
    s.fx.registry.notify_changed();
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn expiry_boundary_and_clearing_with_injected_clock() {
    let s = session_with(
        AgentConsumer::embedded("u1"),
        10,
        Duration::from_millis(1_000),
    );
    let calls = Arc::new(Mutex::new(0));
    let _sub = s
        .session
        .subscribe({
            let calls = calls.clone();
            move |_| *calls.lock().unwrap() += 1
        })
        .unwrap();
    s.session.connect("conn-1").unwrap();
    s.clock.advance(Duration::from_millis(999));
    assert!(s.session.announcement().is_some(), "alive at ttl - 1 ms");
    s.clock.advance(Duration::from_millis(1));
    // The registry event is the first observer after the deadline: it
    // clears state and publishes nothing.
    s.fx.registry.notify_changed();
    assert_eq!(*calls.lock().unwrap(), 0);
    assert_eq!(
        s.session.usage(),
        SessionUsage {
            calls: 0,
            pending_calls: 0,
            connection_ids: 0,
            listeners: 0
        }
    );
    assert_eq!(s.session.announcement(), None);
    assert_eq!(
        s.session.connect("conn-2").unwrap_err(),
        SessionError::Expired
    );
    assert_eq!(
        s.session.subscribe(|_| {}).unwrap_err(),
        SessionError::Expired
    );
}

#[tokio::test]
async fn expiry_aborts_a_call_in_flight() {
    let s = session_with(
        AgentConsumer::embedded("u1"),
        10,
        Duration::from_millis(1_000),
    );
    s.session.connect("conn-1").unwrap();
    let _gate = s.fx.executor.close_gate();
    let pending = tokio::spawn({
        let session = s.session.clone();
        let call = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));
        async move { session.invoke(call).await }
    });
    while s.fx.executor.count() == 0 {
        tokio::task::yield_now().await;
    }
    s.clock.advance(Duration::from_millis(1_000));
    assert_eq!(s.session.announcement(), None);
    assert_eq!(
        pending.await.unwrap().rejection(),
        Some(RejectionReason::SessionExpired)
    );
}

#[tokio::test]
async fn disconnect_during_a_call_aborts_it_and_answers_disconnected() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let _gate = s.fx.executor.close_gate();
    let call = s.call("conn-1", "inv-1", "domain:devices.disable", json!({}));
    let pending = tokio::spawn({
        let session = s.session.clone();
        let call = call.clone();
        async move { session.invoke(call).await }
    });
    while s.fx.executor.count() == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(s.session.usage().pending_calls, 1);
    s.session.disconnect();
    let r = pending.await.unwrap();
    assert_eq!(r.rejection(), Some(RejectionReason::Disconnected));
    assert_eq!(
        (r.connection_id.as_str(), r.invocation_id.as_str()),
        ("conn-1", "inv-1")
    );
    assert_eq!(s.session.usage().pending_calls, 0);
    // The executor saw the bound input; its future was dropped (it never
    // completed) — the action may have started: reconcile, do not replay.
    assert_eq!(
        s.fx.executor.calls.lock().unwrap()[0],
        (
            "devices.disable".to_string(),
            json!({"deviceIds": ["d1", "d2"]})
        )
    );
    // Reconnecting does not revive it: the same id on the new connection is
    // a changed envelope.
    s.session.connect("conn-2").unwrap();
    let mut again = call.clone();
    again.connection_id = "conn-2".into();
    assert_eq!(
        s.session.invoke(again).await.rejection(),
        Some(RejectionReason::InvocationConflict)
    );
    assert_eq!(s.fx.executor.count(), 1);
}

#[tokio::test]
async fn dispose_clears_state_and_refuses_everything() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let _sub = s.session.subscribe(|_| {}).unwrap();
    s.session
        .invoke(s.call("conn-1", "inv-1", "domain:devices.list", json!({})))
        .await;
    s.session.dispose();
    assert_eq!(
        s.session.usage(),
        SessionUsage {
            calls: 0,
            pending_calls: 0,
            connection_ids: 0,
            listeners: 0
        }
    );
    assert_eq!(s.session.announcement(), None);
    assert_eq!(
        s.session.connect("conn-2").unwrap_err(),
        SessionError::Disposed
    );
    assert_eq!(
        s.session.subscribe(|_| {}).unwrap_err(),
        SessionError::Disposed
    );
    let r = s
        .session
        .invoke(s.call("conn-1", "inv-1", "domain:devices.list", json!({})))
        .await;
    assert_eq!(r.rejection(), Some(RejectionReason::Disconnected));
    assert_eq!(s.source.invokes(), 1);
}

#[tokio::test]
async fn reload_with_new_identity_starts_clean_and_refuses_the_old_tab() {
    let s = session();
    s.session.connect("conn-1").unwrap();
    let old_call = s.call("conn-1", "inv-1", "domain:devices.list", json!({}));
    s.session.invoke(old_call.clone()).await;
    // Reload: the old document's adapter is disposed; a new one is created
    // with a fresh tab id on the (re-created) registry.
    s.session.dispose();
    let reloaded = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            s.source.clone(),
            BrowserSurfaceIdentity::new("console", "build-1", "sess-1", "tab-2"),
            AgentConsumer::embedded("u1"),
        )
        .clock(s.clock.clone()),
    );
    let announcement = reloaded.connect("conn-2").unwrap();
    assert_eq!(announcement.identity.tab_id, "tab-2");
    // A call addressed to the old tab never reaches the registry.
    let mut to_old_tab = old_call.clone();
    to_old_tab.connection_id = "conn-2".into();
    assert_eq!(
        reloaded.invoke(to_old_tab).await.rejection(),
        Some(RejectionReason::WrongSession)
    );
    // The new adapter has no memory of the old one (no cross-reload
    // guarantee): a fresh id runs normally.
    let mut fresh = old_call.clone();
    fresh.identity.tab_id = "tab-2".into();
    fresh.connection_id = "conn-2".into();
    fresh.invocation.invocation_id = "inv-2".into();
    let r = reloaded.invoke(fresh).await;
    assert!(matches!(
        r.result,
        BrowserSurfaceOutcome::Invocation(AgentInvocationResult::Ok { .. })
    ));
    assert_eq!(s.source.invokes(), 2);
}

#[test]
fn connect_refuses_empty_and_reused_ids() {
    let s = session();
    assert_eq!(
        s.session.connect("").unwrap_err(),
        SessionError::EmptyConnectionId
    );
    s.session.connect("c").unwrap();
    s.session.disconnect();
    assert_eq!(
        s.session.connect("c").unwrap_err(),
        SessionError::ConnectionIdReused("c".into())
    );
}

#[test]
fn invoke_future_is_send_on_native_targets() {
    fn assert_send<T: Send>(_: &T) {}
    let s = session();
    let fut = s
        .session
        .invoke(s.call("c", "i", "domain:devices.list", json!({})));
    assert_send(&fut);
}
