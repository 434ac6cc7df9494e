//! The agent host's durable store (`docs/host.md`, "The durable store"):
//! the [`HostStore`] trait and what it holds — every dispatched
//! invocation ([`CallRecord`]), its result or reconciliation receipt, the
//! runs and their tab ([`RunRecord`]) and the backend approvals a call is
//! waiting for ([`ApprovalRecord`]).
//!
//! Every state change is one conditional statement (`UPDATE … WHERE
//! state = 'dispatched'`): it happens once however many processes race on
//! one database, and the loser learns the state the winner left
//! ([`Transition::NotApplied`]). A dispatch row is an `INSERT` that never
//! overwrites ([`DispatchWrite::Exists`]), so an invocation id is
//! dispatched at most once for the life of the database.
//!
//! Implementations: [`MemoryStore`] (in process, for tests and as the
//! benchmark baseline), [`SqliteStore`] (`sqlite` feature, the embedded
//! default) and [`PostgresStore`] (`postgres` feature).
//!
//! * `memory` — [`MemoryStore`]; `sql` — the statements both SQL stores
//!   share; `legacy` — results recorded by earlier versions, read in
//!   today's shape; `sqlite`, `postgres` — their connection options and
//!   durability settings; `migrations` — the schema shipped with the crate.

#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
mod legacy;
mod mcp;
mod memory;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod migrations;
mod route;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::future::Future;
use std::pin::Pin;

pub use legacy::LEGACY_SURFACE_VERSION;
pub use mcp::{McpStore, RequestClaim};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{
    PostgresStore, PostgresStoreOptions, DEFAULT_POSTGRES_ACQUIRE_TIMEOUT,
    DEFAULT_POSTGRES_MAX_CONNECTIONS, DEFAULT_POSTGRES_STATEMENT_TIMEOUT,
};
pub use route::{RouteRecord, RouteState, RouteTake, RouteTransition, RouteWrite};
#[cfg(feature = "sqlite")]
pub use sqlite::{
    SqliteStore, SqliteStoreOptions, DEFAULT_SQLITE_BUSY_TIMEOUT, DEFAULT_SQLITE_MAX_CONNECTIONS,
};

/// A boxed, `Send` future of a store operation.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Default bound of the rows one listing returns
/// ([`HostStore::pending_approvals`], [`HostStore::active_runs`]).
pub const DEFAULT_LIST_LIMIT: u32 = 1_000;
/// Default bound of one stored result or receipt, in bytes of its JSON
/// text (the session envelope's bound, `docs/limits.md`). A larger one is
/// refused with [`StoreError::TooLarge`].
pub const MAX_STORED_JSON_BYTES: usize = 262_144;

/// Largest answer of a routed call (`host_routes.result`), in bytes of
/// JSON: a result of [`MAX_STORED_JSON_BYTES`] and 1 KiB for the replica's
/// envelope around it (`docs/limits.md`).
pub const MAX_ROUTE_ANSWER_BYTES: usize = MAX_STORED_JSON_BYTES + 1024;

/// How much a committed write survives: the setting applied to every
/// connection a SQL store opens (`docs/host.md`, "Durability").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Survives a crash of the host process (what the `kill -9` tests
    /// prove); a power loss or OS crash may lose the last committed
    /// transactions (never corrupts the database). SQLite: WAL journal,
    /// `synchronous = NORMAL`; PostgreSQL: `synchronous_commit = off`.
    #[default]
    ProcessCrash,
    /// Also survives a power loss: every commit is flushed to disk before
    /// it returns. SQLite: WAL journal, `synchronous = FULL`; PostgreSQL:
    /// `synchronous_commit = on`.
    PowerLoss,
}

/// Where a call stands (`host_calls.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallState {
    /// Written before the call left the host; no result yet.
    Dispatched,
    /// Its result was accepted.
    Completed,
    /// Its connection closed or the host restarted before the result: the
    /// outcome is unknown (a mutation may have taken effect). Never
    /// re-dispatched.
    Interrupted,
    /// An interrupted call whose outcome the backend reported through
    /// `getInvocation` (the receipt is stored).
    Reconciled,
}

impl CallState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Dispatched => "dispatched",
            CallState::Completed => "completed",
            CallState::Interrupted => "interrupted",
            CallState::Reconciled => "reconciled",
        }
    }

    /// Parses the stored spelling.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for anything else.
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "dispatched" => CallState::Dispatched,
            "completed" => CallState::Completed,
            "interrupted" => CallState::Interrupted,
            "reconciled" => CallState::Reconciled,
            other => return Err(StoreError::corrupt("host_calls.state", other)),
        })
    }
}

/// One dispatched invocation as stored (`host_calls`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// The invocation id (the primary key: dispatched at most once).
    pub invocation_id: String,
    /// The host instance that dispatched it (`DurableHost`'s
    /// owner name); a restart interrupts only its own calls.
    pub owner: String,
    /// Run id.
    pub run_id: String,
    /// The model's tool call id.
    pub tool_call_id: String,
    /// The authenticated session the call went to.
    pub session_id: String,
    /// The tab.
    pub tab_id: String,
    /// The connection it was sent on.
    pub connection_id: String,
    /// The capability id the call named (`domain:<path>` or `view:…`; rows
    /// written before protocol 1 hold the host's canonical id), which its
    /// result echoes.
    pub capability_id: String,
    /// The procedure's effect (`server-mutation`, …), `None` for a view
    /// capability.
    pub effect: Option<String>,
    /// SHA-256 of the call envelope as sent (32 bytes), to tell an
    /// identical re-dispatch from a changed one.
    pub envelope_digest: Vec<u8>,
    /// Where it stands.
    pub state: CallState,
    /// SHA-256 of the accepted result (32 bytes), once completed.
    pub result_digest: Option<Vec<u8>>,
    /// The accepted result's JSON, once completed.
    pub result: Option<String>,
    /// The backend receipt's JSON, once reconciled.
    pub receipt: Option<String>,
    /// When the row was written, milliseconds since the Unix epoch.
    pub dispatched_at_ms: i64,
    /// When it left `dispatched`, milliseconds since the Unix epoch.
    pub settled_at_ms: Option<i64>,
    /// The id the backend knows the call by when it is not
    /// `invocation_id`: a call the user confirmed in the page under
    /// `ConfirmationMode::Hold` runs as its `retryInvocationId`
    /// ([`HostStore::set_backend_invocation`]). Reconciliation and
    /// resumption use it.
    pub backend_invocation_id: Option<String>,
}

impl CallRecord {
    /// The id the backend knows this call by: `backend_invocation_id`,
    /// else `invocation_id`.
    pub fn backend_id(&self) -> &str {
        self.backend_invocation_id
            .as_deref()
            .unwrap_or(&self.invocation_id)
    }
}

/// The result written by [`HostStore::complete`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// SHA-256 of the result (32 bytes).
    pub result_digest: Vec<u8>,
    /// The result's JSON (at most [`MAX_STORED_JSON_BYTES`]).
    pub result: String,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
}

/// What [`HostStore::record_dispatch`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatchWrite {
    /// The row is new: the call may leave.
    Inserted,
    /// The invocation id was dispatched before (by this process, an
    /// earlier incarnation or another process); nothing was written.
    Exists(Box<CallRecord>),
}

/// What a conditional transition did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// This statement moved the row.
    Applied,
    /// The row was not in the expected state (another writer won, or it
    /// was already settled); it is as returned.
    NotApplied(Box<CallRecord>),
    /// No row has this id.
    Unknown,
}

/// A run as stored (`host_runs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    /// Run id.
    pub run_id: String,
    /// The host instance that owns it.
    pub owner: String,
    /// The authenticated session the run acts for.
    pub session_id: String,
    /// Its tab, `None` for a run without a page.
    pub tab_id: Option<String>,
    /// `embedded` or `headless`.
    pub kind: String,
    /// `false` once ended.
    pub active: bool,
    /// Milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// When it ended (milliseconds since the Unix epoch); `None` while
    /// active, and for a run ended before the store recorded end times.
    pub ended_at_ms: Option<i64>,
}

/// Where a backend approval stands (`host_approvals.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApprovalState {
    /// Waiting for a person's decision.
    Pending,
    /// Approved.
    Approved,
    /// Rejected.
    Rejected,
    /// Withdrawn while pending by the requester's agent (an MCP client's
    /// `tasks/cancel`, [`HostStore::withdraw_approval`]): no decision is
    /// recorded and the host never resumes it. The backend's own held
    /// approval is not withdrawn (its gateway has no withdraw call).
    Withdrawn,
    /// Not decided before [`ApprovalRecord::expires_at_ms`]
    /// ([`HostStore::expire_approvals`]): no decision is accepted any
    /// more; the run is told it expired and the call did not run.
    Expired,
}

impl ApprovalState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Rejected => "rejected",
            ApprovalState::Withdrawn => "withdrawn",
            ApprovalState::Expired => "expired",
        }
    }

    /// Parses the stored spelling.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for anything else.
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved,
            "rejected" => ApprovalState::Rejected,
            "withdrawn" => ApprovalState::Withdrawn,
            "expired" => ApprovalState::Expired,
            other => return Err(StoreError::corrupt("host_approvals.state", other)),
        })
    }
}

/// A person's decision on a pending approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApprovalDecision {
    /// Approve.
    Approve,
    /// Reject.
    Reject,
}

impl ApprovalDecision {
    /// The state it leads to.
    pub fn state(self) -> ApprovalState {
        match self {
            ApprovalDecision::Approve => ApprovalState::Approved,
            ApprovalDecision::Reject => ApprovalState::Rejected,
        }
    }
}

/// A backend approval a call waits for (`host_approvals`): the backend
/// answered the call `DOMAIN_APPROVAL_REQUIRED` with
/// [`Self::backend_approval_id`].
///
/// The host knows an approval by its own id, [`Self::approval_id`]: the
/// held call's invocation id (one call holds at most one approval). The
/// backend's id is not unique here — a backend that restarted numbers its
/// approvals again, and a page can answer its own call with any id — so
/// it is never what the host decides, lists or resumes by (docs/host.md,
/// "Threat model", approval identity).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalRecord {
    /// The host's id of this approval (primary key): the held call's
    /// invocation id. Approvers decide by it; an MCP task names it.
    pub approval_id: String,
    /// The backend's approval id (the `approvalId` the gateway answered
    /// and `resumeApproval` takes). Several rows may carry the same one.
    pub backend_approval_id: String,
    /// The invocation it holds.
    pub invocation_id: String,
    /// Its run.
    pub run_id: String,
    /// Its tool call.
    pub tool_call_id: String,
    /// The capability id the held call named (as
    /// [`CallRecord::capability_id`]).
    pub capability_id: String,
    /// Where it stands.
    pub state: ApprovalState,
    /// Milliseconds since the Unix epoch.
    pub requested_at_ms: i64,
    /// Who decided (the application's authenticated approver).
    pub decided_by: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub decided_at_ms: Option<i64>,
    /// The id the backend knows the held invocation by (the
    /// `invocationId` of the gateway's `resumeApproval`, with
    /// `approval_id` as its `approvalId`): the call's
    /// [`CallRecord::backend_id`] when the approval was recorded.
    pub backend_invocation_id: String,
    /// The outcome of resuming it through the backend, once known: the
    /// JSON of the `AgentInvocationResult` the run receives (under the
    /// run's own invocation id), written once
    /// ([`HostStore::record_outcome`]).
    pub outcome: Option<String>,
    /// When the outcome was recorded, milliseconds since the Unix epoch.
    pub resumed_at_ms: Option<i64>,
    /// When a pending approval expires (milliseconds since the Unix
    /// epoch): the backend's `expiresAt` when it gave one, never later
    /// than the host's own bound. Past it no decision is accepted.
    pub expires_at_ms: i64,
}

impl ApprovalRecord {
    /// Where this approval stands in the oldest-first order of pending
    /// approvals ([`HostStore::pending_approvals`]' `after`).
    pub fn cursor(&self) -> ApprovalCursor {
        ApprovalCursor {
            requested_at_ms: self.requested_at_ms,
            approval_id: self.approval_id.clone(),
        }
    }
}

/// A position in the oldest-first order of approvals (`requested_at_ms`,
/// then `approval_id`): a page of pending approvals starts after it.
/// Written `MS.ID` ([`std::fmt::Display`], [`std::str::FromStr`]) for a
/// page link.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApprovalCursor {
    /// The approval's `requested_at_ms`.
    pub requested_at_ms: i64,
    /// The approval's id.
    pub approval_id: String,
}

impl std::fmt::Display for ApprovalCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.requested_at_ms, self.approval_id)
    }
}

/// A cursor text that is not `MS.ID` (at most 200 bytes).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a page cursor is a number of milliseconds, a dot and an approval id")]
pub struct CursorError;

impl std::str::FromStr for ApprovalCursor {
    type Err = CursorError;

    fn from_str(text: &str) -> Result<Self, CursorError> {
        if text.len() > 200 {
            return Err(CursorError);
        }
        let (ms, id) = text.split_once('.').ok_or(CursorError)?;
        let requested_at_ms = ms.parse::<i64>().map_err(|_| CursorError)?;
        if id.is_empty() || !ms.bytes().all(|b| b.is_ascii_digit()) {
            return Err(CursorError);
        }
        Ok(ApprovalCursor {
            requested_at_ms,
            approval_id: id.to_string(),
        })
    }
}

/// What one retention pass ([`HostStore::prune`]) may delete: rows
/// finished before these instants (milliseconds since the Unix epoch), at
/// most `batch` rows per table. What a restart or a replica still needs —
/// a call dispatched or interrupted and not reconciled, a pending
/// approval, a decided one whose outcome is not recorded, a route still
/// requested or taken, an active run — is never deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PruneCutoffs {
    /// Completed and reconciled calls settled before this (and not held
    /// by an approval still waiting), answered and interrupted routes
    /// settled before this, ended runs ended before this, approvals whose
    /// outcome was recorded (or withdrawn/expired) before this, surface
    /// leases expired before this.
    pub finished_before_ms: i64,
    /// Rows per table per pass (bounds one pass's work and lock time).
    pub batch: u32,
}

/// Rows one [`HostStore::prune`] pass deleted, per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// `host_calls`.
    pub calls: u64,
    /// `host_routes`.
    pub routes: u64,
    /// `host_runs`.
    pub runs: u64,
    /// `host_approvals`.
    pub approvals: u64,
    /// `host_surfaces`.
    pub surfaces: u64,
}

impl Pruned {
    /// Rows deleted in all.
    pub fn total(&self) -> u64 {
        self.calls + self.routes + self.runs + self.approvals + self.surfaces
    }
}

/// How many rows each table holds ([`HostStore::row_counts`]): what an
/// operator graphs to see retention keep up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowCounts {
    /// `host_calls`.
    pub calls: u64,
    /// `host_routes`.
    pub routes: u64,
    /// `host_runs`.
    pub runs: u64,
    /// `host_approvals`.
    pub approvals: u64,
    /// `host_surfaces`.
    pub surfaces: u64,
    /// `host_tokens` (the MCP store's).
    pub tokens: u64,
    /// `host_mcp_sessions` (the MCP store's).
    pub mcp_sessions: u64,
}

/// What [`HostStore::decide_approval`] (or
/// [`HostStore::withdraw_approval`]) did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// This statement decided it.
    Applied,
    /// It was already decided; it is as returned.
    AlreadyDecided(Box<ApprovalRecord>),
    /// No approval has this id.
    Unknown,
}

/// A tab's live surface as a host process holds it (`host_surfaces`):
/// the verified announcement and a lease naming the replica that holds the
/// tab's socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SurfaceLease {
    /// The tab (primary key).
    pub tab_id: String,
    /// Its authenticated session.
    pub session_id: String,
    /// The host process holding the socket.
    pub replica: String,
    /// The connection id the announcement came on.
    pub connection_id: String,
    /// The verified announcement's JSON (at most
    /// [`MAX_STORED_ANNOUNCEMENT_BYTES`]).
    pub announcement: String,
    /// Until when the lease holds, milliseconds since the Unix epoch.
    pub lease_expires_at_ms: i64,
    /// When it was last written, milliseconds since the Unix epoch.
    pub updated_at_ms: i64,
}

/// What [`HostStore::claim_surface`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseClaim {
    /// The lease is this replica's now (taken, renewed or re-announced).
    Held,
    /// Another replica holds an unexpired lease on the tab; it is as
    /// returned.
    HeldElsewhere(Box<SurfaceLease>),
}

/// A lease [`HostStore::renew_leases`] extended: its tab and the
/// connection it names (`docs/host.md`, "Surface leases").
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RenewedLease {
    /// The tab.
    pub tab_id: String,
    /// The connection the lease was claimed for.
    pub connection_id: String,
}

/// Largest announcement a surface lease stores: 1 MiB of JSON.
pub const MAX_STORED_ANNOUNCEMENT_BYTES: usize = 1 << 20;

/// What [`HostStore::record_outcome`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutcomeWrite {
    /// This statement recorded it.
    Applied,
    /// Not recorded: the approval is still pending, or an outcome was
    /// recorded first (by another writer); it is as returned.
    NotApplied(Box<ApprovalRecord>),
    /// No approval has this id.
    Unknown,
}

/// Why a store operation failed. Every failure to write means the caller
/// must not proceed (the host refuses to dispatch: fail closed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be reached or refused the statement
    /// (connection, pool timeout, disk full, read-only file, …).
    #[error("the host store could not {operation}: {source}")]
    Database {
        /// What the store was doing (`record the dispatch`, …).
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Applying the schema migrations failed.
    #[error("the host store's schema migrations failed: {0}")]
    Migration(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A stored value is not one this crate writes (the database was
    /// edited by something else).
    #[error("the host store holds {value:?} in {column}, which this version never writes")]
    Corrupt {
        /// `table.column`.
        column: &'static str,
        /// The value found (at most 64 characters).
        value: String,
    },
    /// A result or receipt is larger than the store keeps.
    #[error("a {what} of {bytes} bytes is larger than the host store keeps ({limit} bytes)")]
    TooLarge {
        /// `result` or `receipt`.
        what: &'static str,
        /// Its size.
        bytes: usize,
        /// [`MAX_STORED_JSON_BYTES`].
        limit: usize,
    },
    /// The store was closed.
    #[error("the host store is closed")]
    Closed,
}

impl StoreError {
    /// [`StoreError::Corrupt`]: `column` holds `value`, which this version
    /// cannot read (the value cut to 64 characters, so a log line stays
    /// short).
    pub fn corrupt(column: &'static str, value: &str) -> Self {
        StoreError::Corrupt {
            column,
            value: value.chars().take(64).collect(),
        }
    }

    pub(crate) fn check_size(what: &'static str, json: &str) -> Result<(), Self> {
        Self::check_size_within(what, json, MAX_STORED_JSON_BYTES)
    }

    pub(crate) fn check_size_within(
        what: &'static str,
        json: &str,
        limit: usize,
    ) -> Result<(), Self> {
        if json.len() > limit {
            return Err(StoreError::TooLarge {
                what,
                bytes: json.len(),
                limit,
            });
        }
        Ok(())
    }
}

/// The agent host's durable state (module docs). Implemented by
/// [`MemoryStore`], [`SqliteStore`] and [`PostgresStore`]; an application
/// may implement it over its own database with the same guarantees: a
/// dispatch row is never overwritten, every transition is conditional on
/// the state it leaves, and an `Ok` is returned only once the write is
/// committed (with the store's [`Durability`]).
pub trait HostStore: Send + Sync {
    /// Writes the row of a call about to leave the host, in state
    /// `dispatched`, unless the invocation id has a row already.
    ///
    /// # Errors
    /// [`StoreError`] when the write failed: the call must not be sent.
    fn record_dispatch<'a>(&'a self, call: &'a CallRecord) -> StoreFuture<'a, DispatchWrite>;

    /// `dispatched` → `completed`, storing the result.
    ///
    /// # Errors
    /// [`StoreError`]; [`StoreError::TooLarge`] for a result over
    /// [`MAX_STORED_JSON_BYTES`].
    fn complete<'a>(
        &'a self,
        invocation_id: &'a str,
        completion: &'a Completion,
    ) -> StoreFuture<'a, Transition>;

    /// `dispatched` → `interrupted`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn interrupt<'a>(&'a self, invocation_id: &'a str, at_ms: i64) -> StoreFuture<'a, Transition>;

    /// Every call of `owner` still `dispatched` → `interrupted`, in one
    /// statement; returns them (after the change) sorted by invocation id.
    /// A host runs this when it starts on an existing store.
    ///
    /// # Errors
    /// [`StoreError`].
    fn interrupt_owner<'a>(
        &'a self,
        owner: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<CallRecord>>;

    /// `interrupted` → `reconciled`, storing the backend's receipt JSON.
    ///
    /// # Errors
    /// [`StoreError`]; [`StoreError::TooLarge`].
    fn reconcile<'a>(
        &'a self,
        invocation_id: &'a str,
        receipt: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Transition>;

    /// The row of one invocation id.
    ///
    /// # Errors
    /// [`StoreError`].
    fn call<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<CallRecord>>;

    /// Calls of `owner` in `state`, sorted by invocation id, at most
    /// `limit`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn calls_in_state<'a>(
        &'a self,
        owner: &'a str,
        state: CallState,
        limit: u32,
    ) -> StoreFuture<'a, Vec<CallRecord>>;

    /// Writes a new run (`active`). `false` when the run id exists.
    ///
    /// # Errors
    /// [`StoreError`].
    fn record_run<'a>(&'a self, run: &'a RunRecord) -> StoreFuture<'a, bool>;

    /// Points a run at another tab. `false` when no such run exists.
    ///
    /// # Errors
    /// [`StoreError`].
    fn set_run_tab<'a>(&'a self, run_id: &'a str, tab_id: Option<&'a str>)
        -> StoreFuture<'a, bool>;

    /// `active` → `ended`. `false` when it was not active.
    ///
    /// # Errors
    /// [`StoreError`].
    fn end_run<'a>(&'a self, run_id: &'a str, at_ms: i64) -> StoreFuture<'a, bool>;

    /// The active runs of `owner`, sorted by run id, at most `limit`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn active_runs<'a>(&'a self, owner: &'a str, limit: u32) -> StoreFuture<'a, Vec<RunRecord>>;

    /// Writes a pending approval. `false` when the approval id (the held
    /// call's invocation id) exists: one call holds one approval.
    ///
    /// # Errors
    /// [`StoreError`].
    fn record_approval<'a>(&'a self, approval: &'a ApprovalRecord) -> StoreFuture<'a, bool>;

    /// `pending` → `approved` or `rejected`, while the approval has not
    /// expired at `at_ms` (an expired one is [`Decision::AlreadyDecided`]
    /// with its row, still `pending` until [`Self::expire_approvals`]).
    ///
    /// # Errors
    /// [`StoreError`].
    fn decide_approval<'a>(
        &'a self,
        approval_id: &'a str,
        decision: ApprovalDecision,
        decided_by: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Decision>;

    /// `pending` → `withdrawn` at `at_ms` (stored as `decided_at_ms`,
    /// `decided_by` stays empty), in one conditional statement:
    /// [`Decision::AlreadyDecided`] with the row for an approval that is not
    /// pending (decided, or withdrawn before).
    ///
    /// # Errors
    /// [`StoreError`].
    fn withdraw_approval<'a>(
        &'a self,
        approval_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Decision>;

    /// One approval.
    ///
    /// # Errors
    /// [`StoreError`].
    fn approval<'a>(&'a self, approval_id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>>;

    /// Pending approvals not expired at `now_ms`, oldest first
    /// (`requested_at_ms`, then `approval_id`), starting after `after`, at
    /// most `limit`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn pending_approvals<'a>(
        &'a self,
        after: Option<&'a ApprovalCursor>,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// The approvals naming the backend approval `backend_approval_id`,
    /// oldest first, at most `limit`: more than one pending is a conflict
    /// (a page that answered its call with another call's approval id, or
    /// a backend that numbers its approvals again after a restart).
    ///
    /// # Errors
    /// [`StoreError`].
    fn backend_approvals<'a>(
        &'a self,
        backend_approval_id: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// `pending` → `expired` for approvals whose `expires_at_ms` is not
    /// after `now_ms` (stored as `decided_at_ms`), at most `limit`, in one
    /// conditional statement; returns the rows it expired.
    ///
    /// # Errors
    /// [`StoreError`].
    fn expire_approvals<'a>(
        &'a self,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// Ends the active runs started before `started_before_ms` (at
    /// `at_ms`), at most `limit`; returns their ids (the run age bound of
    /// retention: their tokens are revoked next).
    ///
    /// # Errors
    /// [`StoreError`].
    fn end_runs_started_before<'a>(
        &'a self,
        started_before_ms: i64,
        at_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<String>>;

    /// One retention pass: deletes finished rows ([`PruneCutoffs`]), at
    /// most `cutoffs.batch` per table.
    ///
    /// # Errors
    /// [`StoreError`].
    fn prune<'a>(&'a self, cutoffs: PruneCutoffs) -> StoreFuture<'a, Pruned>;

    /// How many rows each of this store's tables holds (the MCP tables
    /// included when the same store keeps them).
    ///
    /// # Errors
    /// [`StoreError`].
    fn row_counts<'a>(&'a self) -> StoreFuture<'a, RowCounts>;

    /// The approvals of one run, oldest first, at most `limit` (how a run
    /// observes the outcome of a resumed approval).
    ///
    /// # Errors
    /// [`StoreError`].
    fn run_approvals<'a>(
        &'a self,
        run_id: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// Approvals decided (approved, rejected or expired; never a withdrawn
    /// one) but not resumed yet (no outcome), oldest first, at
    /// most `limit`: what a host that stopped between a decision and its
    /// resumption still has to resume.
    ///
    /// # Errors
    /// [`StoreError`].
    fn approvals_awaiting_resume<'a>(&'a self, limit: u32) -> StoreFuture<'a, Vec<ApprovalRecord>>;

    /// Records the outcome of resuming a decided approval (`outcome`: the
    /// run's result JSON, at most [`MAX_STORED_JSON_BYTES`]), once:
    /// conditional on the approval being decided (approved, rejected or
    /// expired; not withdrawn) and having no outcome.
    ///
    /// # Errors
    /// [`StoreError`] ([`StoreError::TooLarge`] for a larger outcome).
    fn record_outcome<'a>(
        &'a self,
        approval_id: &'a str,
        outcome: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, OutcomeWrite>;

    /// Takes or updates `lease.tab_id`'s lease for `lease.replica` — one
    /// conditional statement: it applies when no lease exists, when this
    /// replica holds it, or when it expired before `now_ms`.
    ///
    /// # Errors
    /// [`StoreError`] ([`StoreError::TooLarge`] past
    /// [`MAX_STORED_ANNOUNCEMENT_BYTES`]).
    fn claim_surface<'a>(
        &'a self,
        lease: &'a SurfaceLease,
        now_ms: i64,
    ) -> StoreFuture<'a, LeaseClaim>;

    /// Extends every unexpired lease `replica` holds to `expires_at_ms`, in
    /// one statement; returns them sorted by tab id (the caller compares
    /// them with the sockets it has: a lease it holds for a socket it no
    /// longer has is released, a socket whose lease is missing is claimed
    /// again). A lease that expired before `now_ms` is not revived, and
    /// one another replica took over is not touched.
    ///
    /// # Errors
    /// [`StoreError`].
    fn renew_leases<'a>(
        &'a self,
        replica: &'a str,
        expires_at_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<RenewedLease>>;

    /// Drops `tab_id`'s lease if `replica` holds it for `connection_id`
    /// (that socket closed); `false` otherwise — a lease the tab's newer
    /// connection claimed stays.
    ///
    /// # Errors
    /// [`StoreError`].
    fn release_surface<'a>(
        &'a self,
        tab_id: &'a str,
        replica: &'a str,
        connection_id: &'a str,
    ) -> StoreFuture<'a, bool>;

    /// `tab_id`'s lease, expired or not.
    ///
    /// # Errors
    /// [`StoreError`].
    fn surface<'a>(&'a self, tab_id: &'a str) -> StoreFuture<'a, Option<SurfaceLease>>;

    /// Leases that expired before `now_ms` (their replica stopped renewing),
    /// oldest first, at most `limit`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn expired_surfaces<'a>(
        &'a self,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<SurfaceLease>>;

    /// Records the id the backend knows a `dispatched` call by (the
    /// `retryInvocationId` of a call confirmed in the page), once:
    /// conditional on the call being `dispatched` with no such id yet.
    ///
    /// # Errors
    /// [`StoreError`].
    fn set_backend_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        backend_invocation_id: &'a str,
    ) -> StoreFuture<'a, Transition>;

    /// One run, active or ended (any owner).
    ///
    /// # Errors
    /// [`StoreError`].
    fn run<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunRecord>>;

    /// Writes a routed call `requested` unless a routed call has its
    /// invocation id (`docs/host.md`, "Replicas").
    ///
    /// # Errors
    /// [`StoreError`] ([`StoreError::TooLarge`] for a request over
    /// [`MAX_STORED_JSON_BYTES`]): the call must not be routed.
    fn record_route<'a>(&'a self, route: &'a RouteRecord) -> StoreFuture<'a, RouteWrite>;

    /// `requested` → `taken`, by its `holder` only, and only if it was
    /// requested at or after `not_before_ms` (a row older than the call
    /// timeout is never taken: its requester stopped waiting); one
    /// statement that also returns the row.
    ///
    /// # Errors
    /// [`StoreError`].
    fn take_route<'a>(
        &'a self,
        invocation_id: &'a str,
        holder: &'a str,
        not_before_ms: i64,
    ) -> StoreFuture<'a, RouteTake>;

    /// Withdraws a routed call whose [`Self::record_route`] failed — its
    /// insert may have committed unseen, or may still commit: writes the
    /// row `interrupted` when the id has none, or moves this requester's
    /// `requested` row to `interrupted`, in one statement; an insert that
    /// commits later finds the id taken. Applied: the call never ran and
    /// never will (`docs/host.md`, "Replicas": "Not sent" is said only
    /// when it is certain).
    ///
    /// # Errors
    /// [`StoreError`].
    fn withdraw_route<'a>(
        &'a self,
        route: &'a RouteRecord,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition>;

    /// `requested` → `interrupted` only: applied, the call never ran and
    /// never will.
    ///
    /// # Errors
    /// [`StoreError`].
    fn cancel_route<'a>(
        &'a self,
        invocation_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition>;

    /// Every routed call `requester` still has `requested` →
    /// `interrupted`, in one statement (a requester that restarts: nobody
    /// waits for them); returns them sorted by invocation id.
    ///
    /// # Errors
    /// [`StoreError`].
    fn cancel_requester_routes<'a>(
        &'a self,
        requester: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<RouteRecord>>;

    /// Drops every surface lease `replica` holds (a replica starting: it
    /// holds no socket yet); returns how many.
    ///
    /// # Errors
    /// [`StoreError`].
    fn release_replica_surfaces<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, u64>;

    /// `taken` → `answered`, storing the result JSON (the replica's
    /// `CallEnd`, at most [`MAX_ROUTE_ANSWER_BYTES`]: a result the call
    /// rows hold, and its envelope).
    ///
    /// # Errors
    /// [`StoreError`] ([`StoreError::TooLarge`]).
    fn answer_route<'a>(
        &'a self,
        invocation_id: &'a str,
        result: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition>;

    /// Records the latest progress of a routed call (the page's
    /// `BrowserSurfaceProgress` JSON) while it is `taken`, by its
    /// `holder` only; applied, the holder wakes the requester, which
    /// relays it to the agent (`docs/host.md`, "Replicas").
    ///
    /// # Errors
    /// [`StoreError`] ([`StoreError::TooLarge`] over
    /// [`MAX_STORED_JSON_BYTES`]).
    fn progress_route<'a>(
        &'a self,
        invocation_id: &'a str,
        holder: &'a str,
        progress: &'a str,
    ) -> StoreFuture<'a, RouteTransition>;

    /// `requested` or `taken` → `interrupted`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn interrupt_route<'a>(
        &'a self,
        invocation_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition>;

    /// One routed call.
    ///
    /// # Errors
    /// [`StoreError`].
    fn route<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<RouteRecord>>;

    /// The routed calls `holder` has in `state`, requested at or after
    /// `since_ms` (0: all), oldest first, at most `limit` (what a holder
    /// re-reads on [`crate::wake::Delivery::Rescan`] and at every lease
    /// renewal: the `requested` rows young enough to take).
    ///
    /// # Errors
    /// [`StoreError`].
    fn routes_for_holder<'a>(
        &'a self,
        holder: &'a str,
        state: RouteState,
        since_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<RouteRecord>>;

    /// Every routed call of `holder` still `requested` or `taken` →
    /// `interrupted`, in one statement; returns them (after the change)
    /// sorted by invocation id. Run when `holder` restarts, or when its
    /// leases expired (it stopped).
    ///
    /// # Errors
    /// [`StoreError`].
    fn interrupt_holder_routes<'a>(
        &'a self,
        holder: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<RouteRecord>>;
}
