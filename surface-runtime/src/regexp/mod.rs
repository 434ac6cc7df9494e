//! ECMA-262 regular expressions with the `u` flag, compiled on first use:
//! the engine under [`crate::pattern`] (which adds the recognized zod
//! sources) and the regex-based `format` checks ([`crate::format`]).
//!
//! Natively a source is checked with `regress` (an exact ECMA-262 parser),
//! rewritten into `fancy-regex` syntax with the same meaning (module
//! `translate`) and matched by `fancy-regex` within [`BACKTRACK_LIMIT`]; on
//! wasm32 it is the JavaScript engine's own `RegExp`. The semantics are
//! described in docs/formats.md, "`pattern`", and in [`crate::pattern`].

use std::fmt;

/// The most backtracking steps one native match may take before it stops
/// with a [`PatternError`] (`fancy-regex`'s default).
pub const BACKTRACK_LIMIT: usize = 1_000_000;

#[cfg(not(target_arch = "wasm32"))]
mod translate;

/// The flags every `pattern` is compiled with: Unicode mode, as Ajv's
/// default `unicodeRegExp: true` (`new RegExp(pattern, "u")`).
pub const FLAGS: &str = "u";

/// A regular expression from its ECMA-262 source, compiled on first use
/// and kept for the life of the value (usable in a `static`).
pub(crate) struct Regexp {
    source: &'static str,
    #[cfg(not(target_arch = "wasm32"))]
    compiled: std::sync::OnceLock<Result<fancy_regex::Regex, Problem>>,
}

impl Regexp {
    /// The expression of `source`; nothing is compiled yet.
    pub(crate) const fn new(source: &'static str) -> Regexp {
        Regexp {
            source,
            #[cfg(not(target_arch = "wasm32"))]
            compiled: std::sync::OnceLock::new(),
        }
    }

    /// The source.
    pub(crate) const fn source(&self) -> &'static str {
        self.source
    }

    /// Whether the expression matches anywhere in `haystack`.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn search(&self, haystack: &str) -> Result<bool, Problem> {
        match self.compiled.get_or_init(|| compile(self.source)) {
            Ok(regex) => regex.is_match(haystack).map_err(|e| Problem {
                kind: PatternErrorKind::StepLimit,
                message: format!("{e}"),
            }),
            Err(problem) => Err(problem.clone()),
        }
    }

    /// Whether the expression matches anywhere in `haystack`.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn search(&self, haystack: &str) -> Result<bool, Problem> {
        js::with_regexp(self.source, |regexp| regexp.test(haystack))
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
pub(crate) struct Problem {
    kind: PatternErrorKind,
    message: String,
}

impl Problem {
    /// The error for the pattern `source`.
    pub(crate) fn for_pattern(self, source: &str) -> PatternError {
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
    //! The JavaScript engine's `RegExp`, looked up on the global object and
    //! constructed through `Reflect.construct` (a constructor that throws
    //! is an `Err`, never an abort).

    use std::cell::RefCell;
    use std::collections::HashMap;

    use js_sys::{Array, Function, Reflect, RegExp};
    use wasm_bindgen::{JsCast, JsValue};

    thread_local! {
        static REGEXPS: RefCell<HashMap<&'static str, Result<RegExp, super::Problem>>> =
            RefCell::new(HashMap::new());
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
}
