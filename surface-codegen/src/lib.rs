//! Code generation behind `surface-macros`: plain, unit-testable functions
//! that the proc-macro entry points call.
//!
//! | module | what |
//! |---|---|
//! | [`manifest_macro`] | `manifest!`: arguments → the manifest file → its validation → the module tree, refs, authority and lookup macro |
//! | [`binding`] | `#[agent_procedure]`: arguments → serde attributes → checks → expansion, with a fallback on error |
//! | [`facts`] | the token protocol between the two macros, across crates |
//! | [`types`] | JSON Schema → Rust types, one procedure at a time |
//! | [`validator`] | JSON Schema → a validator in plain Rust |
//! | [`doc`] | doc comments of generated code; the one way manifest text reaches them |
//!
//! The manifest model, its validation and the identifier mapping are the
//! `surface-manifest` crate; the user-facing guide is `docs/codegen.md`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// `proc_macro::Span` locations, when running inside a proc macro.
extern crate proc_macro;

pub mod binding;
mod diagnostics;
pub mod doc;
pub mod facts;
pub mod manifest_macro;
mod tokens;
pub mod types;
pub mod validator;
pub mod view_inputs;

pub use tokens::{ident_from_source, option_depth, option_inner, type_text};
