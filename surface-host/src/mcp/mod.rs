//! The agent host's MCP server (feature `mcp`, native targets; docs/agents.md,
//! "The MCP server").
//!
//! [`McpServer`] is the MCP front of a [`Host`](crate::host::Host) (which
//! starts it: `Host::mcp`, `Host::mcp_service`): an MCP client that
//! presents a bearer token issued for a run ([`McpServer::issue_token`],
//! recorded in the host store, so every replica accepts it)
//! sees that run's composed tools — the live surface of the run's tab plus
//! the host's direct server tools, one presentation per canonical
//! capability id — exported with [`surface_runtime::export`]; `tools/call` is
//! dispatched through the tab's [`BrowserSurfaceSession`] (or, for a server
//! tool, through the server registry) and answered with the export
//! module's `CallToolResult` mapping; `notifications/tools/list_changed`
//! goes out when an announcement (or a closed tab) changes a run's tools.
//!
//! Pages connect to the host (`Host::open_connection`, `Host::page_socket`,
//! `InProcessTab`), not to this server; a call runs on the replica holding
//! the run's tab. A tab whose session uses [`ConfirmationMode::Hold`] keeps a call that
//! needs the user's confirmation open; the MCP call stays open too and the
//! client receives `notifications/progress` while the user decides (when it
//! sent a `progressToken`).
//!
//! [`McpServer::http_service`] is the streamable HTTP endpoint (rmcp's
//! transport behind a bearer-token check), a tower service to mount in an
//! axum or hyper server.
//!
//! [`BrowserSurfaceSession`]: surface_runtime::host::BrowserSurfaceSession
//! [`ConfirmationMode::Hold`]: surface_runtime::host::ConfirmationMode::Hold

mod clock;
mod errors;
mod http;
mod inflight;
pub mod jsonrpc;
pub mod rmcp_model;
mod session_store;
mod tasks;
mod tokens;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::mpsc;

pub use http::McpHttpService;
pub use inflight::ANSWERED_CALL_WINDOW_MS;

use surface_runtime::export::{
    CatalogTool, ExportError, ExportOptions, McpCallToolResult, McpTool, ResolvedCall, ToolCall,
    ToolCatalog, ToolDescriptor, ToolRoute, ToolSource, MAX_ARGUMENTS_BYTES,
};
use surface_runtime::host::{
    AgentHost, BrowserSurfaceProgress, HostTool, ProgressStage, ToolCallRequest,
};
use surface_store::McpStore;

use crate::replica::Replica;
use surface_runtime::invocation::{AgentConsumer, AgentError, AgentInvocationResult};
use surface_runtime::registry::SurfaceRegistry;

/// Default host-side bound of one `tools/call`: 6 minutes — longer than the
/// registry's default confirmation lifetime (5 minutes) plus the default
/// call timeouts (30 s), so a call waiting for the user is answered by the
/// page (`CONFIRMATION_INVALID`, `expired`) before the host gives up.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(6 * 60);
/// Default interval of the progress notifications sent while a call waits
/// for the user's confirmation: 10 seconds (clients that reset their
/// request timeout on progress keep waiting).
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(10);
/// How many well-formed bearer tokens the store did not know a server
/// remembers as unknown (so that repeating one costs no store read): 1024,
/// the oldest forgotten first.
pub const UNKNOWN_TOKEN_CACHE_ENTRIES: usize = 1024;
/// How long a server remembers a token the store did not know: 60 seconds
/// from its first miss (an issued token is recorded before it is returned,
/// so no issued token is ever remembered as unknown; one issued here is
/// forgotten at once anyway).
pub const UNKNOWN_TOKEN_TTL: Duration = Duration::from_secs(60);
/// Default bound of live MCP sessions per server: 64.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// Default bound of live MCP sessions of one run (one bearer token's run)
/// on a server: 8 — a run's client needs one; a run cannot take the
/// server's [`DEFAULT_MAX_SESSIONS`] from the others.
pub const DEFAULT_MAX_SESSIONS_PER_RUN: usize = 8;
/// Default bound of one HTTP request body: 1 MiB (four times the largest
/// accepted tool arguments, `export::MAX_ARGUMENTS_BYTES`).
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;
/// The MCP protocol revisions the server serves, on one endpoint; each
/// request's revision decides how it is served:
///
/// * **2026-07-28** (the current revision, the default): stateless — no
///   `initialize` and no session; `server/discover` answers the revisions
///   and capabilities, every request carries its revision and client
///   capabilities in `_meta` (and the `MCP-Protocol-Version`, `Mcp-Method`
///   and `Mcp-Name` headers, checked against the body), `tools/list`
///   carries `ttlMs: 0` and `cacheScope: "private"` (a run's tools change
///   with its page and belong to its token), and `list_changed` is
///   delivered on a `subscriptions/listen` stream.
/// * **2025-11-25, 2025-06-18, 2024-11-05** (the legacy lane): the
///   session-based streamable HTTP transport — `initialize`,
///   `Mcp-Session-Id`, `list_changed` on the session.
///
/// 2025-03-26 — the one revision with JSON-RPC batches — is not among
/// them: the server answers one message per request, and a batch gets HTTP
/// 400 with JSON-RPC `-32600`; a client asking for 2025-03-26 in
/// `initialize` is offered 2025-11-25 instead.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"];

/// Configuration of the MCP server of a [`Host`](crate::host::Host)
/// (`HostBuilder::mcp`).
#[derive(Clone)]
pub struct McpServerOptions {
    /// Host-side bound of one `tools/call`, from dispatch to result
    /// (default [`DEFAULT_CALL_TIMEOUT`]). At the bound the call is
    /// answered `TIMEOUT` (retry `no`: the page may still act) and a late
    /// result is accepted and dropped. Keep it above the registry's
    /// confirmation lifetime.
    pub call_timeout: Duration,
    /// Interval of progress notifications while a call waits for the
    /// user's confirmation (default [`DEFAULT_PROGRESS_INTERVAL`]).
    pub progress_interval: Duration,
    /// Live MCP sessions at most (default [`DEFAULT_MAX_SESSIONS`]); an
    /// `initialize` (or the restore of a session opened elsewhere) beyond
    /// it gets HTTP 503. Idle sessions close after `call_timeout` + 30 s
    /// without traffic (rmcp's keep-alive) and are deleted from the store
    /// once idle for twice that.
    pub max_sessions: usize,
    /// Live MCP sessions of one run at most, on this server (default
    /// [`DEFAULT_MAX_SESSIONS_PER_RUN`]); beyond it HTTP 503, whatever the
    /// other runs hold.
    pub max_sessions_per_run: usize,
    /// Largest HTTP request body (default
    /// [`DEFAULT_MAX_REQUEST_BODY_BYTES`]); larger ones get HTTP 413.
    pub max_request_body_bytes: usize,
    /// Accepted `Host` header values (default `localhost`, `127.0.0.1`,
    /// `::1`: DNS-rebinding protection for a loopback server). Set the
    /// public host names when serving elsewhere.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` header values besides the server's own loopback
    /// origin, as `scheme://host[:port]` (compared case-insensitively; no
    /// port means the scheme's default; `http://localhost:*` allows every
    /// port; `null` the opaque origin). Default empty: a request carrying
    /// an `Origin` — a browser page, e.g. a DNS-rebinding one — gets HTTP
    /// 403 unless it is `http(s)://` + the request's own `Host` on
    /// `localhost`, `127.0.0.1` or `[::1]` (a page of this server itself); a
    /// request without `Origin` (a native MCP client) passes, as the MCP
    /// transport specification asks. Add the origin of a browser-based MCP
    /// client you trust.
    pub allowed_origins: Vec<String>,
    /// How tools are exported (default [`ExportOptions::default`]).
    pub export: ExportOptions,
    /// The registry the host's server tools run in, and the consumer they
    /// run as. A server tool offered to a run that this registry does not
    /// register is not listed.
    pub server_registry: Option<(SurfaceRegistry, AgentConsumer)>,
    /// `serverInfo.name` (default `"agent-surface"`).
    pub server_name: String,
    /// How long a run's page must stay gone before a call ends the run
    /// (default [`DEFAULT_PAGE_GONE_GRACE`]): a page reconnecting after
    /// its replica restarted comes back with the same tab within it;
    /// meanwhile a call is answered that the page is not connected
    /// (retry `after-refresh`).
    pub page_gone_grace: Duration,
}

/// Default [`McpServerOptions::page_gone_grace`]: 60 seconds.
pub const DEFAULT_PAGE_GONE_GRACE: Duration = Duration::from_secs(60);
/// Runs whose page this server remembers seeing gone: 10,000.
const MAX_GONE_RUNS: usize = 10_000;

impl Default for McpServerOptions {
    fn default() -> Self {
        Self {
            call_timeout: DEFAULT_CALL_TIMEOUT,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_run: DEFAULT_MAX_SESSIONS_PER_RUN,
            max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: Vec::new(),
            export: ExportOptions::default(),
            server_registry: None,
            server_name: "agent-surface".into(),
            page_gone_grace: DEFAULT_PAGE_GONE_GRACE,
        }
    }
}

impl McpServerOptions {
    /// Sets `call_timeout`.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }
    /// Sets `progress_interval`.
    pub fn progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }
    /// Sets `max_sessions`.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }
    /// Sets `max_sessions_per_run`.
    pub fn max_sessions_per_run(mut self, max: usize) -> Self {
        self.max_sessions_per_run = max;
        self
    }
    /// Sets `page_gone_grace`.
    pub fn page_gone_grace(mut self, grace: Duration) -> Self {
        self.page_gone_grace = grace;
        self
    }
    /// Sets `allowed_hosts`.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }
    /// Sets `allowed_origins`.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }
    /// Runs the host's server tools in `registry` as `consumer`.
    pub fn server_registry(mut self, registry: SurfaceRegistry, consumer: AgentConsumer) -> Self {
        self.server_registry = Some((registry, consumer));
        self
    }
}

impl std::fmt::Debug for McpServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerOptions")
            .field("call_timeout", &self.call_timeout)
            .field("progress_interval", &self.progress_interval)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_run", &self.max_sessions_per_run)
            .field("max_request_body_bytes", &self.max_request_body_bytes)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("server_registry", &self.server_registry.is_some())
            .field("server_name", &self.server_name)
            .finish()
    }
}

/// Where a run's `notifications/tools/list_changed` goes.
#[derive(Clone)]
pub(crate) enum ListenerKind {
    /// A legacy (2025-11-25 and older) MCP session.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream that accepted
    /// `toolsListChanged`.
    Subscription(rmcp::service::SubscriptionSink),
}

/// A listener, with at most one notification in flight: a client that
/// stops reading holds one task, not one per change (one pending
/// `list_changed` says all a client needs: list again).
#[derive(Clone)]
pub(crate) struct Listener {
    kind: ListenerKind,
    sending: Arc<std::sync::atomic::AtomicBool>,
}

/// How long one `list_changed` may take to reach a client before it is
/// given up: 30 seconds.
const LIST_CHANGED_SEND_TIMEOUT: Duration = Duration::from_secs(30);

impl Listener {
    pub(crate) fn session(peer: Peer<RoleServer>) -> Self {
        Self::of(ListenerKind::Session(peer))
    }

    pub(crate) fn subscription(sink: rmcp::service::SubscriptionSink) -> Self {
        Self::of(ListenerKind::Subscription(sink))
    }

    fn of(kind: ListenerKind) -> Self {
        Self {
            kind,
            sending: Arc::default(),
        }
    }

    fn is_closed(&self) -> bool {
        match &self.kind {
            ListenerKind::Session(peer) => peer.is_transport_closed(),
            // Removed when its `listen` ends ([`Shared::close_subscription`]).
            ListenerKind::Subscription(_) => false,
        }
    }

    fn is_subscription(&self, id: &rmcp::model::RequestId) -> bool {
        matches!(&self.kind, ListenerKind::Subscription(s) if s.id() == id)
    }

    async fn notify_tool_list_changed(self) {
        use std::sync::atomic::Ordering;
        if self.sending.swap(true, Ordering::AcqRel) {
            return;
        }
        let send = async {
            match &self.kind {
                ListenerKind::Session(peer) => peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| e.to_string()),
                ListenerKind::Subscription(sink) => sink
                    .send(
                        rmcp::model::ServerNotification::ToolListChangedNotification(
                            Default::default(),
                        ),
                    )
                    .await
                    .map_err(|e| e.to_string()),
            }
        };
        let sent = tokio::time::timeout(LIST_CHANGED_SEND_TIMEOUT, send)
            .await
            .unwrap_or_else(|_| Err("the client did not read it within 30 s".to_string()));
        self.sending.store(false, Ordering::Release);
        if let Err(error) = sent {
            tracing::debug!(error = ?error, "tools/list_changed not delivered");
        }
    }
}

/// `subscriptions/listen` streams one run may hold open at once: 8 (the
/// server's bound is `max_sessions`).
pub const MAX_SUBSCRIPTIONS_PER_RUN: usize = 8;

type TokenDigest = [u8; 32];

#[derive(Default)]
struct McpState {
    /// Who is told of a run's `list_changed`: its legacy MCP sessions and
    /// its 2026-07-28 `subscriptions/listen` streams.
    listeners: HashMap<String, Vec<Listener>>,
    /// Open `subscriptions/listen` streams (bounded by `max_sessions`).
    subscriptions: usize,
    /// Open `subscriptions/listen` streams by run (each at most
    /// [`MAX_SUBSCRIPTIONS_PER_RUN`]).
    run_subscriptions: HashMap<String, usize>,
    /// The run each legacy MCP session was opened (or restored) for, and
    /// when this replica last marked it used in the store.
    session_runs: HashMap<String, (String, std::time::Instant)>,
    /// Digest of the tool list each run was last shown or told about.
    listed: HashMap<String, TokenDigest>,
    /// The last export of each run's tools, reused while the composed
    /// tools (and the server registry's version) are unchanged.
    catalogs: HashMap<String, CachedTools>,
    /// The tasks of task-augmented legacy calls answered at once (bounded,
    /// [`tasks::legacy::MAX_ANSWERED_TASKS`]).
    answered_tasks: tasks::legacy::AnsweredTasks,
}

struct CachedTools {
    server_version: Option<u64>,
    export: Arc<RunTools>,
}

/// One export of a run's composed tools.
struct RunTools {
    /// The composed tools exported (the host's canonical capability ids).
    tools: Vec<HostTool>,
    /// Keeps where each tool is served ([`ToolRoute::Browser`]: the run's
    /// tab; [`ToolRoute::Registry`]: the server registry).
    catalog: ToolCatalog,
}

impl RunTools {
    /// The canonical capability id (what the host's tools are keyed by) of
    /// the browser registration a catalog tool names: `capability_id` is
    /// the procedure id (`domain:…`) or view id the call names.
    fn canonical_id(&self, capability_id: &str, registration_id: &str) -> Option<&str> {
        self.tools.iter().find_map(|tool| match tool {
            HostTool::Browser(browser) => browser
                .references
                .iter()
                .any(|r| {
                    r.capability_id() == capability_id && r.registration_id() == registration_id
                })
                .then_some(browser.capability_id.as_str()),
            HostTool::Server(_) => None,
        })
    }
}

pub(crate) struct Shared {
    /// The replica whose runs this server serves (its calls run on the
    /// replica holding the tab).
    replica: Replica,
    options: McpServerOptions,
    state: Mutex<McpState>,
    /// The legacy sessions of every HTTP service of this server, and the
    /// lock that makes counting and opening one step.
    http_sessions: std::sync::OnceLock<HttpSessions>,
    /// Where tokens and sessions are recorded (every replica reads them).
    mcp_store: Arc<dyn McpStore>,
    /// Well-formed tokens the store did not know, lately.
    unknown_tokens: Mutex<tokens::UnknownTokens>,
    /// The requests in flight on this replica (one request delivered
    /// twice runs once).
    in_flight: inflight::InFlight,
    /// Runs whose page a call found gone, and since when (here).
    gone_since: Mutex<HashMap<String, std::time::Instant>>,
}

type HttpSessions = (
    Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    Arc<tokio::sync::Mutex<()>>,
);

/// The MCP front of a [`Host`](crate::host::Host) (docs/agents.md, "The
/// MCP server"): `Host::mcp` returns it, `Host::mcp_service` its HTTP
/// endpoint. Cheap to clone; all clones share one server.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("McpServer")
            .field("replica", &self.shared.replica.name())
            .field("listeners", &state.listeners.len())
            .field("subscriptions", &state.subscriptions)
            .finish_non_exhaustive()
    }
}

/// One progress notification of a waiting call ([`McpServer::call_tool_with_progress`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpProgress {
    /// Increases with every notification of the call (1, 2, …).
    pub progress: u64,
    /// What is happening, for the user (fixed text).
    pub message: String,
}

/// Receives the progress of one call; the notification is sent before the
/// returned future completes.
pub type ProgressSink<'a> =
    &'a (dyn Fn(McpProgress) -> surface_runtime::sync::BoxFuture<'static, ()> + Send + Sync);

impl Shared {
    fn lock_gone(&self) -> MutexGuard<'_, HashMap<String, std::time::Instant>> {
        self.gone_since.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, McpState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store of tokens and sessions.
    pub(crate) fn mcp_store(&self) -> &Arc<dyn McpStore> {
        &self.mcp_store
    }

    /// The replica's in-memory host.
    fn agent_host(&self) -> &AgentHost {
        self.replica.durable().host()
    }

    /// The run a bearer token was issued for (the store's record of its
    /// SHA-256), or `None` — also when the store cannot be read.
    /// A token that is not 64 lowercase hex digits, or that missed within
    /// [`UNKNOWN_TOKEN_TTL`], is refused without a store read.
    pub(crate) async fn run_for_token(&self, token: &str) -> Option<String> {
        if !tokens::is_well_formed(token) {
            return None;
        }
        let digest = token_digest(token);
        let unknown = || {
            self.unknown_tokens
                .lock()
                .unwrap_or_else(|p| p.into_inner())
        };
        if unknown().contains(&digest, std::time::Instant::now()) {
            return None;
        }
        match self.mcp_store.token_run(&hex::encode(digest)).await {
            Ok(Some(run)) => Some(run),
            Ok(None) => {
                unknown().insert(digest, std::time::Instant::now());
                None
            }
            Err(error) => {
                tracing::error!(error = ?error, "MCP: the token store cannot be read");
                None
            }
        }
    }

    /// The run's composed tools, wherever its tab is connected.
    async fn composed_tools(&self, run_id: &str) -> Vec<HostTool> {
        match self.replica.tools_for_run(run_id).await {
            Ok(tools) => tools,
            Err(error) => {
                tracing::error!(run_id = ?run_id, error = ?error, "MCP: the run's tools cannot be read");
                Vec::new()
            }
        }
    }

    /// The run's tools now: the cached export when the composition did not
    /// change (schemas are `Arc`s, so the comparison is cheap), else a new
    /// export.
    async fn run_tools(&self, run_id: &str) -> Result<Arc<RunTools>, ExportError> {
        let tools = self.composed_tools(run_id).await;
        let server_version = self
            .options
            .server_registry
            .as_ref()
            .map(|(registry, _)| registry.surface_version());
        if let Some(cached) = self.lock().catalogs.get(run_id) {
            if cached.server_version == server_version && cached.export.tools == tools {
                return Ok(cached.export.clone());
            }
        }
        let empty = tools.is_empty();
        let catalog = self.export_tools(tools.clone())?;
        let export = Arc::new(RunTools { tools, catalog });
        if !empty {
            self.lock().catalogs.insert(
                run_id.to_string(),
                CachedTools {
                    server_version,
                    export: export.clone(),
                },
            );
        } else {
            self.lock().catalogs.remove(run_id);
        }
        Ok(export)
    }

    /// The catalog of a run's composed tools: each browser tool's
    /// registrations routed to its tab; each server tool as the server
    /// registry describes it, routed to that registry (not listed, with a
    /// warning, when there is no server registry or it does not register
    /// the capability).
    fn export_tools(&self, tools: Vec<HostTool>) -> Result<ToolCatalog, ExportError> {
        let server_snapshot = match &self.options.server_registry {
            Some((registry, consumer))
                if tools.iter().any(|t| matches!(t, HostTool::Server(_))) =>
            {
                Some((registry, registry.snapshot(consumer)))
            }
            _ => None,
        };
        let mut sources: Vec<ToolSource> = Vec::new();
        for tool in tools {
            match tool {
                HostTool::Browser(browser) => sources.extend(browser.into_tool_sources()),
                HostTool::Server(server) => {
                    let Some((registry, snap)) = &server_snapshot else {
                        tracing::warn!(
                            capability_id = ?server.capability_id,
                            "server tool not listed: no server registry"
                        );
                        continue;
                    };
                    let manifest = registry.authority().manifest();
                    let found = snap.procedures.iter().find(|p| {
                        canonical_id(manifest, &p.procedure_id).as_deref()
                            == Some(server.capability_id.as_str())
                    });
                    match found {
                        Some(p) => sources.push(ToolSource {
                            descriptor: ToolDescriptor::Procedure(p.clone()),
                            route: ToolRoute::Registry,
                            surface_version: snap.surface_version,
                        }),
                        None => tracing::warn!(
                            capability_id = ?server.capability_id,
                            "server tool not listed: the server registry does not register it"
                        ),
                    }
                }
            }
        }
        ToolCatalog::from_tools(sources, &self.options.export)
    }

    async fn mcp_tools(&self, run_id: &str) -> Result<Vec<McpTool>, ExportError> {
        Ok(self.run_tools(run_id).await?.catalog.mcp_tools())
    }

    /// Remembers what `run_id`'s client was shown.
    fn mark_listed(&self, run_id: &str, tools: &[McpTool]) {
        let digest = tools_digest(tools);
        self.lock().listed.insert(run_id.to_string(), digest);
    }

    /// The replica whose runs this server serves.
    pub(crate) fn replica(&self) -> &Replica {
        &self.replica
    }

    /// Tells `listener` of `run_id`'s tool changes from now on (until it
    /// closes); the tools it is compared against are the ones listed last,
    /// or today's.
    pub(crate) async fn add_listener(&self, run_id: &str, listener: Listener) {
        let tools = self.mcp_tools(run_id).await.unwrap_or_default();
        let mut state = self.lock();
        let listeners = state.listeners.entry(run_id.to_string()).or_default();
        listeners.retain(|l| !l.is_closed());
        listeners.push(listener);
        state
            .listed
            .entry(run_id.to_string())
            .or_insert_with(|| tools_digest(&tools));
    }

    /// Counts a new `subscriptions/listen` stream of `run_id`: `false`
    /// (and nothing counted) when `max_sessions` are open on the server or
    /// [`MAX_SUBSCRIPTIONS_PER_RUN`] for the run.
    pub(crate) fn open_subscription(&self, run_id: &str) -> bool {
        let mut state = self.lock();
        let of_run = state.run_subscriptions.get(run_id).copied().unwrap_or(0);
        if state.subscriptions >= self.options.max_sessions || of_run >= MAX_SUBSCRIPTIONS_PER_RUN {
            return false;
        }
        state.subscriptions += 1;
        state
            .run_subscriptions
            .insert(run_id.to_string(), of_run + 1);
        true
    }

    /// Forgets a `subscriptions/listen` stream of `run_id` that ended.
    pub(crate) fn close_subscription(&self, run_id: &str, id: &rmcp::model::RequestId) {
        let mut state = self.lock();
        state.subscriptions = state.subscriptions.saturating_sub(1);
        if let Some(count) = state.run_subscriptions.get_mut(run_id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                state.run_subscriptions.remove(run_id);
            }
        }
        if let Some(listeners) = state.listeners.get_mut(run_id) {
            listeners.retain(|l| !l.is_subscription(id));
        }
    }

    /// Sends `notifications/tools/list_changed` to the listeners of every
    /// run whose tool list differs from what it was last shown.
    async fn notify_tool_changes_now(&self) {
        let runs: Vec<String> = {
            let mut state = self.lock();
            state.listeners.retain(|_, listeners| {
                listeners.retain(|l| !l.is_closed());
                !listeners.is_empty()
            });
            state.listeners.keys().cloned().collect()
        };
        for run_id in runs {
            let tools = self.mcp_tools(&run_id).await.unwrap_or_default();
            let digest = tools_digest(&tools);
            let listeners = {
                let mut state = self.lock();
                if state.listed.get(&run_id) == Some(&digest) {
                    continue;
                }
                state.listed.insert(run_id.clone(), digest);
                state.listeners.get(&run_id).cloned().unwrap_or_default()
            };
            for listener in listeners {
                tokio::spawn(listener.notify_tool_list_changed());
            }
        }
    }
}

fn token_digest(token: &str) -> TokenDigest {
    surface_runtime::hash::sha256(token.as_bytes())
}

fn tools_digest(tools: &[McpTool]) -> TokenDigest {
    let text = serde_json::to_string(tools).unwrap_or_default();
    surface_runtime::hash::sha256(text.as_bytes())
}

/// 32 random bytes as hex, prefixed.
fn random_id(prefix: &str) -> String {
    format!("{prefix}{}", random_hex(32))
}

/// `bytes` bytes of the OS's randomness in hex.
///
/// # Panics
/// When the platform's randomness fails (never a predictable id).
pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    if let Err(error) = getrandom::fill(&mut buffer) {
        panic!("the platform's randomness failed ({error}); cannot issue an unguessable id");
    }
    hex::encode(buffer)
}

/// The canonical capability id of a procedure id (`domain:<path>`) in
/// `manifest`: its `capabilityId` override, else the procedure id.
fn canonical_id(
    manifest: &surface_runtime::manifest::AgentManifest,
    procedure_id: &str,
) -> Option<String> {
    let path = procedure_id.strip_prefix("domain:")?;
    let tool = manifest.tools.get(path)?;
    Some(surface_runtime::manifest::canonical_capability_id(
        path, tool,
    ))
}

/// What a call is answered by the host itself: the capability the tool
/// names, at the surface version the tool was listed at.
struct CallTarget<'a> {
    invocation_id: &'a str,
    capability_id: &'a str,
    surface_version: u64,
}

impl CallTarget<'_> {
    fn error(&self, error: AgentError) -> AgentInvocationResult {
        AgentInvocationResult::err(
            self.invocation_id,
            self.capability_id,
            error,
            self.surface_version,
        )
    }
}

impl McpServer {
    /// The MCP server of `replica`: the run's tools are composed from the
    /// store wherever its tab is connected, calls run on the tab's
    /// replica, tokens and sessions live in `mcp_store` (the same database
    /// as the replica's store, so every replica accepts them). Needs a
    /// tokio runtime: a task sends `tools/list_changed` when the replica's
    /// surfaces change. Started by [`Host`](crate::host::Host)'s builder.
    pub(crate) fn new(
        replica: Replica,
        mcp_store: Arc<dyn McpStore>,
        options: McpServerOptions,
    ) -> Self {
        let mut changes = replica.changes();
        let shared = Arc::new(Shared {
            replica,
            options,
            state: Mutex::new(McpState::default()),
            http_sessions: std::sync::OnceLock::new(),
            mcp_store,
            unknown_tokens: Mutex::new(tokens::UnknownTokens::new(
                UNKNOWN_TOKEN_CACHE_ENTRIES,
                UNKNOWN_TOKEN_TTL,
            )),
            in_flight: inflight::InFlight::default(),
            gone_since: Mutex::new(HashMap::new()),
        });
        let weak = Arc::downgrade(&shared);
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                shared.notify_tool_changes_now().await;
            }
        });
        Self { shared }
    }

    /// The replica's in-memory agent host.
    pub fn host(&self) -> &AgentHost {
        self.shared.agent_host()
    }

    /// The options.
    pub fn options(&self) -> &McpServerOptions {
        &self.shared.options
    }

    /// Issues a bearer token for `run_id`, valid on every replica of the
    /// store: 64 hex digits from the platform's randomness, of which only
    /// the SHA-256 is recorded (`host_tokens`) before the token is
    /// returned. A client presenting it (`Authorization: Bearer <token>`)
    /// sees and calls that run's tools. The run must exist when the
    /// client lists tools (an unknown run has no tools).
    ///
    /// # Errors
    /// [`StoreError`](surface_store::StoreError) when the store cannot be
    /// written (no token then).
    ///
    /// # Panics
    /// When the platform's randomness fails (no token is better than a
    /// guessable one).
    pub async fn issue_token(&self, run_id: &str) -> Result<String, surface_store::StoreError> {
        let token = random_id("");
        let raw = token_digest(&token);
        self.shared
            .unknown_tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(&raw);
        let digest = hex::encode(raw);
        let at = clock::now_ms();
        self.shared
            .mcp_store
            .record_token(&digest, run_id, at)
            .await?;
        Ok(token)
    }

    /// Revokes a token [`Self::issue_token`] issued, on every replica: its
    /// requests are refused with 401 from the next one on (sessions opened
    /// with it stay bound to their run until they end). Returns whether it
    /// was recorded.
    ///
    /// # Errors
    /// [`StoreError`](surface_store::StoreError) when the store cannot be
    /// written (the token may still work then: try again).
    pub async fn revoke_token(&self, token: &str) -> Result<bool, surface_store::StoreError> {
        let digest = hex::encode(token_digest(token));
        self.shared.mcp_store.revoke_token(&digest).await
    }

    /// Revokes every token issued for `run_id`, on every replica (the
    /// store's rows; [`Host::end_run`](crate::host::Host::end_run) calls
    /// it). Returns how many there were.
    ///
    /// # Errors
    /// [`StoreError`](surface_store::StoreError) when the store cannot be
    /// written (the tokens may still work then: try again).
    pub async fn revoke_run_tokens(&self, run_id: &str) -> Result<u64, surface_store::StoreError> {
        self.shared.mcp_store.revoke_run_tokens(run_id).await
    }

    /// The tools a client of `run_id` sees (MCP `Tool` definitions).
    ///
    /// # Errors
    /// [`ExportError::NameCollision`] when two composed capabilities map to
    /// one tool name.
    pub async fn tools(&self, run_id: &str) -> Result<Vec<McpTool>, ExportError> {
        self.shared.mcp_tools(run_id).await
    }

    /// The streamable HTTP endpoint: rmcp's transport behind the bearer
    /// check. Mount it at the MCP path, e.g.
    /// `axum::Router::new().route_service("/mcp", mcp.http_service())`.
    pub fn http_service(&self) -> McpHttpService {
        McpHttpService::new(self.shared.clone())
    }

    /// Runs one `tools/call` of `run_id` — what the HTTP endpoint does for
    /// a request, without MCP framing: `name` and `arguments` as the
    /// client sent them; the answer is the MCP `CallToolResult`.
    pub async fn call_tool(
        &self,
        run_id: &str,
        tool_call_id: &str,
        name: &str,
        arguments: Option<Value>,
    ) -> McpCallToolResult {
        self.call_tool_with_progress(run_id, tool_call_id, name, arguments, None)
            .await
    }

    /// [`Self::call_tool`] reporting progress while the call waits for the
    /// user's confirmation: once when the page shows it, then every
    /// `progress_interval`, then once when the user approved.
    pub async fn call_tool_with_progress(
        &self,
        run_id: &str,
        tool_call_id: &str,
        name: &str,
        arguments: Option<Value>,
        progress: Option<ProgressSink<'_>>,
    ) -> McpCallToolResult {
        self.call_tool_answered(run_id, tool_call_id, name, arguments, progress)
            .await
            .0
    }

    /// [`Self::call_tool_with_progress`], with the invocation result it
    /// maps (`None` for a call refused before it reached a registry).
    pub(crate) async fn call_tool_answered(
        &self,
        run_id: &str,
        tool_call_id: &str,
        name: &str,
        arguments: Option<Value>,
        progress: Option<ProgressSink<'_>>,
    ) -> (McpCallToolResult, Option<AgentInvocationResult>) {
        let tools = match self.shared.run_tools(run_id).await {
            Ok(t) => t,
            Err(error) => {
                tracing::error!(run_id = ?run_id, error = ?error, "the run's tools cannot be exported");
                let error = AgentError::new(
                    surface_runtime::invocation::ErrorCode::ExecutionFailed,
                    "The application's tools cannot be listed.",
                    surface_runtime::invocation::Retry::No,
                );
                let result = AgentInvocationResult::err("", "", error, 0);
                return (
                    surface_runtime::export::result::mcp_result(&result, None),
                    None,
                );
            }
        };
        let catalog = &tools.catalog;
        let invocation_id = random_id("mcp-");
        let (name, arguments) = match resolve_call(catalog, &invocation_id, name, arguments) {
            Ok(call) => call,
            Err(Answered::Refused(answer)) => return (answer, None),
            Err(Answered::Discovered(answer)) => {
                return (self.discovered(run_id, catalog, answer).await, None)
            }
        };
        let name = name.as_str();
        let tool = catalog.tool(name);
        let target = CallTarget {
            invocation_id: &invocation_id,
            capability_id: tool.map_or("", CatalogTool::capability_id),
            surface_version: tool.map_or(catalog.surface_version(), CatalogTool::surface_version),
        };
        let invocation =
            match catalog.invocation(ToolCall::new(name, invocation_id.clone(), arguments)) {
                Ok(invocation) => invocation,
                Err(error) => {
                    let agent_error = self.refusal(run_id, &error).await;
                    return (catalog.mcp_result(name, &target.error(agent_error)), None);
                }
            };
        // The run's page answers: a later absence starts its grace anew.
        self.shared.lock_gone().remove(run_id);
        let result = match tool.map(CatalogTool::route) {
            // The invocation carries the server registry's registration id
            // and surface version (the tool's, in the catalog).
            Some(ToolRoute::Registry) => self.server_call(&target, invocation).await,
            _ => {
                let registration = invocation.registration_id.as_deref().unwrap_or_default();
                let request = ToolCallRequest {
                    run_id: run_id.to_string(),
                    tool_call_id: tool_call_id.to_string(),
                    invocation_id: invocation.invocation_id.clone(),
                    capability_id: tools
                        .canonical_id(&invocation.capability_id, registration)
                        .unwrap_or(&invocation.capability_id)
                        .to_string(),
                    registration_id: invocation.registration_id.clone(),
                    input: invocation.input,
                    instance_id: None,
                    confirmation_id: None,
                };
                self.browser_call(&target, request, progress).await
            }
        };
        (catalog.mcp_result(name, &result), Some(result))
    }

    /// What a call the catalog refused is answered: the refusal's error,
    /// or — for a tool the run does not have because its page is gone —
    /// [`page_gone_error`] (the run ended).
    async fn refusal(
        &self,
        run_id: &str,
        error: &surface_runtime::export::ToolCallError,
    ) -> AgentError {
        match error {
            surface_runtime::export::ToolCallError::UnknownTool { .. } => {
                match self.end_if_page_gone(run_id).await {
                    PageState::Gone => page_gone_error(),
                    PageState::Away => page_away_error(),
                    PageState::Here => error.agent_error(),
                }
            }
            _ => error.agent_error(),
        }
    }

    /// A `surface_discover` answer, unless the run lists no tool because
    /// its page is away or gone: then what a call of a missing tool is
    /// told (`page-away`, `page-gone`), as in direct mode.
    async fn discovered(
        &self,
        run_id: &str,
        catalog: &ToolCatalog,
        answer: McpCallToolResult,
    ) -> McpCallToolResult {
        if catalog.tools().next().is_some() {
            return answer;
        }
        let error = match self.end_if_page_gone(run_id).await {
            PageState::Here => return answer,
            PageState::Gone => page_gone_error(),
            PageState::Away => page_away_error(),
        };
        let refused = AgentInvocationResult::err("", "", error, catalog.surface_version());
        surface_runtime::export::result::mcp_result(&refused, None)
    }

    /// Ends `run_id` and revokes its tokens on every replica when its page
    /// is gone ([`Replica::run_page_gone`]) and has stayed gone for the
    /// grace (since a call here first found it gone).
    async fn end_if_page_gone(&self, run_id: &str) -> PageState {
        let replica = self.shared.replica();
        match replica.run_page_gone(run_id).await {
            Ok(true) => {}
            Ok(false) => {
                self.shared.lock_gone().remove(run_id);
                return PageState::Here;
            }
            Err(error) => {
                tracing::warn!(run_id = ?run_id, error = ?error, "MCP: whether the run's page is gone cannot be read");
                return PageState::Here;
            }
        }
        let grace = self.shared.options.page_gone_grace;
        let since = {
            let mut gone = self.shared.lock_gone();
            if gone.len() >= MAX_GONE_RUNS && !gone.contains_key(run_id) {
                gone.retain(|_, at| at.elapsed() < grace);
            }
            *gone
                .entry(run_id.to_string())
                .or_insert_with(std::time::Instant::now)
        };
        if since.elapsed() < grace {
            return PageState::Away;
        }
        self.shared.lock_gone().remove(run_id);
        tracing::info!(run_id = ?run_id, "MCP: the run's page is gone; the run and its tokens end");
        if let Err(error) = self.shared.mcp_store.revoke_run_tokens(run_id).await {
            tracing::warn!(run_id = ?run_id, error = ?error, "MCP: the tokens of a run whose page is gone are not revoked");
        }
        if let Err(error) = replica.durable().end_run(run_id).await {
            tracing::warn!(run_id = ?run_id, error = ?error, "MCP: a run whose page is gone is not ended");
        }
        PageState::Gone
    }

    /// Runs a server tool in the server registry, within the call timeout.
    async fn server_call(
        &self,
        target: &CallTarget<'_>,
        invocation: surface_runtime::invocation::AgentInvocation,
    ) -> AgentInvocationResult {
        let Some((registry, consumer)) = &self.shared.options.server_registry else {
            return target.error(errors::no_server_executor());
        };
        let call = registry.invoke(invocation, consumer);
        match tokio::time::timeout(self.shared.options.call_timeout, call).await {
            Ok(result) => result,
            Err(_) => target.error(errors::timed_out(millis(self.shared.options.call_timeout))),
        }
    }

    /// Runs a call on the run's tab and waits for the result.
    async fn browser_call(
        &self,
        target: &CallTarget<'_>,
        request: ToolCallRequest,
        progress: Option<ProgressSink<'_>>,
    ) -> AgentInvocationResult {
        let (progress_tx, progress_rx) = mpsc::unbounded_channel();
        let replica = &self.shared.replica;
        let timeout_ms = millis(replica.options().call_timeout);
        let done = async move {
            let end = replica.call(request, Some(progress_tx)).await;
            errors::call_end_result(
                target.invocation_id,
                target.capability_id,
                target.surface_version,
                end,
                timeout_ms,
            )
        };
        self.await_call(target, done, progress_rx, progress).await
    }

    /// Waits for `done`, reporting the page's progress, until the call
    /// timeout.
    async fn await_call(
        &self,
        target: &CallTarget<'_>,
        done: impl std::future::Future<Output = AgentInvocationResult>,
        mut progress_rx: mpsc::UnboundedReceiver<BrowserSurfaceProgress>,
        progress: Option<ProgressSink<'_>>,
    ) -> AgentInvocationResult {
        let shared = &*self.shared;
        let timeout = tokio::time::sleep(shared.options.call_timeout);
        tokio::pin!(timeout);
        tokio::pin!(done);
        let mut ticker: Option<tokio::time::Interval> = None;
        let mut sent = 0u64;
        let mut waiting_message = String::new();
        loop {
            tokio::select! {
                // Progress first: a `confirmed` message that arrived with
                // the result is still reported before it.
                biased;
                Some(message) = progress_rx.recv() => {
                    self.report(message, progress, &mut ticker, &mut sent, &mut waiting_message).await;
                }
                result = &mut done => return result,
                _ = async { ticker.as_mut().expect("guarded").tick().await }, if ticker.is_some() => {
                    if let Some(report) = progress {
                        sent += 1;
                        report(McpProgress { progress: sent, message: waiting_message.clone() }).await;
                    }
                }
                () = &mut timeout => {
                    tracing::warn!(invocation_id = ?target.invocation_id, "tools/call timed out waiting for the page");
                    return target.error(errors::timed_out(millis(shared.options.call_timeout)));
                }
            }
        }
    }
}

impl McpServer {
    /// Turns one progress message of the page into a progress report.
    async fn report(
        &self,
        message: BrowserSurfaceProgress,
        progress: Option<ProgressSink<'_>>,
        ticker: &mut Option<tokio::time::Interval>,
        sent: &mut u64,
        waiting_message: &mut String,
    ) {
        let text = match message.stage {
            ProgressStage::AwaitingConfirmation => {
                *waiting_message =
                    "Waiting for the user to confirm this call in the application.".to_string();
                let mut interval = tokio::time::interval(self.shared.options.progress_interval);
                interval.reset();
                *ticker = Some(interval);
                waiting_message.clone()
            }
            ProgressStage::Confirmed => {
                *ticker = None;
                "The user confirmed; the call runs.".to_string()
            }
        };
        if let Some(report) = progress {
            *sent += 1;
            report(McpProgress {
                progress: *sent,
                message: text,
            })
            .await;
        }
    }
}

/// A call [`resolve_call`] answered without a tool.
enum Answered {
    /// Refused: arguments over [`MAX_ARGUMENTS_BYTES`], a malformed meta
    /// call.
    Refused(McpCallToolResult),
    /// A `surface_discover` answered from the catalog.
    Discovered(McpCallToolResult),
}

/// A model's call, the meta tools taken off (`ToolCatalog::resolve_call`):
/// the tool and arguments to call, or the answer already made.
fn resolve_call(
    catalog: &ToolCatalog,
    invocation_id: &str,
    name: &str,
    arguments: Option<Value>,
) -> Result<(String, Option<Value>), Answered> {
    let refused = |error: surface_runtime::export::ToolCallError| {
        let result = AgentInvocationResult::err(
            invocation_id,
            "",
            error.agent_error(),
            catalog.surface_version(),
        );
        catalog.mcp_result(name, &result)
    };
    if let Some(size) = arguments.as_ref().and_then(oversized_arguments) {
        return Err(Answered::Refused(refused(
            surface_runtime::export::ToolCallError::ArgumentsTooLarge {
                name: name.chars().take(128).collect(),
                size,
                limit: MAX_ARGUMENTS_BYTES,
            },
        )));
    }
    match catalog.resolve_call(ToolCall::new(name, invocation_id, arguments)) {
        Ok(ResolvedCall::Discovered(answer)) => Err(Answered::Discovered(answer)),
        Ok(ResolvedCall::Tool(call)) => Ok((call.name, call.arguments)),
        Err(error) => Err(Answered::Refused(refused(error))),
    }
}

/// The compact JSON size of `arguments` when it is over
/// [`MAX_ARGUMENTS_BYTES`] (the arguments came in a request body bounded
/// by `max_request_body_bytes`, so counting them is bounded too).
fn oversized_arguments(arguments: &Value) -> Option<usize> {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail.
    let _ = serde_json::to_writer(&mut counter, arguments);
    (counter.0 > MAX_ARGUMENTS_BYTES).then_some(counter.0)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What an agent whose page is gone is told: `CAPABILITY_NOT_FOUND`,
/// retry `no` (`details.reason` `page-gone`) — listing again will not
/// help; a person must reopen the page and connect a new agent (its token
/// no longer works).
fn page_gone_error() -> AgentError {
    let mut error = AgentError::new(
        surface_runtime::invocation::ErrorCode::CapabilityNotFound,
        "The page this agent worked in is gone (closed or reloaded, or its host stopped); nothing ran. Ask the user to reopen the page and connect a new agent: this token no longer works.",
        surface_runtime::invocation::Retry::No,
    );
    error
        .details
        .insert("reason".to_string(), Value::from("page-gone"));
    error
}

/// Whether a run's page is connected somewhere ([`McpServer`]'s check of
/// a call whose tool the run does not have).
enum PageState {
    /// Connected (the tool is simply not in its view).
    Here,
    /// Not connected, for less than the grace: it may be reconnecting.
    Away,
    /// Gone past the grace: the run and its tokens were ended.
    Gone,
}

/// What an agent whose page is not connected right now is told:
/// `CAPABILITY_NOT_FOUND`, retry `after-refresh`, reason `page-away`.
fn page_away_error() -> AgentError {
    let mut error = AgentError::new(
        surface_runtime::invocation::ErrorCode::CapabilityNotFound,
        "The page this agent works in is not connected right now (reloading, or its host restarting); nothing ran. If the tool list stays empty for a minute, the page is gone.",
        surface_runtime::invocation::Retry::AfterRefresh,
    );
    error
        .details
        .insert("reason".to_string(), Value::from("page-away"));
    error
}
