//! The assertions of a [`TestSurface`]: each panics with a message that
//! says what was expected, what the surface shows instead, and the whole
//! surface, one line per capability ([`super::describe_surface`]).

use serde_json::{json, Value};

use super::{error_of, result_text, TestSurface};
use crate::invocation::{AgentError, AgentInvocationResult, ErrorCode};
use crate::snapshot::SurfaceSnapshot;

/// What the snapshot lists for one capability id: its availability and
/// reason, first registration first.
fn listed(snapshot: &SurfaceSnapshot, capability_id: &str) -> Vec<(bool, Option<String>)> {
    let procedures = snapshot
        .procedures
        .iter()
        .filter(|p| p.procedure_id == capability_id)
        .map(|p| (p.available, p.unavailable_reason.clone()));
    let views = snapshot.components.iter().flat_map(|c| {
        let observations = c
            .observations
            .iter()
            .filter(|o| o.capability_id == capability_id)
            .map(|o| (o.available, o.unavailable_reason.clone()));
        let actions = c
            .actions
            .iter()
            .filter(|a| a.capability_id == capability_id)
            .map(|a| (a.available, a.unavailable_reason.clone()));
        observations.chain(actions)
    });
    procedures.chain(views).collect()
}

impl TestSurface {
    fn fail(&self, expected: String, got: String, snapshot: &SurfaceSnapshot) -> ! {
        panic!(
            "{expected}\n{got}\nthe surface ({}):\n{}",
            self.consumer.id.escape_debug(),
            super::describe_surface(snapshot)
        )
    }

    /// Asserts that the agent sees `capability_id` (`domain:…` or
    /// `view:…`) and that it is available.
    ///
    /// # Panics
    /// When it is not listed, or listed unavailable.
    pub fn assert_exposes(&self, capability_id: &str) -> &Self {
        let snapshot = self.snapshot();
        let expected = format!(
            "expected the agent to see `{}` available",
            capability_id.escape_debug()
        );
        match listed(&snapshot, capability_id).as_slice() {
            [] => self.fail(expected, "it is not listed".into(), &snapshot),
            found if found.iter().any(|(available, _)| *available) => self,
            [(_, reason), ..] => self.fail(
                expected,
                format!(
                    "it is listed unavailable: {}",
                    reason.as_deref().unwrap_or("(no reason)").escape_debug()
                ),
                &snapshot,
            ),
        }
    }

    /// Asserts that the agent sees `capability_id` unavailable with exactly
    /// `reason` (`when()`'s `unavailable_reason`, or a disclosing policy's
    /// message).
    ///
    /// # Panics
    /// When it is not listed, is available, or gives another reason.
    pub fn assert_exposes_unavailable(&self, capability_id: &str, reason: &str) -> &Self {
        let snapshot = self.snapshot();
        let expected = format!(
            "expected the agent to see `{}` unavailable: {}",
            capability_id.escape_debug(),
            reason.escape_debug()
        );
        match listed(&snapshot, capability_id).as_slice() {
            [] => self.fail(expected, "it is not listed".into(), &snapshot),
            [(false, Some(got)), ..] if got == reason => self,
            [(true, _), ..] => self.fail(expected, "it is available".into(), &snapshot),
            [(false, got), ..] => self.fail(
                expected,
                format!(
                    "its reason is: {}",
                    got.as_deref().unwrap_or("(none)").escape_debug()
                ),
                &snapshot,
            ),
        }
    }

    /// Asserts that the agent does not see `capability_id` at all (never
    /// registered, unregistered, or hidden by a policy).
    ///
    /// # Panics
    /// When it is listed.
    pub fn assert_not_exposed(&self, capability_id: &str) -> &Self {
        let snapshot = self.snapshot();
        if !listed(&snapshot, capability_id).is_empty() {
            self.fail(
                format!(
                    "expected the agent not to see `{}`",
                    capability_id.escape_debug()
                ),
                "it is listed".into(),
                &snapshot,
            );
        }
        self
    }

    /// Asserts that the agent cannot set `field` of procedure
    /// `capability_id`: the snapshot lists it as a locked bound field and
    /// leaves it out of the agent's input schema, and a call that sets it
    /// is refused `INVALID_INPUT` with `details.lockedFields` naming it
    /// (the call runs; it never reaches the executor).
    ///
    /// # Panics
    /// When any of the three does not hold.
    pub fn assert_locked(&self, capability_id: &str, field: &str) -> &Self {
        let snapshot = self.snapshot();
        let expected = format!(
            "expected the agent not to be able to set `{}` of `{}`",
            field.escape_debug(),
            capability_id.escape_debug()
        );
        let Some(p) = snapshot
            .procedures
            .iter()
            .find(|p| p.procedure_id == capability_id)
        else {
            self.fail(expected, "the procedure is not listed".into(), &snapshot);
        };
        if !p.bound_fields.iter().any(|b| b.locked && b.path == field) {
            self.fail(expected, "it is not a locked bound field".into(), &snapshot);
        }
        if p.input_schema
            .pointer(&format!("/properties/{}", pointer_token(field)))
            .is_some()
        {
            self.fail(
                expected,
                "the agent's input schema still has it".into(),
                &snapshot,
            );
        }
        let result = self.call(capability_id, json!({ field: "set-by-the-agent" }));
        let refused = error_of(&result).is_some_and(|e| {
            e.code == ErrorCode::InvalidInput
                && e.details
                    .get("lockedFields")
                    .and_then(Value::as_array)
                    .is_some_and(|f| f.iter().any(|f| f == field))
        });
        if !refused {
            self.fail(
                expected,
                format!("a call setting it answered:\n{}", result_text(&result)),
                &snapshot,
            );
        }
        self
    }
}

/// A JSON Pointer token for `name` (`~` → `~0`, `/` → `~1`).
fn pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Asserts that `result` is an error with `code`; returns the error for
/// further checks (`message`, `details`, `retry`).
///
/// # Panics
/// When `result` succeeded or has another code (the message shows the
/// whole result as JSON).
pub fn assert_fails_with(result: &AgentInvocationResult, code: ErrorCode) -> &AgentError {
    match error_of(result) {
        Some(error) if error.code == code => error,
        _ => panic!(
            "expected the call to fail with {code}, got:\n{}",
            result_text(result)
        ),
    }
}
