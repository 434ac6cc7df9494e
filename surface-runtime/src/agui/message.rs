//! What a client sends: the thread's messages and the `RunAgentInput` of
//! one run, in AG-UI's JSON shapes (`@ag-ui/core` 1.0).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One function call of an assistant message (`toolCalls[]`):
/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgUiToolCall {
    /// The call's id (the agent's `toolCallId`).
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tool and its arguments.
    pub function: AgUiFunctionCall,
}

/// `toolCalls[].function`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgUiFunctionCall {
    /// The tool's name as the agent called it.
    pub name: String,
    /// The arguments as JSON text, never empty (`{}` when the agent sent
    /// none: agents such as `@ag-ui/mastra` `JSON.parse` it).
    pub arguments: String,
}

impl AgUiToolCall {
    /// A function call; empty `arguments` become `{}`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &str) -> Self {
        let arguments = if arguments.trim().is_empty() {
            "{}".to_string()
        } else {
            arguments.to_string()
        };
        Self {
            id: id.into(),
            kind: "function".into(),
            function: AgUiFunctionCall {
                name: name.into(),
                arguments,
            },
        }
    }
}

/// One message of the thread, as AG-UI's `messages[]` carries it (tagged by
/// `role`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
#[non_exhaustive]
pub enum AgUiMessage {
    /// What the user typed.
    User {
        /// The message id.
        id: String,
        /// The text.
        content: String,
    },
    /// What the agent said and the tools it called.
    Assistant {
        /// The message id (the agent's).
        id: String,
        /// Its text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Its tool calls, if any.
        #[serde(default, rename = "toolCalls", skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<AgUiToolCall>,
    },
    /// A tool's result.
    Tool {
        /// The message id.
        id: String,
        /// The result as text ([`crate::export::ToolResultText`]).
        content: String,
        /// The call answered.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
    },
    /// Instructions from the application (`developer`).
    Developer {
        /// The message id.
        id: String,
        /// The text.
        content: String,
    },
    /// Instructions from the application (`system`).
    System {
        /// The message id.
        id: String,
        /// The text.
        content: String,
    },
}

impl AgUiMessage {
    /// The message id.
    pub fn id(&self) -> &str {
        match self {
            Self::User { id, .. }
            | Self::Assistant { id, .. }
            | Self::Tool { id, .. }
            | Self::Developer { id, .. }
            | Self::System { id, .. } => id,
        }
    }

    /// A rough size in bytes (text and arguments), for the thread's bound.
    pub(crate) fn weight(&self) -> usize {
        64 + match self {
            Self::Assistant {
                content,
                tool_calls,
                ..
            } => {
                content.as_ref().map_or(0, String::len)
                    + tool_calls
                        .iter()
                        .map(|c| 64 + c.function.name.len() + c.function.arguments.len())
                        .sum::<usize>()
            }
            Self::User { content, .. }
            | Self::Tool { content, .. }
            | Self::Developer { content, .. }
            | Self::System { content, .. } => content.len(),
        }
    }
}

/// One tool declared to the agent (`tools[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgUiTool {
    /// The tool name (the catalog's, in `[A-Za-z0-9_-]`).
    pub name: String,
    /// What it does, with the view's context.
    pub description: String,
    /// The agent-facing input schema (bound fields absent).
    pub parameters: Value,
}

/// One piece of context (`context[]`): the agent decides how to use it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgUiContext {
    /// What it is.
    pub description: String,
    /// The context itself, as text.
    pub value: String,
}

/// The body of one run's `POST` (`RunAgentInput`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation.
    pub thread_id: String,
    /// This run (fresh per run).
    pub run_id: String,
    /// `"1.0"`.
    pub protocol_version: &'static str,
    /// The state the run starts from (`{}` unless the application sets
    /// one).
    pub state: Value,
    /// The whole thread so far.
    pub messages: Vec<AgUiMessage>,
    /// The page's tools for this run.
    pub tools: Vec<AgUiTool>,
    /// The application's context for this run.
    pub context: Vec<AgUiContext>,
    /// Anything the application forwards to the agent (`{}` by default).
    pub forwarded_props: Value,
}

/// The protocol version this client speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

impl RunAgentInput {
    /// An input with empty state and forwarded props.
    pub fn new(thread_id: String, run_id: String) -> Self {
        Self {
            thread_id,
            run_id,
            protocol_version: PROTOCOL_VERSION,
            state: Value::Object(Map::new()),
            messages: Vec::new(),
            tools: Vec::new(),
            context: Vec::new(),
            forwarded_props: Value::Object(Map::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The second run of the recorded `disable` exchange, as the official
    /// `HttpAgent` sent it, reads back into the same messages.
    #[test]
    fn the_recorded_messages_round_trip() {
        let recorded = serde_json::json!([
            {"id": "msg-user-1", "role": "user", "content": "disable"},
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": "call-disable-1", "type": "function",
              "function": {"name": "devices_disable", "arguments": "{\"reason\":\"maintenance\"}"}}]},
            {"id": "msg-tool-1", "role": "tool", "content": "{}", "toolCallId": "call-disable-1"}
        ]);
        let messages: Vec<AgUiMessage> = serde_json::from_value(recorded.clone()).unwrap();
        assert_eq!(
            messages[1],
            AgUiMessage::Assistant {
                id: "a1".into(),
                content: None,
                tool_calls: vec![AgUiToolCall::new(
                    "call-disable-1",
                    "devices_disable",
                    "{\"reason\":\"maintenance\"}"
                )],
            }
        );
        assert_eq!(serde_json::to_value(&messages).unwrap(), recorded);
        assert_eq!(AgUiToolCall::new("c", "t", " ").function.arguments, "{}");
    }
}
