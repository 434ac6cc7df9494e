//! What the model is told when a call never produced a registry result:
//! the host refused to dispatch it, the page refused it, the page went
//! away, or the host stopped waiting (docs/agents.md, "The MCP server").
//! Every message is fixed text: nothing from the page or the host's
//! internals reaches the model.

use surface_runtime::host::{HostError, RejectionReason};
use surface_runtime::invocation::{AgentError, ErrorCode, Retry};

/// A refused dispatch (`AgentHost::dispatch`).
pub(super) fn dispatch_error(error: &HostError) -> AgentError {
    match error {
        HostError::NoLiveSession(_) => AgentError::new(
            ErrorCode::CapabilityNotAvailable,
            "The application's page is not connected, so its tools are unavailable.",
            Retry::AfterRefresh,
        )
        .with_detail("reason", "no-live-page"),
        HostError::NotOffered { .. } | HostError::UnknownRun(_) => AgentError::new(
            ErrorCode::CapabilityNotFound,
            "No tool with this name is available.",
            Retry::AfterRefresh,
        ),
        HostError::CapacityExceeded(_) => AgentError::new(
            ErrorCode::ExecutionFailed,
            "Too many calls are waiting for the application; try again later.",
            Retry::AfterDelay,
        )
        .with_detail("reason", "host-capacity"),
        _ => AgentError::new(
            ErrorCode::ExecutionFailed,
            "The tool call could not be dispatched.",
            Retry::No,
        )
        .with_detail("reason", "dispatch-refused"),
    }
}

/// A call the page refused without reaching its registry.
pub(super) fn rejection_error(reason: RejectionReason) -> AgentError {
    let (code, message, retry) = match reason {
        RejectionReason::StaleSurface => (
            ErrorCode::StaleCapability,
            "The application's view changed before this call arrived.",
            Retry::AfterRefresh,
        ),
        RejectionReason::Disconnected => (
            ErrorCode::ExecutionFailed,
            "The application's page disconnected before answering; the call may or may not have taken effect.",
            Retry::No,
        ),
        RejectionReason::CapacityExceeded => (
            ErrorCode::ExecutionFailed,
            "The application's page is handling too many calls.",
            Retry::AfterDelay,
        ),
        RejectionReason::SessionExpired => (
            ErrorCode::CapabilityNotAvailable,
            "The application's page session expired; its tools are unavailable until it reconnects.",
            Retry::AfterRefresh,
        ),
        RejectionReason::InvalidCall
        | RejectionReason::WrongSession
        | RejectionReason::InvocationConflict => (
            ErrorCode::ExecutionFailed,
            "The application's page refused the call.",
            Retry::No,
        ),
    };
    AgentError::new(code, message, retry).with_detail("reason", reason.as_str())
}

/// The page's connection closed (or was replaced) while the call was
/// outstanding.
pub(super) fn interrupted() -> AgentError {
    AgentError::new(
        ErrorCode::ExecutionFailed,
        "The application's page disconnected before answering; the call may or may not have taken effect.",
        Retry::No,
    )
    .with_detail("reason", "disconnected")
}

/// The host stopped waiting (`McpServerOptions::call_timeout`).
pub(super) fn timed_out(timeout_ms: u64) -> AgentError {
    AgentError::new(
        ErrorCode::Timeout,
        "The application did not answer in time; the call may or may not have taken effect.",
        Retry::No,
    )
    .with_detail("timeoutMs", timeout_ms)
}

/// A server tool whose capability the server registry does not have.
pub(super) fn no_server_executor() -> AgentError {
    AgentError::new(
        ErrorCode::ExecutionFailed,
        "This tool cannot run on the server.",
        Retry::No,
    )
    .with_detail("reason", "no-server-registration")
}

/// A dispatch the replica refused (feature `store`).
pub(super) fn refusal_error(reason: crate::replica::Refusal) -> AgentError {
    use crate::replica::Refusal;
    match reason {
        Refusal::NoLivePage => dispatch_error(&HostError::NoLiveSession(String::new())),
        Refusal::UnknownTool => dispatch_error(&HostError::UnknownRun(String::new())),
        Refusal::Capacity => dispatch_error(&HostError::CapacityExceeded(0)),
        Refusal::StoreUnavailable => AgentError::new(
            ErrorCode::ExecutionFailed,
            "The host could not record the call, so it was not sent; try again later.",
            Retry::AfterDelay,
        )
        .with_detail("reason", "host-store"),
        Refusal::HolderUnavailable => AgentError::new(
            ErrorCode::ExecutionFailed,
            "The application's page could not be reached in time, so the call was not sent; try again.",
            Retry::AfterDelay,
        )
        .with_detail("reason", "page-unreachable"),
        Refusal::Conflict | Refusal::Invalid => AgentError::new(
            ErrorCode::ExecutionFailed,
            "The tool call could not be dispatched.",
            Retry::No,
        )
        .with_detail("reason", "dispatch-refused"),
    }
}

/// The result of a call a replica ran or routed (feature `store`); the
/// host's own answers name `capability_id` at `surface_version` (the
/// tool's, as the catalog lists it).
pub(super) fn call_end_result(
    invocation_id: &str,
    capability_id: &str,
    surface_version: u64,
    end: crate::replica::CallEnd,
    timeout_ms: u64,
) -> surface_runtime::invocation::AgentInvocationResult {
    use crate::replica::CallEnd;
    use surface_runtime::host::BrowserSurfaceOutcome;
    let error = match end {
        CallEnd::Outcome {
            outcome: BrowserSurfaceOutcome::Invocation(result),
        } => return result,
        CallEnd::Outcome {
            outcome: BrowserSurfaceOutcome::Rejected(rejected),
        } => rejection_error(rejected.reason),
        CallEnd::Interrupted => interrupted(),
        CallEnd::TimedOut => timed_out(timeout_ms),
        CallEnd::Refused { reason } => refusal_error(reason),
    };
    surface_runtime::invocation::AgentInvocationResult::err(
        invocation_id,
        capability_id,
        error,
        surface_version,
    )
}
