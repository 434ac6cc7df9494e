#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

pub use surface_macros::{agent_procedure, manifest};
pub use surface_runtime::*;

/// Items the generated code names. Not public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;
    pub use surface_runtime::__private::*;
    // What the `#[agent_procedure]` expansion implements, named through
    // `api::__agent_surface_private` so it resolves from any crate.
    pub use surface_runtime::{BoundField, BoundInput, ProcedureInput};

    // The hidden proc macros the `manifest!` lookup macro expands through.
    pub use surface_macros::__agent_procedure_impl as agent_procedure_impl;
    pub use surface_macros::__agent_procedure_unknown as agent_procedure_unknown;
}

/// The code-generation guide, compiled as doctests so its example stays
/// true.
#[doc = include_str!("../docs/codegen.md")]
#[cfg(doctest)]
pub struct CodegenGuideDoctests;
