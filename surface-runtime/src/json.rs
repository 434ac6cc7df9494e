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

/// The JSON type of `value` with its article (`"null"`, `"a boolean"`,
/// `"a number"`, `"a string"`, `"an array"`, `"an object"`), for messages
/// that read "expected an object, found a string".
pub(crate) fn type_phrase(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
