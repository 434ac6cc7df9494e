//! Code generation behind `surface-macros`.
#![forbid(unsafe_code)]
