//! `#[agent_procedure(...)]`: binds the app's own struct to a manifest
//! procedure, as the UI-bound subset of its input (implementing
//! `BoundInput`) or as its full input type (implementing
//! `ProcedureInput`).
//!
//! Read top to bottom, like thiserror's macro:
//!
//! | step | module | what |
//! |---|---|---|
//! | arguments | [`args`] | what the user wrote: `api`, the path literal, `input`, `overridable(…)`, the field attribute `rename` |
//! | facts | [`crate::facts`] | what the manifest says, forwarded by the lookup macro `manifest!` emitted |
//! | serde | [`serde_attrs`] | the serde names of a full-input struct's fields |
//! | checks | [`valid`] | field ↔ property matching, required properties, `overridable`, `null` handling; every error collected and spanned |
//! | type checks | [`type_check`] | rustc's check of each field's type on the user's tokens, with a message naming procedure, property and the manifest's type |
//! | expansion | [`expand`] | the type checks and the impl |
//! | fallback | [`fallback`] | what is emitted when the checks fail, so one mistake gives one error |
//!
//! The attribute ([`expand_attribute`]) always re-emits the user's struct
//! (minus its own field attributes) before anything else, so a binding
//! mistake never turns into "cannot find type" errors at every use of the
//! struct.

pub mod args;
mod expand;
mod fallback;
pub mod serde_attrs;
mod type_check;
pub mod valid;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::DeriveInput;

pub use args::AgentProcedureArgs;
pub use serde_attrs::apply_rename_all;
pub use valid::unknown_message;

use crate::diagnostics::Errors;
use crate::facts::{BindingRequest, ImplInput, LookupCall, UnknownPath};

/// The `#[agent_procedure]` entry point. Always re-emits the struct; then
/// the invocation of the lookup macro in `api` (when `api` and the path
/// parsed) and every argument error.
pub fn expand_attribute(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = AgentProcedureArgs::parse_collecting(attr, &mut errors);
    let Ok(parsed) = syn::parse2::<DeriveInput>(item.clone()) else {
        errors.add(
            Span::call_site(),
            "`#[agent_procedure]` applies to a struct with named fields",
        );
        return fallback::attribute(&item, &errors);
    };
    let mut stripped = args::strip_own_attrs(&parsed);
    let Some(args) = args else {
        return fallback::attribute(&stripped, &errors);
    };
    serde_attrs::name_facade_serde(&mut stripped, &args.api);
    let request = BindingRequest {
        user_path: args.path,
        role: args.role,
        overridable: args.overridable,
        item: parsed,
    };
    let lookup = LookupCall {
        api: &args.api,
        request: &request,
    };
    let errors = errors.to_compile_error();
    quote! {
        #stripped
        #lookup
        #errors
    }
}

/// The `agent_procedure_impl!` entry point: checks the user's struct
/// against the forwarded facts and emits `BoundInput` or `ProcedureInput`
/// (or the fallback), followed by every error.
pub fn expand_procedure_impl(input: TokenStream) -> TokenStream {
    let input: ImplInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let (tokens, errors) = check_and_expand(&input);
    let errors = errors.to_compile_error();
    quote!(#tokens #errors)
}

/// The checks and the expansion, with the errors they collected.
fn check_and_expand(input: &ImplInput) -> (TokenStream, Errors) {
    let mut errors = Errors::default();
    let tokens = match valid::check(input, &mut errors) {
        valid::Outcome::Matched(checked) => expand::expand(input, &checked),
        valid::Outcome::Unmappable => fallback::unmappable(input),
        valid::Outcome::Generic => fallback::generic(),
    };
    (tokens, errors)
}

/// The `agent_procedure_unknown!` entry point: a `compile_error!` on the
/// user's literal naming the nearest manifest paths.
pub fn expand_unknown_procedure(input: TokenStream) -> TokenStream {
    match syn::parse2::<UnknownPath>(input) {
        Ok(u) => syn::Error::new(u.path.span(), unknown_message(&u.path.value(), &u.all))
            .to_compile_error(),
        Err(e) => e.to_compile_error(),
    }
}

#[cfg(test)]
mod tests;
