//! The MCP server of the agent host, in process (feature `mcp`;
//! docs/agents.md, "The MCP server"): tool composition with server tools,
//! the host-side timeout, a tab closing while a call waits, progress while
//! the user decides, the bearer check and the session bound, the page
//! connection's input limits. The interop tests with real MCP clients are
//! in the workspace's `tests/mcp_interop.rs`.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use host_support::*;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use surface_host::host::replica::{Received, ReplicaError, ReplicaTab, TabCalls};
use surface_host::host::{Database, DurableError, Host};
use surface_host::mcp::{McpProgress, McpServer, McpServerOptions};
use surface_runtime::export::McpCallToolResult;
use surface_runtime::host::{
    from_json_lossy, AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, BrowserToHostMessage, ConfirmationEvent, ConfirmationMode,
    HostError, KnownBuild, ServerTool, SessionEventSubscription,
};
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentConsumer, AgentProcedureBinding, ComponentDefinition, ConsumerKind, RegistrationHandle,
    SurfaceRegistry, ViewCapability,
};

const RUN: &str = "run-1";

fn auth() -> AuthenticatedConnection {
    AuthenticatedConnection::new("conn-1", "sess-1", "user-1")
}

/// A tab (the host_support fixture's registry, in a session) wired to an
/// MCP server, answering every call.
struct Tab {
    fx: Fixture,
    session: BrowserSurfaceSession,
    connection: Arc<ReplicaTab>,
    _subscriptions: Vec<SessionEventSubscription>,
    _announcements: surface_runtime::host::AnnouncementSubscription,
}

fn host_with(server_tools: &[&str]) -> AgentHost {
    let authority = authority();
    let mut host =
        AgentHost::new().with_known_build(KnownBuild::new("console", "build-1", authority.clone()));
    for path in server_tools {
        host = host.with_server_tool(ServerTool::from_authority(&authority, path).unwrap());
    }
    host
}

/// A host on the memory store over `core`, with the MCP `options` and the
/// run `RUN` of tab `tab-1` started.
async fn server_on(core: AgentHost, options: McpServerOptions) -> (Host, McpServer) {
    let host = Host::builder(Database::Memory)
        .agent_host(core)
        .mcp(options)
        .build()
        .await
        .unwrap();
    host.start_run(AgentRun {
        run_id: RUN.into(),
        session_id: "sess-1".into(),
        tab_id: Some("tab-1".into()),
        kind: ConsumerKind::Embedded,
    })
    .await
    .unwrap();
    let mcp = host.mcp().clone();
    (host, mcp)
}

async fn server(server_tools: &[&str], options: McpServerOptions) -> (Host, McpServer) {
    server_on(host_with(server_tools), options).await
}

/// Hands the page's messages to the tab one after the other, in the
/// order the page sent them (as a socket would); holds the tab weakly.
type Outbox = tokio::sync::mpsc::UnboundedSender<BrowserToHostMessage>;

fn outbox(connection: &Arc<ReplicaTab>) -> Outbox {
    let connection = Arc::downgrade(connection);
    let (sender, mut messages) = tokio::sync::mpsc::unbounded_channel::<BrowserToHostMessage>();
    tokio::spawn(async move {
        while let Some(message) = messages.recv().await {
            let Some(connection) = connection.upgrade() else {
                return;
            };
            connection.receive(message).await.unwrap();
        }
    });
    sender
}

/// Opens the tab's connection; `answer` spawns the loop that runs every
/// call through the session (else the calls are returned unanswered).
async fn tab(host: &Host, mode: ConfirmationMode, answer: bool) -> (Tab, Option<TabCalls>) {
    let fx = Fixture::new();
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            fx.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        )
        .confirmations(mode),
    );
    let (connection, mut calls) = host.open_connection(auth()).unwrap();
    let connection = Arc::new(connection);
    let announcement = session.connect("conn-1").unwrap();
    connection
        .receive(BrowserToHostMessage::Announcement(Box::new(announcement)))
        .await
        .unwrap();
    let out = outbox(&connection);
    let sender = out.clone();
    let announcements = session
        .subscribe(move |a| {
            let _ = sender.send(BrowserToHostMessage::Announcement(Box::new(a.clone())));
        })
        .unwrap();
    let sender = out.clone();
    let progress = session
        .on_progress(move |p| {
            let _ = sender.send(BrowserToHostMessage::Progress(p.clone()));
        })
        .unwrap();
    let calls = if answer {
        let s = session.clone();
        tokio::spawn(async move {
            while let Some(call) = calls.next().await {
                let (out, s) = (out.clone(), s.clone());
                tokio::spawn(async move {
                    let result = s.invoke(call).await;
                    let _ = out.send(BrowserToHostMessage::Result(Box::new(result)));
                });
            }
        });
        None
    } else {
        Some(calls)
    };
    (
        Tab {
            fx,
            session,
            connection,
            _subscriptions: vec![progress],
            _announcements: announcements,
        },
        calls,
    )
}

fn names(tools: &[surface_runtime::export::McpTool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

fn structured(result: &McpCallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .map_or(Value::Null, Value::Object)
}

/// The error object of an error result (its second text block).
fn error_of(result: &McpCallToolResult) -> Value {
    assert!(result.is_error, "{result:?}");
    let surface_runtime::export::McpContent::Text { text } = &result.content[1];
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn server_tools_are_listed_once_and_run_in_the_server_registry() {
    let authority = authority();
    let server_registry = SurfaceRegistry::new(authority.clone());
    let server_executor = Arc::new(CountingExecutor::default());
    server_registry.set_procedure_executor(server_executor.clone());
    let _handles = [
        server_registry
            .register_procedure(AgentProcedureBinding::new(procedure(
                &authority,
                "devices.list",
            )))
            .unwrap(),
        server_registry
            .register_procedure(AgentProcedureBinding::new(procedure(
                &authority,
                "devices.stats",
            )))
            .unwrap(),
    ];
    let (host, mcp) = server(
        &["devices.list", "devices.stats", "devices.rename"],
        McpServerOptions::default()
            .server_registry(server_registry, AgentConsumer::headless("server")),
    )
    .await;
    let (tab, _) = tab(&host, ConfirmationMode::Hold, true).await;
    // devices.list is a plain query both sides offer: the server keeps it;
    // devices.rename is not registered by the server registry: not listed.
    assert_eq!(
        names(&mcp.tools(RUN).await.unwrap()),
        [
            "devices__disable",
            "devices__list",
            "devices__purge",
            "devices__stats",
            "view__devices__table__select"
        ]
    );
    let listed = mcp
        .call_tool(RUN, "tc-1", "devices__list", Some(json!({"limit": 2})))
        .await;
    assert!(!listed.is_error, "{listed:?}");
    assert_eq!(
        structured(&listed),
        json!({"path": "devices.list", "input": {"limit": 2}})
    );
    assert_eq!(server_executor.count(), 1);
    assert_eq!(tab.fx.executor.count(), 0, "not sent to the tab");
    let stats = mcp.call_tool(RUN, "tc-2", "devices__stats", None).await;
    assert!(!stats.is_error, "{stats:?}");
    assert_eq!(server_executor.count(), 2);
    // A browser tool goes to the tab.
    let select = mcp
        .call_tool(
            RUN,
            "tc-3",
            "view__devices__table__select",
            Some(json!({"ids": ["a"]})),
        )
        .await;
    assert_eq!(structured(&select), json!({"selected": ["a"]}));
}

#[tokio::test]
async fn a_server_tool_without_server_registry_is_not_listed() {
    let (host, mcp) = server(&["devices.stats"], McpServerOptions::default()).await;
    let (_tab, _) = tab(&host, ConfirmationMode::Hold, true).await;
    assert!(!names(&mcp.tools(RUN).await.unwrap()).contains(&"devices__stats"));
    let result = mcp.call_tool(RUN, "tc", "devices__stats", None).await;
    assert_eq!(error_of(&result)["code"], json!("CAPABILITY_NOT_FOUND"));
}

#[tokio::test]
async fn the_host_side_timeout_answers_timeout_and_the_late_result_is_dropped() {
    let (host, mcp) = server(
        &[],
        McpServerOptions::default().call_timeout(Duration::from_millis(50)),
    )
    .await;
    let (tab, calls) = tab(&host, ConfirmationMode::Hold, false).await;
    let mut calls = calls.unwrap();
    let result = mcp.call_tool(RUN, "tc-1", "devices__list", None).await;
    let error = error_of(&result);
    assert_eq!(
        error,
        json!({"code": "TIMEOUT", "details": {"timeoutMs": 50}, "retry": "no",
               "message": "The application did not answer in time; the call may or may not have taken effect."})
    );
    // The page answers late: accepted by the host, answered to nobody.
    let call = calls.next().await.unwrap();
    let late = tab.session.invoke(call).await;
    assert_eq!(
        tab.connection
            .receive(BrowserToHostMessage::Result(Box::new(late.clone())))
            .await
            .unwrap(),
        Received::Result
    );
    assert_eq!(
        tab.connection
            .receive(BrowserToHostMessage::Result(Box::new(late)))
            .await
            .unwrap(),
        Received::DuplicateResult
    );
    assert_eq!(mcp.host().usage().outstanding, 0);
}

#[tokio::test]
async fn a_typescript_result_with_a_lone_surrogate_answers_the_tool_call_with_u_fffd() {
    // A TypeScript page's `JSON.stringify` writes a string cut in the
    // middle of an emoji as a lone surrogate escape; the tab reads it as
    // U+FFFD rather than leaving the `tools/call` waiting for its timeout.
    let (host, mcp) = server(&[], McpServerOptions::default()).await;
    let (tab, calls) = tab(&host, ConfirmationMode::Hold, false).await;
    let mut calls = calls.unwrap();
    let server = mcp.clone();
    let waiting =
        tokio::spawn(async move { server.call_tool(RUN, "tc-1", "devices__list", None).await });
    let call = calls.next().await.expect("dispatched");
    let mut result = serde_json::to_value(tab.session.invoke(call).await).unwrap();
    result["result"]["output"] = json!({"note": "LONE"});
    let text = result.to_string().replace("\"LONE\"", r#""ok\ud83d""#);
    assert_eq!(
        tab.connection
            .receive(from_json_lossy(&text).unwrap())
            .await
            .unwrap(),
        Received::Result
    );
    let answer = waiting.await.unwrap();
    assert!(!answer.is_error, "{answer:?}");
    assert_eq!(structured(&answer), json!({"note": "ok\u{FFFD}"}));
    // Sent again, it is read the same way: a duplicate.
    assert_eq!(
        tab.connection
            .receive(from_json_lossy(&text).unwrap())
            .await
            .unwrap(),
        Received::DuplicateResult
    );
    // An announcement too (its contextual note is the page's own text).
    let mut announcement = serde_json::to_value(tab.session.announcement().unwrap()).unwrap();
    announcement["snapshot"]["procedures"][0]["contextualNote"] = json!("LONE");
    let text = announcement
        .to_string()
        .replace("\"LONE\"", r#""Bound to \udc00""#);
    assert!(matches!(
        tab.connection
            .receive(from_json_lossy(&text).unwrap())
            .await,
        Ok(Received::Announcement { .. })
    ));
    let tools = mcp.tools(RUN).await.unwrap();
    assert!(
        tools.iter().any(|t| t
            .description
            .as_deref()
            .is_some_and(|d| d.ends_with("Bound to \u{FFFD}"))),
        "{tools:?}"
    );
}

#[tokio::test]
async fn closing_the_tab_while_a_call_waits_answers_disconnected_and_removes_its_tools() {
    let (host, mcp) = server(&[], McpServerOptions::default()).await;
    let (tab, calls) = tab(&host, ConfirmationMode::Hold, false).await;
    let mut calls = calls.unwrap();
    let server = mcp.clone();
    let waiting =
        tokio::spawn(async move { server.call_tool(RUN, "tc-1", "devices__list", None).await });
    let call = calls.next().await.expect("dispatched");
    assert_eq!(call.invocation.capability_id, "domain:devices.list");
    assert!(call.invocation.invocation_id.starts_with("mcp-"));
    let Tab {
        connection,
        _subscriptions,
        _announcements,
        ..
    } = tab;
    drop((_subscriptions, _announcements));
    let connection = Arc::try_unwrap(connection).unwrap_or_else(|_| panic!("one owner"));
    connection.close().await;
    let result = waiting.await.unwrap();
    assert_eq!(
        error_of(&result),
        json!({"code": "EXECUTION_FAILED", "details": {"reason": "disconnected"}, "retry": "no",
               "message": "The application's page disconnected before answering; the call may or may not have taken effect."})
    );
    assert_eq!(mcp.tools(RUN).await.unwrap(), vec![]);
    assert!(calls.next().await.is_none(), "the call stream ended");
    let after = mcp.call_tool(RUN, "tc-2", "devices__list", None).await;
    assert_eq!(error_of(&after)["code"], json!("CAPABILITY_NOT_FOUND"));
}

#[tokio::test]
async fn progress_repeats_while_the_user_decides_then_reports_the_approval() {
    let (host, mcp) = server(
        &[],
        McpServerOptions::default().progress_interval(Duration::from_millis(20)),
    )
    .await;
    let (tab, _) = tab(&host, ConfirmationMode::Hold, true).await;
    let reports: Arc<Mutex<Vec<McpProgress>>> = Arc::default();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let _dialog = tab
        .session
        .on_confirmation(move |e| {
            if let ConfirmationEvent::Requested(c) = e {
                let _ = tx.send(c.confirmation_id.clone());
            }
        })
        .unwrap();
    let server = mcp.clone();
    let sink_reports = reports.clone();
    let waiting = tokio::spawn(async move {
        let sink = move |p: McpProgress| -> BoxFuture<'static, ()> {
            sink_reports.lock().unwrap().push(p);
            Box::pin(async {})
        };
        server
            .call_tool_with_progress(
                RUN,
                "tc-1",
                "devices__purge",
                Some(json!({"deviceIds": ["d1"]})),
                Some(&sink),
            )
            .await
    });
    let confirmation_id = rx.recv().await.unwrap();
    // The three progress reports come from the server's own tasks: wait
    // (at most 5 s) until they are recorded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while reports.lock().unwrap().len() < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} of 3 progress reports within 5 s: {:?}",
            reports.lock().unwrap().len(),
            reports.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tab.session.approve(&confirmation_id).unwrap();
    let result = waiting.await.unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        structured(&result),
        json!({"path": "devices.purge", "input": {"deviceIds": ["d1"]}})
    );
    let reports = reports.lock().unwrap().clone();
    let n = reports.len();
    assert!(n >= 4, "{reports:?}");
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(r.progress, i as u64 + 1, "increasing: {reports:?}");
    }
    for r in &reports[..n - 1] {
        assert_eq!(
            r.message,
            "Waiting for the user to confirm this call in the application."
        );
    }
    assert_eq!(reports[n - 1].message, "The user confirmed; the call runs.");
    assert_eq!(tab.fx.executor.count(), 1);
}

#[tokio::test]
async fn an_unknown_run_has_no_tools_and_its_calls_are_unknown() {
    let (host, mcp) = server(&[], McpServerOptions::default()).await;
    let (_tab, _) = tab(&host, ConfirmationMode::Hold, true).await;
    assert_eq!(mcp.tools("other-run").await.unwrap(), vec![]);
    let result = mcp
        .call_tool("other-run", "tc", "devices__list", None)
        .await;
    assert_eq!(error_of(&result)["code"], json!("CAPABILITY_NOT_FOUND"));
}

/// A page with a `devices.table` component offering an observation
/// (`readState`) and an action (`select`), and `devices.list` with a
/// contextual note; connected to `mcp` and answering every call.
async fn observing_page(
    host: &Host,
) -> (
    SurfaceRegistry,
    BrowserSurfaceSession,
    Vec<RegistrationHandle>,
) {
    let authority = authority();
    let registry = SurfaceRegistry::new(authority.clone());
    registry.set_procedure_executor(Arc::new(CountingExecutor::default()));
    let table = registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .capability(ViewCapability::observation(
                    "readState",
                    "The rows the user selected",
                    json!({"type": "object", "properties": {"selected": {"type": "array", "items": {"type": "string"}}}}),
                    || async { Ok(json!({"selected": ["d1"]})) },
                ))
                .capability(ViewCapability::with_schema(
                    "select",
                    "Select rows",
                    json!({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}}, "required": ["ids"]}),
                    |input: Value| async move { Ok(json!({"selected": input["ids"]})) },
                )),
        )
        .unwrap();
    let list = registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&authority, "devices.list"))
                .describe(|| "The table shows 2 rows.".to_string()),
        )
        .unwrap();
    let session = BrowserSurfaceSession::new(BrowserSurfaceSessionOptions::new(
        registry.clone(),
        identity(),
        AgentConsumer::embedded("u1"),
    ));
    let (connection, mut calls) = host.open_connection(auth()).unwrap();
    connection
        .receive(BrowserToHostMessage::Announcement(Box::new(
            session.connect("conn-1").unwrap(),
        )))
        .await
        .unwrap();
    let s = session.clone();
    tokio::spawn(async move {
        while let Some(call) = calls.next().await {
            let result = s.invoke(call).await;
            let _ = connection
                .receive(BrowserToHostMessage::Result(Box::new(result)))
                .await;
        }
    });
    (registry, session, vec![table, list])
}

#[tokio::test]
async fn observations_are_read_only_tools_and_descriptions_carry_the_contextual_note() {
    let (host, mcp) = server(&[], McpServerOptions::default()).await;
    let (_registry, _session, _handles) = observing_page(&host).await;
    let tools = mcp.tools(RUN).await.unwrap();
    assert_eq!(
        names(&tools),
        [
            "devices__list",
            "view__devices__table__readState",
            "view__devices__table__select"
        ]
    );
    // The manifest's description, then the page's contextual note.
    assert_eq!(
        tools[0].description.as_deref(),
        Some("List devices, optionally filtered by status\n\nThe table shows 2 rows.")
    );
    let observation = serde_json::to_value(&tools[1]).unwrap();
    assert_eq!(
        observation,
        json!({
            "name": "view__devices__table__readState",
            "title": "view.devices.table.readState",
            "description": "The rows the user selected",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "outputSchema": {"type": "object", "properties": {"selected": {"type": "array", "items": {"type": "string"}}}},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false},
        })
    );
    assert_eq!(
        serde_json::to_value(&tools[2].annotations).unwrap(),
        json!({"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false})
    );
    // Called with no arguments, an observation answers its state.
    let read = mcp
        .call_tool(RUN, "tc-1", "view__devices__table__readState", None)
        .await;
    assert!(!read.is_error, "{read:?}");
    assert_eq!(structured(&read), json!({"selected": ["d1"]}));
    // Arguments are ignored, as the original ignores an observation's
    // input: the same state. (An error of a tool with an output schema
    // carries no structured content: `surface-runtime/tests/export.rs`.)
    let ignored = mcp
        .call_tool(
            RUN,
            "tc-2",
            "view__devices__table__readState",
            Some(json!({"ids": ["d2"]})),
        )
        .await;
    assert!(!ignored.is_error, "{ignored:?}");
    assert_eq!(structured(&ignored), json!({"selected": ["d1"]}));
    // An action without an output schema: the error's structured content is
    // the result's AgentError, the same object as the second text block.
    let bad = mcp
        .call_tool(RUN, "tc-3", "view__devices__table__select", Some(json!({})))
        .await;
    let error = error_of(&bad);
    assert_eq!(
        (&error["code"], &error["retry"]),
        (&json!("INVALID_INPUT"), &json!("with-changes")),
        "{error}"
    );
    assert_eq!(bad.structured_content.map(Value::Object), Some(error));
}

#[tokio::test]
async fn a_procedure_whose_manifest_renames_its_capability_is_called_by_its_procedure_id() {
    // docs/example.manifest.json: devices.rename's capabilityId is
    // `devices.rename@v1`; the host keys its tools by it, the page's
    // registry by the procedure id.
    let authority = surface_runtime::Authority::from_manifest(
        surface_runtime::AgentManifest::from_json_str(include_str!(
            "../../docs/example.manifest.json"
        ))
        .unwrap(),
    );
    let core =
        AgentHost::new().with_known_build(KnownBuild::new("console", "build-1", authority.clone()));
    let (host, mcp) = server_on(core, McpServerOptions::default()).await;
    let registry = SurfaceRegistry::new(authority.clone());
    let executor = Arc::new(CountingExecutor::default());
    registry.set_procedure_executor(executor.clone());
    let _rename = registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            &authority,
            "devices.rename",
        )))
        .unwrap();
    let session = BrowserSurfaceSession::new(BrowserSurfaceSessionOptions::new(
        registry,
        identity(),
        AgentConsumer::embedded("u1"),
    ));
    let (connection, mut calls) = host.open_connection(auth()).unwrap();
    connection
        .receive(BrowserToHostMessage::Announcement(Box::new(
            session.connect("conn-1").unwrap(),
        )))
        .await
        .unwrap();
    let tools: Vec<String> = mcp
        .host()
        .tools_for_run(RUN)
        .iter()
        .map(|t| t.capability_id().to_string())
        .collect();
    assert_eq!(tools, ["devices.rename@v1"]);
    assert_eq!(names(&mcp.tools(RUN).await.unwrap()), ["devices__rename"]);
    let server = mcp.clone();
    let waiting = tokio::spawn(async move {
        server
            .call_tool(
                RUN,
                "tc-1",
                "devices__rename",
                Some(json!({"deviceId": "d1", "name": "lab"})),
            )
            .await
    });
    let call = calls.next().await.expect("dispatched to the page");
    assert_eq!(call.invocation.capability_id, "domain:devices.rename");
    let result = session.invoke(call).await;
    connection
        .receive(BrowserToHostMessage::Result(Box::new(result)))
        .await
        .unwrap();
    let answer = waiting.await.unwrap();
    assert!(!answer.is_error, "{answer:?}");
    assert_eq!(
        structured(&answer),
        json!({"path": "devices.rename", "input": {"deviceId": "d1", "name": "lab"}})
    );
    assert_eq!(executor.count(), 1);
}

#[tokio::test]
async fn page_connections_refuse_a_second_connection_id_and_a_foreign_build() {
    // The page socket's own limits (message size, binary frames, text that
    // is not a message) are tested in `page_socket.rs`.
    let (host, _mcp) = server(&[], McpServerOptions::default()).await;
    let (tab, _) = tab(&host, ConfirmationMode::Hold, true).await;
    assert!(matches!(
        host.open_connection(auth()),
        Err(ReplicaError::ConnectionOpen(id)) if id == "conn-1"
    ));
    let mut foreign = serde_json::to_value(tab.session.announcement().unwrap()).unwrap();
    foreign["identity"]["buildId"] = json!("build-9");
    assert!(matches!(
        tab.connection
            .receive(from_json_lossy(&foreign.to_string()).unwrap())
            .await,
        Err(DurableError::Host(HostError::UnknownBuild { .. }))
    ));
    // A well-formed announcement as text (the one in force: unchanged).
    let text = serde_json::to_string(&tab.session.announcement().unwrap()).unwrap();
    assert!(matches!(
        tab.connection
            .receive(from_json_lossy(&text).unwrap())
            .await,
        Ok(Received::Announcement { .. } | Received::Unchanged)
    ));
}

// ----- the HTTP endpoint --------------------------------------------------------------

fn initialize() -> http::Request<Full<Bytes>> {
    http::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}})
            .to_string(),
        )))
        .unwrap()
}

fn with_token(mut request: http::Request<Full<Bytes>>, token: &str) -> http::Request<Full<Bytes>> {
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

async fn send(
    service: &surface_host::mcp::McpHttpService,
    request: http::Request<Full<Bytes>>,
) -> (u16, String) {
    let mut service = service.clone();
    let response = tower_service::Service::call(&mut service, request)
        .await
        .unwrap();
    let status = response.status().as_u16();
    // Only the first frame: an SSE body stays open.
    let mut body = response.into_body();
    let first = match tokio::time::timeout(Duration::from_secs(5), body.frame()).await {
        Ok(Some(Ok(frame))) => frame
            .into_data()
            .map(|d| String::from_utf8_lossy(&d).into_owned())
            .unwrap_or_default(),
        _ => String::new(),
    };
    (status, first)
}

#[tokio::test]
async fn the_endpoint_checks_tokens_revocation_and_the_session_bound() {
    let (host, mcp) = server(&[], McpServerOptions::default().max_sessions(1)).await;
    let (_tab, _) = tab(&host, ConfirmationMode::Hold, true).await;
    let service = mcp.http_service();
    let token = mcp.issue_token(RUN).await.unwrap();
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(
        token,
        mcp.issue_token(RUN).await.unwrap(),
        "tokens are random"
    );

    let (status, body) = send(&service, initialize()).await;
    assert_eq!(status, 401);
    assert!(body.contains("send the bearer token"), "{body}");
    assert_eq!(
        send(&service, with_token(initialize(), "nope")).await.0,
        401
    );

    let (status, _) = send(&service, with_token(initialize(), &token)).await;
    assert_eq!(status, 200);
    assert_eq!(service.session_count().await, 1);
    // The bound: a second session is refused while the first lives, also
    // through another service of the same server.
    let (status, body) = send(&service, with_token(initialize(), &token)).await;
    assert_eq!(status, 503, "{body}");
    let (status, body) = send(&mcp.http_service(), with_token(initialize(), &token)).await;
    assert_eq!(status, 503, "{body}");

    assert!(mcp.revoke_token(&token).await.unwrap());
    assert!(!mcp.revoke_token(&token).await.unwrap());
    assert_eq!(
        send(&service, with_token(initialize(), &token)).await.0,
        401
    );
}

/// A 2026-07-28 request: no session; revision and client capabilities in
/// `_meta` and the revision, method and name in headers.
fn modern(method: &str, name: Option<&str>, params: Value) -> http::Request<Full<Bytes>> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut request = http::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1:8123")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    request
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string(),
        )))
        .unwrap()
}

/// The JSON-RPC message of a response body (plain JSON or one SSE event).
fn message(body: &str) -> Value {
    let data = body
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(body);
    serde_json::from_str(data.trim()).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test]
async fn the_2026_07_28_lane_is_stateless_and_lists_each_tokens_own_run() {
    let (host, mcp) = server(&[], McpServerOptions::default().max_sessions(1)).await;
    let (_tab, _) = tab(&host, ConfirmationMode::Hold, true).await;
    let service = mcp.http_service();
    let token = mcp.issue_token(RUN).await.unwrap();
    let stranger = mcp.issue_token("run-of-nobody").await.unwrap();

    let (status, body) = send(
        &service,
        with_token(modern("server/discover", None, json!({})), &token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let discovered = message(&body);
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"]),
        "{discovered}"
    );
    assert_eq!(
        discovered["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );

    // More requests than `max_sessions`, none refused: none opens a session.
    for _ in 0..3 {
        let (status, body) = send(
            &service,
            with_token(modern("tools/list", None, json!({})), &token),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let listed = message(&body)["result"].clone();
        assert_eq!(listed["resultType"], json!("complete"));
        assert_eq!(listed["ttlMs"], json!(0));
        assert_eq!(listed["cacheScope"], json!("private"));
        assert!(!listed["tools"].as_array().unwrap().is_empty(), "{listed}");
    }
    assert_eq!(service.session_count().await, 0);
    // Another token, another run: its own (empty) list, on the same server.
    let (_, body) = send(
        &service,
        with_token(modern("tools/list", None, json!({})), &stranger),
    )
    .await;
    assert_eq!(message(&body)["result"]["tools"], json!([]));

    // A header that contradicts the body is refused before dispatch.
    let mut lying = modern("tools/list", None, json!({}));
    lying
        .headers_mut()
        .insert("mcp-method", "tools/call".parse().unwrap());
    let (status, _) = send(&service, with_token(lying, &token)).await;
    assert_eq!(status, 400);
    // An unknown revision is answered with the ones served.
    let mut future = modern("tools/list", None, json!({}));
    future
        .headers_mut()
        .insert("mcp-protocol-version", "2099-01-01".parse().unwrap());
    let body = future.body().clone();
    let text = String::from_utf8(
        http_body_util::BodyExt::collect(body)
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap()
    .replace("2026-07-28", "2099-01-01");
    *future.body_mut() = Full::new(Bytes::from(text));
    let (status, body) = send(&service, with_token(future, &token)).await;
    assert_eq!(status, 400);
    assert_eq!(
        message(&body)["error"],
        json!({"code": -32022, "message": "Unsupported protocol version",
               "data": {"requested": "2099-01-01",
                        "supported": ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"]}})
    );
}

#[tokio::test]
async fn the_servers_own_loopback_origin_is_accepted_and_a_foreign_one_refused() {
    let (_host, mcp) = server(&[], McpServerOptions::default()).await;
    let service = mcp.http_service();
    let token = mcp.issue_token(RUN).await.unwrap();
    let with_origin = |origin: &str, host: &str| {
        let mut request = with_token(initialize(), &token);
        request
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
        request.headers_mut().insert("host", host.parse().unwrap());
        request
    };
    let (status, body) = send(
        &service,
        with_origin("http://localhost:8123", "localhost:8123"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for (origin, host) in [
        ("http://evil.example.com", "evil.example.com"),
        ("http://evil.example.com", "localhost:8123"),
        ("http://localhost:9999", "localhost:8123"),
    ] {
        let (status, body) = send(&service, with_origin(origin, host)).await;
        assert_eq!(status, 403, "{origin} {host}: {body}");
    }
}

/// The `Mcp-Session-Id` of an `initialize` answered with `token`.
async fn open_session(service: &surface_host::mcp::McpHttpService, token: &str) -> String {
    let mut service = service.clone();
    let response = tower_service::Service::call(&mut service, with_token(initialize(), token))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn only_the_run_that_opened_a_session_may_use_its_stream_or_end_it() {
    let (_host, mcp) = server(&[], McpServerOptions::default()).await;
    let service = mcp.http_service();
    let owner = mcp.issue_token(RUN).await.unwrap();
    let other = mcp.issue_token("run-2").await.unwrap();
    let session = open_session(&service, &owner).await;
    let on_session = |method: &str, token: &str| {
        let request = http::Request::builder()
            .method(method)
            .uri("http://127.0.0.1/mcp")
            .header("host", "127.0.0.1")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(Full::new(Bytes::new()))
            .unwrap();
        with_token(request, token)
    };
    for method in ["GET", "DELETE"] {
        let (status, body) = send(&service, on_session(method, &other)).await;
        assert_eq!(status, 404, "{method} with another run's token: {body}");
    }
    assert_eq!(service.session_count().await, 1);
    // The owner's session is untouched: its DELETE ends it.
    let (status, _) = send(&service, on_session("DELETE", &owner)).await;
    assert!((200..300).contains(&status), "{status}");
}

/// The last JSON-RPC message of a whole SSE (or JSON) body.
fn last_message(body: &[u8]) -> Value {
    let body = String::from_utf8_lossy(body);
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .rfind(|d| !d.trim().is_empty())
        .map_or_else(
            || message(&body),
            |d| serde_json::from_str(d.trim()).unwrap(),
        )
}

/// A 2026-07-28 `tools/call` of `devices__list` (JSON-RPC id 7).
fn modern_call_of(token: &str) -> http::Request<Full<Bytes>> {
    with_token(
        modern(
            "tools/call",
            Some("devices__list"),
            json!({"name": "devices__list", "arguments": {}}),
        ),
        token,
    )
}

/// A legacy `tools/call` of `devices__list` with JSON-RPC id 5 on `session`.
fn legacy_call(session: &str, token: &str) -> http::Request<Full<Bytes>> {
    let request = http::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                   "params": {"name": "devices__list", "arguments": {}}})
            .to_string(),
        )))
        .unwrap();
    with_token(request, token)
}

/// Issue 11: a request whose id is in flight is refused at once with
/// JSON-RPC -32600 (HTTP 409) — in a legacy session, and for a stateless
/// request with the same id and body from the same token — and the call
/// reaches the page once; a copy arriving after the answer (a retrying
/// proxy, a replayed request) within 10 s is refused as answered in a
/// legacy session; a stateless one after its answer is a new call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_delivered_twice_runs_once_and_the_copy_is_refused() {
    let options = McpServerOptions::default().call_timeout(Duration::from_secs(20));
    let (host, mcp) = server(&[], options).await;
    let (tab, calls) = tab(&host, ConfirmationMode::Hold, false).await;
    let mut calls = calls.unwrap();
    let mut service = mcp.http_service();
    let token = mcp.issue_token(RUN).await.unwrap();
    let session = open_session(&service, &token).await;
    let initialized = with_token(
        http::Request::post("http://127.0.0.1/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(Full::new(Bytes::from(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            )))
            .unwrap(),
        &token,
    );
    assert_eq!(send(&service, initialized).await.0, 202);
    let first = tower_service::Service::call(&mut service, legacy_call(&session, &token))
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let call = tokio::time::timeout(Duration::from_secs(5), calls.next())
        .await
        .unwrap()
        .unwrap();
    let (status, body) = send(&service, legacy_call(&session, &token)).await;
    assert_eq!(status, 409);
    assert_eq!(
        message(&body),
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32600,
               "message": "request id already in flight: this request is being served; wait for its answer (a new request needs a new id)"}})
    );
    // The page answers the one call; the first POST carries its result.
    let result = tab.session.invoke(call).await;
    tab.connection
        .receive(BrowserToHostMessage::Result(Box::new(result)))
        .await
        .unwrap();
    let text = tokio::time::timeout(Duration::from_secs(5), first.into_body().collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    let answered = last_message(&text);
    assert_eq!(answered["id"], json!(5));
    assert_eq!(answered["result"]["isError"], json!(false), "{answered}");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), calls.next())
            .await
            .is_err(),
        "the copy never reached the page"
    );
    // (Settled when the first answer's body ended: a moment later.)
    let mut late = (0, String::new());
    for _ in 0..50 {
        late = send(&service, legacy_call(&session, &token)).await;
        if message(&late.1)["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("request already answered"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        (late.0, message(&late.1)["id"].clone()),
        (409, json!(5)),
        "{}",
        late.1
    );
    assert!(message(&late.1)["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("request already answered"));

    // Stateless: the same id and body from the same token.
    let token = mcp.issue_token(RUN).await.unwrap();
    let modern_call = || modern_call_of(&token);
    // A stateless POST is answered when its call ends: sent from a task.
    let (mut copy, first_token) = (service.clone(), token.clone());
    let first = tokio::spawn(async move {
        let response = tower_service::Service::call(&mut copy, modern_call_of(&first_token))
            .await
            .unwrap();
        response.into_body().collect().await.unwrap().to_bytes()
    });
    let call = tokio::time::timeout(Duration::from_secs(5), calls.next())
        .await
        .unwrap()
        .unwrap();
    let (status, body) = send(&service, modern_call()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(message(&body)["error"]["code"], json!(-32600));
    assert_eq!(message(&body)["id"], json!(7));
    let result = tab.session.invoke(call).await;
    tab.connection
        .receive(BrowserToHostMessage::Result(Box::new(result)))
        .await
        .unwrap();
    let text = tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last_message(&text)["id"], json!(7));
    assert_eq!(last_message(&text)["result"]["isError"], json!(false));
    // Once answered, the same id and body is a new call (an SDK client
    // numbers its requests from 0 in each instance): it runs.
    let (mut copy, again_token) = (service.clone(), token.clone());
    let again = tokio::spawn(async move {
        let response = tower_service::Service::call(&mut copy, modern_call_of(&again_token))
            .await
            .unwrap();
        response.into_body().collect().await.unwrap().to_bytes()
    });
    let call = tokio::time::timeout(Duration::from_secs(5), calls.next())
        .await
        .expect("the call after the answer reaches the page")
        .unwrap();
    let result = tab.session.invoke(call).await;
    tab.connection
        .receive(BrowserToHostMessage::Result(Box::new(result)))
        .await
        .unwrap();
    let text = tokio::time::timeout(Duration::from_secs(5), again)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last_message(&text)["result"]["isError"], json!(false));
}

#[tokio::test]
async fn in_meta_mode_the_agent_gets_two_tools_and_surface_act_runs_the_pages_tool() {
    let mut options = McpServerOptions::default();
    options.export.mode = surface_runtime::export::ToolMode::Meta;
    let (host, mcp) = server(&[], options).await;
    let (_registry, _session, _handles) = observing_page(&host).await;
    let tools = mcp.tools(RUN).await.unwrap();
    assert_eq!(names(&tools), ["surface_discover", "surface_act"]);

    let found = mcp
        .call_tool(
            RUN,
            "tc-1",
            "surface_discover",
            Some(json!({"query": "SELECT rows", "limit": 1})),
        )
        .await;
    assert!(!found.is_error, "{found:?}");
    let found = structured(&found);
    assert_eq!(
        (&found["total"], &found["matched"], &found["more"]),
        (&json!(3), &json!(2), &json!(1))
    );
    // Both mention selected rows; the first in catalog order is listed.
    assert_eq!(
        found["tools"],
        json!([{
            "name": "view__devices__table__readState",
            "description": "The rows the user selected",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "available": true
        }])
    );

    // surface_act runs the named tool through the page's pipeline: its
    // result, and its validation errors, are the tool's own.
    let acted = mcp
        .call_tool(
            RUN,
            "tc-2",
            "surface_act",
            Some(json!({"tool": "view__devices__table__select", "arguments": {"ids": ["d7"]}})),
        )
        .await;
    assert!(!acted.is_error, "{acted:?}");
    assert_eq!(structured(&acted), json!({"selected": ["d7"]}));
    let invalid = mcp
        .call_tool(
            RUN,
            "tc-3",
            "surface_act",
            Some(json!({"tool": "view__devices__table__select", "arguments": {}})),
        )
        .await;
    assert_eq!(error_of(&invalid)["code"], json!("INVALID_INPUT"));
    // A tool name from the direct list is not a tool in meta mode.
    let direct = mcp
        .call_tool(
            RUN,
            "tc-4",
            "view__devices__table__select",
            Some(json!({"ids": []})),
        )
        .await;
    assert_eq!(error_of(&direct)["code"], json!("CAPABILITY_NOT_FOUND"));
    let unknown = mcp
        .call_tool(RUN, "tc-5", "surface_act", Some(json!({"tool": "nope"})))
        .await;
    assert_eq!(error_of(&unknown)["code"], json!("CAPABILITY_NOT_FOUND"));
}
