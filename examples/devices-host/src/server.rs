//! The axum host: the library's page service (the session cookie, the
//! page's socket, its runs and their approvals, the MCP run and token, the
//! `/rpc` proxy) and approvals service, plus this application's own
//! routes: the built page's files, the scripted agent turn and, when
//! configured, the AG-UI agent of the page's chat panel (`crate::agent`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_surface::approvals::{ApprovalsOptions, ApproverSignIn, HttpApprovalDecider};
use agent_surface::bridge::{HttpOrpcClient, OrpcCapabilityClient};
use agent_surface::host::replica::CallEnd;
use agent_surface::host::{
    AgentHost, BrowserReference, BrowserSurfaceOutcome, HostTool, PagesOptions, PagesService,
    Served, ToolCallRequest,
};
pub use agent_surface::host::{PageRecord, PAGE_COOKIE as COOKIE};
use agent_surface::mcp::McpServerOptions;
use agent_surface::store::{ApprovalRecord, ApprovalState};
use agent_surface::web::{orpc_error, orpc_ok, page_guard, PageOrigin, ProxyLimits, RpcProxy};
pub use agent_surface::Database;
use agent_surface::{AgentInvocationResult, ConsumerKind, ErrorCode, Host};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use devices_api::{TurnReport, TurnStep};

use crate::agent::{AgentProxy, AGENT_PATH, MAX_RUN_REQUEST_BYTES};
use crate::{page, PEER_APPROVER_TOKEN, PEER_USER_TOKEN};
use serde_json::{json, Value};
use tokio::sync::watch;

/// The page's HTML (the wasm-bindgen module is loaded from `/pkg/`).
pub const INDEX_HTML: &str = include_str!("../../devices-web/index.html");
/// Turn reports kept ([`Running::reports`]): the latest 100; past it the
/// oldest is dropped (a page posting `/app/turn` in a loop, each answered
/// "Not run", costs no memory beyond them).
pub const MAX_KEPT_REPORTS: usize = 100;

/// Keeps `report`, dropping the oldest past [`MAX_KEPT_REPORTS`].
fn keep(reports: &watch::Sender<Vec<TurnReport>>, report: TurnReport) {
    reports.send_modify(|r| {
        r.push(report);
        if r.len() > MAX_KEPT_REPORTS {
            let excess = r.len() - MAX_KEPT_REPORTS;
            r.drain(..excess);
        }
    });
}

/// How long a scripted turn waits for the page to answer its call (the
/// user may be deciding): 10 minutes.
pub const TURN_WAIT: Duration = Duration::from_secs(600);

/// How the host runs.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Where to listen (`127.0.0.1:0` for an ephemeral port).
    pub bind: SocketAddr,
    /// The backend's RPC handler, e.g. `http://127.0.0.1:4000/rpc`; its
    /// capability gateway (`getApproval`, `resumeApproval`) is the sibling
    /// `…/gateway`, its decision endpoint `…/approvals/decide`.
    pub backend_rpc: String,
    /// What a person types on `/approver` to sign in as the approver.
    pub approver_secret: String,
    /// The durable store.
    pub database: Database,
    /// This host's replica name in the store (`--replica`).
    pub owner: String,
    /// The built page ([`page::PAGE_FILES`]).
    pub page_dir: PathBuf,
    /// The AG-UI agent endpoint of the page's chat panel (e.g.
    /// `http://127.0.0.1:4111/agent`, [`crate::peer::Peer::agent_url`]),
    /// which the host serves to the page at `/app/agent`; `None` (the
    /// default): the page shows no chat panel.
    pub ag_ui: Option<String>,
}

impl HostConfig {
    /// A config for the backend at `backend_rpc` with a fresh random
    /// approver secret (24 hex digits), an in-memory store and owner
    /// `devices-host`.
    pub fn new(bind: SocketAddr, backend_rpc: impl Into<String>, page_dir: PathBuf) -> Self {
        let mut secret = [0u8; 12];
        getrandom::fill(&mut secret).expect("the OS random source");
        Self {
            bind,
            backend_rpc: backend_rpc.into(),
            approver_secret: hex::encode(secret),
            database: Database::Memory,
            owner: "devices-host".into(),
            page_dir,
            ag_ui: None,
        }
    }
}

struct App {
    host: Host,
    pages: PagesService,
    /// The latest finished turns' reports (and each resumed approval's),
    /// oldest first, at most [`MAX_KEPT_REPORTS`].
    reports: watch::Sender<Vec<TurnReport>>,
    /// The chat panel's AG-UI agent, if configured.
    agent: Option<AgentProxy>,
}

/// A running host.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    app: Arc<App>,
    /// Stops the server when dropped.
    _served: Served,
}

impl Running {
    /// `http://ADDR/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The in-memory agent host (its runs, tools and live surfaces).
    pub fn host(&self) -> &AgentHost {
        self.app.host.durable().host()
    }

    /// Every page session issued so far.
    pub fn sessions(&self) -> Vec<PageRecord> {
        self.app.pages.sessions()
    }

    /// The latest [`MAX_KEPT_REPORTS`] turn reports, oldest first.
    pub fn reports(&self) -> Vec<TurnReport> {
        self.app.reports.borrow().clone()
    }

    /// Waits until `count` turns have reported (or `timeout`).
    pub async fn wait_for_reports(&self, count: usize, timeout: Duration) -> Vec<TurnReport> {
        let mut reports = self.app.reports.subscribe();
        let _ = tokio::time::timeout(timeout, reports.wait_for(|r| r.len() >= count)).await;
        self.reports()
    }
}

/// The library's host (its store, durable host, replica, MCP server).
impl std::ops::Deref for Running {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.app.host
    }
}

/// Starts the host on `config.bind` over its store: calls a previous run
/// of this host left outstanding are reported interrupted (never
/// replayed), approvals decided before a restart are resumed, pending
/// ones stay on the approver page.
///
/// # Errors
/// The store cannot be opened, the listener cannot bind.
pub async fn serve(config: HostConfig) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(config.bind).await?;
    let addr = listener.local_addr()?;
    let host = Host::builder(config.database.clone())
        .known_build(devices_api::known_build())
        .replica(&config.owner)
        .mcp(McpServerOptions {
            server_name: "devices-host".into(),
            ..McpServerOptions::default()
        })
        .build()
        .await
        .map_err(std::io::Error::other)?;
    for call in &host.recovery().interrupted {
        tracing::warn!(
            invocation_id = ?call.invocation_id,
            "outstanding when the host stopped: interrupted, not replayed"
        );
    }
    let origin = PageOrigin::for_bind(addr);
    let proxy = RpcProxy::new(
        &config.backend_rpc,
        PEER_USER_TOKEN,
        devices_api::api::authority()
            .procedures()
            .map(|p| p.path.to_string()),
        ProxyLimits::default(),
    )
    .map_err(std::io::Error::other)?;
    let pages = host.pages(
        PagesOptions::new(origin.clone(), INDEX_HTML, |_: &HeaderMap| {
            Some("user-1".to_string())
        })
        .summary(resumed_summary)
        .rpc_proxy(proxy)
        .files("/pkg", &config.page_dir, &page::PAGE_FILES),
    );
    let app = Arc::new(App {
        host: host.clone(),
        pages: pages.clone(),
        reports: watch::Sender::new(Vec::new()),
        agent: config.ag_ui.as_deref().map(AgentProxy::new).transpose()?,
    });
    let approvals = host.approvals(approvals_options(
        &config,
        origin.clone(),
        app.reports.clone(),
    )?);
    // Decided before the host stopped, not resumed yet: resume now.
    tokio::spawn({
        let approvals = approvals.clone();
        async move {
            for (id, resumed) in approvals.resume_recovered().await {
                tracing::info!(approval_id = ?id, ?resumed, "resumed: decided before the restart");
            }
        }
    });
    let router = Router::new()
        .route("/app/turn", post(turn))
        .route("/app/config", post(page_config))
        .route(AGENT_PATH, post(agent_run))
        .with_state(app.clone())
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(origin),
            page_guard,
        ))
        .merge(pages.router())
        .merge(approvals.router());
    // `/mcp` is the host's: outside the page guard (agents send no Origin;
    // it checks its own Host/Origin rules and a bearer token).
    let served = host.serve_on(listener, router)?;
    Ok(Running {
        addr,
        app,
        _served: served,
    })
}

/// The approver page (`/approver`, the library's approvals service):
/// sign-in with the approver secret, decisions at the backend's decision
/// endpoint with the approver's credential, the gateway read and resumed
/// with the requester's; each resumed outcome reported to its run.
fn approvals_options(
    config: &HostConfig,
    origin: PageOrigin,
    reports: watch::Sender<Vec<TurnReport>>,
) -> std::io::Result<ApprovalsOptions> {
    let trimmed = config.backend_rpc.trim_end_matches('/');
    let base = trimmed.strip_suffix("/rpc").unwrap_or(trimmed);
    let decider = HttpApprovalDecider::new(format!("{base}/approvals/decide"), PEER_APPROVER_TOKEN)
        .map_err(std::io::Error::other)?;
    let requester = OrpcCapabilityClient::new(
        HttpOrpcClient::new(format!("{base}/gateway"))
            .with_header("authorization", PEER_USER_TOKEN),
    );
    let sign_in = ApproverSignIn::secret(&config.approver_secret, "approver");
    Ok(
        ApprovalsOptions::new(origin, sign_in, Arc::new(decider), Arc::new(requester))
            .title("Approvals — devices console")
            .summary(resumed_summary)
            .on_resumed(move |approval, outcome| {
                let by = approval.decided_by.as_deref().unwrap_or("the approver");
                let report = TurnReport {
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
                };
                keep(&reports, report);
            }),
    )
}

/// `POST /app/turn` `{"json":{"script":"disable"|"purge"}}`: the scripted
/// agent turn, run on its own task (a page that goes away does not cancel
/// it).
async fn turn(State(app): State<Arc<App>>, request: Request) -> Response {
    let (session, script) = match app.pages.read(request).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let path = match script["script"].as_str() {
        Some("disable") => "devices.disable",
        Some("purge") => "devices.purge",
        _ => {
            let message = "script must be \"disable\" or \"purge\"";
            return orpc_error(StatusCode::BAD_REQUEST, "BAD_REQUEST", message);
        }
    };
    let turn = tokio::spawn(async move {
        let report = run_turn(&app, &session.token, path).await;
        keep(&app.reports, report.clone());
        report
    });
    match turn.await {
        Ok(report) => orpc_ok(&report),
        Err(_) => orpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_SERVER_ERROR",
            "The turn failed.",
        ),
    }
}

/// `POST /app/config`: what the page needs to know of this host's setup —
/// the path of its AG-UI agent (`{"json":{"agUi":"/app/agent"}}`), or
/// `{"agUi":null}` when none is configured (the page shows no chat).
async fn page_config(State(app): State<Arc<App>>, request: Request) -> Response {
    if let Err(refused) = app.pages.read(request).await {
        return refused;
    }
    orpc_ok(&json!({ "agUi": app.agent.as_ref().map(|_| AGENT_PATH) }))
}

/// `POST /app/agent`: one AG-UI run of the page's chat, forwarded to the
/// agent once the page's session cookie is checked (`crate::agent`).
async fn agent_run(State(app): State<Arc<App>>, request: Request) -> Response {
    if let Err(refused) = app.pages.authenticate(request.headers()) {
        return refused;
    }
    let Some(agent) = &app.agent else {
        let message = "No AG-UI agent is configured.";
        return orpc_error(StatusCode::NOT_FOUND, "NOT_FOUND", message);
    };
    match axum::body::to_bytes(request.into_body(), MAX_RUN_REQUEST_BYTES).await {
        Ok(body) => agent.forward(body).await,
        Err(_) => orpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            "The run is too large.",
        ),
    }
}

/// The scripted agent turn: discover → call `path` with no ids → wait
/// while the user decides in the page → report.
async fn run_turn(app: &App, token: &agent_surface::web::SessionToken, path: &str) -> TurnReport {
    let mut report = TurnReport {
        run_id: String::new(),
        steps: Vec::new(),
        summary: String::new(),
    };
    report.run_id = match app.pages.start_run(token, ConsumerKind::Embedded).await {
        Ok(run_id) => run_id,
        Err(e) => {
            report.summary = format!("Not run: {e}.");
            return report;
        }
    };
    let run_id = report.run_id.clone();
    let tools = app.host.tools_for_run(&run_id).await.unwrap_or_default();
    report.steps.push(TurnStep {
        action: "discover".into(),
        outcome: Value::Array(tools.iter().map(describe_tool).collect()),
    });
    let capability = format!("domain:{path}");
    let (outcome, summary) = if tools.iter().any(|t| t.capability_id() == capability) {
        let invocation_id = format!("{run_id}-1");
        report.steps.push(TurnStep {
            action: format!("call {path} with no ids"),
            outcome: json!({"input": {}, "invocationId": invocation_id}),
        });
        let request = ToolCallRequest::new(
            &run_id,
            "tool-call-1",
            &invocation_id,
            &capability,
            json!({}),
        );
        let end = tokio::time::timeout(TURN_WAIT, app.host.call(request)).await;
        call_end(path, end.unwrap_or(CallEnd::TimedOut))
    } else {
        (None, format!("Not run: the page does not offer {path}."))
    };
    // Its approvals stay observable through `/app/run`.
    if let Err(e) = app.host.end_run(&run_id).await {
        tracing::warn!(?run_id, error = ?e, "the run could not be ended");
    }
    if let Some(outcome) = outcome {
        report.steps.push(TurnStep {
            action: "outcome".into(),
            outcome,
        });
    }
    report.summary = summary;
    report
}

/// The outcome step and the summary of a call's end.
fn call_end(path: &str, end: CallEnd) -> (Option<Value>, String) {
    match end {
        CallEnd::Outcome { outcome } => (
            Some(serde_json::to_value(&outcome).unwrap_or(Value::Null)),
            summarize(path, &outcome),
        ),
        CallEnd::Refused { reason } => (None, format!("Not run: the call was refused ({reason:?}).")),
        CallEnd::Interrupted => (
            Some(json!({"interrupted": true})),
            format!("Interrupted: the tab went away while {path} was pending; its outcome is unknown, reconcile before retrying."),
        ),
        CallEnd::TimedOut => (
            Some(json!({"timedOut": true})),
            format!("No answer: the page did not answer {path} within {} minutes.", TURN_WAIT.as_secs() / 60),
        ),
    }
}

/// One line for a person: what the resumed call did.
fn resumed_summary(approval: &ApprovalRecord, outcome: &AgentInvocationResult) -> String {
    let by = approval.decided_by.as_deref().unwrap_or("the approver");
    match outcome {
        AgentInvocationResult::Ok { output, .. } => {
            let ids = ids(output.as_ref(), "purged");
            let ids = if ids.is_empty() {
                "nothing".into()
            } else {
                ids
            };
            format!("Approved by {by} and resumed: the server purged {ids}.")
        }
        AgentInvocationResult::Error { .. } if approval.state == ApprovalState::Rejected => {
            format!("Rejected by {by}: nothing was purged.")
        }
        AgentInvocationResult::Error { error, .. } => {
            format!("Approved by {by}, but not done: {}.", error.code.as_str())
        }
    }
}

/// The ids listed under `key` of a procedure's output, comma-separated.
fn ids(output: Option<&Value>, key: &str) -> String {
    let ids: Vec<&str> = output
        .and_then(|o| o[key].as_array())
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    ids.join(", ")
}

fn describe_tool(tool: &HostTool) -> Value {
    let HostTool::Browser(b) = tool else {
        return json!({"capabilityId": tool.capability_id(), "presentation": "server"});
    };
    let references: Vec<Value> = b
        .references
        .iter()
        .map(|r| match r {
            BrowserReference::Procedure(p) => json!({
                "registrationId": p.registration_id,
                "available": p.available,
                "boundFields": p.bound_fields.iter().map(|f| json!({"path": f.path, "locked": f.locked})).collect::<Vec<_>>(),
                "confirmation": p.confirmation,
            }),
            BrowserReference::View { component, capability } => json!({
                "registrationId": component.registration_id,
                "available": capability.available(),
            }),
        })
        .collect();
    json!({"capabilityId": b.capability_id, "presentation": "browser", "references": references})
}

/// One line for a person: what the call's outcome means.
fn summarize(path: &str, outcome: &BrowserSurfaceOutcome) -> String {
    let result = match outcome {
        BrowserSurfaceOutcome::Invocation(result) => result,
        BrowserSurfaceOutcome::Rejected(r) => {
            return format!("Not run: the tab refused the call ({}).", r.reason.as_str())
        }
    };
    match (result, result.error()) {
        (AgentInvocationResult::Ok { output, .. }, _) if path == "devices.disable" => {
            match ids(output.as_ref(), "disabled") {
                ids if ids.is_empty() => {
                    "Success: devices.disable ran; nothing needed disabling.".into()
                }
                ids => format!("Success: devices.disable ran; the server disabled {ids}."),
            }
        }
        (AgentInvocationResult::Ok { .. }, _) => format!("Success: {path} ran."),
        (_, Some(error)) if error.code == ErrorCode::DomainApprovalRequired => {
            let backend = error.details.get("approvalId").and_then(Value::as_str);
            format!(
                "Waiting for approval {} (the backend's {}): the server holds {path} until a person decides on the approver page; nothing was done yet.",
                result.invocation_id(),
                backend.unwrap_or("?")
            )
        }
        (_, Some(error)) => {
            // `details.reason` names the refusal (`denied`, `mismatch`,
            // `surface-version-mismatch`), unless the message already
            // says it.
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
        (_, None) => format!("Finished: {path}."),
    }
}
