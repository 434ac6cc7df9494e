//! What the MCP server keeps in the store, behind its own trait: the
//! SHA-256 digests of the bearer tokens it issued (each naming its run)
//! and the state of the session-based revisions' sessions (docs/host.md,
//! "Replicas"). [`HostStore`](super::HostStore) persists calls, runs,
//! approvals and routes and knows nothing of MCP; every store of this
//! crate implements both traits over the same database.

use super::StoreFuture;

/// What [`McpStore::claim_request`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestClaim {
    /// This replica serves the request.
    Claimed,
    /// Another delivery of it is being served (here or on another
    /// replica).
    InFlight,
    /// Another delivery of it was answered moments ago.
    Answered,
}
#[cfg(doc)]
use super::MAX_STORED_JSON_BYTES;

/// Bearer tokens and MCP sessions (module docs). Implemented by
/// [`MemoryStore`](super::MemoryStore), `SqliteStore` and `PostgresStore`
/// (tables `host_tokens` and `host_mcp_sessions`).
pub trait McpStore: Send + Sync {
    /// Records an MCP bearer token's SHA-256 (hex) for `run_id`. `false`
    /// when the digest is recorded already.
    ///
    /// # Errors
    /// [`StoreError`].
    fn record_token<'a>(
        &'a self,
        token_digest: &'a str,
        run_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, bool>;

    /// The run a token digest was issued for.
    ///
    /// # Errors
    /// [`StoreError`].
    fn token_run<'a>(&'a self, token_digest: &'a str) -> StoreFuture<'a, Option<String>>;

    /// Deletes a token digest; `false` when it was not recorded.
    ///
    /// # Errors
    /// [`StoreError`].
    fn revoke_token<'a>(&'a self, token_digest: &'a str) -> StoreFuture<'a, bool>;

    /// Deletes every token digest issued for `run_id` (a run that ended
    /// takes its tokens with it, on every replica); how many there were.
    ///
    /// # Errors
    /// [`StoreError`].
    fn revoke_run_tokens<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, u64>;

    /// Deletes every token digest issued before `before_ms` (retention:
    /// a token outlives no run, and runs end by their age bound at the
    /// latest); how many there were.
    ///
    /// # Errors
    /// [`StoreError`].
    fn delete_tokens_issued_before<'a>(&'a self, before_ms: i64) -> StoreFuture<'a, u64>;

    /// Writes (or replaces) an MCP session's state JSON (at most
    /// [`MAX_STORED_JSON_BYTES`]).
    ///
    /// # Errors
    /// [`StoreError`].
    fn store_mcp_session<'a>(
        &'a self,
        session_id: &'a str,
        state: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, ()>;

    /// An MCP session's state JSON (`None` also before its state is
    /// stored).
    ///
    /// # Errors
    /// [`StoreError`].
    fn mcp_session<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<String>>;

    /// Records the run whose token opened an MCP session (once: a second
    /// binding is ignored); `false` when it was bound already.
    ///
    /// # Errors
    /// [`StoreError`].
    fn bind_mcp_session<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, bool>;

    /// The run an MCP session was opened for.
    ///
    /// # Errors
    /// [`StoreError`].
    fn mcp_session_run<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<String>>;

    /// Marks an MCP session used at `at_ms` (its idle time starts again);
    /// `false` when there is none or it was marked at `at_ms` or later.
    ///
    /// # Errors
    /// [`StoreError`].
    fn touch_mcp_session<'a>(&'a self, session_id: &'a str, at_ms: i64) -> StoreFuture<'a, bool>;

    /// Deletes every MCP session last used (or stored, or bound) before
    /// `before_ms`; how many there were.
    ///
    /// # Errors
    /// [`StoreError`].
    fn delete_idle_mcp_sessions<'a>(&'a self, before_ms: i64) -> StoreFuture<'a, u64>;

    /// Claims MCP request `request_key` (the SHA-256 hex of its scope and
    /// JSON-RPC id) for the replica serving it, until `expires_at_ms`: one
    /// conditional statement that applies when no row has the key or its
    /// row expired before `now_ms`. Otherwise it answers whether the
    /// request is still being served or was answered.
    ///
    /// # Errors
    /// [`StoreError`].
    fn claim_request<'a>(
        &'a self,
        request_key: &'a str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> StoreFuture<'a, RequestClaim>;

    /// Settles a claimed request at `at_ms`: deleted (`keep_until_ms`
    /// `None`), or kept answered until `keep_until_ms` (a stateless
    /// request's copy stays refused that long).
    ///
    /// # Errors
    /// [`StoreError`].
    fn settle_request<'a>(
        &'a self,
        request_key: &'a str,
        at_ms: i64,
        keep_until_ms: Option<i64>,
    ) -> StoreFuture<'a, ()>;

    /// Deletes the request rows expired before `now_ms` (retention); how
    /// many there were.
    ///
    /// # Errors
    /// [`StoreError`].
    fn delete_expired_requests<'a>(&'a self, now_ms: i64) -> StoreFuture<'a, u64>;

    /// Deletes an MCP session; `false` when there was none.
    ///
    /// # Errors
    /// [`StoreError`].
    fn delete_mcp_session<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, bool>;
}
