//! The browser's progress message (docs/host.md, "Confirmation while the
//! call waits"): while a call is held for the user's confirmation, the
//! session tells the host so it can keep the agent's tool call open and
//! report progress (for MCP: `notifications/progress`).
//!
//! ```json
//! // browser → host, when the page shows the confirmation
//! {"protocolVersion":1,"type":"surface-progress","connectionId":"c-1","runId":"r-1",
//!  "toolCallId":"tc-1","invocationId":"i-1","stage":"awaiting-confirmation","expiresAtMs":1764400000000}
//! // browser → host, when the user approved and the call runs
//! {"protocolVersion":1,"type":"surface-progress",…,"stage":"confirmed","retryInvocationId":"confirmed-4f…"}
//! ```
//!
//! This message is this project's extension of protocol 1 (the original
//! has none): a page sends it only in `ConfirmationMode::Hold`, which a
//! TypeScript host does not ask for. A progress message grants nothing:
//! the host can neither approve nor reject through it, and it is followed
//! by exactly one [`BrowserSurfaceResult`] for the same ids.

use serde::{Deserialize, Serialize};

use super::wire::{
    BrowserSurfaceAnnouncement, BrowserSurfaceCall, BrowserSurfaceResult, ProgressType,
};
use super::PROTOCOL_VERSION;

/// Where a held call stands, serialized kebab-case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgressStage {
    /// The page shows the confirmation; the call waits for the user's
    /// decision until `expiresAtMs` at the latest.
    AwaitingConfirmation,
    /// The user approved: the call runs now under `retryInvocationId`
    /// (a fresh invocation id, the one the registry, the audit and the
    /// backend see — persist it to reconcile an interrupted call).
    Confirmed,
}

impl ProgressStage {
    /// The wire name (`"awaiting-confirmation"`, `"confirmed"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProgressStage::AwaitingConfirmation => "awaiting-confirmation",
            ProgressStage::Confirmed => "confirmed",
        }
    }
}

/// browser → host: progress of an outstanding call (docs/host.md,
/// "Confirmation while the call waits"). Echoes the call's dispatch ids
/// like a [`BrowserSurfaceResult`]; accepted by
/// `AgentHost::accept_progress` only on the dispatching authenticated
/// connection. Wire: `{"protocolVersion":1,"type":"surface-progress",
/// "connectionId","runId","toolCallId","invocationId","stage",
/// "expiresAtMs"?, "retryInvocationId"?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSurfaceProgress {
    /// Always [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// `"surface-progress"`.
    #[serde(rename = "type")]
    pub message_type: ProgressType,
    /// Echo of the call's connection id.
    pub connection_id: String,
    /// Echo of the call's run id.
    pub run_id: String,
    /// Echo of the call's tool call id.
    pub tool_call_id: String,
    /// Echo of the call's invocation id (the host's, not the retry's).
    pub invocation_id: String,
    /// What is happening.
    pub stage: ProgressStage,
    /// `awaiting-confirmation`: when the confirmation expires, ms since the
    /// Unix epoch (the registry's clock); the call is answered by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// `confirmed`: the fresh invocation id the approved call runs under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_invocation_id: Option<String>,
}

impl BrowserSurfaceProgress {
    /// `awaiting-confirmation` for `call`.
    pub fn awaiting_confirmation(call: &BrowserSurfaceCall, expires_at_ms: u64) -> Self {
        Self {
            expires_at_ms: Some(expires_at_ms),
            ..Self::echo(call, ProgressStage::AwaitingConfirmation)
        }
    }

    /// `confirmed` for `call`, running as `retry_invocation_id`.
    pub fn confirmed(call: &BrowserSurfaceCall, retry_invocation_id: impl Into<String>) -> Self {
        Self {
            retry_invocation_id: Some(retry_invocation_id.into()),
            ..Self::echo(call, ProgressStage::Confirmed)
        }
    }

    fn echo(call: &BrowserSurfaceCall, stage: ProgressStage) -> Self {
        Self {
            protocol_version: PROTOCOL_VERSION,
            message_type: ProgressType::Only,
            connection_id: call.connection_id.clone(),
            run_id: call.run_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            invocation_id: call.invocation.invocation_id.clone(),
            stage,
            expires_at_ms: None,
            retry_invocation_id: None,
        }
    }
}

/// Any browser → host message, for transports that carry all three kinds
/// on one channel, told apart by `type` (each struct reads only its own
/// `type`): `surface-announcement`, `surface-result`, `surface-progress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BrowserToHostMessage {
    /// A [`BrowserSurfaceAnnouncement`].
    Announcement(Box<BrowserSurfaceAnnouncement>),
    /// A [`BrowserSurfaceResult`].
    Result(Box<BrowserSurfaceResult>),
    /// A [`BrowserSurfaceProgress`].
    Progress(BrowserSurfaceProgress),
}

impl BrowserToHostMessage {
    /// Reads one message of a page from its JSON text, the way an agent
    /// host should: a lone UTF-16 surrogate escape, which a TypeScript
    /// page's `JSON.stringify` writes for a string cut in the middle of an
    /// emoji (`"ok\ud83d"`) and `serde_json` refuses, is read as U+FFFD
    /// (`"ok\u{FFFD}"`) — see [`from_json_lossy`](super::from_json_lossy).
    /// Lossy in that one character only: a result is read rather than
    /// left unreadable (which would leave the agent's call waiting until
    /// its timeout), and so are progress and announcements (whatever the
    /// host verifies in an announcement is still verified, on the read
    /// text). `serde_json::from_str` stays strict.
    ///
    /// The text is read as it is; bound its length first (the copy made
    /// for a lone surrogate is as long as the text).
    ///
    /// # Errors
    /// The parse error: not JSON, or neither an announcement, a result nor
    /// progress.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        super::wire_text::from_json_lossy(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::BrowserSurfaceIdentity;
    use crate::invocation::AgentInvocation;
    use serde_json::json;

    fn call() -> BrowserSurfaceCall {
        BrowserSurfaceCall::new(
            BrowserSurfaceIdentity::new("a", "b", "s", "t"),
            "c",
            "r",
            "tc",
            AgentInvocation::new("i", "domain:x.y"),
        )
    }

    #[test]
    fn progress_wire_shapes() {
        let awaiting = BrowserSurfaceProgress::awaiting_confirmation(&call(), 42);
        assert_eq!(
            serde_json::to_value(&awaiting).unwrap(),
            json!({"protocolVersion":1,"type":"surface-progress","connectionId":"c","runId":"r","toolCallId":"tc",
                   "invocationId":"i","stage":"awaiting-confirmation","expiresAtMs":42})
        );
        let confirmed = BrowserSurfaceProgress::confirmed(&call(), "confirmed-1");
        assert_eq!(
            serde_json::to_value(&confirmed).unwrap(),
            json!({"protocolVersion":1,"type":"surface-progress","connectionId":"c","runId":"r","toolCallId":"tc",
                   "invocationId":"i","stage":"confirmed","retryInvocationId":"confirmed-1"})
        );
        assert_eq!(ProgressStage::Confirmed.as_str(), "confirmed");
        let back: BrowserToHostMessage =
            serde_json::from_value(serde_json::to_value(&confirmed).unwrap()).unwrap();
        assert_eq!(back, BrowserToHostMessage::Progress(confirmed));
    }

    #[test]
    fn browser_messages_are_told_apart_by_their_type() {
        let identity = json!({"appId":"a","buildId":"b","sessionId":"s","tabId":"t"});
        let result: BrowserToHostMessage = serde_json::from_value(json!({
            "protocolVersion":1,"type":"surface-result","identity":identity,
            "connectionId":"c","runId":"r","toolCallId":"t","invocationId":"i",
            "result":{"status":"rejected","reason":"stale-surface"}}))
        .unwrap();
        assert!(matches!(result, BrowserToHostMessage::Result(_)));
        let announcement: BrowserToHostMessage = serde_json::from_value(json!({
            "protocolVersion":1,"type":"surface-announcement","identity":identity,
            "connectionId":"c","snapshot":{"surfaceId":"s1","surfaceVersion":"1",
            "capturedAt":"2026-09-13T00:00:00.000Z","components":[],"procedures":[]}}))
        .unwrap();
        assert!(matches!(
            announcement,
            BrowserToHostMessage::Announcement(_)
        ));
        // The fields of a result under another type are not a result.
        assert!(serde_json::from_value::<BrowserToHostMessage>(json!({
            "protocolVersion":1,"type":"surface-call","identity":identity,
            "connectionId":"c","runId":"r","toolCallId":"t","invocationId":"i",
            "result":{"status":"rejected","reason":"stale-surface"}}))
        .is_err());
        assert!(serde_json::from_value::<BrowserToHostMessage>(json!({
            "protocolVersion":1,"type":"surface-progress",
            "connectionId":"c","runId":"r","toolCallId":"t","invocationId":"i","stage":"approved"}))
        .is_err());
    }
}
