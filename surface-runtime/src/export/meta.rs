//! The meta mode of a tool export (`docs/agents.md`, "Meta mode"): instead
//! of one tool per capability the agent is given two, [`DISCOVER_TOOL`]
//! (find tools by words, with their schemas) and [`ACT_TOOL`] (call one by
//! name). Calls of `surface_act` become ordinary calls of the named tool,
//! through the same pipeline; `surface_discover` is answered from the
//! catalog without a call. For surfaces too large for one tool list.

use serde_json::{json, Map, Value};

use super::{
    clip, AnthropicTool, CatalogTool, McpCallToolResult, McpContent, McpTool, McpToolAnnotations,
    OpenAiFunction, ToolCall, ToolCallError, ToolCatalog,
};

/// The discovery tool's name.
pub const DISCOVER_TOOL: &str = "surface_discover";
/// The action tool's name.
pub const ACT_TOOL: &str = "surface_act";
/// Tools one `surface_discover` answer lists when the call gives no
/// `limit`.
pub const DEFAULT_DISCOVER_LIMIT: usize = 20;
/// The largest `limit` a `surface_discover` call may ask for.
pub const MAX_DISCOVER_LIMIT: usize = 50;
/// The longest `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 200;

/// How a catalog is exported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ToolMode {
    /// One tool per exported capability (the default).
    #[default]
    Direct,
    /// Two tools, `surface_discover` and `surface_act`, in front of every
    /// exported capability.
    Meta,
}

/// What a model's tool call is, once the meta tools are taken off
/// ([`ToolCatalog::resolve_call`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ResolvedCall {
    /// A `surface_discover` call, answered: its MCP result (structured
    /// content `{"surfaceVersion", "total", "matched", "tools": […],
    /// "more"}`).
    Discovered(McpCallToolResult),
    /// A call of one capability's tool: a direct call as it came, or the
    /// tool and arguments a `surface_act` named (same call id). Decode it
    /// with [`ToolCatalog::invocation`] (never `strict_invocation`:
    /// `surface_act` is not strict).
    Tool(ToolCall),
}

/// One of the two meta tools, before it takes a target's shape.
struct MetaTool {
    name: &'static str,
    description: &'static str,
    input_schema: Value,
    read_only: bool,
}

fn meta_tools() -> [MetaTool; 2] {
    [
        MetaTool {
            name: DISCOVER_TOOL,
            description: "Find the application's tools that can act in the current view. Give words to look for in tool names and descriptions (all must match), or no query to list them in order. Returns each tool's name, description, input schema and whether it is available now; call one with surface_act.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "description": "Words to look for; omit to list every tool."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_DISCOVER_LIMIT, "description": "How many tools to return (default 20)."}
                },
                "additionalProperties": false
            }),
            read_only: true,
        },
        MetaTool {
            name: ACT_TOOL,
            description: "Call one of the application's tools found with surface_discover: give its exact name and its arguments, which must follow the input schema surface_discover returned.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "description": "The tool's name, as surface_discover listed it."},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                },
                "required": ["tool"],
                "additionalProperties": false
            }),
            read_only: false,
        },
    ]
}

impl ToolCatalog {
    /// The MCP tools of a catalog in [`ToolMode::Meta`].
    pub(super) fn meta_mcp_tools() -> Vec<McpTool> {
        meta_tools()
            .into_iter()
            .map(|t| McpTool {
                name: t.name.into(),
                title: None,
                description: Some(t.description.into()),
                input_schema: t.input_schema,
                output_schema: None,
                annotations: Some(McpToolAnnotations {
                    read_only_hint: Some(t.read_only),
                    open_world_hint: Some(false),
                    ..McpToolAnnotations::default()
                }),
            })
            .collect()
    }

    /// The OpenAI functions of a catalog in [`ToolMode::Meta`] (never
    /// strict: `surface_act`'s arguments are any object).
    pub(super) fn meta_openai_functions() -> Vec<OpenAiFunction> {
        meta_tools()
            .into_iter()
            .map(|t| OpenAiFunction {
                name: t.name.into(),
                description: Some(t.description.into()),
                parameters: t.input_schema,
                strict: false,
            })
            .collect()
    }

    /// The Anthropic tools of a catalog in [`ToolMode::Meta`].
    pub(super) fn meta_anthropic_tools() -> Vec<AnthropicTool> {
        meta_tools()
            .into_iter()
            .map(|t| AnthropicTool {
                name: t.name.into(),
                description: Some(t.description.into()),
                input_schema: t.input_schema,
            })
            .collect()
    }

    /// Takes the meta tools off a model's call: in [`ToolMode::Meta`] a
    /// `surface_discover` call is answered here and a `surface_act` call
    /// becomes the call of the tool it names; any other call (and every
    /// call in [`ToolMode::Direct`]) is returned as it came.
    ///
    /// # Errors
    /// [`ToolCallError::ArgumentsNotObject`] when the meta call's arguments
    /// (or `surface_act`'s `arguments`) are not an object;
    /// [`ToolCallError::MetaArguments`] when they do not follow the meta
    /// tool's schema (an unexpected key, no string `tool`, a `query` that
    /// is not a string, a `limit` below 1); [`ToolCallError::UnknownTool`]
    /// for any other name in meta mode.
    pub fn resolve_call(&self, call: ToolCall) -> Result<ResolvedCall, ToolCallError> {
        if self.mode == ToolMode::Direct {
            return Ok(ResolvedCall::Tool(call));
        }
        let arguments = match call.arguments {
            None => Map::new(),
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(ToolCallError::ArgumentsNotObject {
                    name: clip(&call.name),
                    found: crate::json::type_phrase(&other),
                })
            }
        };
        match call.name.as_str() {
            DISCOVER_TOOL => {
                check_discover_arguments(&arguments)?;
                Ok(ResolvedCall::Discovered(self.discover(&arguments)))
            }
            ACT_TOOL => act(call.call_id, arguments),
            _ => Err(ToolCallError::UnknownTool {
                name: clip(&call.name),
                surface_version: self.surface_version,
            }),
        }
    }

    /// The answer to `surface_discover` with `arguments`: the exported
    /// tools whose name and description hold every word of `query`
    /// (case-insensitive), in catalog order, at most `limit`. A query or
    /// limit out of bounds is clamped (the first [`MAX_QUERY_CHARS`]
    /// characters; at most [`MAX_DISCOVER_LIMIT`]).
    fn discover(&self, arguments: &Map<String, Value>) -> McpCallToolResult {
        let query: String = arguments
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(MAX_QUERY_CHARS)
            .collect::<String>()
            .to_lowercase();
        let words: Vec<&str> = query.split_whitespace().collect();
        let limit =
            arguments
                .get("limit")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_DISCOVER_LIMIT, |l| {
                    usize::try_from(l)
                        .unwrap_or(MAX_DISCOVER_LIMIT)
                        .clamp(1, MAX_DISCOVER_LIMIT)
                });
        let total = self.tools().count();
        let matched: Vec<&CatalogTool> = self
            .tools()
            .filter(|t| {
                let text = format!("{} {}", t.name(), t.description()).to_lowercase();
                words.iter().all(|w| text.contains(w))
            })
            .collect();
        let listed: Vec<Value> = matched.iter().take(limit).map(|t| described(t)).collect();
        let mut output = Map::new();
        output.insert(
            "surfaceVersion".into(),
            Value::from(self.surface_version.to_string()),
        );
        output.insert("total".into(), Value::from(total));
        output.insert("matched".into(), Value::from(matched.len()));
        output.insert(
            "more".into(),
            Value::from(matched.len().saturating_sub(limit)),
        );
        output.insert("tools".into(), Value::Array(listed));
        McpCallToolResult {
            content: vec![McpContent::Text {
                text: Value::Object(output.clone()).to_string(),
            }],
            structured_content: Some(output),
            is_error: false,
        }
    }
}

/// What the model is told when a meta tool's arguments are wrong (fixed
/// text: nothing the model sent is echoed).
pub(super) fn arguments_message(tool: &str) -> &'static str {
    if tool == ACT_TOOL {
        "surface_act takes `tool`, the name of a tool surface_discover listed, and `arguments`, an object following that tool's input schema; nothing else. Put the tool's arguments inside `arguments`."
    } else {
        "surface_discover takes `query`, a string of words, and `limit`, an integer from 1 to 50; nothing else."
    }
}

/// `surface_discover`'s arguments follow its schema.
fn check_discover_arguments(arguments: &Map<String, Value>) -> Result<(), ToolCallError> {
    let fits = arguments.iter().all(|(key, value)| match key.as_str() {
        "query" => value.is_string(),
        "limit" => value.as_u64().is_some_and(|l| l >= 1),
        _ => false,
    });
    if fits {
        Ok(())
    } else {
        Err(ToolCallError::MetaArguments {
            tool: DISCOVER_TOOL,
        })
    }
}

/// One tool as `surface_discover` lists it.
fn described(tool: &CatalogTool) -> Value {
    let mut v = json!({
        "name": tool.name(),
        "description": tool.description(),
        "inputSchema": tool.input_schema(),
        "available": tool.available(),
    });
    if let Some(reason) = tool.unavailable_reason() {
        v["unavailableReason"] = Value::from(reason);
    }
    v
}

/// The call of the tool a `surface_act` names.
fn act(call_id: String, mut arguments: Map<String, Value>) -> Result<ResolvedCall, ToolCallError> {
    let refused = ToolCallError::MetaArguments { tool: ACT_TOOL };
    if arguments.keys().any(|k| k != "tool" && k != "arguments") {
        return Err(refused);
    }
    let Some(Value::String(tool)) = arguments.remove("tool") else {
        return Err(refused);
    };
    let inner = match arguments.remove("arguments") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v),
        Some(other) => {
            return Err(ToolCallError::ArgumentsNotObject {
                name: clip(&tool),
                found: crate::json::type_phrase(&other),
            })
        }
    };
    Ok(ResolvedCall::Tool(ToolCall::new(tool, call_id, inner)))
}
