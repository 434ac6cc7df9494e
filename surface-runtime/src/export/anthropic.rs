//! Anthropic Messages API tool shape (docs/agents.md, "Anthropic"):
//! `{"name","description","input_schema"}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One Anthropic client tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnthropicTool {
    /// The tool name.
    pub name: String,
    /// Model-facing description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The normalized agent-facing input schema (`"type": "object"` root).
    pub input_schema: Value,
}
