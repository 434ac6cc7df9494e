//! Schema → [`Ty`] / [`ItemDef`] conversion.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use surface_manifest::schema::{
    child_pointer, is_annotation, keyword, resolve_ref, AppliesTo, KeywordKind, RefError,
};

use crate::doc::{description_paragraphs, DocText};

use super::model::{ConstLit, FieldDef, FieldMode, ItemDef, Ty, TypedFormat};
use super::names::{pascal, variant, NameSet};
use super::{AdditionalProperties, FieldInfo, InputObject, TypedFormats};

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

/// Steps per byte of text: one per 64 bytes.
fn text_steps(bytes: usize) -> u64 {
    (bytes / 64) as u64
}

/// The weight of `v` (see [`WORK_BASE`]), counting only until it passes
/// `limit`. Iterative, so any nesting is fine.
fn weight(v: &Value, limit: u64) -> u64 {
    let mut total: u64 = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(1);
        match v {
            Value::String(s) => total = total.saturating_add(text_steps(s.len())),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (k, child) in map {
                    total = total.saturating_add(text_steps(k.len()));
                    stack.push(child);
                }
            }
            _ => {}
        }
        if total > limit {
            break;
        }
    }
    total
}

/// The cost of converting the schema object `s` itself: one step plus its
/// own text (keys, string values, strings in arrays, keys of objects such
/// as `properties`), not its sub-schemas.
fn local_steps(s: &Map<String, Value>) -> u64 {
    let mut bytes = 0usize;
    for (k, v) in s {
        bytes = bytes.saturating_add(k.len());
        match v {
            Value::String(t) => bytes = bytes.saturating_add(t.len()),
            Value::Array(items) => {
                for item in items {
                    if let Value::String(t) = item {
                        bytes = bytes.saturating_add(t.len());
                    }
                }
            }
            Value::Object(map) => {
                for key in map.keys() {
                    bytes = bytes.saturating_add(key.len());
                }
            }
            _ => {}
        }
    }
    1 + text_steps(bytes)
}

fn type_name(s: &Map<String, Value>) -> Option<&str> {
    s.get("type").and_then(Value::as_str)
}

/// `{"type": "null"}` or `{"const": null}` or `{"enum": [null]}`.
fn is_null_schema(s: &Value) -> bool {
    let Some(s) = s.as_object() else { return false };
    type_name(s) == Some("null")
        || s.get("const") == Some(&Value::Null)
        || s.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.len() == 1 && e[0].is_null())
}

/// The string a schema pins a value to: `{"const": "a"}` or
/// `{"enum": ["a"]}`.
fn string_const(s: &Value) -> Option<&str> {
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
fn string_values(s: &Value) -> Option<Vec<String>> {
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

fn json_short(v: &Value) -> String {
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

fn required_set(s: &Map<String, Value>) -> Vec<String> {
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

    /// The weight of `v`, for sizing the budget of [`Converter::new`].
    pub(crate) fn weight_of(v: &Value) -> u64 {
        weight(v, u64::MAX)
    }

    /// Steps of the budget not used yet.
    #[cfg(test)]
    pub(crate) fn work_left(&self) -> u64 {
        self.work_left
    }

    /// Takes `steps` from the budget; false (and a note, the first time)
    /// when not enough is left.
    fn spend(&mut self, steps: u64, ptr: &str) -> bool {
        if self.work_left >= steps {
            self.work_left -= steps;
            return true;
        }
        self.work_left = 0;
        if !self.exhausted {
            self.exhausted = true;
            self.note(
                ptr,
                DocText::new()
                    .ours("conversion stopped here, past the work limit for this procedure (")
                    .number(WORK_BASE)
                    .ours(" + ")
                    .number(WORK_PER_VALUE)
                    .ours(" × the size of its schemas; repeated `allOf`/`$ref` expansions count each time), so this and the sub-schemas not yet converted are"),
            );
        }
        false
    }

    /// A copy of `s`, paid for from the budget (its weight).
    fn copy_map(&mut self, s: &Map<String, Value>, ptr: &str) -> Option<Map<String, Value>> {
        let limit = self.work_left;
        let mut cost = 1u64;
        for (k, v) in s {
            cost = cost
                .saturating_add(text_steps(k.len()))
                .saturating_add(weight(v, limit));
            if cost > limit {
                break;
            }
        }
        self.spend(cost, ptr).then(|| s.clone())
    }

    /// A copy of `v`, paid for from the budget (its weight).
    fn copy_value(&mut self, v: &Value, ptr: &str) -> Option<Value> {
        let cost = weight(v, self.work_left);
        self.spend(cost, ptr).then(|| v.clone())
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

    fn push_item(&mut self, item: ItemDef) {
        let name = item_name(&item).to_string();
        self.item_index.insert(name, self.items.len());
        self.items.push(Some(item));
    }

    /// Pushes `item` and names it.
    fn push_named(&mut self, item: ItemDef) -> Ty {
        let name = item_name(&item).to_string();
        self.push_item(item);
        Ty::Named(name)
    }

    /// Picks the name of an item that may refer to itself (a recursive
    /// struct or union) and reserves its slot, filled by [`Self::fill_slot`]
    /// once its parts are converted.
    fn reserve_named(&mut self, hint: &Hint, s: &Map<String, Value>) -> (String, usize) {
        let name = self.take_name(hint, Some(s));
        let slot = self.items.len();
        self.items.push(None);
        self.item_index.insert(name.clone(), slot);
        (name, slot)
    }

    /// Fills the slot [`Self::reserve_named`] reserved.
    fn fill_slot(&mut self, slot: usize, item: ItemDef) -> Ty {
        let name = item_name(&item).to_string();
        self.items[slot] = Some(item);
        Ty::Named(name)
    }

    /// Records that the schema at `ptr` became `serde_json::Value`, and
    /// why (`msg`: our text, quoting manifest text through [`DocText`]).
    fn note(&mut self, ptr: &str, msg: impl Into<DocText>) {
        let text = DocText::new()
            .ours(self.role)
            .ours(" schema at ")
            .code(ptr)
            .ours(": ")
            .append(msg.into())
            .ours("; represented as `serde_json::Value`.");
        self.notes.push(text);
    }

    /// Records a remark about the schema at `ptr` that is not a fallback:
    /// something the type does not encode and the validator checks. Like a
    /// note it reaches the docs of the field being converted and of the
    /// procedure's module; [`Self::attach_doc`] puts it on a type too.
    fn remark(&mut self, ptr: &str, msg: DocText) -> DocText {
        let text = DocText::new()
            .ours(self.role)
            .ours(" schema at ")
            .code(ptr)
            .ours(": ")
            .append(msg);
        self.notes.push(text.clone());
        text
    }

    /// Adds `text` to the doc of the item `ty` names (through an
    /// `Option`), if it names one already created.
    fn attach_doc(&mut self, ty: &Ty, text: DocText) {
        let name = match ty {
            Ty::Named(name) => name,
            Ty::Option(inner) => match &**inner {
                Ty::Named(name) => name,
                _ => return,
            },
            _ => return,
        };
        if let Some(Some(item)) = self
            .item_index
            .get(name)
            .copied()
            .and_then(|i| self.items.get_mut(i))
        {
            let doc = item_doc_mut(item);
            if !doc.contains(&text) {
                doc.push(text);
            }
        }
    }

    /// Follows aliases.
    fn resolve(&self, ty: &Ty) -> Ty {
        let mut ty = ty.clone();
        for _ in 0..32 {
            match &ty {
                Ty::Named(n) => match self.aliases.get(n) {
                    Some(target) => ty = target.clone(),
                    None => return ty,
                },
                _ => return ty,
            }
        }
        ty
    }

    /// [`Ty::is_integers`], seeing through this module's aliases.
    fn is_integers(&self, ty: &Ty) -> bool {
        ty.is_integers(&|t| self.resolve(t))
    }

    fn admits_null(&self, ty: &Ty) -> bool {
        match self.resolve(ty) {
            Ty::Value | Ty::Unit | Ty::Option(_) => true,
            Ty::Boxed(inner) => self.admits_null(&inner),
            Ty::Named(n) => self.null_admitting.contains(&n),
            _ => false,
        }
    }

    fn nullable(&self, ty: Ty) -> Ty {
        if self.admits_null(&ty) {
            ty
        } else {
            Ty::Option(Box::new(ty))
        }
    }

    /// `ty`, made nullable when the schema also admits `null`.
    fn nullable_if(&self, nullable: bool, ty: Ty) -> Ty {
        if nullable {
            self.nullable(ty)
        } else {
            ty
        }
    }

    /// Picks the name for a type item: the exact name, or a fresh one from
    /// the schema's `title` or the hint.
    fn take_name(&mut self, hint: &Hint, s: Option<&Map<String, Value>>) -> String {
        match hint {
            Hint::Exact(name) => name.clone(),
            Hint::Fresh(base) => {
                let title = s.and_then(|s| s.get("title")).and_then(Value::as_str);
                let base = match title {
                    Some(title) => self.role_prefixed(&pascal(title)),
                    None => base.clone(),
                };
                self.names.unique(&base, false)
            }
        }
    }

    fn role_prefixed(&self, name: &str) -> String {
        if name.starts_with(self.role) {
            name.to_string()
        } else {
            format!("{}{}", self.role, name)
        }
    }

    /// Doc paragraphs for a schema used as a type or property.
    fn schema_doc(&self, s: &Value) -> Vec<DocText> {
        s.as_object().map(|s| self.map_doc(s)).unwrap_or_default()
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

    /// Doc paragraphs for a schema object.
    fn map_doc(&self, s: &Map<String, Value>) -> Vec<DocText> {
        let mut doc = Vec::new();
        if let Some(d) = s.get("description").and_then(Value::as_str) {
            doc.extend(description_paragraphs(d));
        }
        if let Some(f) = s.get("format").and_then(Value::as_str) {
            let typed = (type_name(s) == Some("string"))
                .then(|| self.typed_format(s))
                .flatten();
            doc.push(match typed {
                Some(typed) => DocText::new()
                    .ours("Format: ")
                    .code(f)
                    .ours(", read as `")
                    .ours(typed.rust_name())
                    .ours("` (the validator checks the format first)."),
                None => DocText::new()
                    .ours("Format: ")
                    .code(f)
                    .ours(" (not checked by this type)."),
            });
        }
        if let Some(d) = s.get("default") {
            doc.push(
                DocText::new()
                    .ours("Default: ")
                    .code(json_short(d))
                    .ours("."),
            );
        }
        doc
    }

    /// Converts a `$ref` target (or the root, pointer `""`) into an item
    /// named `name`, emitting an alias or newtype when the schema itself
    /// produced no item of that name.
    fn convert_def_body(
        &mut self,
        root: &Value,
        target: &Value,
        name: String,
        pointer: String,
        ptr: &str,
    ) {
        let notes_before = self.notes.len();
        let mut ty = self.convert(root, target, &Hint::Exact(name.clone()), ptr);
        if matches!(&ty, Ty::Boxed(inner) if matches!(**inner, Ty::Named(_))) {
            // `A = B`, `B = A`: a cycle of plain references admits no finite
            // value; a newtype chain would be uninhabitable.
            self.note(ptr, "a `$ref` cycle without any structure");
            ty = Ty::Value;
        }
        let recursive = ty != Ty::Value
            && matches!(
                self.defs.get(&pointer),
                Some(DefState::InProgress {
                    recursive: true,
                    ..
                })
            );
        if !self.item_index.contains_key(&name) {
            let mut doc = self.schema_doc(target);
            doc.extend(self.notes[notes_before..].iter().cloned());
            let admits_null = self.admits_null(&ty);
            if recursive || matches!(ty, Ty::Boxed(_)) {
                // `type A = Vec<A>` is a cycle rustc rejects; a newtype is not.
                let integers = self.is_integers(&ty);
                self.push_item(ItemDef::Newtype {
                    name: name.clone(),
                    doc,
                    ty,
                    integers,
                });
            } else {
                self.aliases.insert(name.clone(), ty.clone());
                self.push_item(ItemDef::Alias {
                    name: name.clone(),
                    doc,
                    ty,
                });
            }
            if admits_null {
                self.null_admitting.insert(name.clone());
            }
        }
        self.defs.insert(pointer, DefState::Done(Ty::Named(name)));
    }

    /// A `$ref`: the target's item, converted the first time it is
    /// reached. Its name is the target's `title`, else its key (`#/$defs/
    /// Pet` → `InputPet`), except for keys a converter generated (zod's
    /// `__schema0`, see [`is_generated_def_key`]): those are named from
    /// `hint`, the path where the reference is first reached, as an inline
    /// schema there would be (so the same contract gets the same names from
    /// a converter that inlines its recursion).
    fn convert_ref(&mut self, root: &Value, reference: &str, hint: &Hint, ptr: &str) -> Ty {
        // Local references (`#/…`, or `<root $id>#/…`) resolve through the
        // one resolver the validator and the export use.
        let resolved = match resolve_ref(root, reference) {
            Ok(resolved) => resolved,
            Err(error) => {
                self.note(ptr, ref_error_note(reference, &error));
                return Ty::Value;
            }
        };
        let target = resolved.target;
        let segment = resolved.pointer.last().map(Cow::into_owned);
        let segment = segment.as_deref().unwrap_or_default();
        let pointer = resolved.pointer.into_string();
        match self.defs.get_mut(&pointer) {
            Some(DefState::InProgress { name, recursive }) => {
                *recursive = true;
                return Ty::Boxed(Box::new(Ty::Named(name.clone())));
            }
            Some(DefState::Done(ty)) => return ty.clone(),
            None => {}
        }
        let title = target.get("title").and_then(Value::as_str);
        let name = match (title, hint) {
            (None, Hint::Exact(name)) if is_generated_def_key(segment) => name.clone(),
            (None, Hint::Fresh(base)) if is_generated_def_key(segment) => {
                self.names.unique(base, false)
            }
            _ => {
                let base = self.role_prefixed(&pascal(title.unwrap_or(segment)));
                self.names.unique(&base, false)
            }
        };
        self.defs.insert(
            pointer.clone(),
            DefState::InProgress {
                name: name.clone(),
                recursive: false,
            },
        );
        self.convert_def_body(root, target, name.clone(), pointer, reference);
        Ty::Named(name)
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
                let Some(arms) = arms.as_array() else {
                    self.note(
                        ptr,
                        DocText::new()
                            .ours("`")
                            .ours(keyword)
                            .ours("` is not an array"),
                    );
                    return Ty::Value;
                };
                if let Some(names) = required_only_arms(s, arms) {
                    return self.object_with_required_arms(root, s, keyword, &names, hint, ptr);
                }
                let peeked: Vec<&Value> = arms.iter().map(|arm| self.peek(root, arm)).collect();
                if let Some((shape, media)) = content_only_arms(&peeked) {
                    return self.content_arms(root, s, keyword, (shape, &media), hint, ptr);
                }
                return self.union(root, s, arms, hint, &format!("{ptr}/{keyword}"));
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

    /// A union whose arms differ only in content annotations
    /// (`contentMediaType`, `contentEncoding`, `contentSchema`; oRPC's
    /// `z.file().mime([...])`): one type, the schema without the union
    /// plus the arms' common `type`/`format`, with the media types in a
    /// doc note (annotations: neither the type nor the validator checks
    /// them).
    fn content_arms(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        keyword: &'static str,
        (shape, media): (Map<String, Value>, &[String]),
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let Some(mut rest) = self.copy_map(s, ptr) else {
            return Ty::Value;
        };
        rest.remove(keyword);
        for (k, v) in shape {
            rest.entry(k).or_insert(v);
        }
        let ty = self.convert_keywords(root, &rest, hint, ptr);
        let remark = self.remark(
            ptr,
            DocText::new()
                .ours("the `")
                .ours(keyword)
                .ours("` arms differ only in their media type: ")
                .code(media.join(", "))
                .ours("; content keywords are annotations, checked neither by this type nor by the validator (the server checks them)."),
        );
        self.attach_doc(&ty, remark);
        ty
    }

    /// An object whose `anyOf`/`oneOf` arms only list `required` names
    /// ("at least one of" / "exactly one of"): the struct of its
    /// `properties` (a property only an arm requires stays an `Option`),
    /// with a doc note naming the rule, which the validator checks.
    fn object_with_required_arms(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        keyword: &'static str,
        arms: &[Vec<String>],
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let Some(mut rest) = self.copy_map(s, ptr) else {
            return Ty::Value;
        };
        rest.remove(keyword);
        let ty = self.convert_keywords(root, &rest, hint, ptr);
        let rule = arms
            .iter()
            .map(|names| names.join(" + "))
            .collect::<Vec<_>>()
            .join(" | ");
        let remark = self.remark(
            ptr,
            DocText::new()
                .ours(if keyword == "oneOf" {
                    "exactly one of these sets of properties must be present (`oneOf` of `required` lists): "
                } else {
                    "at least one of these sets of properties must be present (`anyOf` of `required` lists): "
                })
                .code(rule)
                .ours("; the fields are `Option`s unless the object itself requires them, and the validator checks the rule."),
        );
        self.attach_doc(&ty, remark);
        ty
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

    fn array(&mut self, root: &Value, s: &Map<String, Value>, hint: &Hint, ptr: &str) -> Ty {
        let (prefix, rest, prefix_kw, rest_kw) = match (s.get("prefixItems"), s.get("items")) {
            (Some(prefix), rest) => (Some(prefix), rest, "prefixItems", "items"),
            (None, Some(Value::Array(_))) => (
                s.get("items"),
                s.get("additionalItems"),
                "items",
                "additionalItems",
            ),
            (None, _) => (None, None, "", ""),
        };
        if let Some(prefix) = prefix {
            let Some(prefix) = prefix.as_array() else {
                self.note(
                    ptr,
                    DocText::new()
                        .ours("`")
                        .ours(prefix_kw)
                        .ours("` is not an array"),
                );
                return Ty::Value;
            };
            if prefix.is_empty() || prefix.len() > MAX_TUPLE {
                self.note(
                    ptr,
                    DocText::new()
                        .ours("a tuple of ")
                        .number(prefix.len())
                        .ours(" elements"),
                );
                return Ty::Value;
            }
            let items = prefix
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    self.convert(
                        root,
                        item,
                        &hint.child(&format!("{i}")),
                        &format!("{ptr}/{prefix_kw}/{i}"),
                    )
                })
                .collect();
            if rest != Some(&Value::Bool(false)) {
                // Further items allowed: all of the `rest` schema (any JSON
                // when absent).
                let rest = match rest {
                    None | Some(Value::Bool(true)) => Ty::Value,
                    Some(rest) => {
                        let rest = self.convert(
                            root,
                            rest,
                            &hint.child("Rest"),
                            &format!("{ptr}/{rest_kw}"),
                        );
                        rest.unboxed()
                    }
                };
                return Ty::TupleWithRest(items, Box::new(rest));
            }
            return Ty::Tuple(items);
        }
        match s.get("items") {
            None | Some(Value::Bool(true)) => Ty::vec(Ty::Value),
            Some(Value::Bool(false)) => {
                self.note(ptr, "`items: false` admits only the empty array");
                Ty::Value
            }
            Some(items) => {
                let item = self.convert(root, items, &hint.child("Item"), &format!("{ptr}/items"));
                Ty::vec(item)
            }
        }
    }

    fn object(&mut self, root: &Value, s: &Map<String, Value>, hint: &Hint, ptr: &str) -> Ty {
        let additional = s.get("additionalProperties");
        let Some(properties) = s.get("properties") else {
            return match additional {
                Some(Value::Bool(false)) => self.structure(root, s, &Map::new(), hint, ptr),
                None | Some(Value::Bool(true)) => Ty::map(Ty::Value),
                Some(value_schema) => {
                    let value = self.convert(
                        root,
                        value_schema,
                        &hint.child("Value"),
                        &format!("{ptr}/additionalProperties"),
                    );
                    Ty::map(value)
                }
            };
        };
        let Some(properties) = properties.as_object() else {
            self.note(ptr, "`properties` is not an object");
            return Ty::Value;
        };
        self.structure(root, s, properties, hint, ptr)
    }

    fn structure(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        properties: &Map<String, Value>,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let (name, slot) = self.reserve_named(hint, s);
        let notes_before = self.notes.len();
        let required = required_set(s);
        let required_names: HashSet<&str> = required.iter().map(String::as_str).collect();
        let mut idents = NameSet::default();
        let mut fields = Vec::new();
        let mut infos = Vec::new();
        for (json_name, property) in properties {
            let required = required_names.contains(json_name.as_str());
            let (field, info) = self.struct_field(
                root,
                &name,
                (json_name, property),
                required,
                &mut idents,
                ptr,
            );
            fields.push(field);
            infos.push(info);
        }
        // A required name without a schema under `properties` admits any
        // JSON: a `serde_json::Value` field that must be present.
        let mut seen = HashSet::new();
        for missing in required
            .iter()
            .filter(|r| !properties.contains_key(*r) && seen.insert(r.as_str()))
        {
            let (field, info) = self.schemaless_required_field(&name, missing, &mut idents, ptr);
            fields.push(field);
            infos.push(info);
        }
        let fields_end = self.notes.len();
        let (additional_properties, extras) =
            self.extra_properties(root, s, &name, &mut idents, ptr);
        let mut doc = self.map_doc(s);
        // Notes of the properties are on their fields; the struct keeps the
        // others (missing required properties, `additionalProperties`).
        let field_notes: HashSet<&DocText> = self.notes[notes_before..fields_end].iter().collect();
        let struct_notes: Vec<DocText> = self.notes[fields_end..]
            .iter()
            .filter(|n| !field_notes.contains(n))
            .cloned()
            .collect();
        doc.extend(struct_notes);
        self.objects.insert(
            name.clone(),
            InputObject {
                fields: infos,
                additional_properties,
            },
        );
        self.fill_slot(
            slot,
            ItemDef::Struct {
                name,
                doc,
                fields,
                deny_unknown_fields: additional_properties == AdditionalProperties::Forbidden,
                extras,
            },
        )
    }

    /// One property of an object struct: its field and the facts the
    /// binding checks need. The field's doc holds the property's notes.
    fn struct_field(
        &mut self,
        root: &Value,
        struct_name: &str,
        (json_name, property): (&String, &Value),
        is_required: bool,
        idents: &mut NameSet,
        ptr: &str,
    ) -> (FieldDef, FieldInfo) {
        let field_notes = self.notes.len();
        let prop_ptr = child_pointer(&format!("{ptr}/properties"), json_name);
        let value_ty = self.convert(
            root,
            property,
            &Hint::Fresh(format!("{struct_name}{}", pascal(json_name))),
            &prop_ptr,
        );
        let nullable = self.admits_null(&value_ty);
        let mode = if !is_required {
            FieldMode::Optional
        } else if matches!(self.resolve(&value_ty), Ty::Option(_)) {
            FieldMode::RequiredNullable
        } else {
            FieldMode::Required
        };
        let mut doc = self.schema_doc(property);
        doc.extend(self.notes[field_notes..].iter().cloned());
        let ident = idents.field(json_name);
        let integers = self.is_integers(&value_ty);
        let field = FieldDef {
            json_name: json_name.clone(),
            ident: ident.clone(),
            value_ty,
            mode,
            doc,
            integers,
        };
        let info = FieldInfo {
            json_name: json_name.clone(),
            ident,
            ty: field.full_ty().tokens(&self.krate_tokens),
            value_ty: field.value_ty.tokens(&self.krate_tokens),
            required: is_required,
            nullable,
            description: property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        (field, info)
    }

    /// A field for `json_name`, listed in `required` but without a schema
    /// under `properties`: any JSON, so `serde_json::Value`, required.
    fn schemaless_required_field(
        &mut self,
        struct_name: &str,
        json_name: &str,
        idents: &mut NameSet,
        ptr: &str,
    ) -> (FieldDef, FieldInfo) {
        let field_notes = self.notes.len();
        self.note(
            &format!("{ptr}/required"),
            DocText::new()
                .ours("required property ")
                .text(format!("{json_name:?}"))
                .ours(" of ")
                .code(struct_name)
                .ours(" has no schema in `properties`, so any JSON value"),
        );
        let doc = self.notes[field_notes..].to_vec();
        let ident = idents.field(json_name);
        let field = FieldDef {
            json_name: json_name.to_string(),
            ident: ident.clone(),
            value_ty: Ty::Value,
            mode: FieldMode::Required,
            doc,
            integers: false,
        };
        let info = FieldInfo {
            json_name: json_name.to_string(),
            ident,
            ty: Ty::Value.tokens(&self.krate_tokens),
            value_ty: Ty::Value.tokens(&self.krate_tokens),
            required: true,
            nullable: true,
            description: None,
        };
        (field, info)
    }

    /// `additionalProperties` of an object struct: the policy, and the
    /// flattened map field keeping the extra properties (any JSON when
    /// `additionalProperties` is absent, `true` or `{}`: JSON Schema admits
    /// them, so dropping them would lose data).
    fn extra_properties(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        struct_name: &str,
        idents: &mut NameSet,
        ptr: &str,
    ) -> (AdditionalProperties, Option<(String, Ty)>) {
        match s.get("additionalProperties") {
            Some(Value::Bool(false)) => (AdditionalProperties::Forbidden, None),
            None | Some(Value::Bool(true)) => {
                let field = idents.field("additional_properties");
                (AdditionalProperties::Allowed, Some((field, Ty::Value)))
            }
            Some(extra) if extra.as_object().is_some_and(Map::is_empty) => {
                let field = idents.field("additional_properties");
                (AdditionalProperties::Allowed, Some((field, Ty::Value)))
            }
            Some(extra) => {
                let ty = self.convert(
                    root,
                    extra,
                    &Hint::Fresh(format!("{struct_name}Additional")),
                    &format!("{ptr}/additionalProperties"),
                );
                let field = idents.field("additional_properties");
                (AdditionalProperties::Typed, Some((field, ty)))
            }
        }
    }

    fn constant(&mut self, s: &Map<String, Value>, value: &Value, hint: &Hint, ptr: &str) -> Ty {
        let lit = match value {
            Value::Null => return Ty::Unit,
            Value::String(v) => {
                return self.string_enum(s, std::slice::from_ref(v), hint);
            }
            Value::Bool(b) => ConstLit::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    ConstLit::I64(i)
                } else if let Some(u) = n.as_u64() {
                    ConstLit::U64(u)
                } else {
                    ConstLit::F64(n.as_f64().unwrap_or_default())
                }
            }
            other => {
                self.note(
                    ptr,
                    DocText::new()
                        .ours("`const` ")
                        .text(json_short(other))
                        .ours(" (an array or object)"),
                );
                return Ty::Value;
            }
        };
        let name = self.take_name(hint, Some(s));
        let mut doc = self.map_doc(s);
        doc.push(
            DocText::new()
                .ours("Always ")
                .code(value.to_string())
                .ours("."),
        );
        self.push_named(ItemDef::Const {
            name,
            doc,
            value: lit,
        })
    }

    fn string_enum(&mut self, s: &Map<String, Value>, values: &[String], hint: &Hint) -> Ty {
        let name = self.take_name(hint, Some(s));
        let mut variant_names = NameSet::default();
        let mut seen = HashSet::new();
        let variants = values
            .iter()
            .filter(|v| seen.insert(v.as_str()))
            .map(|v| (variant_names.unique(&variant(v), false), v.clone()))
            .collect();
        let doc = self.map_doc(s);
        self.push_named(ItemDef::StringEnum {
            name,
            doc,
            variants,
        })
    }

    /// An open enum: the known values as unit variants, `Other(String)`
    /// for any other string (always named `Other`; a known value mapping
    /// to `Other` gets a suffix).
    fn open_enum(&mut self, s: &Map<String, Value>, values: &[String], hint: &Hint) -> Ty {
        let name = self.take_name(hint, Some(s));
        let mut variant_names = NameSet::default();
        let other = variant_names.unique("Other", false);
        let mut seen = HashSet::new();
        let variants = values
            .iter()
            .filter(|v| seen.insert(v.as_str()))
            .map(|v| (variant_names.unique(&variant(v), false), v.clone()))
            .collect();
        let mut doc = self.map_doc(s);
        doc.push(DocText::from(
            "Open: each known value is a variant, any other string is `Other`.",
        ));
        self.push_named(ItemDef::OpenEnum {
            name,
            doc,
            variants,
            other,
        })
    }

    fn enumeration(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        values: &Value,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let Some(values) = values.as_array() else {
            self.note(ptr, "`enum` is not an array");
            return Ty::Value;
        };
        if values.is_empty() {
            self.note(ptr, "an empty `enum` admits no value");
            return Ty::Value;
        }
        let non_null: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
        let nullable = non_null.len() < values.len();
        let ty = if non_null.is_empty() {
            Ty::Unit
        } else if let Some(strings) = non_null
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
        {
            let hint = if nullable {
                hint.wrapped()
            } else {
                hint.clone()
            };
            self.string_enum(s, &strings, &hint)
        } else if let [single] = non_null.as_slice() {
            let hint = if nullable {
                hint.wrapped()
            } else {
                hint.clone()
            };
            self.constant(s, single, &hint, ptr)
        } else {
            let mut arms: Vec<Value> = Vec::with_capacity(non_null.len());
            for v in non_null {
                let Some(v) = self.copy_value(v, ptr) else {
                    return Ty::Value;
                };
                arms.push(serde_json::json!({ "const": v }));
            }
            let hint = if nullable {
                hint.wrapped()
            } else {
                hint.clone()
            };
            self.union(root, s, &arms, &hint, &format!("{ptr}/enum"))
        };
        self.nullable_if(nullable, ty)
    }

    /// Resolves a local `$ref` chain to the schema it names (for looking at
    /// a union arm's shape without converting it).
    fn peek<'v>(&self, root: &'v Value, mut schema: &'v Value) -> &'v Value {
        for _ in 0..16 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return schema;
            };
            match resolve_ref(root, reference) {
                Ok(resolved) => schema = resolved.target,
                Err(_) => return schema,
            }
        }
        schema
    }

    fn union(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        arms: &[Value],
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let non_null: Vec<(usize, &Value)> = arms
            .iter()
            .enumerate()
            .filter(|(_, arm)| !is_null_schema(self.peek(root, arm)))
            .collect();
        let nullable = non_null.len() < arms.len();
        let inner_hint = if nullable {
            hint.wrapped()
        } else {
            hint.clone()
        };
        let ty = match non_null.as_slice() {
            [] if nullable => Ty::Unit,
            [] => {
                self.note(ptr, "a union without arms admits no value");
                return Ty::Value;
            }
            [(i, arm)] => {
                // A lone arm: keep the union's description on it.
                self.convert(root, arm, &inner_hint, &format!("{ptr}/{i}"))
            }
            many => {
                let peeked: Vec<&Value> =
                    many.iter().map(|(_, arm)| self.peek(root, arm)).collect();
                // Looking at the arms' shapes (their strings, their
                // `properties` for a discriminator) is paid for here; a
                // union reached again through a shared `$ref` pays again.
                let look: u64 = peeked
                    .iter()
                    .map(|arm| match arm.as_object() {
                        Some(arm) => {
                            let properties = arm
                                .get("properties")
                                .and_then(Value::as_object)
                                .map_or(0, Map::len);
                            local_steps(arm).saturating_add(properties as u64)
                        }
                        None => 1,
                    })
                    .fold(0, u64::saturating_add);
                if !self.spend(look, ptr) {
                    return Ty::Value;
                }
                let strings: Option<Vec<String>> = peeked
                    .iter()
                    .map(|arm| string_values(arm))
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.concat());
                if let Some(strings) = strings.filter(|v| !v.is_empty()) {
                    self.string_enum(s, &strings, &inner_hint)
                } else if let Some(known) = open_enum_values(&peeked) {
                    self.open_enum(s, &known, &inner_hint)
                } else if let Some((tag, values)) = discriminator(&peeked) {
                    self.tagged(root, s, (&tag, &values), &peeked, &inner_hint, ptr)
                } else if let Some((tag, values)) = openapi_discriminator(root, s, many, &peeked) {
                    self.tagged(root, s, (&tag, &values), &peeked, &inner_hint, ptr)
                } else {
                    self.untagged(root, s, many, &inner_hint, ptr)
                }
            }
        };
        self.nullable_if(nullable, ty)
    }

    /// An internally tagged enum: arm `i` is the variant whose `tag`
    /// property is `values[i]`.
    fn tagged(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        (tag, values): (&str, &[String]),
        arms: &[&Value],
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let (name, slot) = self.reserve_named(hint, s);
        let mut variant_names = NameSet::default();
        let mut variants = Vec::new();
        for (i, (arm, value)) in arms.iter().zip(values).enumerate() {
            let arm_ptr = format!("{ptr}/{i}");
            let value = value.clone();
            let variant = variant_names.unique(&variant(&value), false);
            let empty = Map::new();
            let payload = match self.copy_map(arm.as_object().unwrap_or(&empty), &arm_ptr) {
                Some(mut arm) => {
                    if let Some(Value::Object(props)) = arm.get_mut("properties") {
                        props.remove(tag);
                    }
                    if let Some(Value::Array(required)) = arm.get_mut("required") {
                        required.retain(|r| r.as_str() != Some(tag));
                    }
                    arm.remove("title");
                    let payload_hint =
                        Hint::Fresh(format!("{name}{}", variant.trim_end_matches('_')));
                    self.structure_of_arm(root, &arm, &payload_hint, &arm_ptr)
                }
                // Out of budget (noted): any object under this tag.
                None => Ty::map(Ty::Value),
            };
            variants.push((variant, value, payload));
        }
        let doc = self.map_doc(s);
        self.fill_slot(
            slot,
            ItemDef::Tagged {
                name,
                doc,
                tag: tag.to_string(),
                variants,
            },
        )
    }

    fn structure_of_arm(
        &mut self,
        root: &Value,
        arm: &Map<String, Value>,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let empty = Map::new();
        let properties = arm
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        self.structure(root, arm, properties, hint, ptr)
    }

    fn untagged(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        arms: &[(usize, &Value)],
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let (name, slot) = self.reserve_named(hint, s);
        let mut admits_null = false;
        let mut variant_names = NameSet::default();
        let mut variants = Vec::new();
        for (i, arm) in arms {
            let peeked = self.peek(root, arm);
            let base = variant_base(peeked, *i);
            let variant = variant_names.unique(&base, false);
            let ty = self.convert(
                root,
                arm,
                &Hint::Fresh(format!("{name}{}", variant.trim_end_matches('_'))),
                &format!("{ptr}/{i}"),
            );
            admits_null |= self.admits_null(&ty);
            variants.push((variant, ty));
        }
        // `2.0` reads as an integer variant unless a `number` variant can
        // keep it as it came.
        let number_arm = variants
            .iter()
            .any(|(_, ty)| self.resolve(ty) == Ty::Number);
        let variants = variants
            .into_iter()
            .map(|(variant, ty)| {
                let integers = !number_arm && self.is_integers(&ty);
                (variant, ty, integers)
            })
            .collect();
        if admits_null {
            self.null_admitting.insert(name.clone());
        }
        let mut doc = self.map_doc(s);
        doc.push(DocText::from(
            "Untagged: the first variant that accepts a value wins.",
        ));
        let peeked: Vec<&Value> = arms.iter().map(|(_, arm)| self.peek(root, arm)).collect();
        if let Some(tag) = optional_tag(&peeked) {
            doc.push(
                DocText::new()
                    .ours("Not a tagged enum: the tag ")
                    .code(tag)
                    .ours(" is optional in (or missing from) some arm, and serde's tagged representation would refuse a value without it or add it on writing; each arm that has the tag pins it to its value, so a value with a tag still reads as its arm."),
            );
        }
        self.fill_slot(
            slot,
            ItemDef::Untagged {
                name,
                doc,
                variants,
            },
        )
    }

    /// `allOf`: the object parts (nested `allOf`s flattened, also behind
    /// `$ref`s) merged into one struct; without object parts, the one
    /// typed part's type. A `{"nullable": true}` part (OpenAPI 3.0's way
    /// to make a `$ref` nullable) makes the result an `Option`. Every other
    /// part (a non-object type beside objects, `anyOf`/`oneOf`/`not` inside
    /// a part, a part of validation keywords only) is not encoded in the
    /// type and named in a doc note: the validator checks it.
    fn all_of(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        all: &Value,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let Some(parts) = all.as_array() else {
            self.note(ptr, "`allOf` is not an array");
            return Ty::Value;
        };
        let mut flat: Vec<(String, &Value)> = Vec::new();
        let mut stack: Vec<(String, &Value, usize)> = parts
            .iter()
            .enumerate()
            .rev()
            .map(|(i, part)| (format!("{ptr}/allOf/{i}"), part, 0))
            .collect();
        while let Some((part_ptr, part, level)) = stack.pop() {
            if !self.spend(1, &part_ptr) {
                return Ty::Value;
            }
            if let Some(Value::Array(inner)) = self.peek(root, part).get("allOf") {
                if level < MAX_DEPTH {
                    stack.extend(
                        inner
                            .iter()
                            .enumerate()
                            .rev()
                            .map(|(i, p)| (format!("{part_ptr}/allOf/{i}"), p, level + 1)),
                    );
                }
            }
            flat.push((part_ptr, part));
        }
        let own = part_kind(s);
        let mut nullable = false;
        let mut objects: Vec<&Map<String, Value>> = Vec::new();
        let mut typed: Vec<(String, &Value)> = Vec::new();
        let mut lone_object: Option<(String, &Value)> = None;
        // `(pointer, keywords)` of what the type does not encode.
        let mut unencoded: Vec<(String, Vec<String>)> = Vec::new();
        for (part_ptr, part) in &flat {
            let peeked = self.peek(root, part);
            let Some(map) = peeked.as_object() else {
                if peeked == &Value::Bool(true) {
                    continue;
                }
                self.note(ptr, "an `allOf` part is not an object schema");
                return Ty::Value;
            };
            let kind = part_kind(map);
            nullable |= kind.shape == PartShape::Annotation && kind.nullable;
            match kind.shape {
                PartShape::Annotation => {}
                PartShape::Object => {
                    objects.push(map);
                    lone_object = Some((part_ptr.clone(), *part));
                }
                PartShape::Typed => typed.push((part_ptr.clone(), *part)),
                PartShape::Constraint => {}
            }
            if !kind.unencoded.is_empty() {
                unencoded.push((part_ptr.clone(), kind.unencoded));
            }
        }
        let hint = if nullable {
            hint.wrapped()
        } else {
            hint.clone()
        };
        let ty = if let (
            PartShape::Annotation | PartShape::Constraint,
            [_],
            [],
            Some((part_ptr, part)),
        ) = (
            own.shape,
            objects.as_slice(),
            typed.as_slice(),
            &lone_object,
        ) {
            // One object part (`allOf: [{$ref}, {nullable: true}]`): its own
            // type, name and `additionalProperties` kept.
            self.convert(root, part, &hint, part_ptr)
        } else if own.shape == PartShape::Object || !objects.is_empty() {
            for (part_ptr, part) in &typed {
                let keys = self
                    .peek(root, part)
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                unencoded.push((part_ptr.clone(), keys));
            }
            self.merged_object(root, s, &objects, &hint, ptr)
        } else {
            match (own.shape, typed.as_slice()) {
                (PartShape::Typed, []) => {
                    let Some(mut rest) = self.copy_map(s, ptr) else {
                        return Ty::Value;
                    };
                    rest.remove("allOf");
                    self.convert(root, &Value::Object(rest), &hint, ptr)
                }
                (PartShape::Annotation | PartShape::Constraint, [(part_ptr, part)]) => {
                    self.convert(root, part, &hint, part_ptr)
                }
                // Validation keywords only: any JSON they admit.
                (PartShape::Annotation | PartShape::Constraint, []) => Ty::Value,
                _ => {
                    self.note(
                        ptr,
                        "an `allOf` of several non-object types is not representable",
                    );
                    return Ty::Value;
                }
            }
        };
        for (part_ptr, keys) in unencoded {
            let remark = self.remark(
                ptr,
                DocText::new()
                    .ours("a value must also match the `allOf` part at ")
                    .code(part_ptr)
                    .ours(" (")
                    .code(keys.join(", "))
                    .ours("), which this type does not encode; the validator checks it."),
            );
            self.attach_doc(&ty, remark);
        }
        self.nullable_if(nullable, ty)
    }

    /// The struct of an `allOf`'s object parts: `s` (minus `allOf`) with
    /// the parts' `properties` and `required` added. Every copied value is
    /// paid for from the work budget.
    fn merged_object(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        objects: &[&Map<String, Value>],
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let Some(mut merged) = self.copy_map(s, ptr) else {
            return Ty::Value;
        };
        merged.remove("allOf");
        merged.remove("nullable");
        let mut properties = match merged.remove("properties") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let mut required = match merged.remove("required") {
            Some(Value::Array(r)) => r,
            _ => Vec::new(),
        };
        for part in objects {
            if let Some(p) = part.get("properties").and_then(Value::as_object) {
                for (k, v) in p {
                    let Some(v) = self.copy_value(v, ptr) else {
                        return Ty::Value;
                    };
                    properties.insert(k.clone(), v);
                }
            }
            if let Some(r) = part.get("required") {
                let Some(Value::Array(r)) = self.copy_value(r, ptr) else {
                    continue;
                };
                required.extend(r);
            }
        }
        merged.insert("type".into(), "object".into());
        merged.insert("properties".into(), Value::Object(properties));
        merged.insert("required".into(), Value::Array(required));
        self.convert(root, &Value::Object(merged), hint, ptr)
    }
}

/// What one `allOf` part contributes to the type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PartShape {
    /// Only annotations (`description`, `nullable`, `x-*`, …).
    Annotation,
    /// An object: `type: object`, `properties`, `required` or
    /// `additionalProperties` (merged into the struct).
    Object,
    /// Another type: `type`, `enum`, `const`, `anyOf`/`oneOf`, `items`,
    /// `$ref`.
    Typed,
    /// Validation keywords only (`minLength`, `not`, …).
    Constraint,
}

struct PartKind {
    shape: PartShape,
    /// `nullable: true`.
    nullable: bool,
    /// The part's keywords the type does not encode and the doc names:
    /// composition keywords of an object part, all keywords of a
    /// constraint part.
    unencoded: Vec<String>,
}

/// An applicator on the instance itself (`anyOf`, `oneOf`, `not`, `if`,
/// `then`, `else`; `allOf` too, which [`part_kind`] skips): the keywords
/// of an object part its struct does not encode.
fn is_composition(key: &str) -> bool {
    keyword(key)
        .is_some_and(|k| k.kind == KeywordKind::Applicator && k.applies_to == AppliesTo::Any)
}

/// Classifies an `allOf` part (or the schema holding the `allOf`, whose
/// `allOf` key is skipped).
fn part_kind(s: &Map<String, Value>) -> PartKind {
    let keys: Vec<&String> = s
        .keys()
        .filter(|k| *k != "allOf" && !is_annotation(k))
        .collect();
    let nullable = s.get("nullable") == Some(&Value::Bool(true));
    let object = type_name(s) == Some("object")
        || ["properties", "required", "additionalProperties"]
            .iter()
            .any(|k| s.contains_key(*k));
    let typed = [
        "type",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "items",
        "prefixItems",
        "$ref",
    ]
    .iter()
    .any(|k| s.contains_key(*k));
    let (shape, unencoded) = if object {
        let composition = keys
            .iter()
            .filter(|k| is_composition(k))
            .map(|k| k.to_string())
            .collect();
        (PartShape::Object, composition)
    } else if typed {
        (PartShape::Typed, Vec::new())
    } else if keys.is_empty() {
        (PartShape::Annotation, Vec::new())
    } else {
        (
            PartShape::Constraint,
            keys.iter().map(|k| k.to_string()).collect(),
        )
    };
    PartKind {
        shape,
        nullable,
        unencoded,
    }
}

/// When every arm is the same schema once its content annotations
/// (`contentMediaType`, `contentEncoding`, `contentSchema`) and its
/// `title`/`description` are removed, and at least one arm has a
/// `contentMediaType`: that common schema (only `type` and `format`
/// allowed in it) and the media types in arm order.
fn content_only_arms(arms: &[&Value]) -> Option<(Map<String, Value>, Vec<String>)> {
    let mut shape: Option<Map<String, Value>> = None;
    let mut media = Vec::new();
    for arm in arms {
        let arm = arm.as_object()?;
        let mut rest = Map::new();
        for (k, v) in arm {
            match k.as_str() {
                "contentMediaType" => media.push(v.as_str()?.to_string()),
                "contentEncoding" | "contentSchema" | "title" | "description" => {}
                "type" | "format" => {
                    rest.insert(k.clone(), v.clone());
                }
                _ => return None,
            }
        }
        match &shape {
            None => shape = Some(rest),
            Some(first) if *first == rest => {}
            Some(_) => return None,
        }
    }
    let shape = shape?;
    let stringy = shape.get("type").is_none_or(|t| t == "string");
    (stringy && !media.is_empty()).then_some((shape, media))
}

/// The `required` lists of `arms` when `s` is an object (`type: object`
/// or `properties`) and every arm is only a `required` list (plus
/// annotations or `type: object`).
fn required_only_arms(s: &Map<String, Value>, arms: &[Value]) -> Option<Vec<Vec<String>>> {
    if !(type_name(s) == Some("object") || s.contains_key("properties")) || arms.is_empty() {
        return None;
    }
    arms.iter()
        .map(|arm| {
            let arm = arm.as_object()?;
            let only_required = arm.keys().all(|k| {
                k == "required"
                    || is_annotation(k)
                    || (k == "type" && type_name(arm) == Some("object"))
            });
            let names = arm.get("required")?.as_array()?;
            let names: Option<Vec<String>> = names
                .iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect();
            only_required.then_some(names?)
        })
        .collect()
}

/// A `$defs` key a converter made up rather than a name the author gave:
/// zod 4's `z.toJSONSchema` calls the schemas it extracts (recursive ones,
/// those used twice) `__schema0`, `__schema1`, …
pub(crate) fn is_generated_def_key(key: &str) -> bool {
    key.strip_prefix("__schema")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `i64` (zod's ±2^53 bounds fit), or `u64` when the bounds need it
/// (`minimum` ≥ 0 and `maximum` above `i64::MAX`).
fn integer_type(s: &Map<String, Value>) -> Ty {
    let bound = |k: &str| s.get(k).and_then(Value::as_f64);
    let min = bound("minimum").or(bound("exclusiveMinimum"));
    let max = bound("maximum").or(bound("exclusiveMaximum"));
    match (min, max) {
        (Some(min), Some(max)) if min >= 0.0 && max > i64::MAX as f64 => Ty::U64,
        _ => Ty::I64,
    }
}

/// The property that discriminates every arm, and each arm's value: each
/// arm is an object that requires it with a distinct string `const` (or
/// one-value `enum`).
fn discriminator(arms: &[&Value]) -> Option<(String, Vec<String>)> {
    let first = arms.first()?.get("properties")?.as_object()?;
    // Each arm's `properties` and `required`, looked at once (not once per
    // candidate: linear in the arms' size).
    let mut shapes = Vec::with_capacity(arms.len());
    for arm in arms {
        let arm = arm.as_object()?;
        if arm.contains_key("anyOf") || arm.contains_key("oneOf") || arm.contains_key("allOf") {
            return None;
        }
        let required: HashSet<&str> = arm
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        shapes.push((arm.get("properties"), required));
    }
    'candidates: for candidate in first.keys() {
        let mut seen = HashSet::new();
        let mut values = Vec::with_capacity(shapes.len());
        for (properties, required) in &shapes {
            let value = properties
                .and_then(|p| p.get(candidate))
                .and_then(string_const);
            match value {
                Some(value) if required.contains(candidate.as_str()) => {
                    if !seen.insert(value) {
                        continue 'candidates;
                    }
                    values.push(value.to_string());
                }
                _ => continue 'candidates,
            }
        }
        return Some((candidate.clone(), values));
    }
    None
}

/// OpenAPI's `discriminator: {propertyName, mapping?}` when the arms'
/// tag property is not a `const` (a plain `type: string`): each arm must
/// be an object that requires the property, and its value is the arm's
/// `const` if it has one, else the one `mapping` key naming the arm's
/// `$ref`, else (no key names it) the last segment of the `$ref`, as
/// OpenAPI defines. `None` (untagged) when an arm is not a `$ref` without
/// a `const`, two keys name one arm (serde would write only one of them
/// back), or two arms get the same value.
fn openapi_discriminator(
    root: &Value,
    s: &Map<String, Value>,
    raw_arms: &[(usize, &Value)],
    arms: &[&Value],
) -> Option<(String, Vec<String>)> {
    let discriminator = s.get("discriminator")?.as_object()?;
    let tag = discriminator.get("propertyName")?.as_str()?;
    let mapping = discriminator.get("mapping").and_then(Value::as_object);
    let mut seen = HashSet::new();
    let mut values = Vec::with_capacity(arms.len());
    for ((_, raw), arm) in raw_arms.iter().zip(arms) {
        let arm = arm.as_object()?;
        if ["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|k| arm.contains_key(*k))
            || !required_set(arm).iter().any(|r| r == tag)
        {
            return None;
        }
        let property = arm.get("properties").and_then(|p| p.get(tag));
        if property.is_some_and(|p| {
            p.get("type").is_some_and(|t| t != "string")
                || p.get("enum").is_some() && string_const(p).is_none()
        }) {
            return None;
        }
        let value = match property.and_then(string_const) {
            Some(value) => value.to_string(),
            None => {
                let reference = raw.get("$ref")?.as_str()?;
                let keys: Vec<&String> = mapping
                    .into_iter()
                    .flatten()
                    .filter(|(_, target)| {
                        target
                            .as_str()
                            .is_some_and(|target| same_ref(root, target, reference))
                    })
                    .map(|(key, _)| key)
                    .collect();
                match keys.as_slice() {
                    [key] => (*key).clone(),
                    [] => ref_name(root, reference)?,
                    _ => return None,
                }
            }
        };
        if !seen.insert(value.clone()) {
            return None;
        }
        values.push(value);
    }
    Some((tag.to_string(), values))
}

/// Whether two `$ref` texts name the same schema: the same text, or the
/// same target once resolved (`#/$defs/A` and `<root $id>#/%24defs/A`).
fn same_ref(root: &Value, a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (resolve_ref(root, a), resolve_ref(root, b)),
            (Ok(a), Ok(b)) if a.pointer == b.pointer
        )
}

/// The schema name OpenAPI reads from a `$ref`: the last token of its
/// pointer (decoded and unescaped when it resolves, else the text after
/// the last `/`).
fn ref_name(root: &Value, reference: &str) -> Option<String> {
    match resolve_ref(root, reference) {
        Ok(resolved) => resolved.pointer.last().map(Cow::into_owned),
        Err(_) => reference.rsplit('/').next().map(str::to_string),
    }
}

/// A property that looks like a tag but is optional in (or missing from)
/// some arm: every arm that has it pins it to a string, the values are
/// distinct, and at least two arms have it.
fn optional_tag(arms: &[&Value]) -> Option<String> {
    let first = arms
        .iter()
        .find_map(|arm| arm.get("properties").and_then(Value::as_object))?;
    'candidates: for candidate in first.keys() {
        let mut seen = HashSet::new();
        let mut optional = false;
        for arm in arms {
            let Some(arm) = arm.as_object() else {
                continue 'candidates;
            };
            match arm.get("properties").and_then(|p| p.get(candidate)) {
                None => optional = true,
                Some(property) => match string_const(property) {
                    Some(value) if seen.insert(value) => {
                        optional |= !required_set(arm).iter().any(|r| r == candidate);
                    }
                    _ => continue 'candidates,
                },
            }
        }
        if optional && seen.len() >= 2 {
            return Some(candidate.clone());
        }
    }
    None
}

/// The known values of an "open enum" union: one arm a plain
/// `{"type": "string"}` (no `enum`/`const`), every other arm string
/// literals (`enum`/`const`), at least one value.
fn open_enum_values(arms: &[&Value]) -> Option<Vec<String>> {
    let mut plain = 0usize;
    let mut known = Vec::new();
    for arm in arms {
        let object = arm.as_object()?;
        if let Some(values) = string_values(arm) {
            known.extend(values);
        } else if type_name(object) == Some("string")
            && !["enum", "const", "anyOf", "oneOf", "allOf", "not"]
                .iter()
                .any(|k| object.contains_key(*k))
        {
            plain += 1;
        } else {
            return None;
        }
    }
    (plain == 1 && !known.is_empty()).then_some(known)
}

/// A variant name for an untagged union arm from its shape.
fn variant_base(arm: &Value, index: usize) -> String {
    if let Some(title) = arm.get("title").and_then(Value::as_str) {
        return variant(title);
    }
    match arm.get("type").and_then(Value::as_str) {
        Some("string") if arm.get("const").is_none() && arm.get("enum").is_none() => {
            "String".into()
        }
        Some("integer") => "Integer".into(),
        Some("number") => "Number".into(),
        Some("boolean") => "Boolean".into(),
        Some("array") => "Array".into(),
        _ => match arm.get("const") {
            Some(Value::String(c)) => variant(c),
            Some(c) => variant(&c.to_string()),
            None => format!("Variant{index}"),
        },
    }
}

fn item_doc_mut(item: &mut ItemDef) -> &mut Vec<DocText> {
    match item {
        ItemDef::Struct { doc, .. }
        | ItemDef::Newtype { doc, .. }
        | ItemDef::Alias { doc, .. }
        | ItemDef::StringEnum { doc, .. }
        | ItemDef::Untagged { doc, .. }
        | ItemDef::Tagged { doc, .. }
        | ItemDef::OpenEnum { doc, .. }
        | ItemDef::Const { doc, .. } => doc,
    }
}

fn item_name(item: &ItemDef) -> &str {
    match item {
        ItemDef::Struct { name, .. }
        | ItemDef::Newtype { name, .. }
        | ItemDef::Alias { name, .. }
        | ItemDef::StringEnum { name, .. }
        | ItemDef::Untagged { name, .. }
        | ItemDef::Tagged { name, .. }
        | ItemDef::OpenEnum { name, .. }
        | ItemDef::Const { name, .. } => name,
    }
}

/// The note for a `$ref` that does not resolve inside its document.
fn ref_error_note(reference: &str, error: &RefError) -> DocText {
    let quoted = format!("{reference:?}");
    match error {
        RefError::External => DocText::new()
            .ours("external `$ref` ")
            .text(quoted)
            .ours(" is not resolved"),
        RefError::Dangling => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" points to nothing"),
        RefError::Anchor => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" names an anchor, which is not resolved"),
        RefError::BadFragment => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" is not a percent-encoded JSON Pointer"),
        RefError::NotASchema => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" names a value that is not a schema"),
    }
}
