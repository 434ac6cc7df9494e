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

use heck::ToSnakeCase;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use serde_json::Value;
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Token};

use crate::diagnostics::Errors;
use crate::manifest_macro::resolve_manifest_path;
use crate::types::{generate_procedure_types, TypeOptions};
use crate::validator::{validator_tokens, ValidatorOptions};

#[cfg(test)]
mod tests;

/// The largest view-inputs file `view_inputs!` reads, in bytes (1 MiB).
pub const MAX_VIEW_INPUTS_BYTES: usize = 1 << 20;

/// The most entries one `view_inputs!` file may hold.
pub const MAX_VIEW_INPUTS: usize = 256;

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
/// Spanned on the path literal: the path (as for `manifest!`), a file that
/// cannot be read or is over [`MAX_VIEW_INPUTS_BYTES`], and every problem
/// [`expand_view_inputs_text`] finds.
pub fn expand_view_inputs_args(
    args: &ViewInputsArgs,
    manifest_dir: Option<&Path>,
) -> syn::Result<TokenStream> {
    let span = args.path.span();
    let written = args.path.value();
    let file = resolve_manifest_path(&written, manifest_dir, span)?;
    let text = std::fs::read(&file).map_err(|e| {
        syn::Error::new(
            span,
            format!(
                "cannot read the view-inputs file `{written}` (looked for `{}`): {e}; relative paths are resolved against the including crate's root (CARGO_MANIFEST_DIR)",
                file.display()
            ),
        )
    })?;
    if text.len() > MAX_VIEW_INPUTS_BYTES {
        return Err(syn::Error::new(
            span,
            format!(
                "the view-inputs file `{written}` is {} bytes, over the limit of {MAX_VIEW_INPUTS_BYTES}",
                text.len()
            ),
        ));
    }
    let text = String::from_utf8(text).map_err(|_| {
        syn::Error::new(
            span,
            format!("the view-inputs file `{written}` is not UTF-8"),
        )
    })?;
    let canonical = std::fs::canonicalize(&file).unwrap_or(file);
    let crate_path = match &args.crate_path {
        Some(p) => quote!(#p),
        None => quote!(::agent_surface),
    };
    let include = canonical.to_string_lossy().into_owned();
    let items = expand_view_inputs_text(&text, &written, &crate_path, span)?;
    Ok(quote! {
        // Rebuild when the file changes.
        const _: &str = ::core::include_str!(#include);
        #items
    })
}

/// Turns the file's text into the expansion.
///
/// # Errors
/// One combined error spanned at `span`: invalid JSON (line and column), a
/// file that is not an object or holds more than [`MAX_VIEW_INPUTS`]
/// entries, a key that is not an UpperCamelCase identifier, two keys with
/// the same snake_case module, a schema that is not an object schema, and
/// every schema part the generated validator does not support (keyword and
/// JSON Pointer).
pub fn expand_view_inputs_text(
    text: &str,
    shown: &str,
    crate_path: &TokenStream,
    span: Span,
) -> syn::Result<TokenStream> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        syn::Error::new(
            span,
            format!(
                "the view-inputs file `{shown}` is not valid JSON (line {}, column {}): {e}",
                e.line(),
                e.column()
            ),
        )
    })?;
    let Value::Object(entries) = value else {
        return Err(syn::Error::new(
            span,
            format!("the view-inputs file `{shown}` must be a JSON object: {{\"SelectRows\": {{ \"type\": \"object\", … }}, …}}"),
        ));
    };
    if entries.len() > MAX_VIEW_INPUTS {
        return Err(syn::Error::new(
            span,
            format!(
                "the view-inputs file `{shown}` holds {} entries, over the limit of {MAX_VIEW_INPUTS}",
                entries.len()
            ),
        ));
    }
    let mut errors = Errors::default();
    let mut modules: Vec<String> = Vec::new();
    let mut out = TokenStream::new();
    for (name, schema) in &entries {
        if let Some(problem) = key_problem(name) {
            errors.add(span, format!("`{shown}`: the key `{name}` {problem}"));
            continue;
        }
        let module = name.to_snake_case();
        if modules.contains(&module) {
            errors.add(
                span,
                format!("`{shown}`: the key `{name}` gives the module `{module}` a previous key gave too; rename one of them"),
            );
            continue;
        }
        modules.push(module.clone());
        if let Some(problem) = schema_problem(schema) {
            errors.add(span, format!("`{shown}`: the schema of `{name}` {problem}"));
            continue;
        }
        match entry_tokens(name, &module, schema, crate_path) {
            Ok(tokens) => out.extend(tokens),
            Err(parts) => {
                for part in parts {
                    errors.add(
                        span,
                        format!(
                            "`{shown}`: the schema of `{name}` cannot be checked by a generated validator: {part}; change the schema"
                        ),
                    );
                }
            }
        }
    }
    errors.finish().map(|()| out)
}

/// Why `name` cannot name a generated type, if it cannot.
fn key_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let first_upper = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    if !first_upper || !chars.all(|c| c.is_ascii_alphanumeric()) {
        return Some(
            "is not an UpperCamelCase Rust type name (ASCII letters and digits, starting with an uppercase letter, e.g. `SelectRows`)".to_string(),
        );
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

fn entry_tokens(
    name: &str,
    module: &str,
    schema: &Value,
    crate_path: &TokenStream,
) -> Result<TokenStream, Vec<crate::validator::Unsupported>> {
    let validator = validator_tokens(
        schema,
        &ValidatorOptions {
            crate_path: crate_path.clone(),
        },
    )?;
    let types = generate_procedure_types(
        schema,
        None,
        &TypeOptions {
            crate_path: crate_path.clone(),
            ..TypeOptions::default()
        },
    );
    let items = types.items;
    let text = canonical_text(schema);
    let module = format_ident!("{module}");
    let ty = format_ident!("{name}");
    let module_doc =
        format!("The generated input type of `{name}` and its helper types (`view_inputs!`).");
    Ok(quote! {
        #[doc = #module_doc]
        #[allow(clippy::all, missing_docs, dead_code)]
        pub mod #module {
            #items
        }
        pub use self::#module::Input as #ty;
        impl #crate_path::ViewInput for #module::Input {
            const INPUT_SCHEMA_JSON: &'static str = #text;
            const VALIDATOR: #crate_path::__private::validation::Validator = #validator;
        }
    })
}

/// The schema as the agent sees it: compact JSON of the parsed value.
fn canonical_text(schema: &Value) -> String {
    serde_json::to_string(schema).unwrap_or_default()
}
