//! What the user wrote: `manifest!("path.json")` or
//! `manifest!("path.json", crate = some::path)`. Every malformed, unknown
//! or repeated argument is reported in one build.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::{LitStr, Token};

use crate::diagnostics::Errors;
use crate::tokens::{split_arguments, Argument};

/// The arguments of `manifest!("path.json")` / `manifest!("path.json",
/// crate = some::path)`.
#[derive(Clone, Debug)]
pub struct ManifestArgs {
    /// The manifest path as written (relative to `CARGO_MANIFEST_DIR`).
    pub path: LitStr,
    /// Path of the facade crate generated code names, default
    /// `::agent_surface`.
    pub crate_path: Option<syn::Path>,
}

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
        let mut seen = false;
        for arg in arguments {
            if let Some((key, path)) = crate_option(arg, errors) {
                if seen {
                    errors.add(key.span(), "`crate` is given twice");
                } else {
                    seen = true;
                    crate_path = path;
                }
            }
        }
        Some(ManifestArgs {
            path: path?,
            crate_path,
        })
    }
}

/// One `crate = path` argument: the key and the path (`None` when the
/// path is malformed, which is reported).
fn crate_option(
    arg: Argument,
    errors: &mut Errors,
) -> Option<(proc_macro2::Ident, Option<syn::Path>)> {
    let mut trees = arg.tokens.into_iter();
    let key = match trees.next() {
        Some(TokenTree::Ident(key)) => key.unraw(),
        Some(other) => {
            errors.add(other.span(), format!("unknown `manifest!` argument `{other}`; the only option is `crate = path::to::agent_surface`"));
            return None;
        }
        None => {
            errors.add(arg.span, "an empty argument; remove the extra comma");
            return None;
        }
    };
    if key != "crate" {
        errors.add(
            key.span(),
            format!("unknown `manifest!` argument `{key}`; the only option is `crate = path::to::agent_surface`"),
        );
        return None;
    }
    let value: TokenStream = trees.collect();
    let parser = |input: ParseStream<'_>| {
        input.parse::<Token![=]>()?;
        input.call(syn::Path::parse_mod_style)
    };
    let path = errors.take(parser.parse2(value).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected `crate = path::to::agent_surface`, the path generated code names the facade by",
        )
    }));
    Some((key, path))
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
                "unknown `manifest!` argument `krate`; the only option is `crate = path::to::agent_surface`",
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
}
