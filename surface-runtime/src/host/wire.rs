//! The browser-session wire types (`docs/host.md`, "Messages"): protocol 1
//! exactly as agent-surface's TypeScript session (`createBrowserSurfaceSession`)
//! emits and reads it, so a Rust page works with a TypeScript host and a
//! Rust host with a TypeScript page.
//!
//! Every message is JSON with camelCase names, `"protocolVersion": 1`
//! (required: a call without it is `invalid-call`) and a `"type"`:
//!
//! ```json
//! // browser → host
//! {"protocolVersion":1,"type":"surface-announcement",
//!  "identity":{"appId":"console","buildId":"build-1","sessionId":"session-1","tabId":"tab-1"},
//!  "connectionId":"connection-1",
//!  "snapshot":{"surfaceId":"surf_…","surfaceVersion":"2","capturedAt":"2026-09-13T00:00:00.000Z",
//!              "components":[…],"procedures":[…]}}
//! // host → browser
//! {"protocolVersion":1,"type":"surface-call","identity":{…},"connectionId":"connection-1",
//!  "runId":"run-1","toolCallId":"tool-invocation-1",
//!  "invocation":{"invocationId":"invocation-1","capabilityId":"domain:devices.disable",
//!                "registrationId":"reg_1","surfaceVersion":"2","input":{"reason":"maintenance"}}}
//! // browser → host
//! {"protocolVersion":1,"type":"surface-result","identity":{…},"connectionId":"connection-1",
//!  "runId":"run-1","toolCallId":"tool-invocation-1","invocationId":"invocation-1",
//!  "result":{"status":"ok","invocationId":"invocation-1","capabilityId":"domain:devices.disable",
//!            "output":{"disabled":2},"surfaceVersion":"2"}}
//! {"protocolVersion":1,"type":"surface-result",…,"result":{"status":"rejected","reason":"stale-surface"}}
//! ```
//!
//! A result's `identity` is always the answering session's own (a call for
//! another tab is answered `wrong-session` under the session's identity).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::invocation::{AgentInvocation, AgentInvocationResult};
use crate::snapshot::SurfaceSnapshot;

/// The protocol version every message of this module carries (`1`).
pub const PROTOCOL_VERSION: u32 = 1;

/// Envelopes longer than this many serialized characters are refused with
/// [`RejectionReason::InvalidCall`]. Characters are counted as UTF-16 code
/// units of the compact JSON text — the same count as JavaScript's
/// `JSON.stringify(call).length`, so a Rust host and a TypeScript browser
/// agree on the boundary; for ASCII text it equals the byte length.
pub const MAX_ENVELOPE_CHARS: usize = 262_144;

/// The longest `connectionId`, `runId`, `toolCallId`, `registrationId`,
/// `capabilityId` or `instanceId` a call may carry: 512 characters (UTF-16
/// code units, the original's limit). Invocation ids follow the stricter
/// rule of [`crate::invocation::check_invocation_id`].
pub const MAX_ID_CHARS: usize = 512;

macro_rules! message_type {
    ($(#[$doc:meta])* $name:ident, $wire:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            #[doc = concat!("`\"", $wire, "\"`.")]
            #[default]
            #[serde(rename = $wire)]
            Only,
        }
    };
}

message_type!(
    /// The `type` of an announcement: always `"surface-announcement"`
    /// (reading refuses any other).
    AnnouncementType,
    "surface-announcement"
);
message_type!(
    /// The `type` of a call: always `"surface-call"` (reading refuses any
    /// other).
    CallType,
    "surface-call"
);
message_type!(
    /// The `type` of a result: always `"surface-result"` (reading refuses
    /// any other).
    ResultType,
    "surface-result"
);
message_type!(
    /// The `type` of this project's progress message: always
    /// `"surface-progress"` (an extension of protocol 1, `docs/host.md`,
    /// "Confirmation while the call waits").
    ProgressType,
    "surface-progress"
);

/// Who announces and who is called: wire
/// `{"appId","buildId","sessionId","tabId"}`.
///
/// * `app_id` / `build_id` name the build artifact; the host verifies them
///   against the artifacts it knows (a browser-supplied id grants nothing).
/// * `session_id` is the opaque binding of the authenticated session (not a
///   credential).
/// * `tab_id` is new for every document lifetime (a reload is a new tab).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSurfaceIdentity {
    /// Application id (`"console"`).
    pub app_id: String,
    /// Build id of the browser bundle.
    pub build_id: String,
    /// Opaque authenticated-session binding.
    pub session_id: String,
    /// Document-lifetime id, fresh on every load.
    pub tab_id: String,
}

impl BrowserSurfaceIdentity {
    /// An identity from its four parts.
    pub fn new(
        app_id: impl Into<String>,
        build_id: impl Into<String>,
        session_id: impl Into<String>,
        tab_id: impl Into<String>,
    ) -> Self {
        Self {
            app_id: app_id.into(),
            build_id: build_id.into(),
            session_id: session_id.into(),
            tab_id: tab_id.into(),
        }
    }
}

/// What a browser tells the host about its live surface: sent by
/// `BrowserSurfaceSession::connect` and republished on every registry
/// change. Wire: `{"protocolVersion":1,"type":"surface-announcement",
/// "identity":{…},"connectionId","snapshot"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSurfaceAnnouncement {
    /// Always [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// `"surface-announcement"`.
    #[serde(rename = "type")]
    pub message_type: AnnouncementType,
    /// The announcing tab.
    pub identity: BrowserSurfaceIdentity,
    /// The connection this announcement travels on.
    pub connection_id: String,
    /// The snapshot for the session's consumer (a consistent cut).
    pub snapshot: SurfaceSnapshot,
}

impl BrowserSurfaceAnnouncement {
    /// A protocol-1 announcement.
    pub fn new(
        identity: BrowserSurfaceIdentity,
        connection_id: impl Into<String>,
        snapshot: SurfaceSnapshot,
    ) -> Self {
        Self {
            protocol_version: PROTOCOL_VERSION,
            message_type: AnnouncementType::Only,
            identity,
            connection_id: connection_id.into(),
            snapshot,
        }
    }
}

/// A host's call into a browser surface. Wire:
/// `{"protocolVersion":1,"type":"surface-call","identity":{…},
/// "connectionId","runId","toolCallId","invocation":{…}}`.
///
/// `invocation.registrationId` and `invocation.surfaceVersion` are optional
/// in [`AgentInvocation`] but **required here, even for reads**: a call
/// without them is [`RejectionReason::InvalidCall`]. Input, instance and
/// `confirmationId` keep their ordinary meaning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSurfaceCall {
    /// [`PROTOCOL_VERSION`]; required, any other value is `invalid-call`.
    pub protocol_version: u32,
    /// `"surface-call"`.
    #[serde(rename = "type")]
    pub message_type: CallType,
    /// The tab the host means to call; must equal the session's identity.
    pub identity: BrowserSurfaceIdentity,
    /// The connection the host dispatched on.
    pub connection_id: String,
    /// The agent run the call belongs to.
    pub run_id: String,
    /// The model's tool call id.
    pub tool_call_id: String,
    /// The invocation itself.
    pub invocation: AgentInvocation,
}

impl BrowserSurfaceCall {
    /// A protocol-1 call.
    pub fn new(
        identity: BrowserSurfaceIdentity,
        connection_id: impl Into<String>,
        run_id: impl Into<String>,
        tool_call_id: impl Into<String>,
        invocation: AgentInvocation,
    ) -> Self {
        Self {
            protocol_version: PROTOCOL_VERSION,
            message_type: CallType::Only,
            identity,
            connection_id: connection_id.into(),
            run_id: run_id.into(),
            tool_call_id: tool_call_id.into(),
            invocation,
        }
    }
}

/// The browser's answer to a [`BrowserSurfaceCall`]: the session's own
/// identity and the call's dispatch ids. Wire: `{"protocolVersion":1,
/// "type":"surface-result","identity":{…},"connectionId","runId",
/// "toolCallId","invocationId","result":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSurfaceResult {
    /// Always [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// `"surface-result"`.
    #[serde(rename = "type")]
    pub message_type: ResultType,
    /// The answering session's identity.
    pub identity: BrowserSurfaceIdentity,
    /// Echo of the call's connection id.
    pub connection_id: String,
    /// Echo of the call's run id.
    pub run_id: String,
    /// Echo of the call's tool call id.
    pub tool_call_id: String,
    /// Echo of the call's invocation id.
    pub invocation_id: String,
    /// What happened.
    pub result: BrowserSurfaceOutcome,
}

impl BrowserSurfaceResult {
    /// A result of the session `identity` echoing `call`'s ids.
    pub fn for_call(
        identity: &BrowserSurfaceIdentity,
        call: &BrowserSurfaceCall,
        result: BrowserSurfaceOutcome,
    ) -> Self {
        Self {
            protocol_version: PROTOCOL_VERSION,
            message_type: ResultType::Only,
            identity: identity.clone(),
            connection_id: call.connection_id.clone(),
            run_id: call.run_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            invocation_id: call.invocation.invocation_id.clone(),
            result,
        }
    }

    /// The rejection reason, when the adapter refused the call.
    pub fn rejection(&self) -> Option<RejectionReason> {
        match &self.result {
            BrowserSurfaceOutcome::Rejected(r) => Some(r.reason),
            BrowserSurfaceOutcome::Invocation(_) => None,
        }
    }

    /// The registry's result, when the call was dispatched (or answered as
    /// an ordinary invocation error without dispatch).
    pub fn invocation_result(&self) -> Option<&AgentInvocationResult> {
        match &self.result {
            BrowserSurfaceOutcome::Invocation(r) => Some(r),
            BrowserSurfaceOutcome::Rejected(_) => None,
        }
    }
}

/// The `result` of a [`BrowserSurfaceResult`]: an ordinary
/// [`AgentInvocationResult`] (`{"status":"ok"|"error",…}`) or
/// `{"status":"rejected","reason":…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BrowserSurfaceOutcome {
    /// The registry's result.
    Invocation(AgentInvocationResult),
    /// The adapter refused the call; the registry was not reached.
    Rejected(Rejected),
}

impl BrowserSurfaceOutcome {
    /// A rejection with `reason`.
    pub fn rejected(reason: RejectionReason) -> Self {
        BrowserSurfaceOutcome::Rejected(Rejected {
            status: RejectedStatus::Rejected,
            reason,
        })
    }
}

/// `{"status":"rejected","reason":…}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejected {
    /// Always `"rejected"`.
    pub status: RejectedStatus,
    /// Why.
    pub reason: RejectionReason,
}

/// The `"rejected"` status tag (a one-value enum so that deserializing
/// refuses any other status).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RejectedStatus {
    /// `"rejected"`.
    Rejected,
}

/// Why a browser session refused a call without reaching the registry
/// serialized kebab-case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RejectionReason {
    /// Malformed envelope: missing `protocolVersion`, `type`,
    /// `registrationId` or `surfaceVersion`, an empty or over-long id,
    /// unknown protocol version, unparseable JSON, or longer than
    /// [`MAX_ENVELOPE_CHARS`].
    InvalidCall,
    /// The call names another app, build, session or tab.
    WrongSession,
    /// The session is not connected (answered before every check but
    /// expiry), the call names a connection other
    /// than the current one (closed, or never opened), or the call was
    /// pending when the connection closed (it may still have taken effect:
    /// reconcile, do not replay).
    Disconnected,
    /// `invocation.surfaceVersion` is not the registry's current version,
    /// the capability and registration are not in the current snapshot
    /// for the session's consumer, or `invocation.instanceId` names
    /// another instance than that registration's component.
    StaleSurface,
    /// The invocation id was already used with a different envelope.
    InvocationConflict,
    /// `maxEntries` calls are retained; nothing is evicted to make room.
    CapacityExceeded,
    /// The adapter outlived its `ttl`; establish a fresh session identity.
    SessionExpired,
}

impl RejectionReason {
    /// All seven reasons, in the order of `docs/host.md`.
    pub const ALL: [RejectionReason; 7] = [
        RejectionReason::InvalidCall,
        RejectionReason::WrongSession,
        RejectionReason::Disconnected,
        RejectionReason::StaleSurface,
        RejectionReason::InvocationConflict,
        RejectionReason::CapacityExceeded,
        RejectionReason::SessionExpired,
    ];

    /// The wire name (`"invalid-call"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RejectionReason::InvalidCall => "invalid-call",
            RejectionReason::WrongSession => "wrong-session",
            RejectionReason::Disconnected => "disconnected",
            RejectionReason::StaleSurface => "stale-surface",
            RejectionReason::InvocationConflict => "invocation-conflict",
            RejectionReason::CapacityExceeded => "capacity-exceeded",
            RejectionReason::SessionExpired => "session-expired",
        }
    }
}

impl fmt::Display for RejectionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Length of `text` in UTF-16 code units (JavaScript's `string.length`),
/// the unit of [`MAX_ENVELOPE_CHARS`].
pub fn serialized_chars(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Whether `text` is within [`MAX_ENVELOPE_CHARS`]. A UTF-16 length never
/// exceeds the UTF-8 byte length, so short texts skip the count.
pub(crate) fn within_envelope_limit(text: &str) -> bool {
    text.len() <= MAX_ENVELOPE_CHARS || serialized_chars(text) <= MAX_ENVELOPE_CHARS
}

/// Best-effort echo ids of an envelope that did not parse as a
/// [`BrowserSurfaceCall`]: each id is copied when it is a string at its
/// usual place, else left empty.
pub(crate) fn echo_ids(value: &Value) -> [String; 4] {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    [
        s(value.get("connectionId")),
        s(value.get("runId")),
        s(value.get("toolCallId")),
        s(value.get("invocation").and_then(|i| i.get("invocationId"))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invocation::{AgentError, ErrorCode, Retry};
    use serde_json::json;

    #[test]
    fn rejection_reasons_serialize_kebab_case() {
        let names: Vec<Value> = RejectionReason::ALL
            .iter()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect();
        assert_eq!(
            names,
            vec![
                json!("invalid-call"),
                json!("wrong-session"),
                json!("disconnected"),
                json!("stale-surface"),
                json!("invocation-conflict"),
                json!("capacity-exceeded"),
                json!("session-expired"),
            ]
        );
        for r in RejectionReason::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), json!(r.as_str()));
        }
    }

    fn identity() -> BrowserSurfaceIdentity {
        BrowserSurfaceIdentity::new("a", "b", "s", "t")
    }

    #[test]
    fn result_wire_shapes_round_trip() {
        let rejected = BrowserSurfaceResult {
            protocol_version: 1,
            message_type: ResultType::Only,
            identity: identity(),
            connection_id: "c".into(),
            run_id: "r".into(),
            tool_call_id: "t".into(),
            invocation_id: "i".into(),
            result: BrowserSurfaceOutcome::rejected(RejectionReason::StaleSurface),
        };
        let v = serde_json::to_value(&rejected).unwrap();
        assert_eq!(
            v,
            json!({"protocolVersion":1,"type":"surface-result",
                   "identity":{"appId":"a","buildId":"b","sessionId":"s","tabId":"t"},
                   "connectionId":"c","runId":"r","toolCallId":"t","invocationId":"i",
                   "result":{"status":"rejected","reason":"stale-surface"}})
        );
        assert_eq!(
            serde_json::from_value::<BrowserSurfaceResult>(v).unwrap(),
            rejected
        );

        let err = BrowserSurfaceResult {
            result: BrowserSurfaceOutcome::Invocation(AgentInvocationResult::err(
                "i",
                "domain:x.y",
                AgentError::new(ErrorCode::CapabilityNotAvailable, "no", Retry::AfterRefresh),
                4,
            )),
            ..rejected.clone()
        };
        let v = serde_json::to_value(&err).unwrap();
        assert_eq!(v["result"]["status"], json!("error"));
        assert_eq!(v["result"]["surfaceVersion"], json!("4"));
        assert_eq!(
            serde_json::from_value::<BrowserSurfaceResult>(v).unwrap(),
            err
        );

        // An unknown status is refused, not read as a rejection; so is
        // another message type.
        let mut bad = serde_json::to_value(&rejected).unwrap();
        bad["result"]["status"] = json!("maybe");
        assert!(serde_json::from_value::<BrowserSurfaceResult>(bad).is_err());
        let mut other = serde_json::to_value(&rejected).unwrap();
        other["type"] = json!("surface-call");
        assert!(serde_json::from_value::<BrowserSurfaceResult>(other).is_err());
    }

    #[test]
    fn call_wire_shape() {
        let value = json!({
            "protocolVersion": 1, "type": "surface-call",
            "identity": {"appId":"a","buildId":"b","sessionId":"s","tabId":"t"},
            "connectionId":"c","runId":"r","toolCallId":"tc",
            "invocation":{"invocationId":"i","capabilityId":"domain:x.y","registrationId":"g","surfaceVersion":"3"}
        });
        let call: BrowserSurfaceCall = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(call.protocol_version, 1);
        assert_eq!(call.identity, identity());
        assert_eq!(call.invocation.surface_version, Some(3));
        let back = serde_json::to_value(&call).unwrap();
        assert_eq!(back["type"], json!("surface-call"));
        assert_eq!(back["invocation"]["surfaceVersion"], json!("3"));
        assert_eq!(back["invocation"]["registrationId"], json!("g"));
        // protocolVersion and type are required.
        for key in ["protocolVersion", "type"] {
            let mut missing = value.clone();
            missing.as_object_mut().unwrap().remove(key);
            assert!(
                serde_json::from_value::<BrowserSurfaceCall>(missing).is_err(),
                "{key}"
            );
        }
    }

    #[test]
    fn serialized_chars_counts_utf16_units() {
        assert_eq!(serialized_chars("abc"), 3);
        assert_eq!(serialized_chars("é"), 1);
        assert_eq!(serialized_chars("😀"), 2);
    }

    #[test]
    fn envelope_limit_boundary_with_multibyte_text() {
        // 131,072 × "é" is 262,144 bytes and 131,072 UTF-16 units.
        assert!(within_envelope_limit(&"é".repeat(131_072)));
        // 262,144 × "é" is 524,288 bytes but exactly 262,144 units: allowed.
        assert!(within_envelope_limit(&"é".repeat(262_144)));
        assert!(!within_envelope_limit(&"é".repeat(262_145)));
        // Astral characters count twice: 131,072 × "😀" = 262,144 units.
        assert!(within_envelope_limit(&"😀".repeat(131_072)));
        assert!(!within_envelope_limit(&format!(
            "{}a",
            "😀".repeat(131_072)
        )));
        assert!(within_envelope_limit(&"a".repeat(262_144)));
        assert!(!within_envelope_limit(&"a".repeat(262_145)));
    }
}
