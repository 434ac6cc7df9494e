//! MCP wire shapes (protocol revision 2025-06-18): the `Tool` definition of
//! `tools/list` and the `CallToolResult` of `tools/call` (docs/agents.md,
//! "MCP"). Plain serde types; an MCP server converts them into its SDK's
//! types (or serializes them as they are).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One MCP `Tool`: `{"name","title","description","inputSchema",
/// "outputSchema","annotations"}` (camelCase on the wire).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// The tool name (see [`naming`](super::naming)).
    pub name: String,
    /// Human-readable title for UIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Model-facing description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent-facing input schema, normalized; `"type": "object"` at the
    /// root.
    pub input_schema: Value,
    /// The declared output schema, normalized; `"type": "object"` at the
    /// root (a non-object output schema is wrapped as `{"result": …}`, see
    /// [`OutputSchema`](super::OutputSchema)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints derived from the effect class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpToolAnnotations>,
}

/// MCP `ToolAnnotations`. Absent hints take MCP's defaults
/// (`readOnlyHint` false, `destructiveHint` true, `idempotentHint` false,
/// `openWorldHint` true).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolAnnotations {
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating the call with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches entities outside the application's own domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// One content block of a tool result. Only text is produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum McpContent {
    /// `{"type":"text","text":…}`.
    Text {
        /// The text.
        text: String,
    },
}

/// An MCP `CallToolResult`: `{"content":[…],"structuredContent":{…},
/// "isError":bool}` (camelCase on the wire; `isError` always present).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCallToolResult {
    /// Text blocks (the serialized output, or the error text and the error
    /// JSON).
    pub content: Vec<McpContent>,
    /// The output (or the error) as a JSON object, when it may be sent: see
    /// [`CatalogTool::mcp_result`](super::CatalogTool::mcp_result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Map<String, Value>>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
}
