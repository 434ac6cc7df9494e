//! JSON Schema → a validator in plain Rust (issue 13).
//!
//! [`validator_tokens`] turns one schema into an expression of type
//! `<crate>::__private::validation::Validator`: a pair of generated
//! functions, a fast `is_valid` that allocates nothing and an error pass
//! that runs only on invalid instances and reports every violation with its
//! instance path, keyword and a masked message — the same errors, keyword by
//! keyword and path by path, as the runtime `jsonschema` validator reports.
//!
//! # Generated code
//! One function per subschema that is referenced more than once or
//! recursively (plus the root), everything else inlined; instance paths are
//! linked lists on the stack, rendered only when an error is recorded; large
//! `anyOf`/`oneOf`/`not`/`if`/`contains` branches become `is_valid`-only
//! functions shared by both passes. Nothing is generic, so nothing is
//! monomorphized per schema.
//!
//! # Keywords
//! Draft 2020-12 (the default, also for a missing `$schema`), 2019-09,
//! draft-07 and draft-06, picked by `$schema` as the runtime validator picks
//! them: `type` (also arrays; `integer` is a number with a zero fraction),
//! `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `multipleOf` (exact in the decimal reading),
//! `minLength`/`maxLength` (code points), `pattern` (ECMA-262), `format`,
//! `properties`, `required`, `additionalProperties`, `patternProperties`,
//! `propertyNames`, `minProperties`/`maxProperties`, `dependentRequired`,
//! `dependentSchemas`, `dependencies`, `items` (schema or draft-07 array
//! form), `prefixItems`, `additionalItems`, `contains`,
//! `minContains`/`maxContains`, `minItems`/`maxItems`, `uniqueItems`,
//! `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, and `$ref` to any
//! JSON Pointer in the document (`#`, `#/$defs/…`, `#/definitions/…`,
//! `~0`/`~1` and percent-escapes; recursion allowed, `$ref` siblings applied
//! from 2019-09 on and ignored before, as the drafts say). Everything else —
//! `title`, `description`, `default`, `examples`, `deprecated`, `readOnly`,
//! `writeOnly`, `content*`, `$comment`, `x-*`, OpenAPI's `nullable` and any
//! unknown keyword — is an annotation and checks nothing.
//!
//! [`Unsupported`] (never a silent accept): `unevaluatedProperties`,
//! `unevaluatedItems`, `$dynamicRef`, `$recursiveRef`, `$ref` to an anchor
//! or another document, `$ref` inside a subschema with its own `$id`, a
//! `$ref` cycle that does not descend into the instance, draft-04 and
//! unknown `$schema` dialects, a `pattern` that is not a valid ECMA-262
//! regular expression, and keyword values of the wrong shape.

use std::collections::{HashMap, HashSet};
use std::fmt;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

mod emit;
#[cfg(test)]
mod tests;

/// How [`validator_tokens`] names the runtime.
#[derive(Clone, Debug)]
pub struct ValidatorOptions {
    /// Path of the runtime crate in the generated code, e.g.
    /// `::surface_runtime` or `::agent_surface`; the code names
    /// `<crate_path>::__private::{validation, pattern, format, serde_json}`.
    pub crate_path: TokenStream,
}

impl Default for ValidatorOptions {
    fn default() -> Self {
        ValidatorOptions {
            crate_path: quote!(::surface_runtime),
        }
    }
}

/// A part of the schema the generator cannot turn into a validator.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Unsupported {
    /// The keyword (`"unevaluatedProperties"`, `"$ref"`, `"pattern"`, …).
    pub keyword: String,
    /// JSON Pointer of the keyword in the schema (`"/properties/a/pattern"`).
    pub pointer: String,
    /// What is wrong, in a sentence.
    pub reason: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` at `{}`: {}",
            self.keyword,
            if self.pointer.is_empty() {
                "#"
            } else {
                &self.pointer
            },
            self.reason
        )
    }
}

/// Generates the validator of `schema`: an expression of type
/// `<crate_path>::__private::validation::Validator`, usable as a `const`
/// initializer. Errors list every unsupported part of the schema, each with
/// its keyword and JSON Pointer.
pub fn validator_tokens(
    schema: &Value,
    options: &ValidatorOptions,
) -> Result<TokenStream, Vec<Unsupported>> {
    let analysis = Analysis::run(schema)?;
    Ok(emit::Emitter::new(&analysis, options).emit())
}

/// The JSON Schema dialect, as far as the supported keywords differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    D6,
    D7,
    D2019,
    D2020,
}

impl Draft {
    /// `$ref` siblings apply (2019-09 on).
    pub(crate) fn ref_siblings(self) -> bool {
        self >= Draft::D2019
    }
    pub(crate) fn knows(self, keyword: &str) -> bool {
        match keyword {
            "if" => self >= Draft::D7,
            "dependentRequired" | "dependentSchemas" | "minContains" | "maxContains" => {
                self >= Draft::D2019
            }
            "prefixItems" | "$dynamicRef" => self >= Draft::D2020,
            "unevaluatedProperties" | "unevaluatedItems" => self >= Draft::D2019,
            // Replaced by `$dynamicRef` in 2020-12, where it means nothing
            // (the runtime validator ignores it too).
            "$recursiveRef" => self == Draft::D2019,
            _ => true,
        }
    }
}

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
    root_id: Option<String>,
    errors: Vec<Unsupported>,
    seen: HashSet<(String, String)>,
}

/// `walk`'s target for subschemas only checked against the meta-schema
/// (unreferenced `$defs`): no `$ref` edges, no "unsupported" errors.
const SHAPE_ONLY: usize = usize::MAX;

const TYPES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

impl<'s> Analysis<'s> {
    fn run(root: &'s Value) -> Result<Analysis<'s>, Vec<Unsupported>> {
        let mut a = Analysis {
            draft: Draft::D2020,
            targets: Vec::new(),
            by_pointer: HashMap::new(),
            refs: HashMap::new(),
            root,
            root_id: None,
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
                    _ => a.unsupported(
                        "$schema",
                        "/$schema",
                        "only the 2020-12, 2019-09, draft-07 and draft-06 dialects are supported",
                    ),
                },
                Some(_) => a.unsupported("$schema", "/$schema", "must be a string"),
            }
            if let Some(id) = map.get("$id") {
                match id.as_str() {
                    Some(id) => a.root_id = Some(id.trim_end_matches('#').to_string()),
                    None => a.unsupported("$id", "/$id", "must be a string"),
                }
            }
        }
        if !matches!(root, Value::Object(_) | Value::Bool(_)) {
            a.unsupported("", "", "a schema must be an object or a boolean");
            return Err(a.errors);
        }
        a.add_target(String::new(), root);
        let mut next = 0;
        while next < a.targets.len() {
            let node = a.targets[next].node;
            let pointer = a.targets[next].pointer.clone();
            let in_resource = a.inside_nested_resource(&pointer);
            a.walk(node, &pointer, next, false, in_resource);
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

    fn unsupported(&mut self, keyword: &str, pointer: &str, reason: &str) {
        if self.seen.insert((keyword.to_string(), pointer.to_string())) {
            self.errors.push(Unsupported {
                keyword: keyword.to_string(),
                pointer: pointer.to_string(),
                reason: reason.to_string(),
            });
        }
    }

    fn add_target(&mut self, pointer: String, node: &'s Value) -> usize {
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
        });
        t
    }

    /// Whether a subschema strictly between the root and `pointer` has an
    /// `$id` of its own (a nested resource, whose `$ref`s would resolve
    /// against another base).
    fn inside_nested_resource(&self, pointer: &str) -> bool {
        let mut node = self.root;
        for token in pointer.split('/').skip(1) {
            if node.get("$id").is_some() && !std::ptr::eq(node, self.root) {
                return true;
            }
            let token = unescape_token(token);
            node = match node {
                Value::Object(m) => match m.get(&token) {
                    Some(v) => v,
                    None => return false,
                },
                Value::Array(a) => match token.parse::<usize>().ok().and_then(|i| a.get(i)) {
                    Some(v) => v,
                    None => return false,
                },
                _ => return false,
            };
        }
        false
    }

    fn walk(
        &mut self,
        node: &'s Value,
        ptr: &str,
        target: usize,
        descended: bool,
        in_resource: bool,
    ) {
        let map = match node {
            Value::Bool(_) => return,
            Value::Object(map) => map,
            _ => {
                self.unsupported("", ptr, "a schema must be an object or a boolean");
                return;
            }
        };
        let in_resource = in_resource || (!ptr.is_empty() && map.contains_key("$id"));
        if let Some(r) = map.get("$ref") {
            self.walk_ref(r, &child(ptr, "$ref"), target, descended, in_resource);
            if !self.draft.ref_siblings() {
                return;
            }
        }
        let shape_only = target == SHAPE_ONLY;
        for (keyword, value) in map {
            let at = child(ptr, keyword);
            if !self.draft.knows(keyword) {
                continue;
            }
            match keyword.as_str() {
                "$ref" => {}
                // Checked against the meta-schema only: a definition is
                // validated where a `$ref` uses it.
                "$defs" | "definitions" => {
                    let Some(defs) = value.as_object() else {
                        self.unsupported(keyword, &at, META);
                        continue;
                    };
                    for (name, sub) in defs {
                        self.walk(sub, &child(&at, name), SHAPE_ONLY, false, in_resource);
                    }
                }
                "contentSchema" => self.walk(value, &at, SHAPE_ONLY, false, in_resource),
                "$anchor" | "$dynamicAnchor" => {
                    self.require(value.as_str().is_some_and(is_anchor), keyword, &at, META)
                }
                "$recursiveAnchor" => {
                    let ok = if self.draft == Draft::D2019 {
                        value.is_boolean()
                    } else {
                        value.as_str().is_some_and(is_anchor)
                    };
                    if !ok {
                        self.unsupported(keyword, &at, META);
                    }
                }
                "$id" | "$comment" | "title" | "description" | "contentEncoding"
                | "contentMediaType" => self.require(value.is_string(), keyword, &at, META),
                "deprecated" | "readOnly" | "writeOnly" => {
                    self.require(value.is_boolean(), keyword, &at, META)
                }
                "examples" => self.require(value.is_array(), keyword, &at, META),
                "properties" | "patternProperties" | "dependentSchemas" => {
                    let Some(props) = value.as_object() else {
                        self.unsupported(keyword, &at, "must be an object of schemas");
                        continue;
                    };
                    let descends = keyword != "dependentSchemas";
                    for (name, sub) in props {
                        if keyword == "patternProperties" && !shape_only {
                            self.check_pattern(name, &at, keyword);
                        }
                        self.walk(
                            sub,
                            &child(&at, name),
                            target,
                            descended || descends,
                            in_resource,
                        );
                    }
                }
                "additionalProperties" | "propertyNames" | "additionalItems" | "contains" => {
                    self.walk(value, &at, target, true, in_resource);
                }
                "not" | "if" | "then" | "else" => {
                    self.walk(value, &at, target, descended, in_resource);
                }
                "items" => match value {
                    Value::Array(items) => {
                        for (n, sub) in items.iter().enumerate() {
                            self.walk(sub, &child(&at, &n.to_string()), target, true, in_resource);
                        }
                    }
                    _ => self.walk(value, &at, target, true, in_resource),
                },
                "prefixItems" => {
                    let Some(items) = value.as_array() else {
                        self.unsupported(keyword, &at, "must be an array of schemas");
                        continue;
                    };
                    for (n, sub) in items.iter().enumerate() {
                        self.walk(sub, &child(&at, &n.to_string()), target, true, in_resource);
                    }
                }
                "allOf" | "anyOf" | "oneOf" => match value.as_array() {
                    Some(items) if !items.is_empty() => {
                        for (n, sub) in items.iter().enumerate() {
                            self.walk(
                                sub,
                                &child(&at, &n.to_string()),
                                target,
                                descended,
                                in_resource,
                            );
                        }
                    }
                    _ => self.unsupported(keyword, &at, "must be a non-empty array of schemas"),
                },
                "dependencies" => {
                    let Some(deps) = value.as_object() else {
                        self.unsupported(keyword, &at, "must be an object");
                        continue;
                    };
                    for (name, dep) in deps {
                        if dep.is_array() {
                            self.check_string_array(dep, &child(&at, name), keyword);
                        } else {
                            self.walk(dep, &child(&at, name), target, descended, in_resource);
                        }
                    }
                }
                "dependentRequired" => {
                    let Some(deps) = value.as_object() else {
                        self.unsupported(keyword, &at, "must be an object of string arrays");
                        continue;
                    };
                    for (name, dep) in deps {
                        self.check_string_array(dep, &child(&at, name), keyword);
                    }
                }
                "required" => self.check_string_array(value, &at, keyword),
                "type" => {
                    let ok = match value {
                        Value::String(t) => TYPES.contains(&t.as_str()),
                        Value::Array(ts) => ts
                            .iter()
                            .all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t))),
                        _ => false,
                    };
                    if !ok {
                        self.unsupported(
                            keyword,
                            &at,
                            "must be a JSON type name or an array of them",
                        );
                    }
                }
                "enum" => self.require(value.is_array(), keyword, &at, "must be an array"),
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
                | "maxProperties" | "minContains" | "maxContains" => self.require(
                    size_limit(value).is_some(),
                    keyword,
                    &at,
                    "must be a non-negative integer",
                ),
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => self.require(
                    value.is_number(),
                    keyword,
                    &at,
                    "must be a number (draft-04's boolean form is not supported)",
                ),
                "multipleOf" => self.require(
                    value.as_f64().is_some_and(|m| m > 0.0 && m.is_finite()),
                    keyword,
                    &at,
                    "must be a number greater than 0",
                ),
                "pattern" => match value.as_str() {
                    Some(_) if shape_only => {}
                    Some(source) => self.check_pattern(source, &at, keyword),
                    None => self.unsupported(keyword, &at, "must be a string"),
                },
                "format" => self.require(value.is_string(), keyword, &at, "must be a string"),
                "uniqueItems" => {
                    self.require(value.is_boolean(), keyword, &at, "must be a boolean")
                }
                "unevaluatedProperties" | "unevaluatedItems" | "$dynamicRef" | "$recursiveRef"
                    if !shape_only =>
                {
                    self.unsupported(keyword, &at, "is not supported by the generated validator");
                }
                // Annotations, identifiers, containers of definitions and
                // unknown keywords: nothing to check.
                _ => {}
            }
        }
    }

    fn require(&mut self, ok: bool, keyword: &str, at: &str, reason: &str) {
        if !ok {
            self.unsupported(keyword, at, reason);
        }
    }

    fn check_string_array(&mut self, value: &Value, at: &str, keyword: &str) {
        let ok = value
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string));
        if !ok {
            self.unsupported(keyword, at, "must be an array of strings");
        }
    }

    fn check_pattern(&mut self, source: &str, at: &str, keyword: &str) {
        if let Err(err) = regress::Regex::with_flags(source, "u") {
            let at = if keyword == "patternProperties" {
                child(at, source)
            } else {
                at.to_string()
            };
            self.unsupported(
                keyword,
                &at,
                &format!("is not a valid ECMA-262 regular expression ({err})"),
            );
        }
    }

    fn walk_ref(
        &mut self,
        reference: &Value,
        at: &str,
        from: usize,
        descends: bool,
        in_resource: bool,
    ) {
        let Some(reference) = reference.as_str() else {
            self.unsupported("$ref", at, "must be a string");
            return;
        };
        if from == SHAPE_ONLY {
            return;
        }
        if in_resource {
            self.unsupported(
                "$ref",
                at,
                "a `$ref` inside a subschema with its own `$id` is not supported",
            );
            return;
        }
        let fragment = match reference.split_once('#') {
            Some(("", fragment)) => fragment,
            Some((base, fragment)) if Some(base) == self.root_id.as_deref() => fragment,
            None if Some(reference) == self.root_id.as_deref() => "",
            _ => {
                self.unsupported(
                    "$ref",
                    at,
                    "only references within this schema (`#…`) are supported",
                );
                return;
            }
        };
        let Some(fragment) = percent_decode(fragment) else {
            self.unsupported(
                "$ref",
                at,
                "the fragment is not valid percent-encoded UTF-8",
            );
            return;
        };
        if !fragment.is_empty() && !fragment.starts_with('/') {
            self.unsupported(
                "$ref",
                at,
                "references to anchors (`#name`) are not supported",
            );
            return;
        }
        let mut node = self.root;
        for token in fragment.split('/').skip(1) {
            let token = unescape_token(token);
            let next = match node {
                Value::Object(m) => m.get(&token),
                Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            };
            match next {
                Some(next) => node = next,
                None => {
                    self.unsupported("$ref", at, "points at nothing in this schema");
                    return;
                }
            }
        }
        if !matches!(node, Value::Object(_) | Value::Bool(_)) {
            self.unsupported("$ref", at, "points at something that is not a schema");
            return;
        }
        // Canonical pointer of the target (re-escaped).
        let pointer: String = fragment
            .split('/')
            .skip(1)
            .map(|t| format!("/{}", escape_token(&unescape_token(t))))
            .collect();
        let to = self.add_target(pointer, node);
        self.targets[to].refs += 1;
        self.targets[from].edges.push(Edge {
            to,
            descends,
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
            self.unsupported(
                "$ref",
                &at,
                "a `$ref` cycle that does not descend into the instance never terminates",
            );
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

/// The reason for a keyword value the draft's meta-schema rejects (the
/// runtime validator rejects such a schema too).
const META: &str = "has a value the draft's meta-schema does not allow";

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

/// `ptr` + `/` + the escaped `token`.
pub(crate) fn child(ptr: &str, token: &str) -> String {
    format!("{ptr}/{}", escape_token(token))
}

fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn unescape_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
