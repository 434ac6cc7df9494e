//! SHIM: replaced by the formats branch (`surface_runtime::format`).
//!
//! `format` checks for generated validators. This stand-in knows no format:
//! every `format` is an annotation, as in the runtime validator with format
//! checks off.

/// The check of the named format against `s`: `Some(valid)` for a format
/// this module knows, `None` for one it does not (an annotation: accepted).
pub fn check(name: &str, s: &str) -> Option<bool> {
    let _ = (name, s);
    None
}
