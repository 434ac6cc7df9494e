//! The host store of agent-surface (`docs/host.md`, "The durable store"):
//! what the agent host persists — calls, runs, approvals, surface leases
//! and routed calls ([`HostStore`]), and, behind their own trait, the MCP
//! server's bearer tokens and sessions ([`McpStore`]) — with three
//! implementations over the same schema, and the wake-ups between host
//! processes that share one. The host itself (`surface-host`'s `Host`)
//! is built on top; this crate knows nothing of MCP's protocol or of the
//! page's.
//!
//! * `store` — the traits, their records and their three implementations
//!   ([`MemoryStore`], [`SqliteStore`] with the `sqlite` feature, the
//!   default; [`PostgresStore`] with `postgres`), the migrations and the
//!   durability settings;
//! * `wake` — wake-ups between host processes (in process, PostgreSQL
//!   `LISTEN/NOTIFY`).
//!
//! Native only (tokio, through sqlx); the page never needs it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod store;
pub mod wake;

pub use store::{
    ApprovalCursor, ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState,
    Completion, CursorError, Decision, DispatchWrite, Durability, HostStore, LeaseClaim, McpStore,
    MemoryStore, OutcomeWrite, PruneCutoffs, Pruned, RenewedLease, RequestClaim, RouteRecord,
    RouteState, RouteTake, RouteTransition, RouteWrite, RowCounts, RunRecord, StoreError,
    StoreFuture, SurfaceLease, Transition, LEGACY_SURFACE_VERSION,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresStore, PostgresStoreOptions};
#[cfg(feature = "sqlite")]
pub use store::{SqliteStore, SqliteStoreOptions};
