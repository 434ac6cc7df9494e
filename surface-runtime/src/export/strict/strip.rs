//! The call plan of a strict schema ([`NullPlan`]: which optional
//! properties the transform made required and nullable) and the walk that
//! follows it to turn a strict call's `null`s back into absent properties.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{def_target, scalar_eq, DefRef, MAX_STRIP_STEPS, MAX_WALK_DEPTH};
use crate::export::schema::value_has_type;

/// Where a strict schema's optional properties were made required and
/// nullable, so that a strict model's `null` for one of them means "absent":
/// a tree beside the strict schema, one [`PlanNode`] for the root and one
/// per `$defs` entry. Built by [`strict_schema`](super::strict_schema),
/// read by [`StrictSchema::strip_absent_nulls`](super::StrictSchema::strip_absent_nulls).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NullPlan {
    root: PlanNode,
    defs: BTreeMap<String, PlanNode>,
}

impl NullPlan {
    /// The plan of the root schema.
    pub fn root(&self) -> &PlanNode {
        &self.root
    }

    /// The plan of the `$defs` entry `name` (empty when nothing below it
    /// was made nullable).
    pub fn def(&self, name: &str) -> &PlanNode {
        self.defs.get(name).unwrap_or(&EMPTY)
    }

    /// Whether no property anywhere was made nullable.
    pub fn is_empty(&self) -> bool {
        self.root.is_empty() && self.defs.is_empty()
    }

    pub(crate) fn new(root: PlanNode, defs: BTreeMap<String, PlanNode>) -> Self {
        let defs = defs.into_iter().filter(|(_, p)| !p.is_empty()).collect();
        NullPlan { root, defs }
    }
}

/// The plan of one node of a strict schema, following its structure: the
/// object's properties made nullable, and the plans of the property
/// schemas, the items schema and the `anyOf` branches below it (only the
/// non-empty ones are kept).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanNode {
    absent_if_null: Vec<String>,
    properties: BTreeMap<String, PlanNode>,
    items: Option<Box<PlanNode>>,
    any_of: BTreeMap<usize, PlanNode>,
}

static EMPTY: PlanNode = PlanNode {
    absent_if_null: Vec::new(),
    properties: BTreeMap::new(),
    items: None,
    any_of: BTreeMap::new(),
};

impl PlanNode {
    /// The properties of this object whose `null` stands for "absent".
    pub fn absent_if_null(&self) -> &[String] {
        &self.absent_if_null
    }

    /// The plan of the property `name`'s schema.
    pub fn property(&self, name: &str) -> &PlanNode {
        self.properties.get(name).unwrap_or(&EMPTY)
    }

    /// The plan of the `items` schema.
    pub fn items(&self) -> &PlanNode {
        self.items.as_deref().unwrap_or(&EMPTY)
    }

    /// The plan of the `anyOf` branch `index`.
    pub fn branch(&self, index: usize) -> &PlanNode {
        self.any_of.get(&index).unwrap_or(&EMPTY)
    }

    /// Whether nothing at or below this node was made nullable.
    pub fn is_empty(&self) -> bool {
        self.absent_if_null.is_empty()
            && self.properties.is_empty()
            && self.items.is_none()
            && self.any_of.is_empty()
    }

    /// Marks the property `name` as made nullable.
    pub(crate) fn absent(&mut self, name: &str) {
        self.absent_if_null.push(name.to_string());
    }

    /// Sets the plan of the property `name` (dropped when empty).
    pub(crate) fn set_property(&mut self, name: &str, plan: PlanNode) {
        if !plan.is_empty() {
            self.properties.insert(name.to_string(), plan);
        }
    }

    /// Sets the plan of the items (dropped when empty).
    pub(crate) fn set_items(&mut self, plan: PlanNode) {
        if !plan.is_empty() {
            self.items = Some(Box::new(plan));
        }
    }

    /// Sets the plan of the `anyOf` branch `index` (dropped when empty).
    pub(crate) fn set_branch(&mut self, index: usize, plan: PlanNode) {
        if !plan.is_empty() {
            self.any_of.insert(index, plan);
        }
    }

    /// The plan of a node whose `anyOf` branches were spliced into another
    /// union from `offset` on.
    pub(crate) fn splice_branches(&mut self, offset: usize, inner: PlanNode) {
        for (i, p) in inner.any_of {
            self.set_branch(offset + i, p);
        }
    }
}

/// Removes the `null`s of `arguments` the plan says stand for absent
/// properties, following `doc` (the strict schema); the count removed.
pub(crate) fn strip(doc: &Value, plan: &NullPlan, arguments: &mut Value) -> usize {
    let mut s = Stripper {
        doc,
        plan,
        steps: 0,
        exhausted: false,
        removed: 0,
    };
    s.strip(arguments, doc, plan.root(), 0);
    s.removed
}

struct Stripper<'a> {
    doc: &'a Value,
    plan: &'a NullPlan,
    steps: usize,
    exhausted: bool,
    removed: usize,
}

impl<'a> Stripper<'a> {
    /// The schema and plan a `$ref` node names (the root or a `$defs`
    /// entry), `None` when `schema` is not a reference.
    fn target(&self, schema: &'a Value) -> Option<(&'a Value, &'a PlanNode)> {
        let r = schema.get("$ref")?.as_str()?;
        match def_target(self.doc, r)? {
            DefRef::Root(s) => Some((s, self.plan.root())),
            DefRef::Def { name, schema } => Some((schema, self.plan.def(&name))),
        }
    }

    fn strip(&mut self, v: &mut Value, s: &'a Value, plan: &'a PlanNode, depth: usize) {
        if self.exhausted || depth > MAX_WALK_DEPTH {
            return;
        }
        if let Some((target, plan)) = self.target(s) {
            return self.strip(v, target, plan, depth + 1);
        }
        if let Some(Value::Array(branches)) = s.get("anyOf") {
            return self.strip_union(v, branches, plan, depth);
        }
        match (s.get("type").and_then(Value::as_str), v) {
            (Some("object"), Value::Object(map)) => {
                for name in plan.absent_if_null() {
                    if map.get(name) == Some(&Value::Null) {
                        map.remove(name);
                        self.removed += 1;
                    }
                }
                if let Some(Value::Object(props)) = s.get("properties") {
                    for (name, child) in map.iter_mut() {
                        if let Some(ps) = props.get(name) {
                            self.strip(child, ps, plan.property(name), depth + 1);
                        }
                    }
                }
            }
            (Some("array"), Value::Array(items)) => {
                if let Some(item_schema) = s.get("items") {
                    for item in items {
                        self.strip(item, item_schema, plan.items(), depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// Strips below the one branch `v` matches; nothing when several do.
    fn strip_union(
        &mut self,
        v: &mut Value,
        branches: &'a [Value],
        plan: &'a PlanNode,
        depth: usize,
    ) {
        let mut found: Option<(usize, &'a Value)> = None;
        let mut count = 0;
        for (i, branch) in branches.iter().enumerate() {
            if self.conforms(v, branch, depth + 1) {
                count += 1;
                found = Some((i, branch));
                if count > 1 {
                    break;
                }
            }
        }
        if let (Some((i, branch)), 1, false) = (found, count, self.exhausted) {
            self.strip(v, branch, plan.branch(i), depth + 1);
        }
    }

    /// Whether `v` has the structure of the strict schema `s` (types, enum
    /// values, exact property sets, item schemas; string and number bounds
    /// are not checked).
    fn conforms(&mut self, v: &Value, s: &'a Value, depth: usize) -> bool {
        self.steps += 1;
        if self.steps > MAX_STRIP_STEPS {
            self.exhausted = true;
        }
        if self.exhausted || depth > MAX_WALK_DEPTH {
            return false;
        }
        if let Some((target, _)) = self.target(s) {
            return self.conforms(v, target, depth + 1);
        }
        if let Some(Value::Array(branches)) = s.get("anyOf") {
            return branches.iter().any(|b| self.conforms(v, b, depth + 1));
        }
        let Some(ty) = s.get("type").and_then(Value::as_str) else {
            return false;
        };
        if !value_has_type(v, ty) {
            return false;
        }
        if let Some(Value::Array(values)) = s.get("enum") {
            if !values.iter().any(|e| scalar_eq(e, v)) {
                return false;
            }
        }
        match v {
            Value::Object(map) => {
                let Some(Value::Object(props)) = s.get("properties") else {
                    return false;
                };
                map.len() == props.len()
                    && map.iter().all(|(k, child)| {
                        props
                            .get(k)
                            .is_some_and(|ps| self.conforms(child, ps, depth + 1))
                    })
            }
            Value::Array(items) => {
                let len = items.len() as u64;
                if s.get("minItems")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| len < n)
                    || s.get("maxItems")
                        .and_then(Value::as_u64)
                        .is_some_and(|n| len > n)
                {
                    return false;
                }
                let Some(item_schema) = s.get("items") else {
                    return false;
                };
                items
                    .iter()
                    .all(|i| self.conforms(i, item_schema, depth + 1))
            }
            _ => true,
        }
    }
}
