//! The MCP server's wall clock: milliseconds since the Unix epoch as the
//! store's `i64` (saturating at `i64::MAX`), for token records, request
//! claims and session rows.

/// Now, in milliseconds since the Unix epoch (`SystemClock`).
pub(super) fn now_ms() -> i64 {
    i64::try_from(surface_runtime::Clock::now_ms(
        &surface_runtime::SystemClock,
    ))
    .unwrap_or(i64::MAX)
}
