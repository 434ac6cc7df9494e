//! The statements both SQL stores run, written once: `$N` parameters
//! (SQLite and PostgreSQL both accept them), one statement per state
//! change, each conditional on the state it leaves. [`sql_store!`]
//! implements [`HostStore`](super::HostStore) for a store type holding a
//! `pool: sqlx::Pool<DB>`.

pub(super) const INSERT_CALL: &str = "INSERT INTO host_calls (invocation_id, owner, run_id, \
    tool_call_id, session_id, tab_id, connection_id, capability_id, effect, envelope_digest, \
    state, dispatched_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'dispatched', $11) \
    ON CONFLICT (invocation_id) DO NOTHING";
pub(super) const SELECT_CALL: &str = "SELECT invocation_id, owner, run_id, tool_call_id, \
    session_id, tab_id, connection_id, capability_id, effect, envelope_digest, state, \
    result_digest, result, receipt, dispatched_at_ms, settled_at_ms, backend_invocation_id FROM host_calls \
    WHERE invocation_id = $1";
pub(super) const COMPLETE_CALL: &str = "UPDATE host_calls SET state = 'completed', \
    result_digest = $2, result = $3, settled_at_ms = $4 \
    WHERE invocation_id = $1 AND state = 'dispatched'";
pub(super) const INTERRUPT_CALL: &str = "UPDATE host_calls SET state = 'interrupted', \
    settled_at_ms = $2 WHERE invocation_id = $1 AND state = 'dispatched'";
pub(super) const INTERRUPT_OWNER: &str = "UPDATE host_calls SET state = 'interrupted', \
    settled_at_ms = $2 WHERE owner = $1 AND state = 'dispatched' \
    RETURNING invocation_id, owner, run_id, tool_call_id, session_id, tab_id, connection_id, \
    capability_id, effect, envelope_digest, state, result_digest, result, receipt, \
    dispatched_at_ms, settled_at_ms, backend_invocation_id";
pub(super) const RECONCILE_CALL: &str = "UPDATE host_calls SET state = 'reconciled', \
    receipt = $2, settled_at_ms = $3 WHERE invocation_id = $1 AND state = 'interrupted'";
pub(super) const CALLS_IN_STATE: &str = "SELECT invocation_id, owner, run_id, tool_call_id, \
    session_id, tab_id, connection_id, capability_id, effect, envelope_digest, state, \
    result_digest, result, receipt, dispatched_at_ms, settled_at_ms, backend_invocation_id FROM host_calls \
    WHERE owner = $1 AND state = $2 ORDER BY invocation_id LIMIT $3";

pub(super) const INSERT_RUN: &str = "INSERT INTO host_runs (run_id, owner, session_id, tab_id, \
    kind, state, started_at_ms) VALUES ($1, $2, $3, $4, $5, 'active', $6) \
    ON CONFLICT (run_id) DO NOTHING";
pub(super) const SET_RUN_TAB: &str = "UPDATE host_runs SET tab_id = $2 WHERE run_id = $1";
pub(super) const END_RUN: &str = "UPDATE host_runs SET state = 'ended', ended_at_ms = $2 \
    WHERE run_id = $1 AND state = 'active'";
pub(super) const ACTIVE_RUNS: &str = "SELECT run_id, owner, session_id, tab_id, kind, state, \
    started_at_ms, ended_at_ms FROM host_runs WHERE owner = $1 AND state = 'active' \
    ORDER BY run_id LIMIT $2";
pub(super) const END_RUNS_STARTED_BEFORE: &str = "UPDATE host_runs SET state = 'ended', \
    ended_at_ms = $2 WHERE run_id IN (SELECT run_id FROM host_runs WHERE state = 'active' \
    AND started_at_ms < $1 ORDER BY started_at_ms LIMIT $3) AND state = 'active' \
    RETURNING run_id";

pub(super) const SET_BACKEND_INVOCATION: &str = "UPDATE host_calls SET \
    backend_invocation_id = $2 WHERE invocation_id = $1 AND state = 'dispatched' \
    AND backend_invocation_id IS NULL";

pub(super) const INSERT_APPROVAL: &str = "INSERT INTO host_approvals (approval_id, \
    backend_approval_id, invocation_id, run_id, tool_call_id, capability_id, state, \
    requested_at_ms, backend_invocation_id, expires_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9) \
    ON CONFLICT (approval_id) DO NOTHING";
pub(super) const DECIDE_APPROVAL: &str = "UPDATE host_approvals SET state = $2, \
    decided_by = $3, decided_at_ms = $4 WHERE approval_id = $1 AND state = 'pending' \
    AND expires_at_ms > $4";
pub(super) const WITHDRAW_APPROVAL: &str = "UPDATE host_approvals SET state = 'withdrawn', \
    decided_at_ms = $2 WHERE approval_id = $1 AND state = 'pending'";
pub(super) const SELECT_APPROVAL: &str = "SELECT approval_id, backend_approval_id, invocation_id, run_id, \
    tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms, \
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms FROM host_approvals WHERE approval_id = $1";
pub(super) const PENDING_APPROVALS: &str =
    "SELECT approval_id, backend_approval_id, invocation_id, run_id, \
    tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms, \
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms FROM host_approvals \
    WHERE state = 'pending' AND expires_at_ms > $1 \
    ORDER BY requested_at_ms, approval_id LIMIT $2";
pub(super) const PENDING_APPROVALS_AFTER: &str =
    "SELECT approval_id, backend_approval_id, invocation_id, run_id, \
    tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms, \
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms FROM host_approvals \
    WHERE state = 'pending' AND expires_at_ms > $1 \
    AND (requested_at_ms > $3 OR (requested_at_ms = $3 AND approval_id > $4)) \
    ORDER BY requested_at_ms, approval_id LIMIT $2";
pub(super) const BACKEND_APPROVALS: &str =
    "SELECT approval_id, backend_approval_id, invocation_id, run_id, \
    tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms, \
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms FROM host_approvals \
    WHERE backend_approval_id = $1 ORDER BY requested_at_ms, approval_id LIMIT $2";
pub(super) const EXPIRE_APPROVALS: &str = "UPDATE host_approvals SET state = 'expired', \
    decided_at_ms = $1 WHERE approval_id IN (SELECT approval_id FROM host_approvals \
    WHERE state = 'pending' AND expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2) \
    AND state = 'pending' RETURNING approval_id, backend_approval_id, invocation_id, run_id, \
    tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms, \
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms";
pub(super) const RUN_APPROVALS: &str =
    "SELECT approval_id, backend_approval_id, invocation_id, run_id, \
    tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms, \
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms FROM host_approvals \
    WHERE run_id = $1 ORDER BY requested_at_ms, approval_id LIMIT $2";
pub(super) const AWAITING_RESUME: &str =
    "SELECT approval_id, backend_approval_id, invocation_id, run_id, \
    tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms, \
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms FROM host_approvals \
    WHERE state IN ('approved', 'rejected', 'expired') AND outcome IS NULL \
    ORDER BY requested_at_ms, approval_id LIMIT $1";
pub(super) const RECORD_OUTCOME: &str = "UPDATE host_approvals SET outcome = $2, \
    resumed_at_ms = $3 WHERE approval_id = $1 \
    AND state IN ('approved', 'rejected', 'expired') AND outcome IS NULL";

pub(super) const CLAIM_SURFACE: &str = "INSERT INTO host_surfaces (tab_id, session_id, \
    replica, connection_id, announcement, lease_expires_at_ms, updated_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tab_id) DO UPDATE SET \
    session_id = excluded.session_id, replica = excluded.replica, \
    connection_id = excluded.connection_id, announcement = excluded.announcement, \
    lease_expires_at_ms = excluded.lease_expires_at_ms, updated_at_ms = excluded.updated_at_ms \
    WHERE host_surfaces.replica = excluded.replica OR host_surfaces.lease_expires_at_ms < $8";
pub(super) const RENEW_LEASES: &str = "UPDATE host_surfaces SET lease_expires_at_ms = $2, \
    updated_at_ms = $3 WHERE replica = $1 AND lease_expires_at_ms >= $3 \
    RETURNING tab_id, connection_id";
pub(super) const RELEASE_REPLICA_SURFACES: &str = "DELETE FROM host_surfaces WHERE replica = $1";
pub(super) const RELEASE_SURFACE: &str =
    "DELETE FROM host_surfaces WHERE tab_id = $1 AND replica = $2 AND connection_id = $3";
pub(super) const SELECT_SURFACE: &str = "SELECT tab_id, session_id, replica, connection_id, \
    announcement, lease_expires_at_ms, updated_at_ms FROM host_surfaces WHERE tab_id = $1";
pub(super) const EXPIRED_SURFACES: &str = "SELECT tab_id, session_id, replica, connection_id, \
    announcement, lease_expires_at_ms, updated_at_ms FROM host_surfaces \
    WHERE lease_expires_at_ms < $1 ORDER BY lease_expires_at_ms, tab_id LIMIT $2";

pub(super) const SELECT_RUN: &str = "SELECT run_id, owner, session_id, tab_id, kind, state, \
    started_at_ms, ended_at_ms FROM host_runs WHERE run_id = $1";

/// Retention ([`super::HostStore::prune`]): each deletes at most `$2`
/// finished rows older than `$1`, never one a restart or a replica needs.
pub(super) const PRUNE_CALLS: &str = "DELETE FROM host_calls WHERE invocation_id IN \
    (SELECT c.invocation_id FROM host_calls c WHERE c.state IN ('completed', 'reconciled') \
    AND c.settled_at_ms < $1 AND NOT EXISTS (SELECT 1 FROM host_approvals a \
    WHERE a.invocation_id = c.invocation_id AND a.outcome IS NULL AND a.state <> 'withdrawn') \
    LIMIT $2)";
pub(super) const PRUNE_ROUTES: &str = "DELETE FROM host_routes WHERE invocation_id IN \
    (SELECT invocation_id FROM host_routes WHERE state IN ('answered', 'interrupted') \
    AND settled_at_ms < $1 LIMIT $2)";
pub(super) const PRUNE_RUNS: &str = "DELETE FROM host_runs WHERE run_id IN \
    (SELECT run_id FROM host_runs WHERE state = 'ended' \
    AND COALESCE(ended_at_ms, started_at_ms) < $1 LIMIT $2)";
pub(super) const PRUNE_APPROVALS: &str = "DELETE FROM host_approvals WHERE approval_id IN \
    (SELECT approval_id FROM host_approvals WHERE (outcome IS NOT NULL AND resumed_at_ms < $1) \
    OR (state = 'withdrawn' AND decided_at_ms < $1) LIMIT $2)";
pub(super) const PRUNE_SURFACES: &str = "DELETE FROM host_surfaces WHERE tab_id IN \
    (SELECT tab_id FROM host_surfaces WHERE lease_expires_at_ms < $1 LIMIT $2)";
pub(super) const ROW_COUNTS: &str = "SELECT \
    (SELECT COUNT(*) FROM host_calls) AS calls, (SELECT COUNT(*) FROM host_routes) AS routes, \
    (SELECT COUNT(*) FROM host_runs) AS runs, (SELECT COUNT(*) FROM host_approvals) AS approvals, \
    (SELECT COUNT(*) FROM host_surfaces) AS surfaces, (SELECT COUNT(*) FROM host_tokens) AS tokens, \
    (SELECT COUNT(*) FROM host_mcp_sessions) AS mcp_sessions";

pub(super) const INSERT_ROUTE: &str = "INSERT INTO host_routes (invocation_id, run_id, tab_id, \
    requester, holder, request, state, requested_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, 'requested', $7) ON CONFLICT (invocation_id) DO NOTHING";
pub(super) const TAKE_ROUTE: &str = "UPDATE host_routes SET state = 'taken' \
    WHERE invocation_id = $1 AND holder = $2 AND state = 'requested' AND requested_at_ms >= $3 \
    RETURNING invocation_id, run_id, tab_id, requester, holder, request, state, result, \
    progress, requested_at_ms, settled_at_ms";
pub(super) const ANSWER_ROUTE: &str = "UPDATE host_routes SET state = 'answered', result = $2, \
    settled_at_ms = $3 WHERE invocation_id = $1 AND state = 'taken'";
pub(super) const PROGRESS_ROUTE: &str = "UPDATE host_routes SET progress = $3 \
    WHERE invocation_id = $1 AND holder = $2 AND state = 'taken'";
pub(super) const INTERRUPT_ROUTE: &str = "UPDATE host_routes SET state = 'interrupted', \
    settled_at_ms = $2 WHERE invocation_id = $1 AND state IN ('requested', 'taken')";
pub(super) const WITHDRAW_ROUTE: &str = "INSERT INTO host_routes (invocation_id, run_id, \
    tab_id, requester, holder, request, state, requested_at_ms, settled_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, 'interrupted', $7, $8) \
    ON CONFLICT (invocation_id) DO UPDATE SET state = 'interrupted', \
    settled_at_ms = excluded.settled_at_ms \
    WHERE host_routes.state = 'requested' AND host_routes.requester = excluded.requester";
pub(super) const CANCEL_ROUTE: &str = "UPDATE host_routes SET state = 'interrupted', \
    settled_at_ms = $2 WHERE invocation_id = $1 AND state = 'requested'";
pub(super) const CANCEL_REQUESTER_ROUTES: &str = "UPDATE host_routes SET state = 'interrupted', \
    settled_at_ms = $2 WHERE requester = $1 AND state = 'requested' \
    RETURNING invocation_id, run_id, tab_id, requester, holder, request, state, result, \
    progress, requested_at_ms, settled_at_ms";
pub(super) const INTERRUPT_HOLDER_ROUTES: &str = "UPDATE host_routes SET state = 'interrupted', \
    settled_at_ms = $2 WHERE holder = $1 AND state IN ('requested', 'taken') \
    RETURNING invocation_id, run_id, tab_id, requester, holder, request, state, result, \
    progress, requested_at_ms, settled_at_ms";

pub(super) const SELECT_ROUTE: &str = "SELECT invocation_id, run_id, tab_id, requester, \
    holder, request, state, result, progress, requested_at_ms, settled_at_ms FROM host_routes \
    WHERE invocation_id = $1";
pub(super) const ROUTES_FOR_HOLDER: &str = "SELECT invocation_id, run_id, tab_id, requester, \
    holder, request, state, result, progress, requested_at_ms, settled_at_ms FROM host_routes \
    WHERE holder = $1 AND state = $2 AND requested_at_ms >= $3 \
    ORDER BY requested_at_ms, invocation_id LIMIT $4";

pub(super) const INSERT_TOKEN: &str = "INSERT INTO host_tokens (token_digest, run_id, \
    issued_at_ms) VALUES ($1, $2, $3) ON CONFLICT (token_digest) DO NOTHING";
pub(super) const SELECT_TOKEN: &str = "SELECT run_id FROM host_tokens WHERE token_digest = $1";
pub(super) const DELETE_TOKEN: &str = "DELETE FROM host_tokens WHERE token_digest = $1";
pub(super) const DELETE_RUN_TOKENS: &str = "DELETE FROM host_tokens WHERE run_id = $1";
pub(super) const DELETE_OLD_TOKENS: &str = "DELETE FROM host_tokens WHERE issued_at_ms < $1";
pub(super) const UPSERT_MCP_SESSION: &str = "INSERT INTO host_mcp_sessions (session_id, state, \
    updated_at_ms) VALUES ($1, $2, $3) ON CONFLICT (session_id) DO UPDATE SET \
    state = excluded.state, updated_at_ms = excluded.updated_at_ms";
pub(super) const SELECT_MCP_SESSION: &str =
    "SELECT state, run_id FROM host_mcp_sessions WHERE session_id = $1";
pub(super) const BIND_MCP_SESSION: &str = "INSERT INTO host_mcp_sessions (session_id, run_id, \
    updated_at_ms) VALUES ($1, $2, $3) ON CONFLICT (session_id) DO UPDATE SET \
    run_id = excluded.run_id WHERE host_mcp_sessions.run_id IS NULL";
pub(super) const CLAIM_REQUEST: &str = "INSERT INTO host_mcp_requests (request_key, \
    started_at_ms, answered_at_ms, expires_at_ms) VALUES ($1, $2, NULL, $3) \
    ON CONFLICT (request_key) DO UPDATE SET started_at_ms = excluded.started_at_ms, \
    answered_at_ms = NULL, expires_at_ms = excluded.expires_at_ms \
    WHERE host_mcp_requests.expires_at_ms < $2";
pub(super) const SELECT_REQUEST: &str =
    "SELECT answered_at_ms FROM host_mcp_requests WHERE request_key = $1";
pub(super) const ANSWER_REQUEST: &str = "UPDATE host_mcp_requests SET answered_at_ms = $2, \
    expires_at_ms = $3 WHERE request_key = $1";
pub(super) const DELETE_REQUEST: &str = "DELETE FROM host_mcp_requests WHERE request_key = $1";
pub(super) const DELETE_EXPIRED_REQUESTS: &str =
    "DELETE FROM host_mcp_requests WHERE expires_at_ms < $1";
pub(super) const DELETE_MCP_SESSION: &str = "DELETE FROM host_mcp_sessions WHERE session_id = $1";
pub(super) const TOUCH_MCP_SESSION: &str = "UPDATE host_mcp_sessions SET updated_at_ms = $2 \
    WHERE session_id = $1 AND updated_at_ms < $2";
pub(super) const DELETE_IDLE_MCP_SESSIONS: &str =
    "DELETE FROM host_mcp_sessions WHERE updated_at_ms < $1";

/// Implements `HostStore` for `$store` (a struct with `pool:
/// sqlx::Pool<$db>`) with the statements above.
macro_rules! sql_store {
    ($store:ty, $db:ty) => {
        impl $store {
            fn call_row(row: &<$db as sqlx::Database>::Row) -> Result<CallRecord, StoreError> {
                let state: String = get(row, "state")?;
                let capability_id: String = get(row, "capability_id")?;
                Ok(CallRecord {
                    invocation_id: get(row, "invocation_id")?,
                    owner: get(row, "owner")?,
                    run_id: get(row, "run_id")?,
                    tool_call_id: get(row, "tool_call_id")?,
                    session_id: get(row, "session_id")?,
                    tab_id: get(row, "tab_id")?,
                    connection_id: get(row, "connection_id")?,
                    effect: get(row, "effect")?,
                    envelope_digest: get(row, "envelope_digest")?,
                    state: CallState::parse(&state)?,
                    result_digest: get(row, "result_digest")?,
                    // An earlier version's result in today's shape.
                    result: $crate::store::legacy::result_column(
                        get(row, "result")?,
                        &capability_id,
                    ),
                    capability_id,
                    receipt: get(row, "receipt")?,
                    dispatched_at_ms: get(row, "dispatched_at_ms")?,
                    settled_at_ms: get(row, "settled_at_ms")?,
                    backend_invocation_id: get(row, "backend_invocation_id")?,
                })
            }

            fn run_row(row: &<$db as sqlx::Database>::Row) -> Result<RunRecord, StoreError> {
                let state: String = get(row, "state")?;
                Ok(RunRecord {
                    run_id: get(row, "run_id")?,
                    owner: get(row, "owner")?,
                    session_id: get(row, "session_id")?,
                    tab_id: get(row, "tab_id")?,
                    kind: get(row, "kind")?,
                    active: match state.as_str() {
                        "active" => true,
                        "ended" => false,
                        other => return Err(StoreError::corrupt("host_runs.state", other)),
                    },
                    started_at_ms: get(row, "started_at_ms")?,
                    ended_at_ms: get(row, "ended_at_ms")?,
                })
            }

            fn approval_row(
                row: &<$db as sqlx::Database>::Row,
            ) -> Result<ApprovalRecord, StoreError> {
                let state: String = get(row, "state")?;
                let invocation_id: String = get(row, "invocation_id")?;
                let backend: Option<String> = get(row, "backend_invocation_id")?;
                let capability_id: String = get(row, "capability_id")?;
                Ok(ApprovalRecord {
                    approval_id: get(row, "approval_id")?,
                    backend_approval_id: get(row, "backend_approval_id")?,
                    expires_at_ms: get(row, "expires_at_ms")?,
                    backend_invocation_id: backend.unwrap_or_else(|| invocation_id.clone()),
                    invocation_id,
                    run_id: get(row, "run_id")?,
                    tool_call_id: get(row, "tool_call_id")?,
                    state: ApprovalState::parse(&state)?,
                    requested_at_ms: get(row, "requested_at_ms")?,
                    decided_by: get(row, "decided_by")?,
                    decided_at_ms: get(row, "decided_at_ms")?,
                    // An earlier version's outcome in today's shape.
                    outcome: $crate::store::legacy::result_column(
                        get(row, "outcome")?,
                        &capability_id,
                    ),
                    capability_id,
                    resumed_at_ms: get(row, "resumed_at_ms")?,
                })
            }

            fn route_row(row: &<$db as sqlx::Database>::Row) -> Result<RouteRecord, StoreError> {
                let state: String = get(row, "state")?;
                Ok(RouteRecord {
                    invocation_id: get(row, "invocation_id")?,
                    run_id: get(row, "run_id")?,
                    tab_id: get(row, "tab_id")?,
                    requester: get(row, "requester")?,
                    holder: get(row, "holder")?,
                    request: get(row, "request")?,
                    state: RouteState::parse(&state)?,
                    result: get(row, "result")?,
                    progress: get(row, "progress")?,
                    requested_at_ms: get(row, "requested_at_ms")?,
                    settled_at_ms: get(row, "settled_at_ms")?,
                })
            }

            async fn fetch_route(&self, id: &str) -> Result<Option<RouteRecord>, StoreError> {
                let row = sqlx::query(sql::SELECT_ROUTE)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| db("read a routed call", e))?;
                row.as_ref().map(Self::route_row).transpose()
            }

            /// The [`RouteTransition`] of a conditional update that changed
            /// `rows` rows.
            async fn route_transition(
                &self,
                id: &str,
                rows: u64,
            ) -> Result<RouteTransition, StoreError> {
                if rows == 1 {
                    return Ok(RouteTransition::Applied);
                }
                Ok(match self.fetch_route(id).await? {
                    Some(route) => RouteTransition::NotApplied(Box::new(route)),
                    None => RouteTransition::Unknown,
                })
            }

            fn surface_row(row: &<$db as sqlx::Database>::Row) -> Result<SurfaceLease, StoreError> {
                Ok(SurfaceLease {
                    tab_id: get(row, "tab_id")?,
                    session_id: get(row, "session_id")?,
                    replica: get(row, "replica")?,
                    connection_id: get(row, "connection_id")?,
                    announcement: get(row, "announcement")?,
                    lease_expires_at_ms: get(row, "lease_expires_at_ms")?,
                    updated_at_ms: get(row, "updated_at_ms")?,
                })
            }

            async fn fetch_surface(
                &self,
                tab_id: &str,
            ) -> Result<Option<SurfaceLease>, StoreError> {
                let row = sqlx::query(sql::SELECT_SURFACE)
                    .bind(tab_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| db("read a surface lease", e))?;
                row.as_ref().map(Self::surface_row).transpose()
            }

            async fn fetch_call(&self, id: &str) -> Result<Option<CallRecord>, StoreError> {
                let row = sqlx::query(sql::SELECT_CALL)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| db("read a call", e))?;
                row.as_ref().map(Self::call_row).transpose()
            }

            /// The [`Transition`] of a conditional update that changed
            /// `rows` rows.
            async fn transition(&self, id: &str, rows: u64) -> Result<Transition, StoreError> {
                if rows == 1 {
                    return Ok(Transition::Applied);
                }
                Ok(match self.fetch_call(id).await? {
                    Some(call) => Transition::NotApplied(Box::new(call)),
                    None => Transition::Unknown,
                })
            }
        }

        impl HostStore for $store {
            fn record_dispatch<'a>(
                &'a self,
                call: &'a CallRecord,
            ) -> StoreFuture<'a, DispatchWrite> {
                Box::pin(async move {
                    let done = sqlx::query(sql::INSERT_CALL)
                        .bind(&call.invocation_id)
                        .bind(&call.owner)
                        .bind(&call.run_id)
                        .bind(&call.tool_call_id)
                        .bind(&call.session_id)
                        .bind(&call.tab_id)
                        .bind(&call.connection_id)
                        .bind(&call.capability_id)
                        .bind(&call.effect)
                        .bind(&call.envelope_digest)
                        .bind(call.dispatched_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the dispatch", e))?;
                    if done.rows_affected() == 1 {
                        return Ok(DispatchWrite::Inserted);
                    }
                    match self.fetch_call(&call.invocation_id).await? {
                        Some(existing) => Ok(DispatchWrite::Exists(Box::new(existing))),
                        None => Err(StoreError::Database {
                            operation: "record the dispatch",
                            source: "the insert was refused but no row has the id".into(),
                        }),
                    }
                })
            }

            fn complete<'a>(
                &'a self,
                invocation_id: &'a str,
                completion: &'a Completion,
            ) -> StoreFuture<'a, Transition> {
                Box::pin(async move {
                    StoreError::check_size("result", &completion.result)?;
                    let done = sqlx::query(sql::COMPLETE_CALL)
                        .bind(invocation_id)
                        .bind(&completion.result_digest)
                        .bind(&completion.result)
                        .bind(completion.at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the result", e))?;
                    self.transition(invocation_id, done.rows_affected()).await
                })
            }

            fn interrupt<'a>(
                &'a self,
                invocation_id: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, Transition> {
                Box::pin(async move {
                    let done = sqlx::query(sql::INTERRUPT_CALL)
                        .bind(invocation_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the interruption", e))?;
                    self.transition(invocation_id, done.rows_affected()).await
                })
            }

            fn interrupt_owner<'a>(
                &'a self,
                owner: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, Vec<CallRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::INTERRUPT_OWNER)
                        .bind(owner)
                        .bind(at_ms)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("interrupt the outstanding calls", e))?;
                    let mut calls = rows
                        .iter()
                        .map(Self::call_row)
                        .collect::<Result<Vec<_>, _>>()?;
                    calls.sort_by(|a, b| a.invocation_id.cmp(&b.invocation_id));
                    Ok(calls)
                })
            }

            fn reconcile<'a>(
                &'a self,
                invocation_id: &'a str,
                receipt: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, Transition> {
                Box::pin(async move {
                    StoreError::check_size("receipt", receipt)?;
                    let done = sqlx::query(sql::RECONCILE_CALL)
                        .bind(invocation_id)
                        .bind(receipt)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the receipt", e))?;
                    self.transition(invocation_id, done.rows_affected()).await
                })
            }

            fn call<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<CallRecord>> {
                Box::pin(self.fetch_call(invocation_id))
            }

            fn calls_in_state<'a>(
                &'a self,
                owner: &'a str,
                state: CallState,
                limit: u32,
            ) -> StoreFuture<'a, Vec<CallRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::CALLS_IN_STATE)
                        .bind(owner)
                        .bind(state.as_str())
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list calls", e))?;
                    rows.iter().map(Self::call_row).collect()
                })
            }

            fn record_run<'a>(&'a self, run: &'a RunRecord) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::INSERT_RUN)
                        .bind(&run.run_id)
                        .bind(&run.owner)
                        .bind(&run.session_id)
                        .bind(&run.tab_id)
                        .bind(&run.kind)
                        .bind(run.started_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the run", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn set_run_tab<'a>(
                &'a self,
                run_id: &'a str,
                tab_id: Option<&'a str>,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::SET_RUN_TAB)
                        .bind(run_id)
                        .bind(tab_id)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the run's tab", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn end_run<'a>(&'a self, run_id: &'a str, at_ms: i64) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::END_RUN)
                        .bind(run_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("end the run", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn active_runs<'a>(
                &'a self,
                owner: &'a str,
                limit: u32,
            ) -> StoreFuture<'a, Vec<RunRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::ACTIVE_RUNS)
                        .bind(owner)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list runs", e))?;
                    rows.iter().map(Self::run_row).collect()
                })
            }

            fn record_approval<'a>(
                &'a self,
                approval: &'a ApprovalRecord,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::INSERT_APPROVAL)
                        .bind(&approval.approval_id)
                        .bind(&approval.backend_approval_id)
                        .bind(&approval.invocation_id)
                        .bind(&approval.run_id)
                        .bind(&approval.tool_call_id)
                        .bind(&approval.capability_id)
                        .bind(approval.requested_at_ms)
                        .bind(&approval.backend_invocation_id)
                        .bind(approval.expires_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the approval", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn decide_approval<'a>(
                &'a self,
                approval_id: &'a str,
                decision: ApprovalDecision,
                decided_by: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, Decision> {
                Box::pin(async move {
                    let done = sqlx::query(sql::DECIDE_APPROVAL)
                        .bind(approval_id)
                        .bind(decision.state().as_str())
                        .bind(decided_by)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the decision", e))?;
                    if done.rows_affected() == 1 {
                        return Ok(Decision::Applied);
                    }
                    Ok(match self.approval(approval_id).await? {
                        Some(a) => Decision::AlreadyDecided(Box::new(a)),
                        None => Decision::Unknown,
                    })
                })
            }

            fn withdraw_approval<'a>(
                &'a self,
                approval_id: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, Decision> {
                Box::pin(async move {
                    let done = sqlx::query(sql::WITHDRAW_APPROVAL)
                        .bind(approval_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("withdraw the approval", e))?;
                    if done.rows_affected() == 1 {
                        return Ok(Decision::Applied);
                    }
                    Ok(match self.approval(approval_id).await? {
                        Some(a) => Decision::AlreadyDecided(Box::new(a)),
                        None => Decision::Unknown,
                    })
                })
            }

            fn approval<'a>(
                &'a self,
                approval_id: &'a str,
            ) -> StoreFuture<'a, Option<ApprovalRecord>> {
                Box::pin(async move {
                    let row = sqlx::query(sql::SELECT_APPROVAL)
                        .bind(approval_id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| db("read an approval", e))?;
                    row.as_ref().map(Self::approval_row).transpose()
                })
            }

            fn pending_approvals<'a>(
                &'a self,
                after: Option<&'a ApprovalCursor>,
                now_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(async move {
                    let query = match after {
                        None => sqlx::query(sql::PENDING_APPROVALS)
                            .bind(now_ms)
                            .bind(i64::from(limit)),
                        Some(cursor) => sqlx::query(sql::PENDING_APPROVALS_AFTER)
                            .bind(now_ms)
                            .bind(i64::from(limit))
                            .bind(cursor.requested_at_ms)
                            .bind(cursor.approval_id.as_str()),
                    };
                    let rows = query
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list approvals", e))?;
                    rows.iter().map(Self::approval_row).collect()
                })
            }

            fn backend_approvals<'a>(
                &'a self,
                backend_approval_id: &'a str,
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::BACKEND_APPROVALS)
                        .bind(backend_approval_id)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list a backend approval's rows", e))?;
                    rows.iter().map(Self::approval_row).collect()
                })
            }

            fn expire_approvals<'a>(
                &'a self,
                now_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::EXPIRE_APPROVALS)
                        .bind(now_ms)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("expire approvals", e))?;
                    rows.iter().map(Self::approval_row).collect()
                })
            }

            fn end_runs_started_before<'a>(
                &'a self,
                started_before_ms: i64,
                at_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<String>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::END_RUNS_STARTED_BEFORE)
                        .bind(started_before_ms)
                        .bind(at_ms)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("end old runs", e))?;
                    rows.iter().map(|row| get(row, "run_id")).collect()
                })
            }

            fn prune<'a>(&'a self, cutoffs: PruneCutoffs) -> StoreFuture<'a, Pruned> {
                Box::pin(async move {
                    let mut deleted = [0u64; 5];
                    let statements = [
                        sql::PRUNE_CALLS,
                        sql::PRUNE_ROUTES,
                        sql::PRUNE_RUNS,
                        sql::PRUNE_APPROVALS,
                        sql::PRUNE_SURFACES,
                    ];
                    for (statement, count) in statements.iter().zip(deleted.iter_mut()) {
                        *count = sqlx::query(*statement)
                            .bind(cutoffs.finished_before_ms)
                            .bind(i64::from(cutoffs.batch))
                            .execute(&self.pool)
                            .await
                            .map_err(|e| db("delete finished rows", e))?
                            .rows_affected();
                    }
                    let [calls, routes, runs, approvals, surfaces] = deleted;
                    Ok(Pruned {
                        calls,
                        routes,
                        runs,
                        approvals,
                        surfaces,
                    })
                })
            }

            fn row_counts<'a>(&'a self) -> StoreFuture<'a, RowCounts> {
                Box::pin(async move {
                    let row = sqlx::query(sql::ROW_COUNTS)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(|e| db("count rows", e))?;
                    let count = |column: &str| -> Result<u64, StoreError> {
                        let n: i64 = get(&row, column)?;
                        Ok(u64::try_from(n).unwrap_or(0))
                    };
                    Ok(RowCounts {
                        calls: count("calls")?,
                        routes: count("routes")?,
                        runs: count("runs")?,
                        approvals: count("approvals")?,
                        surfaces: count("surfaces")?,
                        tokens: count("tokens")?,
                        mcp_sessions: count("mcp_sessions")?,
                    })
                })
            }

            fn run_approvals<'a>(
                &'a self,
                run_id: &'a str,
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::RUN_APPROVALS)
                        .bind(run_id)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list a run's approvals", e))?;
                    rows.iter().map(Self::approval_row).collect()
                })
            }

            fn approvals_awaiting_resume<'a>(
                &'a self,
                limit: u32,
            ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::AWAITING_RESUME)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list approvals awaiting resumption", e))?;
                    rows.iter().map(Self::approval_row).collect()
                })
            }

            fn record_outcome<'a>(
                &'a self,
                approval_id: &'a str,
                outcome: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, OutcomeWrite> {
                Box::pin(async move {
                    StoreError::check_size("outcome", outcome)?;
                    let done = sqlx::query(sql::RECORD_OUTCOME)
                        .bind(approval_id)
                        .bind(outcome)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the outcome", e))?;
                    if done.rows_affected() == 1 {
                        return Ok(OutcomeWrite::Applied);
                    }
                    Ok(match self.approval(approval_id).await? {
                        Some(a) => OutcomeWrite::NotApplied(Box::new(a)),
                        None => OutcomeWrite::Unknown,
                    })
                })
            }

            fn claim_surface<'a>(
                &'a self,
                lease: &'a SurfaceLease,
                now_ms: i64,
            ) -> StoreFuture<'a, LeaseClaim> {
                Box::pin(async move {
                    if lease.announcement.len() > MAX_STORED_ANNOUNCEMENT_BYTES {
                        return Err(StoreError::TooLarge {
                            what: "announcement",
                            bytes: lease.announcement.len(),
                            limit: MAX_STORED_ANNOUNCEMENT_BYTES,
                        });
                    }
                    let done = sqlx::query(sql::CLAIM_SURFACE)
                        .bind(&lease.tab_id)
                        .bind(&lease.session_id)
                        .bind(&lease.replica)
                        .bind(&lease.connection_id)
                        .bind(&lease.announcement)
                        .bind(lease.lease_expires_at_ms)
                        .bind(lease.updated_at_ms)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("claim a surface lease", e))?;
                    if done.rows_affected() == 1 {
                        return Ok(LeaseClaim::Held);
                    }
                    match self.fetch_surface(&lease.tab_id).await? {
                        Some(other) => Ok(LeaseClaim::HeldElsewhere(Box::new(other))),
                        None => Err(StoreError::Database {
                            operation: "claim a surface lease",
                            source: "the claim was refused but no lease has the tab".into(),
                        }),
                    }
                })
            }

            fn renew_leases<'a>(
                &'a self,
                replica: &'a str,
                expires_at_ms: i64,
                now_ms: i64,
            ) -> StoreFuture<'a, Vec<RenewedLease>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::RENEW_LEASES)
                        .bind(replica)
                        .bind(expires_at_ms)
                        .bind(now_ms)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("renew surface leases", e))?;
                    let mut renewed = rows
                        .iter()
                        .map(|row| {
                            Ok(RenewedLease {
                                tab_id: get(row, "tab_id")?,
                                connection_id: get(row, "connection_id")?,
                            })
                        })
                        .collect::<Result<Vec<_>, StoreError>>()?;
                    renewed.sort_by(|a, b| a.tab_id.cmp(&b.tab_id));
                    Ok(renewed)
                })
            }

            fn release_surface<'a>(
                &'a self,
                tab_id: &'a str,
                replica: &'a str,
                connection_id: &'a str,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::RELEASE_SURFACE)
                        .bind(tab_id)
                        .bind(replica)
                        .bind(connection_id)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("release a surface lease", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn surface<'a>(&'a self, tab_id: &'a str) -> StoreFuture<'a, Option<SurfaceLease>> {
                Box::pin(self.fetch_surface(tab_id))
            }

            fn expired_surfaces<'a>(
                &'a self,
                now_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<SurfaceLease>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::EXPIRED_SURFACES)
                        .bind(now_ms)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list expired surface leases", e))?;
                    rows.iter().map(Self::surface_row).collect()
                })
            }

            fn set_backend_invocation<'a>(
                &'a self,
                invocation_id: &'a str,
                backend_invocation_id: &'a str,
            ) -> StoreFuture<'a, Transition> {
                Box::pin(async move {
                    let done = sqlx::query(sql::SET_BACKEND_INVOCATION)
                        .bind(invocation_id)
                        .bind(backend_invocation_id)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record the backend invocation id", e))?;
                    self.transition(invocation_id, done.rows_affected()).await
                })
            }

            fn run<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunRecord>> {
                Box::pin(async move {
                    let row = sqlx::query(sql::SELECT_RUN)
                        .bind(run_id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| db("read a run", e))?;
                    row.as_ref().map(Self::run_row).transpose()
                })
            }

            fn record_route<'a>(&'a self, route: &'a RouteRecord) -> StoreFuture<'a, RouteWrite> {
                Box::pin(async move {
                    StoreError::check_size("request", &route.request)?;
                    let done = sqlx::query(sql::INSERT_ROUTE)
                        .bind(&route.invocation_id)
                        .bind(&route.run_id)
                        .bind(&route.tab_id)
                        .bind(&route.requester)
                        .bind(&route.holder)
                        .bind(&route.request)
                        .bind(route.requested_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("route a call", e))?;
                    if done.rows_affected() == 1 {
                        return Ok(RouteWrite::Inserted);
                    }
                    match self.fetch_route(&route.invocation_id).await? {
                        Some(existing) => Ok(RouteWrite::Exists(Box::new(existing))),
                        None => Err(StoreError::Database {
                            operation: "route a call",
                            source: "the insert was refused but no routed call has the id".into(),
                        }),
                    }
                })
            }

            fn take_route<'a>(
                &'a self,
                invocation_id: &'a str,
                holder: &'a str,
                not_before_ms: i64,
            ) -> StoreFuture<'a, RouteTake> {
                Box::pin(async move {
                    let taken = sqlx::query(sql::TAKE_ROUTE)
                        .bind(invocation_id)
                        .bind(holder)
                        .bind(not_before_ms)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| db("take a routed call", e))?;
                    if let Some(row) = taken {
                        return Ok(RouteTake::Taken(Box::new(Self::route_row(&row)?)));
                    }
                    Ok(match self.fetch_route(invocation_id).await? {
                        Some(route) => RouteTake::NotTaken(Box::new(route)),
                        None => RouteTake::Unknown,
                    })
                })
            }

            fn answer_route<'a>(
                &'a self,
                invocation_id: &'a str,
                result: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, RouteTransition> {
                Box::pin(async move {
                    StoreError::check_size_within("result", result, MAX_ROUTE_ANSWER_BYTES)?;
                    let done = sqlx::query(sql::ANSWER_ROUTE)
                        .bind(invocation_id)
                        .bind(result)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("answer a routed call", e))?;
                    self.route_transition(invocation_id, done.rows_affected())
                        .await
                })
            }

            fn progress_route<'a>(
                &'a self,
                invocation_id: &'a str,
                holder: &'a str,
                progress: &'a str,
            ) -> StoreFuture<'a, RouteTransition> {
                Box::pin(async move {
                    StoreError::check_size("progress", progress)?;
                    let done = sqlx::query(sql::PROGRESS_ROUTE)
                        .bind(invocation_id)
                        .bind(holder)
                        .bind(progress)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record a routed call's progress", e))?;
                    self.route_transition(invocation_id, done.rows_affected())
                        .await
                })
            }

            fn interrupt_route<'a>(
                &'a self,
                invocation_id: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, RouteTransition> {
                Box::pin(async move {
                    let done = sqlx::query(sql::INTERRUPT_ROUTE)
                        .bind(invocation_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("interrupt a routed call", e))?;
                    self.route_transition(invocation_id, done.rows_affected())
                        .await
                })
            }

            fn withdraw_route<'a>(
                &'a self,
                route: &'a RouteRecord,
                at_ms: i64,
            ) -> StoreFuture<'a, RouteTransition> {
                Box::pin(async move {
                    StoreError::check_size("request", &route.request)?;
                    let done = sqlx::query(sql::WITHDRAW_ROUTE)
                        .bind(&route.invocation_id)
                        .bind(&route.run_id)
                        .bind(&route.tab_id)
                        .bind(&route.requester)
                        .bind(&route.holder)
                        .bind(&route.request)
                        .bind(route.requested_at_ms)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("withdraw a routed call", e))?;
                    self.route_transition(&route.invocation_id, done.rows_affected())
                        .await
                })
            }

            fn cancel_route<'a>(
                &'a self,
                invocation_id: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, RouteTransition> {
                Box::pin(async move {
                    let done = sqlx::query(sql::CANCEL_ROUTE)
                        .bind(invocation_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("cancel a routed call", e))?;
                    self.route_transition(invocation_id, done.rows_affected())
                        .await
                })
            }

            fn cancel_requester_routes<'a>(
                &'a self,
                requester: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, Vec<RouteRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::CANCEL_REQUESTER_ROUTES)
                        .bind(requester)
                        .bind(at_ms)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("cancel a replica's routed calls", e))?;
                    let mut routes = rows
                        .iter()
                        .map(Self::route_row)
                        .collect::<Result<Vec<_>, _>>()?;
                    routes.sort_by(|a, b| a.invocation_id.cmp(&b.invocation_id));
                    Ok(routes)
                })
            }

            fn release_replica_surfaces<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let done = sqlx::query(sql::RELEASE_REPLICA_SURFACES)
                        .bind(replica)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("release a replica's surface leases", e))?;
                    Ok(done.rows_affected())
                })
            }

            fn route<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<RouteRecord>> {
                Box::pin(self.fetch_route(invocation_id))
            }

            fn routes_for_holder<'a>(
                &'a self,
                holder: &'a str,
                state: RouteState,
                since_ms: i64,
                limit: u32,
            ) -> StoreFuture<'a, Vec<RouteRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::ROUTES_FOR_HOLDER)
                        .bind(holder)
                        .bind(state.as_str())
                        .bind(since_ms)
                        .bind(i64::from(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("list routed calls", e))?;
                    rows.iter().map(Self::route_row).collect()
                })
            }

            fn interrupt_holder_routes<'a>(
                &'a self,
                holder: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, Vec<RouteRecord>> {
                Box::pin(async move {
                    let rows = sqlx::query(sql::INTERRUPT_HOLDER_ROUTES)
                        .bind(holder)
                        .bind(at_ms)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(|e| db("interrupt a replica's routed calls", e))?;
                    let mut routes = rows
                        .iter()
                        .map(Self::route_row)
                        .collect::<Result<Vec<_>, _>>()?;
                    routes.sort_by(|a, b| a.invocation_id.cmp(&b.invocation_id));
                    Ok(routes)
                })
            }
        }

        impl McpStore for $store {
            fn record_token<'a>(
                &'a self,
                token_digest: &'a str,
                run_id: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::INSERT_TOKEN)
                        .bind(token_digest)
                        .bind(run_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("record a token", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn token_run<'a>(&'a self, token_digest: &'a str) -> StoreFuture<'a, Option<String>> {
                Box::pin(async move {
                    let row = sqlx::query(sql::SELECT_TOKEN)
                        .bind(token_digest)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| db("read a token", e))?;
                    row.as_ref().map(|r| get(r, "run_id")).transpose()
                })
            }

            fn revoke_token<'a>(&'a self, token_digest: &'a str) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::DELETE_TOKEN)
                        .bind(token_digest)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("revoke a token", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn claim_request<'a>(
                &'a self,
                request_key: &'a str,
                now_ms: i64,
                expires_at_ms: i64,
            ) -> StoreFuture<'a, RequestClaim> {
                Box::pin(async move {
                    let done = sqlx::query(sql::CLAIM_REQUEST)
                        .bind(request_key)
                        .bind(now_ms)
                        .bind(expires_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("claim an MCP request", e))?;
                    if done.rows_affected() == 1 {
                        return Ok(RequestClaim::Claimed);
                    }
                    let row = sqlx::query(sql::SELECT_REQUEST)
                        .bind(request_key)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| db("read an MCP request", e))?;
                    let answered: Option<i64> = match &row {
                        Some(row) => get(row, "answered_at_ms")?,
                        None => None,
                    };
                    Ok(match answered {
                        Some(_) => RequestClaim::Answered,
                        None => RequestClaim::InFlight,
                    })
                })
            }

            fn settle_request<'a>(
                &'a self,
                request_key: &'a str,
                at_ms: i64,
                keep_until_ms: Option<i64>,
            ) -> StoreFuture<'a, ()> {
                Box::pin(async move {
                    let query = match keep_until_ms {
                        None => sqlx::query(sql::DELETE_REQUEST).bind(request_key),
                        Some(until) => sqlx::query(sql::ANSWER_REQUEST)
                            .bind(request_key)
                            .bind(at_ms)
                            .bind(until),
                    };
                    query
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("settle an MCP request", e))?;
                    Ok(())
                })
            }

            fn delete_expired_requests<'a>(&'a self, now_ms: i64) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let done = sqlx::query(sql::DELETE_EXPIRED_REQUESTS)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("delete expired MCP requests", e))?;
                    Ok(done.rows_affected())
                })
            }

            fn delete_tokens_issued_before<'a>(&'a self, before_ms: i64) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let done = sqlx::query(sql::DELETE_OLD_TOKENS)
                        .bind(before_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("delete old tokens", e))?;
                    Ok(done.rows_affected())
                })
            }

            fn revoke_run_tokens<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let done = sqlx::query(sql::DELETE_RUN_TOKENS)
                        .bind(run_id)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("revoke a run's tokens", e))?;
                    Ok(done.rows_affected())
                })
            }

            fn store_mcp_session<'a>(
                &'a self,
                session_id: &'a str,
                state: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, ()> {
                Box::pin(async move {
                    StoreError::check_size("MCP session", state)?;
                    sqlx::query(sql::UPSERT_MCP_SESSION)
                        .bind(session_id)
                        .bind(state)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("store an MCP session", e))?;
                    Ok(())
                })
            }

            fn mcp_session<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<String>> {
                Box::pin(async move {
                    let row = sqlx::query(sql::SELECT_MCP_SESSION)
                        .bind(session_id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| db("read an MCP session", e))?;
                    let Some(row) = row else {
                        return Ok(None);
                    };
                    let state: String = get(&row, "state")?;
                    Ok(Some(state).filter(|s| !s.is_empty()))
                })
            }

            fn bind_mcp_session<'a>(
                &'a self,
                session_id: &'a str,
                run_id: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::BIND_MCP_SESSION)
                        .bind(session_id)
                        .bind(run_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("bind an MCP session", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn mcp_session_run<'a>(
                &'a self,
                session_id: &'a str,
            ) -> StoreFuture<'a, Option<String>> {
                Box::pin(async move {
                    let row = sqlx::query(sql::SELECT_MCP_SESSION)
                        .bind(session_id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| db("read an MCP session", e))?;
                    match row {
                        Some(row) => get(&row, "run_id"),
                        None => Ok(None),
                    }
                })
            }

            fn touch_mcp_session<'a>(
                &'a self,
                session_id: &'a str,
                at_ms: i64,
            ) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::TOUCH_MCP_SESSION)
                        .bind(session_id)
                        .bind(at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("mark an MCP session used", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn delete_idle_mcp_sessions<'a>(&'a self, before_ms: i64) -> StoreFuture<'a, u64> {
                Box::pin(async move {
                    let done = sqlx::query(sql::DELETE_IDLE_MCP_SESSIONS)
                        .bind(before_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("delete idle MCP sessions", e))?;
                    Ok(done.rows_affected())
                })
            }

            fn delete_mcp_session<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query(sql::DELETE_MCP_SESSION)
                        .bind(session_id)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| db("delete an MCP session", e))?;
                    Ok(done.rows_affected() == 1)
                })
            }
        }

        /// One column of `row`.
        fn get<'r, T>(row: &'r <$db as sqlx::Database>::Row, column: &str) -> Result<T, StoreError>
        where
            T: sqlx::Decode<'r, $db> + sqlx::Type<$db>,
        {
            use sqlx::Row;
            row.try_get(column).map_err(|e| db("read a row", e))
        }

        fn db(operation: &'static str, error: sqlx::Error) -> StoreError {
            match error {
                sqlx::Error::PoolClosed => StoreError::Closed,
                other => StoreError::Database {
                    operation,
                    source: Box::new(other),
                },
            }
        }
    };
}

pub(super) use sql_store;
