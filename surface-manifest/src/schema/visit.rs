//! The subschemas of a schema, with where they sit: the one walk over
//! applicator keywords, driven by the [`super::keyword`] table.

use serde_json::Value;

use super::keyword::{keyword, Subschemas};
use super::pointer::Pointer;

/// Where a subschema sits inside its parent schema object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'v> {
    /// The keyword's value itself (`not`, `additionalProperties`,
    /// single-schema `items`).
    Keyword(&'v str),
    /// A member of a keyword's object (`properties/name`).
    Member(&'v str, &'v str),
    /// An element of a keyword's array (`allOf/0`).
    Index(&'v str, usize),
}

impl Step<'_> {
    /// The keyword this step goes through.
    #[must_use]
    pub fn keyword(&self) -> &str {
        match *self {
            Step::Keyword(k) | Step::Member(k, _) | Step::Index(k, _) => k,
        }
    }

    /// Appends this step's tokens to `pointer`.
    pub fn push_onto(&self, pointer: &mut Pointer) {
        match *self {
            Step::Keyword(k) => pointer.push(k),
            Step::Member(k, m) => {
                pointer.push(k);
                pointer.push(m);
            }
            Step::Index(k, i) => {
                pointer.push(k);
                pointer.push_index(i);
            }
        }
    }
}

/// Every direct subschema of `schema` (none for a boolean schema or a
/// non-schema value), in the object's key order.
///
/// ```
/// use serde_json::json;
/// use surface_manifest::schema::{subschemas, Step};
///
/// let s = json!({"properties": {"a": {}}, "allOf": [true], "not": false, "title": "t"});
/// let mut steps: Vec<Step> = subschemas(&s).map(|(step, _)| step).collect();
/// steps.sort_by_key(|s| s.keyword().to_string()); // key order depends on serde_json's `preserve_order`
/// assert_eq!(steps, [Step::Index("allOf", 0), Step::Keyword("not"), Step::Member("properties", "a")]);
/// ```
pub fn subschemas(schema: &Value) -> impl Iterator<Item = (Step<'_>, &Value)> {
    let members = schema.as_object().into_iter().flatten();
    members.flat_map(|(key, value)| {
        let kind = keyword(key).map_or(Subschemas::None, |k| k.subschemas);
        children(key, kind, value)
    })
}

fn children<'v>(
    key: &'v str,
    kind: Subschemas,
    value: &'v Value,
) -> Box<dyn Iterator<Item = (Step<'v>, &'v Value)> + 'v> {
    let is_schema = |v: &Value| v.is_object() || v.is_boolean();
    match (kind, value) {
        (Subschemas::One, v) | (Subschemas::OneOrList, v) if is_schema(v) => {
            Box::new(std::iter::once((Step::Keyword(key), v)))
        }
        (Subschemas::List | Subschemas::OneOrList, Value::Array(list)) => Box::new(
            list.iter()
                .enumerate()
                .map(move |(i, v)| (Step::Index(key, i), v)),
        ),
        (Subschemas::Map | Subschemas::MapOfSchemasOrNames, Value::Object(map)) => Box::new(
            map.iter()
                .filter(move |(_, v)| kind == Subschemas::Map || !v.is_array())
                .map(move |(name, v)| (Step::Member(key, name), v)),
        ),
        _ => Box::new(std::iter::empty()),
    }
}

/// Visits `schema` and every subschema below it, depth first, with its
/// pointer from `schema`; `f` returns whether to descend into the node it
/// was given. Recursion is bounded by `max_depth` (nodes deeper are not
/// visited), so a hostile document cannot exhaust the stack.
///
/// ```
/// use serde_json::json;
/// use surface_manifest::schema::walk;
///
/// let s = json!({"properties": {"a/b": {"items": {"type": "string"}}}});
/// let mut seen = Vec::new();
/// walk(&s, 64, &mut |p, _| { seen.push(p.to_string()); true });
/// assert_eq!(seen, ["", "/properties/a~1b", "/properties/a~1b/items"]);
/// ```
pub fn walk<'v>(
    schema: &'v Value,
    max_depth: usize,
    f: &mut dyn FnMut(&Pointer, &'v Value) -> bool,
) {
    fn go<'v>(
        node: &'v Value,
        at: &mut Pointer,
        depth: usize,
        f: &mut dyn FnMut(&Pointer, &'v Value) -> bool,
    ) {
        if !f(at, node) || depth == 0 {
            return;
        }
        for (step, sub) in subschemas(node) {
            let saved = at.clone();
            step.push_onto(at);
            go(sub, at, depth - 1, f);
            *at = saved;
        }
    }
    go(schema, &mut Pointer::root(), max_depth, f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_applicator_shape() {
        let s = json!({
            "items": [{}, true], "additionalItems": {}, "dependencies": {"a": ["b"], "c": {}},
            "$defs": {"d": {}}, "enum": [{}], "contentSchema": {}, "x-thing": {"type": "object"}
        });
        let mut steps: Vec<String> = subschemas(&s)
            .map(|(step, _)| {
                let mut p = Pointer::root();
                step.push_onto(&mut p);
                p.into_string()
            })
            .collect();
        steps.sort();
        let want = [
            "/$defs/d",
            "/additionalItems",
            "/contentSchema",
            "/dependencies/c",
            "/items/0",
            "/items/1",
        ];
        assert_eq!(steps, want);
    }

    #[test]
    fn walk_is_bounded() {
        let mut s = json!({});
        for _ in 0..10 {
            s = json!({"not": s});
        }
        let mut n = 0;
        walk(&s, 3, &mut |_, _| {
            n += 1;
            true
        });
        assert_eq!(n, 4);
    }
}
