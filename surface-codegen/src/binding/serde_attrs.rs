//! serde's attributes, as far as a full-input struct's JSON names depend
//! on them: `#[serde(rename = "…")]`, `skip`/`skip_serializing`, `flatten`
//! and `skip_serializing_if` on fields, `rename_all` on the struct. Every
//! other serde option is skipped over; a malformed one is reported.
//!
//! One serde attribute is also written: when the struct derives serde's
//! `Serialize` or `Deserialize` and names no `crate`, the re-emitted struct
//! gets `#[serde(crate = "api::__agent_surface_private::serde")]`
//! ([`name_facade_serde`]), so the derive works in a crate whose only
//! dependency is `agent-surface` (README, "Install and features").

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{DeriveInput, LitStr, Token};

use crate::diagnostics::Errors;
use crate::types::names::snake_to_pascal;

/// serde's naming of one field, as far as `#[agent_procedure]` needs it.
#[derive(Default)]
pub(crate) struct SerdeField {
    /// `rename = "…"` or `rename(serialize = "…")`.
    pub(crate) rename: Option<String>,
    /// `skip` or `skip_serializing`: the field is never sent.
    pub(crate) skip: bool,
    /// Where `flatten` was written.
    pub(crate) flatten: Option<Span>,
    /// `skip_serializing_if = "…"` is present.
    pub(crate) skip_serializing_if: bool,
}

/// Skips the value of an option this crate does not interpret
/// (`= expr` or `(…)`).
pub(crate) fn skip_meta_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// The string of `rename = "…"`, or of the `serialize = "…"` entry of
/// `rename(serialize = "…", deserialize = "…")` (what is sent), with its
/// span.
fn serialize_name(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse::<LitStr>()?));
    }
    let mut out = None;
    meta.parse_nested_meta(|inner| {
        let lit = inner.value()?.parse::<LitStr>()?;
        if inner.path.is_ident("serialize") {
            out = Some(lit);
        }
        Ok(())
    })?;
    Ok(out)
}

/// The serde attributes of `field`.
pub(crate) fn serde_field(field: &syn::Field, errors: &mut Errors) -> SerdeField {
    let mut out = SerdeField::default();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if let Some(lit) = serialize_name(&meta)? {
                    out.rename = Some(lit.value());
                }
            } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_serializing") {
                out.skip = true;
            } else if meta.path.is_ident("flatten") {
                out.flatten = Some(meta.path.span());
            } else {
                out.skip_serializing_if |= meta.path.is_ident("skip_serializing_if");
                skip_meta_value(&meta)?;
            }
            Ok(())
        });
        errors.take(result);
    }
    out
}

/// The struct's `#[serde(rename_all = "…")]` rule and where it was
/// written.
pub(crate) fn serde_rename_all(item: &DeriveInput, errors: &mut Errors) -> Option<(String, Span)> {
    let mut out = None;
    for attr in item.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                if let Some(lit) = serialize_name(&meta)? {
                    out = Some((lit.value(), lit.span()));
                }
            } else {
                skip_meta_value(&meta)?;
            }
            Ok(())
        });
        errors.take(result);
    }
    out
}

/// Adds `#[serde(crate = "<api>::__agent_surface_private::serde")]` after
/// the last `#[derive(…)]` that names `Serialize` or `Deserialize`, unless
/// a `#[serde(crate = …)]` is already there; `api` is the path the user
/// wrote as the attribute's first argument. Derives of other traits are
/// left alone.
pub(crate) fn name_facade_serde(item: &mut DeriveInput, api: &syn::Path) {
    let Some(last) = item.attrs.iter().rposition(derives_serde) else {
        return;
    };
    if item.attrs.iter().any(names_serde_crate) {
        return;
    }
    let api = quote::quote!(#api).to_string().replace(' ', "");
    let path = format!("{api}::{}::serde", crate::facts::PRIVATE_ALIAS);
    let attr: syn::Attribute = syn::parse_quote!(#[serde(crate = #path)]);
    item.attrs.insert(last + 1, attr);
}

/// `#[derive(…)]` naming a path whose last segment is `Serialize` or
/// `Deserialize`.
fn derives_serde(attr: &syn::Attribute) -> bool {
    if !attr.path().is_ident("derive") {
        return false;
    }
    let mut found = false;
    let _ = attr.parse_nested_meta(|meta| {
        let last = meta.path.segments.last().map(|s| s.ident.to_string());
        found |= matches!(last.as_deref(), Some("Serialize" | "Deserialize"));
        Ok(())
    });
    found
}

/// `#[serde(…, crate = "…", …)]`.
fn names_serde_crate(attr: &syn::Attribute) -> bool {
    if !attr.path().is_ident("serde") {
        return false;
    }
    let mut found = false;
    let _ = attr.parse_nested_meta(|meta| {
        found |= meta.path.is_ident("crate");
        skip_meta_value(&meta)
    });
    found
}

/// serde's `rename_all` rule applied to a snake_case field name, as
/// serde_derive does it; `None` for a rule serde does not know.
pub fn apply_rename_all(rule: &str, field: &str) -> Option<String> {
    Some(match rule {
        "lowercase" | "snake_case" => field.to_string(),
        "UPPERCASE" | "SCREAMING_SNAKE_CASE" => field.to_ascii_uppercase(),
        "PascalCase" => snake_to_pascal(field),
        "camelCase" => {
            let pascal = snake_to_pascal(field);
            let mut chars = pascal.chars();
            match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect(),
                None => String::new(),
            }
        }
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.to_ascii_uppercase().replace('_', "-"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_all_rules() {
        assert_eq!(
            apply_rename_all("camelCase", "device_ids").unwrap(),
            "deviceIds"
        );
        assert_eq!(
            apply_rename_all("PascalCase", "device_ids").unwrap(),
            "DeviceIds"
        );
        assert_eq!(
            apply_rename_all("kebab-case", "device_ids").unwrap(),
            "device-ids"
        );
        assert_eq!(
            apply_rename_all("SCREAMING_SNAKE_CASE", "a_b").unwrap(),
            "A_B"
        );
        assert!(apply_rename_all("Title", "a").is_none());
    }

    #[test]
    fn serde_derives_get_the_facade_crate_after_the_last_serde_derive() {
        let api: syn::Path = syn::parse_quote!(crate::api);
        let mut item: DeriveInput = syn::parse_quote! {
            #[derive(Debug)]
            #[derive(serde::Serialize, Clone)]
            #[serde(rename_all = "camelCase")]
            struct A { a: u8 }
        };
        name_facade_serde(&mut item, &api);
        let attrs: Vec<String> = item
            .attrs
            .iter()
            .map(|a| quote::quote!(#a).to_string())
            .collect();
        assert_eq!(
            attrs,
            [
                "# [derive (Debug)]",
                "# [derive (serde :: Serialize , Clone)]",
                "# [serde (crate = \"crate::api::__agent_surface_private::serde\")]",
                "# [serde (rename_all = \"camelCase\")]",
            ]
        );
    }

    #[test]
    fn an_explicit_crate_or_no_serde_derive_is_left_alone() {
        let api: syn::Path = syn::parse_quote!(api);
        let mut item: DeriveInput = syn::parse_quote! {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields, crate = "my_serde")]
            struct A { a: u8 }
        };
        let before = item.clone();
        name_facade_serde(&mut item, &api);
        assert_eq!(item, before);
        let mut item: DeriveInput = syn::parse_quote! {
            #[derive(Debug, Clone)]
            struct B { b: u8 }
        };
        let before = item.clone();
        name_facade_serde(&mut item, &api);
        assert_eq!(item, before);
    }

    #[test]
    fn serde_field_reads_names_and_skips() {
        let field: syn::Field = syn::parse_quote! {
            #[serde(default, rename(serialize = "out", deserialize = "in"))]
            #[serde(skip_serializing_if = "Option::is_none", with = "x")]
            a: Option<u8>
        };
        let mut errors = Errors::default();
        let serde = serde_field(&field, &mut errors);
        assert!(errors.is_empty());
        assert_eq!(serde.rename.as_deref(), Some("out"));
        assert!(serde.skip_serializing_if && !serde.skip && serde.flatten.is_none());
    }
}
