//! Reading keyword values of a schema object: its `type`, its `required`
//! names, the strings an `enum`/`const` pins, integer bounds.

use serde_json::{Map, Value};

use crate::types::model::Ty;

pub(super) fn type_name(s: &Map<String, Value>) -> Option<&str> {
    s.get("type").and_then(Value::as_str)
}

/// `{"type": "null"}` or `{"const": null}` or `{"enum": [null]}`.
pub(super) fn is_null_schema(s: &Value) -> bool {
    let Some(s) = s.as_object() else { return false };
    type_name(s) == Some("null")
        || s.get("const") == Some(&Value::Null)
        || s.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.len() == 1 && e[0].is_null())
}

/// The string a schema pins a value to: `{"const": "a"}` or
/// `{"enum": ["a"]}`.
pub(super) fn string_const(s: &Value) -> Option<&str> {
    let s = s.as_object()?;
    if let Some(c) = s.get("const") {
        return c.as_str();
    }
    match s.get("enum")?.as_array()?.as_slice() {
        [Value::String(v)] => Some(v),
        _ => None,
    }
}

/// The strings of a string-only `enum`/`const` schema.
pub(super) fn string_values(s: &Value) -> Option<Vec<String>> {
    let s = s.as_object()?;
    if let Some(c) = s.get("const") {
        return c.as_str().map(|v| vec![v.to_string()]);
    }
    let values = s.get("enum")?.as_array()?;
    values
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

pub(super) fn required_set(s: &Map<String, Value>) -> Vec<String> {
    s.get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `i64` (zod's ±2^53 bounds fit), or `u64` when the bounds need it
/// (`minimum` ≥ 0 and `maximum` above `i64::MAX`).
pub(super) fn integer_type(s: &Map<String, Value>) -> Ty {
    let bound = |k: &str| s.get(k).and_then(Value::as_f64);
    let min = bound("minimum").or(bound("exclusiveMinimum"));
    let max = bound("maximum").or(bound("exclusiveMaximum"));
    match (min, max) {
        (Some(min), Some(max)) if min >= 0.0 && max > i64::MAX as f64 => Ty::U64,
        _ => Ty::I64,
    }
}

pub(super) fn json_short(v: &Value) -> String {
    let text = v.to_string();
    if text.len() > 200 {
        format!(
            "{}…",
            &text[..text.char_indices().nth(200).map_or(text.len(), |(i, _)| i)]
        )
    } else {
        text
    }
}
