//! Invocation results as tool results (docs/agents.md, "Results").
//!
//! A success becomes the output as JSON text (and, for MCP, as
//! `structuredContent` when it may be sent). An error becomes a text the
//! model can act on — `CODE: message` followed by what to do next for the
//! error's `retry` value — plus the error itself as JSON
//! (`{"code","message","retry","details"}`).

use serde_json::{Map, Value};

use super::mcp::{McpCallToolResult, McpContent};
use super::OutputSchema;
use crate::invocation::{AgentError, AgentInvocationResult, Retry};

/// What the model should do next, per `retry` value.
pub fn retry_hint(retry: Retry) -> &'static str {
    match retry {
        Retry::No => "Do not retry this call; tell the user what happened.",
        Retry::Yes => "The same call may succeed if you make it again later.",
        Retry::AfterRefresh => {
            "The application's tools have changed: list the tools again, then use a current tool."
        }
        Retry::AfterDelay => "Wait a moment, then make the same call again.",
        Retry::WithConfirmation => {
            "The user is asked to confirm this call in the application; you cannot confirm it yourself. Once the user has confirmed, make the same call again."
        }
        Retry::WithChanges => "Change the arguments as the message says, then call the tool again.",
    }
}

/// `CODE: message hint` — the first text block of an error result.
pub fn error_text(error: &AgentError) -> String {
    format!(
        "{}: {} {}",
        error.code,
        error.message,
        retry_hint(error.retry)
    )
}

fn error_json(error: &AgentError) -> Map<String, Value> {
    match serde_json::to_value(error) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// A tool result as one text, for provider APIs (OpenAI
/// `function_call_output`, Anthropic `tool_result`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResultText {
    /// Success: the output as compact JSON. Error: [`error_text`], a
    /// newline, and the error as compact JSON.
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolResultText {
    /// The text of a result.
    pub fn new(result: &AgentInvocationResult) -> Self {
        match result {
            AgentInvocationResult::Ok { output, .. } => Self {
                text: output.as_ref().unwrap_or(&Value::Null).to_string(),
                is_error: false,
            },
            AgentInvocationResult::Error { error, .. } => Self {
                text: format!(
                    "{}\n{}",
                    error_text(error),
                    Value::Object(error_json(error))
                ),
                is_error: true,
            },
        }
    }

    /// Anthropic: `{"type":"tool_result","tool_use_id","content","is_error"}`.
    pub fn anthropic_tool_result(&self, tool_use_id: &str) -> Value {
        serde_json::json!({
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.text,
            "is_error": self.is_error,
        })
    }

    /// OpenAI Responses: `{"type":"function_call_output","call_id","output"}`.
    pub fn openai_function_call_output(&self, call_id: &str) -> Value {
        serde_json::json!({"type": "function_call_output", "call_id": call_id, "output": self.text})
    }

    /// OpenAI Chat Completions: `{"role":"tool","tool_call_id","content"}`.
    pub fn openai_tool_message(&self, call_id: &str) -> Value {
        serde_json::json!({"role": "tool", "tool_call_id": call_id, "content": self.text})
    }
}

/// The MCP result of a tool with this output schema (`None`: none
/// declared). See [`CatalogTool::mcp_result`](super::CatalogTool::mcp_result).
pub fn mcp_result(
    result: &AgentInvocationResult,
    output_schema: Option<&OutputSchema>,
) -> McpCallToolResult {
    match result {
        AgentInvocationResult::Ok { output, .. } => {
            let output = output.as_ref().unwrap_or(&Value::Null);
            let structured_content = match (output_schema, output) {
                (Some(schema), value) if schema.wrapped => {
                    let mut m = Map::new();
                    m.insert(super::OUTPUT_WRAPPER.into(), value.clone());
                    Some(m)
                }
                (_, Value::Object(m)) => Some(m.clone()),
                _ => None,
            };
            McpCallToolResult {
                content: vec![McpContent::Text {
                    text: output.to_string(),
                }],
                structured_content,
                is_error: false,
            }
        }
        AgentInvocationResult::Error { error, .. } => {
            let json = error_json(error);
            McpCallToolResult {
                content: vec![
                    McpContent::Text {
                        text: error_text(error),
                    },
                    McpContent::Text {
                        text: Value::Object(json.clone()).to_string(),
                    },
                ],
                // A client validates structuredContent against a declared
                // outputSchema even on errors: send it only when none is.
                structured_content: output_schema.is_none().then_some(json),
                is_error: true,
            }
        }
    }
}
