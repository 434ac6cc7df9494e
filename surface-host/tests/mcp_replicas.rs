//! The MCP server of two replicas on one store (docs/host.md, "Replicas"),
//! over real loopback sockets: a token issued on one replica is accepted
//! by the other and refused by both once revoked; a session opened on one
//! replica is served by the other (rmcp's session store over the host
//! store); tools of a tab connected to one replica are listed and called
//! through the other. The in-process store and wake-ups stand for the
//! shared database (the PostgreSQL runs are `surface-store`'s replica tests
//! and the devices host's two-process tests).

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use surface_host::host::{Database, Host};
use surface_host::mcp::{McpServer, McpServerOptions};
use surface_host::replica::ReplicaOptions;
use surface_runtime::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserToHostMessage, KnownBuild,
};
use surface_runtime::ConsumerKind;
use surface_store::wake::LocalWakeups;
use surface_store::MemoryStore;

struct Endpoint {
    url: String,
    host: Host,
    mcp: McpServer,
    _task: tokio::task::JoinHandle<()>,
}

async fn endpoint(store: &Arc<MemoryStore>, wake: &Arc<LocalWakeups>, name: &str) -> Endpoint {
    endpoint_with(
        store,
        wake,
        name,
        ReplicaOptions::default(),
        McpServerOptions::default(),
    )
    .await
}

async fn endpoint_with(
    store: &Arc<MemoryStore>,
    wake: &Arc<LocalWakeups>,
    name: &str,
    options: ReplicaOptions,
    mcp: McpServerOptions,
) -> Endpoint {
    let host = AgentHost::new().with_known_build(KnownBuild::new(
        "console",
        "build-1",
        host_support::authority(),
    ));
    let host = Host::builder(Database::Memory)
        .store(store.clone())
        .agent_host(host)
        .replica(name)
        .replica_options(options)
        .mcp(mcp)
        .wakeups(wake.clone())
        .build()
        .await
        .unwrap();
    let mcp = host.mcp().clone();
    let app = axum::Router::new().route_service("/mcp", host.mcp_service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Endpoint {
        url: format!("http://{addr}/mcp"),
        host,
        mcp,
        _task: task,
    }
}

/// The fixture's page connected to `r1` as `conn-1` (tab `tab-1`) and
/// run `run-1` started on it there: the page, the replica, its
/// connection and the calls it receives.
async fn tab_with_run(
    r1: &Endpoint,
) -> (
    host_support::SessionFixture,
    surface_host::replica::Replica,
    surface_host::replica::ReplicaTab,
    surface_host::replica::TabCalls,
) {
    let s = host_support::session();
    let replica1 = r1.host.replica().clone();
    let (tab, calls) = replica1
        .open_connection(AuthenticatedConnection::new("conn-1", "sess-1", "user-1"))
        .unwrap();
    let announcement = s.session.connect("conn-1").unwrap();
    tab.receive(BrowserToHostMessage::Announcement(Box::new(announcement)))
        .await
        .unwrap();
    replica1
        .durable()
        .start_run(AgentRun {
            run_id: "run-1".into(),
            session_id: "sess-1".into(),
            tab_id: Some("tab-1".into()),
            kind: ConsumerKind::Embedded,
        })
        .await
        .unwrap();
    (s, replica1, tab, calls)
}

/// One JSON-RPC POST; the status, the JSON answer and the session id.
async fn post(
    url: &str,
    token: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, Value, Option<String>) {
    let mut request = reqwest::Client::new()
        .post(url)
        .timeout(Duration::from_secs(20))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.unwrap();
    let value = serde_json::from_str(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str(d.trim()).ok())
    });
    (status, value.unwrap_or(Value::String(text)), session)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "replicas", "version": "1"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn tool_names(answer: &Value) -> Vec<String> {
    let mut names: Vec<String> = answer["result"]["tools"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_replica_serves_any_request_of_a_client() {
    let store = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let r1 = endpoint(&store, &wake, "r1").await;
    let r2 = endpoint(&store, &wake, "r2").await;

    // The tab is connected to r1; the run was started there.
    let (_s, replica1, _tab, _calls) = tab_with_run(&r1).await;
    let token = r1.mcp.issue_token("run-1").await.unwrap();

    // A session opened on r1 …
    let (status, answer, session) = post(&r1.url, &token, None, initialize()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], json!("2025-11-25"));
    let session = session.expect("a session id");
    let (status, _, _) = post(&r1.url, &token, Some(&session), initialized()).await;
    assert_eq!(status, 202);
    // … is served by r2, which lists the tab's tools from the store.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, on_r2, _) = post(&r2.url, &token, Some(&session), list.clone()).await;
    assert_eq!(status, 200, "{on_r2}");
    let (_, on_r1, _) = post(&r1.url, &token, Some(&session), list.clone()).await;
    assert!(
        tool_names(&on_r2).contains(&"devices__disable".to_string()),
        "{on_r2}"
    );
    assert_eq!(tool_names(&on_r2), tool_names(&on_r1));

    // Another run's token cannot restore the session anywhere.
    let r3 = endpoint(&store, &wake, "r3").await;
    replica1
        .durable()
        .start_run(AgentRun {
            run_id: "run-2".into(),
            session_id: "sess-1".into(),
            tab_id: Some("tab-1".into()),
            kind: ConsumerKind::Embedded,
        })
        .await
        .unwrap();
    let other = r1.mcp.issue_token("run-2").await.unwrap();
    let (status, _, _) = post(&r3.url, &other, Some(&session), list.clone()).await;
    assert_eq!(status, 404, "a session is restored only for its own run");
    let (status, on_r3, _) = post(&r3.url, &token, Some(&session), list.clone()).await;
    assert_eq!((status, tool_names(&on_r3)), (200, tool_names(&on_r1)));

    // An unknown token is refused by both; a revoked one too.
    for url in [&r1.url, &r2.url] {
        let (status, _, _) = post(url, "not-a-token", None, initialize()).await;
        assert_eq!(status, 401);
    }
    assert!(r2.mcp.revoke_token(&token).await.unwrap());
    for url in [&r1.url, &r2.url] {
        let (status, _, _) = post(url, &token, Some(&session), list.clone()).await;
        assert_eq!(status, 401, "revoked on every replica");
    }
    assert!(!r1.mcp.revoke_token(&token).await.unwrap());
}

/// Issue 5: `Host::end_run` on one replica revokes every token of the run
/// on every replica sharing the store (and only that run's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_a_run_on_one_replica_ends_its_tokens_on_every_replica() {
    let store = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let r1 = endpoint(&store, &wake, "r1").await;
    let r2 = endpoint(&store, &wake, "r2").await;
    for run in ["run-a", "run-b"] {
        r1.host
            .start_run(AgentRun {
                run_id: run.into(),
                session_id: "sess-1".into(),
                tab_id: Some("tab-1".into()),
                kind: ConsumerKind::Embedded,
            })
            .await
            .unwrap();
    }
    let first = r1.mcp.issue_token("run-a").await.unwrap();
    let second = r2.mcp.issue_token("run-a").await.unwrap();
    let other = r1.mcp.issue_token("run-b").await.unwrap();
    // A session open on r2 before the run ends.
    let (status, answer, session) = post(&r2.url, &first, None, initialize()).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session id");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});

    r1.host.end_run("run-a").await.unwrap();

    for url in [&r1.url, &r2.url] {
        for token in [&first, &second] {
            let (status, _, _) = post(url, token, None, initialize()).await;
            assert_eq!(status, 401, "a token of the ended run, on {url}");
        }
        let (status, _, _) = post(url, &first, Some(&session), list.clone()).await;
        assert_eq!(status, 401, "its open session too, on {url}");
        let (status, answer, _) = post(url, &other, None, initialize()).await;
        assert_eq!(status, 200, "another run's token still works: {answer}");
    }
    assert!(!r2.mcp.revoke_token(&first).await.unwrap());
    assert!(!r2.mcp.revoke_token(&second).await.unwrap());
    assert_eq!(r2.mcp.revoke_run_tokens("run-b").await.unwrap(), 1);
}

/// One request with `method` naming `session`; its status.
async fn status_of(method: reqwest::Method, url: &str, token: &str, session: &str) -> u16 {
    reqwest::Client::new()
        .request(method, url)
        .timeout(Duration::from_secs(20))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Issue 4: GET and DELETE pass the same run check as POST, on the
/// replica holding the session and on one that would restore it from the
/// store: another run's token gets 404 and the session stays its run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_delete_of_another_runs_session_are_refused_on_every_replica() {
    let store = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let r1 = endpoint(&store, &wake, "r1").await;
    let r2 = endpoint(&store, &wake, "r2").await;
    for run in ["run-a", "run-b"] {
        r1.host
            .start_run(AgentRun {
                run_id: run.into(),
                session_id: "sess-1".into(),
                tab_id: Some("tab-1".into()),
                kind: ConsumerKind::Embedded,
            })
            .await
            .unwrap();
    }
    let owner = r1.mcp.issue_token("run-a").await.unwrap();
    let intruder = r1.mcp.issue_token("run-b").await.unwrap();
    let (status, answer, session) = post(&r1.url, &owner, None, initialize()).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session id");
    let (status, _, _) = post(&r1.url, &owner, Some(&session), initialized()).await;
    assert_eq!(status, 202);
    // r1 holds the session (live); r2 would restore it from the store.
    for url in [&r1.url, &r2.url] {
        for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
            let status = status_of(method.clone(), url, &intruder, &session).await;
            assert_eq!(status, 404, "{method} by another run on {url}");
        }
    }
    assert_eq!(r1.mcp.http_service().session_count().await, 1);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    for url in [&r1.url, &r2.url] {
        let (status, answer, _) = post(url, &owner, Some(&session), list.clone()).await;
        assert_eq!(status, 200, "still the owner's session on {url}: {answer}");
    }
}

/// Issue 11 across replicas: a `tools/call` delivered to two replicas at
/// once — in a legacy session restored on the second, and as a stateless
/// request with the same id and body from the same token — runs once: the
/// copy is refused at once (HTTP 409, JSON-RPC -32600) by the replica that
/// did not take it, and the page sees one call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_delivered_to_two_replicas_at_once_runs_once() {
    let store = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let r1 = endpoint(&store, &wake, "r1").await;
    let r2 = endpoint(&store, &wake, "r2").await;
    let (s, _replica1, tab, mut calls) = tab_with_run(&r1).await;
    let token = r1.mcp.issue_token("run-1").await.unwrap();
    let (_, _, session) = post(&r1.url, &token, None, initialize()).await;
    let session = session.expect("a session id");
    post(&r1.url, &token, Some(&session), initialized()).await;

    let legacy = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                        "params": {"name": "devices__list", "arguments": {}}});
    let (url, t, sess, body) = (
        r1.url.clone(),
        token.clone(),
        session.clone(),
        legacy.clone(),
    );
    let first = tokio::spawn(async move { post(&url, &t, Some(&sess), body).await });
    let call = tokio::time::timeout(Duration::from_secs(10), calls.next())
        .await
        .unwrap()
        .unwrap();
    let (status, copy, _) = post(&r2.url, &token, Some(&session), legacy).await;
    assert_eq!(status, 409, "{copy}");
    assert_eq!(copy["error"]["code"], json!(-32600));
    assert_eq!(copy["id"], json!(5));
    let result = s.session.invoke(call).await;
    tab.receive(BrowserToHostMessage::Result(Box::new(result)))
        .await
        .unwrap();
    let (status, answered, _) = first.await.unwrap();
    assert_eq!(
        (status, answered["id"].clone()),
        (200, json!(5)),
        "{answered}"
    );
    assert_eq!(answered["result"]["isError"], json!(false), "{answered}");

    // Stateless (2026-07-28): the same id and body from the same token.
    let stateless = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "devices__list", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (url, t, body) = (r1.url.clone(), token.clone(), stateless.clone());
    let first = tokio::spawn(async move { post_modern(&url, &t, body).await });
    let call = tokio::time::timeout(Duration::from_secs(10), calls.next())
        .await
        .unwrap()
        .unwrap();
    let (status, copy) = post_modern(&r2.url, &token, stateless.clone()).await;
    assert_eq!((status, copy["id"].clone()), (409, json!(9)), "{copy}");
    let result = s.session.invoke(call).await;
    tab.receive(BrowserToHostMessage::Result(Box::new(result)))
        .await
        .unwrap();
    let (status, answered) = first.await.unwrap();
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["result"]["isError"], json!(false), "{answered}");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), calls.next())
            .await
            .is_err(),
        "the page saw each call once"
    );
}

/// A stateless (2026-07-28) JSON-RPC POST; the status and the answer.
async fn post_modern(url: &str, token: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .timeout(Duration::from_secs(20))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header(
            "mcp-name",
            body["params"]["name"].as_str().unwrap_or("devices__list"),
        )
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let value = serde_json::from_str(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str(d.trim()).ok())
    });
    (status, value.unwrap_or(Value::String(text)))
}

/// Issue 12: once a run's page is gone (its tab closed, here on the other
/// replica), a call of the run's agent says so — not "list the tools
/// again" — and the run and its token end on every replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_the_page_is_gone_says_so_and_ends_the_token() {
    let store = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let short = ReplicaOptions {
        lease: Duration::from_millis(300),
        renew_interval: Duration::from_millis(100),
        ..ReplicaOptions::default()
    };
    let grace = McpServerOptions::default().page_gone_grace(Duration::from_millis(500));
    let r1 = endpoint_with(&store, &wake, "r1", short.clone(), grace.clone()).await;
    let r2 = endpoint_with(&store, &wake, "r2", short, grace).await;
    let (s, replica1, tab, _calls) = tab_with_run(&r1).await;
    let token = r1.mcp.issue_token("run-1").await.unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "devices__list", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    // While the page lives a second lease, a call runs and nothing ends.
    tokio::time::sleep(Duration::from_millis(400)).await;
    tab.close().await;
    // Gone for less than the grace: it may be reconnecting; nothing ends.
    let (status, answer) = post_modern(&r2.url, &token, call.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"].as_str().unwrap(),
        AWAY
    );
    // The page comes back (the same tab, a new connection) and answers a
    // call: a later absence starts the grace anew.
    let (back, mut calls) = replica1
        .open_connection(AuthenticatedConnection::new("conn-2", "sess-1", "user-1"))
        .unwrap();
    let announcement = s.session.connect("conn-2").unwrap();
    back.receive(BrowserToHostMessage::Announcement(Box::new(announcement)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (url, t, body) = (r2.url.clone(), token.clone(), call.clone());
    let answered = tokio::spawn(async move { post_modern(&url, &t, body).await });
    let dispatched = tokio::time::timeout(Duration::from_secs(10), calls.next())
        .await
        .unwrap()
        .unwrap();
    let result = s.session.invoke(dispatched).await;
    back.receive(BrowserToHostMessage::Result(Box::new(result)))
        .await
        .unwrap();
    let (status, answer) = answered.await.unwrap();
    assert_eq!(
        (status, answer["result"]["isError"].clone()),
        (200, json!(false)),
        "{answer}"
    );
    back.close().await;
    let (_, answer) = post_modern(&r2.url, &token, call.clone()).await;
    assert_eq!(
        answer["result"]["content"][0]["text"].as_str().unwrap(),
        AWAY,
        "a new absence: away again, not gone"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (status, answer) = post_modern(&r2.url, &token, call.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "CAPABILITY_NOT_FOUND: The page this agent worked in is gone (closed or reloaded, or its host stopped); nothing ran. Ask the user to reopen the page and connect a new agent: this token no longer works. Do not retry this call; tell the user what happened."
    );
    for url in [&r1.url, &r2.url] {
        let (status, _) = post_modern(url, &token, call.clone()).await;
        assert_eq!(status, 401, "the token ended on every replica");
    }
    let run = store_run(&r2, "run-1").await;
    assert!(!run, "the run ended");
}

/// What a call gets while its page may be reconnecting.
const AWAY: &str = "CAPABILITY_NOT_FOUND: The page this agent works in is not connected right now (reloading, or its host restarting); nothing ran. If the tool list stays empty for a minute, the page is gone. The application's tools have changed: list the tools again, then use a current tool.";

/// Whether `run_id` is active in the store.
async fn store_run(endpoint: &Endpoint, run_id: &str) -> bool {
    endpoint
        .host
        .store()
        .run(run_id)
        .await
        .unwrap()
        .is_some_and(|r| r.active)
}

/// Meta mode: the tool list is always the two meta tools, so a run whose
/// page went away is told so by `surface_discover` (as a call of a missing
/// tool is in direct mode), then that it is gone, and its token ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_meta_mode_surface_discover_says_the_page_is_away_then_gone() {
    let store = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let short = ReplicaOptions {
        lease: Duration::from_millis(300),
        renew_interval: Duration::from_millis(100),
        ..ReplicaOptions::default()
    };
    let mut options = McpServerOptions::default().page_gone_grace(Duration::from_millis(500));
    options.export.mode = surface_runtime::export::ToolMode::Meta;
    let r1 = endpoint_with(&store, &wake, "r1", short.clone(), options.clone()).await;
    let r2 = endpoint_with(&store, &wake, "r2", short, options).await;
    let (_s, _replica1, tab, _calls) = tab_with_run(&r1).await;
    let token = r1.mcp.issue_token("run-1").await.unwrap();
    let discover = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "surface_discover", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, answer) = post_modern(&r2.url, &token, discover.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert!(
        answer["result"]["structuredContent"]["total"]
            .as_u64()
            .unwrap()
            > 0,
        "{answer}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    tab.close().await;
    let (_, answer) = post_modern(&r2.url, &token, discover.clone()).await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("CAPABILITY_NOT_FOUND: The page this agent works in is not connected right now (reloading, or its host restarting); nothing ran."),
        "{answer}"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, answer) = post_modern(&r2.url, &token, discover.clone()).await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("CAPABILITY_NOT_FOUND: The page this agent worked in is gone"),
        "{answer}"
    );
    let (status, _) = post_modern(&r1.url, &token, discover).await;
    assert_eq!(status, 401, "the token ended");
}
