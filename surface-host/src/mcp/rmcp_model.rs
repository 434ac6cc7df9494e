//! The export module's MCP shapes ([`surface_runtime::export::mcp`]) as
//! rmcp's model types, built field by field (no JSON in between).
//!
//! Plain functions rather than `From` impls: both sides are foreign to
//! this crate (the orphan rule), and `surface-runtime` has no rmcp
//! dependency (it builds for wasm32). Each result equals what
//! `serde_json::from_value(serde_json::to_value(shape))` gives — the
//! fields our shapes have no counterpart for (`icons`, `_meta`,
//! `resultType`, pagination, annotation `title`) are absent.
//!
//! ```
//! use serde_json::json;
//! use surface_host::mcp::rmcp_model;
//! use surface_runtime::export::{McpCallToolResult, McpContent, McpTool};
//!
//! let tool = McpTool {
//!     name: "devices__list".into(),
//!     title: None,
//!     description: Some("List devices".into()),
//!     input_schema: json!({"type": "object"}),
//!     output_schema: None,
//!     annotations: None,
//! };
//! let tool = rmcp_model::tool(tool).unwrap();
//! assert_eq!(tool.name, "devices__list");
//! assert_eq!(tool.input_schema["type"], "object");
//!
//! let result = rmcp_model::call_tool_result(McpCallToolResult {
//!     content: vec![McpContent::Text { text: "[]".into() }],
//!     structured_content: None,
//!     is_error: false,
//! });
//! assert_eq!(result.is_error, Some(false));
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolResult, ContentBlock, ListToolsResult, ProtocolVersion, Tool, ToolAnnotations,
};
use serde_json::Value;
use surface_runtime::export::{McpCallToolResult, McpContent, McpTool, McpToolAnnotations};

/// Why an MCP shape has no rmcp counterpart.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// rmcp's `Tool` holds its input schema as a JSON object; this tool's
    /// is something else. The export never produces one: an exported
    /// tool's input schema has `"type": "object"` at the root.
    #[error("the input schema of tool `{tool}` is {found}, not a JSON object")]
    InputSchemaNotObject {
        /// The tool name.
        tool: String,
        /// What the schema is (`"an array"`, `"a boolean"`, …).
        found: &'static str,
    },
    /// The same for the output schema (the export wraps a non-object
    /// output schema as `{"result": …}`, so it never produces one either).
    #[error("the output schema of tool `{tool}` is {found}, not a JSON object")]
    OutputSchemaNotObject {
        /// The tool name.
        tool: String,
        /// What the schema is.
        found: &'static str,
    },
}

/// rmcp's `Tool`: name, title, description, input and output schemas and
/// annotations as they are; no icons, no `_meta`.
///
/// # Errors
/// [`ConversionError::InputSchemaNotObject`] /
/// [`ConversionError::OutputSchemaNotObject`] when a schema is not a JSON
/// object (`true`, say).
pub fn tool(tool: McpTool) -> Result<Tool, ConversionError> {
    let input_schema = match tool.input_schema {
        Value::Object(schema) => schema,
        other => {
            return Err(ConversionError::InputSchemaNotObject {
                tool: tool.name,
                found: json_kind(&other),
            })
        }
    };
    let output_schema = match tool.output_schema {
        None => None,
        Some(Value::Object(schema)) => Some(Arc::new(schema)),
        Some(other) => {
            return Err(ConversionError::OutputSchemaNotObject {
                tool: tool.name,
                found: json_kind(&other),
            })
        }
    };
    let mut out = Tool::new_with_raw(
        Cow::Owned(tool.name),
        tool.description.map(Cow::Owned),
        Arc::new(input_schema),
    );
    out.title = tool.title;
    out.output_schema = output_schema;
    out.annotations = tool.annotations.map(tool_annotations);
    Ok(out)
}

/// rmcp's `ToolAnnotations`: the four hints as they are, no `title`.
pub fn tool_annotations(annotations: McpToolAnnotations) -> ToolAnnotations {
    ToolAnnotations::from_raw(
        None,
        annotations.read_only_hint,
        annotations.destructive_hint,
        annotations.idempotent_hint,
        annotations.open_world_hint,
    )
}

/// The `tools/list` result of these tools, in order: one page (no
/// `nextCursor`), no `resultType`, `_meta`, `ttlMs` or `cacheScope`.
///
/// # Errors
/// The first tool's [`ConversionError`] (see [`tool`]).
pub fn list_tools_result(tools: Vec<McpTool>) -> Result<ListToolsResult, ConversionError> {
    Ok(ListToolsResult {
        result_type: None,
        meta: None,
        next_cursor: None,
        ttl_ms: None,
        cache_scope: None,
        tools: tools.into_iter().map(tool).collect::<Result<_, _>>()?,
    })
}

/// rmcp's content block of ours (a text block).
pub fn content_block(content: McpContent) -> ContentBlock {
    match content {
        McpContent::Text { text } => ContentBlock::text(text),
    }
}

/// rmcp's `CallToolResult`: the content blocks in order, the structured
/// content (a JSON object) when there is one, `isError` always set; no
/// `resultType`, no `_meta`. Never fails.
pub fn call_tool_result(result: McpCallToolResult) -> CallToolResult {
    let mut out = CallToolResult::default();
    out.result_type = None;
    out.content = result.content.into_iter().map(content_block).collect();
    out.structured_content = result.structured_content.map(Value::Object);
    out.is_error = Some(result.is_error);
    out
}

/// rmcp's protocol version of a revision date (`"2025-06-18"`); `None`
/// for a revision rmcp does not know (rmcp offers no other way to make
/// one).
pub fn protocol_version(revision: &str) -> Option<ProtocolVersion> {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|v| v.as_str() == revision)
        .cloned()
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map, Value};

    use super::*;
    use crate::mcp::PROTOCOL_VERSIONS;

    /// What the JSON round trip this module replaces gave.
    macro_rules! round_trip {
        ($t:ty, $shape:expr) => {
            serde_json::from_value::<$t>(serde_json::to_value($shape).unwrap()).unwrap()
        };
    }

    fn full_tool() -> McpTool {
        McpTool {
            name: "devices__disable".into(),
            title: Some("devices.disable".into()),
            description: Some("Disable devices".into()),
            input_schema: json!({"type": "object", "properties": {"ids": {"type": "array"}}}),
            output_schema: Some(json!({"type": "object", "required": ["result"]})),
            annotations: Some(McpToolAnnotations {
                read_only_hint: Some(false),
                destructive_hint: Some(true),
                idempotent_hint: Some(true),
                open_world_hint: Some(false),
            }),
        }
    }

    fn minimal_tool() -> McpTool {
        McpTool {
            name: "t".into(),
            title: None,
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn a_tool_with_every_field_converts_as_the_json_round_trip_did() {
        let converted = tool(full_tool()).unwrap();
        assert_eq!(converted, round_trip!(Tool, &full_tool()));
        assert_eq!(converted.name, "devices__disable");
        assert_eq!(converted.title.as_deref(), Some("devices.disable"));
        assert_eq!(converted.description.as_deref(), Some("Disable devices"));
        assert_eq!(
            Value::Object((*converted.input_schema).clone()),
            json!({"type": "object", "properties": {"ids": {"type": "array"}}})
        );
        assert_eq!(
            converted
                .output_schema
                .as_deref()
                .cloned()
                .map(Value::Object),
            Some(json!({"type": "object", "required": ["result"]}))
        );
        assert_eq!(
            converted.annotations,
            Some(ToolAnnotations::from_raw(
                None,
                Some(false),
                Some(true),
                Some(true),
                Some(false)
            ))
        );
        assert_eq!((converted.icons, converted.meta), (None, None));
        // On the wire: exactly our shape.
        assert_eq!(
            serde_json::to_value(tool(full_tool()).unwrap()).unwrap(),
            serde_json::to_value(full_tool()).unwrap()
        );
    }

    #[test]
    fn a_minimal_tool_converts_as_the_json_round_trip_did() {
        let converted = tool(minimal_tool()).unwrap();
        assert_eq!(converted, round_trip!(Tool, &minimal_tool()));
        assert_eq!(converted.name, "t");
        assert_eq!(converted.title, None);
        assert_eq!(converted.description, None);
        assert_eq!(converted.output_schema, None);
        assert_eq!(converted.annotations, None);
        assert_eq!(
            serde_json::to_value(converted).unwrap(),
            json!({"name": "t", "inputSchema": {"type": "object"}})
        );
        let empty = McpToolAnnotations::default();
        assert_eq!(
            tool_annotations(empty.clone()),
            round_trip!(ToolAnnotations, &empty)
        );
        assert_eq!(tool_annotations(empty), ToolAnnotations::new());
    }

    #[test]
    fn a_schema_that_is_not_an_object_is_a_conversion_error() {
        let mut bad = minimal_tool();
        bad.input_schema = json!(true);
        assert!(serde_json::from_value::<Tool>(serde_json::to_value(&bad).unwrap()).is_err());
        let err = tool(bad).unwrap_err();
        assert_eq!(
            err,
            ConversionError::InputSchemaNotObject {
                tool: "t".into(),
                found: "a boolean"
            }
        );
        assert_eq!(
            err.to_string(),
            "the input schema of tool `t` is a boolean, not a JSON object"
        );
        let mut bad = minimal_tool();
        bad.output_schema = Some(json!([]));
        assert!(serde_json::from_value::<Tool>(serde_json::to_value(&bad).unwrap()).is_err());
        let err = tool(bad.clone()).unwrap_err();
        assert_eq!(
            err,
            ConversionError::OutputSchemaNotObject {
                tool: "t".into(),
                found: "an array"
            }
        );
        assert_eq!(
            err.to_string(),
            "the output schema of tool `t` is an array, not a JSON object"
        );
        // A list fails on its first bad tool.
        assert_eq!(list_tools_result(vec![minimal_tool(), bad]), Err(err));
    }

    #[test]
    fn a_tool_list_converts_as_the_json_round_trip_did() {
        for tools in [vec![], vec![full_tool(), minimal_tool()]] {
            let converted = list_tools_result(tools.clone()).unwrap();
            let expected = round_trip!(ListToolsResult, &json!({ "tools": tools }));
            assert_eq!(converted, expected);
            assert_eq!(converted.tools.len(), tools.len());
            assert_eq!(
                serde_json::to_value(&converted).unwrap(),
                json!({ "tools": tools })
            );
        }
    }

    #[test]
    fn a_call_result_with_every_field_converts_as_the_json_round_trip_did() {
        let mut structured = Map::new();
        structured.insert("code".into(), json!("CAPABILITY_NOT_AVAILABLE"));
        let full = McpCallToolResult {
            content: vec![
                McpContent::Text {
                    text: "CAPABILITY_NOT_AVAILABLE: not now".into(),
                },
                McpContent::Text {
                    text: r#"{"code":"CAPABILITY_NOT_AVAILABLE"}"#.into(),
                },
            ],
            structured_content: Some(structured),
            is_error: true,
        };
        let converted = call_tool_result(full.clone());
        assert_eq!(converted, round_trip!(CallToolResult, &full));
        assert_eq!(
            converted.content,
            vec![
                ContentBlock::text("CAPABILITY_NOT_AVAILABLE: not now"),
                ContentBlock::text(r#"{"code":"CAPABILITY_NOT_AVAILABLE"}"#)
            ]
        );
        assert_eq!(
            converted.structured_content,
            Some(json!({"code": "CAPABILITY_NOT_AVAILABLE"}))
        );
        assert_eq!(converted.is_error, Some(true));
        assert_eq!((converted.result_type, converted.meta), (None, None));
    }

    #[test]
    fn a_minimal_call_result_converts_as_the_json_round_trip_did() {
        let minimal = McpCallToolResult {
            content: Vec::new(),
            structured_content: None,
            is_error: false,
        };
        let converted = call_tool_result(minimal.clone());
        assert_eq!(converted, round_trip!(CallToolResult, &minimal));
        assert_eq!(
            serde_json::to_value(&converted).unwrap(),
            json!({"content": [], "isError": false})
        );
    }

    #[test]
    fn protocol_versions_convert_as_the_json_round_trip_did() {
        for revision in PROTOCOL_VERSIONS {
            let expected = round_trip!(ProtocolVersion, revision);
            assert_eq!(protocol_version(revision), Some(expected));
        }
        assert_eq!(
            protocol_version("2025-06-18"),
            Some(ProtocolVersion::V_2025_06_18)
        );
        assert_eq!(protocol_version("2023-01-01"), None);
    }
}
