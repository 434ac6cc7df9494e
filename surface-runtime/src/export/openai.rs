//! OpenAI function-tool shapes (docs/agents.md, "OpenAI"): the Responses
//! API's flat `{"type":"function","name",…}` and Chat Completions'
//! `{"type":"function","function":{…}}`. `strict` is always written (the
//! Responses API defaults it to true when absent).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which schemas to send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OpenAiMode {
    /// Every tool with its normalized schema and `"strict": false`.
    #[default]
    Plain,
    /// Tools whose schema strict mode can express get the strict schema and
    /// `"strict": true`; the others the normalized schema and
    /// `"strict": false` (the reason is in
    /// [`CatalogTool::strict`](super::CatalogTool::strict)). Decode the
    /// calls with [`ToolCatalog::strict_invocation`](super::ToolCatalog::strict_invocation).
    Strict,
}

/// The constant `"function"` tag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionType {
    /// `"function"`.
    #[default]
    Function,
}

/// A Responses API function tool:
/// `{"type":"function","name","description","parameters","strict"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenAiResponsesTool {
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: FunctionType,
    /// The tool name.
    pub name: String,
    /// Model-facing description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parameters schema.
    pub parameters: Value,
    /// Whether strict schema adherence is on.
    pub strict: bool,
}

/// A Chat Completions function tool: `{"type":"function","function":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenAiChatTool {
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: FunctionType,
    /// The function.
    pub function: OpenAiFunction,
}

/// The `function` object of [`OpenAiChatTool`]:
/// `{"name","description","parameters","strict"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenAiFunction {
    /// The tool name.
    pub name: String,
    /// Model-facing description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parameters schema.
    pub parameters: Value,
    /// Whether strict schema adherence is on.
    pub strict: bool,
}
