//! MCP tasks for calls the backend holds for a person's approval (the
//! `io.modelcontextprotocol/tasks` extension of revision 2026-07-28, on a
//! durable host; docs/agents.md, "Approvals as MCP tasks").
//!
//! A `tools/call` whose call the backend answered `DOMAIN_APPROVAL_REQUIRED`
//! — the durable host recorded the approval (`host_approvals`) — is
//! answered with a task instead, when the client declared the extension.
//! The task id is the backend's approval id; `tasks/get` reads the approval
//! from the store, so any replica answers it, also after a restart:
//! `working` while nobody decided or the decision is not yet resumed,
//! `completed` with the `CallToolResult` of the resumed outcome once the
//! host recorded it (written once: every `tasks/get` returns the same
//! result, the backend ran the call at most once), `cancelled` once the
//! client withdrew it with `tasks/cancel` while nobody had decided.
//!
//! The same rows answer the experimental tasks of revision 2025-11-25 on
//! the legacy lane ([`legacy`]): only the wire shapes differ.

pub(crate) mod legacy;

use crate::replica::Replica;
use rmcp::model::{
    CreateTaskResult, DetailedTask, ErrorData, GetTaskResult, ResultType, Task, TaskPayload,
};
use serde_json::Value;
use surface_runtime::clock::iso_8601;
use surface_runtime::invocation::{AgentInvocationResult, ErrorCode};
use surface_store::{ApprovalRecord, ApprovalState, Decision};

use super::rmcp_model;

/// The poll interval a task suggests: 2,000 ms.
pub const TASK_POLL_INTERVAL_MS: u64 = 2_000;

/// The task of `result` — a call of `run_id` the backend holds for
/// approval, whose approval the durable host recorded for that run under
/// the call's invocation id (the task id) — or `None` (any other result, or a store that cannot be
/// read: the client then gets the `DOMAIN_APPROVAL_REQUIRED` result).
pub(crate) async fn task_for_held_call(
    replica: &Replica,
    run_id: &str,
    result: &AgentInvocationResult,
) -> Option<CreateTaskResult> {
    held_approval(replica, run_id, result)
        .await
        .map(|record| CreateTaskResult::new(task(&record)))
}

/// The approval the durable host recorded for `result` — a call of
/// `run_id` the backend holds — or `None` (as [`task_for_held_call`]).
pub(crate) async fn held_approval(
    replica: &Replica,
    run_id: &str,
    result: &AgentInvocationResult,
) -> Option<ApprovalRecord> {
    let error = result.error()?;
    if error.code != ErrorCode::DomainApprovalRequired {
        return None;
    }
    let backend_approval_id = error.details.get("approvalId")?.as_str()?;
    // The host's id of an approval is its held call's invocation id.
    let record = match replica
        .durable()
        .store()
        .approval(result.invocation_id())
        .await
    {
        Ok(record) => record?,
        Err(error) => {
            tracing::error!(error = ?error, "MCP: the held call's approval cannot be read; no task");
            return None;
        }
    };
    (record.run_id == run_id && record.backend_approval_id == backend_approval_id).then_some(record)
}

/// `tasks/get` of `task_id` for `run_id`.
///
/// # Errors
/// `-32602` for an id that is not a task of this run (one that breaks the
/// id rule, another run's, an unknown one: the same answer); `-32603` when
/// the store cannot be read or holds an outcome this version cannot read.
pub(crate) async fn get_task(
    replica: &Replica,
    run_id: &str,
    task_id: &str,
) -> Result<GetTaskResult, ErrorData> {
    let record = approval_of_run(replica, run_id, task_id).await?;
    let payload = match (&record.outcome, record.state) {
        (Some(outcome), _) => TaskPayload::Completed {
            result: completed_result(outcome)?,
        },
        (None, ApprovalState::Withdrawn) => TaskPayload::Cancelled,
        (None, _) => TaskPayload::Working,
    };
    Ok(GetTaskResult::new(DetailedTask::new(
        task(&record),
        payload,
    )))
}

/// `tasks/cancel` of `task_id` for `run_id`: withdraws the approval while
/// nobody has decided it (`pending` → `withdrawn`, one conditional store
/// write: [`crate::durable::DurableHost::withdraw_approval`]) and returns
/// the row as it now stands (its task is `cancelled`). The approver page
/// no longer lists it, [`crate::host::Host::decide_approval`] refuses it
/// ([`crate::host::DecideError::Withdrawn`]) and the host never resumes
/// it. The backend's own held approval is **not** withdrawn: its gateway
/// has no call for that; it stays pending at the backend until it expires
/// or is decided there, and the host never resumes the call.
///
/// # Errors
/// `-32602` as [`get_task`], and for a task that can no longer be
/// cancelled (completed, cancelled before, or decided and being resumed —
/// the error a 2025-11-25 receiver gives for a terminal task); `-32603`
/// when the store cannot be read or written.
pub(crate) async fn cancel_task(
    replica: &Replica,
    run_id: &str,
    task_id: &str,
) -> Result<ApprovalRecord, ErrorData> {
    let record = approval_of_run(replica, run_id, task_id).await?;
    if record.state != ApprovalState::Pending || record.outcome.is_some() {
        return Err(not_cancellable(&record));
    }
    match replica.durable().withdraw_approval(task_id).await {
        Ok(Decision::Applied) => approval_of_run(replica, run_id, task_id).await,
        Ok(Decision::AlreadyDecided(row)) => Err(not_cancellable(&row)),
        Ok(Decision::Unknown) => Err(unknown_task()),
        Err(error) => {
            tracing::error!(error = ?error, "MCP: tasks/cancel cannot write the store");
            Err(ErrorData::internal_error(
                "the task cannot be cancelled now; try again",
                None,
            ))
        }
    }
}

fn not_cancellable(record: &ApprovalRecord) -> ErrorData {
    let why = match (record.outcome.is_some(), record.state) {
        (true, _) => "it has completed",
        (false, ApprovalState::Withdrawn) => "it was cancelled before",
        (false, _) => "a person has decided it and the call is being resumed",
    };
    ErrorData::invalid_params(format!("this task cannot be cancelled: {why}"), None)
}

fn unknown_task() -> ErrorData {
    ErrorData::invalid_params("no such task for this token's run", None)
}

async fn approval_of_run(
    replica: &Replica,
    run_id: &str,
    task_id: &str,
) -> Result<ApprovalRecord, ErrorData> {
    if surface_runtime::check_invocation_id(task_id).is_err() {
        return Err(unknown_task());
    }
    match replica.durable().store().approval(task_id).await {
        Ok(Some(record)) if record.run_id == run_id => Ok(record),
        Ok(_) => Err(unknown_task()),
        Err(error) => {
            tracing::error!(error = ?error, "MCP: tasks/get cannot read the store");
            Err(ErrorData::internal_error(
                "the task cannot be read now; try again",
                None,
            ))
        }
    }
}

/// The `CallToolResult` object of a recorded outcome (an
/// `AgentInvocationResult` as JSON), mapped as a tool without output
/// schema maps it.
pub(crate) fn completed_result(outcome: &str) -> Result<serde_json::Map<String, Value>, ErrorData> {
    let unreadable = |what: &str| {
        tracing::error!("MCP: a recorded outcome {what}");
        ErrorData::internal_error("the task's outcome cannot be read", None)
    };
    let result: AgentInvocationResult =
        serde_json::from_str(outcome).map_err(|_| unreadable("does not parse"))?;
    let mapped = surface_runtime::export::result::mcp_result(&result, None);
    let mut call = rmcp_model::call_tool_result(mapped);
    call.result_type = Some(ResultType::COMPLETE);
    match serde_json::to_value(call) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(unreadable("does not serialize")),
    }
}

/// The task's common fields: created when the backend held the call,
/// updated at the decision and at the resumed outcome; no expiry (the
/// rows stay until the store is pruned).
pub(crate) fn task(record: &ApprovalRecord) -> Task {
    let updated = record
        .resumed_at_ms
        .or(record.decided_at_ms)
        .unwrap_or(record.requested_at_ms);
    let ms = |at: i64| iso_8601(u64::try_from(at).unwrap_or(0));
    let status = match (record.outcome.is_some(), record.state) {
        (true, _) => rmcp::model::TaskStatus::Completed,
        (false, ApprovalState::Withdrawn) => rmcp::model::TaskStatus::Cancelled,
        (false, _) => rmcp::model::TaskStatus::Working,
    };
    Task::new(
        record.approval_id.clone(),
        status,
        ms(record.requested_at_ms),
        ms(updated),
    )
    .with_status_message(status_message(record))
    .with_poll_interval_ms(TASK_POLL_INTERVAL_MS)
}

fn status_message(record: &ApprovalRecord) -> &'static str {
    match (record.outcome.is_some(), record.state) {
        (true, _) => "A person decided and the call was resumed; the result is final.",
        (false, ApprovalState::Pending) => {
            "The backend holds this call until a person approves or rejects it."
        }
        (false, ApprovalState::Approved) => "Approved; the call is being resumed.",
        (false, ApprovalState::Rejected) => "Rejected; the outcome is being recorded.",
        (false, ApprovalState::Withdrawn) => {
            "Cancelled by the client: the host will not resume this call (the backend's own approval was not withdrawn)."
        }
        (false, ApprovalState::Expired) => {
            "Nobody decided in time; the approval expired and the outcome is being recorded."
        }
    }
}
