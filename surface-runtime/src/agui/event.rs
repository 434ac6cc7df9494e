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
#[derive(Clone, Debug, PartialEq)]
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
    pub message: Option<String>,
    /// The tool call it concerns, for a tool approval.
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
#[derive(Clone, Debug, PartialEq)]
pub struct RunFinished {
    /// Why it ended; `None` is success.
    pub outcome: Option<RunOutcome>,
    /// Token usage per provider and model, as the agent sent it.
    pub usage: Option<Value>,
}

/// `RUN_ERROR`: the run failed (often inside an HTTP 200 stream).
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    /// The agent's message.
    pub message: String,
    /// The agent's code, if any (e.g. `AGENT_ERROR`).
    pub code: Option<String>,
}

/// `TEXT_MESSAGE_START`.
#[derive(Clone, Debug, PartialEq)]
pub struct TextMessageStart {
    /// The message being opened.
    pub message_id: String,
}

/// `TEXT_MESSAGE_CONTENT` and `TEXT_MESSAGE_END` (the latter with an empty
/// `delta`).
#[derive(Clone, Debug, PartialEq)]
pub struct TextMessageContent {
    /// The message it belongs to.
    pub message_id: String,
    /// The text to append.
    pub delta: String,
}

/// `TEXT_MESSAGE_CHUNK`: start, content and end in one, every field
/// optional (a chunk without `messageId` continues the open message).
#[derive(Clone, Debug, PartialEq)]
pub struct TextMessageChunk {
    /// The message; a new id opens a new message.
    pub message_id: Option<String>,
    /// The text to append.
    pub delta: Option<String>,
}

/// `TOOL_CALL_START`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallStart {
    /// The call.
    pub tool_call_id: String,
    /// The tool the agent calls.
    pub tool_call_name: String,
    /// The assistant message the call belongs to.
    pub parent_message_id: Option<String>,
}

/// `TOOL_CALL_ARGS`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallArgs {
    /// The call.
    pub tool_call_id: String,
    /// The next piece of the arguments' JSON text.
    pub delta: String,
}

/// `TOOL_CALL_END`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallEnd {
    /// The call whose arguments are complete.
    pub tool_call_id: String,
}

/// `TOOL_CALL_CHUNK`: start and arguments in one, every field optional.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallChunk {
    /// The call; a new id starts a new call (it then needs a name).
    pub tool_call_id: Option<String>,
    /// The tool, on the chunk that starts the call.
    pub tool_call_name: Option<String>,
    /// The assistant message the call belongs to.
    pub parent_message_id: Option<String>,
    /// The next piece of the arguments.
    pub delta: Option<String>,
}

/// `TOOL_CALL_RESULT`: the agent ran the tool itself (a backend tool).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallResult {
    /// The tool message's id.
    pub message_id: Option<String>,
    /// The call answered.
    pub tool_call_id: String,
    /// What the tool returned, as text.
    pub content: String,
}

/// `STATE_SNAPSHOT`.
#[derive(Clone, Debug, PartialEq)]
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

const NOT_AN_EVENT: &str = "not an object with a string `type`";

/// Every field an acted-on event may have, read in one pass (one
/// deserializer for every type keeps the page's code small); each type
/// then takes what it needs, checking presence and type by hand.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(rename = "type")]
    kind: Option<Value>,
    thread_id: Option<Value>,
    run_id: Option<Value>,
    message_id: Option<Value>,
    delta: Option<Value>,
    tool_call_id: Option<Value>,
    tool_call_name: Option<Value>,
    parent_message_id: Option<Value>,
    content: Option<Value>,
    message: Option<Value>,
    code: Option<Value>,
    outcome: Option<Value>,
    snapshot: Option<Value>,
    usage: Option<Value>,
}

/// A string field that must be there.
fn required(field: Option<Value>, name: &str) -> Result<String, String> {
    match field {
        Some(Value::String(text)) => Ok(text),
        None => Err(format!("missing field `{name}`")),
        Some(_) => Err(format!("field `{name}` is not a string")),
    }
}

/// A string field that may be absent (or `null`).
fn optional(field: Option<Value>, name: &str) -> Result<Option<String>, String> {
    match field {
        Some(Value::String(text)) => Ok(Some(text)),
        None => Ok(None),
        Some(_) => Err(format!("field `{name}` is not a string")),
    }
}

impl Wire {
    fn into_event(self, kind: String) -> Result<AgUiEvent, String> {
        Ok(match kind.as_str() {
            "RUN_STARTED" => AgUiEvent::RunStarted(RunStarted {
                thread_id: required(self.thread_id, "threadId")?,
                run_id: required(self.run_id, "runId")?,
            }),
            "RUN_FINISHED" => AgUiEvent::RunFinished(RunFinished {
                outcome: match self.outcome {
                    None => None,
                    Some(v) => {
                        Some(serde_json::from_value(v).map_err(|e| format!("`outcome`: {e}"))?)
                    }
                },
                usage: self.usage,
            }),
            "RUN_ERROR" => AgUiEvent::RunError(RunError {
                message: required(self.message, "message")?,
                code: optional(self.code, "code")?,
            }),
            "TEXT_MESSAGE_START" => AgUiEvent::TextMessageStart(TextMessageStart {
                message_id: required(self.message_id, "messageId")?,
            }),
            "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_END" => {
                let content = TextMessageContent {
                    message_id: required(self.message_id, "messageId")?,
                    delta: optional(self.delta, "delta")?.unwrap_or_default(),
                };
                match kind.as_str() {
                    "TEXT_MESSAGE_END" => AgUiEvent::TextMessageEnd(content),
                    _ => AgUiEvent::TextMessageContent(content),
                }
            }
            "TEXT_MESSAGE_CHUNK" => AgUiEvent::TextMessageChunk(TextMessageChunk {
                message_id: optional(self.message_id, "messageId")?,
                delta: optional(self.delta, "delta")?,
            }),
            "TOOL_CALL_START" => AgUiEvent::ToolCallStart(ToolCallStart {
                tool_call_id: required(self.tool_call_id, "toolCallId")?,
                tool_call_name: required(self.tool_call_name, "toolCallName")?,
                parent_message_id: optional(self.parent_message_id, "parentMessageId")?,
            }),
            "TOOL_CALL_ARGS" => AgUiEvent::ToolCallArgs(ToolCallArgs {
                tool_call_id: required(self.tool_call_id, "toolCallId")?,
                delta: required(self.delta, "delta")?,
            }),
            "TOOL_CALL_END" => AgUiEvent::ToolCallEnd(ToolCallEnd {
                tool_call_id: required(self.tool_call_id, "toolCallId")?,
            }),
            "TOOL_CALL_CHUNK" => AgUiEvent::ToolCallChunk(ToolCallChunk {
                tool_call_id: optional(self.tool_call_id, "toolCallId")?,
                tool_call_name: optional(self.tool_call_name, "toolCallName")?,
                parent_message_id: optional(self.parent_message_id, "parentMessageId")?,
                delta: optional(self.delta, "delta")?,
            }),
            "TOOL_CALL_RESULT" => AgUiEvent::ToolCallResult(ToolCallResult {
                message_id: optional(self.message_id, "messageId")?,
                tool_call_id: required(self.tool_call_id, "toolCallId")?,
                content: optional(self.content, "content")?.unwrap_or_default(),
            }),
            "STATE_SNAPSHOT" => AgUiEvent::StateSnapshot(StateSnapshot {
                snapshot: self.snapshot.ok_or("missing field `snapshot`")?,
            }),
            _ => AgUiEvent::Other { event_type: kind },
        })
    }
}

impl AgUiEvent {
    /// Decodes one event's JSON text (an SSE `data` field).
    ///
    /// # Errors
    /// A readable reason: not JSON (with line and column), not an object,
    /// no string `type`, or a known type missing a field or with a field of
    /// the wrong type (serde's message, which names the field).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let wire = match serde_json::from_str::<Wire>(text) {
            Ok(wire) => wire,
            Err(e) if e.is_data() => return Err(NOT_AN_EVENT.into()),
            Err(e) => {
                return Err(format!(
                    "not JSON (line {}, column {})",
                    e.line(),
                    e.column()
                ))
            }
        };
        let Some(Value::String(kind)) = &wire.kind else {
            return Err(NOT_AN_EVENT.into());
        };
        let kind: String = kind.chars().take(MAX_TYPE_CHARS).collect();
        wire.into_event(kind.clone())
            .map_err(|reason| format!("a {kind} event: {reason}"))
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
            "a TOOL_CALL_ARGS event: missing field `delta`"
        );
    }
}
