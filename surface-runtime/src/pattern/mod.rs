//! JSON Schema `pattern` with ECMA-262 semantics (docs/formats.md,
//! "`pattern`").
//!
//! A `pattern` is the source of an ECMA-262 regular expression compiled
//! with the `u` (Unicode) flag, as Ajv does by default and as JSON Schema
//! 2020-12 asks, and it is **not anchored**: a string is valid when the
//! expression matches anywhere in it (`RegExp.prototype.test`). Write `^…$`
//! to match the whole string, as zod's converters do.
//!
//! * On `wasm32` the expression is the browser's own `RegExp` (through
//!   `js-sys`): no regex engine is compiled into the bundle, and the
//!   semantics are exactly the JavaScript engine's.
//! * Natively the source is first checked with [`regress`] (an exact
//!   ECMA-262 parser: what it refuses, JavaScript refuses), then rewritten
//!   token by token into `fancy-regex` syntax with the same meaning (`\d`,
//!   `\w`, `\s`, `\b` are ASCII / ECMAScript sets, `.` excludes the line
//!   terminators, `\uXXXX` escapes and surrogate pairs become code points)
//!   and matched by `fancy-regex`: lookahead, lookbehind, backreferences,
//!   named groups and Unicode property escapes (`\p{…}`) work, and every
//!   part of the pattern without lookaround or backreferences runs on the
//!   linear-time `regex` engine. `regress`'s own backtracking matcher is
//!   not used: it is exponential on zod's own `z.hostname()` pattern (34 s
//!   for a 150-character JWT on a release build), where V8 and `fancy-regex`
//!   take microseconds.
//! * On both targets, a source that is exactly one of zod 4's own format
//!   regexes (zod writes it beside the `format` for the same rule) is
//!   matched by the hand-written check of [`crate::format`] whose
//!   acceptance is exactly that regex's ([`Pattern::is_recognized`]).
//!
//! Matching work is bounded natively: a match that needs more than
//! [`BACKTRACK_LIMIT`] backtracking steps (only possible in the
//! lookaround/backreference parts) stops with a [`PatternError`] instead of
//! running on (fail closed). In the browser the JavaScript engine's own
//! limits apply. Unicode property tables are the engine's: a code point
//! assigned in a newer Unicode version may match `\p{…}` differently
//! natively and in a newer browser.
//!
//! A [`Pattern`] lives in a `static` and compiles once, lazily:
//!
//! ```
//! use surface_runtime::pattern::Pattern;
//!
//! static TICKET: Pattern = Pattern::new("^T-[0-9]{4}$");
//! assert_eq!(TICKET.matches("T-0042"), Ok(true));
//! assert!(!TICKET.is_match("t-0042"));
//! // Not anchored unless the pattern says so:
//! static DIGIT: Pattern = Pattern::new("[0-9]");
//! assert!(DIGIT.is_match("abc1"));
//! ```
//!
//! A pattern that does not compile (checked at build time with
//! [`check_syntax`]; on wasm32 the browser may still refuse one the native
//! engine accepts, e.g. a `\p{…}` name it does not know) is never a silent
//! accept: [`Pattern::matches`] returns a [`PatternError`], which a
//! validator reports as a `pattern` violation naming the schema pointer,
//! and [`Pattern::is_match`] returns `false`.

use std::fmt;

pub use crate::regexp::{check_syntax, PatternError, PatternErrorKind, BACKTRACK_LIMIT, FLAGS};
use crate::regexp::{Problem, Regexp};

mod known;

/// A JSON Schema `pattern`, compiled on first use and kept for the life of
/// the value (a `static` compiles once per process; on wasm32, once per
/// thread, since JavaScript objects cannot be shared).
pub struct Pattern {
    /// The hand-written check for a recognized zod source (module `known`).
    shortcut: Option<fn(&str) -> bool>,
    engine: Regexp,
}

impl Pattern {
    /// A pattern from its ECMA-262 source (the JSON Schema `pattern`
    /// string, not a `/…/flags` literal). Nothing is compiled yet, so this
    /// is usable in a `static`.
    ///
    /// A source that is exactly one of zod 4's own format regexes (e.g.
    /// `z.email()`'s, which zod writes beside `format: "email"`) is matched
    /// by the hand-written check of [`crate::format`] whose acceptance is
    /// exactly that regex's, on every target, without compiling a regex
    /// (docs/formats.md, "`pattern`").
    #[must_use]
    pub const fn new(source: &'static str) -> Pattern {
        Pattern {
            shortcut: known::recognize(source),
            engine: Regexp::new(source),
        }
    }

    /// [`Pattern::new`] that always runs the regular-expression engine,
    /// even for a recognized zod source: the reference the recognized
    /// sources are tested against.
    #[must_use]
    pub const fn engine_only(source: &'static str) -> Pattern {
        Pattern {
            shortcut: None,
            engine: Regexp::new(source),
        }
    }

    /// The hand-written check that replaces `source` when it is one of
    /// zod 4's format regexes ([`Pattern::new`]), resolved at compile time:
    /// generated validators call it directly (`const C: Option<fn(&str)
    /// -> bool> = Pattern::recognized(SOURCE);`).
    #[must_use]
    pub const fn recognized(source: &str) -> Option<fn(&str) -> bool> {
        known::recognize(source)
    }

    /// Whether `source` is one of zod 4's format regexes that zod writes
    /// beside `format`, whose check accepts every string the regex matches
    /// (tested for each): a validator that checked the `pattern` need
    /// not check that `format` again.
    #[must_use]
    pub const fn covers_format(source: &str, format: &str) -> bool {
        known::covers(source, format)
    }

    /// Whether this pattern is matched by a hand-written check instead of
    /// the regular-expression engine (its source is one of zod 4's format
    /// regexes).
    #[must_use]
    pub const fn is_recognized(&self) -> bool {
        self.shortcut.is_some()
    }

    /// The pattern's source.
    #[must_use]
    pub const fn source(&self) -> &'static str {
        self.engine.source()
    }

    /// Whether the pattern matches anywhere in `haystack` (search, not
    /// full match).
    ///
    /// # Errors
    /// [`PatternError`] when the pattern does not compile on this platform
    /// (the same error on every call), or natively when this match exceeds
    /// [`BACKTRACK_LIMIT`].
    pub fn matches(&self, haystack: &str) -> Result<bool, PatternError> {
        self.search(haystack)
            .map_err(|problem| problem.for_pattern(self.source()))
    }

    /// [`Pattern::matches`], with a pattern that does not compile counted
    /// as no match (fail closed).
    #[must_use]
    pub fn is_match(&self, haystack: &str) -> bool {
        self.search(haystack).unwrap_or(false)
    }

    fn search(&self, haystack: &str) -> Result<bool, Problem> {
        match self.shortcut {
            Some(check) => Ok(check(haystack)),
            None => self.engine.search(haystack),
        }
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_searches_anywhere_unless_anchored() {
        static UNANCHORED: Pattern = Pattern::new("b+");
        static ANCHORED: Pattern = Pattern::new("^b+$");
        assert!(UNANCHORED.is_match("abbbc"));
        assert!(!ANCHORED.is_match("abbbc"));
        assert!(ANCHORED.is_match("bbb"));
        assert!(!UNANCHORED.is_match(""));
    }

    #[test]
    fn pattern_dollar_matches_only_at_the_end_not_before_a_final_newline() {
        static P: Pattern = Pattern::new("^a$");
        assert!(!P.is_match("a\n"));
    }

    #[test]
    fn pattern_uses_unicode_mode_code_points() {
        // With the u flag `.` is one code point, so an astral character is
        // one `.`; without it, it would be two UTF-16 units.
        static ONE: Pattern = Pattern::new("^.$");
        assert!(ONE.is_match("\u{1F600}"));
        static PROPERTY: Pattern = Pattern::new("^\\p{Lu}+$");
        assert!(PROPERTY.is_match("ÀB"));
        assert!(!PROPERTY.is_match("àb"));
    }

    #[test]
    fn pattern_supports_lookaround_and_backreferences() {
        static LOOK: Pattern = Pattern::new("^(?=.*\\d)(?<!x)[a-z0-9]+$");
        assert!(LOOK.is_match("abc1"));
        assert!(!LOOK.is_match("abc"));
        static BACKREF: Pattern = Pattern::new("^(\\w)\\1$");
        assert!(BACKREF.is_match("aa"));
        assert!(!BACKREF.is_match("ab"));
    }

    #[test]
    fn pattern_that_does_not_compile_is_an_error_never_an_accept() {
        static BAD: Pattern = Pattern::new("(unclosed");
        let err = BAD.matches("anything").unwrap_err();
        assert_eq!(err.pattern(), "(unclosed");
        assert_eq!(err.kind(), PatternErrorKind::Syntax);
        assert!(!err.message().is_empty());
        assert!(err
            .to_string()
            .starts_with("the pattern \"(unclosed\" does not compile"));
        assert!(!BAD.is_match("(unclosed"));
        // The same error on every call.
        assert_eq!(BAD.matches("x").unwrap_err(), err);
    }

    #[test]
    fn check_syntax_rejects_what_unicode_mode_rejects() {
        assert_eq!(check_syntax("^[a-z]+$"), Ok(()));
        assert_eq!(
            check_syntax("(").map_err(|e| (e.pattern().to_string(), e.kind())),
            Err(("(".to_string(), PatternErrorKind::Syntax))
        );
        assert!(check_syntax("[z-a]").is_err());
        // An identity escape of a non-syntax character is an error with `u`.
        assert!(check_syntax("\\q").is_err());
        // `\-` inside a class is allowed with `u` (zod's email pattern).
        assert_eq!(check_syntax("[a\\-z]"), Ok(()));
    }
}
