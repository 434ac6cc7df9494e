//! The `manifest!` and `#[agent_procedure]` macros. Thin entry points: the
//! work lives in `surface-codegen`.
#![forbid(unsafe_code)]
