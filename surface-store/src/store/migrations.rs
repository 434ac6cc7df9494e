//! The schema shipped with the crate, as sqlx migrations: one directory per
//! database (`migrations/sqlite`, `migrations/postgres`), the same tables
//! and states in each. The SQL is embedded at compile time, so a host needs
//! no files next to its binary; sqlx records what it applied in
//! `_sqlx_migrations` and refuses a database whose applied migration
//! differs from the embedded one.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::SqlSafeStr;

/// The migrations of one database: `(version, description, SQL)`.
fn migrator(steps: &[(i64, &'static str, &'static str)]) -> Migrator {
    Migrator::with_migrations(
        steps
            .iter()
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    Cow::Borrowed(*description),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

/// The SQLite schema.
#[cfg(feature = "sqlite")]
pub(super) fn sqlite() -> Migrator {
    migrator(SQLITE)
}

/// The SQLite migrations, oldest first.
#[cfg(feature = "sqlite")]
const SQLITE: &[(i64, &str, &str)] = &[
    (
        1,
        "host store",
        include_str!("../../migrations/sqlite/0001_host_store.sql"),
    ),
    (
        2,
        "approval resume",
        include_str!("../../migrations/sqlite/0002_approval_resume.sql"),
    ),
    (
        3,
        "surface leases",
        include_str!("../../migrations/sqlite/0003_surface_leases.sql"),
    ),
    (
        4,
        "routed calls",
        include_str!("../../migrations/sqlite/0004_routed_calls.sql"),
    ),
    (
        5,
        "route progress",
        include_str!("../../migrations/sqlite/0005_route_progress.sql"),
    ),
    (
        6,
        "approval withdrawn",
        include_str!("../../migrations/sqlite/0006_approval_withdrawn.sql"),
    ),
    (
        7,
        "mcp session idle",
        include_str!("../../migrations/sqlite/0007_mcp_session_idle.sql"),
    ),
    (
        8,
        "approval identity and retention",
        include_str!("../../migrations/sqlite/0008_approval_identity_retention.sql"),
    ),
    (
        9,
        "mcp requests",
        include_str!("../../migrations/sqlite/0009_mcp_requests.sql"),
    ),
];

/// The PostgreSQL schema.
#[cfg(feature = "postgres")]
pub(super) fn postgres() -> Migrator {
    migrator(POSTGRES)
}

/// The PostgreSQL migrations, oldest first.
#[cfg(feature = "postgres")]
const POSTGRES: &[(i64, &str, &str)] = &[
    (
        1,
        "host store",
        include_str!("../../migrations/postgres/0001_host_store.sql"),
    ),
    (
        2,
        "approval resume",
        include_str!("../../migrations/postgres/0002_approval_resume.sql"),
    ),
    (
        3,
        "surface leases",
        include_str!("../../migrations/postgres/0003_surface_leases.sql"),
    ),
    (
        4,
        "routed calls",
        include_str!("../../migrations/postgres/0004_routed_calls.sql"),
    ),
    (
        5,
        "route progress",
        include_str!("../../migrations/postgres/0005_route_progress.sql"),
    ),
    (
        6,
        "approval withdrawn",
        include_str!("../../migrations/postgres/0006_approval_withdrawn.sql"),
    ),
    (
        7,
        "mcp session idle",
        include_str!("../../migrations/postgres/0007_mcp_session_idle.sql"),
    ),
    (
        8,
        "approval identity and retention",
        include_str!("../../migrations/postgres/0008_approval_identity_retention.sql"),
    ),
    (
        9,
        "mcp requests",
        include_str!("../../migrations/postgres/0009_mcp_requests.sql"),
    ),
];

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use sqlx::Row;

    use super::*;

    /// Rows a host of the previous schema (0007) wrote survive 0008: an
    /// approval is re-keyed by its held call's invocation id with the
    /// backend's id kept beside it, a call held twice keeps its oldest
    /// row, nothing else is lost, and the run gets its end column.
    #[tokio::test]
    async fn approvals_of_the_previous_schema_are_rekeyed_and_kept() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        migrator(&SQLITE[..7]).run(&pool).await.unwrap();
        for (approval, invocation, at, state) in [
            ("appr-1", "inv-1", 1, "approved"),
            ("appr-2", "inv-2", 2, "pending"),
            ("appr-9", "inv-2", 3, "pending"),
        ] {
            sqlx::query(
                "INSERT INTO host_approvals (approval_id, invocation_id, run_id, tool_call_id, \
                 capability_id, state, requested_at_ms, backend_invocation_id, outcome) \
                 VALUES ($1, $2, 'run-1', 'tc-1', 'devices.purge', $3, $4, 'held', NULL)",
            )
            .bind(approval)
            .bind(invocation)
            .bind(state)
            .bind(at)
            .execute(&pool)
            .await
            .unwrap();
        }
        sqlx::query(
            "INSERT INTO host_runs (run_id, owner, session_id, kind, state, started_at_ms) \
             VALUES ('run-1', 'h', 's', 'embedded', 'ended', 1)",
        )
        .execute(&pool)
        .await
        .unwrap();
        migrator(SQLITE).run(&pool).await.unwrap();
        let rows = sqlx::query(
            "SELECT approval_id, backend_approval_id, state, expires_at_ms \
             FROM host_approvals ORDER BY approval_id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        let rows: Vec<(String, String, String, i64)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "inv-1".into(),
                    "appr-1".into(),
                    "approved".into(),
                    86_400_001
                ),
                (
                    "inv-2".into(),
                    "appr-2".into(),
                    "pending".into(),
                    86_400_002
                ),
            ]
        );
        let ended: Option<i64> = sqlx::query("SELECT ended_at_ms FROM host_runs")
            .fetch_one(&pool)
            .await
            .unwrap()
            .get(0);
        assert_eq!(ended, None);
    }
}
