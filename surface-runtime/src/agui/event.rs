//! The AG-UI events a run streams back (`docs/agents.md`, "AG-UI"), as the
//! protocol's `@ag-ui/core` 1.0 names them: one JSON object per event with
//! a `type` in SCREAMING_SNAKE_CASE and camelCase fields.
//!
//! [`AgUiEvent::from_json`] decodes one event. The events a client acts
//! on are typed; every other known or future type (`STEP_*`,
//! `REASONING_*`, `ACTIVITY_*`, `RAW`, `CUSTOM`, …) is
//! [`AgUiEvent::Other`] with its type name, so a newer agent never breaks
//! an older page. Unknown fields are ignored.

use serde::Deserialize;
use serde_json::Value;

/// `RUN_STARTED`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStarted {
    /// The conversation (echoed from the request).
    pub thread_id: String,
    /// The run (echoed from the request).
    pub run_id: String,
}

/// One thing an interrupted run waits for (`RUN_FINISHED.outcome`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// Answered by a later run's `resume` entry with this id.
    pub id: String,
    /// Why the run stopped (an open string, e.g. `mastra:tool_suspend`).
    pub reason: String,
    /// A prompt for whoever answers.
    #[serde(default)]
    pub message: Option<String>,
    /// The tool call it concerns, for a tool approval.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// Why a run ended without failing (`RUN_FINISHED.outcome`; absent means
/// success).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RunOutcome {
    /// The run completed.
    Success,
    /// The run is paused until its interrupts are answered.
    Interrupt {
        /// At least one.
        interrupts: Vec<Interrupt>,
    },
    /// The run was stopped by whoever ran it.
    Cancelled,
}

/// `RUN_FINISHED`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinished {
    /// Why it ended; `None` is success.
    #[serde(default)]
    pub outcome: Option<RunOutcome>,
    /// Token usage per provider and model, as the agent sent it.
    #[serde(default)]
    pub usage: Option<Value>,
}

/// `RUN_ERROR`: the run failed (often inside an HTTP 200 stream).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    /// The agent's message.
    pub message: String,
    /// The agent's code, if any (e.g. `AGENT_ERROR`).
    #[serde(default)]
    pub code: Option<String>,
}

/// `TEXT_MESSAGE_START`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageStart {
    /// The message being opened.
    pub message_id: String,
}

/// `TEXT_MESSAGE_CONTENT` and `TEXT_MESSAGE_END` (the latter with an empty
/// `delta`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageContent {
    /// The message it belongs to.
    pub message_id: String,
    /// The text to append.
    #[serde(default)]
    pub delta: String,
}

/// `TEXT_MESSAGE_CHUNK`: start, content and end in one, every field
/// optional (a chunk without `messageId` continues the open message).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageChunk {
    /// The message; a new id opens a new message.
    #[serde(default)]
    pub message_id: Option<String>,
    /// The text to append.
    #[serde(default)]
    pub delta: Option<String>,
}

/// `TOOL_CALL_START`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStart {
    /// The call.
    pub tool_call_id: String,
    /// The tool the agent calls.
    pub tool_call_name: String,
    /// The assistant message the call belongs to.
    #[serde(default)]
    pub parent_message_id: Option<String>,
}

/// `TOOL_CALL_ARGS`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallArgs {
    /// The call.
    pub tool_call_id: String,
    /// The next piece of the arguments' JSON text.
    pub delta: String,
}

/// `TOOL_CALL_END`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEnd {
    /// The call whose arguments are complete.
    pub tool_call_id: String,
}

/// `TOOL_CALL_CHUNK`: start and arguments in one, every field optional.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallChunk {
    /// The call; a new id starts a new call (it then needs a name).
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The tool, on the chunk that starts the call.
    #[serde(default)]
    pub tool_call_name: Option<String>,
    /// The assistant message the call belongs to.
    #[serde(default)]
    pub parent_message_id: Option<String>,
    /// The next piece of the arguments.
    #[serde(default)]
    pub delta: Option<String>,
}

/// `TOOL_CALL_RESULT`: the agent ran the tool itself (a backend tool).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    /// The tool message's id.
    #[serde(default)]
    pub message_id: Option<String>,
    /// The call answered.
    pub tool_call_id: String,
    /// What the tool returned, as text.
    #[serde(default)]
    pub content: String,
}

/// `STATE_SNAPSHOT`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct StateSnapshot {
    /// The agent's whole state.
    pub snapshot: Value,
}

/// One decoded AG-UI event.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgUiEvent {
    /// `RUN_STARTED`.
    RunStarted(RunStarted),
    /// `RUN_FINISHED`.
    RunFinished(RunFinished),
    /// `RUN_ERROR`.
    RunError(RunError),
    /// `TEXT_MESSAGE_START`.
    TextMessageStart(TextMessageStart),
    /// `TEXT_MESSAGE_CONTENT`.
    TextMessageContent(TextMessageContent),
    /// `TEXT_MESSAGE_END`.
    TextMessageEnd(TextMessageContent),
    /// `TEXT_MESSAGE_CHUNK`.
    TextMessageChunk(TextMessageChunk),
    /// `TOOL_CALL_START`.
    ToolCallStart(ToolCallStart),
    /// `TOOL_CALL_ARGS`.
    ToolCallArgs(ToolCallArgs),
    /// `TOOL_CALL_END`.
    ToolCallEnd(ToolCallEnd),
    /// `TOOL_CALL_CHUNK`.
    ToolCallChunk(ToolCallChunk),
    /// `TOOL_CALL_RESULT`.
    ToolCallResult(ToolCallResult),
    /// `STATE_SNAPSHOT`.
    StateSnapshot(StateSnapshot),
    /// Any other type, by name (`STATE_DELTA`, `MESSAGES_SNAPSHOT`,
    /// `STEP_STARTED`, `REASONING_*`, `CUSTOM`, a future type, …): not
    /// acted on.
    Other {
        /// The event's `type`.
        event_type: String,
    },
}

/// Longest event type name kept in [`AgUiEvent::Other`] and in errors.
const MAX_TYPE_CHARS: usize = 64;

impl AgUiEvent {
    /// Decodes one event's JSON text (an SSE `data` field).
    ///
    /// # Errors
    /// A readable reason: not JSON (with line and column), not an object,
    /// no string `type`, or a known type missing a field or with a field of
    /// the wrong type (serde's message, which names the field).
    pub fn from_json(text: &str) -> Result<Self, String> {
        /// The `type` alone (the rest skipped, nothing else allocated).
        #[derive(Deserialize)]
        struct Kind<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<std::borrow::Cow<'a, str>>,
        }
        let kind = match serde_json::from_str::<Kind<'_>>(text) {
            Ok(Kind { kind: Some(kind) }) => kind,
            Ok(Kind { kind: None }) => return Err("not an object with a string `type`".into()),
            Err(e) if e.is_data() => return Err("not an object with a string `type`".into()),
            Err(e) => {
                return Err(format!(
                    "not JSON (line {}, column {})",
                    e.line(),
                    e.column()
                ))
            }
        };
        fn typed<'a, T: Deserialize<'a>>(kind: &str, text: &'a str) -> Result<T, String> {
            serde_json::from_str(text).map_err(|e| format!("a {kind} event: {e}"))
        }
        let kind: String = kind.chars().take(MAX_TYPE_CHARS).collect();
        Ok(match kind.as_str() {
            "RUN_STARTED" => Self::RunStarted(typed(&kind, text)?),
            "RUN_FINISHED" => Self::RunFinished(typed(&kind, text)?),
            "RUN_ERROR" => Self::RunError(typed(&kind, text)?),
            "TEXT_MESSAGE_START" => Self::TextMessageStart(typed(&kind, text)?),
            "TEXT_MESSAGE_CONTENT" => Self::TextMessageContent(typed(&kind, text)?),
            "TEXT_MESSAGE_END" => Self::TextMessageEnd(typed(&kind, text)?),
            "TEXT_MESSAGE_CHUNK" => Self::TextMessageChunk(typed(&kind, text)?),
            "TOOL_CALL_START" => Self::ToolCallStart(typed(&kind, text)?),
            "TOOL_CALL_ARGS" => Self::ToolCallArgs(typed(&kind, text)?),
            "TOOL_CALL_END" => Self::ToolCallEnd(typed(&kind, text)?),
            "TOOL_CALL_CHUNK" => Self::ToolCallChunk(typed(&kind, text)?),
            "TOOL_CALL_RESULT" => Self::ToolCallResult(typed(&kind, text)?),
            "STATE_SNAPSHOT" => Self::StateSnapshot(typed(&kind, text)?),
            _ => Self::Other { event_type: kind },
        })
    }

    /// The event's `type` as on the wire.
    pub fn event_type(&self) -> &str {
        match self {
            Self::RunStarted(_) => "RUN_STARTED",
            Self::RunFinished(_) => "RUN_FINISHED",
            Self::RunError(_) => "RUN_ERROR",
            Self::TextMessageStart(_) => "TEXT_MESSAGE_START",
            Self::TextMessageContent(_) => "TEXT_MESSAGE_CONTENT",
            Self::TextMessageEnd(_) => "TEXT_MESSAGE_END",
            Self::TextMessageChunk(_) => "TEXT_MESSAGE_CHUNK",
            Self::ToolCallStart(_) => "TOOL_CALL_START",
            Self::ToolCallArgs(_) => "TOOL_CALL_ARGS",
            Self::ToolCallEnd(_) => "TOOL_CALL_END",
            Self::ToolCallChunk(_) => "TOOL_CALL_CHUNK",
            Self::ToolCallResult(_) => "TOOL_CALL_RESULT",
            Self::StateSnapshot(_) => "STATE_SNAPSHOT",
            Self::Other { event_type } => event_type,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_events_decode_and_unknown_ones_keep_their_type() {
        let start = AgUiEvent::from_json(
            r#"{"type":"TOOL_CALL_START","parentMessageId":"p","toolCallId":"c1","toolCallName":"devices__disable","extra":1}"#,
        )
        .unwrap();
        assert_eq!(
            start,
            AgUiEvent::ToolCallStart(ToolCallStart {
                tool_call_id: "c1".into(),
                tool_call_name: "devices__disable".into(),
                parent_message_id: Some("p".into()),
            })
        );
        let other = AgUiEvent::from_json(r#"{"type":"STEP_STARTED","stepName":"x"}"#).unwrap();
        assert_eq!(other.event_type(), "STEP_STARTED");
        let finished = AgUiEvent::from_json(
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"approval","toolCallId":"c1"}]}}"#,
        )
        .unwrap();
        let AgUiEvent::RunFinished(RunFinished {
            outcome: Some(RunOutcome::Interrupt { interrupts }),
            ..
        }) = finished
        else {
            panic!("not an interrupt: {finished:?}");
        };
        assert_eq!(interrupts[0].tool_call_id.as_deref(), Some("c1"));
    }

    #[test]
    fn bad_events_say_what_is_wrong() {
        assert_eq!(
            AgUiEvent::from_json("{\"type\":").unwrap_err(),
            "not JSON (line 1, column 8)"
        );
        assert_eq!(
            AgUiEvent::from_json("[1]").unwrap_err(),
            "not an object with a string `type`"
        );
        assert_eq!(
            AgUiEvent::from_json(r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c"}"#).unwrap_err(),
            "a TOOL_CALL_ARGS event: missing field `delta` at line 1 column 42"
        );
    }
}
