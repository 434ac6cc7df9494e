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
    migrator(&[
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
    ])
}

/// The PostgreSQL schema.
#[cfg(feature = "postgres")]
pub(super) fn postgres() -> Migrator {
    migrator(&[
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
    ])
}
