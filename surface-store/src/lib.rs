//! The durable agent host of agent-surface (`docs/host.md`, "The durable
//! store"): [`DurableHost`] wraps the in-memory
//! [`AgentHost`](surface_runtime::host::AgentHost) with a [`HostStore`], so
//! the dispatch identity of every call is written before the call leaves
//! the host, every state change is one conditional statement, and a host
//! started on an existing store refuses every invocation id it ever
//! dispatched, reports the calls that were outstanding as interrupted
//! (never replays them) and keeps pending approvals decidable.
//!
//! * `store` — the [`HostStore`] trait, its records and its three
//!   implementations ([`MemoryStore`], [`SqliteStore`] with the `sqlite`
//!   feature, the default; [`PostgresStore`] with `postgres`), the
//!   migrations and the durability settings;
//! * `durable` — [`DurableHost`], recovery ([`Recovery`]) and
//!   reconciliation through the backend's `getInvocation`;
//! * `wake` — wake-ups between host processes (in process, PostgreSQL
//!   `LISTEN/NOTIFY`);
//! * `replica` — [`Replica`](replica::Replica): several host processes on
//!   one store, each call run by the replica holding its tab.
//!
//! Native only (tokio, through sqlx); the page never needs it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod durable;
pub mod replica;
pub mod store;
pub mod wake;

pub use durable::{
    digest_call, digest_result, DurableError, DurableHost, Recovery, DEFAULT_RESTORED_RUNS,
    RESUMED_SURFACE_VERSION,
};
pub use store::{
    ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState, Completion, Decision,
    DispatchWrite, Durability, HostStore, LeaseClaim, MemoryStore, OutcomeWrite, RenewedLease,
    RouteRecord, RouteState, RouteTake, RouteTransition, RouteWrite, RunRecord, StoreError,
    StoreFuture, SurfaceLease, Transition, LEGACY_SURFACE_VERSION,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresStore, PostgresStoreOptions};
#[cfg(feature = "sqlite")]
pub use store::{SqliteStore, SqliteStoreOptions};
