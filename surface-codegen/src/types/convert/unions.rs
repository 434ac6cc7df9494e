//! Unions (`anyOf`/`oneOf`, `type` lists, mixed `enum`s): nullable by
//! their `null` arms, string enums when every arm is a string, internally
//! tagged enums when [`super::tags`] finds the tag, untagged otherwise;
//! and unions whose arms differ only in content annotations.

use serde_json::{Map, Value};

use crate::doc::DocText;
use crate::types::model::{ItemDef, Ty};
use crate::types::names::{variant, NameSet};

use super::budget::local_steps;
use super::enums::open_enum_values;
use super::keywords::{is_null_schema, string_values};
use super::objects::required_only_arms;
use super::tags::{discriminator, openapi_discriminator, optional_tag};
use super::{Converter, Hint};

impl Converter {
    /// `anyOf`/`oneOf` (`keyword`) in `s`: an object whose arms only list
    /// `required` names, a union whose arms differ only in content
    /// annotations, or a union of its arms.
    pub(super) fn union_keyword(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        keyword: &'static str,
        arms: &Value,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
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
        self.union(root, s, arms, hint, &format!("{ptr}/{keyword}"))
    }

    pub(super) fn union(
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
