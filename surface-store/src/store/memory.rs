//! [`MemoryStore`]: the [`HostStore`] contract in process memory, for
//! tests and as the benchmark baseline. Nothing survives the process.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::{
    ApprovalCursor, ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState,
    Completion, Decision, DispatchWrite, HostStore, LeaseClaim, McpStore, OutcomeWrite,
    PruneCutoffs, Pruned, RenewedLease, RequestClaim, RouteRecord, RouteState, RouteTake,
    RouteTransition, RouteWrite, RowCounts, RunRecord, StoreError, StoreFuture, SurfaceLease,
    Transition, MAX_ROUTE_ANSWER_BYTES, MAX_STORED_ANNOUNCEMENT_BYTES,
};

/// An in-memory [`HostStore`] with the same transitions as the SQL
/// stores (one lock per operation stands for one statement).
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<Tables>,
}

#[derive(Debug, Default)]
struct Tables {
    calls: BTreeMap<String, CallRecord>,
    runs: BTreeMap<String, RunRecord>,
    approvals: BTreeMap<String, ApprovalRecord>,
    surfaces: BTreeMap<String, SurfaceLease>,
    routes: BTreeMap<String, RouteRecord>,
    /// Token digest → (its run, when it was issued).
    tokens: BTreeMap<String, (String, i64)>,
    /// Session id → (state JSON, empty until stored; the run it is bound
    /// to; when it was last used, stored or bound).
    mcp_sessions: BTreeMap<String, (String, Option<String>, i64)>,
    /// MCP request key → (answered, expires at).
    mcp_requests: BTreeMap<String, (bool, i64)>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Tables> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Moves `invocation_id` from `from` with `change` applied.
    fn transition(
        &self,
        invocation_id: &str,
        from: CallState,
        change: impl FnOnce(&mut CallRecord),
    ) -> Transition {
        let mut tables = self.lock();
        match tables.calls.get_mut(invocation_id) {
            Some(call) if call.state == from => {
                change(call);
                Transition::Applied
            }
            Some(call) => Transition::NotApplied(Box::new(call.clone())),
            None => Transition::Unknown,
        }
    }
}

impl MemoryStore {
    /// Moves routed call `invocation_id` out of a state `from` accepts.
    fn route_transition(
        &self,
        invocation_id: &str,
        from: impl FnOnce(&RouteRecord) -> bool,
        change: impl FnOnce(&mut RouteRecord),
    ) -> RouteTransition {
        let mut tables = self.lock();
        match tables.routes.get_mut(invocation_id) {
            Some(route) if from(route) => {
                change(route);
                RouteTransition::Applied
            }
            Some(route) => RouteTransition::NotApplied(Box::new(route.clone())),
            None => RouteTransition::Unknown,
        }
    }
}

fn ready<'a, T: Send + 'a>(value: Result<T, StoreError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl HostStore for MemoryStore {
    fn record_dispatch<'a>(&'a self, call: &'a CallRecord) -> StoreFuture<'a, DispatchWrite> {
        let mut tables = self.lock();
        if let Some(existing) = tables.calls.get(&call.invocation_id) {
            return ready(Ok(DispatchWrite::Exists(Box::new(existing.clone()))));
        }
        let mut row = call.clone();
        row.state = CallState::Dispatched;
        row.result_digest = None;
        row.result = None;
        row.receipt = None;
        row.settled_at_ms = None;
        row.backend_invocation_id = None;
        tables.calls.insert(call.invocation_id.clone(), row);
        ready(Ok(DispatchWrite::Inserted))
    }

    fn complete<'a>(
        &'a self,
        invocation_id: &'a str,
        completion: &'a Completion,
    ) -> StoreFuture<'a, Transition> {
        if let Err(e) = StoreError::check_size("result", &completion.result) {
            return ready(Err(e));
        }
        ready(Ok(self.transition(
            invocation_id,
            CallState::Dispatched,
            |c| {
                c.state = CallState::Completed;
                c.result_digest = Some(completion.result_digest.clone());
                c.result = Some(completion.result.clone());
                c.settled_at_ms = Some(completion.at_ms);
            },
        )))
    }

    fn interrupt<'a>(&'a self, invocation_id: &'a str, at_ms: i64) -> StoreFuture<'a, Transition> {
        ready(Ok(self.transition(
            invocation_id,
            CallState::Dispatched,
            |c| {
                c.state = CallState::Interrupted;
                c.settled_at_ms = Some(at_ms);
            },
        )))
    }

    fn interrupt_owner<'a>(
        &'a self,
        owner: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<CallRecord>> {
        let mut tables = self.lock();
        let mut moved = Vec::new();
        for call in tables.calls.values_mut() {
            if call.owner == owner && call.state == CallState::Dispatched {
                call.state = CallState::Interrupted;
                call.settled_at_ms = Some(at_ms);
                moved.push(call.clone());
            }
        }
        ready(Ok(moved))
    }

    fn reconcile<'a>(
        &'a self,
        invocation_id: &'a str,
        receipt: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Transition> {
        if let Err(e) = StoreError::check_size("receipt", receipt) {
            return ready(Err(e));
        }
        ready(Ok(self.transition(
            invocation_id,
            CallState::Interrupted,
            |c| {
                c.state = CallState::Reconciled;
                c.receipt = Some(receipt.to_string());
                c.settled_at_ms = Some(at_ms);
            },
        )))
    }

    fn call<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<CallRecord>> {
        ready(Ok(self.lock().calls.get(invocation_id).cloned()))
    }

    fn calls_in_state<'a>(
        &'a self,
        owner: &'a str,
        state: CallState,
        limit: u32,
    ) -> StoreFuture<'a, Vec<CallRecord>> {
        let tables = self.lock();
        ready(Ok(tables
            .calls
            .values()
            .filter(|c| c.owner == owner && c.state == state)
            .take(limit as usize)
            .cloned()
            .collect()))
    }

    fn record_run<'a>(&'a self, run: &'a RunRecord) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        if tables.runs.contains_key(&run.run_id) {
            return ready(Ok(false));
        }
        let mut row = run.clone();
        row.active = true;
        row.ended_at_ms = None;
        tables.runs.insert(run.run_id.clone(), row);
        ready(Ok(true))
    }

    fn set_run_tab<'a>(
        &'a self,
        run_id: &'a str,
        tab_id: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        ready(Ok(match tables.runs.get_mut(run_id) {
            Some(run) => {
                run.tab_id = tab_id.map(str::to_string);
                true
            }
            None => false,
        }))
    }

    fn end_run<'a>(&'a self, run_id: &'a str, at_ms: i64) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        ready(Ok(match tables.runs.get_mut(run_id) {
            Some(run) if run.active => {
                run.active = false;
                run.ended_at_ms = Some(at_ms);
                true
            }
            _ => false,
        }))
    }

    fn active_runs<'a>(&'a self, owner: &'a str, limit: u32) -> StoreFuture<'a, Vec<RunRecord>> {
        let tables = self.lock();
        ready(Ok(tables
            .runs
            .values()
            .filter(|r| r.owner == owner && r.active)
            .take(limit as usize)
            .cloned()
            .collect()))
    }

    fn record_approval<'a>(&'a self, approval: &'a ApprovalRecord) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        if tables.approvals.contains_key(&approval.approval_id) {
            return ready(Ok(false));
        }
        let mut row = approval.clone();
        row.state = ApprovalState::Pending;
        row.decided_by = None;
        row.decided_at_ms = None;
        row.outcome = None;
        row.resumed_at_ms = None;
        tables.approvals.insert(approval.approval_id.clone(), row);
        ready(Ok(true))
    }

    fn decide_approval<'a>(
        &'a self,
        approval_id: &'a str,
        decision: ApprovalDecision,
        decided_by: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Decision> {
        let mut tables = self.lock();
        ready(Ok(match tables.approvals.get_mut(approval_id) {
            Some(a) if a.state == ApprovalState::Pending && a.expires_at_ms > at_ms => {
                a.state = decision.state();
                a.decided_by = Some(decided_by.to_string());
                a.decided_at_ms = Some(at_ms);
                Decision::Applied
            }
            Some(a) => Decision::AlreadyDecided(Box::new(a.clone())),
            None => Decision::Unknown,
        }))
    }

    fn withdraw_approval<'a>(
        &'a self,
        approval_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Decision> {
        let mut tables = self.lock();
        ready(Ok(match tables.approvals.get_mut(approval_id) {
            Some(a) if a.state == ApprovalState::Pending => {
                a.state = ApprovalState::Withdrawn;
                a.decided_at_ms = Some(at_ms);
                Decision::Applied
            }
            Some(a) => Decision::AlreadyDecided(Box::new(a.clone())),
            None => Decision::Unknown,
        }))
    }

    fn approval<'a>(&'a self, approval_id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>> {
        ready(Ok(self.lock().approvals.get(approval_id).cloned()))
    }

    fn pending_approvals<'a>(
        &'a self,
        after: Option<&'a ApprovalCursor>,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let tables = self.lock();
        let mut pending: Vec<ApprovalRecord> = tables
            .approvals
            .values()
            .filter(|a| a.state == ApprovalState::Pending && a.expires_at_ms > now_ms)
            .filter(|a| {
                after.is_none_or(|c| {
                    (a.requested_at_ms, &a.approval_id) > (c.requested_at_ms, &c.approval_id)
                })
            })
            .cloned()
            .collect();
        sort_oldest_first(&mut pending);
        pending.truncate(limit as usize);
        ready(Ok(pending))
    }

    fn backend_approvals<'a>(
        &'a self,
        backend_approval_id: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let tables = self.lock();
        let mut named: Vec<ApprovalRecord> = tables
            .approvals
            .values()
            .filter(|a| a.backend_approval_id == backend_approval_id)
            .cloned()
            .collect();
        sort_oldest_first(&mut named);
        named.truncate(limit as usize);
        ready(Ok(named))
    }

    fn expire_approvals<'a>(
        &'a self,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let mut tables = self.lock();
        let mut expired = Vec::new();
        for a in tables.approvals.values_mut() {
            if expired.len() >= limit as usize {
                break;
            }
            if a.state == ApprovalState::Pending && a.expires_at_ms <= now_ms {
                a.state = ApprovalState::Expired;
                a.decided_at_ms = Some(now_ms);
                expired.push(a.clone());
            }
        }
        ready(Ok(expired))
    }

    fn end_runs_started_before<'a>(
        &'a self,
        started_before_ms: i64,
        at_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<String>> {
        let mut tables = self.lock();
        let mut ended = Vec::new();
        for run in tables.runs.values_mut() {
            if ended.len() >= limit as usize {
                break;
            }
            if run.active && run.started_at_ms < started_before_ms {
                run.active = false;
                run.ended_at_ms = Some(at_ms);
                ended.push(run.run_id.clone());
            }
        }
        ready(Ok(ended))
    }

    fn prune<'a>(&'a self, cutoffs: PruneCutoffs) -> StoreFuture<'a, Pruned> {
        ready(Ok(self.lock().prune(cutoffs)))
    }

    fn row_counts<'a>(&'a self) -> StoreFuture<'a, RowCounts> {
        let tables = self.lock();
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        ready(Ok(RowCounts {
            calls: count(tables.calls.len()),
            routes: count(tables.routes.len()),
            runs: count(tables.runs.len()),
            approvals: count(tables.approvals.len()),
            surfaces: count(tables.surfaces.len()),
            tokens: count(tables.tokens.len()),
            mcp_sessions: count(tables.mcp_sessions.len()),
        }))
    }

    fn run_approvals<'a>(
        &'a self,
        run_id: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let tables = self.lock();
        let mut approvals: Vec<ApprovalRecord> = tables
            .approvals
            .values()
            .filter(|a| a.run_id == run_id)
            .cloned()
            .collect();
        sort_oldest_first(&mut approvals);
        approvals.truncate(limit as usize);
        ready(Ok(approvals))
    }

    fn approvals_awaiting_resume<'a>(&'a self, limit: u32) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let tables = self.lock();
        let mut waiting: Vec<ApprovalRecord> = tables
            .approvals
            .values()
            .filter(|a| is_decided(a.state) && a.outcome.is_none())
            .cloned()
            .collect();
        sort_oldest_first(&mut waiting);
        waiting.truncate(limit as usize);
        ready(Ok(waiting))
    }

    fn record_outcome<'a>(
        &'a self,
        approval_id: &'a str,
        outcome: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, OutcomeWrite> {
        if let Err(e) = StoreError::check_size("outcome", outcome) {
            return ready(Err(e));
        }
        let mut tables = self.lock();
        ready(Ok(match tables.approvals.get_mut(approval_id) {
            Some(a) if is_decided(a.state) && a.outcome.is_none() => {
                a.outcome = Some(outcome.to_string());
                a.resumed_at_ms = Some(at_ms);
                OutcomeWrite::Applied
            }
            Some(a) => OutcomeWrite::NotApplied(Box::new(a.clone())),
            None => OutcomeWrite::Unknown,
        }))
    }

    fn claim_surface<'a>(
        &'a self,
        lease: &'a SurfaceLease,
        now_ms: i64,
    ) -> StoreFuture<'a, LeaseClaim> {
        if lease.announcement.len() > MAX_STORED_ANNOUNCEMENT_BYTES {
            return ready(Err(StoreError::TooLarge {
                what: "announcement",
                bytes: lease.announcement.len(),
                limit: MAX_STORED_ANNOUNCEMENT_BYTES,
            }));
        }
        let mut tables = self.lock();
        ready(Ok(match tables.surfaces.get(&lease.tab_id) {
            Some(other)
                if other.replica != lease.replica && other.lease_expires_at_ms >= now_ms =>
            {
                LeaseClaim::HeldElsewhere(Box::new(other.clone()))
            }
            _ => {
                tables.surfaces.insert(lease.tab_id.clone(), lease.clone());
                LeaseClaim::Held
            }
        }))
    }

    fn renew_leases<'a>(
        &'a self,
        replica: &'a str,
        expires_at_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<RenewedLease>> {
        let mut tables = self.lock();
        let mut renewed = Vec::new();
        for lease in tables
            .surfaces
            .values_mut()
            .filter(|l| l.replica == replica && l.lease_expires_at_ms >= now_ms)
        {
            lease.lease_expires_at_ms = expires_at_ms;
            lease.updated_at_ms = now_ms;
            renewed.push(RenewedLease {
                tab_id: lease.tab_id.clone(),
                connection_id: lease.connection_id.clone(),
            });
        }
        // The map is ordered by tab id.
        ready(Ok(renewed))
    }

    fn release_surface<'a>(
        &'a self,
        tab_id: &'a str,
        replica: &'a str,
        connection_id: &'a str,
    ) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        let held = tables
            .surfaces
            .get(tab_id)
            .is_some_and(|l| l.replica == replica && l.connection_id == connection_id);
        if held {
            tables.surfaces.remove(tab_id);
        }
        ready(Ok(held))
    }

    fn surface<'a>(&'a self, tab_id: &'a str) -> StoreFuture<'a, Option<SurfaceLease>> {
        ready(Ok(self.lock().surfaces.get(tab_id).cloned()))
    }

    fn expired_surfaces<'a>(
        &'a self,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<SurfaceLease>> {
        let tables = self.lock();
        let mut expired: Vec<SurfaceLease> = tables
            .surfaces
            .values()
            .filter(|l| l.lease_expires_at_ms < now_ms)
            .cloned()
            .collect();
        expired.sort_by(|a, b| {
            (a.lease_expires_at_ms, &a.tab_id).cmp(&(b.lease_expires_at_ms, &b.tab_id))
        });
        expired.truncate(limit as usize);
        ready(Ok(expired))
    }

    fn set_backend_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        backend_invocation_id: &'a str,
    ) -> StoreFuture<'a, Transition> {
        let mut tables = self.lock();
        ready(Ok(match tables.calls.get_mut(invocation_id) {
            Some(c) if c.state == CallState::Dispatched && c.backend_invocation_id.is_none() => {
                c.backend_invocation_id = Some(backend_invocation_id.to_string());
                Transition::Applied
            }
            Some(c) => Transition::NotApplied(Box::new(c.clone())),
            None => Transition::Unknown,
        }))
    }

    fn run<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunRecord>> {
        ready(Ok(self.lock().runs.get(run_id).cloned()))
    }

    fn record_route<'a>(&'a self, route: &'a RouteRecord) -> StoreFuture<'a, RouteWrite> {
        if let Err(e) = StoreError::check_size("request", &route.request) {
            return ready(Err(e));
        }
        let mut tables = self.lock();
        if let Some(existing) = tables.routes.get(&route.invocation_id) {
            return ready(Ok(RouteWrite::Exists(Box::new(existing.clone()))));
        }
        let mut row = route.clone();
        row.state = RouteState::Requested;
        row.result = None;
        row.progress = None;
        row.settled_at_ms = None;
        tables.routes.insert(route.invocation_id.clone(), row);
        ready(Ok(RouteWrite::Inserted))
    }

    fn take_route<'a>(
        &'a self,
        invocation_id: &'a str,
        holder: &'a str,
        not_before_ms: i64,
    ) -> StoreFuture<'a, RouteTake> {
        let mut tables = self.lock();
        ready(Ok(match tables.routes.get_mut(invocation_id) {
            Some(r)
                if r.state == RouteState::Requested
                    && r.holder == holder
                    && r.requested_at_ms >= not_before_ms =>
            {
                r.state = RouteState::Taken;
                RouteTake::Taken(Box::new(r.clone()))
            }
            Some(r) => RouteTake::NotTaken(Box::new(r.clone())),
            None => RouteTake::Unknown,
        }))
    }

    fn answer_route<'a>(
        &'a self,
        invocation_id: &'a str,
        result: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        if let Err(e) = StoreError::check_size_within("result", result, MAX_ROUTE_ANSWER_BYTES) {
            return ready(Err(e));
        }
        ready(Ok(self.route_transition(
            invocation_id,
            |r| r.state == RouteState::Taken,
            |r| {
                r.state = RouteState::Answered;
                r.result = Some(result.to_string());
                r.settled_at_ms = Some(at_ms);
            },
        )))
    }

    fn progress_route<'a>(
        &'a self,
        invocation_id: &'a str,
        holder: &'a str,
        progress: &'a str,
    ) -> StoreFuture<'a, RouteTransition> {
        if let Err(e) = StoreError::check_size("progress", progress) {
            return ready(Err(e));
        }
        ready(Ok(self.route_transition(
            invocation_id,
            |r| r.state == RouteState::Taken && r.holder == holder,
            |r| r.progress = Some(progress.to_string()),
        )))
    }

    fn interrupt_route<'a>(
        &'a self,
        invocation_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        ready(Ok(self.route_transition(
            invocation_id,
            |r| matches!(r.state, RouteState::Requested | RouteState::Taken),
            |r| {
                r.state = RouteState::Interrupted;
                r.settled_at_ms = Some(at_ms);
            },
        )))
    }

    fn withdraw_route<'a>(
        &'a self,
        route: &'a RouteRecord,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        if let Err(e) = StoreError::check_size("request", &route.request) {
            return ready(Err(e));
        }
        let mut tables = self.lock();
        let id = &route.invocation_id;
        ready(Ok(match tables.routes.get_mut(id) {
            None => {
                let mut row = route.clone();
                row.state = RouteState::Interrupted;
                row.result = None;
                row.progress = None;
                row.settled_at_ms = Some(at_ms);
                tables.routes.insert(id.clone(), row);
                RouteTransition::Applied
            }
            Some(row) if row.state == RouteState::Requested && row.requester == route.requester => {
                row.state = RouteState::Interrupted;
                row.settled_at_ms = Some(at_ms);
                RouteTransition::Applied
            }
            Some(row) => RouteTransition::NotApplied(Box::new(row.clone())),
        }))
    }

    fn cancel_route<'a>(
        &'a self,
        invocation_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        ready(Ok(self.route_transition(
            invocation_id,
            |r| r.state == RouteState::Requested,
            |r| {
                r.state = RouteState::Interrupted;
                r.settled_at_ms = Some(at_ms);
            },
        )))
    }

    fn cancel_requester_routes<'a>(
        &'a self,
        requester: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<RouteRecord>> {
        let mut tables = self.lock();
        let mut moved = Vec::new();
        for route in tables.routes.values_mut() {
            if route.requester == requester && route.state == RouteState::Requested {
                route.state = RouteState::Interrupted;
                route.settled_at_ms = Some(at_ms);
                moved.push(route.clone());
            }
        }
        ready(Ok(moved))
    }

    fn release_replica_surfaces<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, u64> {
        let mut tables = self.lock();
        let before = tables.surfaces.len();
        tables.surfaces.retain(|_, l| l.replica != replica);
        ready(Ok((before - tables.surfaces.len()) as u64))
    }

    fn route<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<RouteRecord>> {
        ready(Ok(self.lock().routes.get(invocation_id).cloned()))
    }

    fn routes_for_holder<'a>(
        &'a self,
        holder: &'a str,
        state: RouteState,
        since_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<RouteRecord>> {
        let mut routes: Vec<RouteRecord> = self
            .lock()
            .routes
            .values()
            .filter(|r| r.holder == holder && r.state == state && r.requested_at_ms >= since_ms)
            .cloned()
            .collect();
        routes.sort_by(|a, b| {
            (a.requested_at_ms, &a.invocation_id).cmp(&(b.requested_at_ms, &b.invocation_id))
        });
        routes.truncate(limit as usize);
        ready(Ok(routes))
    }

    fn interrupt_holder_routes<'a>(
        &'a self,
        holder: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<RouteRecord>> {
        let mut tables = self.lock();
        let mut moved = Vec::new();
        for route in tables.routes.values_mut() {
            if route.holder == holder
                && matches!(route.state, RouteState::Requested | RouteState::Taken)
            {
                route.state = RouteState::Interrupted;
                route.settled_at_ms = Some(at_ms);
                moved.push(route.clone());
            }
        }
        ready(Ok(moved))
    }
}

impl McpStore for MemoryStore {
    fn record_token<'a>(
        &'a self,
        token_digest: &'a str,
        run_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        if tables.tokens.contains_key(token_digest) {
            return ready(Ok(false));
        }
        tables
            .tokens
            .insert(token_digest.to_string(), (run_id.to_string(), at_ms));
        ready(Ok(true))
    }

    fn token_run<'a>(&'a self, token_digest: &'a str) -> StoreFuture<'a, Option<String>> {
        ready(Ok(self
            .lock()
            .tokens
            .get(token_digest)
            .map(|(run, _)| run.clone())))
    }

    fn delete_tokens_issued_before<'a>(&'a self, before_ms: i64) -> StoreFuture<'a, u64> {
        let mut tables = self.lock();
        let before = tables.tokens.len();
        tables.tokens.retain(|_, (_, issued)| *issued >= before_ms);
        ready(Ok(
            u64::try_from(before - tables.tokens.len()).unwrap_or(u64::MAX)
        ))
    }

    fn revoke_token<'a>(&'a self, token_digest: &'a str) -> StoreFuture<'a, bool> {
        ready(Ok(self.lock().tokens.remove(token_digest).is_some()))
    }

    fn revoke_run_tokens<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, u64> {
        let mut tables = self.lock();
        let before = tables.tokens.len();
        tables.tokens.retain(|_, (run, _)| run != run_id);
        ready(Ok(
            u64::try_from(before - tables.tokens.len()).unwrap_or(u64::MAX)
        ))
    }

    fn store_mcp_session<'a>(
        &'a self,
        session_id: &'a str,
        state: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, ()> {
        if let Err(e) = StoreError::check_size("MCP session", state) {
            return ready(Err(e));
        }
        let mut tables = self.lock();
        let entry = tables
            .mcp_sessions
            .entry(session_id.to_string())
            .or_default();
        entry.0 = state.to_string();
        entry.2 = at_ms;
        ready(Ok(()))
    }

    fn mcp_session<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<String>> {
        let state = self
            .lock()
            .mcp_sessions
            .get(session_id)
            .map(|s| s.0.clone());
        ready(Ok(state.filter(|s| !s.is_empty())))
    }

    fn bind_mcp_session<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        let entry = tables
            .mcp_sessions
            .entry(session_id.to_string())
            .or_insert_with(|| (String::new(), None, at_ms));
        if entry.1.is_some() {
            return ready(Ok(false));
        }
        entry.1 = Some(run_id.to_string());
        ready(Ok(true))
    }

    fn mcp_session_run<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<String>> {
        ready(Ok(self
            .lock()
            .mcp_sessions
            .get(session_id)
            .and_then(|s| s.1.clone())))
    }

    fn delete_mcp_session<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, bool> {
        ready(Ok(self.lock().mcp_sessions.remove(session_id).is_some()))
    }

    fn touch_mcp_session<'a>(&'a self, session_id: &'a str, at_ms: i64) -> StoreFuture<'a, bool> {
        let mut tables = self.lock();
        match tables.mcp_sessions.get_mut(session_id) {
            Some(session) if session.2 < at_ms => {
                session.2 = at_ms;
                ready(Ok(true))
            }
            _ => ready(Ok(false)),
        }
    }

    fn claim_request<'a>(
        &'a self,
        request_key: &'a str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> StoreFuture<'a, RequestClaim> {
        let mut tables = self.lock();
        let claim = match tables.mcp_requests.get(request_key) {
            Some((answered, expires)) if *expires >= now_ms => match answered {
                true => RequestClaim::Answered,
                false => RequestClaim::InFlight,
            },
            _ => {
                tables
                    .mcp_requests
                    .insert(request_key.to_string(), (false, expires_at_ms));
                RequestClaim::Claimed
            }
        };
        ready(Ok(claim))
    }

    fn settle_request<'a>(
        &'a self,
        request_key: &'a str,
        _at_ms: i64,
        keep_until_ms: Option<i64>,
    ) -> StoreFuture<'a, ()> {
        let mut tables = self.lock();
        match keep_until_ms {
            None => {
                tables.mcp_requests.remove(request_key);
            }
            Some(until) => {
                if let Some(row) = tables.mcp_requests.get_mut(request_key) {
                    *row = (true, until);
                }
            }
        }
        ready(Ok(()))
    }

    fn delete_expired_requests<'a>(&'a self, now_ms: i64) -> StoreFuture<'a, u64> {
        let mut tables = self.lock();
        let before = tables.mcp_requests.len();
        tables
            .mcp_requests
            .retain(|_, (_, expires)| *expires >= now_ms);
        ready(Ok(
            u64::try_from(before - tables.mcp_requests.len()).unwrap_or(u64::MAX)
        ))
    }

    fn delete_idle_mcp_sessions<'a>(&'a self, before_ms: i64) -> StoreFuture<'a, u64> {
        let mut tables = self.lock();
        let before = tables.mcp_sessions.len();
        tables.mcp_sessions.retain(|_, s| s.2 >= before_ms);
        ready(Ok(
            u64::try_from(before - tables.mcp_sessions.len()).unwrap_or(u64::MAX)
        ))
    }
}

/// Approved, rejected or expired (what is resumed; a withdrawn approval
/// never is).
fn is_decided(state: ApprovalState) -> bool {
    matches!(
        state,
        ApprovalState::Approved | ApprovalState::Rejected | ApprovalState::Expired
    )
}

/// Oldest first: `requested_at_ms`, then `approval_id`.
fn sort_oldest_first(approvals: &mut [ApprovalRecord]) {
    approvals.sort_by(|a, b| {
        (a.requested_at_ms, &a.approval_id).cmp(&(b.requested_at_ms, &b.approval_id))
    });
}

impl Tables {
    /// One retention pass ([`HostStore::prune`]), at most `batch` rows per
    /// table, never a row a restart or a replica still needs.
    fn prune(&mut self, cutoffs: PruneCutoffs) -> Pruned {
        let before = cutoffs.finished_before_ms;
        let batch = cutoffs.batch as usize;
        let waiting: std::collections::BTreeSet<String> = self
            .approvals
            .values()
            .filter(|a| a.outcome.is_none() && a.state != ApprovalState::Withdrawn)
            .map(|a| a.invocation_id.clone())
            .collect();
        let calls = take_keys(&self.calls, batch, |c| {
            matches!(c.state, CallState::Completed | CallState::Reconciled)
                && c.settled_at_ms.is_some_and(|at| at < before)
                && !waiting.contains(&c.invocation_id)
        });
        let routes = take_keys(&self.routes, batch, |r| {
            matches!(r.state, RouteState::Answered | RouteState::Interrupted)
                && r.settled_at_ms.is_some_and(|at| at < before)
        });
        let runs = take_keys(&self.runs, batch, |r| {
            !r.active && r.ended_at_ms.unwrap_or(r.started_at_ms) < before
        });
        let approvals = take_keys(&self.approvals, batch, |a| match a.state {
            ApprovalState::Withdrawn => a.decided_at_ms.is_some_and(|at| at < before),
            _ => a.resumed_at_ms.is_some_and(|at| at < before),
        });
        let surfaces = take_keys(&self.surfaces, batch, |s| s.lease_expires_at_ms < before);
        Pruned {
            calls: remove_keys(&mut self.calls, calls),
            routes: remove_keys(&mut self.routes, routes),
            runs: remove_keys(&mut self.runs, runs),
            approvals: remove_keys(&mut self.approvals, approvals),
            surfaces: remove_keys(&mut self.surfaces, surfaces),
        }
    }
}

/// The keys of at most `batch` rows `doomed` accepts.
fn take_keys<T>(
    table: &BTreeMap<String, T>,
    batch: usize,
    doomed: impl Fn(&T) -> bool,
) -> Vec<String> {
    table
        .iter()
        .filter(|(_, row)| doomed(row))
        .take(batch)
        .map(|(key, _)| key.clone())
        .collect()
}

fn remove_keys<T>(table: &mut BTreeMap<String, T>, keys: Vec<String>) -> u64 {
    keys.iter().filter(|k| table.remove(*k).is_some()).count() as u64
}
