//! The agent host's MCP server against MCP clients nobody here wrote: the
//! official TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/mcp-client/package.json`) and rmcp's own client, both talking to
//! the `devices_mcp` example over streamable HTTP (docs/agents.md, "The MCP
//! server").

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::bridge::{CallOptions, OrpcClient};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResult, ClientConfig, NumberOrString,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestParamsMeta,
    ServerNotification, SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RoleClient, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Map, Value};
use support::mcp::{ts_client, ts_client_v2, DevicesMcp};

// ----- what every client must see ---------------------------------------------------

const TOOL_NAMES: [&str; 5] = [
    "devices__disable",
    "devices__list",
    "devices__purge",
    "view__devices__table__filter",
    "view__devices__table__select",
];

fn expected_annotations(name: &str) -> Value {
    match name {
        "devices__list" => {
            json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false})
        }
        "devices__purge" => {
            json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false})
        }
        _ => json!({"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false}),
    }
}

const LOCKED_MESSAGE: &str = "Some fields are bound to the application's UI state and cannot be supplied by the agent. Omit them and retry.";

fn locked_field_error() -> Value {
    json!({"code": "INVALID_INPUT", "details": {"lockedFields": ["deviceIds"]},
           "message": LOCKED_MESSAGE, "retry": "with-changes"})
}

fn rejected_error() -> Value {
    json!({"code": "CONFIRMATION_INVALID", "details": {"reason": "denied"},
           "message": "The user declined this action. Do not retry; respect the decision.",
           "retry": "no"})
}

fn unknown_tool_error() -> Value {
    json!({"code": "CAPABILITY_NOT_FOUND",
           "message": "No tool with this name is available.", "retry": "after-refresh"})
}

fn statuses(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(id, s)| (id.to_string(), json!(s)))
            .collect(),
    )
}

fn initial_statuses() -> Value {
    statuses(&[
        ("dev-1", "active"),
        ("dev-2", "active"),
        ("dev-3", "disabled"),
        ("dev-locked", "active"),
    ])
}

const WAITING: &str = "Waiting for the user to confirm this call in the application.";
const CONFIRMED: &str = "The user confirmed; the call runs.";

// ----- the official TypeScript SDK client --------------------------------------------

fn assert_ts_tools(report: &Value) {
    let tools = report["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert_eq!(tool["annotations"], expected_annotations(name), "{name}");
        assert_eq!(
            tool["hasOutputSchema"],
            json!(name == "devices__list"),
            "{name}"
        );
    }
    let disable = &tools[0];
    assert_eq!(disable["title"], json!("devices.disable"));
    // The locked field is absent from the schema the client received.
    assert_eq!(
        disable["inputSchema"],
        json!({"type": "object", "properties": {"reason": {"type": "string"}}})
    );
    assert!(disable["description"]
        .as_str()
        .unwrap()
        .contains("The user confirms each call in the application before it runs."));
}

#[test]
fn ts_sdk_client_lists_tools_and_a_confirmed_call_completes_after_approval() {
    let server = DevicesMcp::start(&["--approve"]);
    let test = "ts_sdk_client_lists_tools_and_a_confirmed_call_completes_after_approval";
    let Some(report) = ts_client(test, "approve", &server) else {
        return;
    };
    assert_eq!(report["sdkVersion"], json!("1.32.2"));
    assert_eq!(report["protocolVersion"], json!("2025-11-25"));
    // The 2025-11-25 experimental tasks: held calls become tasks.
    assert_eq!(
        report["serverCapabilities"],
        json!({"tools": {"listChanged": true},
               "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}})
    );
    assert_eq!(report["serverVersion"]["name"], json!("agent-surface"));
    assert_ts_tools(&report);

    // The locked field, sent anyway: refused, structured (no output schema).
    assert_eq!(report["lockedField"]["isError"], json!(true));
    assert_eq!(
        report["lockedField"]["structuredContent"],
        locked_field_error()
    );
    assert_eq!(
        report["lockedField"]["text"][0],
        json!(format!("INVALID_INPUT: {LOCKED_MESSAGE} Change the arguments as the message says, then call the tool again."))
    );
    // An error of a tool with an output schema: no structuredContent, so
    // the client (which validates it even on errors) does not throw.
    let invalid = &report["invalidList"];
    assert_eq!(invalid["isError"], json!(true), "{invalid}");
    assert!(invalid.get("structuredContent").is_none(), "{invalid}");
    assert!(invalid.get("threw").is_none(), "{invalid}");
    let error_json: Value = serde_json::from_str(invalid["text"][1].as_str().unwrap()).unwrap();
    assert_eq!(error_json["code"], json!("INVALID_INPUT"));
    assert_eq!(error_json["details"]["issues"][0]["path"], json!("limit"));

    // A selection change between calls reaches the next call.
    assert_eq!(
        report["select"]["structuredContent"],
        json!({"selected": ["dev-2"]})
    );
    assert_eq!(report["listChangedAfterSelect"], json!(true));
    assert_eq!(
        report["disable"],
        json!({"isError": false, "text": ["{\"disabled\":[\"dev-2\"]}"],
               "structuredContent": {"disabled": ["dev-2"]}})
    );
    assert_eq!(
        report["progress"],
        json!([{"progress": 1, "message": WAITING}, {"progress": 2, "message": CONFIRMED}])
    );
    assert_eq!(
        report["afterDisable"],
        statuses(&[
            ("dev-1", "active"),
            ("dev-2", "disabled"),
            ("dev-3", "disabled"),
            ("dev-locked", "active"),
        ])
    );
    assert_eq!(report["unknownTool"]["isError"], json!(true));
    assert_eq!(
        report["unknownTool"]["structuredContent"],
        unknown_tool_error()
    );
    assert!(report["disableDescriptionAfter"]
        .as_str()
        .unwrap()
        .contains("Applies to the 1 device(s) selected in the table"));
    // The page's dialog showed the effective input.
    let log = server.stderr();
    assert!(
        log.contains(
            r#"[tab] confirmation dialog: domain:devices.disable with {"deviceIds":["dev-2"],"reason":"lost"}"#
        ),
        "{log}"
    );
}

#[test]
fn ts_sdk_v2_client_pinned_to_2026_07_28_lists_listens_and_completes_a_confirmed_call() {
    let server = DevicesMcp::start(&["--approve"]);
    let test = "ts_sdk_v2_client_pinned_to_2026_07_28_lists_listens_and_completes_a_confirmed_call";
    let Some(report) = ts_client_v2(test, "approve", &server) else {
        return;
    };
    assert_eq!(report["sdkVersion"], json!("2.4.0"));
    assert_eq!(report["protocolVersion"], json!("2026-07-28"));
    // The host is durable (SQLite): calls held for approval become tasks.
    assert_eq!(
        report["serverCapabilities"],
        json!({"tools": {"listChanged": true},
               "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(report["serverVersion"]["name"], json!("agent-surface"));
    assert_eq!(report["honoredFilter"], json!({"toolsListChanged": true}));
    assert_ts_tools(&report);
    assert_eq!(
        report["lockedField"]["structuredContent"],
        locked_field_error()
    );
    assert_eq!(
        report["select"]["structuredContent"],
        json!({"selected": ["dev-2"]})
    );
    assert_eq!(report["listChangedAfterSelect"], json!(true));
    assert_eq!(
        report["disable"],
        json!({"isError": false, "text": ["{\"disabled\":[\"dev-2\"]}"],
               "structuredContent": {"disabled": ["dev-2"]}})
    );
    assert_eq!(
        report["progress"],
        json!([{"progress": 1, "message": WAITING}, {"progress": 2, "message": CONFIRMED}])
    );
    assert_eq!(
        report["afterDisable"],
        statuses(&[
            ("dev-1", "active"),
            ("dev-2", "disabled"),
            ("dev-3", "disabled"),
            ("dev-locked", "active"),
        ])
    );
    assert_eq!(
        report["unknownTool"]["structuredContent"],
        unknown_tool_error()
    );
    assert_eq!(report["subscriptionClosed"], json!("local"));
    // Stateless: no session, each request names its revision, method and
    // tool in headers.
    assert_eq!(report["sessionIdSent"], json!(false));
    assert_eq!(
        report["toolCallHeaders"],
        json!([
            ["devices__disable", "2026-07-28"],
            ["view__devices__table__select", "2026-07-28"],
            ["devices__disable", "2026-07-28"],
            ["devices__list", "2026-07-28"],
            ["no_such_tool", "2026-07-28"]
        ])
    );
    assert_eq!(
        report["methods"],
        json!([
            null,
            "server/discover",
            "subscriptions/listen",
            "tools/call",
            "tools/list"
        ])
    );
}

#[test]
fn ts_sdk_client_sees_a_rejected_call_fail_and_nothing_disabled() {
    let server = DevicesMcp::start(&["--reject"]);
    let test = "ts_sdk_client_sees_a_rejected_call_fail_and_nothing_disabled";
    let Some(report) = ts_client(test, "reject", &server) else {
        return;
    };
    assert_ts_tools(&report);
    assert_eq!(report["disable"]["isError"], json!(true));
    assert_eq!(report["disable"]["structuredContent"], rejected_error());
    assert_eq!(
        report["disable"]["text"][0],
        json!("CONFIRMATION_INVALID: The user declined this action. Do not retry; respect the decision. Do not retry this call; tell the user what happened.")
    );
    assert_eq!(
        report["progress"],
        json!([{"progress": 1, "message": WAITING}])
    );
    assert_eq!(report["afterDisable"], initial_statuses());
}

#[test]
fn ts_sdk_client_without_the_bearer_token_is_refused_with_401() {
    let server = DevicesMcp::start(&["--approve"]);
    let test = "ts_sdk_client_without_the_bearer_token_is_refused_with_401";
    let Some(report) = ts_client(test, "unauthorized", &server) else {
        return;
    };
    for case in ["noToken", "wrongToken"] {
        assert_eq!(report[case]["code"], json!(401), "{case}: {report}");
        assert!(
            report[case]["message"]
                .as_str()
                .unwrap()
                .contains("send the bearer token this server issued"),
            "{case}: {report}"
        );
    }
}

#[test]
fn ts_sdk_second_concurrent_client_sees_the_same_run_and_its_changes() {
    let server = DevicesMcp::start(&["--approve"]);
    let test = "ts_sdk_second_concurrent_client_sees_the_same_run_and_its_changes";
    let Some(report) = ts_client(test, "concurrent", &server) else {
        return;
    };
    assert_eq!(report["sameTools"], json!(true));
    assert_eq!(report["toolCount"], json!(5));
    assert_eq!(report["listA"], initial_statuses());
    assert_eq!(report["listB"], statuses(&[("dev-3", "disabled")]));
    assert_eq!(
        report["select"]["structuredContent"],
        json!({"selected": ["dev-locked"]})
    );
    assert_eq!(report["secondSawListChanged"], json!(true));
    assert!(report["secondDisableDescription"]
        .as_str()
        .unwrap()
        .contains("Applies to the 1 device(s) selected in the table"));
}

// ----- rmcp's client ----------------------------------------------------------------

/// The progress notifications a client received: (progress, message).
type ProgressLog = Arc<Mutex<Vec<(f64, Option<String>)>>>;

/// Records what the server sends the client.
#[derive(Clone, Default)]
struct Recorder {
    list_changed: Arc<AtomicUsize>,
    changed: Arc<tokio::sync::Notify>,
    progress: ProgressLog,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, params.message));
    }
}

type Client = RunningService<RoleClient, Recorder>;

async fn rmcp_client(server: &DevicesMcp, recorder: Recorder) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone())
        .auth_header(server.token.clone());
    recorder
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "rmcp client connects: {e}; server stderr:\n{}",
                server.stderr()
            )
        })
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        other => panic!("arguments must be an object: {other}"),
    }
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args(arguments)))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"))
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

fn device_statuses(result: &CallToolResult) -> Value {
    Value::Object(
        structured(result)["devices"]
            .as_array()
            .expect("devices")
            .iter()
            .map(|d| (d["id"].as_str().unwrap().to_string(), d["status"].clone()))
            .collect(),
    )
}

/// Waits until `recorder` saw more than `seen` list_changed notifications.
async fn list_changed_after(recorder: &Recorder, seen: usize) -> bool {
    let wait = async {
        loop {
            let notified = recorder.changed.notified();
            if recorder.list_changed.load(Ordering::SeqCst) > seen {
                return;
            }
            notified.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_lists_tools_and_completes_a_confirmed_call_bound_at_execution() {
    let server = DevicesMcp::start(&["--approve"]);
    let recorder = Recorder::default();
    let client = rmcp_client(&server, recorder.clone()).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version.to_string(), "2025-11-25");
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOL_NAMES);
    for tool in &tools {
        assert_eq!(
            serde_json::to_value(&tool.annotations).unwrap(),
            expected_annotations(&tool.name),
            "{}",
            tool.name
        );
    }
    let disable = &tools[0];
    assert_eq!(
        Value::Object((*disable.input_schema).clone()),
        json!({"type": "object", "properties": {"reason": {"type": "string"}}})
    );

    // The locked field is refused.
    let locked = call(
        &client,
        "devices__disable",
        json!({"deviceIds": ["dev-locked"]}),
    )
    .await;
    assert_eq!(locked.is_error, Some(true));
    assert_eq!(structured(&locked), locked_field_error());

    // A selection change between calls reaches the next call.
    let seen = recorder.list_changed.load(Ordering::SeqCst);
    let select = call(
        &client,
        "view__devices__table__select",
        json!({"deviceIds": ["dev-1"]}),
    )
    .await;
    assert_eq!(structured(&select), json!({"selected": ["dev-1"]}));
    assert!(
        list_changed_after(&recorder, seen).await,
        "no list_changed after the selection changed"
    );

    let mut params = CallToolRequestParams::new("devices__disable")
        .with_arguments(args(json!({"reason": "stolen"})));
    params.set_progress_token(ProgressToken(NumberOrString::String("p-1".into())));
    let disabled = client.call_tool(params).await.expect("tools/call");
    assert_eq!(disabled.is_error, Some(false));
    assert_eq!(structured(&disabled), json!({"disabled": ["dev-1"]}));
    // rmcp's client runs notification handlers on their own tasks, so the
    // last progress report can be recorded just after the result arrives:
    // wait (at most 5 s) until two are recorded, then compare exactly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while recorder.progress.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        *recorder.progress.lock().unwrap(),
        vec![
            (1.0, Some(WAITING.to_string())),
            (2.0, Some(CONFIRMED.to_string()))
        ]
    );

    let listed = call(&client, "devices__list", json!({})).await;
    assert_eq!(
        device_statuses(&listed),
        statuses(&[
            ("dev-1", "disabled"),
            ("dev-2", "active"),
            ("dev-3", "disabled"),
            ("dev-locked", "active"),
        ])
    );

    // An unknown tool is refused with a result the model can act on.
    let unknown = call(&client, "devices__explode", json!({})).await;
    assert_eq!(unknown.is_error, Some(true));
    assert_eq!(structured(&unknown), unknown_tool_error());

    client.cancel().await.expect("close");
    assert!(
        server
            .stderr()
            .contains(r#"[tab] confirmation dialog: domain:devices.disable with {"deviceIds":["dev-1"],"reason":"stolen"}"#),
        "{}",
        server.stderr()
    );
}

/// rmcp's client on the current revision: `server/discover`, no session.
async fn rmcp_client_2026(server: &DevicesMcp, recorder: Recorder) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone())
        .auth_header(server.token.clone());
    recorder
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "rmcp client discovers: {e}; server stderr:\n{}",
                server.stderr()
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_on_2026_07_28_lists_listens_and_completes_a_confirmed_call() {
    let server = DevicesMcp::start(&["--approve"]);
    let recorder = Recorder::default();
    let client = rmcp_client_2026(&server, recorder.clone()).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );
    let mut changes = client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen");
    assert_eq!(
        changes.acknowledged(),
        &SubscriptionFilter::builder().tools_list_changed().build()
    );

    let listed = client.peer().list_tools(None).await.expect("tools/list");
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOL_NAMES);
    // Per authorization and changing with the page: never cached.
    assert_eq!(listed.ttl_ms, Some(0));
    assert_eq!(listed.cache_scope, Some(CacheScope::Private));

    let select = call(
        &client,
        "view__devices__table__select",
        json!({"deviceIds": ["dev-1"]}),
    )
    .await;
    assert_eq!(structured(&select), json!({"selected": ["dev-1"]}));
    let changed = tokio::time::timeout(Duration::from_secs(10), changes.next())
        .await
        .expect("a list_changed on the subscription within 10 s")
        .expect("the subscription stays open");
    assert!(
        matches!(
            changed,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{changed:?}"
    );

    let mut params = CallToolRequestParams::new("devices__disable")
        .with_arguments(args(json!({"reason": "stolen"})));
    params.set_progress_token(ProgressToken(NumberOrString::String("p-1".into())));
    let disabled = client.call_tool(params).await.expect("tools/call");
    assert_eq!(disabled.is_error, Some(false));
    assert_eq!(structured(&disabled), json!({"disabled": ["dev-1"]}));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while recorder.progress.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        *recorder.progress.lock().unwrap(),
        vec![
            (1.0, Some(WAITING.to_string())),
            (2.0, Some(CONFIRMED.to_string()))
        ]
    );
    drop(changes);
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_sees_a_rejected_call_fail_without_effect() {
    let server = DevicesMcp::start(&["--reject"]);
    let client = rmcp_client(&server, Recorder::default()).await;
    let rejected = call(&client, "devices__disable", json!({})).await;
    assert_eq!(rejected.is_error, Some(true));
    assert_eq!(structured(&rejected), rejected_error());
    // The purge (destructive) is rejected the same way.
    let purge = call(&client, "devices__purge", json!({})).await;
    assert_eq!(structured(&purge), rejected_error());
    let listed = call(&client, "devices__list", json!({})).await;
    assert_eq!(device_statuses(&listed), initial_statuses());
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_second_concurrent_client_works_and_is_told_of_changes() {
    let server = DevicesMcp::start(&["--approve"]);
    let (first_recorder, second_recorder) = (Recorder::default(), Recorder::default());
    let (first, second) = tokio::join!(
        rmcp_client(&server, first_recorder),
        rmcp_client(&server, second_recorder.clone())
    );
    let (a, b) = tokio::join!(
        call(&first, "devices__list", json!({})),
        call(&second, "devices__list", json!({"status": "disabled"}))
    );
    assert_eq!(device_statuses(&a), initial_statuses());
    assert_eq!(device_statuses(&b), statuses(&[("dev-3", "disabled")]));
    // devices.list's input schema has no `additionalProperties: false`: a
    // property it does not name is allowed, and the backend ignores it as
    // zod's z.object() does (issue 20, defect 9).
    let extra = call(
        &first,
        "devices__list",
        json!({"status": "disabled", "sortBy": "name"}),
    )
    .await;
    assert_eq!(extra.is_error, Some(false), "{extra:?}");
    assert_eq!(device_statuses(&extra), statuses(&[("dev-3", "disabled")]));
    let seen = second_recorder.list_changed.load(Ordering::SeqCst);
    call(
        &first,
        "view__devices__table__select",
        json!({"deviceIds": ["dev-2"]}),
    )
    .await;
    assert!(list_changed_after(&second_recorder, seen).await);
    // Two confirmed calls at once, one per client: each answered.
    let (x, y) = tokio::join!(
        call(&first, "devices__disable", json!({"reason": "a"})),
        call(&second, "devices__disable", json!({"reason": "b"}))
    );
    let mut outputs = vec![structured(&x), structured(&y)];
    outputs.sort_by_key(|v| v.to_string());
    // Both ran with the selection (dev-2); the second found it disabled.
    assert_eq!(
        outputs,
        vec![json!({"disabled": ["dev-2"]}), json!({"disabled": []})]
    );
    first.cancel().await.expect("close");
    second.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_the_bearer_token_are_refused_with_401() {
    let server = DevicesMcp::start(&["--approve"]);
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}});
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic Zm9vOmJhcg=="),
        Some("Bearer "),
    ] {
        let mut request = http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string());
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let response = request.send().await.expect("POST");
        assert_eq!(response.status().as_u16(), 401, "{auth:?}");
        assert_eq!(
            response.headers()["www-authenticate"].to_str().unwrap(),
            "Bearer realm=\"mcp\""
        );
    }
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = http
            .request(method.clone(), &server.url)
            .header("mcp-session-id", "anything")
            .send()
            .await
            .expect("request");
        assert_eq!(response.status().as_u16(), 401, "{method}");
    }
    // With the token the same request succeeds.
    let response = http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {}", server.token))
        .body(init.to_string())
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers().contains_key("mcp-session-id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_without_the_bearer_token_is_refused() {
    let server = DevicesMcp::start(&["--approve"]);
    for token in [None, Some("not-the-token")] {
        let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.clone());
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let error = match ().serve(StreamableHttpClientTransport::from_config(config)).await {
            Ok(client) => {
                let _ = client.cancel().await;
                panic!("{token:?}: the client connected without the server's token");
            }
            Err(error) => error.to_string(),
        };
        // rmcp's transport saw the 401 and reports it as such.
        assert!(
            error.ends_with("error: Auth required, when send initialize request"),
            "{token:?}: {error}"
        );
    }
}

/// `devices_mcp --orpc-url` calls the real oRPC peer: the devices the
/// client lists and disables are the peer's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_mcp_with_orpc_url_runs_confirmed_calls_on_the_real_orpc_peer() {
    let test = "devices_mcp_with_orpc_url_runs_confirmed_calls_on_the_real_orpc_peer";
    let Some(peer) = support::peer::Peer::start(test) else {
        return;
    };
    let url = peer.rpc_url();
    let server = DevicesMcp::start(&["--approve", "--orpc-url", &url]);
    let client = rmcp_client(&server, Recorder::default()).await;
    let listed = call(&client, "devices__list", json!({})).await;
    assert_eq!(listed.is_error, Some(false), "{listed:?}");
    assert_eq!(device_statuses(&listed), initial_statuses());
    // A property the published schema allows but does not name: the
    // peer's zod object strips it, the call succeeds.
    let extra = call(
        &client,
        "devices__list",
        json!({"status": "disabled", "sortBy": "name"}),
    )
    .await;
    assert_eq!(extra.is_error, Some(false), "{extra:?}");
    assert_eq!(device_statuses(&extra), statuses(&[("dev-3", "disabled")]));
    // The selection at start (dev-1, dev-2) is bound at execution.
    let disabled = call(&client, "devices__disable", json!({"reason": "lost"})).await;
    assert_eq!(
        structured(&disabled),
        json!({"disabled": ["dev-1", "dev-2"]})
    );
    // The peer itself says so, asked directly.
    let on_peer = peer
        .rpc_client()
        .call("devices.list", Some(json!({})), CallOptions::default())
        .await
        .expect("devices.list on the peer");
    let peer_statuses: Map<String, Value> = on_peer["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| (d["id"].as_str().unwrap().to_string(), d["status"].clone()))
        .collect();
    assert_eq!(
        Value::Object(peer_statuses),
        statuses(&[
            ("dev-1", "disabled"),
            ("dev-2", "disabled"),
            ("dev-3", "disabled"),
            ("dev-locked", "active"),
        ])
    );
    // The locked field is refused before the peer sees it.
    let locked = call(
        &client,
        "devices__disable",
        json!({"deviceIds": ["dev-locked"]}),
    )
    .await;
    assert_eq!(structured(&locked), locked_field_error());
    client.cancel().await.expect("close");
    assert!(
        server
            .stderr()
            .contains(&format!("[host] backend: real oRPC server at {url}")),
        "{}",
        server.stderr()
    );
}

fn run_devices_mcp(args: &[&str]) -> std::process::Output {
    support::process::output_within(
        std::process::Command::new(support::mcp::example_binary()).args(args),
        std::time::Duration::from_secs(30),
        "the devices_mcp example",
    )
}

#[test]
fn devices_mcp_needs_exactly_one_decision_and_known_arguments() {
    for (args, message) in [
        (
            &["--port", "0"][..],
            "error: give one of --approve and --reject",
        ),
        (
            &["--approve", "--reject"][..],
            "error: give exactly one of --approve and --reject",
        ),
        (
            &["--approve", "--port", "http"][..],
            "error: --port `http` is not a port number",
        ),
        (
            &["--approve", "--orpc"][..],
            "error: unknown argument `--orpc`",
        ),
    ] {
        let output = run_devices_mcp(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(
            stderr.starts_with(&format!(
                "{message}\nusage: devices_mcp [--port PORT] (--approve | --reject)"
            )),
            "{args:?}: {stderr}"
        );
    }
}
