//! The agent host as one component (features `mcp` and `store`;
//! docs/host.md, "The Host"): [`Host`] is what a deployment starts — the
//! store (in memory, SQLite or PostgreSQL, [`Database`]), the wake-up bus,
//! the durable host and its replica, and the MCP server on top — behind
//! one async interface that is the same whether one process serves the
//! store or several.
//!
//! ```text
//! Host::builder(database)            Database::Memory | Sqlite(path) | Postgres(url)
//!     .known_build(..)               what pages may announce
//!     .replica(name)                 only when several processes share the store
//!     .mcp(options)                  the MCP endpoint's options
//!     .build().await? ──► Host
//!                          ├─ start_run / end_run / issue_token
//!                          ├─ tools_for_run / call        an application's own agent loop
//!                          ├─ open_connection(auth)      a page's socket (or InProcessTab)
//!                          ├─ page_socket(..)            the page's WebSocket (feature axum)
//!                          ├─ approvals(options)         the approver page and API (feature axum)
//!                          ├─ pages(options)             the page, its session, runs, MCP token (feature axum)
//!                          ├─ mcp_service()              the /mcp tower service
//!                          └─ serve(addr, routes)        routes and /mcp served (feature axum)
//! ```
//!
//! On one machine the default is SQLite: a `kill -9` of the process loses
//! no call, token or approval; a second process on the same PostgreSQL
//! database is another replica (`.replica(name)`), and any replica serves
//! any MCP request.

mod approvals;
#[cfg(feature = "axum")]
mod approver;
mod database;
mod in_process;
#[cfg(feature = "axum")]
mod page_socket;
#[cfg(feature = "axum")]
mod pages;
#[cfg(feature = "axum")]
mod serving;

use std::sync::Arc;

use crate::replica::{CallEnd, Replica, ReplicaError, ReplicaOptions, TabCalls};
use surface_runtime::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceIdentity, HostTool, KnownBuild,
    ServerTool, ToolCallRequest,
};
use surface_runtime::ConsumerKind;
use surface_store::wake::{LocalWakeups, Wakeups};
use surface_store::{HostStore, McpStore, RouteRecord, RowCounts, StoreError};

pub use crate::durable::{
    digest_call, digest_result, DurableError, DurableHost, Recovery, DEFAULT_APPROVAL_MAX_AGE,
    DEFAULT_RESTORED_RUNS, MAX_PENDING_APPROVALS_PER_RUN, RESUMED_SURFACE_VERSION,
};
/// The layers a [`Host`] is built of, re-exported: the durable host
/// (`crate::durable`) and the replica (`crate::replica`).
pub use crate::replica;
pub use crate::retention::{self, RetentionPolicy, SweepReport};
pub use approvals::{ApprovalDecider, DecideError};
#[cfg(feature = "axum")]
pub use approver::{
    default_summary, ApprovalsOptions, ApprovalsService, ApproverAuth, ApproverSignIn,
    HttpApprovalDecider, OnResumed, OutcomeSummary, APPROVER_COOKIE, DECIDE_TIMEOUT,
    DEFAULT_APPROVALS_PAGE_SIZE, MAX_APPROVALS_PAGE_SIZE, MAX_APPROVER_REQUEST_BYTES,
    MAX_DECIDE_ANSWER_BYTES, MAX_REPORTED_APPROVALS, MAX_SHOWN_PROBLEM_CHARS,
};
pub use database::{Database, DatabaseError};
pub use in_process::{fresh_page_identity, InProcessTab, InProcessTabError};
#[cfg(feature = "axum")]
pub use page_socket::{
    PageSocketEvent, PageSocketLimits, DEFAULT_PAGE_SOCKETS, DEFAULT_PAGE_SOCKETS_PER_SESSION,
    MAX_PAGE_SOCKET_MESSAGE_BYTES,
};
#[cfg(feature = "axum")]
pub use pages::{
    PageRecord, PageRunError, PageUser, PagesOptions, PagesService, MAX_PAGE_REQUEST_BYTES,
    MAX_RUNS_PER_PAGE_SESSION, MAX_RUN_APPROVALS, MAX_TRACKED_PAGE_RUNS, PAGE_COOKIE,
};
#[cfg(feature = "axum")]
pub use serving::Served;

use crate::mcp::{McpHttpService, McpServer, McpServerOptions};

/// The replica name of a host that is the only process on its store:
/// `"host"`.
pub const DEFAULT_REPLICA_NAME: &str = "host";

/// Why a [`Host`] did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostStartError {
    /// The database could not be opened or migrated (which one: the
    /// message).
    #[error("the host store ({database}) could not be opened: {source}")]
    Store {
        /// [`Database::describe`] of the database.
        database: String,
        /// What the store said.
        #[source]
        source: StoreError,
    },
    /// The store was opened but recovering this replica's state failed.
    #[error("the host could not recover its state from the store: {0}")]
    Recovery(#[from] DurableError),
    /// The replica could not start (an invalid name, the store, the
    /// wake-up bus).
    #[error("the host's replica could not start: {0}")]
    Replica(#[from] ReplicaError),
}

/// Configuration of a [`Host`]; from [`Host::builder`].
pub struct HostBuilder {
    database: Database,
    core: AgentHost,
    replica: String,
    replica_options: ReplicaOptions,
    mcp: McpServerOptions,
    wakeups: Option<Arc<dyn Wakeups>>,
    store: Option<database::Opened>,
    mcp_store: Option<Arc<dyn McpStore>>,
    retention: RetentionPolicy,
    #[cfg(feature = "axum")]
    page_sockets: PageSocketLimits,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("database", &self.database.describe())
            .field("replica", &self.replica)
            .field("mcp", &self.mcp)
            .finish_non_exhaustive()
    }
}

impl HostBuilder {
    /// Accepts announcements of `build` (its authority is what its pages'
    /// capabilities are checked against; docs/host.md, "Verification").
    /// A page of a build no host knows is refused.
    pub fn known_build(mut self, build: KnownBuild) -> Self {
        self.core = self.core.with_known_build(build);
        self
    }

    /// Offers `tool` to every run as a direct server tool (run in the MCP
    /// options' `server_registry`).
    pub fn server_tool(mut self, tool: ServerTool) -> Self {
        self.core = self.core.with_server_tool(tool);
        self
    }

    /// Sets the bounds of the in-memory host (calls outstanding, results
    /// remembered, invocation ids) by handing over a configured
    /// [`AgentHost`]; its known builds and server tools are kept, the ones
    /// set on this builder before are replaced.
    pub fn agent_host(mut self, core: AgentHost) -> Self {
        self.core = core;
        self
    }

    /// Runs on `store` instead of opening the builder's database: an
    /// application's own implementation of both store traits, or one store
    /// several hosts in one process share (give each its own
    /// [`Self::replica`] name and one [`Self::wakeups`] bus). The database
    /// then only names the store in errors and logs.
    pub fn store<S: HostStore + McpStore + 'static>(mut self, store: Arc<S>) -> Self {
        self.store = Some(database::Opened::of(store, None));
        self
    }

    /// Keeps the MCP server's tokens and sessions in `store` instead of
    /// the host store (e.g. a wrapper that counts or caches its reads).
    /// Every replica must see the same tokens and sessions.
    pub fn mcp_store(mut self, store: Arc<dyn McpStore>) -> Self {
        self.mcp_store = Some(store);
        self
    }

    /// Names this process as one replica of several sharing the store
    /// (default [`DEFAULT_REPLICA_NAME`]): a name stable across restarts of
    /// this process and distinct from every other replica's (letters,
    /// digits, `-`, `_`; at most 64 characters). A restarted replica
    /// settles what it left: its calls in flight are interrupted.
    pub fn replica(mut self, name: impl Into<String>) -> Self {
        self.replica = name.into();
        self
    }

    /// Sets the replica's bounds (routed calls, lease renewal; defaults of
    /// [`ReplicaOptions`]).
    pub fn replica_options(mut self, options: ReplicaOptions) -> Self {
        self.replica_options = options;
        self
    }

    /// Sets the MCP endpoint's options (default
    /// [`McpServerOptions::default`]).
    pub fn mcp(mut self, options: McpServerOptions) -> Self {
        self.mcp = options;
        self
    }

    /// Bounds the page sockets of [`Host::page_socket`] (per page session
    /// and on this host; defaults of [`PageSocketLimits`]).
    #[cfg(feature = "axum")]
    pub fn page_sockets(mut self, limits: PageSocketLimits) -> Self {
        self.page_sockets = limits;
        self
    }

    /// Sets what the host keeps and how long (default
    /// [`RetentionPolicy::default`]: finished rows a day, runs a week,
    /// approvals a day, a pass a minute; docs/host.md, "Retention").
    pub fn retention(mut self, policy: RetentionPolicy) -> Self {
        self.retention = policy;
        self
    }

    /// Sets the wake-up bus shared by the replicas (default: PostgreSQL's
    /// `LISTEN/NOTIFY` on a PostgreSQL database, an in-process bus
    /// otherwise).
    pub fn wakeups(mut self, wakeups: Arc<dyn Wakeups>) -> Self {
        self.wakeups = Some(wakeups);
        self
    }

    /// Opens the store (creating and migrating it), recovers what this
    /// replica left (its calls in flight are interrupted, its runs
    /// restored, the approvals pending and decided-not-resumed listed in
    /// [`Host::recovery`]) and starts the replica and the MCP server.
    /// Needs a tokio runtime.
    ///
    /// # Errors
    /// [`HostStartError`]: the store, the recovery or the replica.
    pub async fn build(self) -> Result<Host, HostStartError> {
        let described = self.database.describe();
        let opened = match self.store {
            Some(opened) => opened,
            None => self
                .database
                .open()
                .await
                .map_err(|source| HostStartError::Store {
                    database: described,
                    source,
                })?,
        };
        let wakeups = self
            .wakeups
            .or(opened.wakeups)
            .unwrap_or_else(|| Arc::new(LocalWakeups::new()));
        let (durable, recovery) = DurableHost::open(self.core, opened.store, self.replica).await?;
        let durable = durable.with_approval_max_age(self.retention.approval_age());
        let (replica, interrupted_routes) =
            Replica::start(Arc::new(durable), wakeups, self.replica_options).await?;
        let mcp_store = self.mcp_store.unwrap_or(opened.mcp_store);
        let mcp = McpServer::new(replica.clone(), mcp_store.clone(), self.mcp);
        retention::spawn(
            Arc::downgrade(replica.durable()),
            Arc::downgrade(&mcp_store),
            self.retention,
        );
        Ok(Host {
            replica,
            mcp,
            mcp_store,
            retention: self.retention,
            recovery,
            interrupted_routes,
            #[cfg(feature = "axum")]
            sockets: Arc::new(page_socket::SocketCounts::new(self.page_sockets)),
        })
    }
}

/// The agent host: the store, the durable host, its replica and the MCP
/// server, started by [`Host::builder`]. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Host {
    replica: Replica,
    mcp: McpServer,
    mcp_store: Arc<dyn McpStore>,
    retention: RetentionPolicy,
    recovery: Recovery,
    interrupted_routes: Vec<RouteRecord>,
    #[cfg(feature = "axum")]
    sockets: Arc<page_socket::SocketCounts>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("replica", &self.replica.name())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host on `database`; see [`HostBuilder`].
    pub fn builder(database: Database) -> HostBuilder {
        HostBuilder {
            database,
            core: AgentHost::new(),
            replica: DEFAULT_REPLICA_NAME.to_string(),
            replica_options: ReplicaOptions::default(),
            mcp: McpServerOptions::default(),
            wakeups: None,
            store: None,
            mcp_store: None,
            retention: RetentionPolicy::default(),
            #[cfg(feature = "axum")]
            page_sockets: PageSocketLimits::default(),
        }
    }

    /// This replica's name.
    pub fn replica_name(&self) -> &str {
        self.replica.name()
    }

    /// What the host found in the store at start: the calls it had in
    /// flight (now interrupted), the runs it restored, the approvals
    /// pending and those decided but not yet resumed.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The routed calls this replica had taken before it stopped (their
    /// requesters were told they are interrupted).
    pub fn interrupted_routes(&self) -> &[RouteRecord] {
        &self.interrupted_routes
    }

    /// Starts a run: an agent acting for `run.session_id` in the tab
    /// `run.tab_id` (recorded in the store: it survives a restart).
    ///
    /// # Errors
    /// [`DurableError`]: the run id is taken, or the store failed.
    pub async fn start_run(&self, run: AgentRun) -> Result<(), DurableError> {
        self.replica.durable().start_run(run).await
    }

    /// Starts a run for the page `identity` names (its session and tab)
    /// under a fresh run id (`run-` and 32 hex digits), returned: a run id
    /// is never reused, also across restarts on a durable store.
    ///
    /// # Errors
    /// As [`Self::start_run`].
    pub async fn start_page_run(
        &self,
        identity: &BrowserSurfaceIdentity,
        kind: ConsumerKind,
    ) -> Result<String, DurableError> {
        let run_id = format!("run-{}", crate::mcp::random_hex(16));
        self.start_run(AgentRun {
            run_id: run_id.clone(),
            session_id: identity.session_id.clone(),
            tab_id: Some(identity.tab_id.clone()),
            kind,
        })
        .await?;
        Ok(run_id)
    }

    /// Ends a run (recorded in the store; the in-memory host forgets it)
    /// and revokes every MCP token issued for it, on every replica: the
    /// tokens are deleted from the store first, so a client of the ended
    /// run gets HTTP 401 from its next request on, whichever replica it
    /// reaches.
    ///
    /// # Errors
    /// [`DurableError`] when the store failed (the tokens may be revoked
    /// and the run not ended yet: call it again).
    pub async fn end_run(&self, run_id: &str) -> Result<(), DurableError> {
        self.mcp.revoke_run_tokens(run_id).await?;
        self.replica.durable().end_run(run_id).await
    }

    /// Issues the bearer token an MCP client of `run_id` presents (64 hex
    /// digits from the OS's randomness; only its SHA-256 is stored, so
    /// every replica accepts it and it survives a restart).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be written (no token then).
    pub async fn issue_token(&self, run_id: &str) -> Result<String, StoreError> {
        self.mcp.issue_token(run_id).await
    }

    /// Revokes a token [`Self::issue_token`] issued, on every replica: its
    /// requests are refused with 401 from the next one on. Returns whether
    /// it was issued.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be written (the token may
    /// still work then: try again).
    pub async fn revoke_token(&self, token: &str) -> Result<bool, StoreError> {
        self.mcp.revoke_token(token).await
    }

    /// The tools `run_id` is offered now, wherever its tab is connected (a
    /// tab another replica holds is verified here from its stored
    /// announcement); empty for an unknown or ended run.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    pub async fn tools_for_run(&self, run_id: &str) -> Result<Vec<HostTool>, StoreError> {
        self.replica.tools_for_run(run_id).await
    }

    /// Runs one tool call of a run on its tab, wherever it is connected
    /// (on another replica: routed through the store), and waits for its
    /// end: the page's outcome, a refusal before it ran, an interruption
    /// (the tab went away; the outcome is unknown) or a timeout
    /// ([`CallEnd`]). Bound the wait with `tokio::time::timeout` when the
    /// user may take long.
    pub async fn call(&self, request: ToolCallRequest) -> CallEnd {
        self.replica.call(request, None).await
    }

    /// Opens the host side of a page connection the application
    /// authenticated: the page's messages go to `ReplicaTab::receive`,
    /// the calls to send it come out of [`TabCalls::next`]. A page in the
    /// same process uses [`InProcessTab`] instead.
    ///
    /// # Errors
    /// [`ReplicaError::ConnectionOpen`] (a connection id in use).
    pub fn open_connection(
        &self,
        connection: AuthenticatedConnection,
    ) -> Result<(crate::replica::ReplicaTab, TabCalls), ReplicaError> {
        self.replica.open_connection(connection)
    }

    /// The MCP endpoint (streamable HTTP, revisions 2026-07-28 and
    /// 2025-11-25 on one endpoint): a tower service to mount, e.g.
    /// `Router::new().route_service("/mcp", host.mcp_service())`.
    pub fn mcp_service(&self) -> McpHttpService {
        self.mcp.http_service()
    }

    /// The MCP server (tools of a run, calls, tokens).
    pub fn mcp(&self) -> &McpServer {
        &self.mcp
    }

    /// The durable host (approvals, reconciliation, the in-memory host).
    pub fn durable(&self) -> &Arc<DurableHost> {
        self.replica.durable()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn HostStore> {
        self.replica.durable().store()
    }

    /// The replica (routing, leases).
    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    /// Runs one retention pass now ([`retention::sweep`] with this host's
    /// policy); the host also runs one every policy interval by itself.
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn retention_pass(&self) -> Result<SweepReport, DurableError> {
        retention::sweep(self.durable(), self.mcp_store.as_ref(), &self.retention).await
    }

    /// How many rows each table of the store holds (what an operator
    /// graphs to see retention keep up).
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn row_counts(&self) -> Result<RowCounts, StoreError> {
        self.store().row_counts().await
    }
}
