//! One governed call's answer, classified ([`GovernedOutcome`]) and mapped
//! to the surface's result (the tables of `docs/bridges.md`, "Governed
//! bridge").

use serde_json::{json, Value};

use super::mapping::{approval_required, failure_error, outcome_unknown, refusal_error};
use super::wire::{GatewayOutcome, InvocationReceipt, ReceiptState};
use crate::bridge::client::OrpcCallError;
use crate::executor::ExecutionError;
use crate::invocation::{AgentInvocationResult, ErrorCode, Retry};

/// Why an outcome is unknown although the gateway did not say so itself.
#[derive(Clone, Debug, PartialEq)]
pub enum UnknownReason {
    /// The request was sent but no complete response came back (also the
    /// transport's total timeout).
    LostResponse,
    /// The call was cancelled after it was sent.
    Cancelled,
    /// The gateway answered 5xx: it may have failed after committing.
    ServerError,
    /// The gateway answered its own `TIMEOUT` (oRPC 408): the effect may
    /// still commit.
    GatewayTimeout,
    /// A 2xx answer that is not an outcome or is over the size limit, or a
    /// redirect (never followed).
    InvalidResponse,
    /// An outcome or receipt for another invocation id.
    MismatchedInvocation {
        /// The invocation id it named (as received, for audit).
        received: String,
    },
}

/// The classified answer of one governed call, handed to `on_outcome`
/// and mapped to the surface result by [`GovernedOutcome::to_result`].
#[derive(Clone, Debug, PartialEq)]
pub enum GovernedOutcome {
    /// An outcome the gateway gave for this invocation (any status,
    /// including its own `outcome-unknown` and its refusals: `failed` with
    /// `executionId: ""`).
    Gateway(GatewayOutcome),
    /// `getInvocation`: the gateway recorded the call but its outcome is
    /// not known (a `pending` receipt): still unknown.
    Pending(InvocationReceipt),
    /// `getInvocation` answered `null`: the gateway has no record of the
    /// id, so nothing ran under it.
    NotRecorded {
        /// Our invocation id.
        invocation_id: String,
    },
    /// No trustworthy answer: the effect may or may not have happened.
    Unknown {
        /// Our invocation id.
        invocation_id: String,
        /// Why.
        reason: UnknownReason,
        /// The transport error or foreign answer, for audit.
        internal: Value,
    },
    /// The gateway refused the request at the oRPC level (a 4xx: a bad
    /// token, a request it cannot read), or it was never sent (connection
    /// refused): nothing ran.
    Rejected {
        /// Our invocation id.
        invocation_id: String,
        /// The refusal.
        error: OrpcCallError,
    },
}

/// Whether an oRPC error is the gateway's own timeout (`TIMEOUT`, 408):
/// the effect may still commit.
fn is_gateway_timeout(error: &OrpcCallError) -> bool {
    matches!(error, OrpcCallError::Orpc(e) if e.status == 408 || e.code == "TIMEOUT")
}

fn unknown_reason(error: &OrpcCallError) -> UnknownReason {
    match error {
        OrpcCallError::Cancelled => UnknownReason::Cancelled,
        OrpcCallError::Transport { .. } | OrpcCallError::Timeout { .. } => {
            UnknownReason::LostResponse
        }
        OrpcCallError::Redirect { .. } => UnknownReason::InvalidResponse,
        OrpcCallError::UnexpectedResponse { status, .. }
        | OrpcCallError::ResponseTooLarge { status, .. }
            if *status < 400 =>
        {
            UnknownReason::InvalidResponse
        }
        _ if is_gateway_timeout(error) => UnknownReason::GatewayTimeout,
        _ => UnknownReason::ServerError,
    }
}

impl GovernedOutcome {
    /// Classifies an `invoke` or `resumeApproval` answer for
    /// `invocation_id` (the table in `docs/bridges.md`).
    pub fn classify(invocation_id: &str, answer: Result<GatewayOutcome, OrpcCallError>) -> Self {
        match answer {
            Ok(outcome) if outcome.invocation_id() == invocation_id => {
                GovernedOutcome::Gateway(outcome)
            }
            Ok(outcome) => mismatched(invocation_id, outcome.invocation_id(), json!(outcome)),
            Err(error) if error.may_have_executed() || is_gateway_timeout(&error) => {
                GovernedOutcome::Unknown {
                    invocation_id: invocation_id.to_string(),
                    reason: unknown_reason(&error),
                    internal: error.to_internal(),
                }
            }
            Err(error) => GovernedOutcome::Rejected {
                invocation_id: invocation_id.to_string(),
                error,
            },
        }
    }

    /// Classifies a `getInvocation` answer for `invocation_id`: `null` is
    /// [`GovernedOutcome::NotRecorded`], a `pending` receipt
    /// [`GovernedOutcome::Pending`], a settled one its outcome (a receipt
    /// or outcome naming another id is [`GovernedOutcome::Unknown`]).
    pub fn from_receipt(invocation_id: &str, receipt: Option<InvocationReceipt>) -> Self {
        let Some(receipt) = receipt else {
            return GovernedOutcome::NotRecorded {
                invocation_id: invocation_id.to_string(),
            };
        };
        if receipt.invocation_id != invocation_id {
            return mismatched(invocation_id, &receipt.invocation_id, json!(receipt));
        }
        match (receipt.state, receipt.outcome) {
            (ReceiptState::Settled, Some(outcome)) => Self::classify(invocation_id, Ok(outcome)),
            (state, outcome) => GovernedOutcome::Pending(InvocationReceipt {
                state,
                outcome,
                ..receipt
            }),
        }
    }

    /// The invocation id the outcome is about (ours, also for mismatches).
    pub fn invocation_id(&self) -> &str {
        match self {
            GovernedOutcome::Gateway(o) => o.invocation_id(),
            GovernedOutcome::Pending(r) => &r.invocation_id,
            GovernedOutcome::NotRecorded { invocation_id }
            | GovernedOutcome::Unknown { invocation_id, .. }
            | GovernedOutcome::Rejected { invocation_id, .. } => invocation_id,
        }
    }

    /// The completed outcome's output, if the effect is known to have
    /// happened.
    pub fn completed_output(&self) -> Option<&Value> {
        match self {
            GovernedOutcome::Gateway(GatewayOutcome::Completed { output, .. }) => Some(output),
            _ => None,
        }
    }

    /// The approval id of an `approval-required` outcome.
    pub fn approval_id(&self) -> Option<&str> {
        match self {
            GovernedOutcome::Gateway(o) => o.approval().map(|a| a.id.as_str()),
            _ => None,
        }
    }

    /// The surface result: `Ok(output)` for a completed outcome, else the
    /// mapped [`ExecutionError`] — a fixed safe message, `details` with
    /// `invocationId` (this outcome's id) and the row's agent-safe details
    /// (server values only through
    /// [`safe_identifier`](crate::bridge::safe_identifier)), the full
    /// answer in `internal`.
    ///
    /// # Errors
    /// Every outcome but `completed`, per the table in `docs/bridges.md`.
    pub fn to_result(&self) -> Result<Value, ExecutionError> {
        let id = self.invocation_id();
        match self {
            GovernedOutcome::Gateway(outcome) => gateway_result(outcome),
            GovernedOutcome::Pending(receipt) => Err(outcome_unknown(
                id,
                json!({"kind": "pending-receipt", "receipt": receipt}),
            )),
            GovernedOutcome::NotRecorded { .. } => Err(ExecutionError::new(
                ErrorCode::ExecutionFailed,
                "The backend has no record of this call; it did not run.",
                Retry::AfterDelay,
            )
            .with_detail("reason", "not-recorded")
            .with_internal(json!({"kind": "not-recorded", "invocationId": id}))),
            GovernedOutcome::Unknown { internal, .. } => Err(outcome_unknown(id, internal.clone())),
            GovernedOutcome::Rejected { error, .. } => Err(refusal_error(error, id)),
        }
    }

    /// [`GovernedOutcome::to_result`] as the agent's result for a call to
    /// `capability_id` at `surface_version`.
    pub fn to_invocation_result(
        &self,
        capability_id: &str,
        surface_version: u64,
    ) -> AgentInvocationResult {
        let invocation_id = self.invocation_id();
        match self.to_result() {
            Ok(output) => {
                AgentInvocationResult::ok(invocation_id, capability_id, output, surface_version)
            }
            Err(e) => AgentInvocationResult::err(
                invocation_id,
                capability_id,
                e.to_agent_error(),
                surface_version,
            ),
        }
    }
}

fn mismatched(ours: &str, received: &str, answer: Value) -> GovernedOutcome {
    GovernedOutcome::Unknown {
        invocation_id: ours.to_string(),
        reason: UnknownReason::MismatchedInvocation {
            received: received.chars().take(256).collect(),
        },
        internal: json!({"kind": "mismatched-invocation", "answer": answer}),
    }
}

fn gateway_result(outcome: &GatewayOutcome) -> Result<Value, ExecutionError> {
    let internal = json!({"kind": "outcome", "outcome": outcome});
    match outcome {
        GatewayOutcome::Completed { output, .. } => Ok(output.clone()),
        GatewayOutcome::ApprovalRequired {
            invocation_id,
            execution_id,
            approval,
        } => Err(approval_required(
            invocation_id,
            execution_id,
            approval,
            internal,
        )),
        GatewayOutcome::Failed {
            invocation_id,
            error,
            ..
        } => Err(failure_error(error, invocation_id, internal)),
        GatewayOutcome::Cancelled { .. } => Err(ExecutionError::new(
            ErrorCode::Cancelled,
            "The backend cancelled the call.",
            Retry::No,
        )
        .with_internal(internal)),
        GatewayOutcome::OutcomeUnknown { invocation_id } => {
            Err(outcome_unknown(invocation_id, internal))
        }
    }
}
