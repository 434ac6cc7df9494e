//! Results recorded by versions before protocol 1 as the originals emit it
//! (`docs/host.md`, "Rows from earlier versions"), read in today's shape.
//!
//! `host_calls.result` and `host_approvals.outcome` hold the JSON of a
//! result as it was recorded. Earlier versions wrote
//! `{"status":"success","invocationId","output"}` and
//! `{"status":"error","invocationId","error"}` — no `capabilityId`, no
//! `surfaceVersion`, the codes `UNKNOWN_CAPABILITY`, `UNAVAILABLE`,
//! `POLICY_DENIED`, the retry value `after-confirmation` and details that
//! have since been renamed. A row in that shape is rewritten here, when it
//! is read, into what this version would have recorded for the same
//! outcome, so every reader (the host, the approver page, the run reading
//! its approvals) sees one shape; the row itself is left as written. The
//! wire types accept only today's shape: this is the one place that reads
//! the old one. Rows in today's shape, `rejected` outcomes (unchanged) and
//! text that is not a JSON object pass through untouched.
//!
//! What the old shape did not record is filled in: `capabilityId` is the
//! row's capability column, `surfaceVersion` is
//! [`LEGACY_SURFACE_VERSION`] (`"0"`: not recorded).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Map, Value};
use surface_runtime::clock::iso_8601;
use surface_runtime::AgentInvocationResult;

/// The `surfaceVersion` given to a result recorded before results carried
/// one: `0` (`"0"` on the wire), "not recorded".
pub const LEGACY_SURFACE_VERSION: u64 = 0;

/// `json` in today's result shape: rewritten when it is an earlier
/// version's result (`capability_id`: the row's capability column), else
/// as it is.
pub(crate) fn result_json<'a>(json: &'a str, capability_id: &str) -> Cow<'a, str> {
    // Today's results always carry a top-level `surfaceVersion`; earlier
    // ones never did.
    let Ok(Value::Object(result)) = serde_json::from_str::<Value>(json) else {
        return Cow::Borrowed(json);
    };
    if result.contains_key("surfaceVersion") {
        return Cow::Borrowed(json);
    }
    let Some(upgraded) = upgrade(result, capability_id) else {
        return Cow::Borrowed(json);
    };
    // Written as this version writes a result (its field order), when it
    // reads as one; else as rewritten, for the reader to refuse.
    // An error is brought within the originals' matrix as this version
    // records it: details the code does not allow are not shown (the row
    // keeps them), a retry it does not allow becomes the closest one.
    let upgraded = Value::Object(upgraded);
    let text = match AgentInvocationResult::deserialize(&upgraded) {
        Ok(AgentInvocationResult::Error {
            invocation_id,
            capability_id,
            error,
            surface_version,
            surface_changed,
        }) => serde_json::to_string(&AgentInvocationResult::Error {
            invocation_id,
            capability_id,
            error: error.within_matrix().0,
            surface_version,
            surface_changed,
        })
        .ok(),
        Ok(result) => serde_json::to_string(&result).ok(),
        Err(_) => None,
    };
    Cow::Owned(text.unwrap_or_else(|| upgraded.to_string()))
}

/// An optional column through [`result_json`].
pub(crate) fn result_column(json: Option<String>, capability_id: &str) -> Option<String> {
    json.map(|text| match result_json(&text, capability_id) {
        Cow::Borrowed(_) => text,
        Cow::Owned(upgraded) => upgraded,
    })
}

/// The result in today's shape, or `None` when `result` is not an earlier
/// version's `success`/`error` result.
fn upgrade(mut result: Map<String, Value>, capability_id: &str) -> Option<Map<String, Value>> {
    let status = result.get("status")?.as_str()?.to_string();
    let invocation_id = result.remove("invocationId")?;
    let mut out = Map::new();
    match status.as_str() {
        "success" => {
            out.insert("status".into(), json!("ok"));
            out.insert("invocationId".into(), invocation_id);
            out.insert("capabilityId".into(), json!(capability_id));
            // `null` meant "no output"; today it is left out.
            match result.remove("output") {
                None | Some(Value::Null) => {}
                Some(output) => {
                    out.insert("output".into(), output);
                }
            }
        }
        "error" => {
            let Some(Value::Object(error)) = result.remove("error") else {
                return None;
            };
            out.insert("status".into(), json!("error"));
            out.insert("invocationId".into(), invocation_id);
            out.insert("capabilityId".into(), json!(capability_id));
            out.insert("error".into(), Value::Object(upgrade_error(error)));
        }
        _ => return None,
    }
    out.insert(
        "surfaceVersion".into(),
        json!(LEGACY_SURFACE_VERSION.to_string()),
    );
    Some(out)
}

/// An earlier version's `AgentError` JSON in today's codes, retry values
/// and details (the message is kept: it is what the agent was told).
fn upgrade_error(mut error: Map<String, Value>) -> Map<String, Value> {
    let mut details = match error.remove("details") {
        Some(Value::Object(details)) => details,
        _ => Map::new(),
    };
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut retry = error
        .get("retry")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if retry == "after-confirmation" {
        retry = "with-confirmation".into();
    }
    let code = match code.as_str() {
        "UNKNOWN_CAPABILITY" => "CAPABILITY_NOT_FOUND".to_string(),
        "UNAVAILABLE" => {
            rename(&mut details, "unavailableReason", "reason");
            "CAPABILITY_NOT_AVAILABLE".to_string()
        }
        "POLICY_DENIED" => {
            details.entry("origin").or_insert_with(|| json!("client"));
            "NOT_AUTHORIZED".to_string()
        }
        "STALE_CAPABILITY" => {
            let version_moved = details.remove("currentSurfaceVersion").is_some();
            if !details.contains_key("reason") {
                let reason = if version_moved {
                    "surface-version-mismatch"
                } else {
                    "registration-replaced"
                };
                details.insert("reason".into(), json!(reason));
            }
            code
        }
        "INVALID_INPUT" => {
            details.remove("errorsTruncated");
            if let Some(Value::Array(errors)) = details.remove("errors") {
                let issues: Vec<Value> = errors.iter().map(issue).collect();
                details.insert("issues".into(), Value::Array(issues));
            }
            code
        }
        "PRECONDITION_FAILED" => precondition(&mut details, &mut retry),
        "CONFIRMATION_REQUIRED" => {
            confirmation_required(&mut details);
            code
        }
        "CONFIRMATION_INVALID" => {
            confirmation_invalid(&mut details, &mut retry);
            code
        }
        _ => code,
    };
    error.insert("code".into(), json!(code));
    error.insert("retry".into(), json!(retry));
    if !details.is_empty() {
        error.insert("details".into(), Value::Object(details));
    }
    error
}

/// `PRECONDITION_FAILED` as today's registry answers the same refusal: a
/// reused (`id-reused-with-different-request`, the original's reason),
/// running or forgotten invocation id is `INVOCATION_CONFLICT` (retry
/// `with-changes`); the id table's bound and a failed binding stay
/// `PRECONDITION_FAILED`, retry `after-refresh`.
fn precondition(details: &mut Map<String, Value>, retry: &mut String) -> String {
    match details.get("reason").and_then(Value::as_str) {
        Some("invocation-id-reused") => {
            details.insert("reason".into(), json!("id-reused-with-different-request"));
            *retry = "with-changes".into();
            "INVOCATION_CONFLICT".into()
        }
        Some("invocation-in-flight" | "duplicate-invocation") => {
            *retry = "with-changes".into();
            "INVOCATION_CONFLICT".into()
        }
        Some("invocation-ids-exhausted" | "binding-failed") => {
            *retry = "after-refresh".into();
            "PRECONDITION_FAILED".into()
        }
        _ => "PRECONDITION_FAILED".into(),
    }
}

/// `CONFIRMATION_REQUIRED`'s details as today's: `summary` the text
/// `"<description> — input: <input as compact JSON>"` (it was an object),
/// `expiresAt` an ISO 8601 string (it was `expiresAtMs`), `effect` and
/// `origin: "client"`.
fn confirmation_required(details: &mut Map<String, Value>) {
    let mut effect = None;
    if let Some(Value::Object(summary)) = details.get("summary") {
        effect = summary.get("effect").cloned();
        let description = summary
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let input = summary.get("input").cloned().unwrap_or(Value::Null);
        let text = format!("{description} — input: {input}");
        details.insert("summary".into(), json!(text));
    }
    if let Some(ms) = details.remove("expiresAtMs") {
        match ms.as_u64() {
            Some(ms) => details.insert("expiresAt".into(), json!(iso_8601(ms))),
            None => details.insert("expiresAtMs".into(), ms),
        };
    }
    if let Some(effect) = effect {
        details.entry("effect").or_insert(effect);
    }
    details.entry("origin").or_insert_with(|| json!("client"));
}

/// `CONFIRMATION_INVALID`'s reasons as today's: `rejected` is `denied`;
/// `different-call`, `not-approved-or-used` (it did not say which) and
/// `bad-signature` (no signed evidence any more) are `mismatch`; all of
/// them retry `no`. `expired` keeps its reason and retries
/// `with-confirmation`.
fn confirmation_invalid(details: &mut Map<String, Value>, retry: &mut String) {
    let reason = match details.get("reason").and_then(Value::as_str) {
        Some("rejected") => "denied",
        Some("different-call" | "not-approved-or-used" | "bad-signature") => "mismatch",
        Some("expired") => {
            *retry = "with-confirmation".into();
            return;
        }
        _ => return,
    };
    details.insert("reason".into(), json!(reason));
    *retry = "no".into();
}

/// One earlier validation error (`{"instancePath","keyword","message"}`)
/// as an issue (`{"path", "message", "keyword"}`, `path` a string as this
/// version writes it: property names joined by `.`, array items as `[i]`,
/// `""` for the input itself). The instance is not recorded, so a segment
/// that is a canonical decimal number is read as an array index.
fn issue(error: &Value) -> Value {
    let pointer = error
        .get("instancePath")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut path = String::new();
    for raw in pointer.split('/').skip(1) {
        let key = raw.replace("~1", "/").replace("~0", "~");
        let index = (key == "0" || !key.starts_with('0'))
            .then(|| key.parse::<u64>().ok())
            .flatten();
        match index {
            Some(i) => path.push_str(&format!("[{i}]")),
            None => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
            }
        }
    }
    let message = error.get("message").cloned().unwrap_or_else(|| json!(""));
    let mut issue = json!({"path": path, "message": message});
    if let Some(keyword) = error.get("keyword").filter(|k| k.is_string()) {
        issue["keyword"] = keyword.clone();
    }
    issue
}

fn rename(details: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = details.remove(from) {
        details.entry(to).or_insert(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(old: Value) -> Value {
        let text = old.to_string();
        let upgraded = result_json(&text, "domain:devices.disable");
        let value: Value = serde_json::from_str(&upgraded).unwrap();
        // Today's reader accepts it.
        serde_json::from_value::<AgentInvocationResult>(value.clone()).unwrap();
        value
    }

    #[test]
    fn the_rewrite_is_written_as_this_version_writes_a_result() {
        let text = r#"{"status":"success","invocationId":"i-1","output":{"n":1}}"#;
        assert_eq!(
            result_json(text, "domain:d.x"),
            r#"{"status":"ok","invocationId":"i-1","capabilityId":"domain:d.x","output":{"n":1},"surfaceVersion":"0"}"#
        );
    }

    #[test]
    fn a_success_gets_its_capability_and_an_unrecorded_version() {
        assert_eq!(
            read(json!({"status": "success", "invocationId": "i-1", "output": {"n": 1}})),
            json!({"status": "ok", "invocationId": "i-1", "capabilityId": "domain:devices.disable",
                   "output": {"n": 1}, "surfaceVersion": "0"})
        );
        assert_eq!(
            read(json!({"status": "success", "invocationId": "i-2", "output": null})),
            json!({"status": "ok", "invocationId": "i-2", "capabilityId": "domain:devices.disable",
                   "surfaceVersion": "0"})
        );
    }

    #[test]
    fn old_codes_retry_values_and_details_are_renamed() {
        let cases = [
            (
                json!({"code": "UNKNOWN_CAPABILITY", "message": "m", "retry": "after-refresh"}),
                json!({"code": "CAPABILITY_NOT_FOUND", "message": "m", "retry": "after-refresh"}),
            ),
            (
                json!({"code": "UNAVAILABLE", "message": "m", "retry": "after-refresh",
                       "details": {"unavailableReason": "nothing selected"}}),
                json!({"code": "CAPABILITY_NOT_AVAILABLE", "message": "m", "retry": "after-refresh",
                       "details": {"reason": "nothing selected"}}),
            ),
            (
                json!({"code": "POLICY_DENIED", "message": "m", "retry": "no", "details": {}}),
                json!({"code": "NOT_AUTHORIZED", "message": "m", "retry": "no",
                       "details": {"origin": "client"}}),
            ),
            (
                json!({"code": "STALE_CAPABILITY", "message": "m", "retry": "after-refresh",
                       "details": {"currentSurfaceVersion": 7}}),
                json!({"code": "STALE_CAPABILITY", "message": "m", "retry": "after-refresh",
                       "details": {"reason": "surface-version-mismatch"}}),
            ),
            (
                json!({"code": "STALE_CAPABILITY", "message": "m", "retry": "after-refresh"}),
                json!({"code": "STALE_CAPABILITY", "message": "m", "retry": "after-refresh",
                       "details": {"reason": "registration-replaced"}}),
            ),
            (
                json!({"code": "INVALID_INPUT", "message": "m", "retry": "with-changes",
                       "details": {"errors": [
                           {"instancePath": "/deviceIds/0", "keyword": "type", "message": "must be string"},
                           {"instancePath": "/a~1b/01", "keyword": "type", "message": "x"}],
                           "errorsTruncated": true}}),
                json!({"code": "INVALID_INPUT", "message": "m", "retry": "with-changes",
                       "details": {"issues": [
                           {"path": "deviceIds[0]", "message": "must be string", "keyword": "type"},
                           {"path": "a/b.01", "message": "x", "keyword": "type"}]}}),
            ),
            (
                json!({"code": "INVALID_INPUT", "message": "m", "retry": "with-changes",
                       "details": {"errors": [{"instancePath": "", "message": "must be object"}]}}),
                json!({"code": "INVALID_INPUT", "message": "m", "retry": "with-changes",
                       "details": {"issues": [{"path": "", "message": "must be object"}]}}),
            ),
            (
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "with-confirmation",
                       "details": {"reason": "different-call", "confirmationId": "c-1"}}),
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "no",
                       "details": {"reason": "mismatch"}}),
            ),
            (
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "with-confirmation",
                       "details": {"reason": "not-approved-or-used"}}),
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "no",
                       "details": {"reason": "mismatch"}}),
            ),
            (
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "with-confirmation",
                       "details": {"reason": "bad-signature"}}),
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "no",
                       "details": {"reason": "mismatch"}}),
            ),
            (
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "with-confirmation",
                       "details": {"reason": "rejected"}}),
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "no",
                       "details": {"reason": "denied"}}),
            ),
            (
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "yes",
                       "details": {"reason": "expired"}}),
                json!({"code": "CONFIRMATION_INVALID", "message": "m", "retry": "with-confirmation",
                       "details": {"reason": "expired"}}),
            ),
            (
                json!({"code": "EXECUTION_FAILED", "message": "m", "retry": "yes",
                       "details": {"reason": "transport", "orpcCode": "SERVER_TEXT"}}),
                json!({"code": "EXECUTION_FAILED", "message": "m", "retry": "after-delay",
                       "details": {"reason": "transport"}}),
            ),
            (
                json!({"code": "PRECONDITION_FAILED", "message": "m", "retry": "no",
                       "details": {"reason": "invocation-id-reused"}}),
                json!({"code": "INVOCATION_CONFLICT", "message": "m", "retry": "with-changes",
                       "details": {"reason": "id-reused-with-different-request"}}),
            ),
            (
                json!({"code": "PRECONDITION_FAILED", "message": "m", "retry": "no",
                       "details": {"reason": "binding-failed"}}),
                json!({"code": "PRECONDITION_FAILED", "message": "m", "retry": "after-refresh",
                       "details": {"reason": "binding-failed"}}),
            ),
            (
                json!({"code": "CONFIRMATION_REQUIRED", "message": "m", "retry": "after-confirmation",
                       "details": {"confirmationId": "c-1", "expiresAtMs": 1_789_257_600_000_u64,
                                   "summary": {"capabilityId": "domain:devices.disable",
                                               "registrationId": "r1", "description": "Disable devices",
                                               "input": {"deviceIds": ["d1"]}, "effect": "server-mutation"}}}),
                json!({"code": "CONFIRMATION_REQUIRED", "message": "m", "retry": "with-confirmation",
                       "details": {"confirmationId": "c-1", "expiresAt": "2026-09-13T00:00:00.000Z",
                                   "summary": "Disable devices — input: {\"deviceIds\":[\"d1\"]}",
                                   "effect": "server-mutation", "origin": "client"}}),
            ),
            (
                json!({"code": "QUOTA_EXCEEDED", "message": "m", "retry": "yes"}),
                json!({"code": "QUOTA_EXCEEDED", "message": "m", "retry": "yes"}),
            ),
        ];
        for (old, new) in cases {
            let read = read(json!({"status": "error", "invocationId": "i-1", "error": old}));
            assert_eq!(
                read,
                json!({"status": "error", "invocationId": "i-1",
                       "capabilityId": "domain:devices.disable", "error": new,
                       "surfaceVersion": "0"})
            );
        }
    }

    #[test]
    fn todays_rows_rejections_and_other_text_pass_untouched() {
        for text in [
            r#"{"status":"ok","invocationId":"i","capabilityId":"c","surfaceVersion":"3"}"#,
            r#"{"status":"rejected","reason":"wrong-session"}"#,
            r#"{"status":"success"}"#,
            r#"[1,2]"#,
            "not json",
            "",
        ] {
            assert!(matches!(result_json(text, "c"), Cow::Borrowed(t) if t == text));
        }
        assert_eq!(result_column(None, "c"), None);
    }
}
