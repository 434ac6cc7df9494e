//! [`DurableHost`]: an [`AgentHost`] whose call bookkeeping is also
//! written to a [`HostStore`] (`docs/host.md`, "The durable store").
//!
//! The in-memory host keeps doing every check (authenticated
//! announcements, known builds, per-run tools, echo checks); the store
//! makes the outcome survive the process:
//!
//! * `dispatch` writes the call's row before returning the call (the
//!   application sends only what `dispatch` returned): a store that cannot
//!   be written refuses the dispatch, and the call is withdrawn from the
//!   in-memory host — fail closed;
//! * an invocation id with a row from any earlier dispatch — by this
//!   process, an earlier incarnation or another process on the same
//!   database — is refused (`InvocationConflict`);
//! * `accept_result` records the result (`dispatched` → `completed`, one
//!   conditional statement) before the call stops being outstanding; a
//!   copy arriving later, even after a restart, is a `Duplicate`;
//! * [`DurableHost::open`] on an existing store moves every call its owner
//!   left `dispatched` to `interrupted` and reports them ([`Recovery`]):
//!   ambiguous, never replayed. Governed ones are reconciled with
//!   [`DurableHost::reconcile`] through the backend's `getInvocation`;
//!   pending approvals stay pending and decidable.

use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};
use surface_runtime::bridge::{
    CallOptions, CapabilityClient, GatewayOutcome, GovernedOutcome, InvocationReceipt,
    OrpcCallError, ResumeApprovalRequest,
};
use surface_runtime::host::{
    AgentHost, AgentRun, AnnouncementAccepted, AuthenticatedConnection, BrowserSurfaceAnnouncement,
    BrowserSurfaceCall, BrowserSurfaceOutcome, BrowserSurfaceProgress, BrowserSurfaceResult,
    HostError, InterruptedCall, ProgressStage, ResultDisposition, ToolCallRequest,
};
use surface_runtime::{AgentInvocationResult, Clock, ConsumerKind, ErrorCode, SystemClock};

use surface_store::store::{
    ApprovalCursor, ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState,
    Completion, Decision, DispatchWrite, HostStore, OutcomeWrite, RunRecord, StoreError,
    Transition, DEFAULT_LIST_LIMIT,
};

/// Default bound of the active runs [`DurableHost::open`] restores into
/// the in-memory host.
pub const DEFAULT_RESTORED_RUNS: u32 = 10_000;

/// The `surfaceVersion` of a result the host makes up itself for a
/// resumed approval: the backend answered, not a page, so no surface
/// version applies.
pub const RESUMED_SURFACE_VERSION: u64 = 0;

/// Default longest time an approval waits for a decision: 24 hours
/// ([`DurableHost::with_approval_max_age`]; the backend's `expiresAt` when
/// earlier).
pub const DEFAULT_APPROVAL_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(86_400);

/// Pending approvals one run may hold at once: 16. A page that answers
/// its run's calls with made-up `DOMAIN_APPROVAL_REQUIRED` results cannot
/// flood the approvers' list past it; beyond it a held call is not
/// recorded (its run gets the backend's answer, no task; logged).
pub const MAX_PENDING_APPROVALS_PER_RUN: usize = 16;

/// Approvals one [`DurableHost::expire_approvals`] expires at most.
const EXPIRY_BATCH: u32 = 1_000;

/// Why a [`DurableHost`] operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// A check of the in-memory host failed (the same errors as
    /// [`AgentHost`]'s; nothing was written).
    #[error(transparent)]
    Host(#[from] HostError),
    /// The store could not be read or written: a dispatch was refused
    /// and nothing was sent (fail closed); a result was not recorded and
    /// the call stays outstanding.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A result or reconciliation for a call that is no longer
    /// `dispatched` (for a result) or `interrupted` (for a
    /// reconciliation): it stays as it is.
    #[error("invocation {invocation_id} is {} in the host store; nothing changed", state.as_str())]
    NotInState {
        /// The invocation id.
        invocation_id: String,
        /// Its stored state.
        state: CallState,
    },
    /// The store has no row for an invocation id the host holds or was
    /// asked about (the database was replaced underneath the host).
    #[error("the host store has no row for invocation {0}")]
    MissingRow(String),
    /// `getInvocation` failed; the call stays interrupted (try again
    /// later).
    #[error("reconciling invocation {invocation_id} through getInvocation failed: {error}")]
    Reconcile {
        /// The invocation id.
        invocation_id: String,
        /// The transport or gateway error.
        #[source]
        error: OrpcCallError,
    },
    /// No approval has this id in the store.
    #[error("the host store has no approval {0}")]
    UnknownApproval(String),
    /// The approval is not decided yet — in the store (decide it first,
    /// [`DurableHost::decide_approval`]) or at the gateway (its
    /// `resumeApproval` still answers `approval-required`: send the
    /// decision to the application's decision endpoint first). Nothing
    /// was recorded.
    #[error("approval {0} is not decided yet; nothing was resumed")]
    NotDecided(String),
    /// `resumeApproval` gave no trustworthy answer (lost response, server
    /// error, an outcome for another id) or was refused; nothing was
    /// recorded. Resuming is idempotent at the gateway: try again.
    #[error("resuming approval {approval_id} through the backend failed: {reason}")]
    Resume {
        /// The approval id.
        approval_id: String,
        /// What went wrong (no server text).
        reason: String,
    },
    /// `getInvocation` answered `null`: the backend has no record of the
    /// id, so nothing ran under it so far. The call stays interrupted (a
    /// request still on its way could yet be recorded: ask again later).
    #[error("the backend has no record of invocation {0}; the call stays interrupted")]
    NotRecorded(String),
    /// The backend answered with a receipt for another invocation id; the
    /// call stays interrupted.
    #[error("getInvocation for {invocation_id} answered a receipt for {received}")]
    ReceiptMismatch {
        /// Our invocation id.
        invocation_id: String,
        /// The receipt's (at most 64 characters).
        received: String,
    },
    /// The requester's agent withdrew the approval while it was pending
    /// ([`DurableHost::withdraw_approval`]): the host never decides nor
    /// resumes it.
    #[error("approval {0} was withdrawn by the requester's agent; it is not resumed")]
    Withdrawn(String),
}

/// What [`DurableHost::open`] found in the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The calls this owner left `dispatched`, now `interrupted`, sorted
    /// by invocation id: their outcome is unknown (a mutation may have
    /// taken effect). Report them to their runs as ambiguous; reconcile
    /// the governed ones ([`DurableHost::reconcile`]); never re-dispatch.
    pub interrupted: Vec<CallRecord>,
    /// The active runs restored into the in-memory host (their tab
    /// reconnects with a new connection id and announces again).
    pub runs: Vec<RunRecord>,
    /// Approvals still pending, oldest first (at most 1,000).
    pub pending_approvals: Vec<ApprovalRecord>,
    /// Approvals decided but not resumed (the host stopped in between),
    /// oldest first (at most 1,000): resume each with
    /// [`DurableHost::resume_approval`].
    pub awaiting_resume: Vec<ApprovalRecord>,
}

/// An [`AgentHost`] with a durable [`HostStore`] (module docs).
pub struct DurableHost {
    host: AgentHost,
    store: Arc<dyn HostStore>,
    owner: String,
    clock: Arc<dyn Clock>,
    approval_max_age_ms: i64,
}

impl std::fmt::Debug for DurableHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableHost")
            .field("host", &self.host)
            .field("owner", &self.owner)
            .finish()
    }
}

impl DurableHost {
    /// Starts a host on `store` as `owner` (a name stable across restarts
    /// of this host, e.g. `"host-1"`; several hosts on one database need
    /// distinct names). Moves every call `owner` left `dispatched` to
    /// `interrupted`, restores its active runs (at most
    /// [`DEFAULT_RESTORED_RUNS`]) and lists the pending approvals.
    ///
    /// # Errors
    /// [`DurableError::Store`] when the store cannot be read or written.
    pub async fn open(
        host: AgentHost,
        store: Arc<dyn HostStore>,
        owner: impl Into<String>,
    ) -> Result<(Self, Recovery), DurableError> {
        Self::open_with_clock(host, store, owner, Arc::new(SystemClock)).await
    }

    /// [`Self::open`] with the clock that stamps the rows.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub async fn open_with_clock(
        host: AgentHost,
        store: Arc<dyn HostStore>,
        owner: impl Into<String>,
        clock: Arc<dyn Clock>,
    ) -> Result<(Self, Recovery), DurableError> {
        let this = Self {
            host,
            store,
            owner: owner.into(),
            clock,
            approval_max_age_ms: duration_ms(DEFAULT_APPROVAL_MAX_AGE),
        };
        let now = this.now();
        let interrupted = this.store.interrupt_owner(&this.owner, now).await?;
        let runs = this
            .store
            .active_runs(&this.owner, DEFAULT_RESTORED_RUNS)
            .await?;
        for run in &runs {
            // A run id is unique in the store, so the fresh host has none.
            this.host.start_run(agent_run(run))?;
        }
        let pending_approvals = this
            .store
            .pending_approvals(None, now, DEFAULT_LIST_LIMIT)
            .await?;
        let awaiting_resume = this
            .store
            .approvals_awaiting_resume(DEFAULT_LIST_LIMIT)
            .await?;
        let recovery = Recovery {
            interrupted,
            runs,
            pending_approvals,
            awaiting_resume,
        };
        Ok((this, recovery))
    }

    /// Sets the longest time an approval waits for a decision (default
    /// [`DEFAULT_APPROVAL_MAX_AGE`]); the backend's `expiresAt` applies
    /// when earlier. Past it the approval is `expired`: no decision is
    /// accepted and the run is told the call did not run.
    #[must_use]
    pub fn with_approval_max_age(mut self, age: std::time::Duration) -> Self {
        self.approval_max_age_ms = duration_ms(age);
        self
    }

    /// The in-memory host, for everything that writes nothing durable
    /// (`tools_for_run`, `usage`, `accept_progress`, …).
    pub fn host(&self) -> &AgentHost {
        &self.host
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn HostStore> {
        &self.store
    }

    /// This host's owner name.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub(crate) fn now(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    /// [`AgentHost::accept_announcement`]; calls it interrupts (a
    /// reconnect of the tab) are recorded `interrupted`.
    ///
    /// # Errors
    /// [`DurableError::Host`]. A failure to record the interruptions is
    /// logged, not returned: the rows stay `dispatched` and the next
    /// [`Self::open`] interrupts them.
    pub async fn accept_announcement(
        &self,
        connection: &AuthenticatedConnection,
        announcement: &BrowserSurfaceAnnouncement,
    ) -> Result<AnnouncementAccepted, DurableError> {
        let accepted = self.host.accept_announcement(connection, announcement)?;
        self.record_interrupted(&accepted.interrupted).await;
        Ok(accepted)
    }

    /// [`AgentHost::connection_closed`]; the calls it returns are recorded
    /// `interrupted` (a failure is logged as in
    /// [`Self::accept_announcement`]).
    pub async fn connection_closed(&self, connection_id: &str) -> Vec<InterruptedCall> {
        let interrupted = self.host.connection_closed(connection_id);
        self.record_interrupted(&interrupted).await;
        interrupted
    }

    async fn record_interrupted(&self, calls: &[InterruptedCall]) {
        let now = self.now();
        for call in calls {
            let id = &call.call.invocation.invocation_id;
            if let Err(error) = self.store.interrupt(id, now).await {
                tracing::error!(invocation_id = ?id, ?error, "host store: interruption not recorded");
            }
        }
    }

    /// [`AgentHost::accept_progress`]; a `confirmed` stage with a
    /// `retryInvocationId` (the user confirmed in the page under
    /// `ConfirmationMode::Hold`, the call runs as that id at the backend)
    /// records that id on the call's row first, so reconciliation and
    /// resumption ask the backend about the id it knows.
    ///
    /// # Errors
    /// Every [`AgentHost::accept_progress`] error (nothing recorded);
    /// [`DurableError::Store`].
    pub async fn accept_progress(
        &self,
        connection: &AuthenticatedConnection,
        progress: &BrowserSurfaceProgress,
    ) -> Result<BrowserSurfaceCall, DurableError> {
        let call = self.host.accept_progress(connection, progress)?;
        if let (ProgressStage::Confirmed, Some(retry)) =
            (progress.stage, progress.retry_invocation_id.as_deref())
        {
            if let Err(reason) = surface_runtime::check_invocation_id(retry) {
                return Err(HostError::InvalidInvocationId(reason).into());
            }
            match self
                .store
                .set_backend_invocation(&progress.invocation_id, retry)
                .await?
            {
                Transition::Applied => {}
                Transition::NotApplied(row)
                    if row.backend_invocation_id.as_deref() == Some(retry) => {}
                Transition::NotApplied(row) => return Err(not_in_state(&row)),
                Transition::Unknown => {
                    return Err(DurableError::MissingRow(progress.invocation_id.clone()))
                }
            }
        }
        Ok(call)
    }

    /// Starts a run: written to the store first, then tracked.
    ///
    /// # Errors
    /// [`HostError::RunExists`] when the store (or the host) has the run
    /// id — run ids are never reused; [`DurableError::Store`].
    pub async fn start_run(&self, run: AgentRun) -> Result<(), DurableError> {
        let record = RunRecord {
            run_id: run.run_id.clone(),
            owner: self.owner.clone(),
            session_id: run.session_id.clone(),
            tab_id: run.tab_id.clone(),
            kind: match run.kind {
                ConsumerKind::Headless => "headless",
                _ => "embedded",
            }
            .to_string(),
            active: true,
            started_at_ms: self.now(),
            ended_at_ms: None,
        };
        if !self.store.record_run(&record).await? {
            return Err(HostError::RunExists(run.run_id).into());
        }
        Ok(self.host.start_run(run)?)
    }

    /// [`AgentHost::attach_run_to_tab`], then the new tab recorded.
    ///
    /// # Errors
    /// [`DurableError::Host`]; [`DurableError::Store`] (the in-memory run
    /// is pointed back at its old tab).
    pub async fn attach_run_to_tab(
        &self,
        run_id: &str,
        tab_id: Option<String>,
    ) -> Result<(), DurableError> {
        let old = self
            .store
            .active_runs(&self.owner, DEFAULT_RESTORED_RUNS)
            .await?;
        let old_tab = old
            .into_iter()
            .find(|r| r.run_id == run_id)
            .and_then(|r| r.tab_id);
        self.host.attach_run_to_tab(run_id, tab_id.clone())?;
        if let Err(error) = self.store.set_run_tab(run_id, tab_id.as_deref()).await {
            // No call can be outstanding on the new tab yet.
            let _ = self.host.attach_run_to_tab(run_id, old_tab);
            return Err(error.into());
        }
        Ok(())
    }

    /// Ends a run (recorded, then untracked).
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn end_run(&self, run_id: &str) -> Result<(), DurableError> {
        self.store.end_run(run_id, self.now()).await?;
        self.host.end_run(run_id);
        Ok(())
    }

    /// [`AgentHost::dispatch`], with the call's row written before the call
    /// is returned (send only what this returns).
    ///
    /// # Errors
    /// Every [`AgentHost::dispatch`] error; [`HostError::InvocationConflict`]
    /// when the store has a row for the id from any earlier dispatch;
    /// [`DurableError::Store`] when the row cannot be written — the call is
    /// withdrawn and must not be sent (its id stays refused).
    pub async fn dispatch(
        &self,
        request: ToolCallRequest,
    ) -> Result<BrowserSurfaceCall, DurableError> {
        let id = request.invocation_id.clone();
        if self.host.outstanding_call(&id).is_some() {
            // Already written when it was first dispatched: an identical
            // request returns the same call, a changed one is refused.
            return Ok(self.host.dispatch(request)?);
        }
        let call = self.host.dispatch(request)?;
        let effect = self.host.outstanding_call(&id).and_then(|d| d.effect);
        let record = CallRecord {
            invocation_id: id.clone(),
            owner: self.owner.clone(),
            run_id: call.run_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            session_id: call.identity.session_id.clone(),
            tab_id: call.identity.tab_id.clone(),
            connection_id: call.connection_id.clone(),
            capability_id: call.invocation.capability_id.clone(),
            effect: effect.map(|e| e.as_str().to_string()),
            envelope_digest: digest_call(&call),
            state: CallState::Dispatched,
            result_digest: None,
            result: None,
            receipt: None,
            dispatched_at_ms: self.now(),
            settled_at_ms: None,
            backend_invocation_id: None,
        };
        match self.store.record_dispatch(&record).await {
            Ok(DispatchWrite::Inserted) => Ok(call),
            Ok(DispatchWrite::Exists(_)) => {
                self.host.withdraw(&id);
                Err(HostError::InvocationConflict(id).into())
            }
            Err(error) => {
                self.host.withdraw(&id);
                Err(error.into())
            }
        }
    }

    /// [`AgentHost::accept_result`], with the result recorded before the
    /// call stops being outstanding. A backend approval the result asks
    /// for (`DOMAIN_APPROVAL_REQUIRED` with a `details.approvalId`) is
    /// recorded pending first. A result for a call this process does not
    /// hold is answered from the store: an identical copy of a recorded
    /// result (also one recorded before a restart) is
    /// [`ResultDisposition::Duplicate`].
    ///
    /// # Errors
    /// Every [`AgentHost::accept_result`] error; [`HostError::ChangedDuplicate`]
    /// for a different copy of a recorded result; [`DurableError::NotInState`]
    /// for a result of an interrupted or reconciled call (it stays so);
    /// [`DurableError::Store`] — the call stays outstanding (the page may
    /// send the result again).
    pub async fn accept_result(
        &self,
        connection: &AuthenticatedConnection,
        result: &BrowserSurfaceResult,
    ) -> Result<ResultDisposition, DurableError> {
        let id = &result.invocation_id;
        let call = match self.host.check_result(connection, result) {
            Ok(call) => call,
            Err(HostError::Unsolicited(_)) => return self.settled_result(connection, result).await,
            Err(other) => return Err(other.into()),
        };
        self.record_approval(&call, &result.result).await?;
        let json = serde_json::to_string(&result.result).unwrap_or_default();
        let completion = Completion {
            result_digest: digest_result(connection, result),
            result: json,
            at_ms: self.now(),
        };
        match self.store.complete(id, &completion).await? {
            Transition::Applied => Ok(self.host.accept_result(connection, result)?),
            Transition::NotApplied(row) => {
                // Another writer settled it first: this process lets go.
                self.host.withdraw(id);
                compare_with_row(&row, &completion.result_digest)
            }
            Transition::Unknown => Err(DurableError::MissingRow(id.clone())),
        }
    }

    /// A result for a call the in-memory host does not hold outstanding.
    async fn settled_result(
        &self,
        connection: &AuthenticatedConnection,
        result: &BrowserSurfaceResult,
    ) -> Result<ResultDisposition, DurableError> {
        match self.host.accept_result(connection, result) {
            Err(HostError::Unsolicited(_)) => {}
            other => return Ok(other?),
        }
        let id = &result.invocation_id;
        match self.store.call(id).await? {
            Some(row) if row.state != CallState::Dispatched => {
                compare_with_row(&row, &digest_result(connection, result))
            }
            _ => Err(HostError::Unsolicited(id.clone()).into()),
        }
    }

    async fn record_approval(
        &self,
        call: &BrowserSurfaceCall,
        outcome: &BrowserSurfaceOutcome,
    ) -> Result<(), DurableError> {
        let BrowserSurfaceOutcome::Invocation(result) = outcome else {
            return Ok(());
        };
        let Some(error) = result.error() else {
            return Ok(());
        };
        if error.code != ErrorCode::DomainApprovalRequired {
            return Ok(());
        }
        let Some(Value::String(approval_id)) = error.details.get("approvalId") else {
            return Ok(());
        };
        let id = &call.invocation.invocation_id;
        let row = match self.store.call(id).await? {
            Some(row) => row,
            None => return Err(DurableError::MissingRow(id.clone())),
        };
        let expires_at = match error.details.get("expiresAt") {
            Some(Value::String(text)) => surface_runtime::clock::parse_iso_8601(text),
            _ => None,
        };
        self.record_pending(&row, approval_id, expires_at).await
    }

    /// Records pending the backend approval `backend_approval_id` holding
    /// the call of `row`, under the host's own id (the call's invocation
    /// id), expiring at the backend's `expires_at` (ms) or the host's
    /// bound, whichever is earlier. A backend id that breaks the id rule is
    /// not recorded; one already pending for another call is recorded too
    /// and reported as a conflict (an approver sees both rows).
    async fn record_pending(
        &self,
        row: &CallRecord,
        backend_approval_id: &str,
        expires_at: Option<u64>,
    ) -> Result<(), DurableError> {
        let id = &row.invocation_id;
        if surface_runtime::check_invocation_id(backend_approval_id).is_err() {
            tracing::warn!(invocation_id = ?id, "an approval id that breaks the id rule is not recorded");
            return Ok(());
        }
        let now = self.now();
        let held = self
            .store
            .run_approvals(&row.run_id, DEFAULT_LIST_LIMIT)
            .await?;
        let pending = held
            .iter()
            .filter(|a| a.state == ApprovalState::Pending && a.expires_at_ms > now)
            .count();
        if pending >= MAX_PENDING_APPROVALS_PER_RUN {
            tracing::warn!(run_id = ?row.run_id, invocation_id = ?id, "the run holds the most pending approvals; this one is not recorded");
            return Ok(());
        }
        let bound = now.saturating_add(self.approval_max_age_ms);
        let expires_at_ms = expires_at
            .and_then(|ms| i64::try_from(ms).ok())
            .map_or(bound, |ms| ms.min(bound));
        let recorded = self
            .store
            .record_approval(&ApprovalRecord {
                approval_id: id.clone(),
                backend_approval_id: backend_approval_id.to_string(),
                invocation_id: id.clone(),
                run_id: row.run_id.clone(),
                tool_call_id: row.tool_call_id.clone(),
                capability_id: row.capability_id.clone(),
                state: ApprovalState::Pending,
                requested_at_ms: now,
                decided_by: None,
                decided_at_ms: None,
                backend_invocation_id: row.backend_id().to_string(),
                outcome: None,
                resumed_at_ms: None,
                expires_at_ms,
            })
            .await?;
        if recorded {
            self.report_conflict(id, backend_approval_id).await?;
        }
        Ok(())
    }

    /// Logs a backend approval id pending for more than one call (the
    /// approver page marks such rows): a page that answered its call with
    /// another call's approval id, or a backend numbering its approvals
    /// again. Neither row hides the other; each is decided by its own id.
    async fn report_conflict(
        &self,
        invocation_id: &str,
        backend_approval_id: &str,
    ) -> Result<(), DurableError> {
        let named = self
            .store
            .backend_approvals(backend_approval_id, 64)
            .await?;
        let pending = named
            .iter()
            .filter(|a| a.state == ApprovalState::Pending)
            .count();
        if pending > 1 {
            tracing::warn!(
                invocation_id = ?invocation_id,
                backend_approval_id = ?backend_approval_id,
                pending,
                "a backend approval id is pending for more than one call; each is decided by its own id"
            );
        }
        Ok(())
    }

    /// Reconciles an interrupted call through the backend's
    /// `getInvocation` (for governed procedures: the backend's receipt is
    /// the source of truth) and records the receipt (`interrupted` →
    /// `reconciled`). A receipt whose outcome is `approval-required` also
    /// records its approval pending. Never re-dispatches anything.
    ///
    /// # Errors
    /// [`DurableError::MissingRow`]; [`DurableError::NotInState`] unless the
    /// call is `interrupted`; [`DurableError::Reconcile`];
    /// [`DurableError::NotRecorded`]; [`DurableError::ReceiptMismatch`];
    /// [`DurableError::Store`].
    pub async fn reconcile(
        &self,
        invocation_id: &str,
        client: &dyn CapabilityClient,
    ) -> Result<InvocationReceipt, DurableError> {
        let row = self
            .store
            .call(invocation_id)
            .await?
            .ok_or_else(|| DurableError::MissingRow(invocation_id.to_string()))?;
        if row.state != CallState::Interrupted {
            return Err(not_in_state(&row));
        }
        let backend = row.backend_id();
        let receipt = client
            .get_invocation(backend, CallOptions::default())
            .await
            .map_err(|error| DurableError::Reconcile {
                invocation_id: invocation_id.to_string(),
                error,
            })?
            .ok_or_else(|| DurableError::NotRecorded(invocation_id.to_string()))?;
        let outcome_id = receipt.outcome.as_ref().map(GatewayOutcome::invocation_id);
        if receipt.invocation_id != backend || outcome_id.is_some_and(|id| id != backend) {
            let received = outcome_id
                .filter(|id| *id != backend)
                .unwrap_or(&receipt.invocation_id);
            return Err(DurableError::ReceiptMismatch {
                invocation_id: invocation_id.to_string(),
                received: received.chars().take(64).collect(),
            });
        }
        if let Some(approval) = receipt.outcome.as_ref().and_then(GatewayOutcome::approval) {
            self.record_reconciled_approval(&row, approval).await?;
        }
        let json = serde_json::to_string(&receipt).unwrap_or_default();
        match self
            .store
            .reconcile(invocation_id, &json, self.now())
            .await?
        {
            Transition::Applied => Ok(receipt),
            Transition::NotApplied(row) => Err(not_in_state(&row)),
            Transition::Unknown => Err(DurableError::MissingRow(invocation_id.to_string())),
        }
    }

    /// Records pending the approval a reconciled receipt holds the call
    /// for (its `expiresAt` bounds it; an approval id that breaks the id
    /// rule is not recorded).
    async fn record_reconciled_approval(
        &self,
        row: &CallRecord,
        approval: &surface_runtime::bridge::GatewayApproval,
    ) -> Result<(), DurableError> {
        let expires_at = surface_runtime::clock::parse_iso_8601(&approval.expires_at);
        self.record_pending(row, &approval.id, expires_at).await
    }

    /// Records a person's decision on a pending approval (`pending` →
    /// `approved`/`rejected`, once). `decided_by` is the application's
    /// authenticated approver — never a model tool. Send the decision to
    /// the backend's own decision endpoint (with the approver's
    /// credential) and record it here; then [`Self::resume_approval`].
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn decide_approval(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
        decided_by: &str,
    ) -> Result<Decision, DurableError> {
        Ok(self
            .store
            .decide_approval(approval_id, decision, decided_by, self.now())
            .await?)
    }

    /// Withdraws a pending approval for its requester (`pending` →
    /// `withdrawn`, once; an MCP client cancelling the call's task): the
    /// host no longer offers it for a decision and never resumes it.
    /// [`Decision::AlreadyDecided`] carries the row of an approval that is
    /// no longer pending (nothing changed). The backend still holds its own
    /// approval — its gateway has no call to withdraw one; it stays pending
    /// there until it expires or someone decides it at the backend, and
    /// the host never resumes it.
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn withdraw_approval(&self, approval_id: &str) -> Result<Decision, DurableError> {
        Ok(self
            .store
            .withdraw_approval(approval_id, self.now())
            .await?)
    }

    /// Pending approvals not expired, oldest first, at most `limit` (the
    /// first page; [`Self::pending_approvals_after`] for the next).
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn pending_approvals(&self, limit: u32) -> Result<Vec<ApprovalRecord>, DurableError> {
        Ok(self
            .store
            .pending_approvals(None, self.now(), limit)
            .await?)
    }

    /// Pending approvals not expired, oldest first, after `cursor` (the
    /// last row of the page before: [`ApprovalRecord::cursor`]), at most
    /// `limit`.
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn pending_approvals_after(
        &self,
        cursor: &ApprovalCursor,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, DurableError> {
        Ok(self
            .store
            .pending_approvals(Some(cursor), self.now(), limit)
            .await?)
    }

    /// Expires the pending approvals past their `expires_at_ms` (at most
    /// 1,000 a pass) and records for each the outcome its run receives —
    /// `PRECONDITION_FAILED`, reason `approval-expired`, retry
    /// `after-refresh`: the call did not run. Returns how many expired.
    /// The host's retention task runs this every pass.
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn expire_approvals(&self) -> Result<usize, DurableError> {
        let expired = self
            .store
            .expire_approvals(self.now(), EXPIRY_BATCH)
            .await?;
        for approval in &expired {
            self.record_resumed(&approval.approval_id, expired_outcome(approval))
                .await?;
        }
        Ok(expired.len())
    }

    /// The approvals of `run_id`, oldest first, at most `limit`: how a run
    /// observes a resumed approval — [`ApprovalRecord::outcome`] is the
    /// JSON of the [`AgentInvocationResult`] it receives.
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn run_approvals(
        &self,
        run_id: &str,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, DurableError> {
        Ok(self.store.run_approvals(run_id, limit).await?)
    }

    /// Resumes a decided approval through the gateway's `resumeApproval
    /// {invocationId, approvalId}` — the held call's
    /// [`ApprovalRecord::backend_invocation_id`] and the
    /// [`ApprovalRecord::approval_id`], both stored with the approval
    /// (`client` carries the requester's fresh authority — their current
    /// credential, never the approver's — and `options` its per-call
    /// headers) — and records the outcome for the run, once. The browser
    /// call is never re-dispatched: the gateway executes the held
    /// invocation itself, at most once (a settled call answers its
    /// recorded outcome).
    ///
    /// Returns the [`AgentInvocationResult`] the run receives, answered
    /// under the run's own invocation id: a completed outcome is a success
    /// with its output, a rejected approval, a changed contract or a
    /// failed execution an error (`GovernedOutcome::to_invocation_result`'s
    /// mapping: `APPROVAL_REJECTED` → `NOT_AUTHORIZED`, `CONTRACT_MISMATCH`
    /// → `STALE_CAPABILITY`, an unknown invocation or approval pair →
    /// `CAPABILITY_NOT_FOUND`, …); an oRPC `NOT_FOUND` from a gateway
    /// that answers so (nothing ran) is recorded as `EXECUTION_FAILED`,
    /// retry `no`. An approval whose outcome is already recorded returns it
    /// without calling the gateway.
    ///
    /// # Errors
    /// [`DurableError::UnknownApproval`]; [`DurableError::NotDecided`] (in
    /// the store, or `resumeApproval` still answers `approval-required`);
    /// [`DurableError::Withdrawn`] (never resumed);
    /// [`DurableError::Resume`] (no trustworthy answer; nothing recorded —
    /// try again); [`DurableError::Store`].
    pub async fn resume_approval(
        &self,
        approval_id: &str,
        client: &dyn CapabilityClient,
        options: CallOptions,
    ) -> Result<AgentInvocationResult, DurableError> {
        let approval = match self.to_resume(approval_id).await? {
            Ok(approval) => approval,
            Err(known) => return Ok(known),
        };
        let backend = approval.backend_invocation_id.as_str();
        let request = ResumeApprovalRequest::new(backend, &approval.backend_approval_id);
        let answer = client.resume_approval(request, options).await;
        let outcome = GovernedOutcome::classify(backend, answer);
        match &outcome {
            GovernedOutcome::Gateway(GatewayOutcome::ApprovalRequired { .. }) => {
                return Err(DurableError::NotDecided(approval_id.to_string()))
            }
            GovernedOutcome::Gateway(_) => {}
            GovernedOutcome::Pending(_) | GovernedOutcome::NotRecorded { .. } => {
                return Err(DurableError::Resume {
                    approval_id: approval_id.to_string(),
                    reason: "the outcome is unknown (an invalid or failed response)".to_string(),
                })
            }
            GovernedOutcome::Unknown { reason, .. } => {
                return Err(DurableError::Resume {
                    approval_id: approval_id.to_string(),
                    reason: format!("the outcome is unknown ({})", unknown_reason(reason)),
                })
            }
            GovernedOutcome::Rejected { error, .. } if error.orpc_code() == Some("NOT_FOUND") => {
                // The backend has no such held invocation: nothing ran and
                // nothing will; the run is told so, once.
                let result = AgentInvocationResult::err(
                    approval.invocation_id.clone(),
                    approval.capability_id.clone(),
                    surface_runtime::AgentError::new(
                        ErrorCode::ExecutionFailed,
                        "The backend has no record of the held call; it did not run.",
                        surface_runtime::Retry::No,
                    ),
                    RESUMED_SURFACE_VERSION,
                );
                return self.record_resumed(approval_id, result).await;
            }
            GovernedOutcome::Rejected { error, .. } => {
                return Err(DurableError::Resume {
                    approval_id: approval_id.to_string(),
                    reason: match error.orpc_code() {
                        Some(code) => format!("the backend refused it ({})", safe_code(code)),
                        None => {
                            "the backend could not be reached or answered unexpectedly".to_string()
                        }
                    },
                })
            }
        }
        let result = with_invocation_id(
            outcome.to_invocation_result(&approval.capability_id, RESUMED_SURFACE_VERSION),
            &approval.invocation_id,
        );
        self.record_resumed(approval_id, result).await
    }

    /// Records `result` as the approval's outcome (once) and returns the
    /// outcome that stands.
    /// The decided approval `approval_id` to resume through the backend,
    /// or the outcome it already has (recorded before, or its expiry,
    /// recorded now).
    async fn to_resume(
        &self,
        approval_id: &str,
    ) -> Result<Result<ApprovalRecord, AgentInvocationResult>, DurableError> {
        let approval = self
            .store
            .approval(approval_id)
            .await?
            .ok_or_else(|| DurableError::UnknownApproval(approval_id.to_string()))?;
        if let Some(recorded) = &approval.outcome {
            return stored_outcome(approval_id, recorded).map(Err);
        }
        match approval.state {
            ApprovalState::Pending => Err(DurableError::NotDecided(approval_id.to_string())),
            ApprovalState::Withdrawn => Err(DurableError::Withdrawn(approval_id.to_string())),
            ApprovalState::Expired => self
                .record_resumed(approval_id, expired_outcome(&approval))
                .await
                .map(Err),
            ApprovalState::Approved | ApprovalState::Rejected => Ok(Ok(approval)),
        }
    }

    async fn record_resumed(
        &self,
        approval_id: &str,
        result: AgentInvocationResult,
    ) -> Result<AgentInvocationResult, DurableError> {
        let json = serde_json::to_string(&result).unwrap_or_default();
        match self
            .store
            .record_outcome(approval_id, &json, self.now())
            .await?
        {
            OutcomeWrite::Applied => Ok(result),
            OutcomeWrite::NotApplied(row) => match &row.outcome {
                Some(recorded) => stored_outcome(approval_id, recorded),
                None => Err(DurableError::NotDecided(approval_id.to_string())),
            },
            OutcomeWrite::Unknown => Err(DurableError::UnknownApproval(approval_id.to_string())),
        }
    }
}

fn unknown_reason(reason: &surface_runtime::bridge::UnknownReason) -> &'static str {
    use surface_runtime::bridge::UnknownReason;
    match reason {
        UnknownReason::LostResponse => "the response was lost",
        UnknownReason::MismatchedInvocation { .. } => "a receipt for another invocation id",
        UnknownReason::Cancelled => "cancelled",
        _ => "an invalid or failed response",
    }
}

/// An outcome recorded earlier, read back.
/// What the run of an approval that expired receives: the call did not
/// run; a new call asks for a new approval.
fn expired_outcome(approval: &ApprovalRecord) -> AgentInvocationResult {
    let mut error = surface_runtime::AgentError::new(
        ErrorCode::PreconditionFailed,
        "The approval expired before a person decided it; the call did not run. A new call asks for a new approval.",
        surface_runtime::Retry::AfterRefresh,
    );
    error
        .details
        .insert("reason".to_string(), Value::from("approval-expired"));
    AgentInvocationResult::err(
        approval.invocation_id.clone(),
        approval.capability_id.clone(),
        error,
        RESUMED_SURFACE_VERSION,
    )
}

/// Milliseconds of `age`, saturating.
fn duration_ms(age: std::time::Duration) -> i64 {
    i64::try_from(age.as_millis()).unwrap_or(i64::MAX)
}

fn stored_outcome(approval_id: &str, json: &str) -> Result<AgentInvocationResult, DurableError> {
    serde_json::from_str(json)
        .map_err(|_| StoreError::corrupt("host_approvals.outcome", approval_id).into())
}

/// `result` answered under `invocation_id` (the run's id, not the
/// backend's).
fn with_invocation_id(result: AgentInvocationResult, invocation_id: &str) -> AgentInvocationResult {
    match result {
        AgentInvocationResult::Ok {
            capability_id,
            output,
            surface_version,
            surface_changed,
            ..
        } => AgentInvocationResult::Ok {
            invocation_id: invocation_id.to_string(),
            capability_id,
            output,
            surface_version,
            surface_changed,
        },
        AgentInvocationResult::Error {
            capability_id,
            mut error,
            surface_version,
            surface_changed,
            ..
        } => {
            if error.details.contains_key("invocationId") {
                error
                    .details
                    .insert("invocationId".into(), Value::String(invocation_id.into()));
            }
            AgentInvocationResult::Error {
                invocation_id: invocation_id.to_string(),
                capability_id,
                error,
                surface_version,
                surface_changed,
            }
        }
    }
}

/// An oRPC error code as it may appear in an error message: at most 64
/// characters of `A-Z`, `0-9` and `_`, else `"unexpected code"`.
fn safe_code(code: &str) -> &str {
    let ok = !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        code
    } else {
        "unexpected code"
    }
}

fn not_in_state(row: &CallRecord) -> DurableError {
    DurableError::NotInState {
        invocation_id: row.invocation_id.clone(),
        state: row.state,
    }
}

/// A result for a call already settled in the store: an identical copy of
/// its recorded result is a duplicate; anything else is refused.
fn compare_with_row(row: &CallRecord, digest: &[u8]) -> Result<ResultDisposition, DurableError> {
    match (row.state, row.result_digest.as_deref()) {
        (CallState::Completed, Some(stored)) if stored == digest => {
            Ok(ResultDisposition::Duplicate)
        }
        (CallState::Completed, _) => {
            Err(HostError::ChangedDuplicate(row.invocation_id.clone()).into())
        }
        _ => Err(not_in_state(row)),
    }
}

pub(crate) fn agent_run(run: &RunRecord) -> AgentRun {
    AgentRun {
        run_id: run.run_id.clone(),
        session_id: run.session_id.clone(),
        tab_id: run.tab_id.clone(),
        kind: if run.kind == "headless" {
            ConsumerKind::Headless
        } else {
            ConsumerKind::Embedded
        },
    }
}

/// SHA-256 of a call envelope's JSON (the stored `envelope_digest`).
pub fn digest_call(call: &BrowserSurfaceCall) -> Vec<u8> {
    let mut hasher = Sha256::new();
    // Serializing these types cannot fail.
    hasher.update(serde_json::to_vec(call).unwrap_or_default());
    hasher.finalize().to_vec()
}

/// SHA-256 of a result as the store compares copies (the stored
/// `result_digest`): the authenticated session, the echoed connection,
/// run, tool call and invocation ids and the outcome. The authenticated
/// connection id is left out, so a copy re-sent on the tab's new
/// connection after a restart is recognised as the same result.
pub fn digest_result(
    connection: &AuthenticatedConnection,
    result: &BrowserSurfaceResult,
) -> Vec<u8> {
    let mut hasher = Sha256::new();
    for field in [
        &connection.session_id,
        &result.connection_id,
        &result.run_id,
        &result.tool_call_id,
        &result.invocation_id,
    ] {
        hasher.update((field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    hasher.update(serde_json::to_vec(&result.result).unwrap_or_default());
    hasher.finalize().to_vec()
}
