//! Schema → [`Ty`] / [`ItemDef`] conversion, one module per shape (as
//! typify splits its `convert`/`structs`/`enums`/`merge`): this module
//! holds the [`Converter`] and the dispatch on a schema's keywords;
//! [`refs`] follows `$ref`s (through `surface_manifest::schema::resolve_ref`),
//! [`objects`], [`arrays`], [`enums`], [`unions`] (with [`tags`] finding
//! their discriminators) and [`all_of`] convert each shape, [`items`],
//! [`docs`] and [`budget`] keep the generated items, their doc text and
//! the work budget, and [`keywords`] reads keyword values.
//!
//! [`Ty`]: crate::types::model::Ty
//! [`ItemDef`]: crate::types::model::ItemDef

mod all_of;
mod arrays;
mod budget;
mod docs;
mod enums;
mod items;
mod keywords;
mod objects;
mod refs;
mod tags;
mod unions;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::doc::DocText;
use crate::types::model::{ItemDef, Ty, TypedFormat};
use crate::types::names::NameSet;
use crate::types::{InputObject, TypedFormats};

use budget::local_steps;
use keywords::{integer_type, json_short};
#[cfg(test)]
pub(crate) use refs::is_generated_def_key;

/// Deepest schema nesting converted; deeper schemas become `Value`.
const MAX_DEPTH: usize = 32;

/// Most elements of a tuple (std implements the derived traits up to 12).
const MAX_TUPLE: usize = 12;

/// Conversion work one procedure may do, in steps. The *weight* of JSON
/// is one step per value plus one per 64 bytes of its strings and object
/// keys; converting a sub-schema costs one step plus the weight of the
/// text directly in it (keys, strings, arrays of strings), and copying JSON
/// (`allOf` merges, `nullable`, `type` arrays, tagged-union arms, `enum`
/// values) costs its weight. The budget is `WORK_BASE + WORK_PER_VALUE ×`
/// the weight of the input and output schemas: converting a schema once
/// costs about its weight, while schemas that repeat shared parts (an
/// `allOf` of `$ref`s, `$ref`'d union arms, repeated `type` entries at
/// every level) would otherwise expand exponentially. Past the budget the
/// remaining sub-schemas become `serde_json::Value` with a note.
pub(crate) const WORK_BASE: u64 = 4_096;

/// See [`WORK_BASE`].
pub(crate) const WORK_PER_VALUE: u64 = 16;

/// How the next named item is to be called.
#[derive(Clone, Debug)]
enum Hint {
    /// Allocate a fresh unique name from this base.
    Fresh(String),
    /// Already allocated (a `$ref` target or the root).
    Exact(String),
}

impl Hint {
    fn base(&self) -> &str {
        match self {
            Hint::Fresh(s) | Hint::Exact(s) => s,
        }
    }

    /// The hint for a child named `suffix` under this one.
    fn child(&self, suffix: &str) -> Hint {
        Hint::Fresh(format!("{}{}", self.base(), suffix))
    }

    /// The hint for a type that gets wrapped (e.g. in `Option`): an exact
    /// name cannot be used by the wrapped type itself.
    fn wrapped(&self) -> Hint {
        match self {
            Hint::Exact(name) => Hint::Fresh(format!("{name}Value")),
            fresh => fresh.clone(),
        }
    }
}

#[derive(Clone, Debug)]
enum DefState {
    InProgress { name: String, recursive: bool },
    Done(Ty),
}

/// Converts the schemas of one procedure; input and output share the
/// module's type names.
pub(crate) struct Converter {
    /// Type names used in the module.
    names: NameSet,
    /// Items in creation order; `None` while a slot is reserved.
    items: Vec<Option<ItemDef>>,
    /// Indexes into `items` by name.
    item_index: HashMap<String, usize>,
    pub(crate) notes: Vec<DocText>,
    /// Field lists of generated structs, by type name.
    objects: HashMap<String, InputObject>,
    /// Type aliases by name (to see through them).
    aliases: HashMap<String, Ty>,
    /// Named types whose values include `null`.
    null_admitting: HashSet<String>,
    /// `$ref` targets of the current document by JSON pointer.
    defs: HashMap<String, DefState>,
    /// "Input" or "Output".
    role: &'static str,
    depth: usize,
    krate_tokens: proc_macro2::TokenStream,
    /// Steps left of the work budget ([`WORK_BASE`]).
    work_left: u64,
    /// The formats read as typed values.
    typed_formats: TypedFormats,
    /// The budget ran out (noted once).
    exhausted: bool,
}

impl Converter {
    /// A converter whose work budget is sized for schemas of weight
    /// `weight` in all (see [`WORK_BASE`]).
    pub(crate) fn new(
        krate: &proc_macro2::TokenStream,
        weight: u64,
        typed_formats: TypedFormats,
    ) -> Converter {
        let mut names = NameSet::default();
        names.reserve("Input");
        names.reserve("Output");
        Converter {
            names,
            items: Vec::new(),
            item_index: HashMap::new(),
            notes: Vec::new(),
            objects: HashMap::new(),
            aliases: HashMap::new(),
            null_admitting: HashSet::new(),
            defs: HashMap::new(),
            role: "Input",
            depth: 0,
            krate_tokens: krate.clone(),
            work_left: WORK_BASE.saturating_add(WORK_PER_VALUE.saturating_mul(weight)),
            typed_formats,
            exhausted: false,
        }
    }

    /// The generated items, in creation order.
    pub(crate) fn into_items(self) -> Vec<ItemDef> {
        self.items.into_iter().flatten().collect()
    }

    /// The field list of the struct that `name` (possibly via aliases)
    /// denotes.
    pub(crate) fn object_of(&self, name: &str) -> Option<InputObject> {
        match self.resolve(&Ty::Named(name.to_string())) {
            Ty::Named(n) => self.objects.get(&n).cloned(),
            _ => None,
        }
    }

    /// Converts one whole schema document (the input or output schema) into
    /// an item named `role`.
    pub(crate) fn convert_document(&mut self, root: &Value, role: &'static str) {
        self.role = role;
        self.defs.clear();
        self.defs.insert(
            String::new(),
            DefState::InProgress {
                name: role.to_string(),
                recursive: false,
            },
        );
        self.convert_def_body(root, root, role.to_string(), String::new(), "#");
    }

    /// Emits a plain alias `role = Value` with a doc line.
    pub(crate) fn value_alias(&mut self, role: &str, doc: &'static str) {
        self.push_item(ItemDef::Alias {
            name: role.to_string(),
            doc: vec![DocText::from(doc)],
            ty: Ty::Value,
        });
        self.null_admitting.insert(role.to_string());
    }

    /// Converts a schema into a type, creating items as needed.
    fn convert(&mut self, root: &Value, schema: &Value, hint: &Hint, ptr: &str) -> Ty {
        if self.depth >= MAX_DEPTH {
            self.note(
                ptr,
                DocText::new()
                    .ours("nesting deeper than ")
                    .number(MAX_DEPTH)
                    .ours(" levels"),
            );
            return Ty::Value;
        }
        if !self.spend(1, ptr) {
            return Ty::Value;
        }
        self.depth += 1;
        let ty = self.convert_inner(root, schema, hint, ptr);
        self.depth -= 1;
        ty
    }

    fn convert_inner(&mut self, root: &Value, schema: &Value, hint: &Hint, ptr: &str) -> Ty {
        let s = match schema {
            Value::Bool(true) => return Ty::Value,
            Value::Bool(false) => {
                self.note(ptr, "schema `false` admits no value");
                return Ty::Value;
            }
            Value::Object(s) => {
                if !self.spend(local_steps(s), ptr) {
                    return Ty::Value;
                }
                s
            }
            other => {
                self.note(
                    ptr,
                    DocText::new()
                        .text(json_short(other))
                        .ours(" is not a schema"),
                );
                return Ty::Value;
            }
        };
        if let Some(reference) = s.get("$ref") {
            let Some(reference) = reference.as_str() else {
                self.note(ptr, "`$ref` is not a string");
                return Ty::Value;
            };
            // OpenAPI 3.0 writes a nullable reference as a `$ref` with a
            // sibling `nullable: true`.
            let nullable = s.get("nullable") == Some(&Value::Bool(true));
            let ref_hint = if nullable {
                hint.wrapped()
            } else {
                hint.clone()
            };
            let ty = self.convert_ref(root, reference, &ref_hint, ptr);
            return self.nullable_if(nullable, ty);
        }
        if s.get("nullable") == Some(&Value::Bool(true)) {
            let Some(mut inner) = self.copy_map(s, ptr) else {
                return Ty::Value;
            };
            inner.remove("nullable");
            let ty = self.convert(root, &Value::Object(inner), &hint.wrapped(), ptr);
            return self.nullable(ty);
        }
        self.convert_keywords(root, s, hint, ptr)
    }

    /// A schema object without `$ref` or OpenAPI's `nullable`: the first
    /// of `anyOf`/`oneOf`, `allOf`, `const`, `enum`, `not`, `type` decides.
    fn convert_keywords(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        for keyword in ["anyOf", "oneOf"] {
            if let Some(arms) = s.get(keyword) {
                return self.union_keyword(root, s, keyword, arms, hint, ptr);
            }
        }
        if let Some(all) = s.get("allOf") {
            return self.all_of(root, s, all, hint, ptr);
        }
        if let Some(value) = s.get("const") {
            return self.constant(s, value, hint, ptr);
        }
        if let Some(values) = s.get("enum") {
            return self.enumeration(root, s, values, hint, ptr);
        }
        if s.contains_key("not") {
            // The type of the rest of the schema; `not` only removes values.
            let Some(mut rest) = self.copy_map(s, ptr) else {
                return Ty::Value;
            };
            let not = rest.remove("not").unwrap_or_default();
            let ty = self.convert_keywords(root, &rest, hint, ptr);
            let remark = self.remark(
                ptr,
                DocText::new()
                    .ours("a value must not match ")
                    .code(json_short(&not))
                    .ours(" (`not`), which this type does not encode; the validator checks it."),
            );
            self.attach_doc(&ty, remark);
            return ty;
        }
        match s.get("type") {
            Some(Value::String(t)) => self.by_type(root, s, t, hint, ptr),
            Some(Value::Array(types)) => self.type_list(root, s, types, hint, ptr),
            Some(other) => {
                self.note(
                    ptr,
                    DocText::new()
                        .ours("`type` ")
                        .text(json_short(other))
                        .ours(" is not understood"),
                );
                Ty::Value
            }
            None => {
                if s.contains_key("properties")
                    || s.contains_key("additionalProperties")
                    || s.contains_key("required")
                {
                    self.object(root, s, hint, ptr)
                } else if s.contains_key("items") || s.contains_key("prefixItems") {
                    self.array(root, s, hint, ptr)
                } else {
                    Ty::Value
                }
            }
        }
    }

    /// `type: [A, B, "null"]`: one type, or a union of one arm per type,
    /// optional when `"null"` is listed.
    fn type_list(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        types: &[Value],
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let mut seen = HashSet::new();
        let non_null: Vec<&str> = types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null" && seen.insert(*t))
            .collect();
        let nullable = non_null.len() < types.len();
        let ty = match non_null.as_slice() {
            [] => Ty::Unit,
            [one] => self.by_type(root, s, one, &hint.wrapped(), ptr),
            many => {
                let mut arms: Vec<Value> = Vec::with_capacity(many.len());
                for t in many {
                    let Some(mut arm) = self.copy_map(s, ptr) else {
                        return Ty::Value;
                    };
                    arm.insert("type".into(), Value::String(t.to_string()));
                    arm.remove("description");
                    arm.remove("title");
                    arms.push(Value::Object(arm));
                }
                self.union(root, s, &arms, &hint.wrapped(), &format!("{ptr}/type"))
            }
        };
        self.nullable_if(nullable, ty)
    }

    fn by_type(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        t: &str,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        match t {
            "string" => self.typed_format(s).map_or(Ty::String, Ty::Typed),
            "integer" => integer_type(s),
            "number" => Ty::Number,
            "boolean" => Ty::Bool,
            "null" => Ty::Unit,
            "array" => self.array(root, s, hint, ptr),
            "object" => self.object(root, s, hint, ptr),
            other => {
                self.note(
                    ptr,
                    DocText::new()
                        .ours("unknown `type` ")
                        .text(format!("{other:?}")),
                );
                Ty::Value
            }
        }
    }

    /// The typed format a string schema is read as, if enabled.
    fn typed_format(&self, s: &Map<String, Value>) -> Option<TypedFormat> {
        let typed = self.typed_formats;
        match s.get("format").and_then(Value::as_str)? {
            "uuid" if typed.uuid => Some(TypedFormat::Uuid),
            "date-time" if typed.chrono => Some(TypedFormat::DateTime),
            "date" if typed.chrono => Some(TypedFormat::Date),
            "uri" | "url" if typed.url => Some(TypedFormat::Url),
            _ => None,
        }
    }
}
