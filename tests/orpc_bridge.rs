//! Interop tests of the oRPC wire codec, `HttpOrpcClient` and the ordinary
//! bridge (`docs/bridges.md`, "Ordinary bridge") against the real
//! `@orpc/server` peer in `tests/orpc-peer` (its README describes it). Each
//! test starts its own peer.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use support::peer::{peer_dir, repo_root, Peer};
use surface_runtime::bridge::client::decode_response;
use surface_runtime::bridge::{
    create_orpc_agent_bridge, invocation_id_header, CallMethod, CallOptions, HttpOrpcClient,
    OrpcAgentBridgeOptions, OrpcCallError, OrpcClient, OrpcError,
};
use surface_runtime::{
    AgentConsumer, AgentManifest, Cancellation, ErrorCode, ExecuteRequest, ExecutionError,
    ManifestTool, ProcedureCallInfo, Retry,
};

fn devices_manifest() -> AgentManifest {
    let text = std::fs::read_to_string(repo_root().join("tests/fixtures/devices.manifest.json"))
        .expect("tests/fixtures/devices.manifest.json");
    AgentManifest::from_json_str(&text).expect("valid devices manifest")
}

/// The devices manifest plus entries the agent manifest deliberately lacks
/// (`debug.fail`, a path the server does not serve), so the executor's
/// error mapping can be driven through every server error kind.
fn test_manifest() -> AgentManifest {
    let mut tools: BTreeMap<String, ManifestTool> = devices_manifest().tools;
    for path in ["debug.fail", "devices.explode"] {
        tools.insert(
            path.into(),
            serde_json::from_value(json!({"description": path, "inputSchema": {"type": "object"}, "effect": "server-query"}))
                .unwrap(),
        );
    }
    AgentManifest::from_tools(tools).unwrap()
}

fn request(path: &str, invocation_id: &str, input: Value) -> ExecuteRequest {
    ExecuteRequest {
        path: path.into(),
        capability_id: format!("domain:{path}").into(),
        contract_digest: None,
        input,
        info: ProcedureCallInfo {
            invocation_id: invocation_id.into(),
            consumer: AgentConsumer::embedded("user-1"),
            cancellation: Cancellation::new(),
            confirmation: None,
        },
    }
}

fn orpc_error(result: Result<Value, OrpcCallError>) -> OrpcError {
    match result {
        Err(OrpcCallError::Orpc(e)) => e,
        other => panic!("expected an oRPC error, got {other:?}"),
    }
}

fn no_headers() -> CallOptions {
    CallOptions::default()
}

// ------------------------------------------------------------ wire / client

#[tokio::test]
async fn wire_post_and_get_reach_real_orpc_server() {
    let Some(peer) = Peer::start("wire_post_and_get_reach_real_orpc_server") else {
        return;
    };
    let client = peer.rpc_client();
    let expected = json!({"devices": [
        {"id": "dev-1", "name": "Lobby camera", "status": "active"},
        {"id": "dev-2", "name": "Door sensor", "status": "active"},
        {"id": "dev-locked", "name": "Core switch", "status": "active"}
    ]});
    let input = json!({"status": "active"});
    let post = client
        .call("devices.list", Some(input.clone()), no_headers())
        .await
        .unwrap();
    assert_eq!(post, expected);
    let get = client
        .call(
            "devices.list",
            Some(input),
            CallOptions {
                method: CallMethod::Get,
                ..no_headers()
            },
        )
        .await
        .unwrap();
    assert_eq!(get, expected);
    // GET on a procedure not declared GET: oRPC refuses with 405.
    let e = orpc_error(
        client
            .call(
                "devices.disable",
                Some(json!({"deviceIds": ["dev-1"]})),
                CallOptions {
                    method: CallMethod::Get,
                    ..no_headers()
                },
            )
            .await,
    );
    assert_eq!((e.code.as_str(), e.status), ("METHOD_NOT_SUPPORTED", 405));
    // Nothing was disabled by the refused GET.
    let all = client
        .call(
            "devices.list",
            Some(json!({"status": "disabled"})),
            no_headers(),
        )
        .await
        .unwrap();
    assert_eq!(
        all,
        json!({"devices": [{"id": "dev-3", "name": "Old router", "status": "disabled"}]})
    );
}

#[tokio::test]
async fn wire_absent_optional_fields_are_omitted_never_null() {
    let Some(peer) = Peer::start("wire_absent_optional_fields_are_omitted_never_null") else {
        return;
    };
    let client = peer.rpc_client();
    // `reason` (optional) absent: accepted.
    let out = client
        .call(
            "devices.disable",
            Some(json!({"deviceIds": ["dev-1"]})),
            no_headers(),
        )
        .await
        .unwrap();
    assert_eq!(out, json!({"disabled": ["dev-1"]}));
    // What sending `null` for it would do: a validation error. The codec
    // never invents that null.
    let e = orpc_error(
        client
            .call(
                "devices.disable",
                Some(json!({"deviceIds": ["dev-2"], "reason": null})),
                no_headers(),
            )
            .await,
    );
    assert_eq!((e.code.as_str(), e.status), ("BAD_REQUEST", 400));
    assert_eq!(
        e.data.as_ref().unwrap()["issues"][0]["path"],
        json!(["reason"])
    );
    // All-optional input `{}` and undefined input both work.
    let limited = client
        .call("devices.list", Some(json!({"limit": 1})), no_headers())
        .await
        .unwrap();
    assert_eq!(limited["devices"].as_array().unwrap().len(), 1);
    assert_eq!(
        client
            .call("devices.list", Some(json!({})), no_headers())
            .await
            .unwrap()["devices"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let stats = client
        .call("devices.stats", None, no_headers())
        .await
        .unwrap();
    assert_eq!(stats["bytes"], "9007199254740993");
}

#[tokio::test]
async fn wire_meta_codes_decode_from_real_server() {
    let Some(peer) = Peer::start("wire_meta_codes_decode_from_real_server") else {
        return;
    };
    // Raw body first: the peer really sends meta codes 1, 0, 6, 7.
    let raw = reqwest::Client::new()
        .post(format!("{}/devices/stats", peer.rpc_url()))
        .header("content-type", "application/json")
        .header("authorization", support::peer::USER_TOKEN)
        .body("{}")
        .send()
        .await
        .unwrap();
    let raw: Value = serde_json::from_slice(&raw.bytes().await.unwrap()).unwrap();
    let mut codes: Vec<u64> = raw["meta"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_u64().unwrap())
        .collect();
    codes.sort_unstable();
    assert_eq!(codes, [0, 1, 6, 7]);
    let out = peer
        .rpc_client()
        .call("devices.stats", Some(json!({})), no_headers())
        .await
        .unwrap();
    assert_eq!(
        out,
        json!({
            "lastSeen": "2026-01-02T03:04:05.678Z",
            "bytes": "9007199254740993",
            "tags": ["camera", "sensor"],
            "counters": [["dev-1", 3], ["dev-2", 0]]
        })
    );
}

#[tokio::test]
async fn wire_every_error_kind_of_the_real_server() {
    let Some(peer) = Peer::start("wire_every_error_kind_of_the_real_server") else {
        return;
    };
    let client = peer.rpc_client();
    let fail = |kind: &'static str| {
        let client = client.clone();
        async move {
            orpc_error(
                client
                    .call("debug.fail", Some(json!({ "kind": kind })), no_headers())
                    .await,
            )
        }
    };
    let e = fail("unauthorized").await;
    assert_eq!(
        (e.code.as_str(), e.status, e.defined),
        ("UNAUTHORIZED", 401, false)
    );
    let e = fail("forbidden").await;
    assert_eq!((e.code.as_str(), e.status), ("FORBIDDEN", 403));
    let e = fail("internal").await;
    assert_eq!(
        (e.code.as_str(), e.status, e.message.as_str()),
        ("INTERNAL_SERVER_ERROR", 500, "Internal server error")
    );
    assert!(!format!("{e:?}").contains("secret"));
    let e = fail("custom").await;
    assert_eq!(
        (e.code.as_str(), e.status, e.message.as_str()),
        ("RATE_LIMITED", 429, "Slow down")
    );
    let e = fail("custom-no-status").await;
    assert_eq!(
        (e.code.as_str(), e.status, e.message.as_str()),
        ("TEAPOT", 500, "TEAPOT")
    );
    let e = fail("output").await;
    assert_eq!(
        (e.code.as_str(), e.status, e.message.as_str()),
        ("INTERNAL_SERVER_ERROR", 500, "Output validation failed")
    );
    // Validation.
    let e = orpc_error(
        client
            .call(
                "devices.disable",
                Some(json!({"deviceIds": []})),
                no_headers(),
            )
            .await,
    );
    assert_eq!(
        (e.code.as_str(), e.status, e.message.as_str(), e.defined),
        ("BAD_REQUEST", 400, "Input validation failed", false)
    );
    let issue = &e.data.as_ref().unwrap()["issues"][0];
    assert_eq!(issue["path"], json!(["deviceIds"]));
    assert_eq!(issue["code"], "too_small");
    // A defined error with data.
    let e = orpc_error(
        client
            .call(
                "devices.disable",
                Some(json!({"deviceIds": ["nope"]})),
                no_headers(),
            )
            .await,
    );
    assert_eq!(
        e,
        OrpcError {
            defined: true,
            code: "NOT_FOUND".into(),
            status: 404,
            message: "Device not found".into(),
            data: Some(json!({"deviceId": "nope"})),
        }
    );
    // No credentials.
    let e = orpc_error(
        HttpOrpcClient::new(peer.rpc_url())
            .call("devices.list", Some(json!({})), no_headers())
            .await,
    );
    assert_eq!((e.code.as_str(), e.status), ("UNAUTHORIZED", 401));
    // Unmatched path: the host server's 404 text/plain.
    let err = client
        .call("devices.explode", Some(json!({})), no_headers())
        .await
        .unwrap_err();
    match err {
        OrpcCallError::UnexpectedResponse {
            status,
            content_type,
            body,
            ..
        } => {
            assert_eq!(status, 404);
            assert!(content_type.unwrap().starts_with("text/plain"));
            assert_eq!(body, "Not found");
        }
        other => panic!("{other:?}"),
    }
    // The dotted path as one URL segment does not match (why the codec
    // splits segments).
    let response = reqwest::Client::new()
        .post(format!("{}/devices.disable", peer.rpc_url()))
        .header("content-type", "application/json")
        .header("authorization", support::peer::USER_TOKEN)
        .body(r#"{"json":{"deviceIds":["dev-1"]}}"#)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap();
    assert!(matches!(
        decode_response(status, Some("text/plain"), &body),
        Err(OrpcCallError::UnexpectedResponse { status: 404, .. })
    ));
    // Malformed JSON (no client of ours sends it; the codec still reads the
    // real answer).
    let response = reqwest::Client::new()
        .post(format!("{}/devices/list", peer.rpc_url()))
        .header("content-type", "application/json")
        .header("authorization", support::peer::USER_TOKEN)
        .body("{\"json\":")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap();
    let e = orpc_error(decode_response(status, Some("application/json"), &body));
    assert_eq!((e.code.as_str(), e.status), ("BAD_REQUEST", 400));
    assert!(e.message.starts_with("Malformed request"), "{}", e.message);
}

#[tokio::test]
async fn wire_connection_refused_is_connect_error() {
    let refusing = support::net::RefusingPort::new();
    let addr = refusing.addr;
    let err = HttpOrpcClient::new(format!("http://{addr}/rpc"))
        .call("devices.list", Some(json!({})), no_headers())
        .await
        .unwrap_err();
    assert!(matches!(err, OrpcCallError::Connect { .. }), "{err:?}");
}

#[test]
fn peer_fixtures_have_no_drift() {
    if !support::peer::node_available("peer_fixtures_have_no_drift") {
        return;
    }
    support::peer::ensure_node_modules();
    let output = support::process::output_within(
        std::process::Command::new("node")
            .arg(peer_dir().join("scripts/generate.mjs"))
            .arg("--check")
            .current_dir(repo_root()),
        std::time::Duration::from_secs(60),
        "node tests/orpc-peer/scripts/generate.mjs --check",
    );
    assert!(
        output.status.success(),
        "fixtures drifted from the peer's zod contracts; run `npm run generate` in tests/orpc-peer and review:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---------------------------------------------------------- ordinary bridge

fn bridge_over(client: HttpOrpcClient) -> surface_runtime::bridge::OrpcAgentBridge {
    create_orpc_agent_bridge(
        OrpcAgentBridgeOptions::new(Arc::new(client), test_manifest())
            .call_context(invocation_id_header)
            .get("devices.list"),
    )
}

async fn exec(
    bridge: &surface_runtime::bridge::OrpcAgentBridge,
    path: &str,
    input: Value,
) -> Result<Value, ExecutionError> {
    bridge.executor.execute(request(path, "inv-1", input)).await
}

#[test]
fn s8_ordinary_refs_exist_only_for_manifest_paths() {
    let manifest = devices_manifest();
    let bridge = create_orpc_agent_bridge(OrpcAgentBridgeOptions::new(
        // Never called: only the refs are read.
        Arc::new(HttpOrpcClient::new("http://127.0.0.1:1/rpc")),
        manifest.clone(),
    ));
    assert_eq!(
        bridge.refs.paths().collect::<Vec<_>>(),
        manifest
            .tools
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    assert!(bridge.refs.get("devices.disable").is_some());
    assert!(
        bridge.refs.get("debug.fail").is_none(),
        "agent: false stays out"
    );
    assert!(bridge.refs.get("devices.explode").is_none());
}

#[tokio::test]
async fn s8_ordinary_invocation_id_header_reaches_server() {
    let Some(peer) = Peer::start("s8_ordinary_invocation_id_header_reaches_server") else {
        return;
    };
    let bridge = bridge_over(peer.rpc_client());
    let out = bridge
        .executor
        .execute(request("agent.echoInvocation", "inv-echo-42", json!({})))
        .await
        .unwrap();
    assert_eq!(out, json!({"invocationId": "inv-echo-42"}));
    // Without a call context the server sees no header.
    let plain = create_orpc_agent_bridge(OrpcAgentBridgeOptions::new(
        Arc::new(peer.rpc_client()),
        devices_manifest(),
    ));
    let err = plain
        .executor
        .execute(request("agent.echoInvocation", "inv-x", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ExecutionFailed);
    assert_eq!(err.details["reason"], "MISSING_INVOCATION_ID");
}

#[tokio::test]
async fn s8_ordinary_forwards_effective_input_post_and_get() {
    let Some(peer) = Peer::start("s8_ordinary_forwards_effective_input_post_and_get") else {
        return;
    };
    let bridge = bridge_over(peer.rpc_client());
    assert_eq!(
        exec(
            &bridge,
            "devices.disable",
            json!({"deviceIds": ["dev-1", "dev-3"], "reason": "agent"})
        )
        .await
        .unwrap(),
        json!({"disabled": ["dev-1"]})
    );
    // devices.list goes by GET (declared so in the options) and sees the change.
    assert_eq!(
        exec(&bridge, "devices.list", json!({"status": "disabled"}))
            .await
            .unwrap(),
        json!({"devices": [
            {"id": "dev-1", "name": "Lobby camera", "status": "disabled"},
            {"id": "dev-3", "name": "Old router", "status": "disabled"}
        ]})
    );
    assert_eq!(
        exec(
            &bridge,
            "devices.rename",
            json!({"deviceId": "dev-2", "name": "Back door"})
        )
        .await
        .unwrap(),
        json!({"id": "dev-2", "name": "Back door", "status": "active"})
    );
}

#[tokio::test]
async fn s8_ordinary_unauthorized_and_forbidden_map_to_not_authorized() {
    let Some(peer) = Peer::start("s8_ordinary_unauthorized_and_forbidden_map_to_not_authorized")
    else {
        return;
    };
    let bridge = bridge_over(peer.rpc_client());
    // FORBIDDEN from a domain rule.
    let err = exec(
        &bridge,
        "devices.disable",
        json!({"deviceIds": ["dev-locked"]}),
    )
    .await
    .unwrap_err();
    assert_eq!((err.code, err.retry), (ErrorCode::NotAuthorized, Retry::No));
    assert_eq!(err.internal.as_ref().unwrap()["code"], "FORBIDDEN");
    assert_eq!(err.internal.as_ref().unwrap()["status"], 403);
    // UNAUTHORIZED and FORBIDDEN thrown by the procedure.
    for (kind, code) in [("unauthorized", "UNAUTHORIZED"), ("forbidden", "FORBIDDEN")] {
        let err = exec(&bridge, "debug.fail", json!({ "kind": kind }))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::NotAuthorized, "{kind}");
        assert_eq!(err.internal.as_ref().unwrap()["code"], code);
    }
    // The user's transport without credentials.
    let anonymous = bridge_over(HttpOrpcClient::new(peer.rpc_url()));
    let err = exec(&anonymous, "devices.list", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotAuthorized);
    assert!(err.details.is_empty());
}

#[tokio::test]
async fn s8_ordinary_approval_required_maps_to_domain_approval_required() {
    let Some(peer) = Peer::start("s8_ordinary_approval_required_maps_to_domain_approval_required")
    else {
        return;
    };
    let bridge = bridge_over(peer.rpc_client());
    let err = exec(&bridge, "devices.purge", json!({"deviceIds": ["dev-3"]}))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry),
        (ErrorCode::DomainApprovalRequired, Retry::No)
    );
    let internal = err.internal.clone().unwrap();
    assert_eq!(internal["code"], "APPROVAL_REQUIRED");
    assert_eq!(internal["status"], 409);
    let approval_id = internal["data"]["approvalId"].as_str().unwrap();
    assert!(approval_id.starts_with("appr-"), "{approval_id}");
    assert_eq!(
        Value::Object(err.details.clone()),
        json!({ "approvalId": approval_id })
    );
    assert!(!err.details.contains_key("confirmationId"));
}

#[tokio::test]
async fn s8_ordinary_other_errors_are_sanitized_execution_failed() {
    let Some(peer) = Peer::start("s8_ordinary_other_errors_are_sanitized_execution_failed") else {
        return;
    };
    let bridge = bridge_over(peer.rpc_client());
    // (path, input, safe message, details.reason, internal code/kind)
    let cases = [
        (
            "debug.fail",
            json!({"kind": "internal"}),
            "The server failed to execute the call.",
            None,
            "INTERNAL_SERVER_ERROR",
        ),
        (
            "debug.fail",
            json!({"kind": "custom"}),
            "The server rejected the call.",
            None,
            "RATE_LIMITED",
        ),
        (
            "debug.fail",
            json!({"kind": "custom-no-status"}),
            "The server failed to execute the call.",
            None,
            "TEAPOT",
        ),
        (
            "debug.fail",
            json!({"kind": "output"}),
            "The server failed to execute the call.",
            None,
            "INTERNAL_SERVER_ERROR",
        ),
        (
            "devices.disable",
            json!({"deviceIds": ["nope"]}),
            "The server rejected the call.",
            Some("NOT_FOUND"),
            "NOT_FOUND",
        ),
        (
            "devices.disable",
            json!({"deviceIds": []}),
            "The server rejected the call.",
            None,
            "BAD_REQUEST",
        ),
        (
            "agent.echoInvocation",
            json!([]),
            "The server rejected the call.",
            None,
            "BAD_REQUEST",
        ),
    ];
    for (path, input, message, orpc_code, internal_code) in cases {
        let label = format!("{path} {input}");
        let err = exec(&bridge, path, input).await.unwrap_err();
        assert_eq!(
            (err.code.clone(), err.retry),
            (ErrorCode::ExecutionFailed, Retry::No),
            "{label}"
        );
        assert_eq!(err.message, message, "{label}");
        assert_eq!(
            err.details.get("reason").and_then(Value::as_str),
            orpc_code,
            "{label}"
        );
        assert_eq!(
            err.internal.as_ref().unwrap()["code"],
            internal_code,
            "{label}"
        );
        let agent = serde_json::to_string(&err.to_agent_error()).unwrap();
        assert!(
            !agent.contains("Internal server error") && !agent.contains("Slow down"),
            "{agent}"
        );
    }
    // A manifest path the server does not serve: the 404 text/plain.
    let err = exec(&bridge, "devices.explode", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            ErrorCode::ExecutionFailed,
            "The server did not answer as an oRPC server."
        )
    );
    let internal = err.internal.unwrap();
    assert_eq!(
        (
            internal["kind"].as_str(),
            internal["status"].as_u64(),
            internal["body"].as_str()
        ),
        (Some("unexpected-response"), Some(404), Some("Not found"))
    );
    // Connection refused (a fresh client, so no pooled connection to the
    // dead peer): nothing sent, retry after a delay.
    let url = peer.rpc_url();
    drop(peer);
    let bridge = bridge_over(
        HttpOrpcClient::new(url).with_header("authorization", support::peer::USER_TOKEN),
    );
    let err = exec(&bridge, "devices.list", json!({})).await.unwrap_err();
    assert_eq!(
        (err.code, err.retry),
        (ErrorCode::ExecutionFailed, Retry::AfterDelay)
    );
    assert_eq!(err.internal.unwrap()["kind"], "connect");
}

/// Starts `node server.mjs --port 0 <extra>` with stdin at EOF (as `cmd &`
/// from a shell, or `</dev/null`) and returns the child and its port.
fn spawn_peer_with_stdin_at_eof(extra: &[&str]) -> (std::process::Child, u16) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    support::peer::ensure_node_modules();
    let mut child = Command::new("node")
        .arg(peer_dir().join("server.mjs"))
        .args(["--port", "0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn `node tests/orpc-peer/server.mjs`");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("peer stdout"))
        .read_line(&mut line)
        .expect("read the peer's ready line");
    let ready: Value = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("the peer's first line {line:?} is not its ready line: {e}"));
    let port = ready["port"].as_u64().expect("`port` in the ready line") as u16;
    (child, port)
}

/// Waits at most `secs` for `child` to exit.
fn exit_within(mut child: std::process::Child, secs: u64) -> Option<std::process::ExitStatus> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .ok()
        .map(|r| r.expect("wait for the peer"))
}

#[test]
fn the_peer_started_from_a_shell_stays_up_when_its_stdin_is_at_eof() {
    use std::io::{Read, Write};
    if !support::peer::node_available("the_peer_started_from_a_shell_stays_up") {
        return;
    }
    let (mut child, port) = spawn_peer_with_stdin_at_eof(&[]);
    // A request after stdin reached EOF: answered, and the peer still runs.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))
        .expect("the peer accepts a connection after its stdin reached EOF");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let body = r#"{"json":{}}"#;
    write!(
        stream,
        "POST /rpc/devices/list HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        support::peer::USER_TOKEN,
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("the peer answered within 10 s");
    assert!(
        response.starts_with("HTTP/1.1 200"),
        "devices.list answered {response:?}"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the peer exited although it was started without --exit-on-stdin-close"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn the_peer_with_exit_on_stdin_close_exits_at_stdin_eof() {
    if !support::peer::node_available("the_peer_with_exit_on_stdin_close_exits_at_stdin_eof") {
        return;
    }
    let (child, _) = spawn_peer_with_stdin_at_eof(&["--exit-on-stdin-close"]);
    let status = exit_within(child, 10).expect(
        "the peer started with --exit-on-stdin-close did not exit within 10 s of stdin EOF",
    );
    assert!(status.success(), "the peer exited with {status}");
}
