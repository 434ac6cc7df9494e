//! The binding rules on schemas, written once: the registry applies them
//! when a binding registers, the agent host when it verifies an
//! announced descriptor.

use serde_json::{json, Value};

use super::BoundFieldDescriptor;

/// Suffix appended to the description of an overridable bound field in the
/// agent-facing schema (binding rule 3).
pub const OVERRIDABLE_NOTE: &str =
    "Optional: defaults to the current UI value at execution when omitted.";

/// The agent-facing input schema (binding rule 1): `full` minus the
/// `locked` top-level fields (removed from `properties` and `required`);
/// `overridable` fields stay, leave `required` (the bound value is the
/// default) and get [`OVERRIDABLE_NOTE`] appended to their `description`.
/// When every property is locked the result is
/// `{"type":"object","properties":{},"additionalProperties":false}`. A
/// schema that is not an object, or a call with nothing bound, returns
/// `full` unchanged.
pub fn agent_input_schema(full: &Value, locked: &[&str], overridable: &[&str]) -> Value {
    if locked.is_empty() && overridable.is_empty() {
        return full.clone();
    }
    let mut schema = full.clone();
    let Some(obj) = schema.as_object_mut() else {
        return schema;
    };
    let mut all_locked = false;
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for name in locked {
            props.remove(*name);
        }
        for name in overridable {
            if let Some(prop) = props.get_mut(*name) {
                annotate_overridable(prop);
            }
        }
        all_locked = props.is_empty() && !locked.is_empty();
    }
    if all_locked {
        return json!({"type": "object", "properties": {}, "additionalProperties": false});
    }
    if let Some(Value::Array(required)) = obj.get_mut("required") {
        required.retain(|r| {
            r.as_str()
                .is_none_or(|r| !locked.contains(&r) && !overridable.contains(&r))
        });
        if required.is_empty() {
            obj.remove("required");
        }
    }
    schema
}

fn annotate_overridable(prop: &mut Value) {
    match prop {
        Value::Object(map) => {
            let description = match map.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} ({OVERRIDABLE_NOTE})"),
                _ => OVERRIDABLE_NOTE.to_string(),
            };
            map.insert("description".into(), Value::String(description));
        }
        Value::Bool(true) => *prop = json!({ "description": OVERRIDABLE_NOTE }),
        _ => {}
    }
}

/// [`agent_input_schema`] of `full` for these bound fields: the locked
/// ones removed, the overridable ones annotated.
pub(crate) fn reduced_input_schema(full: &Value, bound: &[BoundFieldDescriptor]) -> Value {
    let names = |locked: bool| -> Vec<&str> {
        bound
            .iter()
            .filter(|f| f.locked == locked)
            .map(|f| f.path.as_str())
            .collect()
    };
    agent_input_schema(full, &names(true), &names(false))
}

/// The first of `fields` that is not a top-level property of
/// `input_schema` (only top-level input fields bind), or `None`.
pub(crate) fn unknown_bound_field<'a>(
    input_schema: &Value,
    mut fields: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let properties = input_schema.get("properties").and_then(Value::as_object);
    fields.find(|field| !properties.is_some_and(|p| p.contains_key(*field)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binding::BindingSource;

    #[test]
    fn d7_reduction_removes_locked_fields_from_properties_and_required() {
        let full = json!({"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": true},
            "required": ["a", "b", "c"], "$defs": {"x": {}}});
        assert_eq!(
            agent_input_schema(&full, &["a"], &[]),
            json!({"type": "object",
                "properties": {"b": {"type": "integer"}, "c": true},
                "required": ["b", "c"], "$defs": {"x": {}}})
        );
        // Overridable: stays, leaves `required`, annotated.
        assert_eq!(
            agent_input_schema(&full, &["a"], &["b", "c"]),
            json!({"type": "object",
                "properties": {"b": {"type": "integer", "description": OVERRIDABLE_NOTE},
                               "c": {"description": OVERRIDABLE_NOTE}},
                "$defs": {"x": {}}})
        );
        // All locked.
        assert_eq!(
            agent_input_schema(&full, &["a", "b", "c"], &[]),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
        // Nothing bound: unchanged.
        assert_eq!(agent_input_schema(&full, &[], &[]), full);
        // Not an object schema: unchanged.
        assert_eq!(agent_input_schema(&json!(true), &["a"], &[]), json!(true));
    }

    #[test]
    fn reduced_schema_splits_bound_fields_into_locked_and_overridable() {
        let full = json!({"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a", "b"]});
        let field = |path: &str, locked| BoundFieldDescriptor {
            path: path.into(),
            locked,
            source: BindingSource::UiState,
        };
        assert_eq!(
            reduced_input_schema(&full, &[field("a", true), field("b", false)]),
            agent_input_schema(&full, &["a"], &["b"])
        );
        assert_eq!(reduced_input_schema(&full, &[]), full);
    }

    #[test]
    fn only_top_level_properties_can_be_bound() {
        let schema = json!({"type": "object", "properties": {"a": {}, "b": {}}});
        assert_eq!(unknown_bound_field(&schema, ["a", "b"].into_iter()), None);
        assert_eq!(
            unknown_bound_field(&schema, ["a", "c", "d"].into_iter()),
            Some("c")
        );
        assert_eq!(
            unknown_bound_field(&json!({"type": "object"}), ["a"].into_iter()),
            Some("a")
        );
    }
}
