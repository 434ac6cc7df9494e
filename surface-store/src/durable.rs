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
use surface_runtime::bridge::{CallOptions, CapabilityClient, DomainReceipt, OrpcCallError};
use surface_runtime::host::{
    AgentHost, AgentRun, AnnouncementAccepted, AuthenticatedConnection, BrowserSurfaceAnnouncement,
    BrowserSurfaceCall, BrowserSurfaceOutcome, BrowserSurfaceResult, HostError, InterruptedCall,
    ResultDisposition, ToolCallRequest,
};
use surface_runtime::{Clock, ConsumerKind, ErrorCode, SystemClock};

use crate::store::{
    ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState, Completion, Decision,
    DispatchWrite, HostStore, RunRecord, StoreError, Transition, DEFAULT_LIST_LIMIT,
};

/// Default bound of the active runs [`DurableHost::open`] restores into
/// the in-memory host.
pub const DEFAULT_RESTORED_RUNS: u32 = 10_000;

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
    /// later; a `NOT_FOUND` means the backend has no record of the id).
    #[error("reconciling invocation {invocation_id} through getInvocation failed: {error}")]
    Reconcile {
        /// The invocation id.
        invocation_id: String,
        /// The transport or gateway error.
        #[source]
        error: OrpcCallError,
    },
    /// The backend answered with a receipt for another invocation id; the
    /// call stays interrupted.
    #[error("getInvocation for {invocation_id} answered a receipt for {received}")]
    ReceiptMismatch {
        /// Our invocation id.
        invocation_id: String,
        /// The receipt's (at most 64 characters).
        received: String,
    },
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
}

/// An [`AgentHost`] with a durable [`HostStore`] (module docs).
pub struct DurableHost {
    host: AgentHost,
    store: Arc<dyn HostStore>,
    owner: String,
    clock: Arc<dyn Clock>,
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
        let pending_approvals = this.store.pending_approvals(DEFAULT_LIST_LIMIT).await?;
        let recovery = Recovery {
            interrupted,
            runs,
            pending_approvals,
        };
        Ok((this, recovery))
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

    fn now(&self) -> i64 {
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
                tracing::error!(invocation_id = %id, %error, "host store: interruption not recorded");
            }
        }
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
        self.store.end_run(run_id).await?;
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
        self.store
            .record_approval(&ApprovalRecord {
                approval_id: approval_id.clone(),
                invocation_id: call.invocation.invocation_id.clone(),
                run_id: call.run_id.clone(),
                tool_call_id: call.tool_call_id.clone(),
                capability_id: call.invocation.capability_id.clone(),
                state: ApprovalState::Pending,
                requested_at_ms: self.now(),
                decided_by: None,
                decided_at_ms: None,
            })
            .await?;
        Ok(())
    }

    /// Reconciles an interrupted call through the backend's
    /// `getInvocation` (for governed procedures: the backend's receipt is
    /// the source of truth) and records the receipt (`interrupted` →
    /// `reconciled`). An `approval-required` receipt also records its
    /// approval pending. Never re-dispatches anything.
    ///
    /// # Errors
    /// [`DurableError::MissingRow`]; [`DurableError::NotInState`] unless the
    /// call is `interrupted`; [`DurableError::Reconcile`];
    /// [`DurableError::ReceiptMismatch`]; [`DurableError::Store`].
    pub async fn reconcile(
        &self,
        invocation_id: &str,
        client: &dyn CapabilityClient,
    ) -> Result<DomainReceipt, DurableError> {
        let row = self
            .store
            .call(invocation_id)
            .await?
            .ok_or_else(|| DurableError::MissingRow(invocation_id.to_string()))?;
        if row.state != CallState::Interrupted {
            return Err(not_in_state(&row));
        }
        let receipt = client
            .get_invocation(invocation_id, CallOptions::default())
            .await
            .map_err(|error| DurableError::Reconcile {
                invocation_id: invocation_id.to_string(),
                error,
            })?;
        if receipt.invocation_id() != invocation_id {
            return Err(DurableError::ReceiptMismatch {
                invocation_id: invocation_id.to_string(),
                received: receipt.invocation_id().chars().take(64).collect(),
            });
        }
        if let DomainReceipt::ApprovalRequired { approval_id, .. } = &receipt {
            self.store
                .record_approval(&ApprovalRecord {
                    approval_id: approval_id.clone(),
                    invocation_id: invocation_id.to_string(),
                    run_id: row.run_id.clone(),
                    tool_call_id: row.tool_call_id.clone(),
                    capability_id: row.capability_id.clone(),
                    state: ApprovalState::Pending,
                    requested_at_ms: self.now(),
                    decided_by: None,
                    decided_at_ms: None,
                })
                .await?;
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

    /// Records a person's decision on a pending approval (`pending` →
    /// `approved`/`rejected`, once). `decided_by` is the application's
    /// authenticated approver — never a model tool. Resuming through the
    /// backend is the application's next step (not yet done by this
    /// crate).
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

    /// Pending approvals, oldest first, at most `limit`.
    ///
    /// # Errors
    /// [`DurableError::Store`].
    pub async fn pending_approvals(&self, limit: u32) -> Result<Vec<ApprovalRecord>, DurableError> {
        Ok(self.store.pending_approvals(limit).await?)
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

fn agent_run(run: &RunRecord) -> AgentRun {
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
