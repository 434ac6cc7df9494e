//! Small JSON helpers shared across modules.

use serde_json::Value;

/// The JSON type name of `value` (`"null"`, `"boolean"`, `"number"`,
/// `"string"`, `"array"`, `"object"`), for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
