//! `manifest!`: parse the arguments ([`args`]) → find and read the file
//! ([`source`]) → validate the manifest ([`valid`]) → emit the module tree,
//! the refs, the authority and the lookup macro ([`expand`], [`fields`],
//! [`crate::facts`]).
//!
//! Everything here is a plain function over `proc_macro2` tokens so it can
//! be unit-tested, snapshot-tested and benchmarked outside a proc macro.
//!
//! # What one invocation emits
//!
//! In the module where `manifest!("…")` is invoked (a module, or a crate
//! root):
//!
//! * `pub const MANIFEST_JSON: &str = include_str!("<canonical absolute
//!   path>");` — the manifest text, which also makes rustc rebuild the crate
//!   when the JSON changes;
//! * `pub const MANIFEST_DIGEST: &str` — `AgentManifest::digest` computed
//!   at compile time;
//! * `pub fn authority() -> Authority` — the compiler-generated authority,
//!   built once (a `std::sync::OnceLock`) by `Authority::from_generated`
//!   with the compile-time digests;
//! * one module per path segment mirroring the router (`devices::disable`),
//!   the last holding `Input`, `Output` (from
//!   [`crate::types::generate_procedure_types`]), `Field` (the input's
//!   top-level properties), `PATH` and the hidden `__fields` aliases; beside
//!   it a function of the same name (`devices::disable()`) returning the
//!   typed `AgentProcedureRef`;
//! * the hidden lookup macro that `#[agent_procedure]` expands through,
//!   reachable as `__agent_surface_procedures!` in the invoking module also
//!   from other crates, and the hidden re-export `__agent_surface_private`
//!   of the facade's private module (see [`crate::facts`]).
//!
//! # Segment → identifier mapping
//!
//! Path segments become identifiers by
//! [`surface_manifest::segment_to_ident`]: `-` → `_`, snake_case
//! (`listAll` → `list_all`, `HTTPStatus` → `http_status`), Rust keywords as
//! raw identifiers (`type` → `r#type`), `self`/`super`/`crate`/`Self` with a
//! trailing underscore (`self_`); prototype names (`__proto__`, `prototype`,
//! `constructor`), segments starting with a digit or holding other
//! characters are rejected. A root-level procedure named `authority` is
//! rejected because it would clash with the generated `authority()`.

mod args;
mod dedup;
mod expand;
mod fields;
pub(crate) mod source;
mod valid;
mod validators;

use std::path::{Path, PathBuf};

use proc_macro2::{Span, TokenStream};
use quote::quote;

pub use args::ManifestArgs;
pub use source::resolve_manifest_path;
pub use validators::MAX_REPORTED_UNSUPPORTED;

use crate::diagnostics::Errors;

/// Names `manifest!` emits at the root of the invoking module; a root-level
/// procedure whose function would have one of these names is rejected.
pub const RESERVED_ROOT_NAMES: [&str; 3] = ["authority", "MANIFEST_JSON", "MANIFEST_DIGEST"];

/// Most segments a procedure path may have: each is a nested module, and
/// the expansion (like rustc after it) recurses once per level.
pub const MAX_PATH_SEGMENTS: usize = 32;

/// Options of [`expand_manifest_text`].
#[derive(Clone, Debug)]
pub struct ExpandOptions {
    /// Facade crate path (`::agent_surface`), also passed to the type
    /// converter as [`crate::types::TypeOptions::crate_path`].
    pub crate_path: TokenStream,
    /// The path emitted in `include_str!` (canonical and absolute when
    /// called from the macro; any stable text in snapshot tests).
    pub include_path: String,
    /// The path as the user wrote it, for messages.
    pub display_path: String,
    /// Where `manifest!` was written (`file:line:column` from the macro;
    /// any text in tests): with the manifest digest it makes the name of
    /// the exported lookup macro unique in the invoking crate.
    pub invocation_site: String,
    /// How the manifest's schemas are validated.
    pub validation: ValidationMode,
    /// The `format`s generated as typed values (`typed_formats = […]`).
    pub typed_formats: crate::types::TypedFormats,
    /// Procedures validated at run time under [`ValidationMode::Generated`]
    /// (`runtime_validation = ["a.b", …]`), as written: each must name a
    /// procedure of the manifest.
    pub runtime_validation: Vec<syn::LitStr>,
}

/// How the schemas of a `manifest!` are validated (docs/validation.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ValidationMode {
    /// A validator generated at compile time for every input and output
    /// schema; a schema part the generator does not support is a compile
    /// error (the default).
    #[default]
    Generated,
    /// No validators are generated: the registry compiles the schemas at
    /// run time (`manifest!("…", validation = runtime)`; the runtime's
    /// `dynamic` feature).
    Runtime,
}

/// The `manifest!` entry point: parses the arguments, resolves the path
/// against `CARGO_MANIFEST_DIR`, reads, validates and expands. Every error
/// becomes a `compile_error!`; argument errors are all reported.
pub fn expand_manifest(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let Some(args) = ManifestArgs::parse_collecting(input, &mut errors) else {
        return errors.to_compile_error();
    };
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    match expand_manifest_args(&args, manifest_dir.as_deref()) {
        Ok(tokens) => {
            let errors = errors.to_compile_error();
            quote!(#tokens #errors)
        }
        Err(e) => {
            errors.push(e);
            errors.to_compile_error()
        }
    }
}

/// `file:line:column` of `span` when running inside a proc macro, else
/// empty.
fn invocation_site(span: Span) -> String {
    if !proc_macro::is_available() {
        return String::new();
    }
    let site = span.unwrap();
    format!("{}:{}:{}", site.file(), site.line(), site.column())
}

/// [`expand_manifest`] after argument parsing, with the crate root given
/// explicitly (unit tests).
///
/// # Errors
/// Spanned on the path literal: an absolute path, a missing or unreadable
/// file, invalid JSON (with line and column), or every path problem.
pub fn expand_manifest_args(
    args: &ManifestArgs,
    manifest_dir: Option<&Path>,
) -> syn::Result<TokenStream> {
    let span = args.path.span();
    let written = args.path.value();
    let file = resolve_manifest_path(&written, manifest_dir, span)?;
    let (text, canonical) = source::read_manifest_file(file, &written, span)?;
    let crate_path = match &args.crate_path {
        Some(p) => quote!(#p),
        None => quote!(::agent_surface),
    };
    let options = ExpandOptions {
        crate_path,
        include_path: canonical.to_string_lossy().into_owned(),
        display_path: written,
        invocation_site: invocation_site(span),
        validation: args.validation,
        typed_formats: args.typed_formats,
        runtime_validation: args.runtime_validation.clone(),
    };
    expand_manifest_text(&text, &options, span)
}

/// Turns manifest text into the `manifest!` expansion. This is the plain
/// expansion function benchmarked and snapshot-tested.
///
/// # Errors
/// One combined [`syn::Error`] spanned at `span` listing every problem:
/// invalid JSON (line and column), every `ManifestIssue`, root-level
/// procedures that clash with [`RESERVED_ROOT_NAMES`], and paths of more
/// than [`MAX_PATH_SEGMENTS`] segments.
pub fn expand_manifest_text(
    text: &str,
    options: &ExpandOptions,
    span: Span,
) -> syn::Result<TokenStream> {
    let manifest = valid::read_manifest(text, &options.display_path, span)?;
    let validators = validators::generate(&manifest, options, span)?;
    Ok(expand::Generator::new(&manifest, options, span).generate(&validators))
}

#[cfg(test)]
mod tests;
