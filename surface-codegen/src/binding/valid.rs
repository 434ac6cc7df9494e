//! The checks: is the user's struct a valid binding of the procedure?
//! Each check records a spanned error and goes on, so every mistake is
//! reported in one build; what did match is kept for the expansion.
//!
//! * Bound subset: a field matches the property whose generated Rust ident
//!   equals the field's ident (`device_ids` ↔ `deviceIds`), or whose JSON
//!   name equals it; `#[agent_procedure(rename = "deviceIds")]` names the
//!   property explicitly. serde attributes are ignored: the bound JSON is
//!   built by the generated `to_bound_json`, keyed by the schema's names.
//! * Full input: the struct is sent with serde, so a field matches the
//!   property named by its serde name (`rename`, else the container's
//!   `rename_all` applied to the ident, else the ident). `skip` fields are
//!   ignored, `flatten` is refused, and a field whose serde name is not
//!   among the schema's `properties` is refused whatever
//!   `additionalProperties` says (oRPC's zod objects strip unknown keys, so
//!   the value would be lost).
//! * An optional property may be bound as `T` or `Option<T>`; in the full
//!   input an `Option` of a property that does not admit `null` needs
//!   `skip_serializing_if`, or serde would send `null`.
//! * `overridable(…)` names bound fields only.
//!
//! Field types are not checked here but by rustc, on the user's tokens
//! ([`super::type_check`]).

use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{DeriveInput, Ident};

use super::args::{is_own_attr, own_rename};
use super::serde_attrs::{apply_rename_all, serde_field, serde_rename_all};
use crate::diagnostics::Errors;
use crate::facts::{FactField, ImplInput, ObjectFacts, Role};
use crate::tokens::option_depth;
use crate::types::AdditionalProperties;
use surface_manifest::nearest_paths;

/// A user field matched to a property.
pub(crate) struct Matched<'a> {
    pub(crate) field: &'a syn::Field,
    pub(crate) ident: &'a Ident,
    pub(crate) prop: &'a FactField,
    /// The user's type has one more `Option` than the property's present
    /// value: `None` means "absent".
    pub(crate) wraps_option: bool,
}

/// What the checks accepted: the matched fields in declaration order and
/// the names of the overridable ones.
pub(crate) struct Checked<'a> {
    pub(crate) matched: Vec<Matched<'a>>,
    pub(crate) unlocked: Vec<String>,
}

impl Checked<'_> {
    /// Nothing matched.
    pub(crate) fn none() -> Self {
        Checked {
            matched: Vec::new(),
            unlocked: Vec::new(),
        }
    }
}

/// What the expansion can do after the checks.
pub(crate) enum Outcome<'a> {
    /// The fields that matched (all of them when there is no error).
    Matched(Checked<'a>),
    /// No field can be mapped: the item is not a struct with named fields,
    /// or the input is not an object with `properties`.
    Unmappable,
    /// A generic struct, which cannot carry the impl.
    Generic,
}

/// Runs every check of the user's struct against the facts, recording
/// errors in `errors`.
pub(crate) fn check<'a>(input: &'a ImplInput, errors: &mut Errors) -> Outcome<'a> {
    let request = &input.request;
    let item = &request.item;
    let generic = !item.generics.params.is_empty();
    if generic {
        errors.add(
            item.generics.span(),
            "`#[agent_procedure]` does not support generic structs; bind a concrete struct",
        );
    }
    let fields = struct_fields(item, errors);
    if generic {
        return Outcome::Generic;
    }
    let Some(fields) = fields else {
        return Outcome::Unmappable;
    };
    let Some(object) = &input.facts.input else {
        errors.add(
            request.user_path.span(),
            format!("the input of `{}` is not a JSON object schema with `properties`, so `#[agent_procedure]` cannot map struct fields to it; use the generated `Input` type instead", input.facts.path),
        );
        return Outcome::Unmappable;
    };
    let cx = Cx {
        path: &input.facts.path,
        item,
        object,
    };
    let matched = match request.role {
        Role::Bound => cx.match_bound(&fields, errors),
        Role::Input => cx.match_full(&fields, errors),
    };
    let unlocked = cx.overridable(&request.overridable, &fields, &matched, errors);
    Outcome::Matched(Checked { matched, unlocked })
}

/// The named fields of `item`; an error for a tuple struct, a unit struct
/// or an enum.
fn struct_fields<'a>(item: &'a DeriveInput, errors: &mut Errors) -> Option<Vec<&'a syn::Field>> {
    match &item.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(named),
            ..
        }) => Some(named.named.iter().collect()),
        syn::Data::Struct(_) => {
            errors.add(
                item.ident.span(),
                "`#[agent_procedure]` needs a struct with named fields, one per input property",
            );
            None
        }
        _ => {
            errors.add(
                item.ident.span(),
                "`#[agent_procedure]` applies to a struct with named fields, one per input property",
            );
            None
        }
    }
}

/// What every check needs: the procedure path, the user's struct and the
/// input's facts.
struct Cx<'a> {
    path: &'a str,
    item: &'a DeriveInput,
    object: &'a ObjectFacts,
}

impl<'a> Cx<'a> {
    fn properties_list(&self) -> String {
        properties_list(&self.object.fields)
    }

    fn suggestion(&self, name: &str) -> String {
        suggestion(&self.object.fields, name)
    }

    /// Records that `prop` is matched by `ident` unless another field took
    /// it first (`verb`: "bound" or "declared").
    fn push_unique(
        &self,
        out: &mut Vec<Matched<'a>>,
        matched: Matched<'a>,
        verb: &str,
        errors: &mut Errors,
    ) {
        if let Some(prev) = out.iter().find(|m| m.prop.json == matched.prop.json) {
            errors.add(
                matched.ident.span(),
                format!(
                    "property `{}` of `{}` is {verb} twice (also by field `{}`)",
                    matched.prop.json, self.path, prev.ident
                ),
            );
        } else {
            out.push(matched);
        }
    }

    fn match_bound(&self, fields: &[&'a syn::Field], errors: &mut Errors) -> Vec<Matched<'a>> {
        let mut out = Vec::new();
        for field in fields {
            let Some(ident) = field.ident.as_ref() else {
                continue;
            };
            let Some(prop) = self.bound_property(field, ident, errors) else {
                continue;
            };
            let wraps_option = choose_wrap(prop, &field.ty);
            let matched = Matched {
                field,
                ident,
                prop,
                wraps_option,
            };
            self.push_unique(&mut out, matched, "bound", errors);
        }
        out
    }

    /// The property a bound field names: by `#[agent_procedure(rename)]`,
    /// else by its ident.
    fn bound_property(
        &self,
        field: &syn::Field,
        ident: &Ident,
        errors: &mut Errors,
    ) -> Option<&'a FactField> {
        let (path, fields) = (self.path, &self.object.fields);
        if let Some(lit) = own_rename(field, errors) {
            let found = fields.iter().find(|f| f.json == lit.value());
            if found.is_none() {
                errors.add(
                    lit.span(),
                    format!(
                        "`{path}`'s input has no property `{}`; {}{}",
                        lit.value(),
                        self.properties_list(),
                        self.suggestion(&lit.value())
                    ),
                );
            }
            return found;
        }
        let name = ident.unraw().to_string();
        let found = find_by_name(fields, &name);
        if found.is_none() {
            errors.add(
                ident.span(),
                format!(
                    "bound field `{name}` is not in the input of `{path}`; {}{}",
                    self.properties_list(),
                    self.suggestion(&name)
                ),
            );
        }
        found
    }

    fn match_full(&self, fields: &[&'a syn::Field], errors: &mut Errors) -> Vec<Matched<'a>> {
        let rename_all = serde_rename_all(self.item, errors);
        if let Some((rule, span)) = &rename_all {
            if apply_rename_all(rule, "a_b").is_none() {
                errors.add(*span, format!("unknown serde `rename_all` rule `{rule}`"));
            }
        }
        let rule = rename_all.as_ref().map(|(rule, _)| rule.as_str());
        let mut out = Vec::new();
        for field in fields {
            let Some(ident) = field.ident.as_ref() else {
                continue;
            };
            if let Some(matched) = self.full_field(field, ident, rule, errors) {
                self.push_unique(&mut out, matched, "declared", errors);
            }
        }
        for p in self.object.fields.iter().filter(|p| p.required) {
            if !out.iter().any(|m| m.prop.json == p.json) {
                self.missing_required(p, errors);
            }
        }
        out
    }

    /// One field of a full input, matched by its serde name.
    fn full_field(
        &self,
        field: &'a syn::Field,
        ident: &'a Ident,
        rename_all: Option<&str>,
        errors: &mut Errors,
    ) -> Option<Matched<'a>> {
        for attr in field.attrs.iter().filter(|a| is_own_attr(a)) {
            errors.add(
                attr.span(),
                "a full `input` struct is sent with serde: name the property with `#[serde(rename = \"…\")]` instead of `#[agent_procedure(rename)]`",
            );
        }
        let serde = serde_field(field, errors);
        if let Some(span) = serde.flatten {
            errors.add(
                span,
                "`#[serde(flatten)]` is not supported on an `#[agent_procedure]` input struct: declare each property as its own field",
            );
            return None;
        }
        if serde.skip {
            return None;
        }
        let raw = ident.unraw().to_string();
        let name = match (&serde.rename, rename_all) {
            (Some(r), _) => r.clone(),
            (None, Some(rule)) => apply_rename_all(rule, &raw).unwrap_or(raw.clone()),
            (None, None) => raw.clone(),
        };
        let Some(prop) = self.object.fields.iter().find(|f| f.json == name) else {
            self.not_allowed(ident, &raw, &name, errors);
            return None;
        };
        let wraps_option = choose_wrap(prop, &field.ty);
        if wraps_option && !prop.nullable && !serde.skip_serializing_if {
            errors.add(
                ident.span(),
                format!(
                    "optional property `{}` of `{}` does not admit `null`, but serde writes `None` as `null`: add `#[serde(skip_serializing_if = \"Option::is_none\")]` to field `{raw}`",
                    prop.json, self.path
                ),
            );
        }
        Some(Matched {
            field,
            ident,
            prop,
            wraps_option,
        })
    }

    /// A full-input field whose serde name `name` is not a property.
    fn not_allowed(&self, ident: &Ident, raw: &str, name: &str, errors: &mut Errors) {
        let fields = &self.object.fields;
        let hint = match fields
            .iter()
            .find(|f| f.ident.unraw() == raw || f.ident.unraw() == name)
        {
            Some(p) => format!(
                "; serde names this field `{name}`, but the schema's property is `{}`: add `#[serde(rename = \"{}\")]` (or `#[serde(rename_all = \"camelCase\")]` on the struct)",
                p.json, p.json
            ),
            None => self.suggestion(name),
        };
        let why = match self.object.additional {
            AdditionalProperties::Forbidden => {
                "the schema forbids it (`additionalProperties: false`)"
            }
            _ => "it is not among the schema's `properties` (the server would drop or reject it)",
        };
        errors.add(
            ident.span(),
            format!(
                "`{}` has a property `{name}` that `{}`'s input does not allow: {why}; {}{hint}",
                self.item.ident,
                self.path,
                self.properties_list()
            ),
        );
    }

    fn missing_required(&self, p: &FactField, errors: &mut Errors) {
        let rename = if p.ident.unraw() == p.json {
            String::new()
        } else {
            format!(" with `#[serde(rename = \"{}\")]`", p.json)
        };
        errors.add(
            self.item.ident.span(),
            format!(
                "`{}` lacks the required property `{}` of `{}`'s input: add a field `{}: {}`{rename}",
                self.item.ident,
                p.json,
                self.path,
                p.ident.unraw(),
                p.ty_text,
            ),
        );
    }

    /// The overridable field names that are bound (or are fields whose
    /// own error is already reported); an error for each other entry.
    fn overridable(
        &self,
        overridable: &[Ident],
        fields: &[&syn::Field],
        matched: &[Matched<'_>],
        errors: &mut Errors,
    ) -> Vec<String> {
        let mut unlocked: Vec<String> = Vec::new();
        for ov in overridable {
            let name = ov.unraw().to_string();
            if unlocked.contains(&name) {
                errors.add(
                    ov.span(),
                    format!("`{name}` is listed twice in `overridable(...)`"),
                );
            } else if matched.iter().any(|m| m.ident.unraw() == name)
                || fields
                    .iter()
                    .any(|f| f.ident.as_ref().is_some_and(|i| i.unraw() == name))
            {
                // A field that failed to match has its own error already.
                unlocked.push(name);
            } else {
                self.not_overridable(ov, &name, errors);
            }
        }
        unlocked
    }

    fn not_overridable(&self, ov: &Ident, name: &str, errors: &mut Errors) {
        let (path, item) = (self.path, &self.item.ident);
        let message = match find_by_name(&self.object.fields, name) {
            Some(prop) => format!(
                "overridable field `{name}` is not bound: `{}` is a property of `{path}`, but `{item}` has no field for it; add a field `{}: {}` or remove it from `overridable(...)`",
                prop.json, prop.ident.unraw(), prop.ty_text
            ),
            None => format!(
                "overridable field `{name}` does not exist: it is neither a field of `{item}` nor a property of `{path}`'s input; {}{}",
                self.properties_list(),
                self.suggestion(name)
            ),
        };
        errors.add(ov.span(), message);
    }
}

/// Whether the user's type wraps the property's present value in one more
/// `Option` (an optional property bound as `Option<T>`).
fn choose_wrap(prop: &FactField, ty: &syn::Type) -> bool {
    !prop.required && option_depth(ty) == prop.depth + 1
}

/// `its properties are `a` (field `b`), `c` and `d``.
fn properties_list(fields: &[FactField]) -> String {
    if fields.is_empty() {
        return "it has no properties".into();
    }
    let items: Vec<String> = fields
        .iter()
        .map(|f| {
            let id = f.ident.unraw().to_string();
            if id == f.json {
                format!("`{}`", f.json)
            } else {
                format!("`{}` (field `{id}`)", f.json)
            }
        })
        .collect();
    format!("its properties are {}", join_with(&items, "and"))
}

/// The property whose generated ident, else whose JSON name, is `name`.
fn find_by_name<'a>(fields: &'a [FactField], name: &str) -> Option<&'a FactField> {
    fields
        .iter()
        .find(|f| f.ident.unraw() == name)
        .or_else(|| fields.iter().find(|f| f.json == name))
}

/// `; did you mean `x`?` for the nearest property name or ident, else
/// nothing.
fn suggestion(fields: &[FactField], name: &str) -> String {
    let candidates: Vec<String> = fields
        .iter()
        .flat_map(|f| [f.json.clone(), f.ident.unraw().to_string()])
        .collect();
    let near = nearest_paths(name, candidates.iter().map(String::as_str), 1);
    match near.first() {
        Some(n) => format!("; did you mean `{n}`?"),
        None => String::new(),
    }
}

/// The "unknown procedure path" message: the nearest paths, else the
/// first ten.
pub fn unknown_message(wanted: &str, all: &[String]) -> String {
    let near = nearest_paths(wanted, all.iter().map(String::as_str), 3);
    if let Some((best, others)) = near.split_first() {
        let others = if others.is_empty() {
            String::new()
        } else {
            format!(" (other close paths: {})", list_and(others))
        };
        return format!(
            "no procedure `{wanted}` in the agent manifest; did you mean `{best}`?{others}"
        );
    }
    if all.is_empty() {
        return format!("no procedure `{wanted}` in the agent manifest, which is empty");
    }
    let shown: Vec<&str> = all.iter().take(10).map(String::as_str).collect();
    let more = if all.len() > 10 {
        format!(" and {} more", all.len() - 10)
    } else {
        String::new()
    };
    format!(
        "no procedure `{wanted}` in the agent manifest; its procedures are {}{more}",
        list_and(&shown)
    )
}

fn list_and(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("`{s}`")).collect();
    join_with(&quoted, "and")
}

fn join_with(items: &[String], word: &str) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} {word} {}", items[..n - 1].join(", "), items[n - 1]),
    }
}
