//! Objects: structs from `properties`/`required`, maps from
//! `additionalProperties`, and objects whose `anyOf`/`oneOf` arms only
//! list `required` names.

use std::collections::HashSet;

use serde_json::{Map, Value};
use surface_manifest::schema::{child_pointer, is_annotation};

use crate::doc::DocText;
use crate::types::model::{FieldDef, FieldMode, ItemDef, Ty};
use crate::types::names::{pascal, NameSet};
use crate::types::{AdditionalProperties, FieldInfo, InputObject};

use super::keywords::{required_set, type_name};
use super::{Converter, Hint};

impl Converter {
    pub(super) fn object(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
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

    pub(super) fn structure(
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

    /// An object whose `anyOf`/`oneOf` arms only list `required` names
    /// ("at least one of" / "exactly one of"): the struct of its
    /// `properties` (a property only an arm requires stays an `Option`),
    /// with a doc note naming the rule, which the validator checks.
    pub(super) fn object_with_required_arms(
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
}

/// The `required` lists of `arms` when `s` is an object (`type: object`
/// or `properties`) and every arm is only a `required` list (plus
/// annotations or `type: object`).
pub(super) fn required_only_arms(
    s: &Map<String, Value>,
    arms: &[Value],
) -> Option<Vec<Vec<String>>> {
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
