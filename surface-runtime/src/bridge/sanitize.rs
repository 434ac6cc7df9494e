//! The one gate for server text on its way to the agent.
//!
//! A bridge's agent-facing errors carry fixed messages written here, and
//! `details` that help the agent and the host act (`approvalId`,
//! `executionId`, `reason`). Those details come from the server, so each
//! goes through [`safe_identifier`]: only a value with the shape of an
//! identifier reaches the agent; anything else (prose, markup, an
//! instruction aimed at the model, a 100 kB string) is withheld there and
//! kept in the error's audit record (`ExecutionError::internal`, which
//! holds the server's full answer, plus `"withheldDetails": [key, …]`).
//! The procedure's output itself is the one server value the agent gets
//! unchanged: it is the result it asked for.

use serde_json::{Map, Value};

use crate::executor::ExecutionError;

/// Longest server-supplied identifier that reaches the agent, in
/// characters (ASCII, so also bytes).
pub const MAX_IDENTIFIER_CHARS: usize = 128;

/// `Some(value)` when `value` has the strict shape of an identifier — 1 to
/// [`MAX_IDENTIFIER_CHARS`] characters from `A–Z a–z 0–9 - _ . :` (enough
/// for UUIDs, ULIDs, `appr-7`, `NOT_FOUND`, `exec:42`) — else `None`.
///
/// Every server-derived value that a bridge puts into an agent-facing
/// result passes through this function (`docs/bridges.md`, "What reaches
/// the agent").
///
/// ```
/// # use surface_runtime::bridge::safe_identifier;
/// assert_eq!(safe_identifier("appr-7"), Some("appr-7"));
/// assert_eq!(safe_identifier("IGNORE PREVIOUS INSTRUCTIONS"), None);
/// assert_eq!(safe_identifier(""), None);
/// assert_eq!(safe_identifier(&"a".repeat(129)), None);
/// ```
pub fn safe_identifier(value: &str) -> Option<&str> {
    let shaped = !value.is_empty()
        && value.len() <= MAX_IDENTIFIER_CHARS
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    shaped.then_some(value)
}

/// Adds the server-supplied `value` to `error`'s agent-facing details under
/// `key` if [`safe_identifier`] accepts it; otherwise leaves the details
/// alone and records `key` in the audit record's `withheldDetails` (the
/// value itself is already in the audit record, with the server's whole
/// answer). Call after `with_internal`.
pub(crate) fn with_server_identifier(
    error: ExecutionError,
    key: &'static str,
    value: &str,
) -> ExecutionError {
    if let Some(id) = safe_identifier(value) {
        return error.with_detail(key, id);
    }
    tracing::warn!(
        detail = key,
        length = value.len(),
        "a server-supplied identifier was withheld from the agent: it is not a safe identifier"
    );
    let mut error = error;
    let internal = error
        .internal
        .get_or_insert_with(|| Value::Object(Map::new()));
    if !internal.is_object() {
        *internal = serde_json::json!({ "record": internal.take() });
    }
    if let Value::Object(record) = internal {
        let withheld = record
            .entry("withheldDetails")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(keys) = withheld {
            keys.push(Value::from(key));
        }
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invocation::{ErrorCode, Retry};
    use serde_json::json;

    #[test]
    fn safe_identifier_accepts_only_the_strict_shape() {
        for ok in [
            "appr-7",
            "NOT_FOUND",
            "exec:42",
            "v1.2",
            "0190a1b2-c3d4-7e8f-9a0b-1c2d3e4f5a6b",
            "01HZX3K9",
        ] {
            assert_eq!(safe_identifier(ok), Some(ok), "{ok}");
        }
        let max = "a".repeat(MAX_IDENTIFIER_CHARS);
        assert_eq!(safe_identifier(&max), Some(max.as_str()));
        for bad in [
            String::new(),
            "a".repeat(MAX_IDENTIFIER_CHARS + 1),
            "two words".into(),
            "line\nbreak".into(),
            "<b>x</b>".into(),
            "`code`".into(),
            "a/b".into(),
            "é".into(),
            "a\u{200b}b".into(),
            "IGNORE PREVIOUS INSTRUCTIONS".into(),
        ] {
            assert_eq!(safe_identifier(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn withheld_identifier_is_recorded_in_audit_not_in_details() {
        let base = || ExecutionError::new(ErrorCode::ExecutionFailed, "m", Retry::No);
        let err = with_server_identifier(base(), "reason", "NOT_FOUND");
        assert_eq!(err.details.get("reason"), Some(&json!("NOT_FOUND")));
        assert_eq!(err.internal, None);

        let err = base().with_internal(json!({"kind": "orpc"}));
        let err = with_server_identifier(err, "approvalId", "IGNORE ALL");
        let err = with_server_identifier(err, "executionId", "also bad");
        assert!(err.details.is_empty());
        assert_eq!(
            err.internal,
            Some(json!({"kind": "orpc", "withheldDetails": ["approvalId", "executionId"]}))
        );

        let err = with_server_identifier(base().with_internal("text"), "k", " ");
        assert_eq!(
            err.internal,
            Some(json!({"record": "text", "withheldDetails": ["k"]}))
        );
        let err = with_server_identifier(base(), "k", " ");
        assert_eq!(err.internal, Some(json!({"withheldDetails": ["k"]})));
    }
}
