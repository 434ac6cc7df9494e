//! The validators `manifest!` generates for every input schema (and every
//! declared output schema), or the compile errors that say which keyword
//! at which JSON Pointer the generator does not support
//! (docs/validation.md, "Generated validators").

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Span, TokenStream};
use surface_manifest::nearest_paths;
use surface_manifest::AgentManifest;

use super::{ExpandOptions, ValidationMode};
use crate::diagnostics::Errors;
use crate::validator::{validator_tokens, Unsupported, ValidatorOptions};

/// The most unsupported schema parts one `manifest!` reports (each its own
/// compile error); the rest are counted in a last error.
pub const MAX_REPORTED_UNSUPPORTED: usize = 32;

/// The generated validators of one procedure: expressions of type
/// `Validator` (`None`: validated at run time, or no output schema).
#[derive(Default)]
pub(crate) struct ProcedureValidators {
    pub(crate) input: Option<TokenStream>,
    pub(crate) output: Option<TokenStream>,
}

/// Every procedure's validators, by path; with
/// [`ValidationMode::Runtime`] none are generated, and none for the
/// procedures listed in `runtime_validation = […]`.
///
/// # Errors
/// One error per unsupported schema part (at most
/// [`MAX_REPORTED_UNSUPPORTED`], then a count), spanned at `span`; one per
/// `runtime_validation` entry that names no procedure of the manifest (or
/// is repeated, or is given with `validation = runtime`), spanned at the
/// entry.
pub(crate) fn generate(
    manifest: &AgentManifest,
    options: &ExpandOptions,
    span: Span,
) -> syn::Result<BTreeMap<String, ProcedureValidators>> {
    let mut out = BTreeMap::new();
    let runtime = runtime_validated(manifest, options)?;
    if options.validation == ValidationMode::Runtime {
        return Ok(out);
    }
    let validator_options = ValidatorOptions {
        crate_path: options.crate_path.clone(),
    };
    let mut unsupported: Vec<(&str, &str, Unsupported)> = Vec::new();
    for (path, tool) in &manifest.tools {
        let mut generated = ProcedureValidators::default();
        if runtime.contains(path.as_str()) {
            out.insert(path.clone(), generated);
            continue;
        }
        match validator_tokens(&tool.input_schema, &validator_options) {
            Ok(tokens) => generated.input = Some(tokens),
            Err(parts) => {
                unsupported.extend(parts.into_iter().map(|u| (path.as_str(), "input", u)))
            }
        }
        if let Some(schema) = &tool.output_schema {
            match validator_tokens(schema, &validator_options) {
                Ok(tokens) => generated.output = Some(tokens),
                Err(parts) => {
                    unsupported.extend(parts.into_iter().map(|u| (path.as_str(), "output", u)))
                }
            }
        }
        out.insert(path.clone(), generated);
    }
    if unsupported.is_empty() {
        return Ok(out);
    }
    let mut errors = Errors::default();
    let total = unsupported.len();
    for (path, which, part) in unsupported.into_iter().take(MAX_REPORTED_UNSUPPORTED) {
        errors.add(span, unsupported_message(path, which, &part));
    }
    if total > MAX_REPORTED_UNSUPPORTED {
        errors.add(
            span,
            format!(
                "… and {} more schema parts the generated validator does not support",
                total - MAX_REPORTED_UNSUPPORTED
            ),
        );
    }
    errors.finish().map(|()| out)
}

/// The paths of `runtime_validation = […]`, each checked against the
/// manifest.
///
/// # Errors
/// Every entry that names no procedure (with the nearest paths), is given
/// twice, or comes with `validation = runtime` (which already covers it).
fn runtime_validated(
    manifest: &AgentManifest,
    options: &ExpandOptions,
) -> syn::Result<BTreeSet<String>> {
    let mut errors = Errors::default();
    let mut paths = BTreeSet::new();
    for lit in &options.runtime_validation {
        let path = lit.value();
        if options.validation == ValidationMode::Runtime {
            errors.add(
                lit.span(),
                format!("`{path}` is listed in `runtime_validation`, but `validation = runtime` already validates every procedure at run time; remove one of them"),
            );
        } else if !manifest.tools.contains_key(&path) {
            let near = nearest_paths(&path, manifest.tools.keys().map(String::as_str), 1);
            let hint = match near.first() {
                Some(best) => format!("; did you mean `{best}`?"),
                None => String::new(),
            };
            errors.add(
                lit.span(),
                format!("`runtime_validation` lists `{path}`, which is not a procedure of this manifest{hint}"),
            );
        } else if !paths.insert(path.clone()) {
            errors.add(
                lit.span(),
                format!("`{path}` is listed twice in `runtime_validation`"),
            );
        }
    }
    errors.finish().map(|()| paths)
}

/// "the input schema of `a.b` …: `keyword` at `/pointer`: reason; …".
fn unsupported_message(path: &str, which: &str, part: &Unsupported) -> String {
    format!(
        "the {which} schema of `{path}` cannot be checked by a generated validator: {part}; \
         change the schema, or validate this procedure at run time with \
         `manifest!(\"…\", runtime_validation = [\"{path}\"])` (or the whole manifest with \
         `validation = runtime`; both need the `dynamic` feature)"
    )
}
