//! [`FakeExecutor`]: the procedure executor of a test surface. It records
//! every call and answers from a table, so a test says what the server
//! would answer without a server.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::executor::{AgentProcedureExecutor, ExecuteRequest, ExecutionError};
use crate::sync::{lock, BoxFuture};

/// One call the fake executor received.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutedCall {
    /// Dotted router path (`devices.disable`).
    pub path: String,
    /// The effective input the server would receive (bound values
    /// included, validated).
    pub input: Value,
    /// The invocation id.
    pub invocation_id: String,
    /// Whether the call ran after a local confirmation.
    pub confirmed: bool,
}

/// A procedure executor for tests: records each call
/// ([`calls`](Self::calls)) and answers what [`respond`](Self::respond) or
/// [`fail`](Self::fail) set for its path; a path with no answer set gets
/// `null`. Answers stay until replaced.
#[derive(Default)]
pub struct FakeExecutor {
    answers: Mutex<HashMap<String, Result<Value, ExecutionError>>>,
    calls: Mutex<Vec<ExecutedCall>>,
}

impl FakeExecutor {
    /// Calls of `path` succeed with `output`.
    pub fn respond(&self, path: &str, output: Value) {
        lock(&self.answers).insert(path.to_string(), Ok(output));
    }

    /// Calls of `path` fail with `error` (as the bridge would map a server
    /// error, e.g. `DOMAIN_APPROVAL_REQUIRED`).
    pub fn fail(&self, path: &str, error: ExecutionError) {
        lock(&self.answers).insert(path.to_string(), Err(error));
    }

    /// Every call so far, oldest first.
    pub fn calls(&self) -> Vec<ExecutedCall> {
        lock(&self.calls).clone()
    }

    /// The calls of one path, oldest first.
    pub fn calls_of(&self, path: &str) -> Vec<ExecutedCall> {
        lock(&self.calls)
            .iter()
            .filter(|c| c.path == path)
            .cloned()
            .collect()
    }
}

impl AgentProcedureExecutor for FakeExecutor {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        lock(&self.calls).push(ExecutedCall {
            path: request.path.to_string(),
            input: request.input.clone(),
            invocation_id: request.info.invocation_id.to_string(),
            confirmed: request.info.confirmation.is_some(),
        });
        let answer = lock(&self.answers)
            .get(&*request.path)
            .cloned()
            .unwrap_or(Ok(Value::Null));
        Box::pin(async move { answer })
    }
}
