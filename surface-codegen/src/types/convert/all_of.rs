//! `allOf`: object parts merged into one struct, one typed part's type
//! otherwise, and what the type does not encode named in its doc.

use serde_json::{Map, Value};
use surface_manifest::schema::{is_annotation, keyword, AppliesTo, KeywordKind};

use crate::doc::DocText;
use crate::types::model::Ty;

use super::keywords::type_name;
use super::{Converter, Hint, MAX_DEPTH};

impl Converter {
    /// `allOf`: the object parts (nested `allOf`s flattened, also behind
    /// `$ref`s) merged into one struct; without object parts, the one
    /// typed part's type. A `{"nullable": true}` part (OpenAPI 3.0's way
    /// to make a `$ref` nullable) makes the result an `Option`. Every other
    /// part (a non-object type beside objects, `anyOf`/`oneOf`/`not` inside
    /// a part, a part of validation keywords only) is not encoded in the
    /// type and named in a doc note: the validator checks it.
    pub(super) fn all_of(
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
        let Some(flat) = self.flatten_all_of(root, parts, ptr) else {
            return Ty::Value;
        };
        let Some(mut parts) = self.sort_parts(root, &flat, ptr) else {
            return Ty::Value;
        };
        let hint = if parts.nullable {
            hint.wrapped()
        } else {
            hint.clone()
        };
        let Some(ty) = self.all_of_type(root, s, &mut parts, &hint, ptr) else {
            return Ty::Value;
        };
        for (part_ptr, keys) in parts.unencoded {
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
        self.nullable_if(parts.nullable, ty)
    }

    /// The parts of an `allOf` with their pointers, nested `allOf`s (also
    /// behind `$ref`s) flattened in order, each paid for; `None` past the
    /// budget.
    fn flatten_all_of<'v>(
        &mut self,
        root: &'v Value,
        parts: &'v [Value],
        ptr: &str,
    ) -> Option<Vec<(String, &'v Value)>> {
        let mut flat: Vec<(String, &Value)> = Vec::new();
        let mut stack: Vec<(String, &Value, usize)> = parts
            .iter()
            .enumerate()
            .rev()
            .map(|(i, part)| (format!("{ptr}/allOf/{i}"), part, 0))
            .collect();
        while let Some((part_ptr, part, level)) = stack.pop() {
            if !self.spend(1, &part_ptr) {
                return None;
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
        Some(flat)
    }

    /// The flattened parts sorted by what they contribute; `None` (noted)
    /// when a part is not an object schema.
    fn sort_parts<'v>(
        &mut self,
        root: &'v Value,
        flat: &[(String, &'v Value)],
        ptr: &str,
    ) -> Option<Parts<'v>> {
        let mut parts = Parts::default();
        for (part_ptr, part) in flat {
            let peeked = self.peek(root, part);
            let Some(map) = peeked.as_object() else {
                if peeked == &Value::Bool(true) {
                    continue;
                }
                self.note(ptr, "an `allOf` part is not an object schema");
                return None;
            };
            let kind = part_kind(map);
            parts.nullable |= kind.shape == PartShape::Annotation && kind.nullable;
            match kind.shape {
                PartShape::Annotation | PartShape::Constraint => {}
                PartShape::Object => {
                    parts.objects.push(map);
                    parts.lone_object = Some((part_ptr.clone(), *part));
                }
                PartShape::Typed => parts.typed.push((part_ptr.clone(), *part)),
            }
            if !kind.unencoded.is_empty() {
                parts.unencoded.push((part_ptr.clone(), kind.unencoded));
            }
        }
        Some(parts)
    }

    /// The type of an `allOf` from its sorted parts (before `nullable`);
    /// `None` when it is `Value` without remarks (past the budget, or
    /// several non-object types, noted).
    fn all_of_type(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        parts: &mut Parts<'_>,
        hint: &Hint,
        ptr: &str,
    ) -> Option<Ty> {
        let own = part_kind(s).shape;
        let own_untyped = matches!(own, PartShape::Annotation | PartShape::Constraint);
        if let (true, [_], [], Some((part_ptr, part))) = (
            own_untyped,
            parts.objects.as_slice(),
            parts.typed.as_slice(),
            &parts.lone_object,
        ) {
            // One object part (`allOf: [{$ref}, {nullable: true}]`): its own
            // type, name and `additionalProperties` kept.
            return Some(self.convert(root, part, hint, part_ptr));
        }
        if own == PartShape::Object || !parts.objects.is_empty() {
            for (part_ptr, part) in &parts.typed {
                let keys = self
                    .peek(root, part)
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                parts.unencoded.push((part_ptr.clone(), keys));
            }
            return Some(self.merged_object(root, s, &parts.objects, hint, ptr));
        }
        match (own, parts.typed.as_slice()) {
            (PartShape::Typed, []) => {
                let mut rest = self.copy_map(s, ptr)?;
                rest.remove("allOf");
                Some(self.convert(root, &Value::Object(rest), hint, ptr))
            }
            (_, [(part_ptr, part)]) if own_untyped => {
                Some(self.convert(root, part, hint, part_ptr))
            }
            // Validation keywords only: any JSON they admit.
            (_, []) if own_untyped => Some(Ty::Value),
            _ => {
                self.note(
                    ptr,
                    "an `allOf` of several non-object types is not representable",
                );
                None
            }
        }
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

/// The parts of an `allOf`, sorted by what they contribute.
#[derive(Default)]
struct Parts<'v> {
    /// A `{"nullable": true}` part.
    nullable: bool,
    /// The object parts, merged into the struct.
    objects: Vec<&'v Map<String, Value>>,
    /// `(pointer, part)` of the parts of another type.
    typed: Vec<(String, &'v Value)>,
    /// The last object part.
    lone_object: Option<(String, &'v Value)>,
    /// `(pointer, keywords)` of what the type does not encode.
    unencoded: Vec<(String, Vec<String>)>,
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
