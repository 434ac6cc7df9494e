//! SHIM: replaced by the formats branch (`surface_runtime::pattern`).
//!
//! `pattern` checks for generated validators: ECMA-262 regular expressions
//! (Unicode mode), compiled on first use. This stand-in uses `regress` on
//! every target.

use std::sync::OnceLock;

/// One schema `pattern`, compiled on first use:
/// `static P: Pattern = Pattern::new("^a+$");` then `P.is_match(s)`.
pub struct Pattern {
    source: &'static str,
    compiled: OnceLock<Option<regress::Regex>>,
}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

impl Pattern {
    /// A pattern from its ECMA-262 source (without slashes or flags).
    pub const fn new(source: &'static str) -> Self {
        Pattern {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The pattern's source.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// Whether the pattern matches somewhere in `s` (patterns are not
    /// anchored). A source that does not compile matches nothing; the
    /// generator rejects such patterns before they reach here.
    pub fn is_match(&self, s: &str) -> bool {
        self.compiled
            .get_or_init(|| regress::Regex::with_flags(self.source, "u").ok())
            .as_ref()
            .is_some_and(|re| re.find(s).is_some())
    }
}
