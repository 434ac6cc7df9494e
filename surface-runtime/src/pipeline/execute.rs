//! Phases 7 (execute) and 8 (result) of the pipeline: the installed
//! executor (procedures) or the local handler (view capabilities), raced
//! against the registry timeout and the caller's cancellation with no async
//! runtime; then the audit record and the agent's result.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use serde_json::{json, Value};

use super::Ready;
use crate::audit::AuditEvent;
use crate::cancellation::Cancellation;
use crate::executor::{ConfirmationInfo, ExecuteRequest, ExecutionError, ProcedureCallInfo};
use crate::hash::IdDigest;
use crate::invocation::{AgentConsumer, AgentInvocationResult, ErrorCode, Retry};
use crate::registry::{ProcedureEntry, Registered, SurfaceRegistry};
use crate::sync::BoxFuture;

/// The codes an executor or handler may return as they are (what a server
/// or a gateway can decide: authentication, authorization, rate limits,
/// validation, a changed contract, approvals and outcomes); any other —
/// a local confirmation, an ambiguity, a code this version does not
/// know — becomes `EXECUTION_FAILED`. View handlers may also answer
/// [`VIEW_CODES`].
const EXECUTOR_CODES: [ErrorCode; 13] = [
    ErrorCode::CapabilityNotFound,
    ErrorCode::StaleCapability,
    ErrorCode::InvocationConflict,
    ErrorCode::InvalidInput,
    ErrorCode::NotAuthenticated,
    ErrorCode::NotAuthorized,
    ErrorCode::PreconditionFailed,
    ErrorCode::RateLimited,
    ErrorCode::DomainApprovalRequired,
    ErrorCode::DomainOutcomeUnknown,
    ErrorCode::ExecutionFailed,
    ErrorCode::Timeout,
    ErrorCode::Cancelled,
];

/// The further codes a view capability's handler may return as they are.
const VIEW_CODES: [ErrorCode; 2] = [
    ErrorCode::ComponentUnmounted,
    ErrorCode::CapabilityNotAvailable,
];

/// How the race of an execution ended.
enum Raced {
    Done(Result<Value, ExecutionError>),
    Timeout,
    Cancelled,
}

impl SurfaceRegistry {
    /// Phases 7 and 8 for a call that passed phases 1–6.
    pub(super) async fn execute(
        &self,
        ready: Ready,
        consumer: &AgentConsumer,
        caller: Option<&Cancellation>,
    ) -> AgentInvocationResult {
        let Ready {
            key,
            signal,
            invocation_id,
            capability_id,
            admitted_version,
            target,
            executor,
            input,
            confirmation,
        } = ready;
        let call = Settled {
            key,
            signal,
            invocation_id,
            capability_id,
            admitted_version,
            confirmation_id: confirmation.as_ref().map(|c| c.id.clone()),
        };
        // The executor's signal; fired when this future is dropped mid-call
        // (a browser session aborting a call at disconnect drops it).
        let abandoned = CancelOnDrop(&call.signal, true);
        let timeout = self.timeout();
        // In a concurrency group, whether the call's turn came (`false`:
        // it timed out or was cancelled while waiting, and nothing ran).
        let began = Arc::new(AtomicBool::new(target.concurrency_group().is_none()));
        let raced = match &target {
            Registered::Procedure(p) => {
                let Some(executor) = executor else {
                    abandoned.disarm();
                    return self.result(call, &target, Err(no_executor()));
                };
                let request = procedure_request(p, &call, consumer, input, confirmation);
                // In a concurrency group the executor is not even asked
                // until the call's turn; the wait is part of the race, so
                // the timeout and the caller's cancellation bound it too.
                let work: BoxFuture<'_, _> = match target.concurrency_group().cloned() {
                    None => executor.execute(request),
                    Some(group) => {
                        let began = began.clone();
                        Box::pin(async move {
                            let _turn = self.concurrency().enter(&group).await;
                            began.store(true, Ordering::SeqCst);
                            executor.execute(request).await
                        })
                    }
                };
                race(work, timeout, caller).await
            }
            Registered::View(c, i) => {
                let handler = c.views[*i].handler.clone();
                let work: BoxFuture<'_, _> = match target.concurrency_group().cloned() {
                    None => handler(input),
                    Some(group) => {
                        let began = began.clone();
                        Box::pin(async move {
                            let _turn = self.concurrency().enter(&group).await;
                            began.store(true, Ordering::SeqCst);
                            handler(input).await
                        })
                    }
                };
                race(work, timeout, caller).await
            }
        };
        let outcome = match raced {
            Raced::Timeout | Raced::Cancelled if !began.load(Ordering::SeqCst) => {
                Err(never_began(&raced, self.settings().timeout))
            }
            raced => self.settle(&target, raced, &call.signal),
        };
        abandoned.disarm();
        self.result(call, &target, outcome)
    }

    /// The registry timeout's timer, when there is one.
    fn timeout(&self) -> Option<BoxFuture<'static, ()>> {
        match (&self.settings().timer, self.settings().timeout) {
            (Some(timer), Some(t)) => Some(timer.sleep(t)),
            _ => None,
        }
    }

    /// The outcome of a race: the output, a sanitized executor error, or
    /// `TIMEOUT` / `CANCELLED` (firing the executor's cancellation).
    fn settle(
        &self,
        target: &Registered,
        raced: Raced,
        cancellation: &Cancellation,
    ) -> Result<Value, ExecutionError> {
        match raced {
            Raced::Done(done) => done.map_err(|e| sanitize(target, e)),
            Raced::Timeout => {
                cancellation.cancel();
                // The original's answer: retry `yes` only for an idempotent
                // capability, which the message says is safe to repeat.
                let idempotent = target.idempotent();
                let (message, retry) = if idempotent {
                    (
                        "The capability timed out. It is idempotent; retrying with a new invocationId is safe.",
                        Retry::Yes,
                    )
                } else {
                    (
                        "The capability timed out and side effects may or may not have occurred. Verify state with an observation before repeating.",
                        Retry::No,
                    )
                };
                let ms = self
                    .settings()
                    .timeout
                    .map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
                Err(ExecutionError::new(ErrorCode::Timeout, message, retry)
                    .with_detail("timeoutMs", ms)
                    .with_detail("idempotent", idempotent))
            }
            Raced::Cancelled => {
                cancellation.cancel();
                Err(ExecutionError::new(
                    ErrorCode::Cancelled,
                    "The call was cancelled; it may still have taken effect.",
                    Retry::No,
                ))
            }
        }
    }

    /// Phase 8: the audit record of the execution, then the agent's
    /// result at the surface version it settled at (`surfaceChanged` when
    /// that is not the version it was admitted at), recorded for replay
    /// under the same lock the version is read under. A `Value::Null`
    /// output is a void success: no `output`.
    pub(super) fn result(
        &self,
        call: Settled,
        target: &Registered,
        outcome: Result<Value, ExecutionError>,
    ) -> AgentInvocationResult {
        let Settled {
            key,
            signal,
            invocation_id,
            capability_id,
            admitted_version,
            confirmation_id,
        } = call;
        let outcome = match outcome {
            Ok(output) => {
                self.audit(|| AuditEvent::Executed {
                    invocation_id: invocation_id.clone(),
                    capability_id: target.capability_id().to_string(),
                    registration_id: target.registration_id().to_string(),
                    confirmation_id,
                });
                Ok(output)
            }
            Err(err) => {
                self.audit(|| AuditEvent::ExecutionFailed {
                    invocation_id: invocation_id.clone(),
                    capability_id: target.capability_id().to_string(),
                    registration_id: target.registration_id().to_string(),
                    code: err.code.clone(),
                    internal: err.internal.clone(),
                });
                Err(err.to_agent_error())
            }
        };
        self.record_with(key, signal, |version| {
            let mut result = match outcome {
                Ok(output) => {
                    AgentInvocationResult::ok(invocation_id, capability_id, output, version)
                }
                Err(error) => {
                    AgentInvocationResult::err(invocation_id, capability_id, error, version)
                }
            };
            if version != admitted_version {
                match &mut result {
                    AgentInvocationResult::Ok {
                        surface_changed, ..
                    }
                    | AgentInvocationResult::Error {
                        surface_changed, ..
                    } => *surface_changed = Some(true),
                }
            }
            result
        })
    }
}

/// The identity of a call being settled: what its result echoes.
pub(super) struct Settled {
    /// The admitted invocation id's digest (the result is recorded under it).
    key: IdDigest,
    /// The call's cancellation signal, kept for the next call when nothing
    /// else holds it.
    signal: Cancellation,
    invocation_id: String,
    capability_id: String,
    admitted_version: u64,
    confirmation_id: Option<String>,
}

fn no_executor() -> ExecutionError {
    ExecutionError::new(
        ErrorCode::ExecutionFailed,
        "The application cannot run procedures right now.",
        Retry::No,
    )
    .with_internal("no procedure executor installed")
}

/// An executor error as the agent may see it: an allowed code passes, any
/// other becomes `EXECUTION_FAILED` with the original kept for audit; then
/// the error is brought within agent-surface's error matrix (details the
/// matrix does not allow for the code go to audit only, a retry it does
/// not allow becomes the closest one it does: `docs/errors.md`).
fn sanitize(target: &Registered, e: ExecutionError) -> ExecutionError {
    let is_view = matches!(target, Registered::View(..));
    if !(EXECUTOR_CODES.contains(&e.code) || (is_view && VIEW_CODES.contains(&e.code))) {
        let internal = json!({"code": e.code, "message": e.message, "internal": e.internal});
        return ExecutionError::new(ErrorCode::ExecutionFailed, "The call failed.", Retry::No)
            .with_internal(internal);
    }
    e.within_matrix()
}

/// The executor's signal, cancelled if the call's future is dropped while
/// armed (before the executor finished); [`CancelOnDrop::disarm`] once it
/// did.
struct CancelOnDrop<'a>(&'a Cancellation, bool);

impl CancelOnDrop<'_> {
    fn disarm(mut self) {
        self.1 = false;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.cancel();
        }
    }
}

/// The request of procedure call `call` to its executor.
fn procedure_request(
    p: &ProcedureEntry,
    call: &Settled,
    consumer: &AgentConsumer,
    input: Value,
    confirmation: Option<ConfirmationInfo>,
) -> ExecuteRequest {
    ExecuteRequest {
        path: p.path.clone(),
        capability_id: p.capability_id.clone(),
        contract_digest: p.contract_digest.clone(),
        input,
        info: ProcedureCallInfo {
            invocation_id: Arc::from(call.invocation_id.as_str()),
            consumer: consumer.clone(),
            cancellation: call.signal.clone(),
            confirmation,
        },
    }
}

/// A call that timed out or was cancelled while it waited for its
/// concurrency group's turn: nothing ran, so it may be repeated
/// (`details.reason: "concurrency-group-wait"`).
fn never_began(raced: &Raced, timeout: Option<std::time::Duration>) -> ExecutionError {
    let error = if matches!(raced, Raced::Timeout) {
        let ms = timeout.map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        ExecutionError::new(
            ErrorCode::Timeout,
            "The call timed out waiting for another call on the same component to finish; it never started, so nothing ran. Retrying with a new invocationId is safe.",
            Retry::Yes,
        )
        .with_detail("timeoutMs", ms)
    } else {
        ExecutionError::new(
            ErrorCode::Cancelled,
            "The call was cancelled while it waited for another call on the same component to finish; it never started, so nothing ran.",
            Retry::No,
        )
    };
    error.with_detail("reason", "concurrency-group-wait")
}

/// Races the execution against the timeout and the caller's cancellation,
/// with no async runtime.
async fn race(
    mut work: BoxFuture<'_, Result<Value, ExecutionError>>,
    mut timeout: Option<BoxFuture<'static, ()>>,
    caller: Option<&Cancellation>,
) -> Raced {
    if caller.is_some_and(Cancellation::is_cancelled) {
        return Raced::Cancelled;
    }
    if timeout.is_none() && caller.is_none() {
        return Raced::Done(work.await);
    }
    let mut cancelled = caller.map(Cancellation::cancelled);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(result) = work.as_mut().poll(cx) {
            return Poll::Ready(Raced::Done(result));
        }
        if let Some(t) = timeout.as_mut() {
            if t.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Raced::Timeout);
            }
        }
        if let Some(c) = cancelled.as_mut() {
            if Pin::new(c).poll(cx).is_ready() {
                return Poll::Ready(Raced::Cancelled);
            }
        }
        Poll::Pending
    })
    .await
}
