//! The transform ([`strict_schema`]): a normalized input schema rewritten
//! into the strict subset, with the [`NullPlan`] of the optional
//! properties it made required and nullable.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use surface_manifest::schema::push_token;

use super::check::check_strict_schema;
use super::error::{NotStrict, NotStrictReason};
use super::strip::{NullPlan, PlanNode};
use super::{
    def_target, pattern_is_portable, scalar_eq, DefRef, StrictOptions, StrictSchema,
    MAX_WALK_DEPTH, SUPPORTED_FORMATS,
};
use crate::export::schema::{is_integral, is_meta_data, merge_exact, value_has_type};

fn annotations(m: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for key in ["description", "title"] {
        if let Some(v @ Value::String(_)) = m.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out
}

fn is_bare_union(m: &Map<String, Value>) -> bool {
    matches!(m.get("anyOf"), Some(Value::Array(_)))
        && m.keys()
            .all(|k| k == "anyOf" || k == "description" || k == "title")
}

fn null_schema() -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("null".into()));
    Value::Object(m)
}

/// `t ∨ null`, keeping the description on the outside, with `t`'s plan
/// moved to where `t` now sits.
fn nullable((t, plan): Converted) -> Converted {
    match t {
        Value::Object(mut m) if is_bare_union(&m) => {
            if let Some(Value::Array(branches)) = m.get_mut("anyOf") {
                branches.push(null_schema());
            }
            (Value::Object(m), plan)
        }
        Value::Object(mut m) => {
            let mut outer = Map::new();
            for key in ["description", "title"] {
                if let Some(v) = m.remove(key) {
                    outer.insert(key.into(), v);
                }
            }
            outer.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(m), null_schema()]),
            );
            let mut wrapped = PlanNode::default();
            wrapped.set_branch(0, plan);
            (Value::Object(outer), wrapped)
        }
        other => (other, plan),
    }
}

/// Whether a schema of the strict subset accepts `null`.
fn strict_accepts_null(t: &Value) -> bool {
    match t.get("anyOf") {
        Some(Value::Array(branches)) => branches.iter().any(strict_accepts_null),
        _ => t.get("type").and_then(Value::as_str) == Some("null"),
    }
}

/// Converts a normalized input schema (see [`crate::export::schema::normalize`]:
/// single `type`s, local references only under the root `$defs`) into a
/// strict one.
///
/// # Errors
/// [`NotStrict`] with the place and the reason when strict mode cannot
/// express the schema; the caller then exports it with `strict: false`.
pub fn strict_schema(schema: &Value, options: &StrictOptions) -> Result<StrictSchema, NotStrict> {
    let root_error = |reason| NotStrict {
        path: String::new(),
        reason,
    };
    let Value::Object(root) = schema else {
        return Err(root_error(NotStrictReason::RootNotObject));
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(root_error(NotStrictReason::RootNotObject));
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(branches) = root.get(keyword) {
            if !branches
                .as_array()
                .is_some_and(|b| b.iter().all(constraints_only))
            {
                return Err(root_error(NotStrictReason::RootUnion));
            }
        }
    }
    let defs = match root.get("$defs") {
        None => None,
        Some(Value::Object(d)) => Some(d),
        Some(_) => return Err(root_error(NotStrictReason::UnresolvedRef)),
    };
    let mut s = Strictifier {
        doc: schema,
        options,
        path: String::new(),
    };
    let (mut parameters, root_plan) = s.node(schema, 0, true)?;
    let mut def_plans = BTreeMap::new();
    if let (Some(defs), Value::Object(m)) = (defs, &mut parameters) {
        let mut converted = Map::new();
        for (name, body) in defs {
            s.path.clear();
            push_token(&mut s.path, "$defs");
            push_token(&mut s.path, name);
            let (def, plan) = s.node(body, 0, false)?;
            converted.insert(name.clone(), def);
            def_plans.insert(name.clone(), plan);
        }
        m.insert("$defs".into(), Value::Object(converted));
    }
    let plan = NullPlan::new(root_plan, def_plans);
    check_strict_schema(&parameters, &options.limits).map_err(|v| NotStrict {
        path: v.path,
        reason: NotStrictReason::Rule(v.rule),
    })?;
    Ok(StrictSchema::new(parameters, plan))
}

struct Strictifier<'a> {
    /// The normalized input schema (its `$ref`s resolve against it).
    doc: &'a Value,
    options: &'a StrictOptions,
    path: String,
}

/// A converted schema and its plan.
type Converted = (Value, PlanNode);

/// A union branch that only adds constraints (`{"required": ["a"]}`), no
/// type, value set or declared structure of its own: dropping a union of
/// such branches only loosens.
fn constraints_only(branch: &Value) -> bool {
    branch.as_object().is_some_and(|b| {
        ![
            "type",
            "enum",
            "const",
            "$ref",
            "anyOf",
            "oneOf",
            "allOf",
            "properties",
            "additionalProperties",
            "patternProperties",
            "items",
            "prefixItems",
        ]
        .iter()
        .any(|k| b.contains_key(*k))
    })
}

const STRUCTURAL: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "items",
    "prefixItems",
    "enum",
    "const",
];

impl Strictifier<'_> {
    fn fail(&self, reason: NotStrictReason) -> NotStrict {
        NotStrict {
            path: self.path.clone(),
            reason,
        }
    }

    fn child(&mut self, tokens: &[&str], v: &Value, depth: usize) -> Result<Converted, NotStrict> {
        let len = self.path.len();
        for t in tokens {
            push_token(&mut self.path, t);
        }
        let out = self.node(v, depth + 1, false);
        self.path.truncate(len);
        out
    }

    fn node(&mut self, s: &Value, depth: usize, root: bool) -> Result<Converted, NotStrict> {
        if depth > MAX_WALK_DEPTH {
            return Err(self.fail(NotStrictReason::TooDeep));
        }
        let m = match s {
            Value::Object(m) => m,
            Value::Bool(false) => return Err(self.fail(NotStrictReason::NeverValid)),
            _ => return Err(self.fail(NotStrictReason::Unconstrained)),
        };
        if m.keys().all(|k| is_meta_data(k)) {
            return Err(self.fail(NotStrictReason::Unconstrained));
        }
        if let Some(r) = m.get("$ref") {
            let known = r
                .as_str()
                .and_then(|r| def_target(self.doc, r))
                .is_some_and(|t| matches!(t, DefRef::Def { .. }));
            if !known {
                return Err(self.fail(NotStrictReason::UnresolvedRef));
            }
            let mut out = Map::new();
            out.insert("$ref".into(), r.clone());
            return Ok((Value::Object(out), PlanNode::default()));
        }
        if m.contains_key("allOf") {
            return Err(self.fail(NotStrictReason::AllOf));
        }
        let union = match (m.get("anyOf"), m.get("oneOf")) {
            (Some(_), Some(_)) => return Err(self.fail(NotStrictReason::AnyOfAndOneOf)),
            (Some(Value::Array(b)), None) => Some(("anyOf", b)),
            (None, Some(Value::Array(b))) => Some(("oneOf", b)),
            _ => None,
        };
        if let Some((keyword, branches)) = union {
            let structural = STRUCTURAL.iter().any(|k| m.contains_key(*k));
            if !structural {
                return self.union(keyword, branches, annotations(m), depth);
            }
            // A union of bare constraints beside a typed schema (e.g.
            // "one of these properties is required") is dropped: a
            // loosening. Any other union beside structure is refused.
            if !branches.iter().all(constraints_only) {
                // `{"type": "object", "oneOf": [{…}, {…}]}`: the siblings
                // go into every branch when that is exact.
                let merged = self.distribute(keyword, m, branches)?;
                return self.union(keyword, &merged, annotations(m), depth);
            }
        }
        match m.get("type") {
            Some(Value::String(t)) => self.typed(t, m, depth, root),
            Some(_) => Err(self.fail(NotStrictReason::UnsupportedType)),
            None => self.untyped(m, depth),
        }
    }

    /// `siblings ∧ (b1 ∨ b2 …)` as `(siblings ∧ b1) ∨ …`, each conjunction
    /// merged into one schema; refused when a merge would not be exact.
    fn distribute(
        &self,
        keyword: &str,
        m: &Map<String, Value>,
        branches: &[Value],
    ) -> Result<Vec<Value>, NotStrict> {
        let siblings: Map<String, Value> = m
            .iter()
            .filter(|(k, _)| *k != keyword && !is_meta_data(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut merged = Vec::with_capacity(branches.len());
        for b in branches {
            match b {
                Value::Bool(true) => merged.push(Value::Object(siblings.clone())),
                Value::Bool(false) => {}
                Value::Object(b) => match merge_exact(b, &siblings) {
                    Some(one) => merged.push(Value::Object(one)),
                    None => return Err(self.fail(NotStrictReason::UnionWithSiblings)),
                },
                _ => return Err(self.fail(NotStrictReason::UnionWithSiblings)),
            }
        }
        Ok(merged)
    }

    fn union(
        &mut self,
        keyword: &str,
        branches: &[Value],
        ann: Map<String, Value>,
        depth: usize,
    ) -> Result<Converted, NotStrict> {
        let mut out: Vec<Value> = Vec::with_capacity(branches.len());
        let mut plan = PlanNode::default();
        for (i, b) in branches.iter().enumerate() {
            match self.child(&[keyword, &i.to_string()], b, depth)? {
                (Value::Object(mut t), inner_plan) if is_bare_union(&t) => {
                    if let Some(Value::Array(inner)) = t.remove("anyOf") {
                        plan.splice_branches(out.len(), inner_plan);
                        out.extend(inner);
                    }
                }
                (t, branch_plan) => {
                    plan.set_branch(out.len(), branch_plan);
                    out.push(t);
                }
            }
        }
        if out.is_empty() {
            return Err(self.fail(NotStrictReason::NeverValid));
        }
        let mut node = ann;
        node.insert("anyOf".into(), Value::Array(out));
        Ok((Value::Object(node), plan))
    }

    /// `enum`/`const` without `type`: the type is inferred from the values.
    fn untyped(&mut self, m: &Map<String, Value>, depth: usize) -> Result<Converted, NotStrict> {
        let values: Vec<Value> = match (m.get("enum"), m.get("const")) {
            (Some(Value::Array(e)), None) => e.clone(),
            (None, Some(c)) => vec![c.clone()],
            (Some(Value::Array(e)), Some(c)) => {
                if !e.iter().any(|v| scalar_eq(v, c)) {
                    return Err(self.fail(NotStrictReason::NeverValid));
                }
                vec![c.clone()]
            }
            _ => return Err(self.fail(NotStrictReason::Untyped)),
        };
        let mut groups: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for v in values {
            let ty = crate::json::type_name(&v);
            if ty == "object" || ty == "array" {
                return Err(self.fail(NotStrictReason::CompoundEnum));
            }
            match groups.iter_mut().find(|(t, _)| *t == ty) {
                Some((_, vs)) => vs.push(v),
                None => groups.push((ty, vec![v])),
            }
        }
        if groups.is_empty() {
            return Err(self.fail(NotStrictReason::NeverValid));
        }
        let typed: Vec<Value> = groups
            .into_iter()
            .map(|(ty, vs)| {
                let ty = if ty == "number" && vs.iter().all(is_integral) {
                    "integer"
                } else {
                    ty
                };
                let mut b = Map::new();
                b.insert("type".into(), Value::String(ty.into()));
                if ty != "null" {
                    b.insert("enum".into(), Value::Array(vs));
                }
                Value::Object(b)
            })
            .collect();
        let mut synthetic = annotations(m);
        if typed.len() == 1 {
            if let Some(Value::Object(only)) = typed.into_iter().next() {
                synthetic.extend(only);
            }
        } else {
            synthetic.insert("anyOf".into(), Value::Array(typed));
        }
        self.node(&Value::Object(synthetic), depth, false)
    }

    fn enum_values(
        &self,
        m: &Map<String, Value>,
        ty: &str,
    ) -> Result<Option<Vec<Value>>, NotStrict> {
        let mut values: Option<Vec<Value>> = match m.get("enum") {
            Some(Value::Array(e)) => Some(
                e.iter()
                    .filter(|v| value_has_type(v, ty))
                    .cloned()
                    .collect(),
            ),
            _ => None,
        };
        if let Some(c) = m.get("const") {
            if !value_has_type(c, ty) {
                return Err(self.fail(NotStrictReason::NeverValid));
            }
            values = match values {
                Some(vs) if !vs.iter().any(|v| scalar_eq(v, c)) => Some(Vec::new()),
                _ => Some(vec![c.clone()]),
            };
        }
        if let Some(vs) = &values {
            if vs.is_empty() {
                return Err(self.fail(NotStrictReason::NeverValid));
            }
            if vs.iter().any(|v| v.is_object() || v.is_array()) {
                return Err(self.fail(NotStrictReason::CompoundEnum));
            }
        }
        Ok(values)
    }

    fn typed(
        &mut self,
        ty: &str,
        m: &Map<String, Value>,
        depth: usize,
        root: bool,
    ) -> Result<Converted, NotStrict> {
        let mut out = annotations(m);
        out.insert("type".into(), Value::String(ty.into()));
        match ty {
            "object" => return self.object(m, out, depth, root),
            "array" => return self.array(m, out, depth),
            "null" => return Ok((Value::Object(out), PlanNode::default())),
            "string" | "number" | "integer" | "boolean" => {}
            _ => return Err(self.fail(NotStrictReason::UnsupportedType)),
        }
        if let Some(values) = self.enum_values(m, ty)? {
            out.insert("enum".into(), Value::Array(values));
        }
        if ty == "string" {
            if let Some(Value::String(p)) = m.get("pattern") {
                if pattern_is_portable(p) {
                    out.insert("pattern".into(), Value::String(p.clone()));
                }
            }
            if let Some(Value::String(f)) = m.get("format") {
                if SUPPORTED_FORMATS.contains(&f.as_str()) {
                    out.insert("format".into(), Value::String(f.clone()));
                }
            }
        }
        if ty == "number" || ty == "integer" {
            for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
                if let Some(v @ Value::Number(_)) = m.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
            if let Some(v @ Value::Number(n)) = m.get("multipleOf") {
                if n.as_f64().is_some_and(|f| f > 0.0) {
                    out.insert("multipleOf".into(), v.clone());
                }
            }
        }
        Ok((Value::Object(out), PlanNode::default()))
    }

    fn object(
        &mut self,
        m: &Map<String, Value>,
        mut out: Map<String, Value>,
        depth: usize,
        root: bool,
    ) -> Result<Converted, NotStrict> {
        if let Some(Value::Object(pp)) = m.get("patternProperties") {
            if !pp.is_empty() {
                return Err(self.fail(NotStrictReason::PatternProperties));
            }
        }
        let closed = matches!(m.get("additionalProperties"), Some(Value::Bool(false)));
        for key in ["additionalProperties", "unevaluatedProperties"] {
            if !matches!(m.get(key), None | Some(Value::Bool(false))) {
                return Err(self.fail(NotStrictReason::OpenObject));
            }
        }
        let empty = Map::new();
        let props = match m.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(self.fail(NotStrictReason::FreeFormObject)),
            None if root || closed => &empty,
            None => return Err(self.fail(NotStrictReason::FreeFormObject)),
        };
        let required: Vec<&str> = match m.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if required.iter().any(|r| !props.contains_key(*r)) {
            return Err(self.fail(NotStrictReason::RequiredNotAProperty));
        }
        let mut out_props = Map::new();
        let mut plan = PlanNode::default();
        for (name, ps) in props {
            let is_required = required.contains(&name.as_str());
            if *ps == Value::Bool(false) {
                if is_required {
                    return Err(self.fail(NotStrictReason::NeverValid));
                }
                continue;
            }
            let (t, property_plan, absent) = self.property(name, ps, is_required, depth)?;
            if absent {
                plan.absent(name);
            }
            plan.set_property(name, property_plan);
            out_props.insert(name.clone(), t);
        }
        let all: Vec<Value> = out_props.keys().map(|k| Value::String(k.clone())).collect();
        out.insert("properties".into(), Value::Object(out_props));
        out.insert("required".into(), Value::Array(all));
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok((Value::Object(out), plan))
    }

    /// One property's schema converted: `(schema, plan, null means absent)`.
    fn property(
        &mut self,
        name: &str,
        ps: &Value,
        is_required: bool,
        depth: usize,
    ) -> Result<(Value, PlanNode, bool), NotStrict> {
        let len = self.path.len();
        push_token(&mut self.path, "properties");
        push_token(&mut self.path, name);
        let converted = self.node(ps, depth + 1, false).and_then(|t| {
            if is_required {
                Ok((t.0, t.1, false))
            } else {
                self.optional(ps, t)
            }
        });
        self.path.truncate(len);
        converted
    }

    /// An optional property made required: `(schema, plan, null means
    /// absent)`.
    fn optional(
        &self,
        original: &Value,
        converted: Converted,
    ) -> Result<(Value, PlanNode, bool), NotStrict> {
        if !self.accepts_null(original, 0) {
            let (t, plan) = nullable(converted);
            return Ok((t, plan, true));
        }
        let accepts = strict_accepts_null(&converted.0);
        let (t, plan) = if accepts {
            converted
        } else {
            nullable(converted)
        };
        if self.options.null_is_absent {
            return Ok((t, plan, true));
        }
        if original.get("default") == Some(&Value::Null) {
            // Absent means `null` here: passing `null` on is the same call.
            return Ok((t, plan, !accepts));
        }
        Err(self.fail(NotStrictReason::OptionalNullable))
    }

    /// Whether a normalized schema may accept `null` (false only when some
    /// keyword certainly excludes it).
    fn accepts_null(&self, s: &Value, depth: usize) -> bool {
        if depth > 32 {
            return true;
        }
        let m = match s {
            Value::Bool(b) => return *b,
            Value::Object(m) => m,
            _ => return true,
        };
        if let Some(t) = m.get("type") {
            let ok = match t {
                Value::String(t) => t == "null",
                Value::Array(ts) => ts.iter().any(|t| t == "null"),
                _ => true,
            };
            if !ok {
                return false;
            }
        }
        if let Some(Value::Array(e)) = m.get("enum") {
            if !e.contains(&Value::Null) {
                return false;
            }
        }
        if let Some(c) = m.get("const") {
            if !c.is_null() {
                return false;
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = m.get(keyword) {
                if !bs.iter().any(|b| self.accepts_null(b, depth + 1)) {
                    return false;
                }
            }
        }
        if let Some(Value::Array(bs)) = m.get("allOf") {
            if !bs.iter().all(|b| self.accepts_null(b, depth + 1)) {
                return false;
            }
        }
        let target = m
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| def_target(self.doc, r));
        if let Some(DefRef::Def { schema, .. }) = target {
            if !self.accepts_null(schema, depth + 1) {
                return false;
            }
        }
        true
    }

    fn array(
        &mut self,
        m: &Map<String, Value>,
        mut out: Map<String, Value>,
        depth: usize,
    ) -> Result<Converted, NotStrict> {
        let min_items = m.get("minItems").and_then(Value::as_u64);
        let mut max_items = m.get("maxItems").and_then(Value::as_u64);
        let items = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(prefix)), items) => {
                let mut branches: Vec<Value> = prefix.clone();
                let len = prefix.len() as u64;
                match items {
                    None | Some(Value::Bool(true)) => {
                        if max_items.is_none_or(|mx| mx > len) {
                            return Err(self.fail(NotStrictReason::UnconstrainedItems));
                        }
                    }
                    Some(Value::Bool(false)) => {
                        max_items = Some(max_items.map_or(len, |mx| mx.min(len)));
                    }
                    Some(rest) => branches.push(rest.clone()),
                }
                if branches.is_empty() {
                    return Err(self.fail(NotStrictReason::Tuple));
                }
                let synthetic = if branches.len() == 1 {
                    branches.remove(0)
                } else {
                    let mut u = Map::new();
                    u.insert("anyOf".into(), Value::Array(branches));
                    Value::Object(u)
                };
                self.child(&["prefixItems"], &synthetic, depth)?
            }
            (_, None) | (_, Some(Value::Bool(_))) => {
                return Err(self.fail(NotStrictReason::UnconstrainedItems))
            }
            (_, Some(items)) => self.child(&["items"], items, depth)?,
        };
        let (items, items_plan) = items;
        out.insert("items".into(), items);
        if let Some(n) = min_items {
            out.insert("minItems".into(), Value::from(n));
        }
        if let Some(n) = max_items {
            out.insert("maxItems".into(), Value::from(n));
        }
        let mut plan = PlanNode::default();
        plan.set_items(items_plan);
        Ok((Value::Object(out), plan))
    }
}
