//! The experimental tasks of revision 2025-11-25 on the legacy lane (MCP
//! sessions; docs/agents.md, "Approvals as MCP tasks"). rmcp models only
//! the 2026-07-28 extension, so the HTTP endpoint answers these requests
//! itself, before rmcp, on a durable host:
//!
//! - `tools/call` with `params.task` (`{ttl?}`): the call runs as any
//!   call. With a `progressToken` in `params._meta` the answer is an event
//!   stream (`text/event-stream`): the call's `notifications/progress`
//!   (the page waiting for the user's confirmation, the user confirmed)
//!   and then its response; without one, one JSON body. A call the
//!   backend holds for approval answers `{task}` whose
//!   `taskId` is the approval id (the store-backed task of
//!   [`super::get_task`]); any other answer is a task already `completed`,
//!   kept in this process's memory for [`ANSWERED_TASK_TTL_MS`] (at most
//!   [`MAX_ANSWERED_TASKS`] per server, the oldest forgotten first).
//! - `tasks/get` → the `Task`; `tasks/result` → the `CallToolResult` of a
//!   completed task (waiting at most [`RESULT_WAIT`] for a working one);
//!   `tasks/cancel` → the `Task`, `cancelled` ([`super::cancel_task`]).
//! - `tasks/list` is not offered (the capability's optional `list` is not
//!   declared): rmcp answers it `-32601`.
//!
//! Shapes (2025-11-25 schema): `Task` is `{taskId, status, statusMessage,
//! createdAt, lastUpdatedAt, ttl, pollInterval}` (`ttl` in ms, `null` for
//! the store-backed tasks: they stay until the store is pruned).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body::Frame;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use rmcp::model::ErrorData;
use serde_json::{json, Map, Value};
use surface_runtime::clock::iso_8601;
use surface_store::ApprovalRecord;

use crate::mcp::{rmcp_model, McpProgress, McpServer, ProgressSink, Shared};

/// How long `tasks/result` waits for a working task to end before it
/// answers `-32603` (ask again): 50 s, under the 60 s request timeout MCP
/// clients commonly use. The store is read every [`RESULT_POLL`].
pub const RESULT_WAIT: Duration = Duration::from_secs(50);

/// How often a waiting `tasks/result` reads the store: 500 ms.
pub const RESULT_POLL: Duration = Duration::from_millis(500);

/// How long the task of a call answered at once (not held) is kept:
/// 600,000 ms (10 minutes), in this process's memory only.
pub const ANSWERED_TASK_TTL_MS: u64 = 600_000;

/// The most tasks of calls answered at once one server keeps: 256 (the
/// oldest is forgotten first).
pub const MAX_ANSWERED_TASKS: usize = 256;

/// The key of the related task in a result's `_meta` (2025-11-25).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A task-augmented call answered at once: its result, in memory.
#[derive(Debug)]
pub(crate) struct AnsweredTask {
    run_id: String,
    task_id: String,
    at_ms: u64,
    result: Map<String, Value>,
}

/// The answered tasks of one server, oldest first.
pub(crate) type AnsweredTasks = VecDeque<AnsweredTask>;

/// One JSON-RPC request of a legacy session this module answers.
struct Request {
    id: Value,
    method: String,
    params: Map<String, Value>,
}

/// Whether the server's capabilities in a legacy `initialize` name
/// task-augmented `tools/call` and `tasks/cancel` (2025-11-25).
pub(crate) fn capability() -> Value {
    json!({"cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// The HTTP answer to `body` (one request of a legacy session on a
/// durable host), or `None` when rmcp answers it (any other method, a
/// `tools/call` without `params.task`, a notification, a response).
pub(crate) async fn answer(shared: &Arc<Shared>, run: &str, body: &[u8]) -> Option<HttpResponse> {
    let request = parse(body)?;
    let answered = match request.method.as_str() {
        "tools/call" if request.params.get("task").is_some_and(Value::is_object) => {
            if let Some(token) = progress_token(&request.params) {
                return Some(streamed_call(
                    shared.clone(),
                    run.to_string(),
                    request,
                    token,
                ));
            }
            call(shared, run, &request, None).await
        }
        "tasks/get" => get(shared, run, &request.params).await,
        "tasks/result" => result(shared, run, &request.params).await,
        "tasks/cancel" => cancel(shared, run, &request.params).await,
        _ => return None,
    };
    Some(json_response(&response(request.id, answered)))
}

fn response(id: Value, answered: Result<Value, ErrorData>) -> Value {
    match answered {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

/// An HTTP response of the MCP endpoint.
pub(crate) type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// A JSON-RPC message as an `application/json` body (**200**).
fn json_response(message: &Value) -> HttpResponse {
    let body = serde_json::to_vec(message).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The request's `params._meta.progressToken` (a string or a number).
fn progress_token(params: &Map<String, Value>) -> Option<Value> {
    let token = params.get("_meta")?.get("progressToken")?;
    (token.is_string() || token.is_number()).then(|| token.clone())
}

/// A task-augmented `tools/call` answered as an event stream: each
/// progress of the call as a `notifications/progress` event, then the
/// response. The call runs in its own task, aborted when the client goes
/// away before the response (as a call answered in one JSON body is
/// dropped with its connection).
fn streamed_call(shared: Arc<Shared>, run: String, request: Request, token: Value) -> HttpResponse {
    let (events, received) = tokio::sync::mpsc::channel::<Bytes>(16);
    let task = tokio::spawn(async move {
        let progress = events.clone();
        let report = move |p: McpProgress| -> surface_runtime::sync::BoxFuture<'static, ()> {
            let progress = progress.clone();
            let note = json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": p.progress, "message": p.message},
            });
            Box::pin(async move {
                // A client gone away: the call is aborted with the stream.
                let _ = progress.send(sse_event(&note)).await;
            })
        };
        let answered = call(&shared, &run, &request, Some(&report)).await;
        let _ = events
            .send(sse_event(&response(request.id, answered)))
            .await;
    });
    let body = EventStream {
        received,
        _call: AbortOnDrop(task),
    };
    let mut response = Response::new(body.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    response
}

/// One server-sent event of a JSON-RPC message.
fn sse_event(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// Aborts the streamed call when its response body is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The body of a streamed call: its events as they come.
struct EventStream {
    received: tokio::sync::mpsc::Receiver<Bytes>,
    _call: AbortOnDrop,
}

impl http_body::Body for EventStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.received
            .poll_recv(cx)
            .map(|event| event.map(|bytes| Ok(Frame::data(bytes))))
    }
}

fn parse(body: &[u8]) -> Option<Request> {
    let Value::Object(mut message) = serde_json::from_slice(body).ok()? else {
        return None;
    };
    let id = message
        .remove("id")
        .filter(|id| id.is_string() || id.is_number())?;
    let method = message.get("method")?.as_str()?.to_string();
    let params = match message.remove("params") {
        Some(Value::Object(params)) => params,
        _ => Map::new(),
    };
    Some(Request { id, method, params })
}

fn now_ms() -> u64 {
    surface_runtime::Clock::now_ms(&surface_runtime::SystemClock)
}

/// A task-augmented `tools/call`: `{task}`.
async fn call(
    shared: &Arc<Shared>,
    run: &str,
    request: &Request,
    progress: Option<ProgressSink<'_>>,
) -> Result<Value, ErrorData> {
    let Some(name) = request.params.get("name").and_then(Value::as_str) else {
        return Err(ErrorData::invalid_params("tools/call needs a name", None));
    };
    let tool_call_id = match &request.id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let arguments = request.params.get("arguments").cloned();
    let server = McpServer {
        shared: shared.clone(),
    };
    let (answer, result) = server
        .call_tool_answered(run, &tool_call_id, name, arguments, progress)
        .await;
    if let Some(result) = &result {
        if let Some(record) = super::held_approval(shared.replica(), run, result).await {
            return Ok(json!({"task": task(&record)}));
        }
    }
    let mut call = rmcp_model::call_tool_result(answer);
    call.result_type = None;
    let Ok(Value::Object(result)) = serde_json::to_value(call) else {
        return Err(ErrorData::internal_error(
            "the result does not serialize",
            None,
        ));
    };
    let answered = AnsweredTask {
        run_id: run.to_string(),
        task_id: format!("task-{}", random_hex()),
        at_ms: now_ms(),
        result,
    };
    let created = answered_task(&answered);
    let mut state = shared.lock();
    forget_expired(&mut state.answered_tasks, answered.at_ms);
    if state.answered_tasks.len() >= MAX_ANSWERED_TASKS {
        state.answered_tasks.pop_front();
    }
    state.answered_tasks.push_back(answered);
    Ok(json!({"task": created}))
}

fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Unique within the process, which is all an answered task needs.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        bytes[..8].copy_from_slice(&n.to_be_bytes());
    }
    hex::encode(bytes)
}

fn forget_expired(tasks: &mut AnsweredTasks, now: u64) {
    while tasks
        .front()
        .is_some_and(|t| now.saturating_sub(t.at_ms) > ANSWERED_TASK_TTL_MS)
    {
        tasks.pop_front();
    }
}

/// The 2025-11-25 `Task` of an approval (the 2026-07-28 fields renamed:
/// `ttlMs` → `ttl`, `pollIntervalMs` → `pollInterval`).
fn task(record: &ApprovalRecord) -> Value {
    let task = super::task(record);
    json!({
        "taskId": task.task_id,
        "status": task.status,
        "statusMessage": task.status_message,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttl": task.ttl_ms,
        "pollInterval": task.poll_interval_ms,
    })
}

fn answered_task(answered: &AnsweredTask) -> Value {
    let at = iso_8601(answered.at_ms);
    json!({
        "taskId": answered.task_id,
        "status": "completed",
        "statusMessage": "The call was answered at once; the result is final.",
        "createdAt": at,
        "lastUpdatedAt": at,
        "ttl": ANSWERED_TASK_TTL_MS,
        "pollInterval": super::TASK_POLL_INTERVAL_MS,
    })
}

fn task_id(params: &Map<String, Value>) -> Result<&str, ErrorData> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params("taskId is required", None))
}

/// The answered task `task_id` of `run`, if this process keeps it.
fn find_answered(shared: &Shared, run: &str, task_id: &str) -> Option<(Value, Value)> {
    let mut state = shared.lock();
    forget_expired(&mut state.answered_tasks, now_ms());
    let answered = state
        .answered_tasks
        .iter()
        .find(|t| t.task_id == task_id && t.run_id == run)?;
    Some((
        answered_task(answered),
        related(answered.result.clone(), task_id),
    ))
}

fn related(mut result: Map<String, Value>, task_id: &str) -> Value {
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(RELATED_TASK.to_string(), json!({"taskId": task_id}));
    }
    Value::Object(result)
}

async fn get(shared: &Shared, run: &str, params: &Map<String, Value>) -> Result<Value, ErrorData> {
    let id = task_id(params)?;
    if let Some((task, _)) = find_answered(shared, run, id) {
        return Ok(task);
    }
    let record = super::approval_of_run(shared.replica(), run, id).await?;
    Ok(task(&record))
}

/// `tasks/result`: the `CallToolResult` with `_meta` naming the task.
///
/// # Errors
/// As `tasks/get`; `-32602` for a cancelled task (it has no result);
/// `-32603` for a task still working after [`RESULT_WAIT`].
async fn result(
    shared: &Shared,
    run: &str,
    params: &Map<String, Value>,
) -> Result<Value, ErrorData> {
    let id = task_id(params)?;
    if let Some((_, result)) = find_answered(shared, run, id) {
        return Ok(result);
    }
    let replica = shared.replica();
    let deadline = tokio::time::Instant::now() + RESULT_WAIT;
    loop {
        let record = super::approval_of_run(replica, run, id).await?;
        if let Some(outcome) = &record.outcome {
            let mut result = super::completed_result(outcome)?;
            result.remove("resultType");
            return Ok(related(result, id));
        }
        if record.state == surface_store::ApprovalState::Withdrawn {
            return Err(ErrorData::invalid_params(
                "the task was cancelled; it has no result",
                None,
            ));
        }
        if tokio::time::Instant::now() + RESULT_POLL > deadline {
            return Err(ErrorData::internal_error(
                "the task is still working (nobody has decided yet); call tasks/result again",
                None,
            ));
        }
        tokio::time::sleep(RESULT_POLL).await;
    }
}

async fn cancel(
    shared: &Shared,
    run: &str,
    params: &Map<String, Value>,
) -> Result<Value, ErrorData> {
    let id = task_id(params)?;
    if find_answered(shared, run, id).is_some() {
        return Err(ErrorData::invalid_params(
            "this task cannot be cancelled: it has completed",
            None,
        ));
    }
    let record = super::cancel_task(shared.replica(), run, id).await?;
    Ok(task(&record))
}
