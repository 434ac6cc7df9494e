//! Schema normalization for tool providers (docs/agents.md, "Schema
//! normalization").
//!
//! [`normalize`] rewrites a JSON Schema so that providers which reject
//! `$ref`/`$defs`, `type` arrays or dialect keywords accept it. Every rewrite
//! keeps the schema's meaning or only loosens it (the result accepts at
//! least what the input accepts); each loosening is reported as a
//! [`Loosening`]. Loosening is safe here because the invocation pipeline
//! still validates every call against the full manifest schema.
//!
//! What it does:
//!
//! * drops `$schema`, `$id`, `$anchor`, `$dynamicAnchor`,
//!   `$recursiveAnchor`, `$comment`, `$vocabulary` and the original `$defs`
//!   / `definitions`;
//! * resolves local `$ref`s (`#`, `#/json/pointer`, or the root `$id`
//!   followed by a fragment) and inlines them; a recursive reference is kept
//!   under the root `$defs` ([`RefMode::InlineKeepRecursive`]) or unrolled a
//!   bounded number of times and then replaced by `{}`
//!   ([`RefMode::Unroll`]); `$dynamicRef` and `$recursiveRef` are dropped
//!   (reported), except `$recursiveRef: "#"` in a 2019-09 document whose
//!   root has `$recursiveAnchor: true` and no embedded resource, read as
//!   `$ref: "#"` (exact there); references resolve through
//!   [`surface_manifest::schema::resolve_ref`];
//! * merges a `$ref`'s siblings and single `allOf` members into the
//!   surrounding schema when that is exact, otherwise keeps them as `allOf`;
//! * rewrites `type: [a, b]` into `anyOf: [{type: a, …}, {type: b, …}]`,
//!   each branch carrying only the keywords that apply to its type (enum
//!   values filtered by type), so every node has a single `type`;
//! * loosens tuples: `prefixItems: [A, B], items: R` becomes
//!   `items: {anyOf: [A, B, R]}` with the same `minItems`/`maxItems`
//!   (`items: false` caps `maxItems` at the tuple length), because draft-07
//!   validators (the MCP TypeScript SDK checks results with one) read
//!   `items` after `prefixItems` differently and several providers reject
//!   `prefixItems`;
//! * converts draft-07/draft-04 spellings into 2020-12 ones: array `items`
//!   → `prefixItems` (+ `additionalItems` → `items`), `dependencies` →
//!   `dependentRequired`/`dependentSchemas`, boolean
//!   `exclusiveMinimum`/`exclusiveMaximum` → numeric.
//!
//! Limits (another party writes the schema): at most
//! [`NormalizeOptions::max_nodes`] schema nodes are produced by inlining
//! (beyond it references are kept under `$defs`, or become `{}` in
//! [`RefMode::Unroll`]), and nesting deeper than
//! [`NormalizeOptions::max_depth`] schema levels becomes `{}`. The work is
//! linear in the input plus the node budget.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use surface_manifest::schema::{
    keyword, push_token, resolve_ref, subschemas, AppliesTo, KeywordKind, Pointer, Subschemas,
};

/// Default of [`NormalizeOptions::max_nodes`].
pub const DEFAULT_MAX_NODES: usize = 20_000;
/// Default of [`NormalizeOptions::max_depth`].
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// How [`normalize`] treats `$ref`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefMode {
    /// Inline every non-recursive local reference; a reference that would
    /// recurse (or exceed the node budget or depth) is kept as
    /// `{"$ref": "#/$defs/<name>"}` with its target under the root `$defs`.
    /// Exact. The default, used for MCP, Anthropic and OpenAI.
    InlineKeepRecursive,
    /// Inline every reference; one reference is expanded at most `depth`
    /// times along a path, and then replaced by `{}` (accepts anything: a
    /// loosening). The output has no `$ref` and no `$defs`, for providers
    /// that reject both.
    Unroll {
        /// Expansions of one reference along one path (0 = never expand a
        /// reference that is already being expanded).
        depth: u8,
    },
}

/// Options of [`normalize`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormalizeOptions {
    /// Reference handling; default [`RefMode::InlineKeepRecursive`].
    pub refs: RefMode,
    /// Schema nodes inlining may produce; default [`DEFAULT_MAX_NODES`]
    /// (20,000).
    pub max_nodes: usize,
    /// Deepest schema nesting produced; default [`DEFAULT_MAX_DEPTH`] (128).
    pub max_depth: usize,
}

impl Default for NormalizeOptions {
    fn default() -> Self {
        Self {
            refs: RefMode::InlineKeepRecursive,
            max_nodes: DEFAULT_MAX_NODES,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// The result of [`normalize`].
#[derive(Clone, Debug, PartialEq)]
pub struct NormalizedSchema {
    /// The rewritten schema.
    pub schema: Value,
    /// Where the rewritten schema accepts more than the input (empty when
    /// the rewrite is exact).
    pub loosened: Vec<Loosening>,
}

/// One place where [`normalize`] loosened the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loosening {
    /// JSON pointer (RFC 6901) into the *input* schema of the node that was
    /// replaced by `{}` or relaxed.
    pub path: String,
    /// Why.
    pub reason: LooseningReason,
}

/// Why a [`Loosening`] happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LooseningReason {
    /// A `$ref`, `$dynamicRef` or `$recursiveRef` that does not resolve
    /// inside this document (remote, anchor, bad pointer, or into/inside an
    /// embedded `$id` resource) was dropped.
    UnresolvableRef,
    /// [`RefMode::Unroll`]: a recursive reference reached the unroll depth
    /// and became `{}`.
    RecursionCut,
    /// [`RefMode::Unroll`]: the node budget was exhausted and a reference
    /// became `{}`.
    Budget,
    /// The schema nests deeper than [`NormalizeOptions::max_depth`]; the
    /// deeper part became `{}`.
    TooDeep,
    /// A value in a schema position that is neither an object nor a
    /// boolean (not a JSON Schema) became `{}`.
    InvalidSchema,
    /// A tuple (`prefixItems`) became an array whose items match any of the
    /// tuple's item schemas (with the same length bounds): `prefixItems`
    /// is read differently by draft-07 validators (the MCP TypeScript SDK
    /// validates output with one) and unknown to several providers.
    Tuple,
}

impl LooseningReason {
    /// A stable kebab-case code (`"unresolvable-ref"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            LooseningReason::UnresolvableRef => "unresolvable-ref",
            LooseningReason::RecursionCut => "recursion-cut",
            LooseningReason::Budget => "budget",
            LooseningReason::TooDeep => "too-deep",
            LooseningReason::InvalidSchema => "invalid-schema",
            LooseningReason::Tuple => "tuple",
        }
    }
}

// ----- keyword tables ---------------------------------------------------------

/// Meta-data: no effect on validation and meaningful for every type (the
/// keyword table's annotations that apply to any instance, outside
/// OpenAPI's extras: `title`, `description`, `default`, `examples`,
/// `deprecated`, `readOnly`, `writeOnly`), and `$comment`.
pub(crate) fn is_meta_data(name: &str) -> bool {
    name == "$comment"
        || keyword(name).is_some_and(|k| {
            k.kind == KeywordKind::Annotation && k.applies_to == AppliesTo::Any && !k.openapi
        })
}

/// Keywords that read each other inside one schema object: splitting one
/// group across two merged objects changes the meaning.
const GROUPS: &[&[&str]] = &[
    &[
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
    ],
    &["prefixItems", "items", "unevaluatedItems"],
    &["if", "then", "else"],
    &["contains", "minContains", "maxContains"],
];

/// Whether `keyword` can constrain an instance of type `ty` (the keyword
/// table's [`AppliesTo`]; unknown keywords apply to every type).
fn keyword_applies(keyword_name: &str, ty: &str) -> bool {
    match keyword(keyword_name).map(|k| k.applies_to) {
        Some(AppliesTo::String) => ty == "string",
        Some(AppliesTo::Number) => ty == "number" || ty == "integer",
        Some(AppliesTo::Object) => ty == "object",
        Some(AppliesTo::Array) => ty == "array",
        Some(AppliesTo::Any) | None => true,
    }
}

/// Whether `keyword` constrains the instance (an assertion, applicator or
/// reference of the keyword table, or one that applies to one type only,
/// such as `contentMediaType`), so a type-array split copies it into every
/// branch it applies to.
fn is_assertion(keyword_name: &str) -> bool {
    keyword(keyword_name).is_some_and(|k| {
        matches!(
            k.kind,
            KeywordKind::Assertion | KeywordKind::Applicator | KeywordKind::Reference
        ) || k.applies_to != AppliesTo::Any
    })
}

/// Whether a JSON value is an instance of the JSON Schema type `ty`
/// (unknown type names match everything).
pub(crate) fn value_has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "integer" => is_integral(value),
        _ => true,
    }
}

pub(crate) fn is_integral(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

// ----- exact merge --------------------------------------------------------------

/// `inner ∧ outer` as one schema object when that is exact, `outer`'s
/// annotations winning; `None` when the two must stay separate (`allOf`).
pub(crate) fn merge_exact(
    inner: &Map<String, Value>,
    outer: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    for side in [inner, outer] {
        if side.contains_key("unevaluatedProperties") || side.contains_key("unevaluatedItems") {
            return None;
        }
    }
    for group in GROUPS {
        let a: Vec<&str> = group
            .iter()
            .copied()
            .filter(|k| inner.contains_key(*k))
            .collect();
        let b: Vec<&str> = group
            .iter()
            .copied()
            .filter(|k| outer.contains_key(*k))
            .collect();
        let both_properties_only = a == ["properties"] && b == ["properties"];
        if !(a.is_empty() || b.is_empty() || both_properties_only) {
            return None;
        }
    }
    let mut merged = inner.clone();
    for (key, value) in outer {
        if is_meta_data(key) {
            merged.insert(key.clone(), value.clone());
            continue;
        }
        match inner.get(key) {
            None => {
                merged.insert(key.clone(), value.clone());
            }
            Some(existing) if existing == value => {}
            Some(existing) => match (key.as_str(), existing, value) {
                ("required", Value::Array(a), Value::Array(b)) => {
                    let mut all = a.clone();
                    for name in b {
                        if !all.contains(name) {
                            all.push(name.clone());
                        }
                    }
                    merged.insert(key.clone(), Value::Array(all));
                }
                ("properties", Value::Object(a), Value::Object(b)) => {
                    if b.keys().any(|k| a.contains_key(k)) {
                        return None;
                    }
                    let mut all = a.clone();
                    all.extend(b.iter().map(|(k, v)| (k.clone(), v.clone())));
                    merged.insert(key.clone(), Value::Object(all));
                }
                _ => return None,
            },
        }
    }
    Some(merged)
}

// ----- type arrays ------------------------------------------------------------------

/// Rewrites `{"type": [a, b, …], …}` into an `anyOf` of single-type
/// branches (exact: `(a ∨ b) ∧ R ≡ (a ∧ R) ∨ (b ∧ R)`, and keywords that do
/// not apply to a type are vacuous for it).
pub(crate) fn distribute_types(mut node: Map<String, Value>) -> Value {
    let Some(Value::Array(types)) = node.get("type") else {
        return Value::Object(node);
    };
    let mut names: Vec<String> = Vec::with_capacity(types.len());
    for t in types {
        match t.as_str() {
            Some(t) if !names.iter().any(|n| n == t) => names.push(t.to_string()),
            Some(_) => {}
            // Not a JSON Schema type array: leave it alone.
            None => return Value::Object(node),
        }
    }
    match names.len() {
        0 => return Value::Object(node),
        1 => {
            node.insert("type".into(), Value::String(names.remove(0)));
            return Value::Object(node);
        }
        _ => {}
    }
    node.remove("type");
    let mut outer = Map::new();
    let mut shared = Map::new();
    for (key, value) in node {
        if is_assertion(&key) {
            shared.insert(key, value);
        } else {
            outer.insert(key, value);
        }
    }
    let mut branches: Vec<Value> = Vec::with_capacity(names.len());
    'types: for ty in &names {
        let mut branch = Map::new();
        branch.insert("type".into(), Value::String(ty.clone()));
        for (key, value) in &shared {
            if !keyword_applies(key, ty) {
                continue;
            }
            match (key.as_str(), value) {
                ("enum", Value::Array(values)) => {
                    let kept: Vec<Value> = values
                        .iter()
                        .filter(|v| value_has_type(v, ty))
                        .cloned()
                        .collect();
                    if kept.is_empty() {
                        continue 'types;
                    }
                    branch.insert(key.clone(), Value::Array(kept));
                }
                ("const", v) if !value_has_type(v, ty) => continue 'types,
                _ => {
                    branch.insert(key.clone(), value.clone());
                }
            }
        }
        branches.push(Value::Object(branch));
    }
    match branches.len() {
        0 => Value::Bool(false),
        1 => {
            let Some(Value::Object(mut only)) = branches.pop() else {
                return Value::Bool(false);
            };
            only.extend(outer);
            Value::Object(only)
        }
        _ => {
            outer.insert("anyOf".into(), Value::Array(branches));
            Value::Object(outer)
        }
    }
}

// ----- object roots -----------------------------------------------------------------

fn admits_object(schema: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(m) => match m.get("type") {
            None => true,
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            Some(_) => true,
        },
        _ => true,
    }
}

/// The schema restricted to JSON objects, with `"type": "object"` at the
/// root (MCP requires it; the pipeline refuses non-object input anyway, so
/// the restriction is exact for callers). Union branches that cannot be an
/// object are dropped; a single remaining branch is merged into the root
/// when exact. `None` when no object can match.
pub(crate) fn object_root(schema: Value) -> Option<Value> {
    let mut root = match schema {
        Value::Bool(true) => {
            let mut m = Map::new();
            m.insert("type".into(), Value::String("object".into()));
            return Some(Value::Object(m));
        }
        Value::Object(m) => m,
        _ => return None,
    };
    match root.get("type") {
        None => {
            root.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(Value::Array(ts)) if ts.iter().any(|t| t == "object") => {
            root.insert("type".into(), Value::String("object".into()));
        }
        Some(_) => return None,
    }
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = root.get_mut(keyword) else {
            continue;
        };
        branches.retain(admits_object);
        if branches.is_empty() {
            return None;
        }
        if branches.len() == 1 {
            if let Some(Value::Object(only)) = branches.first().cloned() {
                let mut rest = root.clone();
                rest.remove(keyword);
                if let Some(merged) = merge_exact(&only, &rest) {
                    root = merged;
                }
            }
        }
    }
    Some(Value::Object(root))
}

// ----- normalize ----------------------------------------------------------------------

/// Normalizes `schema` (see the module docs). Never fails: what cannot be
/// represented is loosened and reported.
pub fn normalize(schema: &Value, options: &NormalizeOptions) -> NormalizedSchema {
    let mut n = Normalizer {
        doc: schema,
        options,
        nodes: 0,
        kept: HashMap::new(),
        used_names: HashSet::new(),
        pending: Vec::new(),
        defs: Map::new(),
        heights: HashMap::new(),
        recursive: HashSet::new(),
        loosened: Vec::new(),
        path: String::new(),
        nested_resource: 0,
        recursive_ref_is_root: recursive_ref_is_root(schema),
    };
    let mut stack = vec![Pointer::root()];
    let mut root = n.node(schema, &mut stack, 0);
    while let Some((pointer, name, target)) = n.pending.pop() {
        n.path = pointer.as_str().to_string();
        let mut stack = vec![pointer];
        let body = n.node(target, &mut stack, 0);
        n.defs.insert(name, body);
    }
    if !n.defs.is_empty() {
        let defs = std::mem::take(&mut n.defs);
        root = match root {
            Value::Object(mut m) => {
                m.insert("$defs".into(), Value::Object(defs));
                Value::Object(m)
            }
            Value::Bool(true) => {
                let mut m = Map::new();
                m.insert("$defs".into(), Value::Object(defs));
                Value::Object(m)
            }
            other => other,
        };
    }
    NormalizedSchema {
        schema: root,
        loosened: n.loosened,
    }
}

struct Normalizer<'a> {
    doc: &'a Value,
    options: &'a NormalizeOptions,
    nodes: usize,
    /// Target pointer → name under the output `$defs`.
    kept: HashMap<Pointer, String>,
    used_names: HashSet<String>,
    pending: Vec<(Pointer, String, &'a Value)>,
    defs: Map<String, Value>,
    heights: HashMap<Pointer, usize>,
    /// Targets found to reference themselves (kept instead of inlined).
    recursive: HashSet<Pointer>,
    loosened: Vec<Loosening>,
    /// Pointer of the input node being walked.
    path: String,
    /// > 0 while inside an embedded `$id` resource.
    nested_resource: usize,
    /// `$recursiveRef: "#"` means `$ref: "#"` here (see [`recursive_ref_is_root`]).
    recursive_ref_is_root: bool,
}

fn empty() -> Value {
    Value::Object(Map::new())
}

impl<'a> Normalizer<'a> {
    fn loosen(&mut self, reason: LooseningReason) {
        self.loosened.push(Loosening {
            path: self.path.clone(),
            reason,
        });
    }

    fn child(
        &mut self,
        tokens: &[&str],
        v: &'a Value,
        stack: &mut Vec<Pointer>,
        depth: usize,
    ) -> Value {
        let len = self.path.len();
        for t in tokens {
            push_token(&mut self.path, t);
        }
        let out = self.node(v, stack, depth + 1);
        self.path.truncate(len);
        out
    }

    fn node(&mut self, v: &'a Value, stack: &mut Vec<Pointer>, depth: usize) -> Value {
        self.nodes += 1;
        if depth > self.options.max_depth {
            self.loosen(LooseningReason::TooDeep);
            return empty();
        }
        let m = match v {
            Value::Object(m) => m,
            Value::Bool(_) => return v.clone(),
            _ => {
                self.loosen(LooseningReason::InvalidSchema);
                return empty();
            }
        };
        let nested = !self.path.is_empty() && m.contains_key("$id");
        if nested {
            self.nested_resource += 1;
        }
        let out = self.keywords(m, stack, depth);
        if nested {
            self.nested_resource -= 1;
        }
        out
    }

    fn keywords(
        &mut self,
        m: &'a Map<String, Value>,
        stack: &mut Vec<Pointer>,
        depth: usize,
    ) -> Value {
        let mut out = Map::new();
        let mut target: Option<Value> = None;
        let tuple = matches!(m.get("items"), Some(Value::Array(_)));
        for (key, sub) in m {
            match key.as_str() {
                "$schema" | "$id" | "$anchor" | "$dynamicAnchor" | "$recursiveAnchor"
                | "$comment" | "$vocabulary" | "$defs" | "definitions" => {}
                "$ref" => target = Some(self.reference(key, sub, stack, depth)),
                "$recursiveRef"
                    if self.recursive_ref_is_root
                        && sub.as_str() == Some("#")
                        && !m.contains_key("$ref") =>
                {
                    target = Some(self.reference(key, sub, stack, depth));
                }
                "$dynamicRef" | "$recursiveRef" => {
                    let len = self.path.len();
                    push_token(&mut self.path, key);
                    self.loosen(LooseningReason::UnresolvableRef);
                    self.path.truncate(len);
                }
                "dependencies" => self.dependencies(key, sub, &mut out, stack, depth),
                "items" if tuple => {
                    if let Value::Array(list) = sub {
                        let walked = self.list(key, list, stack, depth);
                        out.insert("prefixItems".into(), walked);
                    }
                }
                "additionalItems" => {
                    if tuple {
                        let walked = self.child(&[key], sub, stack, depth);
                        out.insert("items".into(), walked);
                    }
                }
                _ => {
                    let walked = self.subschema_keyword(key, sub, stack, depth);
                    out.insert(key.clone(), walked);
                }
            }
        }
        if flatten_tuple(&mut out) {
            self.loosen(LooseningReason::Tuple);
        }
        bounds_to_2020(&mut out, "exclusiveMinimum", "minimum");
        bounds_to_2020(&mut out, "exclusiveMaximum", "maximum");
        let Some(out) = with_reference(out, target) else {
            return Value::Bool(false);
        };
        match simplify_all_of(out) {
            Value::Object(m) => distribute_types(m),
            other => other,
        }
    }

    /// The value of any other keyword: its subschemas (by the keyword
    /// table) walked, anything else kept as it is.
    fn subschema_keyword(
        &mut self,
        key: &str,
        sub: &'a Value,
        stack: &mut Vec<Pointer>,
        depth: usize,
    ) -> Value {
        match (keyword(key).map(|k| k.subschemas), sub) {
            (Some(Subschemas::One | Subschemas::OneOrList), _) => {
                self.child(&[key], sub, stack, depth)
            }
            (Some(Subschemas::Map), _) => self.schema_map(key, sub, stack, depth),
            (Some(Subschemas::List), Value::Array(list)) => self.list(key, list, stack, depth),
            _ => sub.clone(),
        }
    }

    /// A keyword whose value maps names to subschemas (`properties`, …),
    /// each walked; any other value is kept as it is.
    fn schema_map(
        &mut self,
        key: &str,
        sub: &'a Value,
        stack: &mut Vec<Pointer>,
        depth: usize,
    ) -> Value {
        let Value::Object(map) = sub else {
            return sub.clone();
        };
        let mut walked = Map::new();
        for (name, s) in map {
            walked.insert(name.clone(), self.child(&[key, name], s, stack, depth));
        }
        Value::Object(walked)
    }

    /// Draft-7 `dependencies`, split into 2020-12 `dependentRequired`
    /// (arrays) and `dependentSchemas` (walked subschemas).
    fn dependencies(
        &mut self,
        key: &str,
        sub: &'a Value,
        out: &mut Map<String, Value>,
        stack: &mut Vec<Pointer>,
        depth: usize,
    ) {
        let Value::Object(map) = sub else {
            return;
        };
        for (name, dep) in map {
            let (slot, value) = if dep.is_array() {
                ("dependentRequired", dep.clone())
            } else {
                (
                    "dependentSchemas",
                    self.child(&[key, name], dep, stack, depth),
                )
            };
            let entry = out.entry(slot).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(e) = entry {
                e.insert(name.clone(), value);
            }
        }
    }

    fn list(
        &mut self,
        key: &str,
        list: &'a [Value],
        stack: &mut Vec<Pointer>,
        depth: usize,
    ) -> Value {
        let mut walked = Vec::with_capacity(list.len());
        for (i, s) in list.iter().enumerate() {
            walked.push(self.child(&[key, &i.to_string()], s, stack, depth));
        }
        Value::Array(walked)
    }

    /// A `$ref`'s replacement (`key` is `$ref`, or `$recursiveRef` read as
    /// one): the inlined target, a kept `{"$ref"}`, or `true` (no
    /// constraint) when it was dropped.
    fn reference(
        &mut self,
        key: &str,
        sub: &'a Value,
        stack: &mut Vec<Pointer>,
        depth: usize,
    ) -> Value {
        // Inside an embedded `$id` resource a reference is relative to it,
        // and a path into one is refused too: both are dropped.
        let resolved = match sub.as_str() {
            Some(r) if self.nested_resource == 0 => resolve_ref(self.doc, r)
                .ok()
                .filter(|r| !r.crosses_resource)
                .map(|r| (r.pointer, r.target)),
            _ => None,
        };
        let Some((pointer, target)) = resolved else {
            self.loosen_at(key, LooseningReason::UnresolvableRef);
            return Value::Bool(true);
        };
        if let Some(cut) = self.cut_reference(key, &pointer, target, stack, depth) {
            return cut;
        }
        let saved = std::mem::replace(&mut self.path, pointer.as_str().to_string());
        stack.push(pointer.clone());
        let out = self.node(target, stack, depth);
        stack.pop();
        self.path = saved;
        if self.options.refs == RefMode::InlineKeepRecursive && self.recursive.contains(&pointer) {
            // A recursive target is referenced from everywhere, never also
            // inlined once.
            return self.keep(pointer, target);
        }
        out
    }

    /// What a reference becomes instead of being inlined here (kept under
    /// `$defs`, or cut to `true` in [`RefMode::Unroll`]), `None` to inline.
    fn cut_reference(
        &mut self,
        key: &str,
        pointer: &Pointer,
        target: &'a Value,
        stack: &[Pointer],
        depth: usize,
    ) -> Option<Value> {
        let fits = depth + self.height(pointer, target) <= self.options.max_depth;
        let budget = self.nodes < self.options.max_nodes;
        match self.options.refs {
            RefMode::InlineKeepRecursive => {
                if stack.contains(pointer) {
                    self.recursive.insert(pointer.clone());
                    return Some(self.keep(pointer.clone(), target));
                }
                if !fits || !budget {
                    return Some(self.keep(pointer.clone(), target));
                }
            }
            RefMode::Unroll { depth: limit } => {
                let seen = stack.iter().filter(|p| *p == pointer).count();
                let reason = if seen > usize::from(limit) {
                    Some(LooseningReason::RecursionCut)
                } else if !budget {
                    Some(LooseningReason::Budget)
                } else if !fits {
                    Some(LooseningReason::TooDeep)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    self.loosen_at(key, reason);
                    return Some(Value::Bool(true));
                }
            }
        }
        None
    }

    /// A loosening reported at the keyword `key` of the node being walked.
    fn loosen_at(&mut self, key: &str, reason: LooseningReason) {
        let len = self.path.len();
        push_token(&mut self.path, key);
        self.loosen(reason);
        self.path.truncate(len);
    }

    fn keep(&mut self, pointer: Pointer, target: &'a Value) -> Value {
        let name = match self.kept.get(&pointer) {
            Some(name) => name.clone(),
            None => {
                let name = self.def_name(&pointer);
                self.kept.insert(pointer.clone(), name.clone());
                self.pending.push((pointer, name.clone(), target));
                name
            }
        };
        let mut m = Map::new();
        m.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
        Value::Object(m)
    }

    fn def_name(&mut self, pointer: &Pointer) -> String {
        let last = pointer.last().unwrap_or_default();
        let mut base: String = last
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        if pointer.is_root() {
            base = "root".into();
        } else if base.is_empty() {
            base = "def".into();
        }
        let mut name = base.clone();
        let mut n = 2;
        while !self.used_names.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }

    /// Schema nesting height of a target, not following references (capped
    /// just above `max_depth`).
    fn height(&mut self, pointer: &Pointer, target: &Value) -> usize {
        if let Some(h) = self.heights.get(pointer) {
            return *h;
        }
        let h = height_of(target, self.options.max_depth + 1);
        self.heights.insert(pointer.clone(), h);
        h
    }
}

fn height_of(v: &Value, cap: usize) -> usize {
    if cap == 0 {
        return 1;
    }
    let max = subschemas(v)
        .map(|(_, s)| height_of(s, cap - 1))
        .max()
        .unwrap_or(0);
    (max + 1).min(cap + 1)
}

/// Whether `$recursiveRef: "#"` is exactly `$ref: "#"` in `doc`: a
/// 2019-09 document (the only draft that defines `$recursiveRef`: the
/// pipeline's validator ignores it under 2020-12, so resolving it there
/// would tighten the export) whose root has `$recursiveAnchor: true`, with
/// no embedded `$id` resource (the dynamic scope is then the root alone).
fn recursive_ref_is_root(doc: &Value) -> bool {
    let draft_2019 = doc
        .get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|s| s.contains("draft/2019-09/schema"));
    if !draft_2019 || doc.get("$recursiveAnchor") != Some(&Value::Bool(true)) {
        return false;
    }
    let mut embedded = false;
    surface_manifest::schema::walk(doc, DEFAULT_MAX_DEPTH, &mut |at, node| {
        embedded |= !at.is_root() && node.get("$id").is_some();
        !embedded
    });
    !embedded
}

/// `prefixItems: [A, B], items: R` → `items: anyOf[A, B, R]`, the length
/// bounds kept (`items: false` caps `maxItems` at the tuple length; absent
/// `items` leaves items unconstrained). A loosening; true when applied.
fn flatten_tuple(out: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(prefix)) = out.remove("prefixItems") else {
        return false;
    };
    let tuple_len = prefix.len() as u64;
    let rest = out
        .remove("items")
        .or_else(|| out.remove("unevaluatedItems"));
    out.remove("unevaluatedItems");
    if matches!(rest, Some(Value::Bool(false))) {
        let max = out
            .get("maxItems")
            .and_then(Value::as_u64)
            .map_or(tuple_len, |m| m.min(tuple_len));
        out.insert("maxItems".into(), Value::from(max));
    }
    // Absent `items` leaves the items after the tuple unconstrained.
    let mut any = rest.is_none();
    let mut branches: Vec<Value> = Vec::with_capacity(prefix.len() + 1);
    for b in prefix.into_iter().chain(rest) {
        match b {
            Value::Bool(false) => {}
            Value::Bool(true) => any = true,
            Value::Object(m) if m.is_empty() => any = true,
            b => {
                if !branches.contains(&b) {
                    branches.push(b);
                }
            }
        }
    }
    if !any {
        let items = match branches.len() {
            0 => Value::Bool(false),
            1 => branches.remove(0),
            _ => {
                let mut u = Map::new();
                u.insert("anyOf".into(), Value::Array(branches));
                Value::Object(u)
            }
        };
        out.insert("items".into(), items);
    }
    true
}

/// Draft-04 boolean `exclusiveMinimum` / `exclusiveMaximum` → 2020-12.
fn bounds_to_2020(out: &mut Map<String, Value>, exclusive: &str, inclusive: &str) {
    if let Some(Value::Bool(flag)) = out.get(exclusive) {
        let flag = *flag;
        out.remove(exclusive);
        if flag {
            if let Some(bound) = out.remove(inclusive) {
                out.insert(exclusive.into(), bound);
            }
        }
    }
}

/// Merges `allOf` members into the schema where exact; `true` members are
/// dropped, a `false` member makes the schema `false`.
fn simplify_all_of(mut out: Map<String, Value>) -> Value {
    let Some(Value::Array(members)) = out.remove("allOf") else {
        return Value::Object(out);
    };
    let mut rest: Vec<Value> = Vec::new();
    for member in members {
        match member {
            Value::Bool(true) => {}
            Value::Bool(false) => return Value::Bool(false),
            Value::Object(inner) => match merge_exact(&inner, &out) {
                Some(merged) => out = merged,
                None => rest.push(Value::Object(inner)),
            },
            other => rest.push(other),
        }
    }
    if !rest.is_empty() {
        out.insert("allOf".into(), Value::Array(rest));
    }
    Value::Object(out)
}

/// The node's own keywords `out` combined with the schema its `$ref`
/// resolved to (`target`): merged when they agree exactly, else the target
/// joins `allOf`. `None` when the target is `false` (nothing validates).
fn with_reference(out: Map<String, Value>, target: Option<Value>) -> Option<Map<String, Value>> {
    let resolved = match target {
        None | Some(Value::Bool(true)) => return Some(out),
        Some(Value::Bool(false)) => return None,
        Some(Value::Object(resolved)) => resolved,
        Some(_) => return Some(out),
    };
    if out.is_empty() {
        return Some(resolved);
    }
    if let Some(merged) = merge_exact(&resolved, &out) {
        return Some(merged);
    }
    let mut out = out;
    match out.get_mut("allOf") {
        Some(Value::Array(all)) => all.insert(0, Value::Object(resolved)),
        _ => {
            out.insert("allOf".into(), Value::Array(vec![Value::Object(resolved)]));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn norm(schema: Value) -> NormalizedSchema {
        normalize(&schema, &NormalizeOptions::default())
    }

    /// Both schemas give the same verdict on every instance.
    fn same_verdicts(a: &Value, b: &Value, instances: &[Value]) {
        let va = jsonschema::validator_for(a).unwrap();
        let vb = jsonschema::validator_for(b).unwrap();
        for i in instances {
            assert_eq!(va.is_valid(i), vb.is_valid(i), "{i} under {a} vs {b}");
        }
    }

    /// Everything `a` accepts, `b` accepts.
    fn loosens(a: &Value, b: &Value, instances: &[Value]) {
        let va = jsonschema::validator_for(a).unwrap();
        let vb = jsonschema::validator_for(b).unwrap();
        for i in instances {
            assert!(
                !va.is_valid(i) || vb.is_valid(i),
                "{i} accepted by {a} but not {b}"
            );
        }
    }

    fn scalars() -> Vec<Value> {
        vec![
            json!("a"),
            json!("b"),
            json!(""),
            json!("c"),
            json!(null),
            json!(3),
            json!(4),
            json!(-1),
            json!(1.5),
            json!(true),
            json!([]),
            json!({}),
        ]
    }

    #[test]
    fn type_arrays_become_single_type_branches_with_their_keywords() {
        let input = json!({"type": ["string", "null", "integer"], "minLength": 1, "minimum": 0,
            "enum": ["a", null, 3, "b", ""], "description": "d"});
        let out = norm(input.clone());
        assert_eq!(
            out.schema,
            json!({"description": "d", "anyOf": [
                {"type": "string", "minLength": 1, "enum": ["a", "b", ""]},
                {"type": "null", "enum": [null]},
                {"type": "integer", "minimum": 0, "enum": [3]}]})
        );
        assert!(out.loosened.is_empty());
        same_verdicts(&input, &out.schema, &scalars());
    }

    #[test]
    fn a_one_type_array_is_a_plain_type_and_a_mismatched_const_drops_its_branch() {
        assert_eq!(
            norm(json!({"type": ["string"]})).schema,
            json!({"type": "string"})
        );
        let input = json!({"type": ["string", "number"], "const": "x", "title": "t"});
        let out = norm(input.clone()).schema;
        assert_eq!(out, json!({"type": "string", "const": "x", "title": "t"}));
        same_verdicts(&input, &out, &[json!("x"), json!("y"), json!(1)]);
        let impossible = json!({"type": ["string", "number"], "enum": [true]});
        assert_eq!(norm(impossible).schema, json!(false));
    }

    #[test]
    fn type_arrays_nested_in_properties_and_items_are_rewritten() {
        let input = json!({"type": "object", "properties": {"tags": {"type": "array",
            "items": {"type": ["string", "null"], "maxLength": 2}}}});
        let out = norm(input.clone()).schema;
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"anyOf": [
                {"type": "string", "maxLength": 2}, {"type": "null"}]}}}})
        );
        same_verdicts(
            &input,
            &out,
            &[
                json!({"tags": ["ab", null]}),
                json!({"tags": ["abc"]}),
                json!({"tags": [1]}),
            ],
        );
    }

    #[test]
    fn local_refs_are_inlined_and_dialect_keywords_dropped() {
        let input = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x.test/s",
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/Name"},
                "b": {"$ref": "#/$defs/Name", "description": "B's name"},
                "c": {"$ref": "https://x.test/s#/definitions/Count"}
            },
            "$defs": {"Name": {"type": "string", "minLength": 1, "description": "A name"}},
            "definitions": {"Count": {"type": "integer"}}
        });
        let out = norm(input.clone());
        assert_eq!(
            out.schema,
            json!({"type": "object", "properties": {
                "a": {"type": "string", "minLength": 1, "description": "A name"},
                "b": {"type": "string", "minLength": 1, "description": "B's name"},
                "c": {"type": "integer"}}})
        );
        assert!(out.loosened.is_empty());
        same_verdicts(
            &input,
            &out.schema,
            &[
                json!({"a": "x"}),
                json!({"a": ""}),
                json!({"c": 1.5}),
                json!({"b": 2}),
                json!({}),
            ],
        );
    }

    #[test]
    fn a_ref_whose_siblings_read_its_keywords_stays_a_conjunction() {
        let input = json!({"$defs": {"Closed": {"type": "object", "properties": {"a": {}},
                "additionalProperties": false}},
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/Closed", "properties": {"b": {}}}}});
        let out = norm(input.clone()).schema;
        assert_eq!(
            out["properties"]["x"],
            json!({"properties": {"b": {}}, "allOf": [{"type": "object", "properties": {"a": {}},
                "additionalProperties": false}]})
        );
        same_verdicts(
            &input,
            &out,
            &[
                json!({"x": {"a": 1}}),
                json!({"x": {"b": 1}}),
                json!({"x": {}}),
                json!({"x": 1}),
            ],
        );
    }

    #[test]
    fn single_all_of_members_merge_into_the_schema() {
        let input = json!({"$defs": {"Id": {"type": "string", "pattern": "^d-"}},
            "allOf": [{"$ref": "#/$defs/Id"}], "description": "Device id"});
        assert_eq!(
            norm(input).schema,
            json!({"type": "string", "pattern": "^d-", "description": "Device id"})
        );
        let two = json!({"allOf": [{"required": ["a"]}, {"required": ["b"], "type": "object"}]});
        assert_eq!(
            norm(two).schema,
            json!({"required": ["b", "a"], "type": "object"})
        );
    }

    #[test]
    fn recursive_refs_are_kept_under_defs_and_referenced_only() {
        let input = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                "meta": {"$ref": "#/$defs/Meta"}}},
              "Meta": {"type": "object", "properties": {"n": {"type": "integer"}}}}});
        let out = norm(input.clone());
        assert_eq!(
            out.schema,
            json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
                "$defs": {"Node": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    "meta": {"type": "object", "properties": {"n": {"type": "integer"}}}}}}})
        );
        assert!(out.loosened.is_empty());
        same_verdicts(
            &input,
            &out.schema,
            &[
                json!({"root": {"name": "a", "children": [{"name": "b", "children": [{"name": 1}]}]}}),
                json!({"root": {"children": [{"meta": {"n": 1}}]}}),
                json!({"root": {"children": [{"meta": {"n": "x"}}]}}),
            ],
        );
    }

    #[test]
    fn mutual_and_root_recursion_are_kept() {
        let mutual = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                      "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "x": {"type": "integer"}}}}});
        let out = norm(mutual.clone()).schema;
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
                "$defs": {"A": {"type": "object", "properties": {"b": {"type": "object",
                    "properties": {"a": {"$ref": "#/$defs/A"}, "x": {"type": "integer"}}}}}}})
        );
        same_verdicts(
            &mutual,
            &out,
            &[
                json!({"a": {"b": {"a": {"b": {"x": 1}}}}}),
                json!({"a": {"b": {"a": {"b": {"x": "no"}}}}}),
            ],
        );
        let root = json!({"type": "object", "properties": {"next": {"$ref": "#"}, "v": {"type": "string"}}});
        let out = norm(root.clone()).schema;
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"next": {"$ref": "#/$defs/root"}, "v": {"type": "string"}},
                "$defs": {"root": {"type": "object", "properties": {"next": {"$ref": "#/$defs/root"},
                    "v": {"type": "string"}}}}})
        );
        same_verdicts(
            &root,
            &out,
            &[
                json!({"next": {"next": {"v": "x"}}}),
                json!({"next": {"next": {"v": 1}}}),
            ],
        );
    }

    #[test]
    fn a_2019_09_recursive_ref_to_a_recursive_anchor_root_is_a_ref_to_the_root() {
        let input = json!({"$schema": "https://json-schema.org/draft/2019-09/schema",
            "$recursiveAnchor": true, "type": "object",
            "properties": {"next": {"$recursiveRef": "#"}, "v": {"type": "string"}}});
        let out = norm(input.clone());
        assert_eq!(
            out.schema,
            json!({"type": "object", "properties": {"next": {"$ref": "#/$defs/root"}, "v": {"type": "string"}},
                "$defs": {"root": {"type": "object", "properties": {"next": {"$ref": "#/$defs/root"},
                    "v": {"type": "string"}}}}})
        );
        assert!(out.loosened.is_empty());
        same_verdicts(
            &input,
            &out.schema,
            &[
                json!({"next": {"next": {"v": "x"}}}),
                json!({"next": {"next": {"v": 1}}}),
                json!({"next": 3}),
            ],
        );
    }

    #[test]
    fn recursive_anchors_are_dropped_and_other_recursive_refs_loosened() {
        // 2020-12 (no `$schema`): `$recursiveRef` is not a keyword there and
        // the pipeline's validator ignores it, so the export drops it.
        let later = json!({"$recursiveAnchor": true, "type": "object",
            "properties": {"next": {"$recursiveRef": "#"}}});
        // An embedded resource makes the dynamic scope more than the root.
        let embedded = json!({"$schema": "https://json-schema.org/draft/2019-09/schema",
            "$recursiveAnchor": true, "type": "object",
            "properties": {"next": {"$recursiveRef": "#"}, "inner": {"$id": "inner", "type": "string"}}});
        // Not at the root: `#` is still the root, whose anchor is not set.
        let nested = json!({"$schema": "https://json-schema.org/draft/2019-09/schema",
            "type": "object", "properties": {"f": {"$ref": "#/$defs/F"}},
            "$defs": {"F": {"$recursiveAnchor": true, "type": "object",
                "properties": {"next": {"$recursiveRef": "#"}}}}});
        for input in [later, embedded, nested] {
            let out = norm(input.clone());
            let text = out.schema.to_string();
            assert!(!text.contains("$recursive"), "{text}");
            assert!(!text.contains("$ref"), "{text}");
            assert_eq!(out.loosened.len(), 1, "{input}");
            assert_eq!(out.loosened[0].reason, LooseningReason::UnresolvableRef);
            assert!(out.loosened[0]
                .path
                .ends_with("/properties/next/$recursiveRef"));
        }
    }

    #[test]
    fn draft_04_exclusive_bounds_inside_a_2020_12_union_become_numeric() {
        let input = json!({"type": "object", "properties": {"m": {"oneOf": [
            {"type": "string", "enum": ["auto"]},
            {"type": "number", "minimum": 0, "exclusiveMinimum": true,
                "maximum": 10, "exclusiveMaximum": true}]}}});
        assert_eq!(
            norm(input).schema,
            json!({"type": "object", "properties": {"m": {"oneOf": [
                {"type": "string", "enum": ["auto"]},
                {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10}]}}})
        );
        let lone = json!({"type": "number", "exclusiveMinimum": true});
        assert_eq!(norm(lone).schema, json!({"type": "number"}));
    }

    #[test]
    fn meta_data_and_type_applicability_come_from_the_keyword_table() {
        let mut meta: Vec<&str> = surface_manifest::schema::KEYWORDS
            .iter()
            .map(|k| k.name)
            .filter(|k| is_meta_data(k))
            .collect();
        meta.sort_unstable();
        assert_eq!(
            meta,
            [
                "$comment",
                "default",
                "deprecated",
                "description",
                "examples",
                "readOnly",
                "title",
                "writeOnly"
            ]
        );
        assert!(keyword_applies("contentMediaType", "string"));
        assert!(!keyword_applies("contentMediaType", "integer"));
        assert!(keyword_applies("exclusiveMinimum", "integer"));
        assert!(!keyword_applies("required", "array"));
        assert!(keyword_applies("x-unknown", "null"));
        assert!(is_assertion("contentSchema") && is_assertion("$ref") && is_assertion("if"));
        assert!(!is_assertion("title") && !is_assertion("nullable") && !is_assertion("x-order"));
    }

    #[test]
    fn unroll_mode_expands_recursion_and_ends_in_an_empty_schema() {
        let input = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"},
                "v": {"type": "integer"}}}}});
        let options = NormalizeOptions {
            refs: RefMode::Unroll { depth: 1 },
            ..NormalizeOptions::default()
        };
        let out = normalize(&input, &options);
        assert_eq!(
            out.schema,
            json!({"type": "object", "properties": {"root": {"type": "object", "properties": {
                "child": {"type": "object", "properties": {"child": {}, "v": {"type": "integer"}}},
                "v": {"type": "integer"}}}}})
        );
        assert_eq!(
            out.loosened,
            [Loosening {
                path: "/$defs/Node/properties/child/$ref".into(),
                reason: LooseningReason::RecursionCut
            }]
        );
        loosens(
            &input,
            &out.schema,
            &[
                json!({"root": {"child": {"child": {"child": {"v": 1}}}}}),
                json!({"root": {"v": 2}}),
            ],
        );
    }

    #[test]
    fn unresolvable_refs_are_dropped_and_reported() {
        let input = json!({"type": "object", "properties": {
            "remote": {"$ref": "https://other.test/s.json", "type": "string"},
            "anchor": {"$ref": "#thing"},
            "missing": {"$ref": "#/$defs/Nope"},
            "inner": {"$id": "inner", "$defs": {"X": {"type": "string"}},
                      "type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}}});
        let out = norm(input.clone());
        assert_eq!(
            out.schema,
            json!({"type": "object", "properties": {"remote": {"type": "string"}, "anchor": {},
                "missing": {}, "inner": {"type": "object", "properties": {"x": {}}}}})
        );
        let mut paths: Vec<&str> = out.loosened.iter().map(|l| l.path.as_str()).collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                "/properties/anchor/$ref",
                "/properties/inner/properties/x/$ref",
                "/properties/missing/$ref",
                "/properties/remote/$ref"
            ]
        );
        assert!(out
            .loosened
            .iter()
            .all(|l| l.reason == LooseningReason::UnresolvableRef));
    }

    #[test]
    fn pointer_escapes_and_percent_encoding_resolve() {
        let input = json!({"type": "object", "properties": {
            "a": {"$ref": "#/$defs/a~1b"}, "b": {"$ref": "#/%24defs/t~0x"}, "c": {"$ref": "#/properties/a"}},
            "$defs": {"a/b": {"type": "integer"}, "t~x": {"type": "boolean"}}});
        assert_eq!(
            norm(input).schema,
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"},
                "c": {"type": "integer"}}})
        );
    }

    #[test]
    fn exponential_ref_fan_out_is_bounded_by_the_node_budget() {
        let mut defs = Map::new();
        for i in 0..40 {
            let next = if i == 39 {
                json!({"type": "integer"})
            } else {
                json!({"$ref": format!("#/$defs/D{}", i + 1)})
            };
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": {"a": next, "b": next}}),
            );
        }
        let input = json!({"$ref": "#/$defs/D0", "$defs": defs});
        let options = NormalizeOptions {
            max_nodes: 500,
            ..NormalizeOptions::default()
        };
        let out = normalize(&input, &options);
        let size = out.schema.to_string().len();
        assert!(size < 40_000, "output of {size} bytes");
        assert!(out.loosened.is_empty(), "kept references are exact");
        assert!(out.schema["$defs"]
            .as_object()
            .is_some_and(|d| !d.is_empty()));
        // Properties are optional: one path down the fan-out is an instance.
        let mut deep = json!(1);
        for _ in 0..40 {
            deep = json!({"a": deep});
        }
        same_verdicts(
            &input,
            &out.schema,
            &[deep.clone(), json!({"a": {"b": "x"}})],
        );
        // Unroll mode: the budget turns references into `{}`.
        let unroll = NormalizeOptions {
            refs: RefMode::Unroll { depth: 1 },
            max_nodes: 500,
            ..NormalizeOptions::default()
        };
        let out = normalize(&input, &unroll);
        assert!(out.schema.to_string().len() < 40_000);
        assert!(out.schema.get("$defs").is_none());
        assert!(out
            .loosened
            .iter()
            .all(|l| l.reason == LooseningReason::Budget));
        loosens(&input, &out.schema, &[deep]);
    }

    #[test]
    fn nesting_beyond_max_depth_becomes_empty_without_overflowing_the_stack() {
        let mut schema = json!({"type": "string"});
        for _ in 0..300 {
            schema = json!({"type": "object", "properties": {"x": schema}});
        }
        let out = norm(schema);
        assert_eq!(out.loosened.len(), 1);
        assert_eq!(out.loosened[0].reason, LooseningReason::TooDeep);
        assert_eq!(
            out.loosened[0].path.matches("/properties/x").count(),
            DEFAULT_MAX_DEPTH + 1
        );
    }

    #[test]
    fn draft_07_and_04_spellings_become_2020_12() {
        let input = json!({"type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
            "properties": {"n": {"type": "number", "minimum": 3, "exclusiveMinimum": true,
                "maximum": 9, "exclusiveMaximum": false}}});
        assert_eq!(
            norm(input).schema,
            json!({"type": "object", "dependentRequired": {"a": ["b"]},
                "dependentSchemas": {"c": {"required": ["d"]}},
                "properties": {"n": {"type": "number", "exclusiveMinimum": 3, "maximum": 9}}})
        );
        let tuple07 = json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}],
            "additionalItems": false});
        let out = norm(tuple07);
        assert_eq!(
            out.schema,
            json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "maxItems": 2})
        );
        assert_eq!(out.loosened[0].reason, LooseningReason::Tuple);
    }

    #[test]
    fn tuples_are_loosened_to_items_of_any_member_type() {
        let closed = json!({"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
            "items": false, "minItems": 2});
        let out = norm(closed.clone()).schema;
        assert_eq!(
            out,
            json!({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2})
        );
        let rest = json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}});
        let out_rest = norm(rest.clone()).schema;
        assert_eq!(
            out_rest,
            json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}})
        );
        let open = json!({"type": "array", "prefixItems": [{"type": "string"}]});
        assert_eq!(norm(open.clone()).schema, json!({"type": "array"}));
        let samples = [
            json!([1, 2]),
            json!([1]),
            json!(["a", 1, 2]),
            json!([1, 2, 3]),
            json!(["a"]),
            json!([true]),
        ];
        loosens(&closed, &out, &samples);
        loosens(&rest, &out_rest, &samples);
    }

    #[test]
    fn object_roots_admit_objects_only() {
        assert_eq!(object_root(json!(true)), Some(json!({"type": "object"})));
        assert_eq!(object_root(json!({})), Some(json!({"type": "object"})));
        assert_eq!(object_root(json!(false)), None);
        assert_eq!(object_root(json!({"type": "string"})), None);
        assert_eq!(
            object_root(
                json!({"anyOf": [{"type": "string"}, {"type": "object", "required": ["a"]}], "description": "d"})
            ),
            Some(json!({"type": "object", "required": ["a"], "description": "d"}))
        );
        assert_eq!(
            object_root(
                json!({"anyOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}, {"type": "null"}]})
            ),
            Some(
                json!({"type": "object", "anyOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}]})
            )
        );
        assert_eq!(object_root(json!({"anyOf": [{"type": "string"}]})), None);
    }

    #[test]
    fn merging_never_splits_keywords_that_read_each_other() {
        let a = json!({"properties": {"a": {}}, "additionalProperties": false});
        let b = json!({"properties": {"b": {}}});
        assert_eq!(
            merge_exact(a.as_object().unwrap(), b.as_object().unwrap()),
            None
        );
        let c = json!({"properties": {"a": {"type": "string"}}, "required": ["a"]});
        let d = json!({"properties": {"b": {}}, "required": ["b", "a"], "description": "x"});
        assert_eq!(
            merge_exact(c.as_object().unwrap(), d.as_object().unwrap()),
            json!({"properties": {"a": {"type": "string"}, "b": {}}, "required": ["a", "b"], "description": "x"})
                .as_object()
                .cloned()
        );
        let e = json!({"properties": {"a": {}}});
        let f = json!({"properties": {"a": {"type": "string"}}});
        assert_eq!(
            merge_exact(e.as_object().unwrap(), f.as_object().unwrap()),
            None
        );
    }

    #[test]
    fn invalid_schema_values_become_empty_and_are_reported() {
        let out = norm(json!({"type": "object", "properties": {"a": 5}}));
        assert_eq!(
            out.schema,
            json!({"type": "object", "properties": {"a": {}}})
        );
        assert_eq!(
            out.loosened,
            [Loosening {
                path: "/properties/a".into(),
                reason: LooseningReason::InvalidSchema
            }]
        );
    }
}
