//! The invocation wire types (`docs/pipeline.md`): what an agent sends
//! ([`AgentInvocation`]) and what it gets back ([`AgentInvocationResult`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who a snapshot is computed for and who invokes: `{id, kind}`.
/// Cheap to clone (the id is shared).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AgentConsumer {
    /// Application-chosen id (for example the authenticated user id).
    pub id: Arc<str>,
    /// Kind of agent.
    pub kind: ConsumerKind,
}

impl AgentConsumer {
    /// An embedded consumer (sees view capabilities).
    pub fn embedded(id: impl Into<Arc<str>>) -> Self {
        Self {
            id: id.into(),
            kind: ConsumerKind::Embedded,
        }
    }
    /// A headless consumer (sees no view capabilities).
    pub fn headless(id: impl Into<Arc<str>>) -> Self {
        Self {
            id: id.into(),
            kind: ConsumerKind::Headless,
        }
    }
}

/// Kind of consumer; serialized `"embedded"` / `"headless"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsumerKind {
    /// An agent running with a live view: sees view capabilities.
    Embedded,
    /// An agent with no view: sees procedures only.
    Headless,
}

/// One call from the agent (`docs/pipeline.md`). Wire names are camelCase:
/// `invocationId`, `capabilityId`, `registrationId`, `surfaceVersion`,
/// `input`, `instance`, `confirmation`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInvocation {
    /// Unique per call; the registry never executes one id twice. Must
    /// follow [`check_invocation_id`] (1–256 visible ASCII characters).
    pub invocation_id: String,
    /// `"domain:<path>"` (or the manifest's override) or
    /// `"view:<componentType>.<name>"`.
    pub capability_id: String,
    /// The registration the agent saw in its snapshot; required when more
    /// than one reference to the capability is live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_id: Option<String>,
    /// The `surfaceVersion` of the snapshot the agent acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface_version: Option<u64>,
    /// Agent-supplied input (only unlocked fields); defaults to `{}`.
    #[serde(default = "empty_object")]
    pub input: Value,
    /// Component instance id, for view capabilities of multi-instance
    /// components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Confirmation evidence issued by the registry after the application
    /// approved (`docs/pipeline.md`, "Local confirmation").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<ConfirmationEvidence>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl AgentInvocation {
    /// An invocation with empty input and no optional fields.
    pub fn new(invocation_id: impl Into<String>, capability_id: impl Into<String>) -> Self {
        Self {
            invocation_id: invocation_id.into(),
            capability_id: capability_id.into(),
            registration_id: None,
            surface_version: None,
            input: empty_object(),
            instance: None,
            confirmation: None,
        }
    }
}

/// The longest invocation id accepted anywhere in the runtime: 256
/// characters (= bytes, as the id is ASCII). See [`check_invocation_id`].
pub const MAX_INVOCATION_ID_CHARS: usize = 256;

/// The one invocation-id rule of the runtime (docs/limits.md), applied by
/// the registry's admission (`INVALID_INPUT`, `details.reason:
/// "invalid-invocation-id"`), the browser session (`invalid-call`) and
/// `AgentHost::dispatch` (`HostError::InvalidInvocationId`) before an id is
/// recorded or sent anywhere:
///
/// **1 to [`MAX_INVOCATION_ID_CHARS`] (256) visible ASCII characters,
/// `0x21`–`0x7E`** — no space, no control character (CR, LF, TAB, DEL …),
/// nothing outside ASCII.
///
/// Such an id is always a valid HTTP header value (it travels as
/// `x-agent-invocation-id`), needs no escaping in JSON, logs or URLs'
/// query strings once percent-encoded, and is compared byte for byte
/// everywhere. The ids agents and hosts actually use pass: UUIDs
/// (`0b5a…-…`), OpenAI tool call ids (`call_…`), Anthropic ones
/// (`toolu_…`), nanoids (`A-Za-z0-9_-`), MCP JSON-RPC ids (strings, or
/// numbers written as decimal text).
///
/// # Errors
/// [`InvalidInvocationId`] naming the first problem.
pub fn check_invocation_id(id: &str) -> Result<(), InvalidInvocationId> {
    if id.is_empty() {
        return Err(InvalidInvocationId::Empty);
    }
    for (index, byte) in id.bytes().enumerate() {
        if index == MAX_INVOCATION_ID_CHARS {
            return Err(InvalidInvocationId::TooLong { bytes: id.len() });
        }
        if !(0x21..=0x7e).contains(&byte) {
            // `index` is a char boundary: every byte before it is ASCII.
            let character = id[index..].chars().next().unwrap_or('\u{fffd}');
            return Err(InvalidInvocationId::ForbiddenCharacter {
                index,
                code_point: u32::from(character),
            });
        }
    }
    Ok(())
}

/// Why an invocation id breaks the rule of [`check_invocation_id`]. The
/// message describes the problem without repeating the id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum InvalidInvocationId {
    /// The id is the empty string.
    #[error("the invocation id is empty; send 1 to 256 visible ASCII characters (0x21-0x7E), for example a UUID")]
    Empty,
    /// The id is longer than [`MAX_INVOCATION_ID_CHARS`].
    #[error("the invocation id is {bytes} bytes long; at most 256 visible ASCII characters (0x21-0x7E) are accepted")]
    TooLong {
        /// Its length in UTF-8 bytes.
        bytes: usize,
    },
    /// The id has a character outside `0x21`–`0x7E` (a space, a control
    /// character such as CR or LF, DEL, or anything non-ASCII).
    #[error("the invocation id has U+{code_point:04X} at position {index}; only visible ASCII characters 0x21-0x7E are accepted (no spaces, control characters or non-ASCII)")]
    ForbiddenCharacter {
        /// Byte offset (= character index: everything before it is ASCII).
        index: usize,
        /// The offending character's Unicode code point.
        code_point: u32,
    },
}

/// Registry-issued, HMAC-signed proof that the application approved one
/// confirmation. Single-use, expiring, bound to the
/// capability, the registration and a digest of the effective input.
/// Wire names are camelCase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmationEvidence {
    /// The id from the `CONFIRMATION_REQUIRED` error's details.
    pub confirmation_id: String,
    /// Canonical capability id the evidence is bound to.
    pub capability_id: String,
    /// Registration the evidence is bound to.
    pub registration_id: String,
    /// Hex SHA-256 of the canonical effective input it approves.
    pub input_digest: String,
    /// When the application approved, milliseconds since the Unix epoch.
    pub approved_at_ms: u64,
    /// Expiry, milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// Hex HMAC-SHA-256 over the fields above with the registry's secret.
    pub signature: String,
}

/// The outcome of one invocation, serialized as
/// `{"status":"success","invocationId":…,"output":…}` or
/// `{"status":"error","invocationId":…,"error":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum AgentInvocationResult {
    /// The capability ran.
    Success {
        /// Echo of the invocation id.
        #[serde(rename = "invocationId")]
        invocation_id: String,
        /// The handler's or procedure's output (`null` when none).
        output: Value,
    },
    /// The call ended in a pipeline phase or in execution.
    Error {
        /// Echo of the invocation id.
        #[serde(rename = "invocationId")]
        invocation_id: String,
        /// What went wrong.
        error: AgentError,
    },
}

impl AgentInvocationResult {
    /// The invocation id either variant carries.
    pub fn invocation_id(&self) -> &str {
        match self {
            AgentInvocationResult::Success { invocation_id, .. }
            | AgentInvocationResult::Error { invocation_id, .. } => invocation_id,
        }
    }
    /// The error, if the call failed.
    pub fn error(&self) -> Option<&AgentError> {
        match self {
            AgentInvocationResult::Error { error, .. } => Some(error),
            AgentInvocationResult::Success { .. } => None,
        }
    }
}

/// An agent-facing error: `{"code","message","retry","details"}`. The
/// message is always safe to show the model: transport and server text goes
/// to audit/logs only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentError {
    /// Machine-readable code.
    pub code: ErrorCode,
    /// Safe human-readable message.
    pub message: String,
    /// What the agent may do next.
    pub retry: Retry,
    /// Structured details (`lockedFields`, `confirmationId`, `instances`,
    /// `approvalId`, …); `{}` when none.
    #[serde(default)]
    pub details: Map<String, Value>,
}

impl AgentError {
    /// An error with no details.
    pub fn new(code: ErrorCode, message: impl Into<String>, retry: Retry) -> Self {
        Self {
            code,
            message: message.into(),
            retry,
            details: Map::new(),
        }
    }

    /// Adds one detail.
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details.insert(key.into(), value.into());
        self
    }
}

/// Every error code of the pipeline (`docs/pipeline.md`), serialized SCREAMING_SNAKE_CASE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// No live capability or reference with that id.
    UnknownCapability,
    /// The registration is gone, or the surface version moved on for a
    /// destructive/external procedure.
    StaleCapability,
    /// More than one live registration and no `registrationId`.
    AmbiguousInstance,
    /// `when()` is false.
    Unavailable,
    /// A pre-input policy or the server refused authorization.
    NotAuthorized,
    /// A post-input policy denied the call.
    PolicyDenied,
    /// The agent input is invalid (including locked fields).
    InvalidInput,
    /// A precondition failed (`details.reason`, e.g. `binding-failed`).
    PreconditionFailed,
    /// A local confirmation is needed (`details.confirmationId`).
    ConfirmationRequired,
    /// The evidence is forged, expired, used, rejected or for another input.
    ConfirmationInvalid,
    /// The backend requires its own approval (`details.approvalId`).
    DomainApprovalRequired,
    /// The backend may or may not have executed; reconcile by invocation id.
    DomainOutcomeUnknown,
    /// Execution failed (safe message).
    ExecutionFailed,
    /// The registry timeout elapsed.
    Timeout,
    /// The call was cancelled.
    Cancelled,
}

impl ErrorCode {
    /// The wire name (`"UNKNOWN_CAPABILITY"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::UnknownCapability => "UNKNOWN_CAPABILITY",
            ErrorCode::StaleCapability => "STALE_CAPABILITY",
            ErrorCode::AmbiguousInstance => "AMBIGUOUS_INSTANCE",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::NotAuthorized => "NOT_AUTHORIZED",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::InvalidInput => "INVALID_INPUT",
            ErrorCode::PreconditionFailed => "PRECONDITION_FAILED",
            ErrorCode::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            ErrorCode::ConfirmationInvalid => "CONFIRMATION_INVALID",
            ErrorCode::DomainApprovalRequired => "DOMAIN_APPROVAL_REQUIRED",
            ErrorCode::DomainOutcomeUnknown => "DOMAIN_OUTCOME_UNKNOWN",
            ErrorCode::ExecutionFailed => "EXECUTION_FAILED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Cancelled => "CANCELLED",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the agent may do after an error , serialized kebab-case:
/// `no`, `yes`, `after-refresh`, `after-confirmation`, `with-changes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retry {
    /// Do not retry.
    No,
    /// The same call may succeed later.
    Yes,
    /// Take a fresh snapshot first.
    AfterRefresh,
    /// Retry with a fresh invocation id and the issued evidence.
    AfterConfirmation,
    /// Retry with different input.
    WithChanges,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_wire_shape() {
        let ok = AgentInvocationResult::Success {
            invocation_id: "i1".into(),
            output: json!({"n": 1}),
        };
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"status": "success", "invocationId": "i1", "output": {"n": 1}})
        );
        let err = AgentInvocationResult::Error {
            invocation_id: "i2".into(),
            error: AgentError::new(ErrorCode::InvalidInput, "Locked fields", Retry::WithChanges)
                .with_detail("lockedFields", json!(["deviceIds"])),
        };
        assert_eq!(
            serde_json::to_value(&err).unwrap(),
            json!({"status": "error", "invocationId": "i2", "error": {"code": "INVALID_INPUT", "message": "Locked fields", "retry": "with-changes", "details": {"lockedFields": ["deviceIds"]}}})
        );
        let back: AgentInvocationResult =
            serde_json::from_value(serde_json::to_value(&err).unwrap()).unwrap();
        assert_eq!(back, err);
    }

    #[test]
    fn invocation_id_rule_accepts_the_ids_real_agents_use() {
        for id in [
            "0b5a5f2e-5c1d-4b8e-9b57-3f1f1f0c2a11", // UUID
            "call_Vt8bq3nG0dOaMZ6h1kJp2xQe",        // OpenAI tool call
            "toolu_01A09q90qw90lq917835lq9",        // Anthropic tool use
            "42",                                   // MCP JSON-RPC numeric id
            "req-7|tools/call#3",                   // MCP string id
            "V1StGXR8_Z5jdHi6B-myT",                // nanoid
            "01HZY3J8W6K4N2Q9R5T7V1X3Z5",           // ULID
            "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",   // every ASCII punctuation
            &"~".repeat(MAX_INVOCATION_ID_CHARS),   // the longest
        ] {
            assert_eq!(check_invocation_id(id), Ok(()), "{id}");
        }
    }

    #[test]
    fn invocation_id_rule_names_the_first_problem() {
        use InvalidInvocationId::*;
        assert_eq!(check_invocation_id(""), Err(Empty));
        assert_eq!(
            check_invocation_id(&"a".repeat(257)),
            Err(TooLong { bytes: 257 })
        );
        for (id, index, code_point) in [
            ("a\r\nb", 1, 0x0d),
            ("ab\n", 2, 0x0a),
            ("a\u{7f}", 1, 0x7f),
            ("\u{0}", 0, 0),
            ("a b", 1, 0x20),
            ("a\tb", 1, 0x09),
            ("id-é", 3, 0xe9),
            ("id-😀", 3, 0x1f600),
        ] {
            assert_eq!(
                check_invocation_id(id),
                Err(ForbiddenCharacter { index, code_point }),
                "{id:?}"
            );
        }
        // A forbidden character within the first 256 bytes is named even in
        // a longer id; past them the length is.
        assert_eq!(
            check_invocation_id(&format!("a\n{}", "b".repeat(300))),
            Err(ForbiddenCharacter {
                index: 1,
                code_point: 0x0a
            })
        );
        assert_eq!(
            check_invocation_id(&format!("{}\n", "b".repeat(256))),
            Err(TooLong { bytes: 257 })
        );
        assert_eq!(
            ForbiddenCharacter { index: 4, code_point: 0x0a }.to_string(),
            "the invocation id has U+000A at position 4; only visible ASCII characters 0x21-0x7E are accepted (no spaces, control characters or non-ASCII)"
        );
    }

    #[test]
    fn invocation_defaults() {
        let inv: AgentInvocation =
            serde_json::from_value(json!({"invocationId": "a", "capabilityId": "domain:x.y"}))
                .unwrap();
        assert_eq!(inv, AgentInvocation::new("a", "domain:x.y"));
        assert_eq!(
            serde_json::to_value(ErrorCode::DomainOutcomeUnknown).unwrap(),
            json!("DOMAIN_OUTCOME_UNKNOWN")
        );
        assert_eq!(
            serde_json::to_value(Retry::AfterConfirmation).unwrap(),
            json!("after-confirmation")
        );
    }
}
