//! [`PostgresStore`]: the host store on a PostgreSQL server through sqlx,
//! with its durability setting (`docs/host.md`, "Durability").

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

use super::migrations;
use super::sql::{self, sql_store};
use super::{
    ApprovalCursor, ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState,
    Completion, Decision, DispatchWrite, Durability, HostStore, LeaseClaim, McpStore, OutcomeWrite,
    PruneCutoffs, Pruned, RenewedLease, RequestClaim, RouteRecord, RouteState, RouteTake,
    RouteTransition, RouteWrite, RowCounts, RunRecord, StoreError, StoreFuture, SurfaceLease,
    Transition, MAX_ROUTE_ANSWER_BYTES, MAX_STORED_ANNOUNCEMENT_BYTES,
};

/// Default wait for a pooled connection (connecting included).
pub const DEFAULT_POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default server-side bound of one statement (`statement_timeout`).
pub const DEFAULT_POSTGRES_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default pool size.
pub const DEFAULT_POSTGRES_MAX_CONNECTIONS: u32 = 8;

/// How a [`PostgresStore`] connects.
#[derive(Clone, Debug)]
pub struct PostgresStoreOptions {
    url: String,
    durability: Durability,
    acquire_timeout: Duration,
    statement_timeout: Duration,
    max_connections: u32,
}

impl PostgresStoreOptions {
    /// A connection URL (`postgres://user@127.0.0.1:5432/db`; TLS is not
    /// built in: use a loopback or Unix-socket server).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            durability: Durability::default(),
            acquire_timeout: DEFAULT_POSTGRES_ACQUIRE_TIMEOUT,
            statement_timeout: DEFAULT_POSTGRES_STATEMENT_TIMEOUT,
            max_connections: DEFAULT_POSTGRES_MAX_CONNECTIONS,
        }
    }

    /// Sets the [`Durability`] (default [`Durability::ProcessCrash`]:
    /// `synchronous_commit = off`; [`Durability::PowerLoss`]: `on`).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets the wait for a pooled connection (default
    /// [`DEFAULT_POSTGRES_ACQUIRE_TIMEOUT`]).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Sets the server-side bound of one statement (default
    /// [`DEFAULT_POSTGRES_STATEMENT_TIMEOUT`]; whole milliseconds, at
    /// least 1).
    pub fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = timeout;
        self
    }

    /// Sets the pool size (default [`DEFAULT_POSTGRES_MAX_CONNECTIONS`],
    /// at least 1).
    pub fn max_connections(mut self, count: u32) -> Self {
        self.max_connections = count.max(1);
        self
    }
}

/// The PostgreSQL [`HostStore`], schema migrated on
/// [`PostgresStore::open`].
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects and applies the crate's migrations.
    ///
    /// # Errors
    /// [`StoreError::Database`] for a URL that does not parse or a server
    /// that cannot be reached within the acquire timeout;
    /// [`StoreError::Migration`].
    pub async fn open(options: PostgresStoreOptions) -> Result<Self, StoreError> {
        let commit = match options.durability {
            Durability::ProcessCrash => "off",
            Durability::PowerLoss => "on",
        };
        let statement_ms = options
            .statement_timeout
            .as_millis()
            .clamp(1, u32::MAX as u128);
        let connect: PgConnectOptions = options
            .url
            .parse()
            .map_err(|e| db("parse the connection URL", e))?;
        let connect = connect.options([
            ("synchronous_commit", commit.to_string()),
            ("statement_timeout", statement_ms.to_string()),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| db("connect", e))?;
        migrations::postgres()
            .run(&pool)
            .await
            .map_err(|e| StoreError::Migration(Box::new(e)))?;
        Ok(Self { pool })
    }

    /// The pool (shared with the wake-ups of `crate::wake`).
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool: later operations fail with [`StoreError::Closed`].
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

sql_store!(PostgresStore, Postgres);
