//! The MCP endpoint against a hostile client, over real loopback sockets
//! (docs/host.md, "Threat model"): the session bound under concurrent
//! `initialize`, `Origin` validation, JSON-RPC framing errors, batches,
//! the revisions offered, and tool arguments over the host's limit.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use surface_host::host::{Database, Host};
use surface_host::mcp::{McpServer, McpServerOptions};
use surface_runtime::export::MAX_ARGUMENTS_BYTES;

const RUN: &str = "run-1";

struct Endpoint {
    url: String,
    token: String,
    mcp: McpServer,
    _task: tokio::task::JoinHandle<()>,
}

async fn endpoint(options: McpServerOptions) -> Endpoint {
    let host = Host::builder(Database::Memory)
        .mcp(options)
        .build()
        .await
        .unwrap();
    let mcp = host.mcp().clone();
    let token = host.issue_token(RUN).await.unwrap();
    let app = axum::Router::new().route_service("/mcp", mcp.http_service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Endpoint {
        url: format!("http://{addr}/mcp"),
        token,
        mcp,
        _task: task,
    }
}

fn initialize_body(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": version, "capabilities": {},
                      "clientInfo": {"name": "hostile", "version": "1"}}})
    .to_string()
}

fn post(endpoint: &Endpoint, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(&endpoint.url)
        .timeout(Duration::from_secs(20))
        .bearer_auth(&endpoint.token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
}

/// Status and the JSON answer (the body, or the `data:` of an SSE answer;
/// `initialize`'s stream ends after its one event).
async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("the endpoint answers");
    let status = response.status().as_u16();
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the endpoint finished its answer within 10 s")
        .expect("the body reads");
    (status, parse(&text).unwrap_or(Value::String(text)))
}

fn parse(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str(d.trim()).ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_initialize_never_exceeds_the_session_bound() {
    // The server's bound (64), one run allowed all of it …
    let options = McpServerOptions::default().max_sessions_per_run(64);
    assert_eq!(concurrent_initialize(options).await, (64, 236));
    // … and the per-run bound (8 by default), however many arrive at once.
    assert_eq!(
        concurrent_initialize(McpServerOptions::default()).await,
        (8, 292)
    );
}

/// 300 concurrent `initialize`s with one token: (accepted, refused 503).
async fn concurrent_initialize(options: McpServerOptions) -> (usize, usize) {
    let endpoint = Arc::new(endpoint(options).await);
    let mut calls = Vec::new();
    for _ in 0..300 {
        let endpoint = endpoint.clone();
        calls.push(tokio::spawn(async move {
            post(&endpoint, initialize_body("2025-06-18"))
                .send()
                .await
                .expect("the endpoint answers")
                .status()
                .as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for call in calls {
        statuses.push(call.await.unwrap());
    }
    let accepted = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 503).count();
    (accepted, refused)
}

#[tokio::test]
async fn a_present_origin_must_be_allowed() {
    let endpoint = endpoint(McpServerOptions::default()).await;
    let (status, _) = answer(
        post(&endpoint, initialize_body("2025-06-18")).header("origin", "http://evil.example"),
    )
    .await;
    assert_eq!(status, 403, "a browser page on another origin is refused");
    let (status, body) = answer(post(&endpoint, initialize_body("2025-06-18"))).await;
    assert_eq!(status, 200, "a native client sends no Origin: {body}");

    let allowed = endpoint_allowing("http://inspector.example:6274").await;
    let (status, _) = answer(
        post(&allowed, initialize_body("2025-06-18"))
            .header("origin", "http://inspector.example:6274"),
    )
    .await;
    assert_eq!(status, 200, "an allowed origin passes");
    let (status, _) = answer(
        post(&allowed, initialize_body("2025-06-18"))
            .header("origin", "http://inspector.example:6275"),
    )
    .await;
    assert_eq!(status, 403, "another port is another origin");

    // Checked before the session bound: a foreign page gets 403, not 503.
    let full = crate::endpoint(McpServerOptions::default().max_sessions(0)).await;
    let (status, _) =
        answer(post(&full, initialize_body("2025-06-18")).header("origin", "http://evil.example"))
            .await;
    assert_eq!(status, 403);
}

async fn endpoint_allowing(origin: &str) -> Endpoint {
    endpoint(McpServerOptions::default().allowed_origins([origin])).await
}

#[tokio::test]
async fn framing_errors_get_400_with_json_rpc_codes() {
    let endpoint = endpoint(McpServerOptions::default()).await;
    let (status, body) = answer(post(&endpoint, "{not json")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(body["id"], Value::Null);

    let batch = format!("[{}]", initialize_body("2025-03-26"));
    let (status, body) = answer(post(&endpoint, batch)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batches"),
        "{body}"
    );

    let (status, body) = answer(post(&endpoint, r#"{"jsonrpc":"2.0","id":1}"#)).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(-32600)),
        "{body}"
    );
    let (status, body) = answer(post(&endpoint, r#"{"id":1,"method":"ping"}"#)).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(-32600)),
        "{body}"
    );

    let (status, body) = answer(post(&endpoint, "x".repeat(2 * 1024 * 1024))).await;
    assert_eq!(status, 413, "{body}");
}

#[tokio::test]
async fn the_batch_revision_is_not_negotiated() {
    let endpoint = endpoint(McpServerOptions::default()).await;
    let (status, body) = answer(post(&endpoint, initialize_body("2025-03-26"))).await;
    assert_eq!(status, 200, "{body}");
    let negotiated = body["result"]["protocolVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_ne!(negotiated, "2025-03-26", "{body}");
    assert!(
        surface_host::mcp::PROTOCOL_VERSIONS.contains(&negotiated.as_str()),
        "{body}"
    );
}

#[tokio::test]
async fn oversized_tool_arguments_are_refused_at_the_host_naming_the_limit() {
    let endpoint = endpoint(McpServerOptions::default()).await;
    let big = json!({ "deviceIds": ["x".repeat(MAX_ARGUMENTS_BYTES)] });
    let result = endpoint
        .mcp
        .call_tool(RUN, "tc-1", "devices__list", Some(big))
        .await;
    let result = serde_json::to_value(&result).unwrap();
    assert_eq!(result["isError"], true, "{result}");
    let message = "The arguments are larger than 245760 bytes.";
    let expected = json!({
        "code": "INVALID_INPUT",
        "message": message,
        "retry": "with-changes",
        "details": {"issues": [{"path": "", "message": message}]},
    });
    // The tool declares no output schema: the error object is the
    // structured content and the second text block (docs/agents.md,
    // "Results").
    assert_eq!(result["structuredContent"], expected, "{result}");
    let error: serde_json::Value =
        serde_json::from_str(result["content"][1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error, expected, "{result}");
    assert_eq!(
        result["content"][0]["text"],
        format!("INVALID_INPUT: {message} Change the arguments as the message says, then call the tool again."),
        "{result}"
    );
}

/// An [`McpStore`] over a [`MemoryStore`] that counts `token_run` reads.
struct CountingStore {
    inner: Arc<surface_store::MemoryStore>,
    token_reads: std::sync::atomic::AtomicUsize,
}

impl CountingStore {
    fn reads(&self) -> usize {
        self.token_reads.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl surface_store::McpStore for CountingStore {
    fn record_token<'a>(
        &'a self,
        digest: &'a str,
        run: &'a str,
        at: i64,
    ) -> surface_store::StoreFuture<'a, bool> {
        self.inner.record_token(digest, run, at)
    }
    fn token_run<'a>(&'a self, digest: &'a str) -> surface_store::StoreFuture<'a, Option<String>> {
        self.token_reads
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.token_run(digest)
    }
    fn revoke_token<'a>(&'a self, digest: &'a str) -> surface_store::StoreFuture<'a, bool> {
        self.inner.revoke_token(digest)
    }
    fn revoke_run_tokens<'a>(&'a self, run: &'a str) -> surface_store::StoreFuture<'a, u64> {
        self.inner.revoke_run_tokens(run)
    }
    fn delete_tokens_issued_before<'a>(
        &'a self,
        before: i64,
    ) -> surface_store::StoreFuture<'a, u64> {
        self.inner.delete_tokens_issued_before(before)
    }
    fn claim_request<'a>(
        &'a self,
        key: &'a str,
        now: i64,
        expires: i64,
    ) -> surface_store::StoreFuture<'a, surface_store::RequestClaim> {
        self.inner.claim_request(key, now, expires)
    }
    fn settle_request<'a>(
        &'a self,
        key: &'a str,
        at: i64,
        keep_until: Option<i64>,
    ) -> surface_store::StoreFuture<'a, ()> {
        self.inner.settle_request(key, at, keep_until)
    }
    fn delete_expired_requests<'a>(&'a self, now: i64) -> surface_store::StoreFuture<'a, u64> {
        self.inner.delete_expired_requests(now)
    }
    fn store_mcp_session<'a>(
        &'a self,
        id: &'a str,
        state: &'a str,
        at: i64,
    ) -> surface_store::StoreFuture<'a, ()> {
        self.inner.store_mcp_session(id, state, at)
    }
    fn mcp_session<'a>(&'a self, id: &'a str) -> surface_store::StoreFuture<'a, Option<String>> {
        self.inner.mcp_session(id)
    }
    fn bind_mcp_session<'a>(
        &'a self,
        id: &'a str,
        run: &'a str,
        at: i64,
    ) -> surface_store::StoreFuture<'a, bool> {
        self.inner.bind_mcp_session(id, run, at)
    }
    fn mcp_session_run<'a>(
        &'a self,
        id: &'a str,
    ) -> surface_store::StoreFuture<'a, Option<String>> {
        self.inner.mcp_session_run(id)
    }
    fn delete_mcp_session<'a>(&'a self, id: &'a str) -> surface_store::StoreFuture<'a, bool> {
        self.inner.delete_mcp_session(id)
    }
    fn touch_mcp_session<'a>(
        &'a self,
        id: &'a str,
        at: i64,
    ) -> surface_store::StoreFuture<'a, bool> {
        self.inner.touch_mcp_session(id, at)
    }
    fn delete_idle_mcp_sessions<'a>(&'a self, before: i64) -> surface_store::StoreFuture<'a, u64> {
        self.inner.delete_idle_mcp_sessions(before)
    }
}

/// Issue 9: a malformed bearer token costs no store read, and a
/// well-formed unknown one costs one read however often it is repeated
/// (within `UNKNOWN_TOKEN_TTL`); a valid token is read each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_bearer_tokens_do_not_reach_the_store_twice() {
    let memory = Arc::new(surface_store::MemoryStore::new());
    let counting = Arc::new(CountingStore {
        inner: memory.clone(),
        token_reads: std::sync::atomic::AtomicUsize::new(0),
    });
    let host = Host::builder(Database::Memory)
        .store(memory.clone())
        .mcp_store(counting.clone())
        .build()
        .await
        .unwrap();
    let token = host.issue_token(RUN).await.unwrap();
    let app = axum::Router::new().route_service("/mcp", host.mcp_service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    let mut endpoint = Endpoint {
        url: format!("http://{addr}/mcp"),
        token: String::new(),
        mcp: host.mcp().clone(),
        _task: task,
    };
    assert_eq!(counting.reads(), 0);
    let uppercase = "A".repeat(64);
    let short = "a".repeat(63);
    let unknown = "b".repeat(64);
    for bad in ["not-a-token", uppercase.as_str(), short.as_str()] {
        endpoint.token = bad.to_string();
        for _ in 0..5 {
            let (status, _) = answer(post(&endpoint, initialize_body("2025-11-25"))).await;
            assert_eq!(status, 401, "{bad}");
        }
    }
    assert_eq!(counting.reads(), 0, "malformed tokens are never looked up");
    endpoint.token = unknown.clone();
    for _ in 0..10 {
        let (status, _) = answer(post(&endpoint, initialize_body("2025-11-25"))).await;
        assert_eq!(status, 401);
    }
    assert_eq!(
        counting.reads(),
        1,
        "one read for ten tries of one unknown token"
    );
    endpoint.token = token.clone();
    for _ in 0..2 {
        let (status, answer) = answer(post(&endpoint, initialize_body("2025-11-25"))).await;
        assert_eq!(status, 200, "{answer}");
    }
    assert_eq!(counting.reads(), 3, "a valid token is read each time");
    // Revoked: refused from the next request on, then remembered.
    assert!(endpoint.mcp.revoke_token(&token).await.unwrap());
    for _ in 0..3 {
        let (status, _) = answer(post(&endpoint, initialize_body("2025-11-25"))).await;
        assert_eq!(status, 401);
    }
    assert_eq!(counting.reads(), 4);
}

/// Serves `host`'s MCP endpoint on a loopback port, with `token`.
async fn serve(host: &Host, token: String) -> Endpoint {
    let app = axum::Router::new().route_service("/mcp", host.mcp_service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Endpoint {
        url: format!("http://{addr}/mcp"),
        token,
        mcp: host.mcp().clone(),
        _task: task,
    }
}

/// Issue 4: the session bound is per run too — one run's token cannot take
/// every session of the server from the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_cannot_take_the_sessions_of_the_others() {
    let options = McpServerOptions::default()
        .max_sessions(4)
        .max_sessions_per_run(2);
    assert_eq!(McpServerOptions::default().max_sessions_per_run, 8);
    let host = Host::builder(Database::Memory)
        .mcp(options)
        .build()
        .await
        .unwrap();
    let mut endpoint = serve(&host, host.issue_token("run-a").await.unwrap()).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(
            answer(post(&endpoint, initialize_body("2025-11-25")))
                .await
                .0,
        );
    }
    assert_eq!(statuses, [200, 200, 503], "run-a: two sessions at most");
    endpoint.token = host.issue_token("run-b").await.unwrap();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(
            answer(post(&endpoint, initialize_body("2025-11-25")))
                .await
                .0,
        );
    }
    assert_eq!(statuses, [200, 200, 503], "run-b still gets its two");
    endpoint.token = host.issue_token("run-c").await.unwrap();
    let (status, _) = answer(post(&endpoint, initialize_body("2025-11-25"))).await;
    assert_eq!(status, 503, "the server's bound of four");
    assert_eq!(endpoint.mcp.http_service().session_count().await, 4);
}

/// Issue 4: sessions idle in the store past twice rmcp's keep-alive
/// (`call_timeout` + 30 s = 390 s by default, so 780 s) are deleted from
/// the store, not only from a replica's memory, and cannot be restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire_from_the_store() {
    use surface_store::McpStore as _;
    let memory = Arc::new(surface_store::MemoryStore::new());
    let host = Host::builder(Database::Memory)
        .store(memory.clone())
        .build()
        .await
        .unwrap();
    let endpoint = serve(&host, host.issue_token(RUN).await.unwrap()).await;
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    assert!(memory
        .bind_mcp_session("stale", RUN, now - 800_000)
        .await
        .unwrap());
    assert!(memory
        .bind_mcp_session("recent", RUN, now - 700_000)
        .await
        .unwrap());
    let (status, _) = answer(post(&endpoint, initialize_body("2025-11-25"))).await;
    assert_eq!(status, 200);
    assert_eq!(memory.mcp_session_run("stale").await.unwrap(), None);
    assert_eq!(
        memory.mcp_session_run("recent").await.unwrap().as_deref(),
        Some(RUN)
    );
    let (status, _) = answer(
        post(
            &endpoint,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
        )
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", "stale"),
    )
    .await;
    assert_eq!(status, 404, "an expired session is not restored");
}

/// Issue 12 (in part): the server's `instructions` tell an agent whose
/// run lost its page what happened and what to do, instead of listing
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instructions_say_what_an_empty_tool_list_means() {
    let endpoint = endpoint(McpServerOptions::default()).await;
    let (status, answer) = answer(post(&endpoint, initialize_body("2025-11-25"))).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["instructions"],
        json!(
            "These tools act in the user's open application page and change with what the page shows. \
             Calls that need the user's confirmation wait until the user decides in the page; \
             you cannot confirm them yourself. \
             If tools/list stays empty and every call answers that no tool is available, the page is gone \
             (closed, or the server holding it restarted and it did not reconnect): listing again will not help; \
             ask the user to reopen the page and connect a new agent."
        )
    );
}
