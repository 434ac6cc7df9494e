//! Code generation behind `surface-macros`: plain, unit-testable functions
//! that the proc-macro entry points call.
#![forbid(unsafe_code)]

pub mod types;
