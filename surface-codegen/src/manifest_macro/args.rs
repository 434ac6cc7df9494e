//! What the user wrote: `manifest!("path.json")`, optionally followed by
//! `crate = some::path`, `validation = runtime`, `runtime_validation =
//! ["a.b", …]` and `typed_formats = […]`. Every malformed, unknown
//! or repeated argument is reported in one build.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::{LitStr, Token};

use super::ValidationMode;
use crate::diagnostics::Errors;
use crate::tokens::{split_arguments, Argument};
use crate::types::TypedFormats;

/// The arguments of `manifest!("path.json")` / `manifest!("path.json",
/// crate = some::path, validation = runtime)`.
#[derive(Clone, Debug)]
pub struct ManifestArgs {
    /// The manifest path as written (relative to `CARGO_MANIFEST_DIR`).
    pub path: LitStr,
    /// Path of the facade crate generated code names, default
    /// `::agent_surface`.
    pub crate_path: Option<syn::Path>,
    /// `validation = generated` (the default) or `validation = runtime`.
    pub validation: ValidationMode,
    /// `typed_formats = [uuid, chrono, url]` (none by default).
    pub typed_formats: TypedFormats,
    /// `runtime_validation = ["a.b", …]`: procedures validated at run time
    /// although the rest of the manifest has generated validators (none by
    /// default).
    pub runtime_validation: Vec<LitStr>,
}

/// What an unknown argument's message lists.
const OPTIONS: &str =
    "the options are `crate = path::to::agent_surface`, `validation = runtime`, `runtime_validation = [\"procedure.path\", …]` and `typed_formats = [uuid, chrono, url]`";

impl ManifestArgs {
    /// Parses the arguments, recording every problem in `errors`; `None`
    /// when the path literal is unusable.
    pub(crate) fn parse_collecting(tokens: TokenStream, errors: &mut Errors) -> Option<Self> {
        let mut arguments = split_arguments(tokens).into_iter();
        let Some(first) = arguments.next() else {
            errors.add(
                Span::call_site(),
                "expected the manifest path: `manifest!(\"relative/path/to/agent.manifest.json\")`",
            );
            return None;
        };
        let path = errors.take(
            <LitStr as Parse>::parse
                .parse2(first.tokens)
                .map_err(|e| syn::Error::new(e.span(), "expected the manifest path as a string literal, relative to the crate root: `manifest!(\"agent.manifest.json\")`")),
        );
        let mut crate_path: Option<syn::Path> = None;
        let mut validation = ValidationMode::default();
        let mut typed_formats = TypedFormats::default();
        let mut runtime_validation = Vec::new();
        let (mut seen_crate, mut seen_validation, mut seen_typed) = (false, false, false);
        let mut seen_runtime = false;
        for arg in arguments {
            let Some((key, value)) = option_key(arg, errors) else {
                continue;
            };
            if key == "crate" {
                let path = crate_value(value, errors);
                if seen_crate {
                    errors.add(key.span(), "`crate` is given twice");
                } else {
                    seen_crate = true;
                    crate_path = path;
                }
            } else if key == "validation" {
                let mode = validation_value(value, errors);
                if seen_validation {
                    errors.add(key.span(), "`validation` is given twice");
                } else {
                    seen_validation = true;
                    validation = mode.unwrap_or_default();
                }
            } else if key == "runtime_validation" {
                let paths = runtime_validation_value(value, errors);
                if seen_runtime {
                    errors.add(key.span(), "`runtime_validation` is given twice");
                } else {
                    seen_runtime = true;
                    runtime_validation = paths;
                }
            } else if key == "typed_formats" {
                let formats = typed_formats_value(value, errors);
                if seen_typed {
                    errors.add(key.span(), "`typed_formats` is given twice");
                } else {
                    seen_typed = true;
                    typed_formats = formats;
                }
            } else {
                errors.add(
                    key.span(),
                    format!("unknown `manifest!` argument `{key}`; {OPTIONS}"),
                );
            }
        }
        Some(ManifestArgs {
            path: path?,
            crate_path,
            validation,
            typed_formats,
            runtime_validation,
        })
    }
}

/// The key of one `key = value` argument and the tokens after it (`None`
/// when there is no key, which is reported).
fn option_key(arg: Argument, errors: &mut Errors) -> Option<(proc_macro2::Ident, TokenStream)> {
    let mut trees = arg.tokens.into_iter();
    match trees.next() {
        Some(TokenTree::Ident(key)) => Some((key.unraw(), trees.collect())),
        Some(other) => {
            errors.add(
                other.span(),
                format!("unknown `manifest!` argument `{other}`; {OPTIONS}"),
            );
            None
        }
        None => {
            errors.add(arg.span, "an empty argument; remove the extra comma");
            None
        }
    }
}

/// `= path` of `crate = path` (`None` when malformed, which is reported).
fn crate_value(value: TokenStream, errors: &mut Errors) -> Option<syn::Path> {
    let parser = |input: ParseStream<'_>| {
        input.parse::<Token![=]>()?;
        input.call(syn::Path::parse_mod_style)
    };
    errors.take(parser.parse2(value).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected `crate = path::to::agent_surface`, the path generated code names the facade by",
        )
    }))
}

/// `= runtime` / `= generated` of `validation = …` (`None` when malformed,
/// which is reported).
fn validation_value(value: TokenStream, errors: &mut Errors) -> Option<ValidationMode> {
    let parser = |input: ParseStream<'_>| {
        input.parse::<Token![=]>()?;
        let mode = input.call(proc_macro2::Ident::parse_any)?;
        let parsed = if mode == "runtime" {
            ValidationMode::Runtime
        } else if mode == "generated" {
            ValidationMode::Generated
        } else {
            return Err(syn::Error::new(mode.span(), "x"));
        };
        if !input.is_empty() {
            return Err(input.error("x"));
        }
        Ok(parsed)
    };
    errors.take(parser.parse2(value).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected `validation = runtime` (validate this manifest's schemas at run time, with the `dynamic` feature) or `validation = generated` (the default)",
        )
    }))
}

/// `= ["a.b", …]` of `runtime_validation = …`: the procedure paths as
/// string literals (empty when malformed, which is reported). Whether each
/// names a procedure is checked against the manifest
/// (`validators::generate`).
fn runtime_validation_value(value: TokenStream, errors: &mut Errors) -> Vec<LitStr> {
    let parser = |input: ParseStream<'_>| {
        input.parse::<Token![=]>()?;
        let content;
        syn::bracketed!(content in input);
        let paths = syn::punctuated::Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
        if !input.is_empty() {
            return Err(input.error("x"));
        }
        Ok(paths.into_iter().collect())
    };
    errors
        .take(parser.parse2(value).map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `runtime_validation = [\"devices.disable\", …]`: the paths of the procedures whose schemas are validated at run time (with the `dynamic` feature) instead of by generated validators",
            )
        }))
        .unwrap_or_default()
}

/// Whether the facade feature bringing in each format crate is enabled:
/// `agent-surface/typed-uuid` enables `surface-macros/typed-uuid`, which
/// enables this crate's `typed-uuid` (one build has one set of features).
const AVAILABLE: [(&str, &str, bool); 3] = [
    ("uuid", "typed-uuid", cfg!(feature = "typed-uuid")),
    ("chrono", "typed-chrono", cfg!(feature = "typed-chrono")),
    ("url", "typed-url", cfg!(feature = "typed-url")),
];

/// `= [uuid, chrono, url]` of `typed_formats = …` (any subset; what is
/// malformed, unknown, repeated or not enabled by its facade feature is
/// reported and left out).
fn typed_formats_value(value: TokenStream, errors: &mut Errors) -> TypedFormats {
    let expected = "expected `typed_formats = [uuid, chrono, url]` (any of them): `format: uuid` as `uuid::Uuid`, `date-time`/`date` as chrono types, `uri`/`url` as `url::Url`";
    let parser = |input: ParseStream<'_>| {
        input.parse::<Token![=]>()?;
        let content;
        syn::bracketed!(content in input);
        let names =
            syn::punctuated::Punctuated::<proc_macro2::Ident, Token![,]>::parse_terminated_with(
                &content,
                proc_macro2::Ident::parse_any,
            )?;
        if !input.is_empty() {
            return Err(input.error("x"));
        }
        Ok(names)
    };
    let mut formats = TypedFormats::default();
    let Some(names) = errors.take(
        parser
            .parse2(value)
            .map_err(|e| syn::Error::new(e.span(), expected)),
    ) else {
        return formats;
    };
    for name in names {
        let Some(&(_, feature, available)) = AVAILABLE.iter().find(|(n, ..)| name == n) else {
            errors.add(
                name.span(),
                format!("unknown typed format `{name}`; {expected}"),
            );
            continue;
        };
        if !available {
            errors.add(
                name.span(),
                format!("`typed_formats = [{name}]` needs the `{feature}` feature of `agent-surface` (it brings in the `{name}` crate the generated types name)"),
            );
            continue;
        }
        let slot = match feature {
            "typed-uuid" => &mut formats.uuid,
            "typed-chrono" => &mut formats.chrono,
            _ => &mut formats.url,
        };
        if *slot {
            errors.add(name.span(), format!("`{name}` is listed twice"));
        }
        *slot = true;
    }
    formats
}

impl Parse for ManifestArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let args = Self::parse_collecting(input.parse()?, &mut errors);
        errors.finish()?;
        args.ok_or_else(|| input.error("expected the manifest path"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errors_of(tokens: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        ManifestArgs::parse_collecting(tokens, &mut errors);
        match errors.finish() {
            Ok(()) => vec![],
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn args_accept_crate_override_and_reject_unknown() {
        let args: ManifestArgs = syn::parse2(quote!("a.json", crate = ::my::facade)).unwrap();
        let p = args.crate_path.unwrap();
        assert_eq!(quote!(#p).to_string(), ":: my :: facade");
        let err = syn::parse2::<ManifestArgs>(quote!("a.json", krate = x))
            .err()
            .unwrap();
        assert!(err
            .to_string()
            .starts_with("unknown `manifest!` argument `krate`"));
        assert!(syn::parse2::<ManifestArgs>(quote!(a_json)).is_err());
    }

    #[test]
    fn every_manifest_argument_error_is_reported_in_one_build() {
        assert_eq!(
            errors_of(quote!(a_json, krate = x, crate = 1, crate = ::a, crate = ::b)),
            [
                "expected the manifest path as a string literal, relative to the crate root: `manifest!(\"agent.manifest.json\")`",
                "unknown `manifest!` argument `krate`; the options are `crate = path::to::agent_surface`, `validation = runtime`, `runtime_validation = [\"procedure.path\", …]` and `typed_formats = [uuid, chrono, url]`",
                "expected `crate = path::to::agent_surface`, the path generated code names the facade by",
                "`crate` is given twice",
                "`crate` is given twice",
            ]
        );
        assert_eq!(
            errors_of(quote!()),
            ["expected the manifest path: `manifest!(\"relative/path/to/agent.manifest.json\")`"]
        );
        assert!(errors_of(quote!("a.json",)).is_empty());
    }

    #[test]
    fn runtime_validation_is_a_list_of_path_literals_given_once() {
        let args: ManifestArgs = syn::parse2(quote!(
            "a.json",
            runtime_validation = ["openai.createResponse", "a.b"]
        ))
        .unwrap();
        let paths: Vec<String> = args.runtime_validation.iter().map(LitStr::value).collect();
        assert_eq!(paths, ["openai.createResponse", "a.b"]);
        let default: ManifestArgs = syn::parse2(quote!("a.json")).unwrap();
        assert!(default.runtime_validation.is_empty());
        let expected = "expected `runtime_validation = [\"devices.disable\", …]`: the paths of the procedures whose schemas are validated at run time (with the `dynamic` feature) instead of by generated validators";
        assert_eq!(
            errors_of(quote!(
                "a.json",
                runtime_validation = [a.b],
                runtime_validation = ["a.b"],
                runtime_validation = ["a.b"]
            )),
            [
                expected,
                "`runtime_validation` is given twice",
                "`runtime_validation` is given twice"
            ]
        );
    }

    #[test]
    fn validation_argument_is_runtime_or_generated_and_given_once() {
        let args: ManifestArgs = syn::parse2(quote!("a.json", validation = runtime)).unwrap();
        assert_eq!(args.validation, ValidationMode::Runtime);
        let args: ManifestArgs =
            syn::parse2(quote!("a.json", crate = ::x, validation = generated)).unwrap();
        assert_eq!(args.validation, ValidationMode::Generated);
        let args: ManifestArgs = syn::parse2(quote!("a.json")).unwrap();
        assert_eq!(args.validation, ValidationMode::Generated);
        let expected = "expected `validation = runtime` (validate this manifest's schemas at run time, with the `dynamic` feature) or `validation = generated` (the default)";
        assert_eq!(
            errors_of(quote!(
                "a.json",
                validation = lazy,
                validation,
                validation = runtime
            )),
            [
                expected,
                expected,
                "`validation` is given twice",
                "`validation` is given twice"
            ]
        );
        assert_eq!(
            errors_of(quote!("a.json", validation = runtime extra)),
            [expected]
        );
    }

    #[test]
    fn typed_formats_argument_lists_crates_whose_facade_feature_is_enabled() {
        // `cargo test -p surface-codegen` builds without the `typed-*`
        // features: each listed crate is then reported with the feature
        // that enables it (a build with a feature on accepts that crate).
        let missing: Vec<String> = AVAILABLE
            .iter()
            .filter(|(.., available)| !available)
            .map(|(name, feature, _)| format!("`typed_formats = [{name}]` needs the `{feature}` feature of `agent-surface` (it brings in the `{name}` crate the generated types name)"))
            .collect();
        assert_eq!(
            errors_of(quote!("a.json", typed_formats = [uuid, chrono, url])),
            missing
        );
        #[cfg(not(any(
            feature = "typed-uuid",
            feature = "typed-chrono",
            feature = "typed-url"
        )))]
        assert_eq!(
            missing[0],
            "`typed_formats = [uuid]` needs the `typed-uuid` feature of `agent-surface` (it brings in the `uuid` crate the generated types name)"
        );
        let expected = "expected `typed_formats = [uuid, chrono, url]` (any of them): `format: uuid` as `uuid::Uuid`, `date-time`/`date` as chrono types, `uri`/`url` as `url::Url`";
        assert_eq!(
            errors_of(quote!("a.json", typed_formats = uuid)),
            [expected]
        );
        assert_eq!(
            errors_of(quote!("a.json", typed_formats = [time], typed_formats = [])),
            [
                format!("unknown typed format `time`; {expected}"),
                "`typed_formats` is given twice".to_string()
            ]
        );
        let args: ManifestArgs = syn::parse2(quote!("a.json", typed_formats = [])).unwrap();
        assert_eq!(args.typed_formats, TypedFormats::default());
    }
}
