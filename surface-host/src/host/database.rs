//! Where a [`Host`](super::Host) keeps its state: [`Database`], as a
//! command line names it (`memory`, `sqlite:PATH`, `postgres://…`).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use surface_store::wake::Wakeups;
use surface_store::{HostStore, McpStore, MemoryStore, StoreError};

/// The store of a [`Host`](super::Host).
///
/// Parsed from text ([`FromStr`]) as a `--database` option would give it:
///
/// | text | database |
/// |---|---|
/// | `memory` | [`Database::Memory`]: nothing survives the process |
/// | `sqlite:PATH` (also `sqlite://PATH`) | [`Database::Sqlite`]: a file, created if missing (feature `sqlite`) |
/// | `postgres://…` or `postgresql://…` | [`Database::Postgres`]: a PostgreSQL server (feature `postgres`) |
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Database {
    /// In this process's memory ([`MemoryStore`]): for tests and demos.
    Memory,
    /// A SQLite file: one machine, no server, durable across a `kill -9`.
    Sqlite(PathBuf),
    /// A PostgreSQL database (a URL with its credentials): several
    /// replicas, wake-ups over `LISTEN/NOTIFY`.
    Postgres(String),
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Why a text does not name a [`Database`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatabaseError {
    /// Not one of the forms [`Database`] lists.
    #[error("a database is `memory`, `sqlite:PATH` or `postgres://…`, not {0}")]
    Unknown(String),
    /// `sqlite:` with no path.
    #[error("`sqlite:` needs a file path, e.g. `sqlite:target/host.db`")]
    EmptyPath,
    /// A database this build has no driver for.
    #[error("this build has no {0} driver: enable the `{0}` feature")]
    NotBuilt(&'static str),
}

impl FromStr for Database {
    type Err = DatabaseError;

    fn from_str(text: &str) -> Result<Self, DatabaseError> {
        if text == "memory" {
            return Ok(Database::Memory);
        }
        if let Some(path) = text
            .strip_prefix("sqlite://")
            .or_else(|| text.strip_prefix("sqlite:"))
        {
            if path.is_empty() {
                return Err(DatabaseError::EmptyPath);
            }
            if !cfg!(feature = "sqlite") {
                return Err(DatabaseError::NotBuilt("sqlite"));
            }
            return Ok(Database::Sqlite(PathBuf::from(path)));
        }
        let scheme = text
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase());
        if matches!(scheme.as_deref(), Some("postgres" | "postgresql")) {
            if !cfg!(feature = "postgres") {
                return Err(DatabaseError::NotBuilt("postgres"));
            }
            return Ok(Database::Postgres(text.to_string()));
        }
        // Never echo the text: it may be a URL with a password. Its scheme
        // is enough to say what was wrong.
        Err(DatabaseError::Unknown(match scheme {
            Some(scheme)
                if scheme.len() <= 16
                    && scheme
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
            {
                format!("a {scheme}:// URL")
            }
            _ => "that text".to_string(),
        }))
    }
}

impl Database {
    /// A SQLite file at `path`.
    pub fn sqlite(path: impl Into<PathBuf>) -> Self {
        Database::Sqlite(path.into())
    }

    /// What it is, for a log line: the kind and the file; for PostgreSQL
    /// only the host, port and database name (`postgres://db.example:5432/app`)
    /// — never the user, a password or the query (`?password=…`).
    pub fn describe(&self) -> String {
        match self {
            Database::Memory => "memory".to_string(),
            Database::Sqlite(path) => format!("sqlite:{}", path.display()),
            Database::Postgres(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                let rest = rest.split(['?', '#']).next().unwrap_or_default();
                let (authority, path) = match rest.find('/') {
                    Some(i) => rest.split_at(i),
                    None => (rest, ""),
                };
                let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                format!("postgres://{host}{path}")
            }
        }
    }

    /// Opens (creating and migrating) the store, with the wake-up bus that
    /// goes with it (PostgreSQL's; `None`: an in-process one).
    pub(super) async fn open(&self) -> Result<Opened, StoreError> {
        match self {
            Database::Memory => Ok(Opened::of(Arc::new(MemoryStore::new()), None)),
            #[cfg(feature = "sqlite")]
            Database::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| StoreError::Database {
                        operation: "create the database file's directory",
                        source: Box::new(e),
                    })?;
                }
                let store = surface_store::SqliteStore::open(
                    surface_store::SqliteStoreOptions::file(path.clone()),
                )
                .await?;
                Ok(Opened::of(Arc::new(store), None))
            }
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => {
                let store = surface_store::PostgresStore::open(
                    surface_store::PostgresStoreOptions::new(url.clone()),
                )
                .await?;
                let wake: Arc<dyn Wakeups> =
                    Arc::new(surface_store::wake::PostgresWakeups::for_store(&store));
                Ok(Opened::of(Arc::new(store), Some(wake)))
            }
            #[allow(unreachable_patterns)]
            _ => Err(StoreError::Database {
                operation: "open the database",
                source: format!("this build has no driver for {}", self.describe()).into(),
            }),
        }
    }
}

/// An opened database: the host store and, behind its own trait, the
/// MCP server's tokens and sessions (the same database), with its
/// wake-up bus.
pub(super) struct Opened {
    pub(super) store: Arc<dyn HostStore>,
    pub(super) mcp_store: Arc<dyn McpStore>,
    pub(super) wakeups: Option<Arc<dyn Wakeups>>,
}

impl Opened {
    pub(super) fn of<S: HostStore + McpStore + 'static>(
        store: Arc<S>,
        wakeups: Option<Arc<dyn Wakeups>>,
    ) -> Self {
        Opened {
            store: store.clone(),
            mcp_store: store,
            wakeups,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databases_parse_as_a_command_line_names_them() {
        assert_eq!("memory".parse(), Ok(Database::Memory));
        assert_eq!("sqlite:".parse::<Database>(), Err(DatabaseError::EmptyPath));
        assert_eq!(
            "mysql://u:secret@h/db".parse::<Database>(),
            Err(DatabaseError::Unknown("a mysql:// URL".into()))
        );
        let error = "pg://admin:hunter2@db/x".parse::<Database>().unwrap_err();
        assert!(!error.to_string().contains("hunter"), "{error}");
        assert_eq!(
            "nope".parse::<Database>(),
            Err(DatabaseError::Unknown("that text".into()))
        );
        #[cfg(feature = "sqlite")]
        {
            assert_eq!(
                "sqlite:target/h.db".parse(),
                Ok(Database::sqlite("target/h.db"))
            );
            assert_eq!(
                "sqlite:///tmp/h.db".parse(),
                Ok(Database::sqlite("/tmp/h.db"))
            );
        }
        #[cfg(feature = "postgres")]
        {
            let db: Database = "postgres://me:pw@db.example:5432/host?sslmode=disable"
                .parse()
                .unwrap();
            assert_eq!(db.describe(), "postgres://db.example:5432/host");
            assert!(!format!("{db:?}").contains("pw"));
            // A password in the query, an @ in it: never shown.
            let db: Database = "postgres://app@db.internal/host?password=s3cr@t-Tail"
                .parse()
                .unwrap();
            assert_eq!(db.describe(), "postgres://db.internal/host");
            // Schemes are case-insensitive.
            assert!(matches!(
                "POSTGRES://u@h/db".parse::<Database>(),
                Ok(Database::Postgres(_))
            ));
        }
    }
}
