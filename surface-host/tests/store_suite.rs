//! One suite, every backend (`docs/host.md`, "The durable store"): each
//! case runs on the in-process [`MemoryStore`], a SQLite file and a
//! database of a throwaway PostgreSQL 15 cluster (skipped with a notice
//! when PostgreSQL is absent; failing under `CI=true`). The crash tests
//! with `kill -9` of a real host process are in `tests/crash.rs`.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::future::join_all;
use host_support::{session, SessionFixture};
use serde_json::{json, Map, Value};
use std::time::Duration;
use support::pg::PgCluster;
use support::{auth, devices_host, temp_dir, Db};

use surface_host::host::{digest_call, DurableError, DurableHost, RetentionPolicy};
use surface_runtime::bridge::{
    CallOptions, CapabilityClient, DescribeScope, GatewayApproval, GatewayOutcome,
    InvocationReceipt, InvokeRequest, OrpcCallError, ResumeApprovalRequest,
};
use surface_runtime::clock::ManualClock;
use surface_runtime::host::{
    AgentRun, BrowserSurfaceOutcome, BrowserSurfaceProgress, BrowserSurfaceResult, HostError,
    ResultDisposition, ToolCallRequest,
};
use surface_runtime::manifest::CapabilityDescriptor;
use surface_runtime::sync::BoxFuture;
use surface_runtime::{AgentError, AgentInvocationResult, ConsumerKind, ErrorCode, Retry};
use surface_store::Pruned;
use surface_store::{
    ApprovalDecision, ApprovalState, CallRecord, CallState, Completion, Decision, DispatchWrite,
    MemoryStore, RouteState, RouteTake, RouteTransition, RouteWrite, StoreError, Transition,
};

const DISABLE: &str = "domain:devices.disable";

fn run1() -> AgentRun {
    AgentRun {
        run_id: "run-1".into(),
        session_id: "sess-1".into(),
        tab_id: Some("tab-1".into()),
        kind: ConsumerKind::Embedded,
    }
}

fn disable(invocation_id: &str) -> ToolCallRequest {
    ToolCallRequest::new(
        "run-1",
        format!("tc-{invocation_id}"),
        invocation_id,
        DISABLE,
        json!({"reason": "lost"}),
    )
}

/// A durable host on `db` with the fixture's tab announced on `connection`.
async fn host_on(
    db: &Db,
    s: &SessionFixture,
    connection: &str,
) -> (DurableHost, surface_host::host::Recovery) {
    let (host, recovery) = DurableHost::open(devices_host(), db.connect().await, "host-1")
        .await
        .expect("host opens");
    let announcement = s.session.connect(connection).expect("session connects");
    host.accept_announcement(&auth(connection), &announcement)
        .await
        .expect("announcement accepted");
    (host, recovery)
}

/// A fresh host with the run started.
async fn started(db: &Db, s: &SessionFixture) -> DurableHost {
    let (host, _) = host_on(db, s, "conn-1").await;
    host.start_run(run1()).await.expect("run starts");
    host
}

fn record(invocation_id: &str) -> CallRecord {
    CallRecord {
        invocation_id: invocation_id.into(),
        owner: "host-1".into(),
        run_id: "run-1".into(),
        tool_call_id: "tc-1".into(),
        session_id: "sess-1".into(),
        tab_id: "tab-1".into(),
        connection_id: "conn-1".into(),
        capability_id: DISABLE.into(),
        effect: Some("server-mutation".into()),
        envelope_digest: vec![7; 32],
        state: CallState::Dispatched,
        result_digest: None,
        result: None,
        receipt: None,
        dispatched_at_ms: 1,
        settled_at_ms: None,
        backend_invocation_id: None,
    }
}

async fn dispatch_row_is_written_before_the_call_leaves(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let call = host.dispatch(disable("inv-1")).await.expect("dispatches");
    let row = db
        .connect()
        .await
        .call("inv-1")
        .await
        .unwrap()
        .expect("row written");
    assert_eq!(
        (
            row.owner.as_str(),
            row.run_id.as_str(),
            row.tool_call_id.as_str(),
            row.session_id.as_str(),
            row.tab_id.as_str(),
            row.connection_id.as_str(),
            row.capability_id.as_str(),
            row.effect.as_deref(),
            row.state,
        ),
        (
            "host-1",
            "run-1",
            "tc-inv-1",
            "sess-1",
            "tab-1",
            "conn-1",
            DISABLE,
            Some("server-mutation"),
            CallState::Dispatched
        ),
        "{}",
        db.name()
    );
    assert_eq!(row.envelope_digest, digest_call(&call));
    // An identical re-dispatch returns the same call; a changed one is refused.
    assert_eq!(host.dispatch(disable("inv-1")).await.unwrap(), call);
    let mut changed = disable("inv-1");
    changed.input = json!({"reason": "stolen"});
    assert!(matches!(
        host.dispatch(changed).await,
        Err(DurableError::Host(HostError::InvocationConflict(id))) if id == "inv-1"
    ));
}

async fn a_store_that_cannot_be_written_refuses_to_dispatch(db: &Db) {
    let Some(handle) = db.closable().await else {
        return; // the memory store cannot fail
    };
    let s = session();
    let (host, _) = DurableHost::open(devices_host(), handle.store(), "host-1")
        .await
        .unwrap();
    let announcement = s.session.connect("conn-1").unwrap();
    host.accept_announcement(&auth("conn-1"), &announcement)
        .await
        .unwrap();
    host.start_run(run1()).await.unwrap();
    handle.close().await;
    let refused = host.dispatch(disable("inv-1")).await;
    assert!(
        matches!(refused, Err(DurableError::Store(StoreError::Closed))),
        "{}: {refused:?}",
        db.name()
    );
    // Nothing is outstanding, the id stays refused, nothing reached the page.
    assert!(host.host().outstanding().is_empty());
    assert!(matches!(
        host.dispatch(disable("inv-1")).await,
        Err(DurableError::Host(HostError::InvocationConflict(_)))
    ));
    assert_eq!(s.fx.executor.count(), 0);
    assert_eq!(db.connect().await.call("inv-1").await.unwrap(), None);
}

async fn a_result_is_recorded_and_its_copy_after_a_restart_is_a_duplicate(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let call = host.dispatch(disable("inv-1")).await.unwrap();
    let result = s.session.invoke(call).await;
    assert!(matches!(
        host.accept_result(&auth("conn-1"), &result).await.unwrap(),
        ResultDisposition::Completed(_)
    ));
    let row = db.connect().await.call("inv-1").await.unwrap().unwrap();
    assert_eq!(row.state, CallState::Completed);
    assert_eq!(
        serde_json::from_str::<Value>(row.result.as_deref().unwrap()).unwrap(),
        serde_json::to_value(&result.result).unwrap()
    );
    drop(host);
    // Restart: nothing interrupted, the run restored, the copy a duplicate
    // (also on the tab's new connection), a changed copy refused.
    let (host, recovery) = host_on(db, &s, "conn-2").await;
    assert!(recovery.interrupted.is_empty(), "{}", db.name());
    let runs: Vec<&str> = recovery.runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(runs, ["run-1"]);
    assert_eq!(
        host.accept_result(&auth("conn-2"), &result).await.unwrap(),
        ResultDisposition::Duplicate
    );
    let mut changed = result.clone();
    changed.result =
        BrowserSurfaceOutcome::rejected(surface_runtime::host::RejectionReason::StaleSurface);
    assert!(matches!(
        host.accept_result(&auth("conn-2"), &changed).await,
        Err(DurableError::Host(HostError::ChangedDuplicate(id))) if id == "inv-1"
    ));
    assert_eq!(s.fx.executor.count(), 1);
}

async fn a_restart_interrupts_outstanding_calls_and_refuses_every_id(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let completed = host.dispatch(disable("inv-done")).await.unwrap();
    let result = s.session.invoke(completed).await;
    host.accept_result(&auth("conn-1"), &result).await.unwrap();
    let pending = host.dispatch(disable("inv-1")).await.unwrap();
    drop(host); // the process dies with inv-1 outstanding
    let (host, recovery) = host_on(db, &s, "conn-2").await;
    let interrupted: Vec<(&str, CallState)> = recovery
        .interrupted
        .iter()
        .map(|c| (c.invocation_id.as_str(), c.state))
        .collect();
    assert_eq!(
        interrupted,
        [("inv-1", CallState::Interrupted)],
        "{}",
        db.name()
    );
    for id in ["inv-1", "inv-done"] {
        assert!(
            matches!(
                host.dispatch(disable(id)).await,
                Err(DurableError::Host(HostError::InvocationConflict(_)))
            ),
            "{}: {id} dispatched again",
            db.name()
        );
    }
    // A late result of the interrupted call changes nothing.
    let late = BrowserSurfaceResult::for_call(
        &pending.identity,
        &pending,
        BrowserSurfaceOutcome::Invocation(AgentInvocationResult::ok(
            "inv-1",
            DISABLE,
            Value::Null,
            pending.invocation.surface_version.unwrap(),
        )),
    );
    assert!(matches!(
        host.accept_result(&auth("conn-2"), &late).await,
        Err(DurableError::NotInState {
            state: CallState::Interrupted,
            ..
        })
    ));
    // New ids still work after the restart.
    host.dispatch(disable("inv-2"))
        .await
        .expect("a fresh id dispatches");
    assert_eq!(s.fx.executor.count(), 1, "nothing executed but inv-done");
}

async fn racing_writers_apply_each_transition_once(db: &Db) {
    let handles: Vec<_> = join_all((0..6).map(|_| db.connect())).await;
    let inserts = join_all(
        handles
            .iter()
            .map(|h| async { h.record_dispatch(&record("inv-r")).await }),
    )
    .await;
    let inserted = inserts
        .iter()
        .filter(|w| matches!(w, Ok(DispatchWrite::Inserted)))
        .count();
    assert_eq!(inserted, 1, "{}: {inserts:?}", db.name());
    assert!(inserts.iter().all(|w| w.is_ok()));
    let completions: Vec<Completion> = (0..6u8)
        .map(|i| Completion {
            result_digest: vec![i; 32],
            result: format!("{{\"n\":{i}}}"),
            at_ms: 2,
        })
        .collect();
    let outcomes = join_all(
        handles
            .iter()
            .zip(&completions)
            .map(|(h, c)| async move { h.complete("inv-r", c).await.unwrap() }),
    )
    .await;
    let winners: Vec<usize> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == Transition::Applied)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(winners.len(), 1, "{}: {outcomes:?}", db.name());
    let row = handles[0].call("inv-r").await.unwrap().unwrap();
    assert_eq!(row.result_digest, Some(vec![winners[0] as u8; 32]));
    for t in &outcomes {
        if let Transition::NotApplied(r) = t {
            assert_eq!(**r, row, "a loser sees the winner's row");
        }
    }
    // A settled call is not interrupted or reconciled afterwards.
    assert!(matches!(
        handles[1].interrupt("inv-r", 3).await.unwrap(),
        Transition::NotApplied(_)
    ));
    assert!(matches!(
        handles[2].reconcile("inv-r", "{}", 3).await.unwrap(),
        Transition::NotApplied(_)
    ));
    assert_eq!(
        handles[3].interrupt("nope", 3).await.unwrap(),
        Transition::Unknown
    );
}

fn approval_result(call: &surface_runtime::host::BrowserSurfaceCall) -> BrowserSurfaceResult {
    let mut details = Map::new();
    details.insert("approvalId".into(), json!("appr-1"));
    let error = AgentError {
        code: ErrorCode::DomainApprovalRequired,
        message: "The backend requires an approval.".into(),
        retry: Retry::No,
        details,
    };
    BrowserSurfaceResult::for_call(
        &call.identity,
        call,
        BrowserSurfaceOutcome::Invocation(AgentInvocationResult::err(
            call.invocation.invocation_id.clone(),
            call.invocation.capability_id.clone(),
            error,
            call.invocation.surface_version.unwrap(),
        )),
    )
}

async fn approvals_stay_pending_across_a_restart_and_are_decided_once(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let call = host.dispatch(disable("inv-1")).await.unwrap();
    host.accept_result(&auth("conn-1"), &approval_result(&call))
        .await
        .unwrap();
    drop(host);
    let (host, recovery) = host_on(db, &s, "conn-2").await;
    let pending: Vec<(&str, &str, &str, ApprovalState)> = recovery
        .pending_approvals
        .iter()
        .map(|a| {
            (
                a.approval_id.as_str(),
                a.invocation_id.as_str(),
                a.tool_call_id.as_str(),
                a.state,
            )
        })
        .collect();
    assert_eq!(
        pending,
        [("inv-1", "inv-1", "tc-inv-1", ApprovalState::Pending)],
        "{}",
        db.name()
    );
    assert_eq!(
        host.decide_approval("inv-1", ApprovalDecision::Approve, "approver-1")
            .await
            .unwrap(),
        Decision::Applied
    );
    match host
        .decide_approval("inv-1", ApprovalDecision::Reject, "approver-2")
        .await
        .unwrap()
    {
        Decision::AlreadyDecided(a) => {
            assert_eq!(
                (a.state, a.decided_by.as_deref()),
                (ApprovalState::Approved, Some("approver-1"))
            )
        }
        other => panic!("{}: {other:?}", db.name()),
    }
    assert_eq!(
        host.decide_approval("appr-x", ApprovalDecision::Approve, "a")
            .await
            .unwrap(),
        Decision::Unknown
    );
    assert!(host.pending_approvals(10).await.unwrap().is_empty());
}

/// A gateway whose `getInvocation` answers what `receipt` makes of the id
/// it is asked about (a settled receipt of a completed call by default)
/// and counts every call; `invoke`, `getApproval` and `resumeApproval`
/// must never be called.
struct Gateway {
    receipt: fn(&str) -> Option<Value>,
    get_invocation: AtomicUsize,
    other: AtomicUsize,
}

impl Default for Gateway {
    fn default() -> Self {
        Self::answering(|id| {
            Some(receipt(
                id,
                json!({"status": "completed", "invocationId": id, "executionId": "exec-9",
                       "output": {"disabled": ["d1", "d2"]}}),
            ))
        })
    }
}

impl Gateway {
    fn answering(receipt: fn(&str) -> Option<Value>) -> Self {
        Self {
            receipt,
            get_invocation: AtomicUsize::new(0),
            other: AtomicUsize::new(0),
        }
    }
}

/// A settled receipt of `invocation_id` holding `outcome`, as the gateway
/// answers `getInvocation`.
fn receipt(invocation_id: &str, outcome: Value) -> Value {
    json!({"invocationId": invocation_id, "capabilityId": "devices.disable",
           "contractDigest": "ab".repeat(32), "correlationId": invocation_id,
           "state": "settled", "outcome": outcome,
           "createdAt": "2026-09-13T00:00:00.000Z", "updatedAt": "2026-09-13T00:00:01.000Z"})
}

fn refused<T: Send + 'static>(
    counter: &AtomicUsize,
) -> BoxFuture<'static, Result<T, OrpcCallError>> {
    counter.fetch_add(1, Ordering::SeqCst);
    Box::pin(async { Err(OrpcCallError::Cancelled) })
}

impl CapabilityClient for Gateway {
    fn describe(
        &self,
        _: DescribeScope,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>> {
        refused(&self.other)
    }
    fn invoke(
        &self,
        _: InvokeRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        refused(&self.other)
    }
    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>> {
        self.get_invocation.fetch_add(1, Ordering::SeqCst);
        let answer = (self.receipt)(invocation_id).map(|r| serde_json::from_value(r).unwrap());
        Box::pin(async move { Ok(answer) })
    }
    fn get_approval<'a>(
        &'a self,
        _: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>> {
        refused(&self.other)
    }
    fn resume_approval(
        &self,
        _: ResumeApprovalRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        refused(&self.other)
    }
}

async fn an_interrupted_governed_call_is_reconciled_into_a_receipt(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    host.dispatch(disable("inv-g")).await.unwrap();
    drop(host);
    let (host, recovery) = host_on(db, &s, "conn-2").await;
    assert_eq!(recovery.interrupted.len(), 1);
    let gateway = Gateway::default();
    let got = host.reconcile("inv-g", &gateway).await.expect("reconciled");
    let expected = receipt(
        "inv-g",
        json!({"status": "completed", "invocationId": "inv-g", "executionId": "exec-9",
               "output": {"disabled": ["d1", "d2"]}}),
    );
    assert_eq!(serde_json::to_value(&got).unwrap(), expected);
    let row = db.connect().await.call("inv-g").await.unwrap().unwrap();
    assert_eq!(row.state, CallState::Reconciled, "{}", db.name());
    assert_eq!(
        serde_json::from_str::<Value>(row.receipt.as_deref().unwrap()).unwrap(),
        expected
    );
    assert!(matches!(
        host.reconcile("inv-g", &gateway).await,
        Err(DurableError::NotInState {
            state: CallState::Reconciled,
            ..
        })
    ));
    assert_eq!(gateway.get_invocation.load(Ordering::SeqCst), 1);
    assert_eq!(
        gateway.other.load(Ordering::SeqCst),
        0,
        "never re-dispatched"
    );
    assert_eq!(s.fx.executor.count(), 0);
}

/// `getInvocation` answers `null` (nothing recorded: the call stays
/// interrupted), a receipt for another id (refused), then a receipt held
/// for an approval (reconciled, the approval recorded pending).
async fn reconciling_keeps_unrecorded_and_foreign_answers_out_and_records_a_held_approval(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    host.dispatch(disable("inv-h")).await.unwrap();
    drop(host);
    let (host, _) = host_on(db, &s, "conn-2").await;
    let unrecorded = Gateway::answering(|_| None);
    assert!(matches!(
        host.reconcile("inv-h", &unrecorded).await,
        Err(DurableError::NotRecorded(id)) if id == "inv-h"
    ));
    let foreign = Gateway::answering(|_| {
        Some(receipt(
            "inv-other",
            json!({"status": "outcome-unknown", "invocationId": "inv-other"}),
        ))
    });
    assert!(matches!(
        host.reconcile("inv-h", &foreign).await,
        Err(DurableError::ReceiptMismatch { invocation_id, received })
            if invocation_id == "inv-h" && received == "inv-other"
    ));
    let row = db.connect().await.call("inv-h").await.unwrap().unwrap();
    assert_eq!(
        (row.state, row.receipt),
        (CallState::Interrupted, None),
        "{}",
        db.name()
    );
    let held = Gateway::answering(|id| {
        let mut r = receipt(
            id,
            json!({"status": "approval-required", "invocationId": id, "executionId": "exec-3",
                   "approval": {"id": "appr-h", "capabilityId": "devices.disable",
                                "status": "pending", "reasons": ["policy"], "types": ["irreversible"],
                                "requestedAt": "2026-09-13T00:00:00.000Z",
                                "expiresAt": "2099-01-01T00:00:00.000Z"}}),
        );
        r["state"] = json!("pending");
        r["approvalId"] = json!("appr-h");
        Some(r)
    });
    let got = host.reconcile("inv-h", &held).await.unwrap();
    assert_eq!(got.approval_id.as_deref(), Some("appr-h"));
    let pending = host.pending_approvals(10).await.unwrap();
    assert_eq!(pending.len(), 1, "{}", db.name());
    assert_eq!(
        (
            pending[0].approval_id.as_str(),
            pending[0].invocation_id.as_str(),
            pending[0].backend_invocation_id.as_str(),
            pending[0].capability_id.as_str(),
            pending[0].state,
        ),
        ("inv-h", "inv-h", "inv-h", DISABLE, ApprovalState::Pending)
    );
    assert_eq!(pending[0].backend_approval_id, "appr-h", "{}", db.name());
    // The backend's expiresAt is later than the host's bound (a day).
    let until = pending[0].expires_at_ms - pending[0].requested_at_ms;
    assert_eq!(until, 86_400_000, "{}", db.name());
    let row = db.connect().await.call("inv-h").await.unwrap().unwrap();
    assert_eq!(row.state, CallState::Reconciled, "{}", db.name());
    for gateway in [&unrecorded, &foreign, &held] {
        assert_eq!(gateway.other.load(Ordering::SeqCst), 0);
    }
    assert_eq!(s.fx.executor.count(), 0);
}

/// A gateway whose `resumeApproval` answers a completed purge for the
/// invocation it is asked about (or a failed outcome, `APPROVAL_REJECTED`,
/// when built with `rejected`; an oRPC `NOT_FOUND` with `not_found`) and
/// records every `(invocationId, approvalId)`; nothing else may be called.
#[derive(Default)]
struct ResumingGateway {
    rejected: bool,
    not_found: bool,
    resumed: std::sync::Mutex<Vec<(String, String)>>,
    other: AtomicUsize,
}

impl ResumingGateway {
    /// The invocation ids resumed, in order.
    fn resumed_ids(&self) -> Vec<String> {
        self.resumed
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| id.clone())
            .collect()
    }
}

impl CapabilityClient for ResumingGateway {
    fn describe(
        &self,
        _: DescribeScope,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>> {
        refused(&self.other)
    }
    fn invoke(
        &self,
        _: InvokeRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        refused(&self.other)
    }
    fn get_invocation<'a>(
        &'a self,
        _: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>> {
        refused(&self.other)
    }
    fn get_approval<'a>(
        &'a self,
        _: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>> {
        refused(&self.other)
    }
    fn resume_approval(
        &self,
        request: ResumeApprovalRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        let id = request.invocation_id.clone();
        self.resumed
            .lock()
            .unwrap()
            .push((request.invocation_id, request.approval_id));
        if self.not_found {
            let error = OrpcCallError::Orpc(surface_runtime::bridge::OrpcError {
                defined: true,
                code: "NOT_FOUND".into(),
                status: 404,
                message: "Unknown invocation".into(),
                data: None,
            });
            return Box::pin(async move { Err(error) });
        }
        let outcome = if self.rejected {
            json!({"status": "failed", "invocationId": id, "executionId": "exec-2",
                   "error": {"code": "APPROVAL_REJECTED", "message": "The approval was rejected",
                             "retryable": false}})
        } else {
            json!({"status": "completed", "invocationId": id, "executionId": "exec-1",
                   "output": {"purged": ["dev-1"]}})
        };
        let outcome = serde_json::from_value(outcome).unwrap();
        Box::pin(async move { Ok(outcome) })
    }
}

async fn a_decided_approval_is_resumed_once_and_the_run_gets_the_outcome(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let call = host.dispatch(disable("inv-1")).await.unwrap();
    // The user confirmed in the page: the call runs as `confirmed-1`.
    let confirmed = BrowserSurfaceProgress::confirmed(&call, "confirmed-1");
    host.accept_progress(&auth("conn-1"), &confirmed)
        .await
        .unwrap();
    host.accept_progress(&auth("conn-1"), &confirmed)
        .await
        .expect("the same progress again changes nothing");
    let other = BrowserSurfaceProgress::confirmed(&call, "confirmed-2");
    assert!(
        matches!(
            host.accept_progress(&auth("conn-1"), &other).await,
            Err(DurableError::NotInState { .. })
        ),
        "{}: a second retry id is refused",
        db.name()
    );
    host.accept_result(&auth("conn-1"), &approval_result(&call))
        .await
        .unwrap();
    drop(host);

    // Restart between the request and the decision.
    let (host, recovery) = host_on(db, &s, "conn-2").await;
    let pending = &recovery.pending_approvals;
    assert_eq!(pending.len(), 1, "{}", db.name());
    assert_eq!(
        (
            pending[0].invocation_id.as_str(),
            pending[0].backend_invocation_id.as_str(),
            pending[0].outcome.as_deref()
        ),
        ("inv-1", "confirmed-1", None)
    );
    let gateway = ResumingGateway::default();
    assert!(matches!(
        host.resume_approval("inv-1", &gateway, CallOptions::default()).await,
        Err(DurableError::NotDecided(id)) if id == "inv-1"
    ));
    assert!(matches!(
        host.resume_approval("appr-x", &gateway, CallOptions::default()).await,
        Err(DurableError::UnknownApproval(id)) if id == "appr-x"
    ));
    assert!(gateway.resumed_ids().is_empty());
    host.decide_approval("inv-1", ApprovalDecision::Approve, "approver-1")
        .await
        .unwrap();
    let (_, recovery) = DurableHost::open(devices_host(), db.connect().await, "host-3")
        .await
        .unwrap();
    let waiting: Vec<&str> = recovery
        .awaiting_resume
        .iter()
        .map(|a| a.approval_id.as_str())
        .collect();
    assert_eq!(waiting, ["inv-1"], "{}: decided, not resumed", db.name());
    assert!(recovery.pending_approvals.is_empty());
    let expected = AgentInvocationResult::ok(
        "inv-1",
        DISABLE,
        json!({"purged": ["dev-1"]}),
        surface_host::host::RESUMED_SURFACE_VERSION,
    );
    for _ in 0..2 {
        assert_eq!(
            host.resume_approval("inv-1", &gateway, CallOptions::default())
                .await
                .unwrap(),
            expected,
            "{}",
            db.name()
        );
    }
    assert_eq!(
        *gateway.resumed.lock().unwrap(),
        [("confirmed-1".to_string(), "appr-1".to_string())],
        "{}: resumed once, by the ids the backend knows",
        db.name()
    );
    assert_eq!(gateway.other.load(Ordering::SeqCst), 0);
    let observed = host.run_approvals("run-1", 10).await.unwrap();
    assert_eq!(observed.len(), 1);
    assert_eq!(observed[0].state, ApprovalState::Approved);
    assert_eq!(
        serde_json::from_str::<AgentInvocationResult>(observed[0].outcome.as_deref().unwrap())
            .unwrap(),
        expected
    );
    // A second host on the same database reads the outcome; no second resume.
    let (again, recovery) = DurableHost::open(devices_host(), db.connect().await, "host-2")
        .await
        .unwrap();
    assert!(recovery.awaiting_resume.is_empty(), "{}", db.name());
    assert_eq!(
        again
            .resume_approval("inv-1", &gateway, CallOptions::default())
            .await
            .unwrap(),
        expected
    );
    assert_eq!(gateway.resumed_ids().len(), 1);
    assert_eq!(
        s.fx.executor.count(),
        0,
        "the page call is never re-dispatched"
    );
}

async fn a_rejected_approval_resumes_into_the_backends_failure(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let call = host.dispatch(disable("inv-r")).await.unwrap();
    host.accept_result(&auth("conn-1"), &approval_result(&call))
        .await
        .unwrap();
    host.decide_approval("inv-r", ApprovalDecision::Reject, "approver-1")
        .await
        .unwrap();
    let gateway = ResumingGateway {
        rejected: true,
        ..ResumingGateway::default()
    };
    let result = host
        .resume_approval("inv-r", &gateway, CallOptions::default())
        .await
        .unwrap();
    // The gateway's APPROVAL_REJECTED, mapped by the governed bridge
    // within the error matrix (NOT_AUTHORIZED carries `origin` only) and
    // answered under the run's invocation id.
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"status": "error", "invocationId": "inv-r", "capabilityId": DISABLE,
               "error": {"code": "NOT_AUTHORIZED",
                         "message": "The approver rejected this call; it did not run.",
                         "retry": "no",
                         "details": {"origin": "server"}},
               "surfaceVersion": "0"}),
        "{}",
        db.name()
    );
    assert_eq!(gateway.resumed_ids(), ["inv-r"]);
}

async fn a_resume_the_backend_cannot_find_is_a_failed_outcome_once(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let call = host.dispatch(disable("inv-n")).await.unwrap();
    let bad = BrowserSurfaceProgress::confirmed(&call, "bad id");
    assert!(
        matches!(
            host.accept_progress(&auth("conn-1"), &bad).await,
            Err(DurableError::Host(HostError::InvalidInvocationId(_)))
        ),
        "{}: a retry id that breaks the id rule is refused",
        db.name()
    );
    host.accept_result(&auth("conn-1"), &approval_result(&call))
        .await
        .unwrap();
    host.decide_approval("inv-n", ApprovalDecision::Approve, "approver-1")
        .await
        .unwrap();
    let gateway = ResumingGateway {
        not_found: true,
        ..ResumingGateway::default()
    };
    for _ in 0..2 {
        let result = host
            .resume_approval("inv-n", &gateway, CallOptions::default())
            .await
            .unwrap();
        let AgentInvocationResult::Error {
            invocation_id,
            error,
            ..
        } = &result
        else {
            panic!("{}: {result:?}", db.name());
        };
        assert_eq!(invocation_id, "inv-n");
        assert_eq!(
            (error.code.clone(), error.retry),
            (ErrorCode::ExecutionFailed, Retry::No)
        );
    }
    assert_eq!(gateway.resumed_ids(), ["inv-n"], "{}", db.name());
    assert!(db
        .connect()
        .await
        .approvals_awaiting_resume(10)
        .await
        .unwrap()
        .is_empty());
}

/// Rows an earlier version wrote (results before protocol 1: `success`,
/// no `capabilityId` or `surfaceVersion`, old codes and retry values) are
/// read in today's shape by every reader — the call row, the run's
/// approvals, a resume that returns the recorded outcome — on the SQL
/// stores (nothing in the memory store outlives its process, so it never
/// holds an earlier version's rows). The earlier version wrote through
/// these same statements: the schema did not change.
async fn rows_an_earlier_version_wrote_are_read_in_todays_shape(db: &Db) {
    if matches!(db, Db::Memory(_)) {
        return;
    }
    let store = db.connect().await;
    let old_result = json!({"status": "error", "invocationId": "inv-old", "error": {
        "code": "CONFIRMATION_REQUIRED",
        "message": "The user must confirm this call.",
        "retry": "after-confirmation",
        "details": {"confirmationId": "conf-1", "expiresAtMs": 1_789_257_600_000_u64,
                    "summary": {"capabilityId": DISABLE, "registrationId": "r1",
                                "description": "Disable devices",
                                "input": {"deviceIds": ["d1"], "reason": "lost"},
                                "effect": "server-mutation"}}}});
    assert_eq!(
        store.record_dispatch(&record("inv-old")).await.unwrap(),
        DispatchWrite::Inserted
    );
    let completion = Completion {
        result_digest: vec![9; 32],
        result: old_result.to_string(),
        at_ms: 2,
    };
    assert_eq!(
        store.complete("inv-old", &completion).await.unwrap(),
        Transition::Applied
    );
    let old_outcome = json!({"status": "success", "invocationId": "inv-old",
                             "output": {"purged": ["dev-1"]}});
    let mut approval = surface_store::ApprovalRecord {
        approval_id: "inv-old".into(),
        backend_approval_id: "appr-old".into(),
        expires_at_ms: i64::MAX,
        invocation_id: "inv-old".into(),
        run_id: "run-1".into(),
        tool_call_id: "tc-1".into(),
        capability_id: DISABLE.into(),
        state: ApprovalState::Pending,
        requested_at_ms: 3,
        decided_by: None,
        decided_at_ms: None,
        backend_invocation_id: "inv-old".into(),
        outcome: None,
        resumed_at_ms: None,
    };
    assert!(store.record_approval(&approval).await.unwrap());
    store
        .decide_approval("inv-old", ApprovalDecision::Approve, "approver-1", 4)
        .await
        .unwrap();
    store
        .record_outcome("inv-old", &old_outcome.to_string(), 5)
        .await
        .unwrap();
    drop(store);

    // Today's host on the same database.
    let (host, _) = DurableHost::open(devices_host(), db.connect().await, "host-1")
        .await
        .unwrap();
    let row = host.store().call("inv-old").await.unwrap().unwrap();
    let result: BrowserSurfaceOutcome =
        serde_json::from_str(row.result.as_deref().unwrap()).expect("today's shape");
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"status": "error", "invocationId": "inv-old", "capabilityId": DISABLE,
               "error": {"code": "CONFIRMATION_REQUIRED",
                         "message": "The user must confirm this call.",
                         "retry": "with-confirmation",
                         "details": {"confirmationId": "conf-1",
                                     "expiresAt": "2026-09-13T00:00:00.000Z",
                                     "summary": "Disable devices — input: {\"deviceIds\":[\"d1\"],\"reason\":\"lost\"}",
                                     "effect": "server-mutation", "origin": "client"}},
               "surfaceVersion": "0"}),
        "{}",
        db.name()
    );
    let expected = AgentInvocationResult::ok(
        "inv-old",
        DISABLE,
        json!({"purged": ["dev-1"]}),
        surface_store::LEGACY_SURFACE_VERSION,
    );
    let observed = host.run_approvals("run-1", 10).await.unwrap();
    approval.state = ApprovalState::Approved;
    approval.decided_by = Some("approver-1".into());
    approval.decided_at_ms = Some(4);
    approval.outcome = Some(serde_json::to_string(&expected).unwrap());
    approval.resumed_at_ms = Some(5);
    assert_eq!(observed, [approval], "{}", db.name());
    // A resume returns the recorded outcome without asking the backend.
    let gateway = ResumingGateway::default();
    assert_eq!(
        host.resume_approval("inv-old", &gateway, CallOptions::default())
            .await
            .unwrap(),
        expected
    );
    assert!(gateway.resumed_ids().is_empty());
    assert_eq!(gateway.other.load(Ordering::SeqCst), 0);
}

fn lease(tab: &str, replica: &str, expires: i64, now: i64) -> surface_store::SurfaceLease {
    surface_store::SurfaceLease {
        tab_id: tab.into(),
        session_id: "sess-1".into(),
        replica: replica.into(),
        connection_id: format!("conn-{replica}"),
        announcement: format!("{{\"by\":\"{replica}\"}}"),
        lease_expires_at_ms: expires,
        updated_at_ms: now,
    }
}

async fn surface_leases_are_held_by_one_replica_until_they_expire(db: &Db) {
    use surface_store::LeaseClaim;
    let a = db.connect().await;
    let b = db.connect().await;
    let name = db.name();
    assert_eq!(
        a.claim_surface(&lease("tab-1", "a", 2000, 1000), 1000)
            .await
            .unwrap(),
        LeaseClaim::Held
    );
    match b
        .claim_surface(&lease("tab-1", "b", 2500, 1500), 1500)
        .await
        .unwrap()
    {
        LeaseClaim::HeldElsewhere(other) => assert_eq!(
            (other.replica.as_str(), other.lease_expires_at_ms),
            ("a", 2000),
            "{name}"
        ),
        other => panic!("{name}: {other:?}"),
    }
    // The holder re-announces and renews.
    assert_eq!(
        a.claim_surface(&lease("tab-1", "a", 2100, 1600), 1600)
            .await
            .unwrap(),
        LeaseClaim::Held
    );
    assert_eq!(
        a.renew_leases("a", 3000, 1800).await.unwrap(),
        [surface_store::RenewedLease {
            tab_id: "tab-1".into(),
            connection_id: "conn-a".into()
        }],
        "{name}"
    );
    assert!(matches!(
        b.claim_surface(&lease("tab-1", "b", 3500, 2500), 2500)
            .await
            .unwrap(),
        LeaseClaim::HeldElsewhere(_)
    ));
    assert!(a.expired_surfaces(2999, 10).await.unwrap().is_empty());
    let expired = a.expired_surfaces(3500, 10).await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(
        (expired[0].tab_id.as_str(), expired[0].replica.as_str()),
        ("tab-1", "a")
    );
    // A stopped renewing: B takes the tab over; A's renewals no longer touch it.
    assert_eq!(
        b.claim_surface(&lease("tab-1", "b", 5000, 3500), 3500)
            .await
            .unwrap(),
        LeaseClaim::Held
    );
    assert_eq!(a.renew_leases("a", 9000, 3600).await.unwrap(), [], "{name}");
    let held = a.surface("tab-1").await.unwrap().unwrap();
    assert_eq!(
        (
            held.replica.as_str(),
            held.announcement.as_str(),
            held.lease_expires_at_ms
        ),
        ("b", "{\"by\":\"b\"}", 5000)
    );
    assert!(!a.release_surface("tab-1", "a", "conn-a").await.unwrap());
    // Only for the connection it names (a newer connection's lease stays).
    assert!(!b.release_surface("tab-1", "b", "conn-old").await.unwrap());
    assert!(b.release_surface("tab-1", "b", "conn-b").await.unwrap());
    assert_eq!(a.surface("tab-1").await.unwrap(), None);
    // Six processes race for an expired lease: one gets it.
    a.claim_surface(&lease("tab-2", "old", 10, 1), 1)
        .await
        .unwrap();
    let mut stores = Vec::new();
    for _ in 0..6 {
        stores.push(db.connect().await);
    }
    let claims = join_all(stores.iter().enumerate().map(|(n, store)| {
        let l = lease("tab-2", &format!("r{n}"), 10_000, 100);
        async move { store.claim_surface(&l, 100).await.unwrap() }
    }))
    .await;
    assert_eq!(
        claims.iter().filter(|c| **c == LeaseClaim::Held).count(),
        1,
        "{name}: {claims:?}"
    );
    let mut big = lease("tab-3", "a", 10, 1);
    big.announcement = "x".repeat(surface_store::store::MAX_STORED_ANNOUNCEMENT_BYTES + 1);
    assert!(matches!(
        a.claim_surface(&big, 1).await,
        Err(StoreError::TooLarge { .. })
    ));
}

fn route(id: &str, requester: &str, holder: &str, at: i64) -> surface_store::RouteRecord {
    surface_store::RouteRecord {
        invocation_id: id.into(),
        run_id: "run-1".into(),
        tab_id: "tab-1".into(),
        requester: requester.into(),
        holder: holder.into(),
        request: format!("{{\"invocationId\":\"{id}\"}}"),
        state: RouteState::Requested,
        result: None,
        progress: None,
        requested_at_ms: at,
        settled_at_ms: None,
    }
}

async fn routed_calls_are_taken_once_and_settled_once(db: &Db) {
    let store = db.connect().await;
    assert_eq!(
        store
            .record_route(&route("x", "r2", "r1", 100))
            .await
            .unwrap(),
        RouteWrite::Inserted
    );
    assert!(matches!(
        store.record_route(&route("x", "r3", "r1", 101)).await.unwrap(),
        RouteWrite::Exists(row) if row.requester == "r2"
    ));
    // Only its holder takes it, and only while it is young enough.
    assert!(matches!(
        store.take_route("x", "r3", 0).await.unwrap(),
        RouteTake::NotTaken(_)
    ));
    assert!(matches!(
        store.take_route("x", "r1", 101).await.unwrap(),
        RouteTake::NotTaken(_)
    ));
    assert_eq!(
        store.take_route("nope", "r1", 0).await.unwrap(),
        RouteTake::Unknown
    );
    // Six pools race to take it: one wins.
    let handles: Vec<_> = join_all((0..6).map(|_| db.connect())).await;
    let takes = join_all(handles.iter().map(|h| h.take_route("x", "r1", 100))).await;
    let taken: Vec<_> = takes
        .into_iter()
        .filter_map(|t| match t.unwrap() {
            RouteTake::Taken(row) => Some(row),
            _ => None,
        })
        .collect();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].state, RouteState::Taken);
    // Its progress is recorded by its holder only, while taken.
    assert_eq!(
        store
            .progress_route("x", "r1", "{\"stage\":\"awaiting-confirmation\"}")
            .await
            .unwrap(),
        RouteTransition::Applied
    );
    assert!(matches!(
        store.progress_route("x", "r3", "{\"stage\":\"confirmed\"}").await.unwrap(),
        RouteTransition::NotApplied(row)
            if row.progress.as_deref() == Some("{\"stage\":\"awaiting-confirmation\"}")
    ));
    assert_eq!(
        store.progress_route("nope", "r1", "{}").await.unwrap(),
        RouteTransition::Unknown
    );
    assert!(matches!(
        store
            .progress_route(
                "x",
                "r1",
                &"x".repeat(surface_store::store::MAX_STORED_JSON_BYTES + 1)
            )
            .await,
        Err(StoreError::TooLarge { .. })
    ));
    assert_eq!(
        store.route("x").await.unwrap().unwrap().progress.as_deref(),
        Some("{\"stage\":\"awaiting-confirmation\"}"),
        "{}: read back",
        db.name()
    );
    // A taken call is not cancelled (it may be running) but answered once.
    assert!(matches!(
        store.cancel_route("x", 5).await.unwrap(),
        RouteTransition::NotApplied(_)
    ));
    // An answer is a stored result and its envelope: up to 1 KiB more.
    let limit = surface_store::store::MAX_ROUTE_ANSWER_BYTES;
    assert_eq!(limit, surface_store::store::MAX_STORED_JSON_BYTES + 1024);
    assert!(matches!(
        store.answer_route("x", &"x".repeat(limit + 1), 6).await,
        Err(StoreError::TooLarge { limit: l, .. }) if l == limit
    ));
    assert_eq!(
        store.answer_route("x", "{}", 6).await.unwrap(),
        RouteTransition::Applied
    );
    assert!(matches!(
        store.answer_route("x", "{\"other\":1}", 7).await.unwrap(),
        RouteTransition::NotApplied(row) if row.result.as_deref() == Some("{}")
    ));
    assert!(matches!(
        store.interrupt_route("x", 8).await.unwrap(),
        RouteTransition::NotApplied(_)
    ));
    assert!(
        matches!(
            store.progress_route("x", "r1", "{}").await.unwrap(),
            RouteTransition::NotApplied(_)
        ),
        "no progress after the answer"
    );
    // A requested call has no progress yet.
    store
        .record_route(&route("p", "r2", "r5", 150))
        .await
        .unwrap();
    assert!(matches!(
        store.progress_route("p", "r5", "{}").await.unwrap(),
        RouteTransition::NotApplied(row) if row.progress.is_none()
    ));

    store
        .record_route(&route("big-answer", "r2", "r1", 110))
        .await
        .unwrap();
    store.take_route("big-answer", "r1", 0).await.unwrap();
    assert_eq!(
        store
            .answer_route("big-answer", &"x".repeat(limit), 11)
            .await
            .unwrap(),
        RouteTransition::Applied,
        "{}",
        db.name()
    );

    // A withdrawn call: written interrupted when it has no row (an insert
    // committing later finds the id taken) ...
    assert_eq!(
        store
            .withdraw_route(&route("w", "r2", "r1", 120), 12)
            .await
            .unwrap(),
        RouteTransition::Applied
    );
    assert!(matches!(
        store.record_route(&route("w", "r2", "r1", 120)).await.unwrap(),
        RouteWrite::Exists(row) if row.state == RouteState::Interrupted && row.settled_at_ms == Some(12)
    ));
    // ... or moved there from `requested`, for its own requester only.
    store
        .record_route(&route("w2", "r2", "r1", 130))
        .await
        .unwrap();
    assert!(matches!(
        store.withdraw_route(&route("w2", "r3", "r1", 130), 13).await.unwrap(),
        RouteTransition::NotApplied(row) if row.state == RouteState::Requested
    ));
    assert_eq!(
        store
            .withdraw_route(&route("w2", "r2", "r1", 130), 13)
            .await
            .unwrap(),
        RouteTransition::Applied
    );
    assert_eq!(
        store.take_route("w2", "r1", 0).await.unwrap(),
        RouteTake::NotTaken(Box::new(surface_store::RouteRecord {
            state: RouteState::Interrupted,
            settled_at_ms: Some(13),
            ..route("w2", "r2", "r1", 130)
        }))
    );

    // A requested call is cancelled; a holder's and a requester's
    // unsettled calls are interrupted in one statement each.
    store
        .record_route(&route("y", "r2", "r1", 200))
        .await
        .unwrap();
    assert_eq!(
        store.cancel_route("y", 9).await.unwrap(),
        RouteTransition::Applied
    );
    for (id, requester, holder) in [("a", "r2", "r1"), ("b", "r3", "r1"), ("c", "r2", "r4")] {
        store
            .record_route(&route(id, requester, holder, 300))
            .await
            .unwrap();
    }
    let cancelled = store.cancel_requester_routes("r3", 10).await.unwrap();
    assert_eq!(
        cancelled
            .iter()
            .map(|r| r.invocation_id.as_str())
            .collect::<Vec<_>>(),
        ["b"]
    );
    let interrupted = store.interrupt_holder_routes("r1", 11).await.unwrap();
    assert_eq!(
        interrupted
            .iter()
            .map(|r| r.invocation_id.as_str())
            .collect::<Vec<_>>(),
        ["a"]
    );
    let requested = store
        .routes_for_holder("r4", RouteState::Requested, 0, 10)
        .await
        .unwrap();
    assert_eq!(requested.len(), 1);
    // Rows requested before `since` are left out (too old to take).
    assert_eq!(
        store
            .routes_for_holder("r4", RouteState::Requested, 301, 10)
            .await
            .unwrap(),
        []
    );
    assert!(matches!(
        store
            .record_route(&surface_store::RouteRecord {
                request: "x".repeat(surface_store::store::MAX_STORED_JSON_BYTES + 1),
                ..route("big", "r2", "r1", 1)
            })
            .await,
        Err(StoreError::TooLarge { .. })
    ));

    // Leases: an expired one is not revived; a starting replica drops its own.
    store
        .claim_surface(&lease("tab-9", "r1", 1_000, 1), 1)
        .await
        .unwrap();
    assert_eq!(store.renew_leases("r1", 9_000, 2_000).await.unwrap(), []);
    assert_eq!(
        store
            .surface("tab-9")
            .await
            .unwrap()
            .unwrap()
            .lease_expires_at_ms,
        1_000
    );
    assert_eq!(store.release_replica_surfaces("r1").await.unwrap(), 1);
    assert_eq!(store.surface("tab-9").await.unwrap(), None);
}

/// Tokens and MCP sessions (`McpStore`): a digest recorded once, revoked;
/// a session bound to its first run only.
async fn tokens_and_mcp_sessions_are_recorded_once(db: &Db) {
    let store = db.connect_mcp().await;
    assert!(store.record_token("d1", "run-1", 1).await.unwrap());
    assert!(!store.record_token("d1", "run-2", 2).await.unwrap());
    assert_eq!(
        store.token_run("d1").await.unwrap().as_deref(),
        Some("run-1")
    );
    assert!(store.revoke_token("d1").await.unwrap());
    assert_eq!(store.token_run("d1").await.unwrap(), None);
    assert!(store.bind_mcp_session("s1", "run-1", 1).await.unwrap());
    assert_eq!(
        store.mcp_session("s1").await.unwrap(),
        None,
        "no state stored yet"
    );
    store.store_mcp_session("s1", "{\"v\":1}", 2).await.unwrap();
    assert!(
        !store.bind_mcp_session("s1", "run-2", 3).await.unwrap(),
        "bound once"
    );
    assert_eq!(
        store.mcp_session_run("s1").await.unwrap().as_deref(),
        Some("run-1")
    );
    assert_eq!(
        store.mcp_session("s1").await.unwrap().as_deref(),
        Some("{\"v\":1}")
    );
    assert!(store.delete_mcp_session("s1").await.unwrap());
    assert_eq!(store.mcp_session_run("s1").await.unwrap(), None);
}

/// Issues 4 and 5 at the store: a run's tokens deleted together (and only
/// its own); sessions marked used and deleted once idle.
async fn run_tokens_end_together_and_idle_sessions_are_deleted(db: &Db) {
    let store = db.connect_mcp().await;
    for (digest, run) in [("a1", "run-a"), ("a2", "run-a"), ("b1", "run-b")] {
        assert!(store.record_token(digest, run, 1).await.unwrap());
    }
    assert_eq!(store.revoke_run_tokens("run-a").await.unwrap(), 2);
    assert_eq!(store.revoke_run_tokens("run-a").await.unwrap(), 0);
    assert_eq!(store.token_run("a1").await.unwrap(), None);
    assert_eq!(store.token_run("a2").await.unwrap(), None);
    assert_eq!(
        store.token_run("b1").await.unwrap().as_deref(),
        Some("run-b")
    );

    assert!(store.bind_mcp_session("old", "run-b", 100).await.unwrap());
    assert!(store.bind_mcp_session("used", "run-b", 100).await.unwrap());
    assert!(store.bind_mcp_session("new", "run-b", 900).await.unwrap());
    assert!(store.touch_mcp_session("used", 800).await.unwrap());
    assert!(
        !store.touch_mcp_session("used", 700).await.unwrap(),
        "never back"
    );
    assert!(!store.touch_mcp_session("none", 800).await.unwrap());
    assert_eq!(store.delete_idle_mcp_sessions(500).await.unwrap(), 1);
    assert_eq!(store.mcp_session_run("old").await.unwrap(), None);
    assert_eq!(
        store.mcp_session_run("used").await.unwrap().as_deref(),
        Some("run-b")
    );
    assert_eq!(
        store.mcp_session_run("new").await.unwrap().as_deref(),
        Some("run-b")
    );
    store.store_mcp_session("new", "{}", 1000).await.unwrap();
    assert_eq!(
        store.delete_idle_mcp_sessions(950).await.unwrap(),
        1,
        "\"used\" at 800"
    );
    assert_eq!(
        store.mcp_session("new").await.unwrap().as_deref(),
        Some("{}")
    );
}

/// The backend numbers its approvals again after a restart (`appr-1`
/// twice), and a page answers its own call with the backend id of an
/// approval still pending: each is an approval of its own, under the held
/// call's invocation id — listed, decided and resumed apart; the first
/// approval's outcome is not the second's (issue: approval identity).
async fn a_backend_approval_id_seen_again_is_a_new_approval_and_a_made_up_one_hides_nothing(
    db: &Db,
) {
    let s = session();
    let host = started(db, &s).await;
    let call = host.dispatch(disable("inv-1")).await.unwrap();
    host.accept_result(&auth("conn-1"), &approval_result(&call))
        .await
        .unwrap();
    host.decide_approval("inv-1", ApprovalDecision::Approve, "approver-1")
        .await
        .unwrap();
    let gateway = ResumingGateway::default();
    let first = host
        .resume_approval("inv-1", &gateway, CallOptions::default())
        .await
        .unwrap();
    drop(host);

    // Both restarted; the backend answers the next held call `appr-1` again.
    let (host, recovery) = host_on(db, &s, "conn-2").await;
    assert!(recovery.pending_approvals.is_empty(), "{}", db.name());
    let call = host.dispatch(disable("inv-2")).await.unwrap();
    host.accept_result(&auth("conn-2"), &approval_result(&call))
        .await
        .unwrap();
    // A page answers its own call with the same backend id.
    let call = host.dispatch(disable("inv-3")).await.unwrap();
    host.accept_result(&auth("conn-2"), &approval_result(&call))
        .await
        .unwrap();
    let pending: Vec<(String, String)> = host
        .pending_approvals(10)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.approval_id, a.backend_approval_id))
        .collect();
    assert_eq!(
        pending,
        [
            ("inv-2".to_string(), "appr-1".to_string()),
            ("inv-3".to_string(), "appr-1".to_string())
        ],
        "{}: neither hides the other",
        db.name()
    );
    let named: Vec<(String, ApprovalState)> = host
        .store()
        .backend_approvals("appr-1", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.approval_id, a.state))
        .collect();
    assert_eq!(
        named,
        [
            ("inv-1".to_string(), ApprovalState::Approved),
            ("inv-2".to_string(), ApprovalState::Pending),
            ("inv-3".to_string(), ApprovalState::Pending)
        ],
        "{}",
        db.name()
    );
    assert_eq!(
        host.decide_approval("inv-2", ApprovalDecision::Approve, "approver-1")
            .await
            .unwrap(),
        Decision::Applied,
        "{}: the new approval is decided, not answered with the old outcome",
        db.name()
    );
    let second = host
        .resume_approval("inv-2", &gateway, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(second.invocation_id(), "inv-2");
    assert_eq!(first.invocation_id(), "inv-1");
    assert_eq!(
        gateway.resumed_ids(),
        ["inv-1", "inv-2"],
        "{}: each resumed under its own held call",
        db.name()
    );
    let left: Vec<String> = host
        .pending_approvals(10)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.approval_id)
        .collect();
    assert_eq!(left, ["inv-3"], "{}", db.name());
}

/// A durable host on `db` whose clock the test moves, approvals waiting at
/// most a minute, the fixture's tab announced and the run started.
async fn clocked(db: &Db, s: &SessionFixture, clock: Arc<ManualClock>) -> DurableHost {
    let (host, _) =
        DurableHost::open_with_clock(devices_host(), db.connect().await, "host-1", clock)
            .await
            .expect("host opens");
    let host = host.with_approval_max_age(Duration::from_secs(60));
    let announcement = s.session.connect("conn-1").expect("session connects");
    host.accept_announcement(&auth("conn-1"), &announcement)
        .await
        .expect("announcement accepted");
    host.start_run(run1()).await.expect("run starts");
    host
}

/// An approval nobody decides expires at its bound: it leaves the pending
/// list at once, no decision is accepted, and expiring it records for the
/// run that the call did not run — once, without asking the backend.
async fn an_approval_nobody_decides_expires_and_its_run_is_told(db: &Db) {
    let s = session();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let host = clocked(db, &s, clock.clone()).await;
    let call = host.dispatch(disable("inv-e")).await.unwrap();
    host.accept_result(&auth("conn-1"), &approval_result(&call))
        .await
        .unwrap();
    let pending = host.pending_approvals(10).await.unwrap();
    assert_eq!(pending[0].expires_at_ms, 1_060_000, "{}", db.name());
    clock.advance(Duration::from_secs(60));
    assert!(host.pending_approvals(10).await.unwrap().is_empty());
    assert!(
        matches!(
            host.decide_approval("inv-e", ApprovalDecision::Approve, "approver-1")
                .await
                .unwrap(),
            Decision::AlreadyDecided(row) if row.state == ApprovalState::Pending
        ),
        "{}: too late to decide",
        db.name()
    );
    assert_eq!(host.expire_approvals().await.unwrap(), 1);
    assert_eq!(host.expire_approvals().await.unwrap(), 0);
    let row = host.store().approval("inv-e").await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Expired);
    let outcome: Value = serde_json::from_str(row.outcome.as_deref().unwrap()).unwrap();
    assert_eq!(
        outcome,
        json!({"status": "error", "invocationId": "inv-e", "capabilityId": DISABLE,
               "error": {"code": "PRECONDITION_FAILED",
                         "message": "The approval expired before a person decided it; the call did not run. A new call asks for a new approval.",
                         "retry": "after-refresh", "details": {"reason": "approval-expired"}},
               "surfaceVersion": "0"}),
        "{}",
        db.name()
    );
    let gateway = ResumingGateway::default();
    let resumed = host
        .resume_approval("inv-e", &gateway, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&resumed).unwrap(), outcome);
    assert!(gateway.resumed_ids().is_empty());
}

/// One retention pass deletes the rows finished before the cutoff and
/// keeps what a restart or a replica still needs: a call held by a
/// pending approval, a call in flight, an active run, a route in flight.
async fn retention_deletes_what_finished_and_keeps_what_is_needed(db: &Db) {
    let s = session();
    let day = Duration::from_secs(86_400);
    let clock = Arc::new(ManualClock::new(10 * 86_400_000));
    let host = clocked(db, &s, clock.clone()).await;
    let host = host.with_approval_max_age(30 * day);
    let done = host.dispatch(disable("inv-done")).await.unwrap();
    let result = s.session.invoke(done).await;
    host.accept_result(&auth("conn-1"), &result).await.unwrap();
    let held = host.dispatch(disable("inv-held")).await.unwrap();
    host.accept_result(&auth("conn-1"), &approval_result(&held))
        .await
        .unwrap();
    let _in_flight = host.dispatch(disable("inv-flight")).await.unwrap();
    let ended = AgentRun {
        run_id: "run-ended".into(),
        ..run1()
    };
    host.start_run(ended).await.unwrap();
    host.end_run("run-ended").await.unwrap();
    let store = host.store().clone();
    store
        .record_route(&route("r-done", "a", "b", 5))
        .await
        .unwrap();
    store.take_route("r-done", "b", 0).await.unwrap();
    store.answer_route("r-done", "{}", 6).await.unwrap();
    store
        .record_route(&route("r-open", "a", "b", 5))
        .await
        .unwrap();
    let mcp = db.connect_mcp().await;
    mcp.record_token("old", "run-gone", 1).await.unwrap();
    mcp.record_token("new", "run-1", 10 * 86_400_000)
        .await
        .unwrap();

    clock.advance(2 * day);
    let policy = RetentionPolicy::default().finished_age(day);
    let report = surface_host::retention::sweep(&host, mcp.as_ref(), &policy)
        .await
        .unwrap();
    assert_eq!(
        report.pruned,
        Pruned {
            calls: 1,
            routes: 1,
            runs: 1,
            approvals: 0,
            surfaces: 0
        },
        "{}",
        db.name()
    );
    assert_eq!(
        report.deleted_tokens,
        1,
        "{}: the token older than a week",
        db.name()
    );
    assert!(store.call("inv-done").await.unwrap().is_none());
    for kept in ["inv-held", "inv-flight"] {
        assert!(
            store.call(kept).await.unwrap().is_some(),
            "{}: {kept}",
            db.name()
        );
    }
    assert!(store.route("r-open").await.unwrap().is_some());
    assert!(store.run("run-1").await.unwrap().is_some());
    assert!(store.run("run-ended").await.unwrap().is_none());
    assert_eq!(
        mcp.token_run("new").await.unwrap().as_deref(),
        Some("run-1")
    );
    let again = surface_host::retention::sweep(&host, mcp.as_ref(), &policy)
        .await
        .unwrap();
    assert_eq!(again.pruned.total(), 0, "{}: nothing twice", db.name());

    // A week on, the run ends by its age and takes its token with it.
    clock.advance(7 * day);
    let report = surface_host::retention::sweep(&host, mcp.as_ref(), &policy)
        .await
        .unwrap();
    assert_eq!(
        (report.ended_runs, report.deleted_tokens),
        (1, 1),
        "{}",
        db.name()
    );
    assert_eq!(mcp.token_run("new").await.unwrap(), None);
}

/// Calls keep flowing while retention passes run: the stored calls stay
/// bounded by what one interval finishes, not by the traffic.
async fn stored_calls_stay_bounded_while_calls_keep_flowing(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    let mcp = db.connect_mcp().await;
    let policy = RetentionPolicy::default().finished_age(Duration::ZERO);
    let mut most = 0;
    for n in 0..300 {
        let call = host
            .dispatch(disable(&format!("inv-soak-{n}")))
            .await
            .unwrap();
        let result = s.session.invoke(call).await;
        host.accept_result(&auth("conn-1"), &result).await.unwrap();
        if n % 25 == 24 {
            tokio::time::sleep(Duration::from_millis(2)).await;
            surface_host::retention::sweep(&host, mcp.as_ref(), &policy)
                .await
                .unwrap();
            most = most.max(host.store().row_counts().await.unwrap().calls);
        }
    }
    assert_eq!(
        most,
        0,
        "{}: every pass deleted what finished before it",
        db.name()
    );
    assert_eq!(s.fx.executor.count(), 300);
}

/// A page answering every call of its run with a made-up approval fills
/// at most 16 pending rows: the approvers' list cannot be flooded.
async fn a_run_holds_at_most_sixteen_pending_approvals(db: &Db) {
    let s = session();
    let host = started(db, &s).await;
    for n in 0..20 {
        let call = host.dispatch(disable(&format!("inv-f{n}"))).await.unwrap();
        host.accept_result(&auth("conn-1"), &approval_result(&call))
            .await
            .unwrap();
    }
    let pending = host.pending_approvals(100).await.unwrap();
    assert_eq!(
        pending.len(),
        surface_host::host::MAX_PENDING_APPROVALS_PER_RUN,
        "{}",
        db.name()
    );
    let mut ids: Vec<String> = pending.into_iter().map(|a| a.approval_id).collect();
    ids.sort();
    let mut first: Vec<String> = (0..16).map(|n| format!("inv-f{n}")).collect();
    first.sort();
    assert_eq!(ids, first, "{}: the first 16 calls' approvals", db.name());
}

/// A `tools/call` claimed by one replica is in flight for every other
/// until settled; settled with a window it stays answered until then;
/// an expired claim is taken again and deleted by retention.
async fn a_request_claim_is_seen_by_every_replica_until_it_expires(db: &Db) {
    use surface_store::RequestClaim;
    let (r1, r2) = (db.connect_mcp().await, db.connect_mcp().await);
    assert_eq!(
        r1.claim_request("k", 100, 1_000).await.unwrap(),
        RequestClaim::Claimed
    );
    assert_eq!(
        r2.claim_request("k", 200, 1_100).await.unwrap(),
        RequestClaim::InFlight
    );
    r1.settle_request("k", 300, Some(400)).await.unwrap();
    assert_eq!(
        r2.claim_request("k", 350, 1_350).await.unwrap(),
        RequestClaim::Answered
    );
    assert_eq!(
        r2.claim_request("k", 401, 1_401).await.unwrap(),
        RequestClaim::Claimed,
        "{}: the window ended",
        db.name()
    );
    r2.settle_request("k", 500, None).await.unwrap();
    assert_eq!(
        r1.claim_request("k", 501, 600).await.unwrap(),
        RequestClaim::Claimed
    );
    assert_eq!(
        r1.claim_request("other", 501, 600).await.unwrap(),
        RequestClaim::Claimed
    );
    assert_eq!(
        r2.delete_expired_requests(601).await.unwrap(),
        2,
        "{}",
        db.name()
    );
    assert_eq!(
        r2.claim_request("k", 602, 700).await.unwrap(),
        RequestClaim::Claimed
    );
}

/// Every case on a fresh database from `fresh`.
async fn run_all<F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Db>,
{
    dispatch_row_is_written_before_the_call_leaves(&fresh().await).await;
    a_store_that_cannot_be_written_refuses_to_dispatch(&fresh().await).await;
    a_result_is_recorded_and_its_copy_after_a_restart_is_a_duplicate(&fresh().await).await;
    a_restart_interrupts_outstanding_calls_and_refuses_every_id(&fresh().await).await;
    racing_writers_apply_each_transition_once(&fresh().await).await;
    approvals_stay_pending_across_a_restart_and_are_decided_once(&fresh().await).await;
    an_interrupted_governed_call_is_reconciled_into_a_receipt(&fresh().await).await;
    reconciling_keeps_unrecorded_and_foreign_answers_out_and_records_a_held_approval(
        &fresh().await,
    )
    .await;
    a_decided_approval_is_resumed_once_and_the_run_gets_the_outcome(&fresh().await).await;
    a_rejected_approval_resumes_into_the_backends_failure(&fresh().await).await;
    a_resume_the_backend_cannot_find_is_a_failed_outcome_once(&fresh().await).await;
    surface_leases_are_held_by_one_replica_until_they_expire(&fresh().await).await;
    routed_calls_are_taken_once_and_settled_once(&fresh().await).await;
    rows_an_earlier_version_wrote_are_read_in_todays_shape(&fresh().await).await;
    tokens_and_mcp_sessions_are_recorded_once(&fresh().await).await;
    run_tokens_end_together_and_idle_sessions_are_deleted(&fresh().await).await;
    a_backend_approval_id_seen_again_is_a_new_approval_and_a_made_up_one_hides_nothing(
        &fresh().await,
    )
    .await;
    an_approval_nobody_decides_expires_and_its_run_is_told(&fresh().await).await;
    retention_deletes_what_finished_and_keeps_what_is_needed(&fresh().await).await;
    stored_calls_stay_bounded_while_calls_keep_flowing(&fresh().await).await;
    a_run_holds_at_most_sixteen_pending_approvals(&fresh().await).await;
    a_request_claim_is_seen_by_every_replica_until_it_expires(&fresh().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_suite_memory() {
    run_all(|| async { Db::Memory(Arc::new(MemoryStore::new())) }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_suite_sqlite() {
    let dir = temp_dir("surface-store-sqlite");
    let n = AtomicUsize::new(0);
    run_all(|| async {
        Db::Sqlite(dir.join(format!("host-{}.db", n.fetch_add(1, Ordering::SeqCst))))
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_suite_postgres() {
    let Some(cluster) = PgCluster::require("store_suite_postgres") else {
        return;
    };
    run_all(|| async { Db::Postgres(cluster.database("suite")) }).await;
}
