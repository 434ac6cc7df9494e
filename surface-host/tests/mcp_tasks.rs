//! Approvals as MCP tasks (revision 2026-07-28, the
//! `io.modelcontextprotocol/tasks` extension; docs/agents.md, "Approvals
//! as MCP tasks"): a call the backend holds for a person's approval is
//! answered with a task; `tasks/get` is `working` until the host recorded
//! the resumed outcome, then `completed` with it — read from the store, so
//! a new `Host` on the same SQLite file answers the same, also after the
//! host process that made the call was killed with `kill -9` (this test
//! binary re-run as `tasks_probe`). `Host::decide_approval` checks,
//! decides, records and resumes once; a legacy session gets no tasks.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;
#[path = "support/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use host_support::*;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use surface_host::host::{ApprovalDecider, Database, DecideError, Host, InProcessTab};
use surface_runtime::bridge::{
    CallOptions, CapabilityClient, DescribeScope, GatewayApproval, GatewayOutcome,
    InvocationReceipt, InvokeRequest, OrpcCallError, ResumeApprovalRequest,
};
use surface_runtime::host::{BrowserSurfaceSession, BrowserSurfaceSessionOptions, KnownBuild};
use surface_runtime::manifest::CapabilityDescriptor;
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentConsumer, AgentProcedureExecutor, ConsumerKind, ErrorCode, ExecuteRequest, ExecutionError,
    Retry, TokioTimer,
};
use surface_store::{ApprovalDecision, ApprovalState};

/// The backend: holds every call for a new approval, `appr-1`, `appr-2`, …
#[derive(Default)]
struct Holding(std::sync::atomic::AtomicUsize);

impl AgentProcedureExecutor for Holding {
    fn execute(&self, _: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Box::pin(async move {
            Err(ExecutionError::new(
                ErrorCode::DomainApprovalRequired,
                "This action requires approval before it can run.",
                Retry::No,
            )
            .with_detail("approvalId", format!("appr-{n}")))
        })
    }
}

/// The gateway: its receipt of a held call names approval `receipt_names`;
/// `resumeApproval` completes the held call.
struct Resuming {
    receipt_names: &'static str,
}

fn refused<T: Send + 'static>() -> BoxFuture<'static, Result<T, OrpcCallError>> {
    Box::pin(async {
        Err(OrpcCallError::Transport {
            message: "not in this test".into(),
        })
    })
}

impl CapabilityClient for Resuming {
    fn describe(
        &self,
        _: DescribeScope,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>> {
        refused()
    }
    fn invoke(
        &self,
        _: InvokeRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        refused()
    }
    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>> {
        // The gateway holds every call under the approval `receipt_names`.
        let receipt = serde_json::from_value(json!({
            "invocationId": invocation_id, "capabilityId": "devices.list",
            "contractDigest": "00", "state": "pending", "approvalId": self.receipt_names,
            "createdAt": "2026-12-05T00:00:00.000Z", "updatedAt": "2026-12-05T00:00:00.000Z"
        }))
        .unwrap();
        Box::pin(async move { Ok(Some(receipt)) })
    }
    fn get_approval<'a>(
        &'a self,
        _: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>> {
        refused()
    }
    fn resume_approval(
        &self,
        request: ResumeApprovalRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        let outcome = serde_json::from_value(json!({
            "status": "completed", "invocationId": request.invocation_id,
            "executionId": "exec-1", "output": {"devices": []}
        }))
        .unwrap();
        Box::pin(async move { Ok(outcome) })
    }
}

fn database_file() -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir()
        .join(format!(
            "agent-surface-mcp-tasks-{}-{nanos}",
            std::process::id()
        ))
        .join("host.db")
}

async fn host_on(path: &std::path::Path) -> Host {
    Host::builder(Database::sqlite(path))
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .unwrap()
}

/// One 2026-07-28 request; `tasks`: the client declares the extension.
/// The host's id of the approval the backend named `backend` (the held
/// call's invocation id; the task id an MCP client sees).
async fn approval_of(host: &Host, backend: &str) -> String {
    let named = host.store().backend_approvals(backend, 2).await.unwrap();
    assert_eq!(named.len(), 1, "one approval named {backend}");
    named[0].approval_id.clone()
}

async fn rpc(host: &Host, token: &str, method: &str, params: Value, tasks: bool) -> Value {
    let mut params = params;
    let capabilities = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    });
    let mut request = http::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.header("mcp-name", name);
    }
    if let Some(task) = params.get("taskId").and_then(Value::as_str) {
        request = request.header("mcp-name", task);
    }
    let request = request
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string(),
        )))
        .unwrap();
    let mut service = host.mcp_service();
    let response = tower_service::Service::call(&mut service, request)
        .await
        .unwrap();
    let body = response.into_body().collect();
    let bytes = tokio::time::timeout(Duration::from_secs(10), body)
        .await
        .expect("an answer within 10 s")
        .unwrap()
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| d.contains("\"id\":1"))
        .unwrap_or(text.as_str())
        .to_string();
    serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_held_for_approval_is_a_task_completed_with_the_resumed_outcome() {
    let path = database_file();
    let host = host_on(&path).await;
    let fx = Fixture::new();
    fx.registry
        .set_procedure_executor(Arc::new(Holding::default()));
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            fx.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        )
        .timer(Arc::new(TokioTimer)),
    );
    let tab = InProcessTab::connect(&host, &session, "u1").await.unwrap();
    let run = host
        .start_page_run(session.identity(), ConsumerKind::Embedded)
        .await
        .unwrap();
    let token = host.issue_token(&run).await.unwrap();
    let other_run = host
        .start_page_run(session.identity(), ConsumerKind::Embedded)
        .await
        .unwrap();
    let stranger = host.issue_token(&other_run).await.unwrap();

    // The server offers the extension.
    let discovered = rpc(&host, &token, "server/discover", json!({}), true).await;
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}}),
        "{discovered}"
    );

    // A client without the extension gets the held call's error.
    let call = json!({"name": "devices__list", "arguments": {}});
    let plain = rpc(&host, &token, "tools/call", call.clone(), false).await;
    assert_eq!(plain["result"]["isError"], json!(true), "{plain}");
    assert!(plain["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("DOMAIN_APPROVAL_REQUIRED"));

    // With it: a task named by the approval, working.
    let created = rpc(&host, &token, "tools/call", call, true).await;
    let task = &created["result"];
    let t2 = approval_of(&host, "appr-2").await;
    assert_eq!(task["resultType"], json!("task"), "{created}");
    assert_eq!(task["taskId"], json!(t2));
    assert_eq!(task["status"], json!("working"));
    assert_eq!(task["pollIntervalMs"], json!(2000));
    assert_eq!(task["ttlMs"], Value::Null);
    assert_eq!(
        task["statusMessage"],
        json!("The backend holds this call until a person approves or rejects it.")
    );
    let got = rpc(&host, &token, "tasks/get", json!({"taskId": t2}), true).await;
    assert_eq!(got["result"]["status"], json!("working"), "{got}");
    assert!(got["result"].get("result").is_none());
    // Another run's token, an unknown id: the same refusal.
    for (who, id) in [
        (&stranger, t2.as_str()),
        (&token, "appr-404"),
        (&token, "x".repeat(300).as_str()),
    ] {
        let refused = rpc(&host, who, "tasks/get", json!({"taskId": id}), true).await;
        assert_eq!(
            refused["error"],
            json!({"code": -32602, "message": "no such task for this token's run"}),
            "{refused}"
        );
    }
    // A person approves; the host resumes the held call with the
    // requester's credential and records the outcome.
    host.durable()
        .decide_approval(&t2, ApprovalDecision::Approve, "approver-1")
        .await
        .unwrap();
    let decided = rpc(&host, &token, "tasks/get", json!({"taskId": t2}), true).await;
    assert_eq!(decided["result"]["status"], json!("working"));
    assert_eq!(
        decided["result"]["statusMessage"],
        json!("Approved; the call is being resumed.")
    );
    // Decided: no longer withdrawn.
    let cancel = rpc(&host, &token, "tasks/cancel", json!({"taskId": t2}), true).await;
    assert_eq!(
        cancel["error"],
        json!({"code": -32602, "message": "this task cannot be cancelled: a person has decided it and the call is being resumed"}),
        "{cancel}"
    );
    host.durable()
        .resume_approval(
            &t2,
            &Resuming {
                receipt_names: "appr-2",
            },
            CallOptions::default(),
        )
        .await
        .unwrap();
    let done = rpc(&host, &token, "tasks/get", json!({"taskId": t2}), true).await;
    let expected_result = json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": "{\"devices\":[]}"}],
        "structuredContent": {"devices": []},
        "isError": false
    });
    assert_eq!(done["result"]["status"], json!("completed"), "{done}");
    assert_eq!(done["result"]["result"], expected_result);
    let cancel = rpc(&host, &token, "tasks/cancel", json!({"taskId": t2}), true).await;
    assert_eq!(
        cancel["error"],
        json!({"code": -32602, "message": "this task cannot be cancelled: it has completed"}),
        "{cancel}"
    );
    cancelling_withdraws_the_approval(&host, &token).await;

    // After a restart, from the store: the same result.
    drop(tab);
    drop(host);
    let again = host_on(&path).await;
    let after = rpc(&again, &token, "tasks/get", json!({"taskId": t2}), true).await;
    assert_eq!(after["result"]["status"], json!("completed"), "{after}");
    assert_eq!(after["result"]["result"], expected_result);
    drop(again);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// Cancels the task of a new held call (`appr-3`) on the 2026-07-28
/// lane: withdrawn, `cancelled`, not offered, refused by
/// `Host::decide_approval`, never resumed.
async fn cancelling_withdraws_the_approval(host: &Host, token: &str) {
    let call = json!({"name": "devices__list", "arguments": {}});
    let created = rpc(host, token, "tools/call", call, true).await;
    let t3 = approval_of(host, "appr-3").await;
    assert_eq!(created["result"]["taskId"], json!(t3), "{created}");
    let pending = host.durable().pending_approvals(10).await.unwrap();
    assert_eq!(
        pending
            .iter()
            .map(|a| a.backend_approval_id.as_str())
            .collect::<Vec<_>>(),
        ["appr-1", "appr-3"]
    );
    let cancel = rpc(host, token, "tasks/cancel", json!({"taskId": t3}), true).await;
    assert_eq!(
        cancel["result"],
        json!({"resultType": "complete"}),
        "{cancel}"
    );
    let got = rpc(host, token, "tasks/get", json!({"taskId": t3}), true).await;
    assert_eq!(got["result"]["status"], json!("cancelled"), "{got}");
    assert_eq!(
        got["result"]["statusMessage"],
        json!("Cancelled by the client: the host will not resume this call (the backend's own approval was not withdrawn).")
    );
    assert!(got["result"].get("result").is_none());
    let row = host.durable().store().approval(&t3).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Withdrawn);
    assert_eq!(row.decided_by, None);
    assert!(row.decided_at_ms.is_some());
    // The approver listing no longer offers it; deciding it is refused
    // before the backend is asked.
    let pending = host.durable().pending_approvals(10).await.unwrap();
    assert_eq!(
        pending
            .iter()
            .map(|a| a.backend_approval_id.as_str())
            .collect::<Vec<_>>(),
        ["appr-1"]
    );
    let endpoint = Endpoint {
        keeps: "approved",
        calls: std::sync::atomic::AtomicUsize::new(0),
    };
    let refused = host
        .decide_approval(
            &t3,
            ApprovalDecision::Approve,
            "approver-1",
            &endpoint,
            &Resuming {
                receipt_names: "appr-3",
            },
        )
        .await;
    assert!(
        matches!(refused, Err(DecideError::Withdrawn)),
        "{refused:?}"
    );
    assert_eq!(
        refused.unwrap_err().to_string(),
        "The agent withdrew this call; it can no longer be decided."
    );
    assert_eq!(endpoint.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(host
        .durable()
        .store()
        .approvals_awaiting_resume(10)
        .await
        .unwrap()
        .is_empty());
    let again = rpc(host, token, "tasks/cancel", json!({"taskId": t3}), true).await;
    assert_eq!(
        again["error"],
        json!({"code": -32602, "message": "this task cannot be cancelled: it was cancelled before"}),
        "{again}"
    );
}

/// The backend's decision endpoint: keeps `keeps` whatever is asked
/// (a decision taken before stands), and counts its calls.
struct Endpoint {
    keeps: &'static str,
    calls: std::sync::atomic::AtomicUsize,
}

impl ApprovalDecider for Endpoint {
    fn decide<'a>(
        &'a self,
        approval_id: &'a str,
        _: ApprovalDecision,
    ) -> BoxFuture<'a, Result<GatewayApproval, String>> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let approval = serde_json::from_value(json!({
            "id": approval_id, "capabilityId": "devices.list", "status": self.keeps,
            "reasons": [], "types": [], "requestedAt": "2026-12-05T00:00:00.000Z",
            "expiresAt": "2026-12-06T00:00:00.000Z"
        }))
        .unwrap();
        Box::pin(async move { Ok(approval) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_is_checked_sent_recorded_as_the_backend_kept_it_and_resumed_once() {
    let host = Host::builder(Database::Memory)
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .unwrap();
    let fx = Fixture::new();
    fx.registry
        .set_procedure_executor(Arc::new(Holding::default()));
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            fx.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        )
        .timer(Arc::new(TokioTimer)),
    );
    let _tab = InProcessTab::connect(&host, &session, "u1").await.unwrap();
    let run = host
        .start_page_run(session.identity(), ConsumerKind::Embedded)
        .await
        .unwrap();
    for n in 1..=2 {
        let held = host
            .mcp()
            .call_tool(&run, &format!("tc-{n}"), "devices__list", Some(json!({})))
            .await;
        assert!(held.is_error);
    }
    let t1 = approval_of(&host, "appr-1").await;
    let t2 = approval_of(&host, "appr-2").await;

    // The gateway's receipt names another approval: nothing is decided.
    let endpoint = Endpoint {
        keeps: "approved",
        calls: Default::default(),
    };
    let wrong = Resuming {
        receipt_names: "appr-9",
    };
    let refused = host
        .decide_approval(&t1, ApprovalDecision::Approve, "ann", &endpoint, &wrong)
        .await
        .unwrap_err();
    assert!(matches!(refused, DecideError::NotTheHeldCall), "{refused}");
    assert_eq!(
        refused.to_string(),
        "The gateway's approval belongs to another call than this one; it was not decided."
    );
    assert_eq!(endpoint.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    let row = host.store().approval(&t1).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Pending);

    // Asked to approve, the backend kept an earlier rejection: recorded as
    // rejected, resumed (the gateway completes it here), once.
    let rejecting = Endpoint {
        keeps: "rejected",
        calls: Default::default(),
    };
    let gateway = Resuming {
        receipt_names: "appr-1",
    };
    let outcome = host
        .decide_approval(&t1, ApprovalDecision::Approve, "ann", &rejecting, &gateway)
        .await
        .unwrap();
    assert_eq!(outcome.invocation_id(), row.invocation_id);
    let row = host.store().approval(&t1).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Rejected);
    assert_eq!(row.decided_by.as_deref(), Some("ann"));
    assert!(row.outcome.is_some());
    // Again: the recorded outcome, the endpoint not called again.
    let again = host
        .decide_approval(&t1, ApprovalDecision::Reject, "bob", &rejecting, &gateway)
        .await
        .unwrap();
    assert_eq!(again, outcome);
    assert_eq!(rejecting.calls.load(std::sync::atomic::Ordering::SeqCst), 1);

    // A backend that keeps the approval pending: not decidable.
    let pending = Endpoint {
        keeps: "expired",
        calls: Default::default(),
    };
    let gateway = Resuming {
        receipt_names: "appr-2",
    };
    let expired = host
        .decide_approval(&t2, ApprovalDecision::Approve, "ann", &pending, &gateway)
        .await
        .unwrap_err();
    assert_eq!(
        expired.to_string(),
        "The approval is expired at the backend; it can no longer be decided."
    );
    // Unknown ids and ids that break the id rule: the same answer.
    for id in ["appr-404", "bad id"] {
        let unknown = host
            .decide_approval(id, ApprovalDecision::Approve, "ann", &endpoint, &gateway)
            .await
            .unwrap_err();
        assert!(matches!(unknown, DecideError::UnknownApproval), "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_gets_the_held_calls_error_even_when_it_declares_tasks() {
    let host = Host::builder(Database::Memory)
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .unwrap();
    let fx = Fixture::new();
    fx.registry
        .set_procedure_executor(Arc::new(Holding::default()));
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            fx.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        )
        .timer(Arc::new(TokioTimer)),
    );
    let _tab = InProcessTab::connect(&host, &session, "u1").await.unwrap();
    let run = host
        .start_page_run(session.identity(), ConsumerKind::Embedded)
        .await
        .unwrap();
    let token = host.issue_token(&run).await.unwrap();
    let post = |body: Value, session: Option<&str>| {
        let mut request = http::Request::post("http://127.0.0.1/mcp")
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    };
    let call = |service: &mut surface_host::mcp::McpHttpService, request| {
        tower_service::Service::call(service, request)
    };
    let mut service = host.mcp_service();
    let initialized = call(
        &mut service,
        post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                "clientInfo": {"name": "t", "version": "1"}}}),
            None,
        ),
    )
    .await
    .unwrap();
    let session_id = initialized.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body = initialized.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body);
    // The legacy initialize does not offer the extension.
    assert!(!text.contains("io.modelcontextprotocol/tasks"), "{text}");
    call(
        &mut service,
        post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            Some(&session_id),
        ),
    )
    .await
    .unwrap();
    let answered = call(
        &mut service,
        post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "devices__list", "arguments": {}}}),
            Some(&session_id),
        ),
    )
    .await
    .unwrap();
    let mut body = answered.into_body();
    let mut text = String::new();
    while !text.contains("\"id\":2") {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("the call is answered within 10 s")
            .expect("a frame")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    assert!(!text.contains("\"resultType\":\"task\""), "{text}");
    assert!(text.contains("DOMAIN_APPROVAL_REQUIRED"), "{text}");
    legacy_tasks(&host, &mut service, &post_for(&token), &session_id).await;
}

/// Makes a request of a legacy session (or an `initialize` without one).
type Post<'a> = dyn Fn(Value, Option<&str>) -> http::Request<Full<Bytes>> + 'a;

/// A request of the legacy session `session` (or an `initialize` without
/// one).
fn post_for(token: &str) -> impl Fn(Value, Option<&str>) -> http::Request<Full<Bytes>> + '_ {
    move |body: Value, session: Option<&str>| {
        let mut request = http::Request::post("http://127.0.0.1/mcp")
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    }
}

/// The JSON-RPC answer to request `id` of a legacy session (a JSON body or
/// the `data:` line of an SSE stream), within 10 s.
async fn legacy_answer(
    service: &mut surface_host::mcp::McpHttpService,
    request: http::Request<Full<Bytes>>,
    id: u64,
) -> Value {
    let response = tower_service::Service::call(service, request)
        .await
        .unwrap();
    let bytes = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .expect("an answer within 10 s")
        .unwrap()
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let needle = format!("\"id\":{id}");
    let data = text
        .lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .rfind(|d| d.starts_with('{') && d.contains(&needle))
        .unwrap_or_else(|| panic!("no answer to {id}: {text}"))
        .to_string();
    serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The 2025-11-25 experimental tasks of a legacy session on a durable
/// host: the capability, a task-augmented call held (`appr-2`),
/// `tasks/get`, `tasks/result` waiting for the decision, `tasks/cancel`
/// refused once completed and withdrawing `appr-3`, a task-augmented call
/// answered at once, no `tasks/list`.
async fn legacy_tasks(
    host: &Host,
    service: &mut surface_host::mcp::McpHttpService,
    post: &Post<'_>,
    session: &str,
) {
    let initialized = legacy_answer(
        service,
        post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            None,
        ),
        1,
    )
    .await;
    assert_eq!(
        initialized["result"]["capabilities"]["tasks"],
        json!({"cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{initialized}"
    );
    let rpc = |id: u64, method: &str, params: Value| {
        post(
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            Some(session),
        )
    };
    let call = json!({"name": "devices__list", "arguments": {}, "task": {"ttl": 60000}});
    let created = legacy_answer(service, rpc(3, "tools/call", call.clone()), 3).await;
    let t2 = approval_of(host, "appr-2").await;
    let task = &created["result"]["task"];
    assert_eq!(task["taskId"], json!(t2), "{created}");
    assert_eq!(task["status"], json!("working"));
    assert_eq!(
        task["statusMessage"],
        json!("The backend holds this call until a person approves or rejects it.")
    );
    assert_eq!(task["ttl"], Value::Null);
    assert_eq!(task["pollInterval"], json!(2000));
    assert_eq!(task["createdAt"], task["lastUpdatedAt"]);
    assert_eq!(created["result"].as_object().unwrap().len(), 1);
    let got = legacy_answer(service, rpc(4, "tasks/get", json!({"taskId": t2})), 4).await;
    assert_eq!(got["result"], *task, "{got}");
    for id in ["appr-404", "appr-1x"] {
        let refused = legacy_answer(service, rpc(5, "tasks/get", json!({"taskId": id})), 5).await;
        assert_eq!(
            refused["error"],
            json!({"code": -32602, "message": "no such task for this token's run"})
        );
    }
    // tasks/result waits for the decision (polling the store every 500 ms).
    let waiting = tower_service::Service::call(
        &mut service.clone(),
        rpc(6, "tasks/result", json!({"taskId": t2})),
    );
    let waiting = tokio::spawn(async move {
        let response = waiting.await.unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!waiting.is_finished());
    let endpoint = Endpoint {
        keeps: "approved",
        calls: std::sync::atomic::AtomicUsize::new(0),
    };
    let resuming = Resuming {
        receipt_names: "appr-2",
    };
    host.decide_approval(
        &t2,
        ApprovalDecision::Approve,
        "approver-1",
        &endpoint,
        &resuming,
    )
    .await
    .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("tasks/result answers once the outcome is recorded")
        .unwrap();
    assert_eq!(
        result,
        json!({"jsonrpc": "2.0", "id": 6, "result": {
            "content": [{"type": "text", "text": "{\"devices\":[]}"}],
            "structuredContent": {"devices": []},
            "isError": false,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": t2}}
        }})
    );
    let done = legacy_answer(service, rpc(7, "tasks/get", json!({"taskId": t2})), 7).await;
    assert_eq!(done["result"]["status"], json!("completed"), "{done}");
    assert_eq!(
        done["result"]["statusMessage"],
        json!("A person decided and the call was resumed; the result is final.")
    );
    let cancel = legacy_answer(service, rpc(8, "tasks/cancel", json!({"taskId": t2})), 8).await;
    assert_eq!(
        cancel["error"],
        json!({"code": -32602, "message": "this task cannot be cancelled: it has completed"})
    );
    // A held call cancelled: withdrawn, its result refused.
    let created = legacy_answer(service, rpc(9, "tools/call", call), 9).await;
    let t3 = approval_of(host, "appr-3").await;
    assert_eq!(created["result"]["task"]["taskId"], json!(t3), "{created}");
    let cancelled =
        legacy_answer(service, rpc(10, "tasks/cancel", json!({"taskId": t3})), 10).await;
    assert_eq!(cancelled["result"]["taskId"], json!(t3), "{cancelled}");
    assert_eq!(cancelled["result"]["status"], json!("cancelled"));
    assert_eq!(
        cancelled["result"]["statusMessage"],
        json!("Cancelled by the client: the host will not resume this call (the backend's own approval was not withdrawn).")
    );
    let row = host.durable().store().approval(&t3).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Withdrawn);
    let no_result =
        legacy_answer(service, rpc(11, "tasks/result", json!({"taskId": t3})), 11).await;
    assert_eq!(
        no_result["error"],
        json!({"code": -32602, "message": "the task was cancelled; it has no result"})
    );
    // A task-augmented call answered at once: a completed task, in memory.
    let unknown = json!({"name": "no_such_tool", "arguments": {}, "task": {}});
    let created = legacy_answer(service, rpc(12, "tools/call", unknown), 12).await;
    let task = created["result"]["task"].clone();
    assert_eq!(task["status"], json!("completed"), "{created}");
    assert_eq!(task["ttl"], json!(600000));
    assert_eq!(
        task["statusMessage"],
        json!("The call was answered at once; the result is final.")
    );
    let id = task["taskId"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 5 + 32);
    let got = legacy_answer(service, rpc(13, "tasks/get", json!({"taskId": id})), 13).await;
    assert_eq!(got["result"], task);
    let result = legacy_answer(service, rpc(14, "tasks/result", json!({"taskId": id})), 14).await;
    assert_eq!(result["result"]["isError"], json!(true), "{result}");
    assert_eq!(
        result["result"]["_meta"],
        json!({"io.modelcontextprotocol/related-task": {"taskId": id}})
    );
    // With a progress token: an event stream, the call's progress (none
    // here: nothing waits in a page) then the response; one JSON-RPC
    // message per event. (The page's progress on such a call:
    // examples/devices-host/tests/mcp_turns.rs.)
    let streamed = json!({"name": "no_such_tool", "arguments": {}, "task": {},
        "_meta": {"progressToken": "p-16"}});
    let response = tower_service::Service::call(service, rpc(16, "tools/call", streamed))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let data = text
        .strip_prefix("event: message\ndata: ")
        .and_then(|t| t.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("one event: {text}"));
    let answered: Value = serde_json::from_str(data).unwrap();
    assert_eq!(answered["id"], json!(16), "{answered}");
    assert_eq!(answered["result"]["task"]["status"], json!("completed"));
    assert_eq!(answered["result"]["task"]["ttl"], json!(600000));
    let listed = legacy_answer(service, rpc(15, "tasks/list", json!({})), 15).await;
    assert_eq!(listed["error"]["code"], json!(-32601), "{listed}");
}

const PROBE_ENV: &str = "SURFACE_HOST_TASKS_PROBE";

/// The host process of the `kill -9` test: not a test of its own
/// (ignored). On the SQLite file `PROBE_ENV` names it starts a `Host` with
/// an in-process page whose backend holds every call, makes one call that
/// the backend holds for approval, prints `PROBE <token>` and waits to be
/// killed.
#[test]
#[ignore = "the kill -9 test's host process; run by it"]
fn tasks_probe() {
    let Ok(database) = std::env::var(PROBE_ENV) else {
        panic!("tasks_probe is started by the kill -9 test with {PROBE_ENV} set");
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let host = host_at(database.parse().unwrap()).await;
        let fx = Fixture::new();
        fx.registry
            .set_procedure_executor(Arc::new(Holding::default()));
        let session = BrowserSurfaceSession::new(
            BrowserSurfaceSessionOptions::new(
                fx.registry.clone(),
                identity(),
                AgentConsumer::embedded("u1"),
            )
            .timer(Arc::new(TokioTimer)),
        );
        let _tab = InProcessTab::connect(&host, &session, "u1").await.unwrap();
        let run = host
            .start_page_run(session.identity(), ConsumerKind::Embedded)
            .await
            .unwrap();
        let token = host.issue_token(&run).await.unwrap();
        let created = rpc(
            &host,
            &token,
            "tools/call",
            json!({"name": "devices__list", "arguments": {}}),
            true,
        )
        .await;
        let t1 = approval_of(&host, "appr-1").await;
        assert_eq!(created["result"]["taskId"], json!(t1), "{created}");
        println!("PROBE {token}");
        std::future::pending::<()>().await;
    });
}

async fn host_at(database: Database) -> Host {
    Host::builder(database)
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .unwrap()
}

#[test]
fn a_task_survives_a_kill_9_of_the_host_and_completes_once_in_the_next_process() {
    let path = database_file();
    killed_then_completed(&format!("sqlite:{}", path.display()));
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn on_postgresql_a_task_survives_a_kill_9_and_completes_once_in_the_next_process() {
    let test = "on_postgresql_a_task_survives_a_kill_9_and_completes_once_in_the_next_process";
    let Some(cluster) = pg::PgCluster::require(test) else {
        return;
    };
    killed_then_completed(&cluster.database("mcp_tasks"));
}

/// The kill -9 test on `database` (`sqlite:PATH` or `postgres://…`).
fn killed_then_completed(database: &str) {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "tasks_probe",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_ENV, database)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the host process starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            // libtest prints `test tasks_probe ... ` before it.
            if let Some((_, token)) = line.split_once("PROBE ") {
                let _ = tx.send(token.to_string());
                break;
            }
        }
    });
    let token = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the host process made the held call within 60 s");
    child.kill().expect("SIGKILL sent");
    assert_eq!(child.wait().unwrap().signal(), Some(9));

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        // The next process on the same database: the task is there,
        // working.
        let host = host_at(database.parse().unwrap()).await;
        let t1 = approval_of(&host, "appr-1").await;
        let got = rpc(&host, &token, "tasks/get", json!({"taskId": t1}), true).await;
        assert_eq!(got["result"]["status"], json!("working"), "{got}");
        // A person decides; the host resumes the held call once.
        let endpoint = Endpoint {
            keeps: "approved",
            calls: Default::default(),
        };
        let gateway = Resuming {
            receipt_names: "appr-1",
        };
        let outcome = host
            .decide_approval(&t1, ApprovalDecision::Approve, "ann", &endpoint, &gateway)
            .await
            .unwrap();
        assert!(outcome.error().is_none(), "{outcome:?}");
        let done = rpc(&host, &token, "tasks/get", json!({"taskId": t1}), true).await;
        assert_eq!(done["result"]["status"], json!("completed"), "{done}");
        assert_eq!(
            done["result"]["result"]["structuredContent"],
            json!({"devices": []})
        );
        // Once: deciding again returns the recorded outcome without the
        // endpoint.
        let again = host
            .decide_approval(&t1, ApprovalDecision::Approve, "ann", &endpoint, &gateway)
            .await
            .unwrap();
        assert_eq!(again, outcome);
        assert_eq!(endpoint.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    });
}

/// `tests/mcp-client`, with its packages (`npm ci` when `node_modules` is
/// missing), or `None` — a loud skip, or a failure under `CI=true` —
/// without Node.js or npm.
fn mcp_client_dir(test: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-client");
    let ci = matches!(std::env::var("CI").as_deref(), Ok("true" | "1"));
    let ran = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .current_dir(&dir)
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let ready = ran("node", &["--version"])
        && (dir.join("node_modules/@modelcontextprotocol/sdk").exists()
            || ran("npm", &["ci", "--no-audit", "--no-fund"]));
    if ready {
        return Some(dir);
    }
    assert!(
        !ci,
        "{test}: Node.js >= 20 and npm are required (CI=true): the official MCP client in tests/mcp-client"
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n!!! SKIPPED {test}: Node.js or npm is missing, so the official MCP \
         TypeScript client cannot run; with CI=true this is a failure.\n"
    );
    None
}

/// The official TypeScript SDK v1 client (1.32.2) on the legacy lane: it
/// lists the tools, calls `devices__list` as a task (`callToolStream` with
/// `task`), which the backend holds; once the approval is pending this test
/// decides it (`Host::decide_approval`: checked, sent, recorded, resumed);
/// the client polls `tasks/get` and reads the result with `tasks/result`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ts_sdk_v1_client_on_the_legacy_lane_reads_a_held_calls_task_result_after_the_decision() {
    let Some(dir) = mcp_client_dir("ts_sdk_v1_client_on_the_legacy_lane") else {
        return;
    };
    let path = database_file();
    let host = host_on(&path).await;
    let fx = Fixture::new();
    fx.registry
        .set_procedure_executor(Arc::new(Holding::default()));
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            fx.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        )
        .timer(Arc::new(TokioTimer)),
    );
    let _tab = InProcessTab::connect(&host, &session, "u1").await.unwrap();
    let run = host
        .start_page_run(session.identity(), ConsumerKind::Embedded)
        .await
        .unwrap();
    let token = host.issue_token(&run).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route_service("/mcp", host.mcp_service());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = tokio::process::Command::new("node")
        .arg(dir.join("scenario-tasks.mjs"))
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg(&token)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The person decides once the held call's approval is pending.
    let mut waited = 0;
    while host
        .durable()
        .pending_approvals(10)
        .await
        .unwrap()
        .is_empty()
    {
        waited += 1;
        assert!(waited < 300, "no approval within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let t1 = approval_of(&host, "appr-1").await;
    // Between the client's first `tasks/get` (at once) and its next (after
    // the task's 2,000 ms poll interval).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let endpoint = Endpoint {
        keeps: "approved",
        calls: std::sync::atomic::AtomicUsize::new(0),
    };
    let resuming = Resuming {
        receipt_names: "appr-1",
    };
    host.decide_approval(
        &t1,
        ApprovalDecision::Approve,
        "approver-1",
        &endpoint,
        &resuming,
    )
    .await
    .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), client.wait_with_output())
        .await
        .expect("the client ends within 60 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(report["sdkVersion"], json!("1.32.2"));
    assert_eq!(report["protocolVersion"], json!("2025-11-25"));
    assert_eq!(
        report["tasksCapability"],
        json!({"cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    assert!(report["tools"]
        .as_array()
        .unwrap()
        .contains(&json!("devices__list")));
    assert_eq!(
        report["messages"],
        json!([
            {"type": "taskCreated", "taskId": t1, "status": "working"},
            {"type": "taskStatus", "taskId": t1, "status": "working"},
            {"type": "taskStatus", "taskId": t1, "status": "completed"},
            {"type": "result", "result": {
                "content": [{"type": "text", "text": "{\"devices\":[]}"}],
                "structuredContent": {"devices": []},
                "isError": false,
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": t1}}
            }}
        ]),
        "{stderr}"
    );
    server.abort();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
