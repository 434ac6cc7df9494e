//! The validators `manifest!` generates for every input schema (and every
//! declared output schema), or the compile errors that say which keyword
//! at which JSON Pointer the generator does not support
//! (docs/validation.md, "Generated validators").

use std::collections::BTreeMap;

use proc_macro2::{Span, TokenStream};
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
/// [`ValidationMode::Runtime`] none are generated.
///
/// # Errors
/// One error per unsupported schema part (at most
/// [`MAX_REPORTED_UNSUPPORTED`], then a count), spanned at `span`.
pub(crate) fn generate(
    manifest: &AgentManifest,
    options: &ExpandOptions,
    span: Span,
) -> syn::Result<BTreeMap<String, ProcedureValidators>> {
    let mut out = BTreeMap::new();
    if options.validation == ValidationMode::Runtime {
        return Ok(out);
    }
    let validator_options = ValidatorOptions {
        crate_path: options.crate_path.clone(),
    };
    let mut unsupported: Vec<(&str, &str, Unsupported)> = Vec::new();
    for (path, tool) in &manifest.tools {
        let mut generated = ProcedureValidators::default();
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

/// "the input schema of `a.b` …: `keyword` at `/pointer`: reason; …".
fn unsupported_message(path: &str, which: &str, part: &Unsupported) -> String {
    format!(
        "the {which} schema of `{path}` cannot be checked by a generated validator: {part}; \
         change the schema, or validate this manifest's schemas at run time with \
         `manifest!(\"…\", validation = runtime)` (needs the `dynamic` feature)"
    )
}
