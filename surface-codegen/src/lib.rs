//! Code generation behind `surface-macros`: plain, unit-testable functions
//! that the proc-macro entry points call.
//!
//! * [`types`] — JSON Schema → Rust types (one procedure at a time);
//! * [`manifest_macro`] — the `manifest!` expansion: module tree, refs,
//!   authority, lookup macro;
//! * [`validator`] — JSON Schema → a validator in plain Rust;
//! * [`doc`] — doc comments of generated code; the one function through
//!   which manifest text reaches them;
//! * [`binding`] — `#[agent_procedure]`: the attribute, its compile-time
//!   checks against the manifest facts, and the `BoundInput` /
//!   `ProcedureInput` impls.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod binding;
pub mod doc;
pub mod manifest_macro;
pub mod types;
pub mod validator;
