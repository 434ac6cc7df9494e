//! Gateway codes → the surface's codes (`docs/bridges.md`, "Governed
//! bridge", the code table). Messages are fixed safe texts written here;
//! the gateway's own message is server text and stays in the audit record.

use serde_json::{json, Value};

use super::wire::{GatewayApproval, GatewayFailure};
use crate::bridge::client::{OrpcCallError, OrpcError};
use crate::bridge::ordinary::map_orpc_error;
use crate::bridge::safe_identifier;
use crate::bridge::sanitize::with_server_identifier;
use crate::executor::ExecutionError;
use crate::invocation::{ErrorCode, Retry};

/// The most entries of a gateway's `INPUT_INVALID` `details.issues` that
/// reach the agent (the first ones; the count goes to audit).
pub const MAX_REPORTED_ISSUES: usize = 32;

/// The most path elements one reported issue keeps; a longer path is cut
/// there.
pub const MAX_ISSUE_PATH: usize = 16;

/// The message of `DOMAIN_APPROVAL_REQUIRED`, as the original session
/// words it.
pub const APPROVAL_REQUIRED_MESSAGE: &str = "The domain operation is waiting for server approval.";

/// The message of `DOMAIN_OUTCOME_UNKNOWN`.
pub const OUTCOME_UNKNOWN_MESSAGE: &str = "The backend's outcome is unknown; the effect may have happened. It is reconciled by invocation id, not retried.";

/// One row of the code table.
struct Row {
    code: ErrorCode,
    retry: Retry,
    message: &'static str,
    /// `details.reason`, when the row has one.
    reason: Option<&'static str>,
    /// `details.origin: "server"`.
    server_origin: bool,
}

const fn row(code: ErrorCode, retry: Retry, message: &'static str) -> Row {
    Row {
        code,
        retry,
        message,
        reason: None,
        server_origin: false,
    }
}

/// The row for a gateway code; `retryable` matters only for
/// `EXECUTION_FAILED` and `AUDIT_UNAVAILABLE` (retry `after-delay`).
fn row_for(code: &str, retryable: bool) -> Row {
    if let Some(row) = caller_row(code) {
        return row;
    }
    match code {
        "TIMEOUT" | "APPROVAL_CONSUMED" => row(
            ErrorCode::DomainOutcomeUnknown,
            Retry::No,
            OUTCOME_UNKNOWN_MESSAGE,
        ),
        "APPROVAL_REQUIRED" | "APPROVAL_PENDING" => row(
            ErrorCode::DomainApprovalRequired,
            Retry::No,
            APPROVAL_REQUIRED_MESSAGE,
        ),
        "APPROVAL_EXPIRED" => Row {
            reason: Some("approval-expired"),
            ..row(
                ErrorCode::PreconditionFailed,
                Retry::AfterRefresh,
                "The approval expired before it was used; a new call asks for a new approval.",
            )
        },
        "CANCELLED" => row(
            ErrorCode::Cancelled,
            Retry::No,
            "The backend cancelled the call.",
        ),
        "OUTPUT_INVALID" => Row {
            reason: Some("output-invalid"),
            ..row(
                ErrorCode::ExecutionFailed,
                Retry::No,
                "The backend ran the call but withheld its output; its effect may have happened.",
            )
        },
        "EXECUTION_FAILED" | "AUDIT_UNAVAILABLE" if retryable => row(
            ErrorCode::ExecutionFailed,
            Retry::AfterDelay,
            "The backend could not execute the call right now.",
        ),
        _ => row(
            ErrorCode::ExecutionFailed,
            Retry::No,
            "The backend could not execute the call.",
        ),
    }
}

/// The rows of the codes about the caller and its request: who it is,
/// what it may do, what it sent.
fn caller_row(code: &str) -> Option<Row> {
    Some(match code {
        "UNAUTHENTICATED" => row(
            ErrorCode::NotAuthenticated,
            Retry::No,
            "The backend does not know the requester; sign in again.",
        ),
        "FORBIDDEN" | "POLICY_DENIED" => Row {
            server_origin: true,
            ..row(
                ErrorCode::NotAuthorized,
                Retry::No,
                "The backend refused to authorize this call.",
            )
        },
        "APPROVAL_REJECTED" => Row {
            server_origin: true,
            ..row(
                ErrorCode::NotAuthorized,
                Retry::No,
                "The approver rejected this call; it did not run.",
            )
        },
        "INPUT_INVALID" => row(
            ErrorCode::InvalidInput,
            Retry::WithChanges,
            "The backend refused the input; details.issues names the fields.",
        ),
        "INVOCATION_CONFLICT" => Row {
            reason: Some("id-reused-with-different-request"),
            ..row(
                ErrorCode::InvocationConflict,
                Retry::WithChanges,
                "The backend already holds another call under this invocation id; call again with a fresh invocation id.",
            )
        },
        "CONTRACT_MISMATCH" => Row {
            reason: Some("contract-changed"),
            ..row(
                ErrorCode::StaleCapability,
                Retry::AfterRefresh,
                "The backend's contract for this capability changed; refresh, then call again.",
            )
        },
        "CAPABILITY_NOT_FOUND" => row(
            ErrorCode::CapabilityNotFound,
            Retry::AfterRefresh,
            "The backend does not offer this capability to this caller.",
        ),
        _ => return None,
    })
}

/// The surface error of a `failed` outcome's `error` (or a `cancelled`
/// one's, with `CANCELLED` when it has none), for `invocation_id`;
/// `internal` is the audit record (the whole outcome).
pub(crate) fn failure_error(
    failure: &GatewayFailure,
    invocation_id: &str,
    internal: Value,
) -> ExecutionError {
    let row = row_for(&failure.code, failure.retryable);
    let mut err = ExecutionError::new(row.code.clone(), row.message, row.retry)
        .with_detail("invocationId", invocation_id)
        .with_internal(internal);
    if row.server_origin {
        err = err.with_detail("origin", "server");
    }
    if let Some(reason) = row.reason {
        err = err.with_detail("reason", reason);
    }
    if row.retry == Retry::AfterDelay {
        err = err.with_detail("transient", true);
    }
    if row.code == ErrorCode::InvalidInput {
        err = with_issues(err, failure.details.as_ref());
    }
    // The invocation id and any detail the matrix does not allow for the
    // code stay in the audit record.
    err.within_matrix()
}

/// The message of each issue the gateway reports: its own messages are
/// server text and stay in the audit record.
pub const GATEWAY_ISSUE_MESSAGE: &str = "The backend refused this value.";

/// `details.issues` of `INVALID_INPUT` in the session's issue shape: at
/// most [`MAX_REPORTED_ISSUES`] issues, each `{"path", "message"}` with
/// `path` the issue's elements that are safe identifiers or indexes, as a
/// string (`"deviceIds[0]"`), and [`GATEWAY_ISSUE_MESSAGE`].
fn with_issues(err: ExecutionError, details: Option<&Value>) -> ExecutionError {
    let issues = details
        .and_then(|d| d.get("issues"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let reported: Vec<Value> = issues
        .iter()
        .take(MAX_REPORTED_ISSUES)
        .map(|issue| json!({ "path": safe_path(issue.get("path")), "message": GATEWAY_ISSUE_MESSAGE }))
        .collect();
    err.with_detail("issues", reported)
}

/// The issue path's leading elements that are safe identifiers or indexes
/// (at most [`MAX_ISSUE_PATH`]), joined as agent-surface writes paths:
/// properties with `.`, indexes as `[i]`.
fn safe_path(path: Option<&Value>) -> String {
    let elements = path.and_then(Value::as_array).map(Vec::as_slice);
    let mut out = String::new();
    for element in elements.unwrap_or_default().iter().take(MAX_ISSUE_PATH) {
        match element {
            Value::String(s) if safe_identifier(s).is_some() => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(s);
            }
            Value::Number(n) if n.as_u64().is_some() => {
                out.push_str(&format!("[{n}]"));
            }
            _ => break,
        }
    }
    out
}

/// `DOMAIN_APPROVAL_REQUIRED` for an `approval-required` outcome: retry
/// `no`, details `{origin: "server", invocationId, executionId,
/// approvalId, expiresAt}` (the server's values only through
/// [`safe_identifier`]).
pub(crate) fn approval_required(
    invocation_id: &str,
    execution_id: &str,
    approval: &GatewayApproval,
    internal: Value,
) -> ExecutionError {
    let err = ExecutionError::new(
        ErrorCode::DomainApprovalRequired,
        APPROVAL_REQUIRED_MESSAGE,
        Retry::No,
    )
    .with_detail("origin", "server")
    .with_detail("invocationId", invocation_id)
    .with_internal(internal);
    let err = if execution_id.is_empty() {
        err
    } else {
        with_server_identifier(err, "executionId", execution_id)
    };
    let err = with_server_identifier(err, "approvalId", &approval.id);
    with_server_identifier(err, "expiresAt", &approval.expires_at)
}

/// `DOMAIN_OUTCOME_UNKNOWN`, retry `no`, details `{invocationId}`.
pub(crate) fn outcome_unknown(invocation_id: &str, internal: Value) -> ExecutionError {
    ExecutionError::new(
        ErrorCode::DomainOutcomeUnknown,
        OUTCOME_UNKNOWN_MESSAGE,
        Retry::No,
    )
    .with_detail("invocationId", invocation_id)
    .with_internal(internal)
}

/// A gateway refusal at the oRPC level (a 4xx error, or nothing sent):
/// `UNAUTHORIZED` → `NOT_AUTHENTICATED`, `FORBIDDEN` → `NOT_AUTHORIZED`
/// (origin server), anything else as the ordinary bridge maps it
/// ([`map_orpc_error`]); within the error matrix (the invocation id in the
/// audit record).
pub(crate) fn refusal_error(error: &OrpcCallError, invocation_id: &str) -> ExecutionError {
    let mapped = match error {
        OrpcCallError::Orpc(OrpcError { code, .. }) if code == "UNAUTHORIZED" => {
            ExecutionError::new(
                ErrorCode::NotAuthenticated,
                "The backend does not know the requester; sign in again.",
                Retry::No,
            )
            .with_internal(error.to_internal())
        }
        OrpcCallError::Orpc(OrpcError { code, .. }) if code == "FORBIDDEN" => ExecutionError::new(
            ErrorCode::NotAuthorized,
            "The backend refused to authorize this call.",
            Retry::No,
        )
        .with_detail("origin", "server")
        .with_internal(error.to_internal()),
        other => map_orpc_error(other),
    };
    mapped
        .with_detail("invocationId", invocation_id)
        .within_matrix()
}
