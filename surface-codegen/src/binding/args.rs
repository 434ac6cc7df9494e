//! What the user wrote: the attribute's arguments
//! (`#[agent_procedure(api, "devices.disable", input | overridable(…))]`)
//! and the field attribute `#[agent_procedure(rename = "…")]`.
//!
//! Each argument is parsed on its own ([`split_arguments`]), so every
//! malformed, unknown, repeated or conflicting argument is reported in one
//! build, and the valid ones are still used.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, DeriveInput, Ident, LitStr};

use crate::diagnostics::Errors;
use crate::facts::Role;
use crate::tokens::{split_arguments, Argument};

const USAGE: &str = "expected `#[agent_procedure(api, \"devices.disable\")]`, where `api` is the module in which `manifest!` was invoked; options: `input` (the struct is the full input), `overridable(field, …)` (bound fields the agent may override)";

const PATH_LITERAL: &str =
    "expected the procedure's dotted router path as a string literal, e.g. \"devices.disable\"";

/// The arguments of `#[agent_procedure(api, "devices.disable", …)]`.
#[derive(Clone, Debug)]
pub struct AgentProcedureArgs {
    /// Path of the module where `manifest!` was invoked (or of the crate
    /// whose root invoked it).
    pub api: syn::Path,
    /// The procedure's dotted router path.
    pub path: LitStr,
    /// Bound subset or full input.
    pub role: Role,
    /// `overridable(a, b)`: bound fields the agent may override.
    pub overridable: Vec<Ident>,
}

impl AgentProcedureArgs {
    /// Parses the attribute's arguments, recording every problem in
    /// `errors`. `None` when `api` or the path literal is unusable; options
    /// that fail are left out of the result.
    pub(crate) fn parse_collecting(tokens: TokenStream, errors: &mut Errors) -> Option<Self> {
        let mut arguments = split_arguments(tokens).into_iter();
        let api = match arguments.next() {
            Some(arg) => errors.take(parse_whole(&arg, syn::Path::parse_mod_style, USAGE)),
            None => {
                errors.add(Span::call_site(), USAGE);
                return None;
            }
        };
        let path = match arguments.next() {
            Some(arg) => errors.take(parse_whole(&arg, <LitStr as Parse>::parse, PATH_LITERAL)),
            None => {
                errors.add(Span::call_site(), USAGE);
                None
            }
        };
        let options = Options::parse(arguments, errors);
        Some(AgentProcedureArgs {
            api: api?,
            path: path?,
            role: if options.input.is_some() {
                Role::Input
            } else {
                Role::Bound
            },
            // With `input` the list is already refused; checking its
            // entries would only add errors.
            overridable: match (&options.input, options.overridable) {
                (None, Some((_, list))) => list,
                _ => Vec::new(),
            },
        })
    }
}

impl Parse for AgentProcedureArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let args = Self::parse_collecting(input.parse()?, &mut errors);
        errors.finish()?;
        args.ok_or_else(|| input.error(USAGE))
    }
}

/// Parses all of `arg` with `parser`; a failure or leftover tokens give
/// `message` at the offending token.
fn parse_whole<T>(
    arg: &Argument,
    parser: impl Parser<Output = T>,
    message: &str,
) -> syn::Result<T> {
    if arg.tokens.is_empty() {
        return Err(syn::Error::new(arg.span, message));
    }
    parser
        .parse2(arg.tokens.clone())
        .map_err(|e| syn::Error::new(e.span(), message))
}

/// The options after the path literal.
#[derive(Default)]
struct Options {
    input: Option<Ident>,
    overridable: Option<(Ident, Vec<Ident>)>,
}

impl Options {
    fn parse(arguments: impl Iterator<Item = Argument>, errors: &mut Errors) -> Self {
        let mut options = Options::default();
        for arg in arguments {
            options.parse_one(arg, errors);
        }
        if let (Some(kw), Some((ov, _))) = (&options.input, &options.overridable) {
            errors.add(
                ov.span(),
                "`overridable(...)` applies to a bound subset; a full `input` struct binds nothing",
            );
            errors.add(kw.span(), "the struct is declared the full input here");
        }
        options
    }

    fn parse_one(&mut self, arg: Argument, errors: &mut Errors) {
        let mut trees = arg.tokens.into_iter();
        let key = match trees.next() {
            Some(TokenTree::Ident(key)) => key.unraw(),
            Some(other) => {
                errors.add(other.span(), format!("unknown `agent_procedure` option `{other}`; expected `input` or `overridable(field, …)`"));
                return;
            }
            None => {
                errors.add(arg.span, "an empty argument; remove the extra comma");
                return;
            }
        };
        let rest: TokenStream = trees.collect();
        if key == "input" {
            if let Some(extra) = rest.into_iter().next() {
                errors.add(extra.span(), "`input` takes no arguments");
            }
            if self.input.is_some() {
                errors.add(key.span(), "`input` is given twice");
            }
            self.input = Some(key);
        } else if key == "overridable" {
            let list = overridable_list(&key, rest, errors);
            if self.overridable.is_some() {
                errors.add(
                    key.span(),
                    "`overridable(...)` is given twice; list every field in one",
                );
            } else {
                self.overridable = Some((key, list));
            }
        } else {
            errors.add(
                key.span(),
                format!("unknown `agent_procedure` option `{key}`; expected `input` or `overridable(field, …)`"),
            );
        }
    }
}

/// The field idents of `overridable(a, b)`; each malformed entry is
/// reported and left out.
fn overridable_list(key: &Ident, rest: TokenStream, errors: &mut Errors) -> Vec<Ident> {
    let mut trees = rest.into_iter();
    let group = match (trees.next(), trees.next()) {
        (Some(TokenTree::Group(g)), None)
            if g.delimiter() == proc_macro2::Delimiter::Parenthesis =>
        {
            g
        }
        _ => {
            errors.add(
                key.span(),
                "expected `overridable(field, …)` with the bound fields the agent may override",
            );
            return Vec::new();
        }
    };
    split_arguments(group.stream())
        .iter()
        .filter_map(|arg| {
            errors.take(parse_whole(
                arg,
                Ident::parse_any,
                "expected a field name in `overridable(...)`",
            ))
        })
        .collect()
}

/// Whether `attr` is this crate's field attribute.
pub(crate) fn is_own_attr(attr: &Attribute) -> bool {
    attr.path().is_ident("agent_procedure")
}

/// The user's struct with this crate's field attributes removed (they are
/// not attributes rustc knows once the outer attribute has run).
pub(crate) fn strip_own_attrs(item: &DeriveInput) -> DeriveInput {
    let mut item = item.clone();
    if let syn::Data::Struct(s) = &mut item.data {
        for field in s.fields.iter_mut() {
            field.attrs.retain(|a| !is_own_attr(a));
        }
    }
    item
}

/// `#[agent_procedure(rename = "…")]` on a field; every unknown or
/// repeated option is reported.
pub(crate) fn own_rename(field: &syn::Field, errors: &mut Errors) -> Option<LitStr> {
    let mut rename: Option<LitStr> = None;
    for attr in field.attrs.iter().filter(|a| is_own_attr(a)) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let lit = meta.value()?.parse::<LitStr>()?;
                if rename.is_some() {
                    errors.add(lit.span(), "`rename` is given twice");
                } else {
                    rename = Some(lit);
                }
            } else {
                errors.add(
                    meta.path.span(),
                    "unknown field option; the only one is `rename = \"propertyName\"`",
                );
                crate::binding::serde_attrs::skip_meta_value(&meta)?;
            }
            Ok(())
        });
        errors.take(result);
    }
    rename
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errors_of(tokens: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        AgentProcedureArgs::parse_collecting(tokens, &mut errors);
        match errors.finish() {
            Ok(()) => vec![],
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn args_parse_path_role_and_overridable() {
        let mut errors = Errors::default();
        let args = AgentProcedureArgs::parse_collecting(
            quote!(crate::api, "devices.disable", overridable(reason, r#type),),
            &mut errors,
        )
        .unwrap();
        assert!(errors.is_empty());
        let api = &args.api;
        assert_eq!(quote!(#api).to_string(), "crate :: api");
        assert_eq!(args.path.value(), "devices.disable");
        assert_eq!(args.role, Role::Bound);
        let names: Vec<String> = args.overridable.iter().map(|i| i.to_string()).collect();
        assert_eq!(names, ["reason", "r#type"]);
    }

    #[test]
    fn every_argument_error_is_reported_in_one_build() {
        let errs = errors_of(quote!(
            api,
            "a.b",
            nope,
            input,
            overridable(x, 1),
            input,
            wat = 3
        ));
        assert_eq!(
            errs,
            [
                "unknown `agent_procedure` option `nope`; expected `input` or `overridable(field, …)`",
                "expected a field name in `overridable(...)`",
                "`input` is given twice",
                "unknown `agent_procedure` option `wat`; expected `input` or `overridable(field, …)`",
                "`overridable(...)` applies to a bound subset; a full `input` struct binds nothing",
                "the struct is declared the full input here",
            ]
        );
    }

    #[test]
    fn a_bad_api_and_a_bad_option_are_both_reported() {
        let errs = errors_of(quote!(
            1,
            "a.b",
            overridable,
            overridable(a),
            overridable(b)
        ));
        assert_eq!(
            errs,
            [
                USAGE,
                "expected `overridable(field, …)` with the bound fields the agent may override",
                // The malformed first one counts: both later ones are repeats.
                "`overridable(...)` is given twice; list every field in one",
                "`overridable(...)` is given twice; list every field in one",
            ]
        );
        assert_eq!(errors_of(quote!()), [USAGE]);
        assert_eq!(errors_of(quote!(api)), [USAGE]);
        assert_eq!(errors_of(quote!(api, devices)), [PATH_LITERAL]);
        assert_eq!(
            errors_of(quote!(api, "a", input(x))),
            ["`input` takes no arguments"]
        );
    }

    #[test]
    fn valid_options_survive_a_bad_one() {
        let mut errors = Errors::default();
        let args = AgentProcedureArgs::parse_collecting(
            quote!(api, "a.b", overridable(a, 2, b), bogus),
            &mut errors,
        )
        .unwrap();
        let names: Vec<String> = args.overridable.iter().map(|i| i.to_string()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(errors.finish().unwrap_err().into_iter().count(), 2);
    }

    #[test]
    fn field_rename_reports_every_unknown_option() {
        let field: syn::Field = syn::parse_quote! {
            #[agent_procedure(nope, rename = "a", other = 1)]
            #[agent_procedure(rename = "b")]
            x: u8
        };
        let mut errors = Errors::default();
        assert_eq!(own_rename(&field, &mut errors).unwrap().value(), "a");
        let errs: Vec<String> = errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            [
                "unknown field option; the only one is `rename = \"propertyName\"`",
                "unknown field option; the only one is `rename = \"propertyName\"`",
                "`rename` is given twice",
            ]
        );
    }
}
