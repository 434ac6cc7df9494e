//! The axum host: routes, the session WebSocket and the scripted agent
//! turn. Every security check — the `Host` allow-list, the same-origin
//! rule, the session cookie, the `/rpc` proxy's confinement — is the
//! library's (`agent_surface::web`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_surface::approvals::{ApprovalsOptions, ApproverSignIn, HttpApprovalDecider};
use agent_surface::bridge::{HttpOrpcClient, OrpcCapabilityClient};
use agent_surface::host::replica::{CallEnd, Replica};
use agent_surface::host::DurableHost;
use agent_surface::host::{AgentHost, AgentRun, BrowserSurfaceOutcome, HostTool, ToolCallRequest};
use agent_surface::mcp::McpServer;
pub(crate) use agent_surface::web::{orpc_error, orpc_ok};
use agent_surface::web::{
    page_guard, PageOrigin, PageSessions, ProxyLimits, RpcProxy, SessionLimits, SessionToken,
};
pub use agent_surface::Database;
use agent_surface::Host;
use agent_surface::{AgentInvocationResult, ConsumerKind};

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use devices_api::{ApprovalStatus, RunStatus, SessionInfo, TurnReport, TurnStep};
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};

/// The page's HTML (the wasm-bindgen module is loaded from `/pkg/`).
pub const INDEX_HTML: &str = include_str!("../../devices-web/index.html");

/// The session cookie's name.
pub const COOKIE: &str = "agent_session";

/// Largest WebSocket message accepted from a page (an announcement carries
/// the whole snapshot): 1 MiB.
pub const MAX_SOCKET_MESSAGE: usize = 1 << 20;
/// Largest `/app/turn` body: 64 KiB (read after the session is checked).
pub const MAX_TURN_REQUEST: usize = 64 * 1024;
/// Runs whose page session `/app/run` remembers: 10,000 (past it the
/// table starts over; a forgotten run's page no longer sees its outcome,
/// which stays in the store).
pub const MAX_TRACKED_RUNS: usize = 10_000;
/// How long a scripted turn waits for the page to answer its call (the
/// user may be deciding): 10 minutes.
pub const TURN_WAIT: Duration = Duration::from_secs(600);

/// How the host runs.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Where to listen (`127.0.0.1:0` for an ephemeral port).
    pub bind: SocketAddr,
    /// The backend's RPC handler, e.g. `http://127.0.0.1:4000/rpc`.
    pub backend_rpc: String,
    /// The backend's capability gateway (`getApproval`, `resumeApproval`;
    /// `docs/bridges.md`, "Governed bridge"), e.g.
    /// `http://127.0.0.1:4000/gateway`.
    pub backend_gateway: String,
    /// The application's approval decision endpoint (`POST {approvalId,
    /// status}`, plain JSON), e.g. `http://127.0.0.1:4000/approvals/decide`.
    pub backend_decide: String,
    /// The backend credential the host adds for an authenticated page
    /// and uses on the gateway for its requester (`getApproval`,
    /// `resumeApproval`; the peer's `Bearer user-token`).
    pub backend_authorization: String,
    /// The credential of the approver, used only at the decision endpoint
    /// (the peer's `Bearer approver-token`).
    pub approver_authorization: String,
    /// What a person types on `/approver` to sign in as the approver.
    pub approver_secret: String,
    /// The durable store.
    pub database: Database,
    /// This host's owner name in the store, which is its replica name
    /// (`--replica`; stable across restarts, distinct per replica).
    pub owner: String,
    /// The built page (`devices_web.js`, `devices_web_bg.wasm`).
    pub page_dir: PathBuf,
}

impl HostConfig {
    /// A config for the backend at `backend_rpc` (`…/rpc`; the gateway is
    /// its sibling `…/gateway`, the decision endpoint `…/approvals/decide`)
    /// with the peer's credentials, a fresh random approver secret, an
    /// in-memory store and owner `devices-host`.
    pub fn new(bind: SocketAddr, backend_rpc: impl Into<String>, page_dir: PathBuf) -> Self {
        let backend_rpc = backend_rpc.into();
        let trimmed = backend_rpc.trim_end_matches('/');
        let base = trimmed.strip_suffix("/rpc").unwrap_or(trimmed).to_string();
        Self {
            bind,
            backend_gateway: format!("{base}/gateway"),
            backend_decide: format!("{base}/approvals/decide"),
            backend_rpc,
            backend_authorization: crate::PEER_USER_TOKEN.into(),
            approver_authorization: crate::PEER_APPROVER_TOKEN.into(),
            approver_secret: random_hex(12),
            database: Database::Memory,
            owner: "devices-host".into(),
            page_dir,
        }
    }
}

/// A session the host issued a cookie for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session id the page's announcements must carry.
    pub session_id: String,
    /// The user.
    pub user_id: String,
    /// The tab of the latest accepted announcement.
    pub tab_id: Option<String>,
    /// Its connection, while open.
    pub connection_id: Option<String>,
}

pub(crate) struct AppState {
    /// The library's host: store, durable host, replica, MCP server.
    pub(crate) agent: Host,
    pub(crate) host: Arc<DurableHost>,
    /// This replica (the tabs connected here, calls routed to the others).
    pub(crate) replica: Replica,
    /// The MCP endpoint (`/mcp`) on the replica.
    pub(crate) mcp: McpServer,
    pub(crate) config: HostConfig,
    /// Which page session started each run (for `/app/run`), at most
    /// [`MAX_TRACKED_RUNS`] (the oldest are forgotten).
    pub(crate) run_sessions: Mutex<HashMap<String, String>>,
    /// Page sessions by cookie.
    pub(crate) sessions: PageSessions<SessionRecord>,
    proxy: RpcProxy,
    pub(crate) reports: Arc<Reports>,
    pub(crate) counter: AtomicU64,
}

/// Every finished turn's report (and each resumed approval's), oldest
/// first.
#[derive(Default)]
pub(crate) struct Reports {
    list: Mutex<Vec<TurnReport>>,
    added: Notify,
}

impl Reports {
    fn push(&self, report: TurnReport) {
        lock(&self.list).push(report);
        self.added.notify_waiters();
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the OS random source");
    hex::encode(buf)
}

/// A running host.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    state: Arc<AppState>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// `http://ADDR/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The in-memory agent host (its runs, tools and live surfaces).
    pub fn host(&self) -> &AgentHost {
        self.state.host.host()
    }

    /// The durable host over the store (approvals, recorded calls).
    pub fn durable(&self) -> &Arc<DurableHost> {
        &self.state.host
    }

    /// This replica.
    pub fn replica(&self) -> &Replica {
        &self.state.replica
    }

    /// The MCP server (`/mcp`).
    pub fn mcp(&self) -> &McpServer {
        &self.state.mcp
    }

    /// Every session issued so far.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        self.state.sessions.all()
    }

    /// Every finished turn's report, oldest first.
    pub fn reports(&self) -> Vec<TurnReport> {
        lock(&self.state.reports.list).clone()
    }

    /// Waits until `count` turns have reported (or `timeout`).
    pub async fn wait_for_reports(&self, count: usize, timeout: Duration) -> Vec<TurnReport> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.state.reports.added.notified();
            let reports = self.reports();
            if reports.len() >= count {
                return reports;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.reports();
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the host on `config.bind` over its store: calls a previous run
/// of this host left outstanding are reported interrupted (never
/// replayed), pending approvals stay on the approver page.
///
/// # Errors
/// The store cannot be opened, the listener cannot bind.
pub async fn serve(config: HostConfig) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(config.bind).await?;
    let addr = listener.local_addr()?;
    let agent = Host::builder(config.database.clone())
        .known_build(devices_api::known_build())
        .replica(&config.owner)
        .mcp(crate::mcp::options(addr))
        .build()
        .await
        .map_err(std::io::Error::other)?;
    let recovery = agent.recovery().clone();
    for call in &recovery.interrupted {
        eprintln!(
            "devices-host: {} ({}) was outstanding when the host stopped: its outcome is unknown; it is not replayed",
            call.invocation_id, call.capability_id
        );
    }
    if !recovery.pending_approvals.is_empty() {
        eprintln!(
            "devices-host: {} approval(s) pending on /approver",
            recovery.pending_approvals.len()
        );
    }
    for route in agent.interrupted_routes() {
        eprintln!(
            "devices-host: {} (routed from {}) was running here when this replica stopped: interrupted",
            route.invocation_id, route.requester
        );
    }
    let authority = devices_api::api::authority();
    let rpc_proxy = RpcProxy::new(
        &config.backend_rpc,
        &config.backend_authorization,
        authority.procedures().map(|p| p.path.to_string()),
        ProxyLimits::default(),
    )
    .map_err(std::io::Error::other)?;
    let origin = PageOrigin::for_bind(addr);
    let reports = Arc::new(Reports::default());
    let approvals = agent.approvals(approvals_options(&config, origin.clone(), &reports)?);
    let state = Arc::new(AppState {
        host: agent.durable().clone(),
        replica: agent.replica().clone(),
        mcp: agent.mcp().clone(),
        agent,
        config,
        run_sessions: Mutex::default(),
        sessions: PageSessions::new(COOKIE, SessionLimits::default()),
        proxy: rpc_proxy,
        reports,
        counter: AtomicU64::new(1),
    });
    // Decided before the host stopped, not resumed yet: resume now.
    tokio::spawn({
        let approvals = approvals.clone();
        async move {
            for (id, resumed) in approvals.resume_recovered().await {
                match resumed {
                    Ok(()) => eprintln!("devices-host: resumed {id}, decided before the restart"),
                    Err(e) => eprintln!("devices-host: resuming {id} after the restart: {e}"),
                }
            }
        }
    });
    let app = Router::new()
        .route("/", get(index))
        .route("/pkg/{file}", get(page_file))
        .route("/app/session", post(session_info))
        .route("/app/turn", post(turn))
        .route("/app/run", post(run_status))
        .route("/app/mcp-run", post(crate::mcp::mcp_run))
        .route("/rpc/{*path}", any(proxy))
        .route("/agent/ws", get(crate::socket::socket))
        .with_state(state.clone())
        .merge(approvals.router())
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(origin),
            page_guard,
        ))
        // The MCP endpoint checks its own Host/Origin rules and a bearer
        // token; agents send no Origin, so it is outside the page guard.
        .route_service("/mcp", state.mcp.http_service());
    let task = tokio::spawn(agent_surface::server::serve(
        listener,
        app,
        agent_surface::server::ServeOptions::default(),
    ));
    Ok(Running { addr, state, task })
}

/// The approver page (`/approver`, the library's approvals service):
/// sign-in with the approver secret, decisions at the backend's decision
/// endpoint with the approver's credential, the gateway read and resumed
/// with the requester's; each resumed outcome reported to its run.
fn approvals_options(
    config: &HostConfig,
    origin: PageOrigin,
    reports: &Arc<Reports>,
) -> std::io::Result<ApprovalsOptions> {
    let decider = HttpApprovalDecider::new(
        config.backend_decide.clone(),
        config.approver_authorization.clone(),
    )
    .map_err(std::io::Error::other)?;
    let requester = OrpcCapabilityClient::new(
        HttpOrpcClient::new(config.backend_gateway.clone())
            .with_header("authorization", config.backend_authorization.clone()),
    );
    let sign_in = ApproverSignIn::secret(&config.approver_secret, "approver");
    let reports = reports.clone();
    Ok(
        ApprovalsOptions::new(origin, sign_in, Arc::new(decider), Arc::new(requester))
            .title("Approvals — devices console")
            .summary(resumed_summary)
            .on_resumed(move |approval, outcome| {
                let by = approval.decided_by.as_deref().unwrap_or("the approver");
                reports.push(TurnReport {
                    run_id: approval.run_id.clone(),
                    steps: vec![TurnStep {
                        action: format!(
                            "approval {} {} by {by}; resumed through the backend",
                            approval.approval_id,
                            approval.state.as_str()
                        ),
                        outcome: serde_json::to_value(outcome).unwrap_or(Value::Null),
                    }],
                    summary: resumed_summary(approval, outcome),
                });
            }),
    )
}

/// 401 for a request without a live page session.
pub(crate) fn no_session() -> Response {
    orpc_error(
        StatusCode::UNAUTHORIZED,
        "UNAUTHORIZED",
        "No session: reload the page.",
    )
}

/// The session of the request's cookie (checked before any body is read).
pub(crate) fn session_of(
    state: &AppState,
    headers: &HeaderMap,
) -> Option<(SessionToken, SessionRecord)> {
    let session = state.sessions.authenticate(headers)?;
    Some((session.token, session.data))
}

async fn index(State(state): State<Arc<AppState>>) -> Response {
    let record = SessionRecord {
        session_id: format!("sess-{}", random_hex(8)),
        user_id: "user-1".into(),
        tab_id: None,
        connection_id: None,
    };
    let issued = match state.sessions.issue(record) {
        Ok(issued) => issued,
        Err(full) => return (StatusCode::SERVICE_UNAVAILABLE, full.to_string()).into_response(),
    };
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, issued.set_cookie);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn page_file(State(state): State<Arc<AppState>>, Path(file): Path<String>) -> Response {
    let content_type = match file.as_str() {
        "devices_web.js" => "text/javascript",
        "devices_web_bg.wasm" => "application/wasm",
        _ => return (StatusCode::NOT_FOUND, "Not found").into_response(),
    };
    match tokio::fs::read(state.config.page_dir.join(&file)).await {
        Ok(bytes) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, "no-store"),
            ],
            bytes,
        )
            .into_response(),
        Err(_) => (
            StatusCode::NOT_FOUND,
            "the page is not built: run `cargo run -p devices-host` (it builds it)",
        )
            .into_response(),
    }
}

async fn session_info(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    match session_of(&state, &headers) {
        Some((_, record)) => orpc_ok(&SessionInfo {
            session_id: record.session_id,
            user_id: record.user_id,
            socket_path: "/agent/ws".into(),
        }),
        None => no_session(),
    }
}

async fn turn(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let Some((token, _)) = session_of(&state, &headers) else {
        return no_session();
    };
    let Ok(body) = axum::body::to_bytes(request.into_body(), MAX_TURN_REQUEST).await else {
        return orpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            "the turn request is too large",
        );
    };
    let script = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["json"]["script"].as_str().map(str::to_string));
    let path = match script.as_deref() {
        Some("disable") => "devices.disable",
        Some("purge") => "devices.purge",
        _ => {
            return orpc_error(
                StatusCode::BAD_REQUEST,
                "BAD_REQUEST",
                "script must be \"disable\" or \"purge\"",
            )
        }
    };
    // The turn runs on its own: a page that goes away does not cancel it.
    let (tx, rx) = oneshot::channel();
    tokio::spawn({
        let state = state.clone();
        async move {
            let report = run_turn(&state, &token, path).await;
            state.reports.push(report.clone());
            let _ = tx.send(report);
        }
    });
    match rx.await {
        Ok(report) => orpc_ok(&report),
        Err(_) => orpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_SERVER_ERROR",
            "The turn failed.",
        ),
    }
}

/// The scripted agent turn: discover → call `path` with no ids → wait
/// while the user decides in the page → report.
async fn run_turn(state: &Arc<AppState>, token: &SessionToken, path: &str) -> TurnReport {
    let n = state.counter.fetch_add(1, Ordering::SeqCst);
    let run_id = format!("run-{n}");
    let mut steps = Vec::new();
    let report = |steps: Vec<TurnStep>, summary: String| TurnReport {
        run_id: run_id.clone(),
        steps,
        summary,
    };
    let Some(record) = state.sessions.get(token) else {
        return report(steps, "Not run: the session is gone.".into());
    };
    let Some(tab_id) = record
        .tab_id
        .clone()
        .filter(|_| record.connection_id.is_some())
    else {
        return report(
            steps,
            "Not run: this page has no live agent session (is it connected?).".into(),
        );
    };
    if let Err(e) = state
        .host
        .start_run(AgentRun {
            run_id: run_id.clone(),
            session_id: record.session_id.clone(),
            tab_id: Some(tab_id),
            kind: ConsumerKind::Embedded,
        })
        .await
    {
        return report(steps, format!("Not run: {e}."));
    }
    {
        let mut runs = lock(&state.run_sessions);
        if runs.len() >= MAX_TRACKED_RUNS {
            runs.clear();
        }
        runs.insert(run_id.clone(), record.session_id.clone());
    }
    let tools = state.host.host().tools_for_run(&run_id);
    steps.push(TurnStep {
        action: "discover".into(),
        outcome: Value::Array(tools.iter().map(describe_tool).collect()),
    });
    let capability = format!("domain:{path}");
    if !tools.iter().any(|t| t.capability_id() == capability) {
        end_run(state, &run_id).await;
        return report(steps, format!("Not run: the page does not offer {path}."));
    }
    let invocation_id = format!("{run_id}-{}", random_hex(8));
    let request = ToolCallRequest::new(
        &run_id,
        "tool-call-1",
        &invocation_id,
        &capability,
        json!({}),
    );
    steps.push(TurnStep {
        action: format!("call {path} with no ids"),
        outcome: json!({"input": {}, "invocationId": invocation_id}),
    });
    let end = tokio::time::timeout(TURN_WAIT, state.replica.call(request, None)).await;
    end_run(state, &run_id).await;
    let (outcome, summary) = match end {
        Ok(CallEnd::Outcome { outcome }) => {
            let summary = summarize(path, &outcome);
            (serde_json::to_value(&outcome).unwrap_or(Value::Null), summary)
        }
        Ok(CallEnd::Refused { reason }) => {
            return report(steps, format!("Not run: the call was refused ({reason:?})."));
        }
        Ok(CallEnd::Interrupted) => (
            json!({"interrupted": true}),
            format!(
                "Interrupted: the tab went away while {path} was pending; its outcome is unknown, reconcile before retrying."
            ),
        ),
        Ok(CallEnd::TimedOut) | Err(_) => (
            json!({"timedOut": true}),
            format!("No answer: the page did not answer {path} within {} minutes.", TURN_WAIT.as_secs() / 60),
        ),
    };
    steps.push(TurnStep {
        action: "outcome".into(),
        outcome,
    });
    report(steps, summary)
}

/// Ends a run (its approvals stay observable through `/app/run`).
async fn end_run(state: &AppState, run_id: &str) {
    if let Err(e) = state.host.end_run(run_id).await {
        eprintln!("devices-host: ending {run_id}: {e}");
    }
}

/// `POST /app/run` `{"json":{"runId"}}`: the approvals of a run this page
/// session started, with their outcome once resumed.
async fn run_status(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let Some((_, record)) = session_of(&state, &headers) else {
        return no_session();
    };
    let Ok(body) = axum::body::to_bytes(request.into_body(), MAX_TURN_REQUEST).await else {
        return orpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            "the request is too large",
        );
    };
    let run_id = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["json"]["runId"].as_str().map(str::to_string));
    let Some(run_id) = run_id else {
        return orpc_error(StatusCode::BAD_REQUEST, "BAD_REQUEST", "runId is required");
    };
    let owned = lock(&state.run_sessions).get(&run_id) == Some(&record.session_id);
    if !owned {
        return orpc_error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "No such run in this session.",
        );
    }
    match state.host.run_approvals(&run_id, 100).await {
        Ok(approvals) => orpc_ok(&RunStatus {
            run_id,
            approvals: approvals.iter().map(approval_status).collect(),
        }),
        Err(e) => {
            eprintln!("devices-host: reading the approvals of {run_id}: {e}");
            orpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "The host store cannot be read right now.",
            )
        }
    }
}

/// A stored approval as the page sees it.
pub(crate) fn approval_status(approval: &agent_surface::store::ApprovalRecord) -> ApprovalStatus {
    let outcome = approval
        .outcome
        .as_deref()
        .and_then(|o| serde_json::from_str::<AgentInvocationResult>(o).ok());
    ApprovalStatus {
        approval_id: approval.approval_id.clone(),
        state: approval.state.as_str().to_string(),
        summary: outcome.as_ref().map(|o| resumed_summary(approval, o)),
        outcome: outcome.and_then(|o| serde_json::to_value(o).ok()),
    }
}

/// One line for a person: what the resumed call did.
pub(crate) fn resumed_summary(
    approval: &agent_surface::store::ApprovalRecord,
    outcome: &AgentInvocationResult,
) -> String {
    let by = approval.decided_by.as_deref().unwrap_or("the approver");
    match outcome {
        AgentInvocationResult::Ok { output, .. } => {
            let ids: Vec<&str> = output
                .as_ref()
                .and_then(|o| o["purged"].as_array())
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "Approved by {by} and resumed: the server purged {}.",
                if ids.is_empty() {
                    "nothing".to_string()
                } else {
                    ids.join(", ")
                }
            )
        }
        AgentInvocationResult::Error { error, .. } => {
            if approval.state == agent_surface::store::ApprovalState::Rejected {
                format!("Rejected by {by}: nothing was purged.")
            } else {
                format!("Approved by {by}, but not done: {}.", error.code.as_str())
            }
        }
    }
}

fn describe_tool(tool: &HostTool) -> Value {
    match tool {
        HostTool::Browser(b) => {
            let references: Vec<Value> = b
                .references
                .iter()
                .map(|r| match r {
                    agent_surface::host::BrowserReference::Procedure(p) => json!({
                        "registrationId": p.registration_id,
                        "available": p.available,
                        "boundFields": p.bound_fields.iter().map(|f| json!({"path": f.path, "locked": f.locked})).collect::<Vec<_>>(),
                        "confirmation": p.confirmation,
                    }),
                    agent_surface::host::BrowserReference::View { component, capability } => json!({
                        "registrationId": component.registration_id,
                        "available": capability.available(),
                    }),
                })
                .collect();
            json!({"capabilityId": b.capability_id, "presentation": "browser", "references": references})
        }
        HostTool::Server(s) => json!({"capabilityId": s.capability_id, "presentation": "server"}),
    }
}

/// One line for a person: what the call's outcome means.
fn summarize(path: &str, outcome: &BrowserSurfaceOutcome) -> String {
    match outcome {
        BrowserSurfaceOutcome::Invocation(AgentInvocationResult::Ok { output, .. }) => {
            let ids: Vec<&str> = output
                .as_ref()
                .and_then(|o| o["disabled"].as_array())
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if path == "devices.disable" {
                if ids.is_empty() {
                    "Success: devices.disable ran; nothing needed disabling.".to_string()
                } else {
                    format!(
                        "Success: devices.disable ran; the server disabled {}.",
                        ids.join(", ")
                    )
                }
            } else {
                format!("Success: {path} ran.")
            }
        }
        BrowserSurfaceOutcome::Invocation(result) => match result.error() {
            Some(error) if error.code == agent_surface::ErrorCode::DomainApprovalRequired => {
                let id = error
                    .details
                    .get("approvalId")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                format!(
                    "Waiting for approval {id}: the server holds {path} until a person decides on the approver page; nothing was done yet."
                )
            }
            Some(error) => {
                // `details.reason` names the refusal (`denied`, `mismatch`,
                // `surface-version-mismatch`), unless the message already
                // says it (an unavailable capability's reason is the app's
                // text, which the message quotes).
                let reason = error
                    .details
                    .get("reason")
                    .and_then(Value::as_str)
                    .filter(|r| !error.message.contains(r))
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                format!(
                    "Not done: {}{reason} — {}",
                    error.code.as_str(),
                    error.message
                )
            }
            None => format!("Finished: {path}."),
        },
        BrowserSurfaceOutcome::Rejected(r) => {
            format!("Not run: the tab refused the call ({}).", r.reason.as_str())
        }
    }
}

async fn proxy(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    if session_of(&state, &headers).is_none() {
        return no_session();
    }
    let raw = request
        .uri()
        .path()
        .strip_prefix("/rpc/")
        .unwrap_or("")
        .to_string();
    state.proxy.forward(&raw, request).await
}
