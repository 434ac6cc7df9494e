//! Fault injection for the replica tests: a [`HostStore`] that delegates
//! to another one but can slow its lease claims and fail its routed
//! answers, and a wake-up bus that loses every wake-up sent to one target
//! (as a listening connection that died silently would: no error, so no
//! rescan).
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use surface_store::store::*;
use surface_store::wake::{LocalWakeups, Subscription, WakeFuture, Wakeups};

/// A store that delegates to `inner`, with faults set at run time.
pub struct Faulty {
    pub inner: Arc<dyn HostStore>,
    /// Every lease claim waits this long first (a slow round trip).
    pub claim_delay_ms: AtomicU64,
    /// The next this-many routed answers fail (`StoreError::Closed`).
    pub failing_answers: AtomicU32,
}

impl Faulty {
    pub fn new(inner: Arc<dyn HostStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            claim_delay_ms: AtomicU64::new(0),
            failing_answers: AtomicU32::new(0),
        })
    }
}

impl HostStore for Faulty {
    fn claim_surface<'a>(
        &'a self,
        lease: &'a SurfaceLease,
        now_ms: i64,
    ) -> StoreFuture<'a, LeaseClaim> {
        let delay = self.claim_delay_ms.load(Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            self.inner.claim_surface(lease, now_ms).await
        })
    }

    fn answer_route<'a>(
        &'a self,
        invocation_id: &'a str,
        result: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        let fail = self
            .failing_answers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Box::pin(async { Err(StoreError::Closed) });
        }
        self.inner.answer_route(invocation_id, result, at_ms)
    }

    fn record_dispatch<'a>(&'a self, call: &'a CallRecord) -> StoreFuture<'a, DispatchWrite> {
        self.inner.record_dispatch(call)
    }

    fn complete<'a>(
        &'a self,
        invocation_id: &'a str,
        completion: &'a Completion,
    ) -> StoreFuture<'a, Transition> {
        self.inner.complete(invocation_id, completion)
    }

    fn interrupt<'a>(&'a self, invocation_id: &'a str, at_ms: i64) -> StoreFuture<'a, Transition> {
        self.inner.interrupt(invocation_id, at_ms)
    }

    fn interrupt_owner<'a>(
        &'a self,
        owner: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<CallRecord>> {
        self.inner.interrupt_owner(owner, at_ms)
    }

    fn reconcile<'a>(
        &'a self,
        invocation_id: &'a str,
        receipt: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Transition> {
        self.inner.reconcile(invocation_id, receipt, at_ms)
    }

    fn call<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<CallRecord>> {
        self.inner.call(invocation_id)
    }

    fn calls_in_state<'a>(
        &'a self,
        owner: &'a str,
        state: CallState,
        limit: u32,
    ) -> StoreFuture<'a, Vec<CallRecord>> {
        self.inner.calls_in_state(owner, state, limit)
    }

    fn record_run<'a>(&'a self, run: &'a RunRecord) -> StoreFuture<'a, bool> {
        self.inner.record_run(run)
    }

    fn set_run_tab<'a>(
        &'a self,
        run_id: &'a str,
        tab_id: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        self.inner.set_run_tab(run_id, tab_id)
    }

    fn end_run<'a>(&'a self, run_id: &'a str, at_ms: i64) -> StoreFuture<'a, bool> {
        self.inner.end_run(run_id, at_ms)
    }

    fn active_runs<'a>(&'a self, owner: &'a str, limit: u32) -> StoreFuture<'a, Vec<RunRecord>> {
        self.inner.active_runs(owner, limit)
    }

    fn record_approval<'a>(&'a self, approval: &'a ApprovalRecord) -> StoreFuture<'a, bool> {
        self.inner.record_approval(approval)
    }

    fn decide_approval<'a>(
        &'a self,
        approval_id: &'a str,
        decision: ApprovalDecision,
        decided_by: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Decision> {
        self.inner
            .decide_approval(approval_id, decision, decided_by, at_ms)
    }

    fn withdraw_approval<'a>(
        &'a self,
        approval_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Decision> {
        self.inner.withdraw_approval(approval_id, at_ms)
    }

    fn approval<'a>(&'a self, approval_id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>> {
        self.inner.approval(approval_id)
    }

    fn pending_approvals<'a>(
        &'a self,
        after: Option<&'a ApprovalCursor>,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        self.inner.pending_approvals(after, now_ms, limit)
    }

    fn backend_approvals<'a>(
        &'a self,
        backend_approval_id: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        self.inner.backend_approvals(backend_approval_id, limit)
    }

    fn expire_approvals<'a>(
        &'a self,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        self.inner.expire_approvals(now_ms, limit)
    }

    fn end_runs_started_before<'a>(
        &'a self,
        started_before_ms: i64,
        at_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<String>> {
        self.inner
            .end_runs_started_before(started_before_ms, at_ms, limit)
    }

    fn prune<'a>(&'a self, cutoffs: PruneCutoffs) -> StoreFuture<'a, Pruned> {
        self.inner.prune(cutoffs)
    }

    fn row_counts<'a>(&'a self) -> StoreFuture<'a, RowCounts> {
        self.inner.row_counts()
    }

    fn run_approvals<'a>(
        &'a self,
        run_id: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        self.inner.run_approvals(run_id, limit)
    }

    fn approvals_awaiting_resume<'a>(&'a self, limit: u32) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        self.inner.approvals_awaiting_resume(limit)
    }

    fn record_outcome<'a>(
        &'a self,
        approval_id: &'a str,
        outcome: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, OutcomeWrite> {
        self.inner.record_outcome(approval_id, outcome, at_ms)
    }

    fn renew_leases<'a>(
        &'a self,
        replica: &'a str,
        expires_at_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<RenewedLease>> {
        self.inner.renew_leases(replica, expires_at_ms, now_ms)
    }

    fn release_surface<'a>(
        &'a self,
        tab_id: &'a str,
        replica: &'a str,
        connection_id: &'a str,
    ) -> StoreFuture<'a, bool> {
        self.inner.release_surface(tab_id, replica, connection_id)
    }

    fn surface<'a>(&'a self, tab_id: &'a str) -> StoreFuture<'a, Option<SurfaceLease>> {
        self.inner.surface(tab_id)
    }

    fn expired_surfaces<'a>(
        &'a self,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<SurfaceLease>> {
        self.inner.expired_surfaces(now_ms, limit)
    }

    fn set_backend_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        backend_invocation_id: &'a str,
    ) -> StoreFuture<'a, Transition> {
        self.inner
            .set_backend_invocation(invocation_id, backend_invocation_id)
    }

    fn run<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunRecord>> {
        self.inner.run(run_id)
    }

    fn record_route<'a>(&'a self, route: &'a RouteRecord) -> StoreFuture<'a, RouteWrite> {
        self.inner.record_route(route)
    }

    fn take_route<'a>(
        &'a self,
        invocation_id: &'a str,
        holder: &'a str,
        not_before_ms: i64,
    ) -> StoreFuture<'a, RouteTake> {
        self.inner.take_route(invocation_id, holder, not_before_ms)
    }

    fn withdraw_route<'a>(
        &'a self,
        route: &'a RouteRecord,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        self.inner.withdraw_route(route, at_ms)
    }

    fn cancel_route<'a>(
        &'a self,
        invocation_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        self.inner.cancel_route(invocation_id, at_ms)
    }

    fn cancel_requester_routes<'a>(
        &'a self,
        requester: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<RouteRecord>> {
        self.inner.cancel_requester_routes(requester, at_ms)
    }

    fn release_replica_surfaces<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, u64> {
        self.inner.release_replica_surfaces(replica)
    }

    fn progress_route<'a>(
        &'a self,
        invocation_id: &'a str,
        holder: &'a str,
        progress: &'a str,
    ) -> StoreFuture<'a, RouteTransition> {
        self.inner.progress_route(invocation_id, holder, progress)
    }

    fn interrupt_route<'a>(
        &'a self,
        invocation_id: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, RouteTransition> {
        self.inner.interrupt_route(invocation_id, at_ms)
    }

    fn route<'a>(&'a self, invocation_id: &'a str) -> StoreFuture<'a, Option<RouteRecord>> {
        self.inner.route(invocation_id)
    }

    fn routes_for_holder<'a>(
        &'a self,
        holder: &'a str,
        state: RouteState,
        since_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<RouteRecord>> {
        self.inner.routes_for_holder(holder, state, since_ms, limit)
    }

    fn interrupt_holder_routes<'a>(
        &'a self,
        holder: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, Vec<RouteRecord>> {
        self.inner.interrupt_holder_routes(holder, at_ms)
    }
}

/// In-process wake-ups that lose every wake-up sent to `deaf`.
pub struct Deaf {
    pub inner: Arc<LocalWakeups>,
    pub deaf: String,
}

impl Wakeups for Deaf {
    fn notify<'a>(&'a self, target: &'a str, id: &'a str) -> WakeFuture<'a, ()> {
        if target == self.deaf {
            return Box::pin(async { Ok(()) });
        }
        self.inner.notify(target, id)
    }

    fn subscribe<'a>(&'a self, target: &'a str) -> WakeFuture<'a, Subscription> {
        self.inner.subscribe(target)
    }
}
