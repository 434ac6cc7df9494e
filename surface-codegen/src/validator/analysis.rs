//! The analysis before emission: the schema's dialect, every keyword value
//! checked against what the generator supports (all problems collected),
//! the `$ref` targets and the resolution of every `$ref`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use surface_manifest::schema::{child_pointer, resolve_ref, walk as walk_schemas, RefError};

use super::{Draft, Unsupported, UnsupportedReason};

/// A `$ref` target: the root, or a subschema some `$ref` points at.
pub(crate) struct Target<'s> {
    pub(crate) pointer: String,
    pub(crate) node: &'s Value,
    /// How many `$ref`s point here.
    pub(crate) refs: usize,
    /// `$ref`s in this target's own subtree (not through other targets).
    edges: Vec<Edge>,
    /// Emitted as a function of its own (root, shared or recursive).
    pub(crate) function: bool,
    /// Whether the path from the root to this target enters (or ends at)
    /// a subschema with its own `$id`.
    in_resource: bool,
}

struct Edge {
    to: usize,
    /// Whether the `$ref` sits below a keyword that moves into a child of
    /// the instance (`properties`, `items`, …).
    descends: bool,
    at: String,
}

/// The result of checking a schema: its dialect, its `$ref` targets and the
/// resolution of every `$ref`.
pub(crate) struct Analysis<'s> {
    pub(crate) draft: Draft,
    pub(crate) targets: Vec<Target<'s>>,
    by_pointer: HashMap<String, usize>,
    /// `$ref` keyword pointer → target index.
    pub(crate) refs: HashMap<String, usize>,
    root: &'s Value,
    /// The draft-mix reading of 2019-09's recursion keywords applies: the
    /// document is 2019-09, or a 2020-12 one holding a boolean
    /// `$recursiveAnchor` (docs/validation.md, "Draft-mix readings").
    recursive_keywords: bool,
    /// Some subschema below the root has an `$id` of its own.
    embedded_resources: bool,
    errors: Vec<Unsupported>,
    seen: HashSet<(String, String)>,
}

/// How deep [`Analysis::scan_document`] looks (`serde_json` parses at most
/// 128 levels, and a subschema is at least one level).
const MAX_SCAN_DEPTH: usize = 256;

/// `walk`'s target for subschemas only checked against the meta-schema
/// (unreferenced `$defs`): no `$ref` edges, no "unsupported" errors.
const SHAPE_ONLY: usize = usize::MAX;

pub(crate) const TYPES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

/// Where [`Analysis::walk`] is: the `$ref` target whose subtree it walks
/// (or [`SHAPE_ONLY`]), whether a keyword on the way moved into a child of
/// the instance, and whether a subschema on the way has an `$id` of its
/// own.
#[derive(Clone, Copy)]
struct Place {
    target: usize,
    descended: bool,
    in_resource: bool,
}

impl Place {
    fn new(target: usize, in_resource: bool) -> Self {
        Place {
            target,
            descended: false,
            in_resource,
        }
    }

    /// The place of a subschema only checked against the meta-schema.
    fn shape_only(self) -> Self {
        Place::new(SHAPE_ONLY, self.in_resource)
    }
}

impl<'s> Analysis<'s> {
    pub(crate) fn run(root: &'s Value) -> Result<Analysis<'s>, Vec<Unsupported>> {
        let mut a = Analysis {
            draft: Draft::D2020,
            targets: Vec::new(),
            by_pointer: HashMap::new(),
            refs: HashMap::new(),
            root,
            recursive_keywords: false,
            embedded_resources: false,
            errors: Vec::new(),
            seen: HashSet::new(),
        };
        if let Some(map) = root.as_object() {
            match map.get("$schema") {
                None => {}
                Some(Value::String(uri)) => match uri.trim_end_matches('#') {
                    "https://json-schema.org/draft/2020-12/schema"
                    | "http://json-schema.org/draft/2020-12/schema"
                    | "https://json-schema.org/schema"
                    | "http://json-schema.org/schema" => {}
                    "https://json-schema.org/draft/2019-09/schema"
                    | "http://json-schema.org/draft/2019-09/schema" => a.draft = Draft::D2019,
                    "https://json-schema.org/draft-07/schema"
                    | "http://json-schema.org/draft-07/schema" => a.draft = Draft::D7,
                    "https://json-schema.org/draft-06/schema"
                    | "http://json-schema.org/draft-06/schema" => a.draft = Draft::D6,
                    _ => a.unsupported("$schema", "/$schema", UnsupportedReason::Dialect),
                },
                Some(_) => a.unsupported("$schema", "/$schema", UnsupportedReason::MustBeString),
            }
            if map.get("$id").is_some_and(|id| !id.is_string()) {
                a.unsupported("$id", "/$id", UnsupportedReason::MustBeString);
            }
        }
        a.scan_document();
        if !matches!(root, Value::Object(_) | Value::Bool(_)) {
            a.unsupported("", "", UnsupportedReason::NotASchema);
            return Err(a.errors);
        }
        a.add_target(String::new(), root, false);
        let mut next = 0;
        while next < a.targets.len() {
            let target = &a.targets[next];
            let (node, pointer, in_resource) =
                (target.node, target.pointer.clone(), target.in_resource);
            a.walk(node, &pointer, Place::new(next, in_resource));
            next += 1;
        }
        a.check_cycles();
        if !a.errors.is_empty() {
            return Err(a.errors);
        }
        for t in 0..a.targets.len() {
            let recursive = a.reaches(t, t, false);
            let target = &mut a.targets[t];
            target.function = t == 0 || target.refs >= 2 || recursive;
        }
        Ok(a)
    }

    fn unsupported(&mut self, keyword: &str, pointer: &str, reason: UnsupportedReason) {
        if self.seen.insert((keyword.to_string(), pointer.to_string())) {
            self.errors.push(Unsupported {
                keyword: keyword.to_string(),
                pointer: pointer.to_string(),
                reason,
            });
        }
    }

    /// Document-wide facts, from one walk over every subschema: whether a
    /// boolean `$recursiveAnchor` turns on the 2019-09 recursion keywords
    /// in a 2020-12 document, and whether the document embeds resources.
    fn scan_document(&mut self) {
        let (mut boolean_anchor, mut embedded) = (false, false);
        walk_schemas(self.root, MAX_SCAN_DEPTH, &mut |at, node| {
            boolean_anchor |= node.get("$recursiveAnchor").is_some_and(Value::is_boolean);
            embedded |= !at.is_root() && node.get("$id").is_some();
            true
        });
        self.embedded_resources = embedded;
        self.recursive_keywords = match self.draft {
            Draft::D2019 => true,
            Draft::D2020 => boolean_anchor,
            Draft::D6 | Draft::D7 => false,
        };
    }

    fn add_target(&mut self, pointer: String, node: &'s Value, in_resource: bool) -> usize {
        if let Some(&t) = self.by_pointer.get(&pointer) {
            return t;
        }
        let t = self.targets.len();
        self.by_pointer.insert(pointer.clone(), t);
        self.targets.push(Target {
            pointer,
            node,
            refs: 0,
            edges: Vec::new(),
            function: false,
            in_resource,
        });
        t
    }

    /// Checks every keyword of `node` and follows its subschemas.
    fn walk(&mut self, node: &'s Value, ptr: &str, place: Place) {
        let map = match node {
            Value::Bool(_) => return,
            Value::Object(map) => map,
            _ => {
                self.unsupported("", ptr, UnsupportedReason::NotASchema);
                return;
            }
        };
        let place = Place {
            in_resource: place.in_resource || (!ptr.is_empty() && map.contains_key("$id")),
            ..place
        };
        if let Some(r) = map.get("$ref") {
            self.walk_ref("$ref", r, &child_pointer(ptr, "$ref"), place);
            if !self.draft.ref_siblings() {
                return;
            }
        }
        if let Some(r) = map.get("$recursiveRef").filter(|_| self.recursive_keywords) {
            self.walk_ref(
                "$recursiveRef",
                r,
                &child_pointer(ptr, "$recursiveRef"),
                place,
            );
        }
        for (keyword, value) in map {
            if !self.draft.knows(keyword) {
                continue;
            }
            let at = child_pointer(ptr, keyword);
            if !self.walk_applicator(keyword, value, &at, place) {
                self.check_value(keyword, value, &at, place.target == SHAPE_ONLY);
            }
        }
    }

    /// Follows the subschemas of an applicator keyword; `false` when
    /// `keyword` is not one.
    fn walk_applicator(&mut self, keyword: &str, value: &'s Value, at: &str, place: Place) -> bool {
        let into_child = Place {
            descended: true,
            ..place
        };
        match keyword {
            // Checked against the meta-schema only: a definition is
            // validated where a `$ref` uses it.
            "$defs" | "definitions" => match value.as_object() {
                Some(defs) => {
                    for (name, sub) in defs {
                        self.walk(sub, &child_pointer(at, name), place.shape_only());
                    }
                }
                None => self.unsupported(keyword, at, UnsupportedReason::MetaSchema),
            },
            "contentSchema" => self.walk(value, at, place.shape_only()),
            "properties" | "patternProperties" | "dependentSchemas" => {
                self.walk_properties(keyword, value, at, place);
            }
            "additionalProperties" | "propertyNames" | "additionalItems" | "contains" => {
                self.walk(value, at, into_child);
            }
            "not" | "if" | "then" | "else" => self.walk(value, at, place),
            "items" | "prefixItems" => match value {
                Value::Array(items) => self.walk_list(items, at, into_child),
                _ if keyword == "items" => self.walk(value, at, into_child),
                _ => self.unsupported(keyword, at, UnsupportedReason::MustBeSchemaArray),
            },
            "allOf" | "anyOf" | "oneOf" => match value.as_array() {
                Some(items) if !items.is_empty() => self.walk_list(items, at, place),
                _ => self.unsupported(keyword, at, UnsupportedReason::MustBeNonEmptySchemaArray),
            },
            "dependencies" => match value.as_object() {
                Some(deps) => {
                    for (name, dep) in deps {
                        if dep.is_array() {
                            self.check_string_array(dep, &child_pointer(at, name), keyword);
                        } else {
                            self.walk(dep, &child_pointer(at, name), place);
                        }
                    }
                }
                None => self.unsupported(keyword, at, UnsupportedReason::MustBeObject),
            },
            _ => return false,
        }
        true
    }

    /// `properties`, `patternProperties` (whose keys are patterns) and
    /// `dependentSchemas` (which applies to the same instance).
    fn walk_properties(&mut self, keyword: &str, value: &'s Value, at: &str, place: Place) {
        let Some(props) = value.as_object() else {
            self.unsupported(keyword, at, UnsupportedReason::MustBeSchemaObject);
            return;
        };
        let place = Place {
            descended: place.descended || keyword != "dependentSchemas",
            ..place
        };
        for (name, sub) in props {
            if keyword == "patternProperties" && place.target != SHAPE_ONLY {
                self.check_pattern(name, at, keyword);
            }
            self.walk(sub, &child_pointer(at, name), place);
        }
    }

    /// Each schema of an array keyword, at `at/0`, `at/1`, …
    fn walk_list(&mut self, items: &'s [Value], at: &str, place: Place) {
        for (n, sub) in items.iter().enumerate() {
            self.walk(sub, &child_pointer(at, &n.to_string()), place);
        }
    }

    /// The value of a keyword that holds no subschema: its shape, and
    /// whether the generator supports it (`shape_only`: meta-schema checks
    /// only).
    fn check_value(&mut self, keyword: &str, value: &Value, at: &str, shape_only: bool) {
        use UnsupportedReason as R;
        match keyword {
            "$anchor" | "$dynamicAnchor" => {
                self.require(
                    value.as_str().is_some_and(is_anchor),
                    keyword,
                    at,
                    R::MetaSchema,
                );
            }
            // 2019-09's boolean, read in 2020-12 too (the draft-mix
            // reading); 2020-12 reserves the name for an anchor string.
            "$recursiveAnchor" => {
                let ok = value.is_boolean()
                    || (self.draft != Draft::D2019 && value.as_str().is_some_and(is_anchor));
                self.require(ok, keyword, at, R::MetaSchema);
            }
            "$id" | "$comment" | "title" | "description" | "contentEncoding"
            | "contentMediaType" => self.require(value.is_string(), keyword, at, R::MetaSchema),
            "deprecated" | "readOnly" | "writeOnly" => {
                self.require(value.is_boolean(), keyword, at, R::MetaSchema);
            }
            "examples" => self.require(value.is_array(), keyword, at, R::MetaSchema),
            "dependentRequired" => match value.as_object() {
                Some(deps) => {
                    for (name, dep) in deps {
                        self.check_string_array(dep, &child_pointer(at, name), keyword);
                    }
                }
                None => self.unsupported(keyword, at, R::MustBeStringArrayObject),
            },
            "required" => self.check_string_array(value, at, keyword),
            "type" => {
                let is_type = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t));
                let ok = match value {
                    Value::Array(ts) => ts.iter().all(is_type),
                    other => is_type(other),
                };
                self.require(ok, keyword, at, R::MustBeTypeNames);
            }
            "enum" => self.require(value.is_array(), keyword, at, R::MustBeArray),
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" | "minContains" | "maxContains" => {
                self.require(size_limit(value).is_some(), keyword, at, R::MustBeSize);
            }
            "minimum" | "maximum" => self.require(value.is_number(), keyword, at, R::MustBeNumber),
            // A boolean is draft-04's modifier of `minimum`/`maximum`, read
            // in every draft (the draft-mix reading).
            "exclusiveMinimum" | "exclusiveMaximum" => {
                let ok = value.is_number() || value.is_boolean();
                self.require(ok, keyword, at, R::MustBeNumberOrBoolean);
            }
            "multipleOf" => {
                let ok = value.as_f64().is_some_and(|m| m > 0.0 && m.is_finite());
                self.require(ok, keyword, at, R::MustBePositive);
            }
            "pattern" => match value.as_str() {
                Some(_) if shape_only => {}
                Some(source) => self.check_pattern(source, at, keyword),
                None => self.unsupported(keyword, at, R::MustBeString),
            },
            "format" => self.require(value.is_string(), keyword, at, R::MustBeString),
            "uniqueItems" => self.require(value.is_boolean(), keyword, at, R::MustBeBoolean),
            "unevaluatedProperties" | "unevaluatedItems" | "$dynamicRef" if !shape_only => {
                self.unsupported(keyword, at, R::Keyword);
            }
            // `$ref` and `$recursiveRef` (walked first), annotations,
            // identifiers and unknown keywords: nothing to check.
            _ => {}
        }
    }

    fn require(&mut self, ok: bool, keyword: &str, at: &str, reason: UnsupportedReason) {
        if !ok {
            self.unsupported(keyword, at, reason);
        }
    }

    fn check_string_array(&mut self, value: &Value, at: &str, keyword: &str) {
        let ok = value
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string));
        if !ok {
            self.unsupported(keyword, at, UnsupportedReason::MustBeStringArray);
        }
    }

    fn check_pattern(&mut self, source: &str, at: &str, keyword: &str) {
        if let Err(err) = regress::Regex::with_flags(source, "u") {
            let at = if keyword == "patternProperties" {
                child_pointer(at, source)
            } else {
                at.to_string()
            };
            self.unsupported(keyword, &at, UnsupportedReason::Pattern(err.to_string()));
        }
    }

    /// A `$ref` (or a read `$recursiveRef`) at `at`: resolved, and an edge
    /// from the target being walked to the one it names.
    fn walk_ref(&mut self, keyword: &str, reference: &Value, at: &str, place: Place) {
        let Some(reference) = reference.as_str() else {
            self.unsupported(keyword, at, UnsupportedReason::MustBeString);
            return;
        };
        if place.target == SHAPE_ONLY {
            return;
        }
        if place.in_resource {
            self.unsupported(keyword, at, UnsupportedReason::RefInResource);
            return;
        }
        let resolved = match resolve_ref(self.root, reference) {
            Ok(resolved) => resolved,
            Err(err) => {
                self.unsupported(keyword, at, ref_error_reason(&err));
                return;
            }
        };
        if keyword == "$recursiveRef" {
            // 2019-09 defines `$recursiveRef` for `"#"` only, whose target
            // is the outermost resource of the dynamic scope with
            // `$recursiveAnchor: true` when the root has one: with no
            // embedded resource that is the root, with or without it.
            if !resolved.pointer.is_root() {
                self.unsupported(keyword, at, UnsupportedReason::RecursiveRefNotRoot);
                return;
            }
            if self.embedded_resources {
                self.unsupported(keyword, at, UnsupportedReason::RecursiveRefWithResources);
                return;
            }
        }
        let pointer = resolved.pointer.into_string();
        let to = self.add_target(pointer, resolved.target, resolved.crosses_resource);
        self.targets[to].refs += 1;
        self.targets[place.target].edges.push(Edge {
            to,
            descends: place.descended,
            at: at.to_string(),
        });
        self.refs.insert(at.to_string(), to);
    }

    /// A `$ref` cycle that never moves into the instance would recurse
    /// forever on any instance.
    fn check_cycles(&mut self) {
        let mut bad = Vec::new();
        for t in 0..self.targets.len() {
            if self.reaches(t, t, true) {
                let at = self.targets[t]
                    .edges
                    .iter()
                    .find(|e| !e.descends)
                    .map(|e| e.at.clone())
                    .unwrap_or_default();
                bad.push(at);
            }
        }
        for at in bad {
            self.unsupported("$ref", &at, UnsupportedReason::EndlessCycle);
        }
    }

    /// Whether `to` is reachable from `from` by one or more `$ref` edges
    /// (only non-descending ones when `same_instance`).
    fn reaches(&self, from: usize, to: usize, same_instance: bool) -> bool {
        let mut seen = vec![false; self.targets.len()];
        let mut stack = vec![from];
        while let Some(t) = stack.pop() {
            for e in &self.targets[t].edges {
                if same_instance && e.descends {
                    continue;
                }
                if e.to == to {
                    return true;
                }
                if !seen[e.to] {
                    seen[e.to] = true;
                    stack.push(e.to);
                }
            }
        }
        false
    }

    pub(crate) fn target_index(&self, ref_pointer: &str) -> Option<usize> {
        self.refs.get(ref_pointer).copied()
    }
}

/// `^[A-Za-z_][-A-Za-z0-9._]*$`, the meta-schema's anchor names.
fn is_anchor(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

/// A non-negative integer size (integer-valued floats accepted, as the
/// runtime validator does from draft-06 on; past `u64` saturates).
pub(crate) fn size_limit(value: &Value) -> Option<u64> {
    if let Some(u) = value.as_u64() {
        return Some(u);
    }
    let f = value.as_f64()?;
    if f >= 0.0 && f.fract() == 0.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        return Some(if f >= 1.8e19 { u64::MAX } else { f as u64 });
    }
    None
}

/// The reason a `$ref` that does not resolve is refused.
fn ref_error_reason(err: &RefError) -> UnsupportedReason {
    match err {
        RefError::External => UnsupportedReason::ExternalRef,
        RefError::Anchor => UnsupportedReason::AnchorRef,
        RefError::BadFragment => UnsupportedReason::BadFragment,
        RefError::Dangling => UnsupportedReason::DanglingRef,
        RefError::NotASchema => UnsupportedReason::RefToNonSchema,
    }
}
