//! Shared by the store suite and the crash tests: the databases the suite
//! runs on ([`Db`]: in memory, a SQLite file, a database of a throwaway
//! PostgreSQL cluster), and the devices host the runtime's host tests use.
#![allow(dead_code)]

pub mod faults;
pub mod pg;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use surface_runtime::host::{AgentHost, AuthenticatedConnection, KnownBuild};
use surface_store::{
    HostStore, McpStore, MemoryStore, PostgresStore, PostgresStoreOptions, SqliteStore,
    SqliteStoreOptions,
};

/// One database of one backend; [`Db::connect`] opens a new handle (a new
/// pool: as another process would) on the same database.
pub enum Db {
    /// One shared in-process store (a "restart" keeps it).
    Memory(Arc<MemoryStore>),
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

/// A SQL store handle whose pool can be closed (to make writes fail).
pub enum Closable {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl Closable {
    pub async fn close(&self) {
        match self {
            Closable::Sqlite(s) => s.close().await,
            Closable::Postgres(s) => s.close().await,
        }
    }
    pub fn store(&self) -> Arc<dyn HostStore> {
        match self {
            Closable::Sqlite(s) => Arc::new(s.clone()),
            Closable::Postgres(s) => Arc::new(s.clone()),
        }
    }
}

/// A fresh temporary directory (removed by the caller, best effort).
pub fn temp_dir(prefix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

impl Db {
    pub fn name(&self) -> &'static str {
        match self {
            Db::Memory(_) => "memory",
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// A new handle on this database.
    pub async fn connect(&self) -> Arc<dyn HostStore> {
        match self {
            Db::Memory(store) => store.clone(),
            _ => self.closable().await.expect("a SQL backend").store(),
        }
    }

    /// A new handle on this database's tokens and MCP sessions.
    pub async fn connect_mcp(&self) -> Arc<dyn McpStore> {
        match self {
            Db::Memory(store) => store.clone(),
            _ => match self.closable().await.expect("a SQL backend") {
                Closable::Sqlite(s) => Arc::new(s),
                Closable::Postgres(s) => Arc::new(s),
            },
        }
    }

    /// A new SQL handle (`None` for the memory store).
    pub async fn closable(&self) -> Option<Closable> {
        Some(match self {
            Db::Memory(_) => return None,
            Db::Sqlite(path) => Closable::Sqlite(
                SqliteStore::open(SqliteStoreOptions::file(path))
                    .await
                    .expect("sqlite store opens"),
            ),
            Db::Postgres(url) => Closable::Postgres(
                PostgresStore::open(PostgresStoreOptions::new(url))
                    .await
                    .expect("postgres store opens"),
            ),
        })
    }

    /// How the crash tests' child process finds this database.
    pub fn probe_spec(&self) -> String {
        match self {
            Db::Memory(_) => unreachable!("a child process cannot share the memory store"),
            Db::Sqlite(path) => format!("sqlite:{}", path.display()),
            Db::Postgres(url) => format!("postgres:{url}"),
        }
    }

    /// Opens the database a [`Db::probe_spec`] names.
    pub fn from_probe_spec(spec: &str) -> Self {
        if let Some(path) = spec.strip_prefix("sqlite:") {
            Db::Sqlite(PathBuf::from(path))
        } else if let Some(url) = spec.strip_prefix("postgres:") {
            Db::Postgres(url.to_string())
        } else {
            panic!("unknown probe store {spec:?}")
        }
    }
}

/// The devices host of the runtime's host tests: the devices build known,
/// no server tools.
pub fn devices_host() -> AgentHost {
    AgentHost::new().with_known_build(KnownBuild::new(
        "console",
        "build-1",
        crate::host_support::authority(),
    ))
}

pub fn auth(connection_id: &str) -> AuthenticatedConnection {
    AuthenticatedConnection::new(connection_id, "sess-1", "user-1")
}
