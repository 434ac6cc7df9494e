//! OpenAI strict function schemas (docs/agents.md, "OpenAI strict mode").
//!
//! [`strict_schema`] turns a [normalized](super::schema::normalize) input
//! schema into one that OpenAI accepts with `"strict": true` (Structured
//! Outputs for function calling), or says why it cannot ([`NotStrict`]).
//! [`check_strict_schema`] checks a schema against the rules on its own; the
//! transform runs it on its own output, so a schema that fails the rules is
//! never returned as strict.
//!
//! The rules enforced (OpenAI's documented rules, some of them tightened):
//!
//! * the root is `{"type": "object", …}`, never a union;
//! * every schema node is a `$ref` alone (`#/$defs/<name>`), an `anyOf`
//!   (with only `description`/`title` beside it), or has one `type` among
//!   `string`, `number`, `integer`, `boolean`, `object`, `array`, `null`;
//! * every object has `properties`, `additionalProperties: false`, and
//!   lists every property in `required`;
//! * every array has `items`;
//! * only these keywords: `type`, `description`, `title`, `enum`
//!   (scalars of the node's type), `pattern` and `format` (`date-time`,
//!   `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`,
//!   `uuid`) on strings, `minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`, `multipleOf` on numbers, `minItems`, `maxItems` on
//!   arrays, `$defs` at the root;
//! * limits ([`StrictLimits`]): 5,000 object properties in total, 10 levels
//!   of object nesting, 120,000 characters of property names, definition
//!   names and enum values, 1,000 enum values, and 15,000 characters for one
//!   string enum of more than 250 values.
//!
//! What the transform does: optional properties become required and accept
//! `null` (an `anyOf` with `{"type": "null"}`); objects get
//! `additionalProperties: false`; `oneOf` becomes `anyOf`; `const` becomes a
//! one-value `enum`; a tuple's items become the `anyOf` of its item schemas;
//! unsupported constraint keywords are dropped (a loosening: the pipeline
//! still validates). It refuses (→ exported with `strict: false`) what
//! strict mode cannot express without changing the meaning: open objects
//! and records, free-form values, `allOf` that does not merge, and optional
//! properties that already accept `null` (absent and `null` may mean
//! different things to the procedure, e.g. "keep" and "clear").
//!
//! A strict model sends `null` for an optional property it leaves out;
//! [`StrictSchema::strip_absent_nulls`] turns those back into absent
//! properties before the call reaches the pipeline.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use surface_manifest::schema::push_token;

/// Internal keyword of the call plan: the optional properties of an object
/// whose `null` means "absent". Never exported (every other keyword of the
/// plan is whitelisted, so it cannot clash with a schema's own keyword).
const ABSENT_IF_NULL: &str = "x-agent-surface-absent-if-null";

/// String formats OpenAI strict mode supports.
pub const SUPPORTED_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Deepest schema nesting the transform and the checker walk.
const MAX_WALK_DEPTH: usize = 128;
/// Work budget of one [`StrictSchema::strip_absent_nulls`] call (schema
/// checks); beyond it no further `null` is removed.
pub const MAX_STRIP_STEPS: usize = 100_000;

/// OpenAI's documented size limits of a strict schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictLimits {
    /// Object properties in the whole schema; default 5,000.
    pub max_properties: usize,
    /// Levels of object nesting (the root object is level 1); default 10.
    pub max_object_depth: usize,
    /// Characters of all property names, definition names and string enum
    /// values; default 120,000.
    pub max_string_chars: usize,
    /// Enum values in the whole schema; default 1,000.
    pub max_enum_values: usize,
    /// A string enum with more values than this…; default 250.
    pub large_enum_values: usize,
    /// …may total at most this many characters; default 15,000.
    pub large_enum_chars: usize,
}

impl Default for StrictLimits {
    fn default() -> Self {
        Self {
            max_properties: 5_000,
            max_object_depth: 10,
            max_string_chars: 120_000,
            max_enum_values: 1_000,
            large_enum_values: 250,
            large_enum_chars: 15_000,
        }
    }
}

/// Options of [`strict_schema`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrictOptions {
    /// The callee treats `null` and an absent property alike (true for view
    /// capabilities, whose input is deserialized with serde, where an
    /// `Option` field is `None` either way). Then an optional property that
    /// accepts `null` stays strict-exportable and its `null` is removed
    /// too. Default false (procedures: `null` is passed on as `null`, and
    /// such a property makes the schema non-strict unless its `default` is
    /// `null`).
    pub null_is_absent: bool,
    /// Size limits; default [`StrictLimits::default`].
    pub limits: StrictLimits,
}

/// A strict schema and the plan to map the strict model's calls back.
#[derive(Clone, Debug, PartialEq)]
pub struct StrictSchema {
    parameters: Arc<Value>,
    plan: Option<Arc<Value>>,
}

impl StrictSchema {
    /// The schema to send as the function's `parameters` with
    /// `"strict": true`.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// Whether some optional property was made nullable (so calls may carry
    /// `null`s to remove).
    pub fn has_absent_nulls(&self) -> bool {
        self.plan.is_some()
    }

    /// Removes, in the arguments of a strict call, every `null` that stands
    /// for an absent optional property (recursively, following the schema
    /// through objects, arrays, unions and `$defs`). A `null` the original
    /// schema allows for that property is kept. In a union, nulls are
    /// removed only below the one branch the value matches; when several
    /// branches match, that part is left alone (the pipeline then reports
    /// `INVALID_INPUT` rather than a guess changing the call). Returns the
    /// number of properties removed. Bounded by [`MAX_STRIP_STEPS`] schema
    /// checks and 128 levels of nesting.
    pub fn strip_absent_nulls(&self, arguments: &mut Value) -> usize {
        let Some(plan) = &self.plan else {
            return 0;
        };
        let mut s = Stripper {
            defs: plan.get("$defs").and_then(Value::as_object),
            steps: 0,
            exhausted: false,
            removed: 0,
        };
        s.strip(arguments, plan, 0);
        s.removed
    }
}

/// Why a schema was exported with `"strict": false`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotStrict {
    /// JSON pointer into the normalized input schema.
    pub path: String,
    /// The reason.
    pub reason: NotStrictReason,
}

impl fmt::Display for NotStrict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() {
            "the root"
        } else {
            &self.path
        };
        write!(f, "not strict-mode compatible at {at}: {}", self.reason)
    }
}

impl std::error::Error for NotStrict {}

/// Why strict mode cannot express a schema (machine-readable:
/// [`NotStrictReason::code`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotStrictReason {
    /// The root is not `{"type": "object"}`.
    RootNotObject,
    /// The root is a union of objects.
    RootUnion,
    /// A value with no constraint (`{}`, `true`): strict mode has no "any".
    Unconstrained,
    /// A schema no value matches.
    NeverValid,
    /// An object without declared properties (a free-form object).
    FreeFormObject,
    /// An object that allows more properties (`additionalProperties` not
    /// `false`: records, loose objects).
    OpenObject,
    /// `patternProperties`.
    PatternProperties,
    /// An array without `items`.
    UnconstrainedItems,
    /// A tuple that only allows the empty array.
    Tuple,
    /// An `allOf` that could not be merged.
    AllOf,
    /// A union beside `type`/`properties`/`items`/`enum` keywords.
    UnionWithSiblings,
    /// Both `anyOf` and `oneOf` on one node.
    AnyOfAndOneOf,
    /// An `enum`/`const` with object or array values.
    CompoundEnum,
    /// A `type` strict mode does not know.
    UnsupportedType,
    /// No `type`, union, reference or enum.
    Untyped,
    /// `required` names a property that is not declared.
    RequiredNotAProperty,
    /// An optional property that already accepts `null`, without
    /// `"default": null`: a strict model could not leave it out.
    OptionalNullable,
    /// A `$ref` that is not `#/$defs/<name>` of this schema.
    UnresolvedRef,
    /// Nesting beyond 128 schema levels.
    TooDeep,
    /// The output broke a rule of [`check_strict_schema`] (limits included).
    Rule(StrictRule),
}

impl NotStrictReason {
    /// A stable kebab-case code (`"open-object"`, `"rule:too-many-properties"`, …).
    pub fn code(&self) -> String {
        let plain = match self {
            NotStrictReason::RootNotObject => "root-not-object",
            NotStrictReason::RootUnion => "root-union",
            NotStrictReason::Unconstrained => "unconstrained",
            NotStrictReason::NeverValid => "never-valid",
            NotStrictReason::FreeFormObject => "free-form-object",
            NotStrictReason::OpenObject => "open-object",
            NotStrictReason::PatternProperties => "pattern-properties",
            NotStrictReason::UnconstrainedItems => "unconstrained-items",
            NotStrictReason::Tuple => "tuple",
            NotStrictReason::AllOf => "all-of",
            NotStrictReason::UnionWithSiblings => "union-with-siblings",
            NotStrictReason::AnyOfAndOneOf => "any-of-and-one-of",
            NotStrictReason::CompoundEnum => "compound-enum",
            NotStrictReason::UnsupportedType => "unsupported-type",
            NotStrictReason::Untyped => "untyped",
            NotStrictReason::RequiredNotAProperty => "required-not-a-property",
            NotStrictReason::OptionalNullable => "optional-nullable",
            NotStrictReason::UnresolvedRef => "unresolved-ref",
            NotStrictReason::TooDeep => "too-deep",
            NotStrictReason::Rule(rule) => return format!("rule:{}", rule.code()),
        };
        plain.to_string()
    }
}

impl fmt::Display for NotStrictReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            NotStrictReason::RootNotObject => "the root is not an object schema",
            NotStrictReason::RootUnion => "the root is a union",
            NotStrictReason::Unconstrained => "a value without any constraint",
            NotStrictReason::NeverValid => "a schema no value matches",
            NotStrictReason::FreeFormObject => "an object without declared properties",
            NotStrictReason::OpenObject => "an object that allows undeclared properties",
            NotStrictReason::PatternProperties => "patternProperties",
            NotStrictReason::UnconstrainedItems => "an array without items",
            NotStrictReason::Tuple => "a tuple that allows only the empty array",
            NotStrictReason::AllOf => "an allOf that cannot be merged",
            NotStrictReason::UnionWithSiblings => "a union beside other structural keywords",
            NotStrictReason::AnyOfAndOneOf => "anyOf and oneOf on one schema",
            NotStrictReason::CompoundEnum => "an enum or const with object or array values",
            NotStrictReason::UnsupportedType => "an unsupported type",
            NotStrictReason::Untyped => "a schema without type",
            NotStrictReason::RequiredNotAProperty => "required names an undeclared property",
            NotStrictReason::OptionalNullable => {
                "an optional property that accepts null (absent and null may differ)"
            }
            NotStrictReason::UnresolvedRef => "a reference outside #/$defs",
            NotStrictReason::TooDeep => "nesting deeper than 128 levels",
            NotStrictReason::Rule(rule) => return write!(f, "{rule}"),
        };
        f.write_str(text)
    }
}

/// A broken strict-mode rule found by [`check_strict_schema`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictViolation {
    /// JSON pointer into the checked schema (`""` for limits over the whole
    /// schema).
    pub path: String,
    /// The rule.
    pub rule: StrictRule,
}

impl fmt::Display for StrictViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() {
            "the root"
        } else {
            &self.path
        };
        write!(f, "strict-mode rule broken at {at}: {}", self.rule)
    }
}

impl std::error::Error for StrictViolation {}

/// One strict-mode rule (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StrictRule {
    /// A schema position holds something other than a JSON object.
    NotAnObjectSchema,
    /// The root is not `{"type": "object"}`.
    RootNotObject,
    /// The root is a union.
    RootUnion,
    /// `$ref` with other keywords.
    RefWithSiblings,
    /// `$ref` not to `#` or an existing `#/$defs/<name>`.
    UnresolvedRef,
    /// `anyOf` with keywords other than `description`/`title`.
    KeywordBesideAnyOf,
    /// `anyOf` that is not a non-empty array.
    EmptyAnyOf,
    /// A keyword outside the supported set.
    UnsupportedKeyword(String),
    /// No `type` (and no `$ref`/`anyOf`).
    MissingType,
    /// `type` is not one supported type name.
    UnsupportedType,
    /// A keyword that does not belong to the node's type.
    KeywordNotForType(String),
    /// `format` outside [`SUPPORTED_FORMATS`].
    UnsupportedFormat,
    /// A `pattern` using constructs that are not portable (lookaround,
    /// backreferences, inline flags…) or longer than 1,000 characters.
    UnsupportedPattern,
    /// `enum` empty, not an array, or with values not of the node's type.
    BadEnum,
    /// An object without `properties`.
    MissingProperties,
    /// An object whose `additionalProperties` is not `false`.
    AdditionalPropertiesNotFalse,
    /// A property missing from `required`.
    PropertyNotRequired(String),
    /// `required` is not exactly the list of properties.
    BadRequired,
    /// An array without an `items` schema.
    MissingItems,
    /// A numeric keyword with a value that is not a (positive, for
    /// `multipleOf`; non-negative integer, for item counts) number.
    BadNumber(String),
    /// More object nesting than [`StrictLimits::max_object_depth`].
    TooDeep,
    /// More properties than [`StrictLimits::max_properties`].
    TooManyProperties,
    /// More characters than [`StrictLimits::max_string_chars`].
    TooManyStringChars,
    /// More enum values than [`StrictLimits::max_enum_values`].
    TooManyEnumValues,
    /// A large string enum over [`StrictLimits::large_enum_chars`].
    LargeEnumTooLong,
}

impl StrictRule {
    /// A stable kebab-case code.
    pub fn code(&self) -> &'static str {
        match self {
            StrictRule::NotAnObjectSchema => "not-an-object-schema",
            StrictRule::RootNotObject => "root-not-object",
            StrictRule::RootUnion => "root-union",
            StrictRule::RefWithSiblings => "ref-with-siblings",
            StrictRule::UnresolvedRef => "unresolved-ref",
            StrictRule::KeywordBesideAnyOf => "keyword-beside-any-of",
            StrictRule::EmptyAnyOf => "empty-any-of",
            StrictRule::UnsupportedKeyword(_) => "unsupported-keyword",
            StrictRule::MissingType => "missing-type",
            StrictRule::UnsupportedType => "unsupported-type",
            StrictRule::KeywordNotForType(_) => "keyword-not-for-type",
            StrictRule::UnsupportedFormat => "unsupported-format",
            StrictRule::UnsupportedPattern => "unsupported-pattern",
            StrictRule::BadEnum => "bad-enum",
            StrictRule::MissingProperties => "missing-properties",
            StrictRule::AdditionalPropertiesNotFalse => "additional-properties-not-false",
            StrictRule::PropertyNotRequired(_) => "property-not-required",
            StrictRule::BadRequired => "bad-required",
            StrictRule::MissingItems => "missing-items",
            StrictRule::BadNumber(_) => "bad-number",
            StrictRule::TooDeep => "too-deep",
            StrictRule::TooManyProperties => "too-many-properties",
            StrictRule::TooManyStringChars => "too-many-string-chars",
            StrictRule::TooManyEnumValues => "too-many-enum-values",
            StrictRule::LargeEnumTooLong => "large-enum-too-long",
        }
    }
}

impl fmt::Display for StrictRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrictRule::UnsupportedKeyword(k) => write!(f, "unsupported keyword `{k}`"),
            StrictRule::KeywordNotForType(k) => write!(f, "keyword `{k}` does not fit the type"),
            StrictRule::PropertyNotRequired(p) => write!(f, "property `{p}` is not in required"),
            StrictRule::BadNumber(k) => write!(f, "`{k}` has an invalid value"),
            other => f.write_str(other.code()),
        }
    }
}

// ----- helpers ---------------------------------------------------------------------

/// Whether a `pattern` uses only widely supported regex syntax: no
/// lookaround, named groups or inline flags (`(?` other than `(?:`), no
/// backreferences or exotic escapes, at most 1,000 characters.
pub(crate) fn pattern_is_portable(pattern: &str) -> bool {
    if pattern.chars().count() > 1_000 {
        return false;
    }
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                match bytes.get(i + 1) {
                    Some(
                        b'1'..=b'9'
                        | b'k'
                        | b'p'
                        | b'P'
                        | b'X'
                        | b'G'
                        | b'A'
                        | b'Z'
                        | b'z'
                        | b'Q'
                        | b'E',
                    )
                    | None => return false,
                    _ => {}
                }
                i += 2;
            }
            b'(' if bytes.get(i + 1) == Some(&b'?') => {
                if bytes.get(i + 2) != Some(&b':') {
                    return false;
                }
                i += 3;
            }
            _ => i += 1,
        }
    }
    true
}

fn annotations(m: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for key in ["description", "title"] {
        if let Some(v @ Value::String(_)) = m.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out
}

fn is_bare_union(m: &Map<String, Value>) -> bool {
    matches!(m.get("anyOf"), Some(Value::Array(_)))
        && m.keys()
            .all(|k| k == "anyOf" || k == "description" || k == "title")
}

fn null_schema() -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("null".into()));
    Value::Object(m)
}

/// `t ∨ null`, keeping the description on the outside.
fn nullable(t: Value) -> Value {
    match t {
        Value::Object(mut m) if is_bare_union(&m) => {
            if let Some(Value::Array(branches)) = m.get_mut("anyOf") {
                branches.push(null_schema());
            }
            Value::Object(m)
        }
        Value::Object(mut m) => {
            let mut outer = Map::new();
            for key in ["description", "title"] {
                if let Some(v) = m.remove(key) {
                    outer.insert(key.into(), v);
                }
            }
            outer.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(m), null_schema()]),
            );
            Value::Object(outer)
        }
        other => other,
    }
}

/// Whether a schema of the strict subset accepts `null`.
fn strict_accepts_null(t: &Value) -> bool {
    match t.get("anyOf") {
        Some(Value::Array(branches)) => branches.iter().any(strict_accepts_null),
        _ => t.get("type").and_then(Value::as_str) == Some("null"),
    }
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        _ => a == b,
    }
}

// ----- transform ---------------------------------------------------------------------

/// Converts a normalized input schema (see [`super::schema::normalize`]:
/// single `type`s, local references only under the root `$defs`) into a
/// strict one.
///
/// # Errors
/// [`NotStrict`] with the place and the reason when strict mode cannot
/// express the schema; the caller then exports it with `strict: false`.
pub fn strict_schema(schema: &Value, options: &StrictOptions) -> Result<StrictSchema, NotStrict> {
    let root_error = |reason| NotStrict {
        path: String::new(),
        reason,
    };
    let Value::Object(root) = schema else {
        return Err(root_error(NotStrictReason::RootNotObject));
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(root_error(NotStrictReason::RootNotObject));
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(branches) = root.get(keyword) {
            if !branches
                .as_array()
                .is_some_and(|b| b.iter().all(constraints_only))
            {
                return Err(root_error(NotStrictReason::RootUnion));
            }
        }
    }
    let defs = match root.get("$defs") {
        None => None,
        Some(Value::Object(d)) => Some(d),
        Some(_) => return Err(root_error(NotStrictReason::UnresolvedRef)),
    };
    let mut s = Strictifier {
        defs,
        options,
        path: String::new(),
        marked: false,
    };
    let mut out = s.node(schema, 0, true)?;
    if let (Some(defs), Value::Object(m)) = (defs, &mut out) {
        let mut converted = Map::new();
        for (name, body) in defs {
            s.path.clear();
            push_token(&mut s.path, "$defs");
            push_token(&mut s.path, name);
            converted.insert(name.clone(), s.node(body, 0, false)?);
        }
        m.insert("$defs".into(), Value::Object(converted));
    }
    let (parameters, plan) = if s.marked {
        (without_markers(&out), Some(Arc::new(out)))
    } else {
        (out, None)
    };
    check_strict_schema(&parameters, &options.limits).map_err(|v| NotStrict {
        path: v.path,
        reason: NotStrictReason::Rule(v.rule),
    })?;
    Ok(StrictSchema {
        parameters: Arc::new(parameters),
        plan,
    })
}

struct Strictifier<'a> {
    defs: Option<&'a Map<String, Value>>,
    options: &'a StrictOptions,
    path: String,
    marked: bool,
}

/// A union branch that only adds constraints (`{"required": ["a"]}`), no
/// type, value set or declared structure of its own: dropping a union of
/// such branches only loosens.
fn constraints_only(branch: &Value) -> bool {
    branch.as_object().is_some_and(|b| {
        ![
            "type",
            "enum",
            "const",
            "$ref",
            "anyOf",
            "oneOf",
            "allOf",
            "properties",
            "additionalProperties",
            "patternProperties",
            "items",
            "prefixItems",
        ]
        .iter()
        .any(|k| b.contains_key(*k))
    })
}

const STRUCTURAL: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "items",
    "prefixItems",
    "enum",
    "const",
];

impl Strictifier<'_> {
    fn fail(&self, reason: NotStrictReason) -> NotStrict {
        NotStrict {
            path: self.path.clone(),
            reason,
        }
    }

    fn child(&mut self, tokens: &[&str], v: &Value, depth: usize) -> Result<Value, NotStrict> {
        let len = self.path.len();
        for t in tokens {
            push_token(&mut self.path, t);
        }
        let out = self.node(v, depth + 1, false);
        self.path.truncate(len);
        out
    }

    fn node(&mut self, s: &Value, depth: usize, root: bool) -> Result<Value, NotStrict> {
        if depth > MAX_WALK_DEPTH {
            return Err(self.fail(NotStrictReason::TooDeep));
        }
        let m = match s {
            Value::Object(m) => m,
            Value::Bool(false) => return Err(self.fail(NotStrictReason::NeverValid)),
            _ => return Err(self.fail(NotStrictReason::Unconstrained)),
        };
        if m.keys()
            .all(|k| super::schema::ANNOTATIONS.contains(&k.as_str()))
        {
            return Err(self.fail(NotStrictReason::Unconstrained));
        }
        if let Some(r) = m.get("$ref") {
            let known = r
                .as_str()
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .is_some_and(|name| self.defs.is_some_and(|d| d.contains_key(name)));
            if !known {
                return Err(self.fail(NotStrictReason::UnresolvedRef));
            }
            let mut out = Map::new();
            out.insert("$ref".into(), r.clone());
            return Ok(Value::Object(out));
        }
        if m.contains_key("allOf") {
            return Err(self.fail(NotStrictReason::AllOf));
        }
        let union = match (m.get("anyOf"), m.get("oneOf")) {
            (Some(_), Some(_)) => return Err(self.fail(NotStrictReason::AnyOfAndOneOf)),
            (Some(Value::Array(b)), None) => Some(("anyOf", b)),
            (None, Some(Value::Array(b))) => Some(("oneOf", b)),
            _ => None,
        };
        if let Some((keyword, branches)) = union {
            let structural = STRUCTURAL.iter().any(|k| m.contains_key(*k));
            if !structural {
                return self.union(keyword, branches, annotations(m), depth);
            }
            // A union of bare constraints beside a typed schema (e.g.
            // "one of these properties is required") is dropped: a
            // loosening. Any other union beside structure is refused.
            if !branches.iter().all(constraints_only) {
                // `{"type": "object", "oneOf": [{…}, {…}]}`: the siblings
                // go into every branch when that is exact.
                let merged = self.distribute(keyword, m, branches)?;
                return self.union(keyword, &merged, annotations(m), depth);
            }
        }
        match m.get("type") {
            Some(Value::String(t)) => self.typed(t, m, depth, root),
            Some(_) => Err(self.fail(NotStrictReason::UnsupportedType)),
            None => self.untyped(m, depth),
        }
    }

    /// `siblings ∧ (b1 ∨ b2 …)` as `(siblings ∧ b1) ∨ …`, each conjunction
    /// merged into one schema; refused when a merge would not be exact.
    fn distribute(
        &self,
        keyword: &str,
        m: &Map<String, Value>,
        branches: &[Value],
    ) -> Result<Vec<Value>, NotStrict> {
        let siblings: Map<String, Value> = m
            .iter()
            .filter(|(k, _)| *k != keyword && !super::schema::ANNOTATIONS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut merged = Vec::with_capacity(branches.len());
        for b in branches {
            match b {
                Value::Bool(true) => merged.push(Value::Object(siblings.clone())),
                Value::Bool(false) => {}
                Value::Object(b) => match super::schema::merge_exact(b, &siblings) {
                    Some(one) => merged.push(Value::Object(one)),
                    None => return Err(self.fail(NotStrictReason::UnionWithSiblings)),
                },
                _ => return Err(self.fail(NotStrictReason::UnionWithSiblings)),
            }
        }
        Ok(merged)
    }

    fn union(
        &mut self,
        keyword: &str,
        branches: &[Value],
        ann: Map<String, Value>,
        depth: usize,
    ) -> Result<Value, NotStrict> {
        let mut out: Vec<Value> = Vec::with_capacity(branches.len());
        for (i, b) in branches.iter().enumerate() {
            match self.child(&[keyword, &i.to_string()], b, depth)? {
                Value::Object(mut t) if is_bare_union(&t) => {
                    if let Some(Value::Array(inner)) = t.remove("anyOf") {
                        out.extend(inner);
                    }
                }
                t => out.push(t),
            }
        }
        if out.is_empty() {
            return Err(self.fail(NotStrictReason::NeverValid));
        }
        let mut node = ann;
        node.insert("anyOf".into(), Value::Array(out));
        Ok(Value::Object(node))
    }

    /// `enum`/`const` without `type`: the type is inferred from the values.
    fn untyped(&mut self, m: &Map<String, Value>, depth: usize) -> Result<Value, NotStrict> {
        let values: Vec<Value> = match (m.get("enum"), m.get("const")) {
            (Some(Value::Array(e)), None) => e.clone(),
            (None, Some(c)) => vec![c.clone()],
            (Some(Value::Array(e)), Some(c)) => {
                if !e.iter().any(|v| scalar_eq(v, c)) {
                    return Err(self.fail(NotStrictReason::NeverValid));
                }
                vec![c.clone()]
            }
            _ => return Err(self.fail(NotStrictReason::Untyped)),
        };
        let mut groups: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for v in values {
            let ty = crate::json::type_name(&v);
            if ty == "object" || ty == "array" {
                return Err(self.fail(NotStrictReason::CompoundEnum));
            }
            match groups.iter_mut().find(|(t, _)| *t == ty) {
                Some((_, vs)) => vs.push(v),
                None => groups.push((ty, vec![v])),
            }
        }
        if groups.is_empty() {
            return Err(self.fail(NotStrictReason::NeverValid));
        }
        let typed: Vec<Value> = groups
            .into_iter()
            .map(|(ty, vs)| {
                let ty = if ty == "number" && vs.iter().all(super::schema::is_integral) {
                    "integer"
                } else {
                    ty
                };
                let mut b = Map::new();
                b.insert("type".into(), Value::String(ty.into()));
                if ty != "null" {
                    b.insert("enum".into(), Value::Array(vs));
                }
                Value::Object(b)
            })
            .collect();
        let mut synthetic = annotations(m);
        if typed.len() == 1 {
            if let Some(Value::Object(only)) = typed.into_iter().next() {
                synthetic.extend(only);
            }
        } else {
            synthetic.insert("anyOf".into(), Value::Array(typed));
        }
        self.node(&Value::Object(synthetic), depth, false)
    }

    fn enum_values(
        &self,
        m: &Map<String, Value>,
        ty: &str,
    ) -> Result<Option<Vec<Value>>, NotStrict> {
        let mut values: Option<Vec<Value>> = match m.get("enum") {
            Some(Value::Array(e)) => Some(
                e.iter()
                    .filter(|v| super::schema::value_has_type(v, ty))
                    .cloned()
                    .collect(),
            ),
            _ => None,
        };
        if let Some(c) = m.get("const") {
            if !super::schema::value_has_type(c, ty) {
                return Err(self.fail(NotStrictReason::NeverValid));
            }
            values = match values {
                Some(vs) if !vs.iter().any(|v| scalar_eq(v, c)) => Some(Vec::new()),
                _ => Some(vec![c.clone()]),
            };
        }
        if let Some(vs) = &values {
            if vs.is_empty() {
                return Err(self.fail(NotStrictReason::NeverValid));
            }
            if vs.iter().any(|v| v.is_object() || v.is_array()) {
                return Err(self.fail(NotStrictReason::CompoundEnum));
            }
        }
        Ok(values)
    }

    fn typed(
        &mut self,
        ty: &str,
        m: &Map<String, Value>,
        depth: usize,
        root: bool,
    ) -> Result<Value, NotStrict> {
        let mut out = annotations(m);
        out.insert("type".into(), Value::String(ty.into()));
        match ty {
            "object" => return self.object(m, out, depth, root),
            "array" => return self.array(m, out, depth),
            "null" => return Ok(Value::Object(out)),
            "string" | "number" | "integer" | "boolean" => {}
            _ => return Err(self.fail(NotStrictReason::UnsupportedType)),
        }
        if let Some(values) = self.enum_values(m, ty)? {
            out.insert("enum".into(), Value::Array(values));
        }
        if ty == "string" {
            if let Some(Value::String(p)) = m.get("pattern") {
                if pattern_is_portable(p) {
                    out.insert("pattern".into(), Value::String(p.clone()));
                }
            }
            if let Some(Value::String(f)) = m.get("format") {
                if SUPPORTED_FORMATS.contains(&f.as_str()) {
                    out.insert("format".into(), Value::String(f.clone()));
                }
            }
        }
        if ty == "number" || ty == "integer" {
            for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
                if let Some(v @ Value::Number(_)) = m.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
            if let Some(v @ Value::Number(n)) = m.get("multipleOf") {
                if n.as_f64().is_some_and(|f| f > 0.0) {
                    out.insert("multipleOf".into(), v.clone());
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn object(
        &mut self,
        m: &Map<String, Value>,
        mut out: Map<String, Value>,
        depth: usize,
        root: bool,
    ) -> Result<Value, NotStrict> {
        if let Some(Value::Object(pp)) = m.get("patternProperties") {
            if !pp.is_empty() {
                return Err(self.fail(NotStrictReason::PatternProperties));
            }
        }
        let closed = matches!(m.get("additionalProperties"), Some(Value::Bool(false)));
        for key in ["additionalProperties", "unevaluatedProperties"] {
            if !matches!(m.get(key), None | Some(Value::Bool(false))) {
                return Err(self.fail(NotStrictReason::OpenObject));
            }
        }
        let empty = Map::new();
        let props = match m.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(self.fail(NotStrictReason::FreeFormObject)),
            None if root || closed => &empty,
            None => return Err(self.fail(NotStrictReason::FreeFormObject)),
        };
        let required: Vec<&str> = match m.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if required.iter().any(|r| !props.contains_key(*r)) {
            return Err(self.fail(NotStrictReason::RequiredNotAProperty));
        }
        let mut out_props = Map::new();
        let mut absent_if_null: Vec<Value> = Vec::new();
        for (name, ps) in props {
            let is_required = required.contains(&name.as_str());
            if *ps == Value::Bool(false) {
                if is_required {
                    return Err(self.fail(NotStrictReason::NeverValid));
                }
                continue;
            }
            let len = self.path.len();
            push_token(&mut self.path, "properties");
            push_token(&mut self.path, name);
            let converted = self.node(ps, depth + 1, false).and_then(|t| {
                if is_required {
                    Ok((t, false))
                } else {
                    self.optional(ps, t)
                }
            });
            self.path.truncate(len);
            let t = match converted? {
                (t, true) => {
                    absent_if_null.push(Value::String(name.clone()));
                    t
                }
                (t, false) => t,
            };
            out_props.insert(name.clone(), t);
        }
        let all: Vec<Value> = out_props.keys().map(|k| Value::String(k.clone())).collect();
        out.insert("properties".into(), Value::Object(out_props));
        out.insert("required".into(), Value::Array(all));
        out.insert("additionalProperties".into(), Value::Bool(false));
        if !absent_if_null.is_empty() {
            self.marked = true;
            out.insert(ABSENT_IF_NULL.into(), Value::Array(absent_if_null));
        }
        Ok(Value::Object(out))
    }

    /// An optional property made required: `(schema, null means absent)`.
    fn optional(&self, original: &Value, t: Value) -> Result<(Value, bool), NotStrict> {
        if !self.accepts_null(original, 0) {
            return Ok((nullable(t), true));
        }
        let accepts = strict_accepts_null(&t);
        let t = if accepts { t } else { nullable(t) };
        if self.options.null_is_absent {
            return Ok((t, true));
        }
        if original.get("default") == Some(&Value::Null) {
            // Absent means `null` here: passing `null` on is the same call.
            return Ok((t, !accepts));
        }
        Err(self.fail(NotStrictReason::OptionalNullable))
    }

    /// Whether a normalized schema may accept `null` (false only when some
    /// keyword certainly excludes it).
    fn accepts_null(&self, s: &Value, depth: usize) -> bool {
        if depth > 32 {
            return true;
        }
        let m = match s {
            Value::Bool(b) => return *b,
            Value::Object(m) => m,
            _ => return true,
        };
        if let Some(t) = m.get("type") {
            let ok = match t {
                Value::String(t) => t == "null",
                Value::Array(ts) => ts.iter().any(|t| t == "null"),
                _ => true,
            };
            if !ok {
                return false;
            }
        }
        if let Some(Value::Array(e)) = m.get("enum") {
            if !e.contains(&Value::Null) {
                return false;
            }
        }
        if let Some(c) = m.get("const") {
            if !c.is_null() {
                return false;
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = m.get(keyword) {
                if !bs.iter().any(|b| self.accepts_null(b, depth + 1)) {
                    return false;
                }
            }
        }
        if let Some(Value::Array(bs)) = m.get("allOf") {
            if !bs.iter().all(|b| self.accepts_null(b, depth + 1)) {
                return false;
            }
        }
        if let Some(target) = m
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| self.defs.and_then(|d| d.get(name)))
        {
            if !self.accepts_null(target, depth + 1) {
                return false;
            }
        }
        true
    }

    fn array(
        &mut self,
        m: &Map<String, Value>,
        mut out: Map<String, Value>,
        depth: usize,
    ) -> Result<Value, NotStrict> {
        let min_items = m.get("minItems").and_then(Value::as_u64);
        let mut max_items = m.get("maxItems").and_then(Value::as_u64);
        let items = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(prefix)), items) => {
                let mut branches: Vec<Value> = prefix.clone();
                let len = prefix.len() as u64;
                match items {
                    None | Some(Value::Bool(true)) => {
                        if max_items.is_none_or(|mx| mx > len) {
                            return Err(self.fail(NotStrictReason::UnconstrainedItems));
                        }
                    }
                    Some(Value::Bool(false)) => {
                        max_items = Some(max_items.map_or(len, |mx| mx.min(len)));
                    }
                    Some(rest) => branches.push(rest.clone()),
                }
                if branches.is_empty() {
                    return Err(self.fail(NotStrictReason::Tuple));
                }
                let synthetic = if branches.len() == 1 {
                    branches.remove(0)
                } else {
                    let mut u = Map::new();
                    u.insert("anyOf".into(), Value::Array(branches));
                    Value::Object(u)
                };
                self.child(&["prefixItems"], &synthetic, depth)?
            }
            (_, None) | (_, Some(Value::Bool(_))) => {
                return Err(self.fail(NotStrictReason::UnconstrainedItems))
            }
            (_, Some(items)) => self.child(&["items"], items, depth)?,
        };
        out.insert("items".into(), items);
        if let Some(n) = min_items {
            out.insert("minItems".into(), Value::from(n));
        }
        if let Some(n) = max_items {
            out.insert("maxItems".into(), Value::from(n));
        }
        Ok(Value::Object(out))
    }
}

/// The exported copy of a plan: the internal keyword removed.
fn without_markers(plan: &Value) -> Value {
    match plan {
        Value::Object(m) => {
            let mut out = Map::new();
            for (key, v) in m {
                match key.as_str() {
                    ABSENT_IF_NULL => {}
                    "properties" | "$defs" => {
                        let mut inner = Map::new();
                        if let Value::Object(map) = v {
                            for (k, s) in map {
                                inner.insert(k.clone(), without_markers(s));
                            }
                        }
                        out.insert(key.clone(), Value::Object(inner));
                    }
                    "items" => {
                        out.insert(key.clone(), without_markers(v));
                    }
                    "anyOf" => {
                        let list = v
                            .as_array()
                            .map(|a| a.iter().map(without_markers).collect())
                            .unwrap_or_default();
                        out.insert(key.clone(), Value::Array(list));
                    }
                    _ => {
                        out.insert(key.clone(), v.clone());
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

// ----- checker ---------------------------------------------------------------------------

const CHECK_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "title",
    "enum",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
];

fn keyword_fits(keyword: &str, ty: &str) -> bool {
    match keyword {
        "type" | "description" | "title" => true,
        "enum" => matches!(ty, "string" | "number" | "integer" | "boolean"),
        "pattern" | "format" => ty == "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            ty == "number" || ty == "integer"
        }
        "properties" | "required" | "additionalProperties" => ty == "object",
        "items" | "minItems" | "maxItems" => ty == "array",
        _ => false,
    }
}

/// Checks a schema against the strict-mode rules listed in the module docs
/// (OpenAI's rules, tightened where OpenAI's are unclear).
///
/// # Errors
/// The first [`StrictViolation`] found, with its JSON pointer.
pub fn check_strict_schema(schema: &Value, limits: &StrictLimits) -> Result<(), StrictViolation> {
    let violation = |rule| StrictViolation {
        path: String::new(),
        rule,
    };
    let Value::Object(root) = schema else {
        return Err(violation(StrictRule::RootNotObject));
    };
    if root.contains_key("anyOf") {
        return Err(violation(StrictRule::RootUnion));
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(violation(StrictRule::RootNotObject));
    }
    let defs = match root.get("$defs") {
        None => None,
        Some(Value::Object(d)) => Some(d),
        Some(_) => return Err(violation(StrictRule::NotAnObjectSchema)),
    };
    let mut c = Checker {
        limits,
        defs,
        path: String::new(),
        properties: 0,
        chars: 0,
        enum_values: 0,
    };
    let mut body = root.clone();
    body.remove("$defs");
    c.check(&Value::Object(body), 0, 0)?;
    if let Some(defs) = defs {
        for (name, def) in defs {
            c.chars += name.chars().count();
            c.path.clear();
            push_token(&mut c.path, "$defs");
            push_token(&mut c.path, name);
            c.check(def, 0, 0)?;
        }
    }
    c.path.clear();
    if c.properties > limits.max_properties {
        return Err(violation(StrictRule::TooManyProperties));
    }
    if c.chars > limits.max_string_chars {
        return Err(violation(StrictRule::TooManyStringChars));
    }
    if c.enum_values > limits.max_enum_values {
        return Err(violation(StrictRule::TooManyEnumValues));
    }
    Ok(())
}

struct Checker<'a> {
    limits: &'a StrictLimits,
    defs: Option<&'a Map<String, Value>>,
    path: String,
    properties: usize,
    chars: usize,
    enum_values: usize,
}

impl Checker<'_> {
    fn fail(&self, rule: StrictRule) -> StrictViolation {
        StrictViolation {
            path: self.path.clone(),
            rule,
        }
    }

    fn child(
        &mut self,
        tokens: &[&str],
        v: &Value,
        depth: usize,
        objects: usize,
    ) -> Result<(), StrictViolation> {
        let len = self.path.len();
        for t in tokens {
            push_token(&mut self.path, t);
        }
        let out = self.check(v, depth + 1, objects);
        self.path.truncate(len);
        out
    }

    fn check(&mut self, v: &Value, depth: usize, objects: usize) -> Result<(), StrictViolation> {
        if depth > MAX_WALK_DEPTH {
            return Err(self.fail(StrictRule::TooDeep));
        }
        let Value::Object(m) = v else {
            return Err(self.fail(StrictRule::NotAnObjectSchema));
        };
        if let Some(r) = m.get("$ref") {
            return self.check_ref(m, r);
        }
        if let Some(any) = m.get("anyOf") {
            return self.check_any_of(m, any, depth, objects);
        }
        if let Some(k) = m.keys().find(|k| !CHECK_KEYWORDS.contains(&k.as_str())) {
            return Err(self.fail(StrictRule::UnsupportedKeyword(k.clone())));
        }
        let ty = match m.get("type") {
            None => return Err(self.fail(StrictRule::MissingType)),
            Some(Value::String(t))
                if matches!(
                    t.as_str(),
                    "string" | "number" | "integer" | "boolean" | "object" | "array" | "null"
                ) =>
            {
                t.as_str()
            }
            Some(_) => return Err(self.fail(StrictRule::UnsupportedType)),
        };
        if let Some(k) = m.keys().find(|k| !keyword_fits(k, ty)) {
            return Err(self.fail(StrictRule::KeywordNotForType(k.clone())));
        }
        self.check_values(m, ty)?;
        match ty {
            "object" => self.check_object(m, depth, objects + 1),
            "array" => match m.get("items") {
                Some(items) => self.child(&["items"], items, depth, objects),
                None => Err(self.fail(StrictRule::MissingItems)),
            },
            _ => Ok(()),
        }
    }

    /// A `$ref` node: alone, and pointing at the root or a `$defs` entry.
    fn check_ref(&mut self, m: &Map<String, Value>, r: &Value) -> Result<(), StrictViolation> {
        if m.len() != 1 {
            return Err(self.fail(StrictRule::RefWithSiblings));
        }
        let ok = r.as_str().is_some_and(|r| {
            r == "#"
                || r.strip_prefix("#/$defs/")
                    .is_some_and(|n| self.defs.is_some_and(|d| d.contains_key(n)))
        });
        if ok {
            Ok(())
        } else {
            Err(self.fail(StrictRule::UnresolvedRef))
        }
    }

    /// An `anyOf` node: only annotations beside it, non-empty, every
    /// branch strict.
    fn check_any_of(
        &mut self,
        m: &Map<String, Value>,
        any: &Value,
        depth: usize,
        objects: usize,
    ) -> Result<(), StrictViolation> {
        if m.keys()
            .any(|k| k != "anyOf" && k != "description" && k != "title")
        {
            return Err(self.fail(StrictRule::KeywordBesideAnyOf));
        }
        let Some(branches) = any.as_array().filter(|b| !b.is_empty()) else {
            return Err(self.fail(StrictRule::EmptyAnyOf));
        };
        for (i, b) in branches.iter().enumerate() {
            self.child(&["anyOf", &i.to_string()], b, depth, objects)?;
        }
        Ok(())
    }

    /// The values of a typed node's keywords: string annotations, a
    /// supported `format`, a portable `pattern`, a typed `enum`, numeric
    /// bounds that are numbers.
    fn check_values(&mut self, m: &Map<String, Value>, ty: &str) -> Result<(), StrictViolation> {
        for key in ["description", "title"] {
            if m.get(key).is_some_and(|d| !d.is_string()) {
                return Err(self.fail(StrictRule::UnsupportedKeyword(key.into())));
            }
        }
        if let Some(f) = m.get("format") {
            if !f.as_str().is_some_and(|f| SUPPORTED_FORMATS.contains(&f)) {
                return Err(self.fail(StrictRule::UnsupportedFormat));
            }
        }
        if let Some(p) = m.get("pattern") {
            if !p.as_str().is_some_and(pattern_is_portable) {
                return Err(self.fail(StrictRule::UnsupportedPattern));
            }
        }
        if let Some(e) = m.get("enum") {
            self.check_enum(e, ty)?;
        }
        for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if m.get(key).is_some_and(|n| !n.is_number()) {
                return Err(self.fail(StrictRule::BadNumber(key.into())));
            }
        }
        if m.get("multipleOf")
            .is_some_and(|n| !n.as_f64().is_some_and(|f| f > 0.0))
        {
            return Err(self.fail(StrictRule::BadNumber("multipleOf".into())));
        }
        for key in ["minItems", "maxItems"] {
            if m.get(key).is_some_and(|n| !n.is_u64()) {
                return Err(self.fail(StrictRule::BadNumber(key.into())));
            }
        }
        Ok(())
    }

    fn check_enum(&mut self, e: &Value, ty: &str) -> Result<(), StrictViolation> {
        let Some(values) = e.as_array().filter(|v| !v.is_empty()) else {
            return Err(self.fail(StrictRule::BadEnum));
        };
        if !values.iter().all(|v| super::schema::value_has_type(v, ty)) {
            return Err(self.fail(StrictRule::BadEnum));
        }
        self.enum_values += values.len();
        let chars: usize = values
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.chars().count())
            .sum();
        self.chars += chars;
        if ty == "string"
            && values.len() > self.limits.large_enum_values
            && chars > self.limits.large_enum_chars
        {
            return Err(self.fail(StrictRule::LargeEnumTooLong));
        }
        Ok(())
    }

    fn check_object(
        &mut self,
        m: &Map<String, Value>,
        depth: usize,
        objects: usize,
    ) -> Result<(), StrictViolation> {
        if objects > self.limits.max_object_depth {
            return Err(self.fail(StrictRule::TooDeep));
        }
        let Some(Value::Object(props)) = m.get("properties") else {
            return Err(self.fail(StrictRule::MissingProperties));
        };
        if m.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Err(self.fail(StrictRule::AdditionalPropertiesNotFalse));
        }
        let required: Vec<&str> = match m.get("required") {
            Some(Value::Array(r)) if r.iter().all(Value::is_string) => {
                r.iter().filter_map(Value::as_str).collect()
            }
            None => Vec::new(),
            Some(_) => return Err(self.fail(StrictRule::BadRequired)),
        };
        if let Some(name) = props.keys().find(|k| !required.contains(&k.as_str())) {
            return Err(self.fail(StrictRule::PropertyNotRequired(name.clone())));
        }
        if required.len() != props.len() {
            return Err(self.fail(StrictRule::BadRequired));
        }
        self.properties += props.len();
        for (name, p) in props {
            self.chars += name.chars().count();
            self.child(&["properties", name], p, depth, objects)?;
        }
        Ok(())
    }
}

// ----- null stripping ------------------------------------------------------------------------

struct Stripper<'a> {
    defs: Option<&'a Map<String, Value>>,
    steps: usize,
    exhausted: bool,
    removed: usize,
}

impl<'a> Stripper<'a> {
    fn def(&self, schema: &'a Value) -> Option<&'a Value> {
        let r = schema.get("$ref")?.as_str()?;
        self.defs?.get(r.strip_prefix("#/$defs/")?)
    }

    fn strip(&mut self, v: &mut Value, s: &'a Value, depth: usize) {
        if self.exhausted || depth > MAX_WALK_DEPTH {
            return;
        }
        if let Some(target) = self.def(s) {
            return self.strip(v, target, depth + 1);
        }
        if let Some(Value::Array(branches)) = s.get("anyOf") {
            let mut found: Option<&'a Value> = None;
            let mut count = 0;
            for branch in branches {
                if self.conforms(v, branch, depth + 1) {
                    count += 1;
                    found = Some(branch);
                    if count > 1 {
                        break;
                    }
                }
            }
            if let (Some(branch), 1, false) = (found, count, self.exhausted) {
                self.strip(v, branch, depth + 1);
            }
            return;
        }
        match (s.get("type").and_then(Value::as_str), v) {
            (Some("object"), Value::Object(map)) => {
                if let Some(Value::Array(names)) = s.get(ABSENT_IF_NULL) {
                    for name in names.iter().filter_map(Value::as_str) {
                        if map.get(name) == Some(&Value::Null) {
                            map.remove(name);
                            self.removed += 1;
                        }
                    }
                }
                if let Some(Value::Object(props)) = s.get("properties") {
                    for (name, child) in map.iter_mut() {
                        if let Some(ps) = props.get(name) {
                            self.strip(child, ps, depth + 1);
                        }
                    }
                }
            }
            (Some("array"), Value::Array(items)) => {
                if let Some(item_schema) = s.get("items") {
                    for item in items {
                        self.strip(item, item_schema, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether `v` has the structure of the strict schema `s` (types, enum
    /// values, exact property sets, item schemas; string and number bounds
    /// are not checked).
    fn conforms(&mut self, v: &Value, s: &'a Value, depth: usize) -> bool {
        self.steps += 1;
        if self.steps > MAX_STRIP_STEPS {
            self.exhausted = true;
        }
        if self.exhausted || depth > MAX_WALK_DEPTH {
            return false;
        }
        if let Some(target) = self.def(s) {
            return self.conforms(v, target, depth + 1);
        }
        if let Some(Value::Array(branches)) = s.get("anyOf") {
            return branches.iter().any(|b| self.conforms(v, b, depth + 1));
        }
        let Some(ty) = s.get("type").and_then(Value::as_str) else {
            return false;
        };
        if !super::schema::value_has_type(v, ty) {
            return false;
        }
        if let Some(Value::Array(values)) = s.get("enum") {
            if !values.iter().any(|e| scalar_eq(e, v)) {
                return false;
            }
        }
        match v {
            Value::Object(map) => {
                let Some(Value::Object(props)) = s.get("properties") else {
                    return false;
                };
                map.len() == props.len()
                    && map.iter().all(|(k, child)| {
                        props
                            .get(k)
                            .is_some_and(|ps| self.conforms(child, ps, depth + 1))
                    })
            }
            Value::Array(items) => {
                let len = items.len() as u64;
                if s.get("minItems")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| len < n)
                    || s.get("maxItems")
                        .and_then(Value::as_u64)
                        .is_some_and(|n| len > n)
                {
                    return false;
                }
                let Some(item_schema) = s.get("items") else {
                    return false;
                };
                items
                    .iter()
                    .all(|i| self.conforms(i, item_schema, depth + 1))
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strict(schema: Value) -> Result<StrictSchema, NotStrict> {
        strict_schema(&schema, &StrictOptions::default())
    }

    fn reason(schema: Value) -> (String, NotStrictReason) {
        let e = strict(schema).unwrap_err();
        (e.path, e.reason)
    }

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let s = strict(json!({"type": "object", "required": ["id"], "properties": {
            "id": {"type": "string", "minLength": 1, "description": "Id"},
            "note": {"type": "string", "description": "A note", "default": "x"},
            "tags": {"type": "array", "items": {"type": "string"}}}}))
        .unwrap();
        assert_eq!(
            s.parameters(),
            &json!({"type": "object", "additionalProperties": false, "required": ["id", "note", "tags"],
                "properties": {
                    "id": {"type": "string", "description": "Id"},
                    "note": {"description": "A note", "anyOf": [{"type": "string"}, {"type": "null"}]},
                    "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}}})
        );
        assert!(s.has_absent_nulls());
        let mut call = json!({"id": "a", "note": null, "tags": null});
        assert_eq!(s.strip_absent_nulls(&mut call), 2);
        assert_eq!(call, json!({"id": "a"}));
    }

    #[test]
    fn a_required_nullable_property_keeps_its_null() {
        let s = strict(json!({"type": "object", "required": ["v"], "properties": {
            "v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}))
        .unwrap();
        assert!(!s.has_absent_nulls());
        let mut call = json!({"v": null});
        assert_eq!(s.strip_absent_nulls(&mut call), 0);
        assert_eq!(call, json!({"v": null}));
    }

    #[test]
    fn nulls_are_stripped_recursively_through_arrays_and_definitions() {
        let s = strict(
            json!({"type": "object", "required": ["root"], "properties": {
            "root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}),
        )
        .unwrap();
        let mut call = json!({"root": {"name": "a", "children": [
            {"name": "b", "children": null},
            {"name": "c", "children": [{"name": "d", "children": null}]}]}});
        assert_eq!(s.strip_absent_nulls(&mut call), 2);
        assert_eq!(
            call,
            json!({"root": {"name": "a", "children": [{"name": "b"}, {"name": "c", "children": [{"name": "d"}]}]}})
        );
    }

    #[test]
    fn in_a_union_only_the_matching_branch_strips_and_ambiguity_strips_nothing() {
        let s = strict(json!({"type": "object", "required": ["shape"], "properties": {"shape": {"oneOf": [
            {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}},
            {"type": "object", "required": ["kind", "r"], "properties": {"kind": {"const": "disc"},
                "r": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}]}}}))
        .unwrap();
        let mut circle = json!({"shape": {"kind": "circle", "r": null}});
        s.strip_absent_nulls(&mut circle);
        assert_eq!(circle, json!({"shape": {"kind": "circle"}}));
        // `r` is required-nullable in "disc": its null stays.
        let mut disc = json!({"shape": {"kind": "disc", "r": null}});
        s.strip_absent_nulls(&mut disc);
        assert_eq!(disc, json!({"shape": {"kind": "disc", "r": null}}));
        // Two branches of one shape and different plans: nothing is guessed.
        let twin = strict(json!({"type": "object", "required": ["v"], "properties": {"v": {"anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "object", "required": ["a"], "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}]}}}))
        .unwrap();
        let mut call = json!({"v": {"a": null}});
        assert_eq!(twin.strip_absent_nulls(&mut call), 0);
        assert_eq!(call, json!({"v": {"a": null}}));
    }

    #[test]
    fn optional_nullable_properties_are_strict_only_when_null_means_absent() {
        let schema = json!({"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
        assert_eq!(
            reason(schema.clone()),
            (
                "/properties/v".to_string(),
                NotStrictReason::OptionalNullable
            )
        );
        let views = StrictOptions {
            null_is_absent: true,
            ..StrictOptions::default()
        };
        let s = strict_schema(&schema, &views).unwrap();
        let mut call = json!({"v": null});
        assert_eq!(s.strip_absent_nulls(&mut call), 1);
        assert_eq!(call, json!({}));
        let defaulted = json!({"type": "object", "properties": {"v": {"default": null,
            "anyOf": [{"type": "string"}, {"type": "null"}]}}});
        let s = strict(defaulted).unwrap();
        let mut call = json!({"v": null});
        assert_eq!(s.strip_absent_nulls(&mut call), 0);
        assert_eq!(call, json!({"v": null}));
    }

    #[test]
    fn unsupported_keywords_are_dropped_and_enums_typed() {
        let s = strict(json!({"type": "object", "required": ["a", "b", "c", "d", "e"], "properties": {
            "a": {"type": "string", "format": "uri", "pattern": "^(?=x)", "maxLength": 3, "examples": ["x"]},
            "b": {"type": "string", "format": "date", "pattern": "^\\d{4}$"},
            "c": {"enum": ["x", 1, 2, null]},
            "d": {"const": 2.5},
            "e": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5, "not": {"const": 1}}}}))
        .unwrap();
        assert_eq!(
            s.parameters()["properties"],
            json!({
                "a": {"type": "string"},
                "b": {"type": "string", "format": "date", "pattern": "^\\d{4}$"},
                "c": {"anyOf": [{"type": "string", "enum": ["x"]}, {"type": "integer", "enum": [1, 2]}, {"type": "null"}]},
                "d": {"type": "number", "enum": [2.5]},
                "e": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5}})
        );
    }

    #[test]
    fn an_empty_root_is_an_object_without_properties() {
        assert_eq!(
            strict(json!({"type": "object"})).unwrap().parameters(),
            &json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }

    #[test]
    fn what_strict_mode_cannot_express_is_refused_with_its_place() {
        use NotStrictReason as R;
        let cases = [
            (
                json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}}}),
                "/properties/m",
                R::OpenObject,
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {}}, "additionalProperties": true}}}),
                "/properties/m",
                R::OpenObject,
            ),
            (
                json!({"type": "object", "patternProperties": {"^x": {}}}),
                "",
                R::PatternProperties,
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "object"}}}),
                "/properties/m",
                R::FreeFormObject,
            ),
            (
                json!({"type": "object", "properties": {"m": {"description": "anything"}}}),
                "/properties/m",
                R::Unconstrained,
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "array"}}}),
                "/properties/m",
                R::UnconstrainedItems,
            ),
            (
                json!({"type": "object", "properties": {"m": {"allOf": [{"type": "string"}, {"minLength": 1}]}}}),
                "/properties/m",
                R::AllOf,
            ),
            (
                json!({"type": "object", "properties": {"m": {"enum": [{"a": 1}]}}}),
                "/properties/m",
                R::CompoundEnum,
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "string", "enum": [1]}}}),
                "/properties/m",
                R::NeverValid,
            ),
            (
                json!({"type": "object", "required": ["x"]}),
                "",
                R::RequiredNotAProperty,
            ),
            (
                json!({"type": "object", "anyOf": [{"type": "object"}]}),
                "",
                R::RootUnion,
            ),
            (json!({"type": "array"}), "", R::RootNotObject),
            (
                json!({"type": "object", "properties": {"r": {"$ref": "#/$defs/Missing"}}}),
                "/properties/r",
                R::UnresolvedRef,
            ),
            (
                json!({"type": "object", "properties": {"u": {"type": "object", "properties": {"a": {"type": "string"}},
                "anyOf": [{"type": "object", "properties": {"b": {}}, "additionalProperties": false}, {"type": "string"}]}}}),
                "/properties/u",
                R::UnionWithSiblings,
            ),
        ];
        for (schema, path, expected) in cases {
            assert_eq!(
                reason(schema.clone()),
                (path.to_string(), expected),
                "{schema}"
            );
        }
    }

    #[test]
    fn a_union_beside_a_type_gets_the_type_in_every_branch() {
        let s = strict(
            json!({"type": "object", "required": ["u"], "properties": {"u": {
            "type": "object", "description": "U", "oneOf": [
                {"properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]}}}),
        )
        .unwrap();
        assert_eq!(
            s.parameters()["properties"]["u"],
            json!({"description": "U", "anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false},
                {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"], "additionalProperties": false}]})
        );
    }

    #[test]
    fn a_constraint_only_union_beside_a_typed_schema_is_dropped() {
        let s = strict(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}))
        .unwrap();
        assert_eq!(s.parameters()["required"], json!(["a", "b"]));
    }

    #[test]
    fn limits_refuse_too_deep_or_too_large_schemas() {
        let mut deep = json!({"type": "string"});
        for _ in 0..10 {
            deep = json!({"type": "object", "required": ["x"], "properties": {"x": deep}});
        }
        // Ten levels of objects are allowed, eleven are not.
        assert!(strict(deep.clone()).is_ok());
        let deep = json!({"type": "object", "required": ["x"], "properties": {"x": deep}});
        let e = strict(deep).unwrap_err();
        assert_eq!(e.reason, NotStrictReason::Rule(StrictRule::TooDeep));
        assert_eq!(e.reason.code(), "rule:too-deep");
        let small = StrictOptions {
            limits: StrictLimits {
                max_properties: 2,
                ..StrictLimits::default()
            },
            ..StrictOptions::default()
        };
        let three = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}}});
        assert_eq!(
            strict_schema(&three, &small).unwrap_err().reason,
            NotStrictReason::Rule(StrictRule::TooManyProperties)
        );
        let values: Vec<String> = (0..251).map(|i| format!("{i:0>60}")).collect();
        let big_enum = json!({"type": "object", "required": ["e"], "properties": {"e": {"type": "string", "enum": values}}});
        assert_eq!(
            strict(big_enum).unwrap_err().reason,
            NotStrictReason::Rule(StrictRule::LargeEnumTooLong)
        );
        let many: Vec<i64> = (0..1001).collect();
        let many_enum = json!({"type": "object", "required": ["e"], "properties": {"e": {"type": "integer", "enum": many}}});
        assert_eq!(
            strict(many_enum).unwrap_err().reason,
            NotStrictReason::Rule(StrictRule::TooManyEnumValues)
        );
    }

    #[test]
    fn the_checker_reports_each_broken_rule_with_its_place() {
        let limits = StrictLimits::default();
        let check = |v: Value| check_strict_schema(&v, &limits).map_err(|e| (e.path, e.rule));
        let obj = |props: Value| {
            let keys: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
            json!({"type": "object", "properties": props, "required": keys, "additionalProperties": false})
        };
        assert_eq!(check(obj(json!({"a": {"type": "string"}}))), Ok(()));
        assert_eq!(
            check(json!({"type": "object", "properties": {}})),
            Err((String::new(), StrictRule::AdditionalPropertiesNotFalse))
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": [], "additionalProperties": false})
            ),
            Err((String::new(), StrictRule::PropertyNotRequired("a".into())))
        );
        assert_eq!(
            check(obj(json!({"a": {"type": "string", "minLength": 1}}))),
            Err((
                "/properties/a".into(),
                StrictRule::UnsupportedKeyword("minLength".into())
            ))
        );
        assert_eq!(
            check(obj(json!({"a": {"type": "string", "minimum": 1}}))),
            Err((
                "/properties/a".into(),
                StrictRule::KeywordNotForType("minimum".into())
            ))
        );
        assert_eq!(
            check(obj(json!({"a": {"$ref": "#/$defs/X", "description": "d"}}))),
            Err(("/properties/a".into(), StrictRule::RefWithSiblings))
        );
        assert_eq!(
            check(obj(json!({"a": {"type": "string", "format": "uri"}}))),
            Err(("/properties/a".into(), StrictRule::UnsupportedFormat))
        );
        assert_eq!(
            check(obj(json!({"a": {"type": ["string", "null"]}}))),
            Err(("/properties/a".into(), StrictRule::UnsupportedType))
        );
        assert_eq!(
            check(obj(
                json!({"a": {"anyOf": [{"type": "string"}], "default": "x"}})
            )),
            Err(("/properties/a".into(), StrictRule::KeywordBesideAnyOf))
        );
        assert_eq!(
            check(obj(json!({"a": {"type": "array"}}))),
            Err(("/properties/a".into(), StrictRule::MissingItems))
        );
        assert_eq!(
            check(json!({"anyOf": [{"type": "object"}]})),
            Err((String::new(), StrictRule::RootUnion))
        );
    }

    #[test]
    fn portable_patterns() {
        assert!(pattern_is_portable("^[a-z]+(?:-[a-z]+)*$"));
        assert!(pattern_is_portable("^\\d{4}-\\d{2}$"));
        assert!(!pattern_is_portable("^(?=.*[A-Z]).+$"));
        assert!(!pattern_is_portable("(a)\\1"));
        assert!(!pattern_is_portable("(?<year>\\d+)"));
        assert!(!pattern_is_portable("\\p{L}+"));
        assert!(!pattern_is_portable("trailing\\"));
    }

    #[test]
    fn stripping_stops_at_its_step_budget() {
        let s = strict(json!({"type": "object", "required": ["items"], "properties": {"items": {"type": "array",
            "items": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "string"}]}}}}))
        .unwrap();
        let items: Vec<Value> = (0..60_000).map(|_| json!({"a": null})).collect();
        let mut call = json!({"items": items});
        let removed = s.strip_absent_nulls(&mut call);
        assert!(removed > 10_000 && removed < 60_000, "{removed}");
        let kept = call["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i.get("a").is_some())
            .count();
        assert_eq!(removed + kept, 60_000);
    }
}
