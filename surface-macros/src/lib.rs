//! The `manifest!` and `#[agent_procedure]` macros. Thin entry points: the
//! work lives in `surface-codegen` (`manifest_macro` and `binding`); the
//! documentation users read is on the re-exports in the `agent-surface`
//! facade crate.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

/// Reads the agent manifest at compile time and emits typed procedure refs,
/// types and the compiler-generated authority. See the `agent-surface`
/// crate documentation (`docs/codegen.md`).
#[proc_macro]
pub fn manifest(input: TokenStream) -> TokenStream {
    surface_codegen::manifest_macro::expand_manifest(input.into()).into()
}

/// Binds the app's own struct to a manifest procedure, as the UI-bound
/// subset of its input or (with `input`) as its full input type. See the
/// `agent-surface` crate documentation (`docs/codegen.md`).
#[proc_macro_attribute]
pub fn agent_procedure(attr: TokenStream, item: TokenStream) -> TokenStream {
    surface_codegen::binding::expand_attribute(attr.into(), item.into()).into()
}

/// Internal: checks a struct against one procedure's facts, forwarded by the
/// lookup macro `manifest!` emits. Not public API.
#[doc(hidden)]
#[proc_macro]
pub fn __agent_procedure_impl(input: TokenStream) -> TokenStream {
    surface_codegen::binding::expand_procedure_impl(input.into()).into()
}

/// Internal: the "unknown procedure path" error of the lookup macro. Not
/// public API.
#[doc(hidden)]
#[proc_macro]
pub fn __agent_procedure_unknown(input: TokenStream) -> TokenStream {
    surface_codegen::binding::expand_unknown_procedure(input.into()).into()
}
