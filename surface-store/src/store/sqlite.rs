//! [`SqliteStore`]: the embedded default store, a SQLite file (or an
//! in-memory database for tests) through sqlx, with its durability
//! settings (`docs/host.md`, "Durability").

use std::path::PathBuf;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool};

use super::migrations;
use super::sql::{self, sql_store};
use super::{
    ApprovalCursor, ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState,
    Completion, Decision, DispatchWrite, Durability, HostStore, LeaseClaim, McpStore, OutcomeWrite,
    PruneCutoffs, Pruned, RenewedLease, RequestClaim, RouteRecord, RouteState, RouteTake,
    RouteTransition, RouteWrite, RowCounts, RunRecord, StoreError, StoreFuture, SurfaceLease,
    Transition, MAX_ROUTE_ANSWER_BYTES, MAX_STORED_ANNOUNCEMENT_BYTES,
};

/// Default wait for a lock held by another connection or process
/// (SQLite's `busy_timeout`) and for a free pooled connection.
pub const DEFAULT_SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Default number of pooled connections to a SQLite file (SQLite has one
/// writer at a time; more connections only help readers).
pub const DEFAULT_SQLITE_MAX_CONNECTIONS: u32 = 4;

/// Where and how a [`SqliteStore`] opens its database.
#[derive(Clone, Debug)]
pub struct SqliteStoreOptions {
    file: Option<PathBuf>,
    durability: Durability,
    busy_timeout: Duration,
    max_connections: u32,
}

impl SqliteStoreOptions {
    /// A database file, created with its directory's permissions if
    /// missing. Several processes may open the same file (WAL journal).
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self {
            file: Some(path.into()),
            durability: Durability::default(),
            busy_timeout: DEFAULT_SQLITE_BUSY_TIMEOUT,
            max_connections: DEFAULT_SQLITE_MAX_CONNECTIONS,
        }
    }

    /// A private in-memory database (one connection; gone when the store
    /// is dropped): for tests.
    pub fn in_memory() -> Self {
        Self {
            file: None,
            durability: Durability::default(),
            busy_timeout: DEFAULT_SQLITE_BUSY_TIMEOUT,
            max_connections: 1,
        }
    }

    /// Sets the [`Durability`] (default [`Durability::ProcessCrash`]:
    /// `synchronous = NORMAL`; [`Durability::PowerLoss`]: `FULL`).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets how long a statement waits for a lock and a call waits for a
    /// pooled connection (default [`DEFAULT_SQLITE_BUSY_TIMEOUT`]); past
    /// it the operation fails with [`StoreError::Database`].
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets the pool size of a file database (default
    /// [`DEFAULT_SQLITE_MAX_CONNECTIONS`], at least 1).
    pub fn max_connections(mut self, count: u32) -> Self {
        if self.file.is_some() {
            self.max_connections = count.max(1);
        }
        self
    }
}

/// The embedded [`HostStore`]: SQLite through sqlx, schema migrated on
/// [`SqliteStore::open`].
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) the database and applies the crate's
    /// migrations.
    ///
    /// # Errors
    /// [`StoreError::Database`] when the file cannot be opened or the
    /// pragmas set; [`StoreError::Migration`].
    pub async fn open(options: SqliteStoreOptions) -> Result<Self, StoreError> {
        let synchronous = match options.durability {
            Durability::ProcessCrash => SqliteSynchronous::Normal,
            Durability::PowerLoss => SqliteSynchronous::Full,
        };
        let connect = match &options.file {
            Some(path) => SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal),
            None => SqliteConnectOptions::new().in_memory(true),
        }
        .synchronous(synchronous)
        .busy_timeout(options.busy_timeout)
        .foreign_keys(true);
        let mut pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.busy_timeout);
        if options.file.is_none() {
            // The database lives as long as its one connection.
            pool = pool
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        let pool = pool
            .connect_with(connect)
            .await
            .map_err(|e| db("open the database", e))?;
        migrate(&pool).await?;
        Ok(Self { pool })
    }

    /// Closes the pool: later operations fail with [`StoreError::Closed`].
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Applies the migrations. SQLite has no advisory lock for sqlx to take,
/// so two processes opening a new file at once may both start the first
/// migration; the loser's transaction fails, and the retry finds it
/// applied by the winner. A process can lose once per migration, so it
/// tries once per migration plus two, 20 ms apart.
async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    let migrator = migrations::sqlite();
    let attempts = migrator.iter().count() + 2;
    let mut attempt = 1;
    loop {
        match migrator.run(pool).await {
            Ok(()) => return Ok(()),
            Err(_) if attempt < attempts => {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(e) => return Err(StoreError::Migration(Box::new(e))),
        }
    }
}

sql_store!(SqliteStore, Sqlite);
