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

/// One call from the agent (`docs/pipeline.md`), protocol 1's `invocation`
/// as agent-surface's TypeScript session reads and writes it. Wire
/// (camelCase): `{"invocationId", "capabilityId", "registrationId"?,
/// "surfaceVersion"? (a decimal string, `"4"`), "input"?, "instanceId"?,
/// "confirmationId"?}`.
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
    /// The `surfaceVersion` of the snapshot the agent acted on (a decimal
    /// string on the wire, [`crate::snapshot::surface_version`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::snapshot::surface_version::option"
    )]
    pub surface_version: Option<u64>,
    /// Agent-supplied input (only unlocked fields); defaults to `{}`.
    #[serde(default = "empty_object")]
    pub input: Value,
    /// Component instance id, for view capabilities of multi-instance
    /// components (wire `instanceId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The id of a confirmation the application approved
    /// (`details.confirmationId` of the `CONFIRMATION_REQUIRED` answer;
    /// `docs/pipeline.md`, "Local confirmation"). It grants nothing by
    /// itself: the registry holds what the approval is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_id: Option<String>,
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
            instance_id: None,
            confirmation_id: None,
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

/// The outcome of one invocation, as agent-surface's TypeScript registry
/// writes it (`docs/pipeline.md`, "The call and its result"):
///
/// ```json
/// {"status":"ok","invocationId":"i-1","capabilityId":"domain:devices.disable",
///  "output":{"disabled":2},"surfaceVersion":"2"}
/// {"status":"error","invocationId":"i-2","capabilityId":"domain:devices.disable",
///  "error":{"code":"INVALID_INPUT","message":"…","retry":"with-changes","details":{…}},
///  "surfaceVersion":"2"}
/// ```
///
/// `surfaceVersion` is the registry's version when the call settled (a
/// decimal string on the wire); `surfaceChanged` is `true` when the surface
/// changed while the call ran. `output` is absent when the capability
/// returned nothing (a handler's `Value::Null`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum AgentInvocationResult {
    /// The capability ran.
    Ok {
        /// Echo of the invocation id.
        invocation_id: String,
        /// The capability id the call named.
        capability_id: String,
        /// The handler's or procedure's output; `None` (absent) when it
        /// returned nothing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// The surface version when the call settled.
        #[serde(with = "crate::snapshot::surface_version")]
        surface_version: u64,
        /// `Some(true)` when the surface changed during execution.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        surface_changed: Option<bool>,
    },
    /// The call ended in a pipeline phase or in execution.
    Error {
        /// Echo of the invocation id.
        invocation_id: String,
        /// The capability id the call named.
        capability_id: String,
        /// What went wrong.
        error: AgentError,
        /// The surface version when the call settled.
        #[serde(with = "crate::snapshot::surface_version")]
        surface_version: u64,
        /// `Some(true)` when the surface changed during execution.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        surface_changed: Option<bool>,
    },
}

impl AgentInvocationResult {
    /// A success with `output` (`Value::Null` is "no output") at
    /// `surface_version`.
    pub fn ok(
        invocation_id: impl Into<String>,
        capability_id: impl Into<String>,
        output: Value,
        surface_version: u64,
    ) -> Self {
        AgentInvocationResult::Ok {
            invocation_id: invocation_id.into(),
            capability_id: capability_id.into(),
            output: (!output.is_null()).then_some(output),
            surface_version,
            surface_changed: None,
        }
    }

    /// An error result at `surface_version`.
    pub fn err(
        invocation_id: impl Into<String>,
        capability_id: impl Into<String>,
        error: AgentError,
        surface_version: u64,
    ) -> Self {
        AgentInvocationResult::Error {
            invocation_id: invocation_id.into(),
            capability_id: capability_id.into(),
            error,
            surface_version,
            surface_changed: None,
        }
    }

    /// The invocation id either variant carries.
    pub fn invocation_id(&self) -> &str {
        match self {
            AgentInvocationResult::Ok { invocation_id, .. }
            | AgentInvocationResult::Error { invocation_id, .. } => invocation_id,
        }
    }

    /// The capability id either variant carries.
    pub fn capability_id(&self) -> &str {
        match self {
            AgentInvocationResult::Ok { capability_id, .. }
            | AgentInvocationResult::Error { capability_id, .. } => capability_id,
        }
    }

    /// The surface version either variant carries.
    pub fn surface_version(&self) -> u64 {
        match self {
            AgentInvocationResult::Ok {
                surface_version, ..
            }
            | AgentInvocationResult::Error {
                surface_version, ..
            } => *surface_version,
        }
    }

    /// The output of a success (`None` for an error or a void success).
    pub fn output(&self) -> Option<&Value> {
        match self {
            AgentInvocationResult::Ok { output, .. } => output.as_ref(),
            AgentInvocationResult::Error { .. } => None,
        }
    }

    /// The error, if the call failed.
    pub fn error(&self) -> Option<&AgentError> {
        match self {
            AgentInvocationResult::Error { error, .. } => Some(error),
            AgentInvocationResult::Ok { .. } => None,
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self, AgentInvocationResult::Ok { .. })
    }
}

/// An agent-facing error: `{"code","message","retry","details"?}` (the
/// original's `AgentCapabilityErrorPayload`). The message is always safe to
/// show the model: transport and server text goes to audit/logs only.
/// `details` is left out of the JSON when empty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentError {
    /// Machine-readable code.
    pub code: ErrorCode,
    /// Safe human-readable message.
    pub message: String,
    /// What the agent may do next.
    pub retry: Retry,
    /// Structured, agent-safe details (`lockedFields`, `confirmationId`,
    /// `instances`, `approvalId`, …; per code in `docs/errors.md`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
}

impl AgentError {
    /// This error within agent-surface's error matrix: `details` keys the
    /// matrix does not allow for the code are removed (and returned, for the
    /// audit record), and a `retry` it does not allow becomes the closest
    /// one it does (`yes` → `after-delay` or `after-refresh` where allowed,
    /// else the code's preferred value). Known codes only; an unrecognized
    /// code is left as it is.
    pub fn within_matrix(mut self) -> (Self, Map<String, Value>) {
        let allowed = self.code.retries();
        if allowed.is_empty() {
            return (self, Map::new());
        }
        if !allowed.contains(&self.retry) {
            let closest = match self.retry {
                Retry::Yes => [Retry::AfterDelay, Retry::AfterRefresh]
                    .into_iter()
                    .find(|r| allowed.contains(r)),
                _ => None,
            };
            self.retry = closest.unwrap_or(allowed[0]);
        }
        let keys = self.code.detail_keys();
        let mut dropped = Map::new();
        self.details.retain(|key, value| {
            let keep = keys.contains(&key.as_str());
            if !keep {
                dropped.insert(key.clone(), value.clone());
            }
            keep
        });
        (self, dropped)
    }

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

/// An agent-facing error code (`docs/errors.md`): the 16 codes of
/// agent-surface's closed error matrix, the seeds' two domain codes, and
/// [`ErrorCode::Unrecognized`] for a code another party sent that this
/// version does not know — kept, so one new code never makes a whole
/// result unreadable. Serialized as its SCREAMING_SNAKE_CASE name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// No live capability or reference with that id (retry `after-refresh`).
    CapabilityNotFound,
    /// `when()` is false (`details.reason`; retry `after-refresh`).
    CapabilityNotAvailable,
    /// More than one live registration and no `registrationId`
    /// (`details.instances`; retry `with-changes`).
    AmbiguousInstance,
    /// The component instance unmounted before or while the call ran
    /// (`details.phase`; retry `after-refresh`).
    ComponentUnmounted,
    /// The registration is gone, or the surface version moved on for a
    /// destructive/external procedure (`details.reason`; retry
    /// `after-refresh`).
    StaleCapability,
    /// The invocation id was already used for another call (`details.reason`;
    /// retry `with-changes`).
    InvocationConflict,
    /// The agent input is invalid, locked fields included
    /// (`details.issues`, `details.lockedFields`; retry `with-changes`).
    InvalidInput,
    /// The caller is not authenticated (retry `no`).
    NotAuthenticated,
    /// A policy or the server refused authorization (`details.origin`;
    /// retry `no`).
    NotAuthorized,
    /// A precondition failed (`details.reason`, e.g. `binding-failed`).
    PreconditionFailed,
    /// A local confirmation is needed (`details.confirmationId`, `summary`,
    /// `expiresAt`, `effect`, `origin`; retry `with-confirmation`).
    ConfirmationRequired,
    /// The confirmation is unknown, expired, rejected, used or for another
    /// call (`details.reason`).
    ConfirmationInvalid,
    /// Too many calls (`details.reason`, `details.retryAfterMs`; retry
    /// `after-delay`).
    RateLimited,
    /// The call's time ran out (`details.timeoutMs`).
    Timeout,
    /// The call was cancelled.
    Cancelled,
    /// Execution failed (safe message; `details.reason`, `transient`,
    /// `retryAfterMs`).
    ExecutionFailed,
    /// The backend holds the call for its own approval (`details.approvalId`;
    /// retry `no`).
    DomainApprovalRequired,
    /// The backend may or may not have executed; reconcile by invocation id
    /// (retry `no`).
    DomainOutcomeUnknown,
    /// A code this version does not know, as the other party wrote it.
    Unrecognized(Box<str>),
}

impl ErrorCode {
    /// Every code this version knows, in the order of `docs/errors.md`.
    pub const KNOWN: [ErrorCode; 18] = [
        ErrorCode::CapabilityNotFound,
        ErrorCode::CapabilityNotAvailable,
        ErrorCode::AmbiguousInstance,
        ErrorCode::ComponentUnmounted,
        ErrorCode::StaleCapability,
        ErrorCode::InvocationConflict,
        ErrorCode::InvalidInput,
        ErrorCode::NotAuthenticated,
        ErrorCode::NotAuthorized,
        ErrorCode::PreconditionFailed,
        ErrorCode::ConfirmationRequired,
        ErrorCode::ConfirmationInvalid,
        ErrorCode::RateLimited,
        ErrorCode::Timeout,
        ErrorCode::Cancelled,
        ErrorCode::ExecutionFailed,
        ErrorCode::DomainApprovalRequired,
        ErrorCode::DomainOutcomeUnknown,
    ];

    /// The wire name (`"CAPABILITY_NOT_FOUND"`, …).
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::CapabilityNotFound => "CAPABILITY_NOT_FOUND",
            ErrorCode::CapabilityNotAvailable => "CAPABILITY_NOT_AVAILABLE",
            ErrorCode::AmbiguousInstance => "AMBIGUOUS_INSTANCE",
            ErrorCode::ComponentUnmounted => "COMPONENT_UNMOUNTED",
            ErrorCode::StaleCapability => "STALE_CAPABILITY",
            ErrorCode::InvocationConflict => "INVOCATION_CONFLICT",
            ErrorCode::InvalidInput => "INVALID_INPUT",
            ErrorCode::NotAuthenticated => "NOT_AUTHENTICATED",
            ErrorCode::NotAuthorized => "NOT_AUTHORIZED",
            ErrorCode::PreconditionFailed => "PRECONDITION_FAILED",
            ErrorCode::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            ErrorCode::ConfirmationInvalid => "CONFIRMATION_INVALID",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::ExecutionFailed => "EXECUTION_FAILED",
            ErrorCode::DomainApprovalRequired => "DOMAIN_APPROVAL_REQUIRED",
            ErrorCode::DomainOutcomeUnknown => "DOMAIN_OUTCOME_UNKNOWN",
            ErrorCode::Unrecognized(name) => name,
        }
    }

    /// The `retry` values agent-surface's error matrix allows for this code
    /// (`docs/errors.md`), the preferred one first; the seeds' domain codes
    /// allow `no`. Empty for [`ErrorCode::Unrecognized`].
    pub fn retries(&self) -> &'static [Retry] {
        use Retry::*;
        match self {
            ErrorCode::CapabilityNotFound
            | ErrorCode::CapabilityNotAvailable
            | ErrorCode::ComponentUnmounted
            | ErrorCode::StaleCapability => &[AfterRefresh],
            ErrorCode::AmbiguousInstance
            | ErrorCode::InvocationConflict
            | ErrorCode::InvalidInput => &[WithChanges],
            ErrorCode::NotAuthenticated
            | ErrorCode::NotAuthorized
            | ErrorCode::DomainApprovalRequired
            | ErrorCode::DomainOutcomeUnknown => &[No],
            ErrorCode::PreconditionFailed => &[WithChanges, AfterRefresh],
            ErrorCode::ConfirmationRequired => &[WithConfirmation],
            ErrorCode::ConfirmationInvalid => &[No, WithConfirmation],
            ErrorCode::RateLimited => &[AfterDelay],
            ErrorCode::Timeout => &[No, Yes],
            ErrorCode::Cancelled => &[Yes, No],
            ErrorCode::ExecutionFailed => &[No, AfterDelay],
            ErrorCode::Unrecognized(_) => &[],
        }
    }

    /// The `details` keys agent-surface's error matrix allows for this code
    /// (`docs/errors.md`; the seeds' domain codes: the ids a host needs to
    /// resume or reconcile). Empty for [`ErrorCode::Unrecognized`].
    pub fn detail_keys(&self) -> &'static [&'static str] {
        match self {
            ErrorCode::CapabilityNotFound
            | ErrorCode::NotAuthenticated
            | ErrorCode::Cancelled
            | ErrorCode::Unrecognized(_) => &[],
            ErrorCode::CapabilityNotAvailable
            | ErrorCode::InvocationConflict
            | ErrorCode::PreconditionFailed
            | ErrorCode::ConfirmationInvalid => &["reason"],
            ErrorCode::AmbiguousInstance => &["instances"],
            ErrorCode::ComponentUnmounted => &["phase"],
            ErrorCode::StaleCapability => &["reason", "liveRegistrationId"],
            ErrorCode::InvalidInput => &["issues", "lockedFields"],
            ErrorCode::NotAuthorized => &["origin"],
            ErrorCode::ConfirmationRequired => {
                &["confirmationId", "summary", "expiresAt", "effect", "origin"]
            }
            ErrorCode::RateLimited => &["reason", "retryAfterMs"],
            ErrorCode::Timeout => &["timeoutMs", "idempotent"],
            ErrorCode::ExecutionFailed => &["reason", "transient", "retryAfterMs"],
            ErrorCode::DomainApprovalRequired => &[
                "origin",
                "invocationId",
                "executionId",
                "approvalId",
                "expiresAt",
            ],
            ErrorCode::DomainOutcomeUnknown => &["invocationId"],
        }
    }

    /// The code named `name`: a known one, else [`ErrorCode::Unrecognized`].
    pub fn from_name(name: &str) -> Self {
        Self::KNOWN
            .iter()
            .find(|code| code.as_str() == name)
            .cloned()
            .unwrap_or_else(|| ErrorCode::Unrecognized(name.into()))
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        if name.is_empty() || name.len() > MAX_ERROR_CODE_CHARS {
            return Err(serde::de::Error::custom(format_args!(
                "an error code must be 1 to {MAX_ERROR_CODE_CHARS} characters, got {}",
                name.len()
            )));
        }
        Ok(ErrorCode::from_name(&name))
    }
}

/// The longest error code read from another party: 64 bytes (the longest
/// known code is 24). A longer one makes the result unreadable.
pub const MAX_ERROR_CODE_CHARS: usize = 64;

/// What the agent may do after an error, serialized kebab-case: `no`,
/// `yes`, `after-refresh`, `after-delay`, `with-confirmation`,
/// `with-changes` (the original's `AgentErrorRetry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retry {
    /// Do not retry.
    No,
    /// The same call may succeed later.
    Yes,
    /// Take a fresh snapshot first.
    AfterRefresh,
    /// Wait (`details.retryAfterMs` when given), then retry.
    AfterDelay,
    /// Retry with a fresh invocation id and the approved
    /// `confirmationId`.
    WithConfirmation,
    /// Retry with different input.
    WithChanges,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_wire_shape_is_the_originals() {
        let ok = AgentInvocationResult::ok("i1", "domain:x.y", json!({"n": 1}), 2);
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"status": "ok", "invocationId": "i1", "capabilityId": "domain:x.y",
                   "output": {"n": 1}, "surfaceVersion": "2"})
        );
        // A void success has no `output`.
        let void = AgentInvocationResult::ok("i0", "view:t.a", Value::Null, 7);
        assert_eq!(
            serde_json::to_value(&void).unwrap(),
            json!({"status": "ok", "invocationId": "i0", "capabilityId": "view:t.a", "surfaceVersion": "7"})
        );
        let err = AgentInvocationResult::err(
            "i2",
            "domain:x.y",
            AgentError::new(ErrorCode::InvalidInput, "Locked fields", Retry::WithChanges)
                .with_detail("lockedFields", json!(["deviceIds"])),
            3,
        );
        assert_eq!(
            serde_json::to_value(&err).unwrap(),
            json!({"status": "error", "invocationId": "i2", "capabilityId": "domain:x.y",
                   "error": {"code": "INVALID_INPUT", "message": "Locked fields", "retry": "with-changes",
                             "details": {"lockedFields": ["deviceIds"]}},
                   "surfaceVersion": "3"})
        );
        let back: AgentInvocationResult =
            serde_json::from_value(serde_json::to_value(&err).unwrap()).unwrap();
        assert_eq!(back, err);
        // Empty details are left out.
        let plain = AgentError::new(ErrorCode::Cancelled, "Cancelled.", Retry::No);
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            json!({"code": "CANCELLED", "message": "Cancelled.", "retry": "no"})
        );
    }

    #[test]
    fn errors_are_brought_within_the_matrix() {
        let (e, dropped) = AgentError::new(ErrorCode::ExecutionFailed, "m", Retry::Yes)
            .with_detail("reason", "transport")
            .with_detail("orpcCode", "SERVER_TEXT")
            .within_matrix();
        assert_eq!(e.retry, Retry::AfterDelay);
        assert_eq!(Value::Object(e.details), json!({"reason": "transport"}));
        assert_eq!(Value::Object(dropped), json!({"orpcCode": "SERVER_TEXT"}));
        let (e, _) = AgentError::new(ErrorCode::NotAuthorized, "m", Retry::Yes)
            .with_detail("reason", "approval-rejected")
            .with_detail("origin", "server")
            .within_matrix();
        assert_eq!(
            (e.retry, Value::Object(e.details)),
            (Retry::No, json!({"origin": "server"}))
        );
        let (e, _) =
            AgentError::new(ErrorCode::PreconditionFailed, "m", Retry::Yes).within_matrix();
        assert_eq!(e.retry, Retry::AfterRefresh);
        let odd = AgentError::new(ErrorCode::Unrecognized("X".into()), "m", Retry::Yes)
            .with_detail("k", 1);
        assert_eq!(odd.clone().within_matrix().0, odd);
        for code in ErrorCode::KNOWN {
            assert!(!code.retries().is_empty(), "{code}");
        }
    }

    #[test]
    fn an_unknown_error_code_is_kept_not_refused() {
        let read: AgentError = serde_json::from_value(
            json!({"code": "QUOTA_EXCEEDED", "message": "m", "retry": "after-delay"}),
        )
        .unwrap();
        assert_eq!(read.code, ErrorCode::Unrecognized("QUOTA_EXCEEDED".into()));
        assert_eq!(read.retry, Retry::AfterDelay);
        assert_eq!(
            serde_json::to_value(&read).unwrap()["code"],
            json!("QUOTA_EXCEEDED")
        );
        for code in ErrorCode::KNOWN {
            assert_eq!(ErrorCode::from_name(code.as_str()), code);
        }
        let too_long = json!({"code": "X".repeat(65), "message": "m", "retry": "no"});
        let err = serde_json::from_value::<AgentError>(too_long).unwrap_err();
        assert!(
            err.to_string().contains("1 to 64 characters, got 65"),
            "{err}"
        );
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
        let retries: Vec<Value> = [
            Retry::No,
            Retry::Yes,
            Retry::AfterRefresh,
            Retry::AfterDelay,
            Retry::WithConfirmation,
            Retry::WithChanges,
        ]
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
        assert_eq!(
            retries,
            vec![
                json!("no"),
                json!("yes"),
                json!("after-refresh"),
                json!("after-delay"),
                json!("with-confirmation"),
                json!("with-changes")
            ]
        );
        let call: AgentInvocation = serde_json::from_value(json!({
            "invocationId": "i", "capabilityId": "view:t.a", "registrationId": "r",
            "surfaceVersion": "12", "input": {}, "instanceId": "main", "confirmationId": "c"
        }))
        .unwrap();
        assert_eq!(call.surface_version, Some(12));
        assert_eq!(call.instance_id.as_deref(), Some("main"));
        assert_eq!(call.confirmation_id.as_deref(), Some("c"));
        // A number is not a surface version on this wire.
        assert!(serde_json::from_value::<AgentInvocation>(json!({
            "invocationId": "i", "capabilityId": "view:t.a", "surfaceVersion": 12
        }))
        .is_err());
    }
}
