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

/// The most backtracking steps one native match may take before it stops
/// with a [`PatternError`] (`fancy-regex`'s default).
pub const BACKTRACK_LIMIT: usize = 1_000_000;

mod known;
#[cfg(not(target_arch = "wasm32"))]
mod translate;

/// The flags every `pattern` is compiled with: Unicode mode, as Ajv's
/// default `unicodeRegExp: true` (`new RegExp(pattern, "u")`).
pub const FLAGS: &str = "u";

/// A JSON Schema `pattern`, compiled on first use and kept for the life of
/// the value (a `static` compiles once per process; on wasm32, once per
/// thread, since JavaScript objects cannot be shared).
pub struct Pattern {
    source: &'static str,
    /// The hand-written check for a recognized zod source (module `known`).
    shortcut: Option<fn(&str) -> bool>,
    #[cfg(not(target_arch = "wasm32"))]
    compiled: std::sync::OnceLock<Result<fancy_regex::Regex, Problem>>,
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
            source,
            shortcut: known::recognize(source),
            #[cfg(not(target_arch = "wasm32"))]
            compiled: std::sync::OnceLock::new(),
        }
    }

    /// [`Pattern::new`] that always runs the regular-expression engine,
    /// even for a recognized zod source: the reference the recognized
    /// sources are tested against.
    #[must_use]
    pub const fn engine_only(source: &'static str) -> Pattern {
        Pattern {
            source,
            shortcut: None,
            #[cfg(not(target_arch = "wasm32"))]
            compiled: std::sync::OnceLock::new(),
        }
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
        self.source
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
            .map_err(|problem| problem.for_pattern(self.source))
    }

    /// [`Pattern::matches`], with a pattern that does not compile counted
    /// as no match (fail closed).
    #[must_use]
    pub fn is_match(&self, haystack: &str) -> bool {
        self.search(haystack).unwrap_or(false)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn search(&self, haystack: &str) -> Result<bool, Problem> {
        if let Some(check) = self.shortcut {
            return Ok(check(haystack));
        }
        match self.compiled.get_or_init(|| compile(self.source)) {
            Ok(regex) => regex.is_match(haystack).map_err(|e| Problem {
                kind: PatternErrorKind::StepLimit,
                message: format!("{e}"),
            }),
            Err(problem) => Err(problem.clone()),
        }
    }

    #[cfg(target_arch = "wasm32")]
    fn search(&self, haystack: &str) -> Result<bool, Problem> {
        if let Some(check) = self.shortcut {
            return Ok(check(haystack));
        }
        js::with_regexp(self.source, |regexp| regexp.test(haystack))
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

/// Checks that `source` compiles as an ECMA-262 expression with the `u`
/// flag (natively with `regress`, on wasm32 with the JavaScript engine),
/// for code generators that reject a bad `pattern` at build time.
///
/// # Errors
/// A [`PatternError`] ([`PatternErrorKind::Syntax`] or
/// [`PatternErrorKind::Unsupported`]) when the pattern does not compile.
pub fn check_syntax(source: &str) -> Result<(), PatternError> {
    #[cfg(not(target_arch = "wasm32"))]
    let compiled = compile(source).map(drop);
    #[cfg(target_arch = "wasm32")]
    let compiled = js::compile(source).map(drop);
    compiled.map_err(|problem| problem.for_pattern(source))
}

#[cfg(not(target_arch = "wasm32"))]
fn compile(source: &str) -> Result<fancy_regex::Regex, Problem> {
    regress::Regex::with_flags(source, FLAGS).map_err(|e| Problem {
        kind: PatternErrorKind::Syntax,
        message: e.to_string(),
    })?;
    fancy_regex::RegexBuilder::new(&translate::to_fancy(source))
        .backtrack_limit(BACKTRACK_LIMIT)
        .build()
        .map_err(|e| Problem {
            kind: PatternErrorKind::Unsupported,
            message: e.to_string(),
        })
}

/// A pattern's problem before it is tied to its source.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    kind: PatternErrorKind,
    message: String,
}

impl Problem {
    fn for_pattern(self, source: &str) -> PatternError {
        PatternError {
            source: source.to_string(),
            kind: self.kind,
            message: self.message,
        }
    }
}

/// What went wrong with a `pattern` ([`PatternError::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatternErrorKind {
    /// Not an ECMA-262 regular expression with the `u` flag (natively
    /// `regress` refuses it; on wasm32 the JavaScript engine does).
    Syntax,
    /// Valid ECMA-262, but the native engine cannot run it.
    Unsupported,
    /// A native match needed more than [`BACKTRACK_LIMIT`] backtracking
    /// steps and stopped (fail closed).
    StepLimit,
}

/// A `pattern` that does not compile on this platform, or a native match
/// that exceeded [`BACKTRACK_LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    source: String,
    kind: PatternErrorKind,
    message: String,
}

impl PatternError {
    /// The pattern's source.
    #[must_use]
    pub fn pattern(&self) -> &str {
        &self.source
    }

    /// What went wrong.
    #[must_use]
    pub fn kind(&self) -> PatternErrorKind {
        self.kind
    }

    /// The regular-expression engine's message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (source, message) = (&self.source, &self.message);
        match self.kind {
            PatternErrorKind::Syntax => write!(
                f,
                "the pattern {source:?} does not compile as an ECMA-262 regular expression: {message}; fix the schema's `pattern`"
            ),
            PatternErrorKind::Unsupported => write!(
                f,
                "the pattern {source:?} does not compile as an ECMA-262 regular expression: not supported by the native engine: {message}"
            ),
            PatternErrorKind::StepLimit => write!(
                f,
                "matching the pattern {source:?} stopped after {BACKTRACK_LIMIT} backtracking steps ({message}); the value is treated as not matching"
            ),
        }
    }
}

impl std::error::Error for PatternError {}

#[cfg(target_arch = "wasm32")]
pub(crate) mod js {
    //! The JavaScript engine's `RegExp` and `URL`, looked up on the global
    //! object and constructed through `Reflect.construct` (a constructor
    //! that throws is an `Err`, never an abort).

    use std::cell::RefCell;
    use std::collections::HashMap;

    use js_sys::{Array, Function, Reflect, RegExp};
    use wasm_bindgen::{JsCast, JsValue};

    thread_local! {
        static REGEXPS: RefCell<HashMap<&'static str, Result<RegExp, super::Problem>>> =
            RefCell::new(HashMap::new());
        static URL: Option<Function> = constructor("URL");
        static REGEXP: Option<Function> = constructor("RegExp");
    }

    fn constructor(name: &str) -> Option<Function> {
        Reflect::get(&js_sys::global(), &JsValue::from_str(name))
            .ok()?
            .dyn_into::<Function>()
            .ok()
    }

    fn message(error: &JsValue) -> String {
        error
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .unwrap_or_else(|| "the JavaScript engine refused it".to_string())
    }

    pub(super) fn compile(source: &str) -> Result<RegExp, super::Problem> {
        let args = Array::of2(&JsValue::from_str(source), &JsValue::from_str(super::FLAGS));
        let syntax = |message: String| super::Problem {
            kind: super::PatternErrorKind::Syntax,
            message,
        };
        REGEXP.with(|ctor| {
            let ctor = ctor
                .as_ref()
                .ok_or_else(|| syntax("this JavaScript host has no RegExp".to_string()))?;
            Reflect::construct(ctor, &args)
                .map(JsCast::unchecked_into::<RegExp>)
                .map_err(|e| syntax(message(&e)))
        })
    }

    pub(super) fn with_regexp<T>(
        source: &'static str,
        f: impl FnOnce(&RegExp) -> T,
    ) -> Result<T, super::Problem> {
        REGEXPS.with(|cache| {
            let mut cache = cache.borrow_mut();
            let entry = cache.entry(source).or_insert_with(|| compile(source));
            match entry {
                Ok(regexp) => Ok(f(regexp)),
                Err(problem) => Err(problem.clone()),
            }
        })
    }

    /// `new URL(input)` succeeds (WHATWG URL parsing, no base). A host
    /// without a `URL` global refuses every input.
    ///
    /// Chromium's `URL` accepts forbidden host code points in special-scheme
    /// URLs and percent-encodes them (`http://exa mple.com` has the
    /// hostname `exa%20mple.com`), where the WHATWG parser — Node's, so
    /// zod's — fails. A valid special-scheme host never contains `%` (it is
    /// itself forbidden after percent-decoding), so such a parse is
    /// refused here too.
    pub(crate) fn can_parse_url(input: &str) -> bool {
        URL.with(|ctor| {
            ctor.as_ref().is_some_and(|ctor| {
                match Reflect::construct(ctor, &Array::of1(&JsValue::from_str(input))) {
                    Ok(url) => !escaped_special_host(&url),
                    Err(_) => false,
                }
            })
        })
    }

    fn escaped_special_host(url: &JsValue) -> bool {
        let field = |name: &str| {
            Reflect::get(url, &JsValue::from_str(name))
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default()
        };
        let special = matches!(
            field("protocol").as_str(),
            "http:" | "https:" | "ws:" | "wss:" | "ftp:" | "file:"
        );
        special && field("hostname").contains('%')
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
