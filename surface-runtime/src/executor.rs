//! The procedure executor seam (`docs/pipeline.md`, "Execution"): the registry
//! calls the installed [`AgentProcedureExecutor`] with the validated
//! effective input; the oRPC bridges implement it.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::cancellation::Cancellation;
use crate::invocation::{AgentConsumer, AgentError, ErrorCode, Retry};
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// Call context handed to the executor
/// Cheap to clone: the strings are shared (`Arc<str>`).
#[derive(Clone, Debug)]
pub struct ProcedureCallInfo {
    /// The invocation id of the agent call.
    pub invocation_id: Arc<str>,
    /// Who invoked.
    pub consumer: AgentConsumer,
    /// Fires on registry timeout or caller cancellation; executors should
    /// stop waiting (an action already started may still take effect).
    pub cancellation: Cancellation,
    /// Present when the call passed a local confirmation.
    pub confirmation: Option<ConfirmationInfo>,
}

/// The local confirmation a call passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfirmationInfo {
    /// The confirmation id.
    pub id: String,
    /// When the application approved, milliseconds since the Unix epoch.
    pub approved_at_ms: u64,
}

/// One execution request. The strings are shared with the registration
/// (`Arc<str>`), so building a request allocates nothing but the input.
#[derive(Clone, Debug)]
pub struct ExecuteRequest {
    /// Dotted router path (`devices.disable`).
    pub path: Arc<str>,
    /// Canonical capability id (manifest override or `"domain:" + path`).
    pub capability_id: Arc<str>,
    /// The manifest's contract digest, if any (governed calls send it).
    pub contract_digest: Option<Arc<str>>,
    /// The effective input, already validated against the full manifest
    /// schema (binding rule 5, `docs/bindings.md`).
    pub input: Value,
    /// Call context.
    pub info: ProcedureCallInfo,
}

/// Why an execution failed, as the executor reports it. `code` must be one
/// of the execution-phase codes (`NOT_AUTHORIZED`,
/// `DOMAIN_APPROVAL_REQUIRED`, `DOMAIN_OUTCOME_UNKNOWN`, `EXECUTION_FAILED`,
/// `TIMEOUT`, `CANCELLED`, `PRECONDITION_FAILED`); the registry turns any
/// other code into `EXECUTION_FAILED`. `message` reaches the agent and must
/// be safe; `internal` (server text, transport errors) goes to audit and
/// tracing only.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ExecutionError {
    /// Agent-facing code.
    pub code: ErrorCode,
    /// Safe, agent-facing message.
    pub message: String,
    /// Retry advice.
    pub retry: Retry,
    /// Agent-facing details (`approvalId`, `invocationId`, …).
    pub details: Map<String, Value>,
    /// Full error for audit/logs only; never sent to the agent.
    pub internal: Option<Value>,
}

impl ExecutionError {
    /// An error with no details and no internal record.
    pub fn new(code: ErrorCode, message: impl Into<String>, retry: Retry) -> Self {
        let AgentError {
            code,
            message,
            retry,
            details,
        } = AgentError::new(code, message, retry);
        Self {
            code,
            message,
            retry,
            details,
            internal: None,
        }
    }
    /// Adds an agent-facing detail.
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details.insert(key.into(), value.into());
        self
    }
    /// Attaches the internal (audit-only) record.
    pub fn with_internal(mut self, internal: impl Into<Value>) -> Self {
        self.internal = Some(internal.into());
        self
    }
    /// This error within agent-surface's error matrix
    /// ([`AgentError::within_matrix`]): details the matrix does not allow
    /// for the code move to the internal record (`droppedDetails`), a retry
    /// it does not allow becomes the closest one it does (the original in
    /// `originalRetry`); an internal record that is not an object is kept
    /// under `record`. The registry applies it to every executor error;
    /// bridges apply it to what they build.
    pub fn within_matrix(self) -> Self {
        let (agent, dropped) = self.to_agent_error().within_matrix();
        if dropped.is_empty() && agent.retry == self.retry {
            return self;
        }
        let mut record = match self.internal {
            Some(Value::Object(record)) => record,
            None => Map::new(),
            Some(other) => Map::from_iter([("record".to_string(), other)]),
        };
        if !dropped.is_empty() {
            record.insert("droppedDetails".into(), Value::Object(dropped));
        }
        if agent.retry != self.retry {
            record.insert("originalRetry".into(), serde_json::json!(self.retry));
        }
        let internal = Value::Object(record);
        Self {
            code: agent.code,
            message: agent.message,
            retry: agent.retry,
            details: agent.details,
            internal: Some(internal),
        }
    }

    /// The agent-facing part.
    pub fn to_agent_error(&self) -> AgentError {
        AgentError {
            code: self.code.clone(),
            message: self.message.clone(),
            retry: self.retry,
            details: self.details.clone(),
        }
    }
}

/// Executes domain procedures for the registry . Install one with
/// `SurfaceRegistry::set_procedure_executor`.
///
/// The returned future is `Send` on native targets and not on `wasm32`.
pub trait AgentProcedureExecutor: MaybeSend + MaybeSync {
    /// Runs one call and returns its output JSON.
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>>;
}

/// An [`AgentProcedureExecutor`] that runs an async closure
/// ([`executor_fn`]).
#[derive(Clone)]
pub struct FnExecutor<F>(F);

impl<F> std::fmt::Debug for FnExecutor<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnExecutor")
    }
}

/// An executor from an async closure (`docs/bridges.md`, "Your own
/// executor"): `f` gets each validated call (its path, capability id,
/// effective input and [`ProcedureCallInfo`]) and answers the output JSON
/// or an [`ExecutionError`] — for a backend the oRPC bridges do not speak
/// (an in-process service, another RPC stack, a test double).
///
/// ```
/// use serde_json::json;
/// use surface_runtime::{executor_fn, ErrorCode, ExecutionError, Retry};
///
/// let executor = executor_fn(|request| async move {
///     match &*request.path {
///         "devices.disable" => Ok(json!({"disabled": request.input["deviceIds"]})),
///         _ => Err(ExecutionError::new(ErrorCode::ExecutionFailed, "Not available here.", Retry::No)),
///     }
/// });
/// # let _: &dyn surface_runtime::AgentProcedureExecutor = &executor;
/// ```
///
/// The future is `Send` on native targets (not required on `wasm32`).
pub fn executor_fn<F, Fut>(f: F) -> FnExecutor<F>
where
    F: Fn(ExecuteRequest) -> Fut + MaybeSend + MaybeSync,
    Fut: std::future::Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
{
    FnExecutor(f)
}

impl<F, Fut> AgentProcedureExecutor for FnExecutor<F>
where
    F: Fn(ExecuteRequest) -> Fut + MaybeSend + MaybeSync,
    Fut: std::future::Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
{
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin((self.0)(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(path: &str, input: Value) -> ExecuteRequest {
        ExecuteRequest {
            path: path.into(),
            capability_id: format!("domain:{path}").into(),
            contract_digest: None,
            input,
            info: ProcedureCallInfo {
                invocation_id: "inv-1".into(),
                consumer: AgentConsumer::embedded("u1"),
                cancellation: Cancellation::new(),
                confirmation: None,
            },
        }
    }

    #[test]
    fn an_executor_from_a_closure_answers_each_call_with_what_the_closure_returns() {
        let executor = executor_fn(|request: ExecuteRequest| async move {
            match &*request.path {
                "devices.disable" => Ok(json!({
                    "disabled": request.input["deviceIds"],
                    "invocation": &*request.info.invocation_id,
                })),
                _ => Err(ExecutionError::new(
                    ErrorCode::ExecutionFailed,
                    "Not served here.",
                    Retry::No,
                )),
            }
        });
        let executor: &dyn AgentProcedureExecutor = &executor;
        let done =
            block_on(executor.execute(request("devices.disable", json!({"deviceIds": ["d1"]}))));
        assert_eq!(done, Ok(json!({"disabled": ["d1"], "invocation": "inv-1"})));
        let refused = block_on(executor.execute(request("devices.purge", json!({}))));
        assert_eq!(
            refused,
            Err(ExecutionError::new(
                ErrorCode::ExecutionFailed,
                "Not served here.",
                Retry::No
            ))
        );
    }

    /// Polls `future` to completion on this thread (it never waits: the
    /// closure's futures are ready at once).
    fn block_on<T>(future: BoxFuture<'_, T>) -> T {
        let mut future = future;
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(value) => value,
            std::task::Poll::Pending => panic!("the closure's future is ready at once"),
        }
    }
}
