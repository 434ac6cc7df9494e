//! The structural comparison of two input schemas (docs/drift.md, "Input
//! schemas"): which differences accept more inputs (looser), which accept
//! fewer (stricter), and which cannot be proved either way (changed).

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use surface_runtime::manifest::canonical_json;

/// The deepest nesting the comparison follows; anything below is
/// "changed" (not provably narrowing).
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// Keywords that describe without constraining: a change in them alone
/// is neutral.
const ANNOTATIONS: [&str; 8] = [
    "description",
    "title",
    "examples",
    "$comment",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Upper bounds: raising or removing one accepts more.
const UPPER: [&str; 5] = [
    "maxLength",
    "maxItems",
    "maxProperties",
    "maximum",
    "exclusiveMaximum",
];

/// Lower bounds: lowering or removing one accepts more.
const LOWER: [&str; 5] = [
    "minLength",
    "minItems",
    "minProperties",
    "minimum",
    "exclusiveMinimum",
];

/// What a comparison found, each finding a short sentence naming the
/// JSON Pointer of the subschema.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Differences that accept more inputs.
    pub looser: Vec<String>,
    /// Differences that accept fewer inputs.
    pub stricter: Vec<String>,
    /// Differences neither provably looser nor stricter.
    pub changed: Vec<String>,
    /// Whether the schemas differ only in annotations or in equivalent
    /// forms (`3` and `3.0`, an absent and a `true` `additionalProperties`).
    pub reworded: bool,
}

/// Compares base schema `base` with current schema `current`.
pub fn compare(base: &Value, current: &Value) -> Findings {
    let mut findings = Findings::default();
    walk(base, current, "", 0, &mut findings);
    let constrained = !findings.looser.is_empty()
        || !findings.stricter.is_empty()
        || !findings.changed.is_empty();
    findings.reworded = !constrained && base != current;
    findings
}

fn at(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

fn walk(base: &Value, current: &Value, path: &str, depth: usize, out: &mut Findings) {
    if base == current {
        return;
    }
    if depth > MAX_SCHEMA_DEPTH {
        out.changed.push(format!(
            "schema changed below {} (nesting deeper than {MAX_SCHEMA_DEPTH})",
            at(path)
        ));
        return;
    }
    match (base, current) {
        (Value::Object(b), Value::Object(c)) => walk_objects(b, c, path, depth, out),
        (Value::Bool(false), _) | (_, Value::Bool(true)) => {
            out.looser.push(format!("{} accepts more values", at(path)))
        }
        (Value::Bool(true), _) | (_, Value::Bool(false)) => out
            .stricter
            .push(format!("{} accepts fewer values", at(path))),
        _ => out.changed.push(format!("schema changed at {}", at(path))),
    }
}

fn walk_objects(
    b: &Map<String, Value>,
    c: &Map<String, Value>,
    path: &str,
    depth: usize,
    out: &mut Findings,
) {
    let keys: BTreeSet<&String> = b.keys().chain(c.keys()).collect();
    for key in keys {
        let (bv, cv) = (b.get(key.as_str()), c.get(key.as_str()));
        if bv == cv || ANNOTATIONS.contains(&key.as_str()) {
            continue;
        }
        match key.as_str() {
            "type" => compare_sets(key, type_set(bv), type_set(cv), path, out),
            "enum" => compare_sets(key, enum_set(bv), enum_set(cv), path, out),
            "required" => compare_required(bv, cv, path, out),
            "properties" => compare_properties(b, c, path, depth, out),
            "additionalProperties" => compare_additional(bv, cv, path, depth, out),
            "items" => compare_items(bv, cv, path, depth, out),
            "uniqueItems" => compare_flag(key, bv, cv, path, out),
            k if UPPER.contains(&k) => compare_bound(k, bv, cv, true, path, out),
            k if LOWER.contains(&k) => compare_bound(k, bv, cv, false, path, out),
            _ => compare_other(key, bv, cv, path, out),
        }
    }
}

/// A keyword only the presence of which is understood: removing it
/// loosens, adding it tightens, changing it cannot be proved either way.
fn compare_other(
    key: &str,
    bv: Option<&Value>,
    cv: Option<&Value>,
    path: &str,
    out: &mut Findings,
) {
    let path = at(path);
    match (bv, cv) {
        (Some(_), None) if is_constraint(key) => {
            out.looser.push(format!("{key} removed at {path}"));
        }
        (None, Some(_)) if is_constraint(key) => {
            out.stricter.push(format!("{key} added at {path}"));
        }
        _ => out
            .changed
            .push(format!("schema changed at {path} ({key})")),
    }
}

/// Keywords that only ever restrict the values a schema accepts.
fn is_constraint(key: &str) -> bool {
    matches!(key, "pattern" | "format" | "const" | "multipleOf" | "not")
}

/// Type names as written (`string`), anything else as canonical JSON.
fn type_name(v: &Value) -> String {
    v.as_str().map_or_else(|| canonical_json(v), str::to_string)
}

fn type_set(v: Option<&Value>) -> Option<BTreeSet<String>> {
    match v? {
        Value::Array(items) => Some(items.iter().map(type_name).collect()),
        other => Some(BTreeSet::from([type_name(other)])),
    }
}

fn enum_set(v: Option<&Value>) -> Option<BTreeSet<String>> {
    match v? {
        Value::Array(items) => Some(items.iter().map(canonical_json).collect()),
        other => Some(BTreeSet::from([canonical_json(other)])),
    }
}

/// `type` and `enum`: a set of accepted values, absent meaning "any".
fn compare_sets(
    key: &str,
    b: Option<BTreeSet<String>>,
    c: Option<BTreeSet<String>>,
    path: &str,
    out: &mut Findings,
) {
    let path = at(path);
    match (b, c) {
        (Some(_), None) => out.looser.push(format!("{key} removed at {path}")),
        (None, Some(_)) => out.stricter.push(format!("{key} added at {path}")),
        (Some(b), Some(c)) => {
            let added: Vec<&String> = c.difference(&b).collect();
            let removed: Vec<&String> = b.difference(&c).collect();
            if !added.is_empty() {
                out.looser
                    .push(format!("{key} at {path} allows {}", join(&added)));
            }
            if !removed.is_empty() {
                out.stricter.push(format!(
                    "{key} at {path} no longer allows {}",
                    join(&removed)
                ));
            }
        }
        (None, None) => {}
    }
}

fn join(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn names(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|i| i.as_str().map_or_else(|| canonical_json(i), str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn compare_required(bv: Option<&Value>, cv: Option<&Value>, path: &str, out: &mut Findings) {
    let (b, c) = (names(bv), names(cv));
    let path = at(path);
    for name in b.difference(&c) {
        out.looser
            .push(format!("{name} is no longer required at {path}"));
    }
    for name in c.difference(&b) {
        out.stricter
            .push(format!("{name} is now required at {path}"));
    }
}

fn compare_properties(
    b: &Map<String, Value>,
    c: &Map<String, Value>,
    path: &str,
    depth: usize,
    out: &mut Findings,
) {
    let empty = Map::new();
    let bp = b
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let cp = c
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let closed =
        |m: &Map<String, Value>| m.get("additionalProperties") == Some(&Value::Bool(false));
    let open = |m: &Map<String, Value>| {
        matches!(
            m.get("additionalProperties"),
            None | Some(Value::Bool(true))
        )
    };
    let keys: BTreeSet<&String> = bp.keys().chain(cp.keys()).collect();
    for key in keys {
        let sub = format!("{path}/properties/{}", pointer_token(key));
        match (bp.get(key.as_str()), cp.get(key.as_str())) {
            (Some(bs), Some(cs)) => walk(bs, cs, &sub, depth + 1, out),
            (None, Some(_)) if closed(b) => out.looser.push(format!("property {sub} added")),
            (None, Some(_)) if open(b) => out.stricter.push(format!("property {sub} defined")),
            (Some(_), None) if open(c) => out.looser.push(format!("property {sub} removed")),
            (Some(_), None) if closed(c) => {
                out.stricter.push(format!("property {sub} removed"));
            }
            _ => out.changed.push(format!("schema changed at {sub}")),
        }
    }
}

/// A JSON Pointer reference token (RFC 6901).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn compare_additional(
    bv: Option<&Value>,
    cv: Option<&Value>,
    path: &str,
    depth: usize,
    out: &mut Findings,
) {
    let open = |v: Option<&Value>| matches!(v, None | Some(Value::Bool(true)));
    let closed = |v: Option<&Value>| v == Some(&Value::Bool(false));
    let sub = format!("{path}/additionalProperties");
    let at_path = at(path);
    if open(bv) && open(cv) {
        return;
    }
    if closed(bv) && !closed(cv) {
        out.looser
            .push(format!("additionalProperties no longer false at {at_path}"));
    } else if open(cv) && !open(bv) {
        out.looser.push(format!(
            "additionalProperties no longer restricted at {at_path}"
        ));
    } else if closed(cv) || open(bv) {
        out.stricter
            .push(format!("additionalProperties restricted at {at_path}"));
    } else if let (Some(b), Some(c)) = (bv, cv) {
        walk(b, c, &sub, depth + 1, out);
    }
}

fn compare_items(
    bv: Option<&Value>,
    cv: Option<&Value>,
    path: &str,
    depth: usize,
    out: &mut Findings,
) {
    let sub = format!("{path}/items");
    match (bv, cv) {
        (Some(b), Some(c)) => walk(b, c, &sub, depth + 1, out),
        (Some(_), None) => out.looser.push(format!("items removed at {}", at(path))),
        (None, Some(_)) => out.stricter.push(format!("items added at {}", at(path))),
        (None, None) => {}
    }
}

fn compare_flag(key: &str, bv: Option<&Value>, cv: Option<&Value>, path: &str, out: &mut Findings) {
    let on = |v: Option<&Value>| v == Some(&Value::Bool(true));
    match (on(bv), on(cv)) {
        (true, false) => out.looser.push(format!("{key} dropped at {}", at(path))),
        (false, true) => out.stricter.push(format!("{key} added at {}", at(path))),
        _ => {}
    }
}

/// A numeric bound: `upper` for maxima.
fn compare_bound(
    key: &str,
    bv: Option<&Value>,
    cv: Option<&Value>,
    upper: bool,
    path: &str,
    out: &mut Findings,
) {
    let path = at(path);
    match (bv.map(Value::as_f64), cv.map(Value::as_f64)) {
        (Some(_), None) => out.looser.push(format!("{key} removed at {path}")),
        (None, Some(_)) => out.stricter.push(format!("{key} added at {path}")),
        (Some(Some(b)), Some(Some(c))) if b == c => {}
        (Some(Some(b)), Some(Some(c))) => {
            let raised = c > b;
            let text = format!("{key} at {path} changed from {b} to {c}");
            if raised == upper {
                out.looser.push(text);
            } else {
                out.stricter.push(text);
            }
        }
        _ => out
            .changed
            .push(format!("schema changed at {path} ({key})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `(looser, stricter, changed, reworded)` of base → current.
    fn found(base: Value, current: Value) -> (Vec<String>, Vec<String>, Vec<String>, bool) {
        let f = compare(&base, &current);
        (f.looser, f.stricter, f.changed, f.reworded)
    }

    fn looser(text: &str) -> (Vec<String>, Vec<String>, Vec<String>, bool) {
        (vec![text.to_string()], vec![], vec![], false)
    }

    fn stricter(text: &str) -> (Vec<String>, Vec<String>, Vec<String>, bool) {
        (vec![], vec![text.to_string()], vec![], false)
    }

    #[test]
    fn each_keyword_rule() {
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let with_x =
            json!({"type": "object", "properties": {"x": {}}, "additionalProperties": false});
        assert_eq!(
            found(closed.clone(), with_x.clone()),
            looser("property /properties/x added")
        );
        assert_eq!(
            found(with_x, closed),
            stricter("property /properties/x removed")
        );
        assert_eq!(
            found(json!({"properties": {}}), json!({"properties": {"x": {}}})),
            stricter("property /properties/x defined")
        );
        assert_eq!(
            found(
                json!({"type": "integer"}),
                json!({"type": ["integer", "null"]})
            ),
            looser("type at / allows null")
        );
        assert_eq!(
            found(json!({"minimum": 1}), json!({"minimum": 0})),
            looser("minimum at / changed from 1 to 0")
        );
        assert_eq!(
            found(json!({"maxItems": 3}), json!({"maxItems": 3.0})),
            (vec![], vec![], vec![], true)
        );
        assert_eq!(
            found(json!({"format": "uuid"}), json!({})),
            looser("format removed at /")
        );
        assert_eq!(
            found(json!({"pattern": "^a"}), json!({"pattern": "^b"})),
            (
                vec![],
                vec![],
                vec!["schema changed at / (pattern)".to_string()],
                false
            )
        );
        assert_eq!(
            found(json!({"uniqueItems": true}), json!({})),
            looser("uniqueItems dropped at /")
        );
        assert_eq!(
            found(json!({"items": {"type": "string"}}), json!({})),
            looser("items removed at /")
        );
        assert_eq!(
            found(
                json!({"additionalProperties": {"type": "string"}}),
                json!({})
            ),
            looser("additionalProperties no longer restricted at /")
        );
        assert_eq!(
            found(json!({}), json!({"additionalProperties": true})),
            (vec![], vec![], vec![], true)
        );
        assert_eq!(
            found(
                json!({"additionalProperties": {"maxLength": 2}}),
                json!({"additionalProperties": {"maxLength": 3}})
            ),
            looser("maxLength at /additionalProperties changed from 2 to 3")
        );
        assert_eq!(
            found(json!(false), json!({})),
            looser("/ accepts more values")
        );
        assert_eq!(
            found(json!({}), json!(false)),
            stricter("/ accepts fewer values")
        );
        assert_eq!(
            found(
                json!({"title": "a", "description": "b"}),
                json!({"title": "c"})
            ),
            (vec![], vec![], vec![], true)
        );
        assert_eq!(
            found(
                json!({"properties": {"a/b~": {}}}),
                json!({"properties": {}})
            ),
            looser("property /properties/a~1b~0 removed")
        );
    }
}
