//! `view_inputs!`: the input types of view capabilities and their
//! validators, generated at compile time from JSON Schemas by the same
//! generator as `manifest!`'s inputs (docs/codegen.md, "`view_inputs!`"),
//! so a page registers view capabilities without the runtime schema
//! compiler (feature `dynamic`), and the schema the agent sees is the one
//! the validator was generated from.
//!
//! The file is one JSON object: `{ "SelectRows": <schema>, … }`. For each
//! entry the expansion holds a module named after the key in snake_case
//! (`select_rows`) with the generated `Input` type and its helper types, a
//! re-export of `Input` under the key's name, and
//! `impl ViewInput for SelectRows` with the schema text and the validator.

use std::path::{Path, PathBuf};

use heck::ToUpperCamelCase;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use surface_manifest::{canonical_json, segment_to_ident};
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Token};

use crate::diagnostics::Errors;
use crate::manifest_macro::source::{read_source_file, resolve_source_path, SourceKind};
use crate::manifest_macro::MAX_REPORTED_UNSUPPORTED;
use crate::tokens::{ident_from_source, type_text};
use crate::types::{generate_procedure_types, TypeOptions};
use crate::validator::{validator_tokens, Unsupported, ValidatorOptions};

#[cfg(test)]
mod tests;

/// The largest view-inputs file `view_inputs!` reads, in bytes (1 MiB; a
/// longer file is refused without being read whole).
pub const MAX_VIEW_INPUTS_BYTES: usize = 1 << 20;

/// The most entries one `view_inputs!` file may hold (each is a module of
/// the invoking one).
pub const MAX_VIEW_INPUTS: usize = 256;

/// `view_inputs!`'s file, for the messages shared with `manifest!`.
const VIEW_INPUTS: SourceKind = SourceKind {
    what: "view-inputs file",
    path_name: "view-inputs",
    macro_name: "`view_inputs!`",
    example: "`view_inputs!(\"view-inputs.json\")`",
};

/// The arguments: the file path and an optional `crate = path`.
pub struct ViewInputsArgs {
    /// The path literal (relative to `CARGO_MANIFEST_DIR`).
    pub path: LitStr,
    /// `crate = path`: how generated code names the facade.
    pub crate_path: Option<syn::Path>,
}

impl Parse for ViewInputsArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the view-inputs file as a string literal: `view_inputs!(\"view-inputs.json\")`",
            )
        })?;
        let mut crate_path = None;
        while input.parse::<Token![,]>().is_ok() {
            if input.is_empty() {
                break;
            }
            let key: syn::Ident = input.call(syn::ext::IdentExt::parse_any)?;
            if key != "crate" {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown `view_inputs!` argument `{key}`; the only one is `crate = path`"
                    ),
                ));
            }
            if crate_path.is_some() {
                return Err(syn::Error::new(
                    key.span(),
                    "`crate = path` is given twice; keep one",
                ));
            }
            input.parse::<Token![=]>()?;
            crate_path = Some(input.parse()?);
        }
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the `view_inputs!` arguments"));
        }
        Ok(ViewInputsArgs { path, crate_path })
    }
}

/// The `view_inputs!` entry point: every error becomes a `compile_error!`.
pub fn expand_view_inputs(input: TokenStream) -> TokenStream {
    let args: ViewInputsArgs = match syn::parse2(input) {
        Ok(args) => args,
        Err(e) => return e.to_compile_error(),
    };
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    expand_view_inputs_args(&args, manifest_dir.as_deref()).unwrap_or_else(|e| e.to_compile_error())
}

/// [`expand_view_inputs`] with the crate root given explicitly.
///
/// # Errors
/// Spanned on the path literal: the path (the rules of `manifest!`'s: an
/// empty or absolute path), a file that cannot be read, is not UTF-8 or is
/// over [`MAX_VIEW_INPUTS_BYTES`], and every problem
/// [`expand_view_inputs_text`] finds.
pub fn expand_view_inputs_args(
    args: &ViewInputsArgs,
    manifest_dir: Option<&Path>,
) -> syn::Result<TokenStream> {
    let span = args.path.span();
    let written = args.path.value();
    let file = resolve_source_path(&written, manifest_dir, span, VIEW_INPUTS)?;
    let (text, canonical) = read_source_file(
        file,
        &written,
        span,
        VIEW_INPUTS,
        Some(MAX_VIEW_INPUTS_BYTES),
    )?;
    let crate_path = match &args.crate_path {
        Some(p) => quote!(#p),
        None => quote!(::agent_surface),
    };
    let include = canonical.to_string_lossy().into_owned();
    let items = expand_view_inputs_text(&text, &written, &crate_path, span)?;
    Ok(quote! {
        // The file's text, which also makes rustc rebuild the crate when
        // the file changes (as `manifest!`'s `MANIFEST_JSON`).
        const _: &str = ::core::include_str!(#include);
        #items
    })
}

/// Turns the file's text into the expansion.
///
/// # Errors
/// One combined error spanned at `span`: invalid JSON (line and column), a
/// file that is not an object or holds more than [`MAX_VIEW_INPUTS`]
/// entries, a key given twice, a key that is not an UpperCamelCase
/// identifier, two keys with the same snake_case module, a schema that is
/// not an object schema or gives no struct or enum, and every schema part
/// the generated validator does not support (keyword and JSON Pointer; at
/// most [`MAX_REPORTED_UNSUPPORTED`], then a count).
pub fn expand_view_inputs_text(
    text: &str,
    shown: &str,
    crate_path: &TokenStream,
    span: Span,
) -> syn::Result<TokenStream> {
    let json_error = |e: serde_json::Error| {
        syn::Error::new(
            span,
            format!(
                "the view-inputs file `{shown}` is not valid JSON (line {}, column {}): {e}",
                e.line(),
                e.column()
            ),
        )
    };
    let value: Value = serde_json::from_str(text).map_err(json_error)?;
    if !value.is_object() {
        return Err(syn::Error::new(
            span,
            format!("the view-inputs file `{shown}` must be a JSON object: {{\"SelectRows\": {{ \"type\": \"object\", … }}, …}}"),
        ));
    }
    drop(value);
    // Again, in the order written and with every key: serde_json's `Map`
    // keeps only the last of two equal keys.
    let Entries(entries) = serde_json::from_str(text).map_err(json_error)?;
    if entries.len() > MAX_VIEW_INPUTS {
        return Err(syn::Error::new(
            span,
            format!(
                "the view-inputs file `{shown}` holds {} entries, over the limit of {MAX_VIEW_INPUTS}; split it into several files",
                entries.len()
            ),
        ));
    }
    let mut errors = Errors::default();
    let mut names: Vec<&str> = Vec::new();
    let mut modules: Vec<(String, &str)> = Vec::new();
    let mut unsupported: Vec<(&str, Unsupported)> = Vec::new();
    let mut out = TokenStream::new();
    for (name, schema) in &entries {
        if names.contains(&name.as_str()) {
            errors.add(
                span,
                format!("`{shown}`: the key `{name}` is written more than once; keep one (a JSON reader would silently keep only the last)"),
            );
            continue;
        }
        names.push(name);
        if let Some(problem) = key_problem(name) {
            errors.add(span, format!("`{shown}`: the key `{name}` {problem}"));
            continue;
        }
        let module = match segment_to_ident(name) {
            Ok(module) => module,
            Err(e) => {
                errors.add(
                    span,
                    format!("`{shown}`: the key `{name}` gives no module name: {e}"),
                );
                continue;
            }
        };
        if let Some((_, other)) = modules.iter().find(|(m, _)| *m == module) {
            errors.add(
                span,
                format!("`{shown}`: the keys `{other}` and `{name}` both give the module `{module}`; rename one of them"),
            );
            continue;
        }
        modules.push((module.clone(), name));
        if let Some(problem) = schema_problem(schema) {
            errors.add(span, format!("`{shown}`: the schema of `{name}` {problem}"));
            continue;
        }
        match entry_tokens(name, &module, schema, crate_path, span) {
            Ok(tokens) => out.extend(tokens),
            Err(EntryError::Unsupported(parts)) => {
                unsupported.extend(parts.into_iter().map(|part| (name.as_str(), part)));
            }
            Err(EntryError::NotNominal(ty)) => errors.add(
                span,
                format!(
                    "`{shown}`: the schema of `{name}` gives no struct of named arguments (its generated type would be `{ty}`, which cannot implement `ViewInput`); declare the arguments in `properties` (`\"properties\": {{}}` for a capability that takes none)"
                ),
            ),
        }
    }
    let total = unsupported.len();
    for (name, part) in unsupported.into_iter().take(MAX_REPORTED_UNSUPPORTED) {
        errors.add(
            span,
            format!(
                "`{shown}`: the schema of `{name}` cannot be checked by a generated validator: {part}; change the schema"
            ),
        );
    }
    if total > MAX_REPORTED_UNSUPPORTED {
        errors.add(
            span,
            format!(
                "`{shown}`: … and {} more schema parts the generated validator does not support",
                total - MAX_REPORTED_UNSUPPORTED
            ),
        );
    }
    errors.finish().map(|()| out)
}

/// The entries of the file's object in the order written, a key given
/// twice included.
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object of view input schemas")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: Value = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

/// Why `name` cannot name a generated type, if it cannot, with the fix.
fn key_problem(name: &str) -> Option<String> {
    let plain = |name: &str| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_uppercase())
            && chars.all(|c| c.is_ascii_alphanumeric())
    };
    if !plain(name) {
        let suggestion = name.to_upper_camel_case();
        let fix = if plain(&suggestion) && suggestion != "Self" {
            format!("; write it as `{suggestion}`")
        } else {
            String::new()
        };
        return Some(format!(
            "is not an UpperCamelCase Rust type name (ASCII letters and digits, starting with an uppercase letter, e.g. `SelectRows`){fix}"
        ));
    }
    if name == "Self" {
        return Some("is a Rust keyword; choose another type name".to_string());
    }
    None
}

/// Why `schema` is not a view capability's input schema, if it is not:
/// an object schema (`"type": "object"`) whose `properties`, if any, is an
/// object.
fn schema_problem(schema: &Value) -> Option<String> {
    let Some(object) = schema.as_object() else {
        return Some("must be a JSON Schema object, `{\"type\": \"object\", …}`".to_string());
    };
    if object.get("type") != Some(&Value::String("object".into())) {
        return Some(
            "must have `\"type\": \"object\"`: a view capability's input is an object of named arguments".to_string(),
        );
    }
    if object.get("properties").is_some_and(|p| !p.is_object()) {
        return Some("has a `properties` that is not an object".to_string());
    }
    None
}

/// Why an entry generates nothing.
enum EntryError {
    /// The schema parts the generated validator does not support.
    Unsupported(Vec<Unsupported>),
    /// The generated `Input` is no struct or enum of the module but this
    /// type (a map, `serde_json::Value`), for which the invoking crate
    /// cannot implement `ViewInput`.
    NotNominal(String),
}

fn entry_tokens(
    name: &str,
    module: &str,
    schema: &Value,
    crate_path: &TokenStream,
    span: Span,
) -> Result<TokenStream, EntryError> {
    let validator = validator_tokens(
        schema,
        &ValidatorOptions {
            crate_path: crate_path.clone(),
        },
    )
    .map_err(EntryError::Unsupported)?;
    let types = generate_procedure_types(
        schema,
        None,
        &TypeOptions {
            crate_path: crate_path.clone(),
            ..TypeOptions::default()
        },
    );
    let items = input_items(types.items, crate_path).map_err(EntryError::NotNominal)?;
    let text = canonical_json(schema);
    let module = ident_from_source(module, span);
    let ty = ident_from_source(name, span);
    let module_doc = format!(
        "The generated input type of `{name}` (re-exported as `{name}`) and its helper types (`view_inputs!`)."
    );
    Ok(quote! {
        #[doc = #module_doc]
        #[allow(clippy::all, missing_docs, dead_code)]
        pub mod #module {
            #(#items)*
        }
        pub use self::#module::Input as #ty;
        impl #crate_path::ViewInput for #module::Input {
            const INPUT_SCHEMA_JSON: &'static str = #text;
            const VALIDATOR: #crate_path::__private::validation::Validator = #validator;
        }
    })
}

/// The generated items of one input schema without the `Output` alias
/// (a view capability declares no output), when `Input` is a struct or an
/// enum of the module, directly or through aliases of the module.
///
/// # Errors
/// The type `Input` stands for otherwise (readable text), or the items'
/// text when they do not parse (never for the generator's output).
fn input_items(items: TokenStream, crate_path: &TokenStream) -> Result<Vec<syn::Item>, String> {
    let file: syn::File = syn::parse2(items.clone()).map_err(|_| type_text(&items))?;
    let items: Vec<syn::Item> = file
        .items
        .into_iter()
        .filter(|item| !matches!(item, syn::Item::Type(alias) if alias.ident == "Output"))
        .collect();
    let find = |name: &str| {
        items.iter().find(|item| match item {
            syn::Item::Struct(s) => s.ident == name,
            syn::Item::Enum(e) => e.ident == name,
            syn::Item::Type(t) => t.ident == name,
            _ => false,
        })
    };
    let mut name = "Input".to_string();
    // Each step follows one alias: at most as many as there are items.
    for _ in 0..=items.len() {
        match find(&name) {
            Some(syn::Item::Struct(_) | syn::Item::Enum(_)) => return Ok(items),
            Some(syn::Item::Type(alias)) => match &*alias.ty {
                syn::Type::Path(path) if path.qself.is_none() && path.path.segments.len() == 1 => {
                    name = path.path.segments[0].ident.to_string();
                }
                other => return Err(readable_type(other, crate_path)),
            },
            _ => break,
        }
    }
    Err(name)
}

/// `ty` as a person would write it in the invoking module: without the
/// facade's private path and `::std::collections::`.
fn readable_type(ty: &syn::Type, crate_path: &TokenStream) -> String {
    let private = format!("{}::__private::", type_text(crate_path));
    type_text(&quote!(#ty))
        .replace(&private, "")
        .replace("::std::collections::", "")
        .replace(',', ", ")
        .replace(",  ", ", ")
}
