//! The capability gateway's wire shapes (`docs/bridges.md`, "Governed
//! bridge"), field by field as recorded from orpc-agent's gateway: the
//! requests the bridge sends ([`InvokeRequest`], [`ResumeApprovalRequest`],
//! [`DescribeScope`]) and the answers it reads ([`GatewayOutcome`],
//! [`InvocationReceipt`], [`GatewayApproval`]). Every answer is read by
//! serde; one that does not fit is an
//! [`OrpcCallError::UnexpectedResponse`] naming what was expected and
//! serde's reason (a missing field, an unknown `status`), never a panic.
//! Unknown fields are ignored.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::bridge::client::{json_excerpt, OrpcCallError, UnexpectedReason};

/// The longest id (invocation, approval, capability, correlation) the
/// gateway accepts, in characters; a longer one is refused with a 400
/// before anything runs, so the bridge does not send it.
pub const MAX_GATEWAY_ID_CHARS: usize = 256;

/// Input of `describe`: `{}` for everything the caller may see, or
/// `{"scope": {"tags"?, "ids"?}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DescribeScope {
    /// Only capabilities with one of these tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Only these capability ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,
}

impl DescribeScope {
    /// A scope of these capability ids.
    pub fn ids<I: IntoIterator<Item = S>, S: Into<String>>(ids: I) -> Self {
        Self {
            tags: None,
            ids: Some(ids.into_iter().map(Into::into).collect()),
        }
    }

    /// The `describe` input: `{}` for the default scope, else
    /// `{"scope": {…}}`.
    pub fn to_input(&self) -> Value {
        if *self == Self::default() {
            json!({})
        } else {
            json!({ "scope": self })
        }
    }
}

/// Input of `invoke`: `{invocationId, capabilityId, input,
/// correlationId?, contractDigest?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvokeRequest {
    /// The stable id of this call; the gateway's journal is idempotent per
    /// id (the same request answers the recorded outcome; a changed input
    /// or capability is `INVOCATION_CONFLICT`).
    pub invocation_id: String,
    /// The descriptor's `id` (the manifest's `capabilityId`, else the
    /// dotted path; never `domain:`-prefixed).
    pub capability_id: String,
    /// The effective input, validated by the registry.
    pub input: Value,
    /// Correlates the call in the gateway's audit; the bridge sends the
    /// invocation id unless configured otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// The digest `describe` gave, unchanged (a changed contract is
    /// `CONTRACT_MISMATCH`); omitted when the manifest has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

/// Input of `resumeApproval`: `{invocationId, approvalId, correlationId?,
/// contractDigest?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeApprovalRequest {
    /// The held invocation (the id `invoke` was sent with).
    pub invocation_id: String,
    /// Its approval (`approval.id` of the `approval-required` outcome).
    pub approval_id: String,
    /// Correlation id, optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// The digest the call was made with, optional: a contract changed
    /// since is `CONTRACT_MISMATCH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

impl ResumeApprovalRequest {
    /// `{invocationId, approvalId}`.
    pub fn new(invocation_id: impl Into<String>, approval_id: impl Into<String>) -> Self {
        Self {
            invocation_id: invocation_id.into(),
            approval_id: approval_id.into(),
            correlation_id: None,
            contract_digest: None,
        }
    }

    /// Adds `contractDigest`.
    pub fn with_contract_digest(mut self, digest: impl Into<String>) -> Self {
        self.contract_digest = Some(digest.into());
        self
    }

    /// Adds `correlationId`.
    pub fn with_correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }
}

/// The `error` of a `failed` or `cancelled` outcome: `{code, message,
/// retryable, details?}`. `message` is server text (audit only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatewayFailure {
    /// The gateway's code (`INVOCATION_CONFLICT`, `INPUT_INVALID`,
    /// `APPROVAL_REJECTED`, …; see the mapping in `docs/bridges.md`).
    pub code: String,
    /// Server text; never reaches the agent.
    #[serde(default)]
    pub message: String,
    /// Whether an identical request may succeed later.
    #[serde(default)]
    pub retryable: bool,
    /// Structured details (`{"issues": [...]}` for `INPUT_INVALID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// An approval's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalStatus {
    /// Waiting for a decision (until `expiresAt`).
    Pending,
    /// Approved; resuming runs the call once.
    Approved,
    /// Rejected; resuming answers `failed APPROVAL_REJECTED`.
    Rejected,
    /// Not decided before `expiresAt`.
    Expired,
    /// Withdrawn.
    Cancelled,
    /// Approved and used by its execution.
    Consumed,
}

impl ApprovalStatus {
    /// The wire name (`"pending"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Expired => "expired",
            ApprovalStatus::Cancelled => "cancelled",
            ApprovalStatus::Consumed => "consumed",
        }
    }
}

/// An approval as `getApproval` (and an `approval-required` outcome)
/// shows it: `{id, capabilityId, status, reasons, types, requestedAt,
/// expiresAt}`; an application's decision endpoint adds `decision`.
/// `reasons` are server text (show them to the approver, never to the
/// agent); times are ISO 8601 strings, kept as given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayApproval {
    /// The approval id `resumeApproval` takes.
    pub id: String,
    /// The capability it holds.
    pub capability_id: String,
    /// Its state.
    pub status: ApprovalStatus,
    /// Why an approval is required (server text).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// The approval types (`irreversible`, …).
    #[serde(default)]
    pub types: Vec<String>,
    /// When it was requested (ISO 8601).
    pub requested_at: String,
    /// When it expires (ISO 8601).
    pub expires_at: String,
    /// The decision, when the answer carries one (a decision endpoint's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ApprovalDecisionRecord>,
}

/// The decision on an approval, as a decision endpoint answers it:
/// `{status, approver: {id, kind}, decidedAt, comment?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecisionRecord {
    /// `approved` or `rejected`.
    pub status: ApprovalStatus,
    /// Who decided (`{"id": "approver-1", "kind": "user"}`, kept as given).
    #[serde(default)]
    pub approver: Value,
    /// When (ISO 8601).
    pub decided_at: String,
    /// The approver's comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// What `invoke` and `resumeApproval` answer (and a settled receipt
/// holds), discriminated by `status`, always with `invocationId`. A
/// refusal before execution is `failed` with `executionId: ""`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum GatewayOutcome {
    /// The effect happened: `{executionId, output}`.
    Completed {
        /// The invocation.
        invocation_id: String,
        /// The gateway's execution id.
        execution_id: String,
        /// The output (`null` when absent).
        #[serde(default)]
        output: Value,
    },
    /// Held for an approval: `{executionId, approval}`.
    ApprovalRequired {
        /// The invocation.
        invocation_id: String,
        /// The gateway's execution id.
        execution_id: String,
        /// The approval to decide, then resume.
        approval: GatewayApproval,
    },
    /// Failed (before execution when `executionId` is empty):
    /// `{executionId, error}`.
    Failed {
        /// The invocation.
        invocation_id: String,
        /// The gateway's execution id; `""` for a refusal.
        execution_id: String,
        /// Why.
        error: GatewayFailure,
    },
    /// Cancelled: `{executionId, error?}`.
    Cancelled {
        /// The invocation.
        invocation_id: String,
        /// The gateway's execution id.
        #[serde(default)]
        execution_id: String,
        /// Why, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<GatewayFailure>,
    },
    /// The gateway itself does not know whether the effect happened (the
    /// receipt stays `pending`): `{}`.
    OutcomeUnknown {
        /// The invocation.
        invocation_id: String,
    },
}

impl GatewayOutcome {
    /// The invocation id the outcome names.
    pub fn invocation_id(&self) -> &str {
        match self {
            GatewayOutcome::Completed { invocation_id, .. }
            | GatewayOutcome::ApprovalRequired { invocation_id, .. }
            | GatewayOutcome::Failed { invocation_id, .. }
            | GatewayOutcome::Cancelled { invocation_id, .. }
            | GatewayOutcome::OutcomeUnknown { invocation_id } => invocation_id,
        }
    }

    /// The execution id, when non-empty.
    pub fn execution_id(&self) -> Option<&str> {
        match self {
            GatewayOutcome::Completed { execution_id, .. }
            | GatewayOutcome::ApprovalRequired { execution_id, .. }
            | GatewayOutcome::Failed { execution_id, .. }
            | GatewayOutcome::Cancelled { execution_id, .. } => {
                Some(execution_id.as_str()).filter(|id| !id.is_empty())
            }
            GatewayOutcome::OutcomeUnknown { .. } => None,
        }
    }

    /// The approval of an `approval-required` outcome.
    pub fn approval(&self) -> Option<&GatewayApproval> {
        match self {
            GatewayOutcome::ApprovalRequired { approval, .. } => Some(approval),
            _ => None,
        }
    }
}

/// A receipt's state: `pending` until the outcome is known (an
/// `outcome-unknown` call stays pending), then `settled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiptState {
    /// Not settled: the outcome is unknown.
    Pending,
    /// Settled: `outcome` holds it.
    Settled,
}

/// What `getInvocation` answers for a recorded invocation:
/// `{invocationId, capabilityId, contractDigest, correlationId?, state,
/// outcome?, approvalId?, createdAt, updatedAt}`. A `settled` receipt
/// always carries `outcome` ([`parse_receipt`] checks it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvocationReceipt {
    /// The invocation.
    pub invocation_id: String,
    /// Its capability.
    pub capability_id: String,
    /// The contract it ran under.
    pub contract_digest: String,
    /// Its correlation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// Settled or not.
    pub state: ReceiptState,
    /// The outcome, once settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<GatewayOutcome>,
    /// Its approval, once one was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// ISO 8601.
    pub created_at: String,
    /// ISO 8601.
    pub updated_at: String,
}

/// Reads an outcome (`invoke`, `resumeApproval`).
///
/// # Errors
/// [`OrpcCallError::UnexpectedResponse`] (status 200) naming what did not
/// fit.
pub fn parse_outcome(value: Value) -> Result<GatewayOutcome, OrpcCallError> {
    GatewayOutcome::deserialize(&value).map_err(|e| not_shaped(&value, "a gateway outcome", &e))
}

/// Reads a `getInvocation` answer: a receipt, or `null` (`None`: the
/// gateway has no record of the id).
///
/// # Errors
/// As [`parse_outcome`]; also a `settled` receipt without `outcome`.
pub fn parse_receipt(value: Value) -> Result<Option<InvocationReceipt>, OrpcCallError> {
    let receipt = Option::<InvocationReceipt>::deserialize(&value)
        .map_err(|e| not_shaped(&value, "an invocation receipt or null", &e))?;
    match receipt {
        Some(r) if r.state == ReceiptState::Settled && r.outcome.is_none() => Err(shape_error(
            &value,
            "an invocation receipt or null",
            "a settled receipt without `outcome`".into(),
        )),
        other => Ok(other),
    }
}

/// Reads a `getApproval` answer: an approval, or `null`.
///
/// # Errors
/// As [`parse_outcome`].
pub fn parse_approval(value: Value) -> Result<Option<GatewayApproval>, OrpcCallError> {
    Option::<GatewayApproval>::deserialize(&value)
        .map_err(|e| not_shaped(&value, "an approval or null", &e))
}

/// A 2xx answer that does not have the expected shape; the body kept for
/// audit is an excerpt.
pub(crate) fn not_shaped(
    value: &Value,
    expected: &'static str,
    error: &serde_json::Error,
) -> OrpcCallError {
    shape_error(value, expected, error.to_string())
}

fn shape_error(value: &Value, expected: &'static str, message: String) -> OrpcCallError {
    OrpcCallError::UnexpectedResponse {
        status: 200,
        content_type: Some("application/json".into()),
        body: json_excerpt(value),
        reason: UnexpectedReason::NotShaped { expected, message },
    }
}
