//! Enumerations: `const` literals, closed string enums, open enums (known
//! strings plus `Other(String)`) and `enum`s of other values.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::doc::DocText;
use crate::types::model::{ConstLit, ItemDef, Ty};
use crate::types::names::{variant, NameSet};

use super::keywords::{json_short, string_values, type_name};
use super::{Converter, Hint};

impl Converter {
    pub(super) fn constant(
        &mut self,
        s: &Map<String, Value>,
        value: &Value,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
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

    pub(super) fn string_enum(
        &mut self,
        s: &Map<String, Value>,
        values: &[String],
        hint: &Hint,
    ) -> Ty {
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
    pub(super) fn open_enum(
        &mut self,
        s: &Map<String, Value>,
        values: &[String],
        hint: &Hint,
    ) -> Ty {
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

    pub(super) fn enumeration(
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
}

/// The known values of an "open enum" union: one arm a plain
/// `{"type": "string"}` (no `enum`/`const`), every other arm string
/// literals (`enum`/`const`), at least one value.
pub(super) fn open_enum_values(arms: &[&Value]) -> Option<Vec<String>> {
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
