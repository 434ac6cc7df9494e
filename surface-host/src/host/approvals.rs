//! A person's decision on a call the backend holds for approval, and the
//! held call resumed for its requester ([`Host::decide_approval`];
//! docs/host.md, "Approvals, decided and resumed").
//!
//! orpc-agent keeps approval decisions out of its gateway: the
//! application's own endpoint tells the coordinator (with the approver's
//! credential) — an [`ApprovalDecider`] here. What every deployment then
//! does is in [`Host::decide_approval`]: check that the gateway's receipt
//! of the held call names this approval, send the decision, record the
//! decision the *backend* kept (a decision taken earlier stands), resume
//! the held call through the gateway with the requester's credential, and
//! record its outcome for the run — which MCP clients then read as their
//! task's result.

use crate::durable::DurableError;
use surface_runtime::bridge::{
    ApprovalStatus, CallOptions, CapabilityClient, GatewayApproval, OrpcCallError,
};
use surface_runtime::invocation::AgentInvocationResult;
use surface_runtime::sync::BoxFuture;
use surface_store::{ApprovalDecision, ApprovalState, Decision};

use super::Host;

/// The backend's decision endpoint, called with the approver's credential
/// (never the requester's, never a model's).
pub trait ApprovalDecider: Send + Sync {
    /// Sends `decision` on the backend's approval `approval_id`
    /// ([`surface_store::ApprovalRecord::backend_approval_id`]); answers the approval as the
    /// backend keeps it afterwards (when it was decided before, with that
    /// earlier decision). `Err` is a sentence for the approver, without the
    /// backend's own text.
    fn decide<'a>(
        &'a self,
        approval_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<GatewayApproval, String>>;
}

/// Why [`Host::decide_approval`] did not end with an outcome. Each
/// message is a sentence an approver may be shown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecideError {
    /// No approval with this id is recorded (or the id breaks the id rule).
    #[error("No such approval.")]
    UnknownApproval,
    /// The gateway's receipt of the held call names another approval (or
    /// none): nothing was decided.
    #[error("The gateway's approval belongs to another call than this one; it was not decided.")]
    NotTheHeldCall,
    /// The gateway could not be read, or the decision endpoint refused or
    /// could not be reached: nothing was recorded.
    #[error("{0}")]
    Backend(String),
    /// The backend keeps the approval in a state no decision changes
    /// (`expired`, `cancelled`, still `pending`).
    #[error("The approval is {} at the backend; it can no longer be decided.", .0.as_str())]
    NotDecidable(ApprovalStatus),
    /// The requester's agent withdrew the call while it waited (an MCP
    /// client cancelled its task): the host no longer decides nor resumes
    /// it. The backend's own approval was not withdrawn (its gateway has
    /// no withdraw call); if the backend was sent a decision in the same
    /// moment, the backend keeps it but the call is never resumed.
    #[error("The agent withdrew this call; it can no longer be decided.")]
    Withdrawn,
    /// Nobody decided before the approval expired (the backend's
    /// `expiresAt` or the host's bound): nothing is sent, the run is told
    /// the call did not run.
    #[error("This approval expired before it was decided; the call did not run.")]
    Expired,
    /// The store recorded another decision than the one the backend kept.
    #[error("The host and the backend disagree on this decision; it was not resumed.")]
    Disagreement,
    /// Decided (and recorded), but resuming failed: retry with
    /// [`Host::resume_approval`].
    #[error("Decided, but the call could not be resumed yet ({0}); retry.")]
    NotResumed(#[source] DurableError),
    /// The store failed.
    #[error("The host store failed; try again.")]
    Store(#[source] DurableError),
}

impl Host {
    /// Decides approval `approval_id` as `approver` (the application's
    /// authenticated approver) and resumes the held call for its
    /// requester, once:
    ///
    /// 0. an approval the requester's agent withdrew (an MCP task
    ///    cancelled while pending) is refused: [`DecideError::Withdrawn`],
    ///    nothing is sent;
    /// 1. an approval whose outcome is recorded returns that outcome
    ///    (nothing is sent again);
    /// 2. a pending one: the gateway's receipt of the held call
    ///    (`getInvocation`, with `requester`) must name this approval;
    ///    `decider` sends the decision; the decision the backend answers it
    ///    keeps (`approved`/`consumed` → approve, `rejected` → reject) is
    ///    recorded;
    /// 3. the held call is resumed through the gateway's `resumeApproval`
    ///    with `requester` (the requester's current credential) and its
    ///    outcome recorded for the run ([`DurableHost::resume_approval`](crate::durable::DurableHost::resume_approval)).
    ///
    /// # Errors
    /// [`DecideError`]; after [`DecideError::NotResumed`] the decision is
    /// recorded and [`Host::resume_approval`] retries the resume.
    pub async fn decide_approval(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
        approver: &str,
        decider: &dyn ApprovalDecider,
        requester: &dyn CapabilityClient,
    ) -> Result<AgentInvocationResult, DecideError> {
        if surface_runtime::check_invocation_id(approval_id).is_err() {
            return Err(DecideError::UnknownApproval);
        }
        let durable = self.durable();
        let approval = durable
            .store()
            .approval(approval_id)
            .await
            .map_err(|e| DecideError::Store(e.into()))?
            .ok_or(DecideError::UnknownApproval)?;
        if approval.state == ApprovalState::Withdrawn {
            return Err(DecideError::Withdrawn);
        }
        let now = durable.now();
        if approval.state == ApprovalState::Expired
            || (approval.state == ApprovalState::Pending && approval.expires_at_ms <= now)
        {
            return Err(DecideError::Expired);
        }
        if approval.outcome.is_none() && approval.state == ApprovalState::Pending {
            let receipt = requester
                .get_invocation(&approval.backend_invocation_id, CallOptions::default())
                .await
                .map_err(|e| DecideError::Backend(backend_problem("read the held call", &e)))?;
            let backend_id = approval.backend_approval_id.as_str();
            if receipt.and_then(|r| r.approval_id).as_deref() != Some(backend_id) {
                tracing::warn!(
                    ?approval_id,
                    "an approval that is not the held call's: not decided"
                );
                return Err(DecideError::NotTheHeldCall);
            }
            let kept = decider
                .decide(backend_id, decision)
                .await
                .map_err(DecideError::Backend)?;
            let kept = match kept.status {
                ApprovalStatus::Approved | ApprovalStatus::Consumed => ApprovalDecision::Approve,
                ApprovalStatus::Rejected => ApprovalDecision::Reject,
                other => return Err(DecideError::NotDecidable(other)),
            };
            match durable.decide_approval(approval_id, kept, approver).await {
                Ok(Decision::AlreadyDecided(row)) if row.state == ApprovalState::Withdrawn => {
                    return Err(DecideError::Withdrawn);
                }
                Ok(Decision::AlreadyDecided(row))
                    if matches!(row.state, ApprovalState::Pending | ApprovalState::Expired) =>
                {
                    // It expired while the backend was deciding.
                    return Err(DecideError::Expired);
                }
                Ok(Decision::AlreadyDecided(row)) if row.state != kept.state() => {
                    tracing::error!(
                        ?approval_id,
                        stored = ?row.state.as_str(),
                        "the store holds another decision than the backend kept"
                    );
                    return Err(DecideError::Disagreement);
                }
                Ok(_) => {}
                Err(e) => return Err(DecideError::Store(e)),
            }
        }
        self.resume_approval(approval_id, requester)
            .await
            .map_err(|e| match e {
                DurableError::Store(_) => DecideError::Store(e),
                DurableError::Withdrawn(_) => DecideError::Withdrawn,
                other => DecideError::NotResumed(other),
            })
    }

    /// Resumes a decided approval for its requester and records the
    /// outcome (once; a recorded outcome is returned as it is):
    /// [`DurableHost::resume_approval`](crate::durable::DurableHost::resume_approval)
    /// with default call options. Use it for the approvals
    /// [`Host::recovery`] lists as decided but not resumed.
    ///
    /// # Errors
    /// As `DurableHost::resume_approval`.
    pub async fn resume_approval(
        &self,
        approval_id: &str,
        requester: &dyn CapabilityClient,
    ) -> Result<AgentInvocationResult, DurableError> {
        self.durable()
            .resume_approval(approval_id, requester, CallOptions::default())
            .await
    }
}

/// A backend failure in words, without the backend's text (an oRPC code
/// only when it is an upper-case identifier of at most 64 characters).
pub(crate) fn backend_problem(what: &str, error: &OrpcCallError) -> String {
    let code = error
        .orpc_code()
        .filter(|c| c.len() <= 64 && c.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
    match code {
        Some(code) => format!("The backend refused to {what} ({code})."),
        None => format!("The backend could not {what} (unreachable or an unexpected answer)."),
    }
}
