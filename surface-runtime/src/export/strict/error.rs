//! Why a schema is not exported strict ([`NotStrict`]) and which rule a
//! schema breaks ([`StrictViolation`]).

/// `"the root"` for the empty pointer, else the pointer.
fn place(path: &str) -> &str {
    if path.is_empty() {
        "the root"
    } else {
        path
    }
}

/// Why a schema was exported with `"strict": false`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not strict-mode compatible at {}: {reason}", place(.path))]
pub struct NotStrict {
    /// JSON pointer into the normalized input schema.
    pub path: String,
    /// The reason.
    pub reason: NotStrictReason,
}

/// Why strict mode cannot express a schema (machine-readable:
/// [`NotStrictReason::code`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotStrictReason {
    /// The root is not `{"type": "object"}`.
    #[error("the root is not an object schema")]
    RootNotObject,
    /// The root is a union of objects.
    #[error("the root is a union")]
    RootUnion,
    /// A value with no constraint (`{}`, `true`): strict mode has no "any".
    #[error("a value without any constraint")]
    Unconstrained,
    /// A schema no value matches.
    #[error("a schema no value matches")]
    NeverValid,
    /// An object without declared properties (a free-form object).
    #[error("an object without declared properties")]
    FreeFormObject,
    /// An object that allows more properties (`additionalProperties` not
    /// `false`: records, loose objects).
    #[error("an object that allows undeclared properties")]
    OpenObject,
    /// `patternProperties`.
    #[error("patternProperties")]
    PatternProperties,
    /// An array without `items`.
    #[error("an array without items")]
    UnconstrainedItems,
    /// A tuple that only allows the empty array.
    #[error("a tuple that allows only the empty array")]
    Tuple,
    /// An `allOf` that could not be merged.
    #[error("an allOf that cannot be merged")]
    AllOf,
    /// A union beside `type`/`properties`/`items`/`enum` keywords.
    #[error("a union beside other structural keywords")]
    UnionWithSiblings,
    /// Both `anyOf` and `oneOf` on one node.
    #[error("anyOf and oneOf on one schema")]
    AnyOfAndOneOf,
    /// An `enum`/`const` with object or array values.
    #[error("an enum or const with object or array values")]
    CompoundEnum,
    /// A `type` strict mode does not know.
    #[error("an unsupported type")]
    UnsupportedType,
    /// No `type`, union, reference or enum.
    #[error("a schema without type")]
    Untyped,
    /// `required` names a property that is not declared.
    #[error("required names an undeclared property")]
    RequiredNotAProperty,
    /// An optional property that already accepts `null`, without
    /// `"default": null`: a strict model could not leave it out.
    #[error("an optional property that accepts null (absent and null may differ)")]
    OptionalNullable,
    /// A `$ref` that is not `#/$defs/<name>` of this schema.
    #[error("a reference outside #/$defs")]
    UnresolvedRef,
    /// Nesting beyond 128 schema levels.
    #[error("nesting deeper than 128 levels")]
    TooDeep,
    /// The output broke a rule of [`check_strict_schema`](super::check_strict_schema) (limits included).
    #[error("{0}")]
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

/// A broken strict-mode rule found by [`check_strict_schema`](super::check_strict_schema).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("strict-mode rule broken at {}: {rule}", place(.path))]
pub struct StrictViolation {
    /// JSON pointer into the checked schema (`""` for limits over the whole
    /// schema).
    pub path: String,
    /// The rule.
    pub rule: StrictRule,
}

/// One strict-mode rule (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrictRule {
    /// A schema position holds something other than a JSON object.
    #[error("not-an-object-schema")]
    NotAnObjectSchema,
    /// The root is not `{"type": "object"}`.
    #[error("root-not-object")]
    RootNotObject,
    /// The root is a union.
    #[error("root-union")]
    RootUnion,
    /// `$ref` with other keywords.
    #[error("ref-with-siblings")]
    RefWithSiblings,
    /// `$ref` not to `#` or an existing `#/$defs/<name>`.
    #[error("unresolved-ref")]
    UnresolvedRef,
    /// `anyOf` with keywords other than `description`/`title`.
    #[error("keyword-beside-any-of")]
    KeywordBesideAnyOf,
    /// `anyOf` that is not a non-empty array.
    #[error("empty-any-of")]
    EmptyAnyOf,
    /// A keyword outside the supported set.
    #[error("unsupported keyword `{0}`")]
    UnsupportedKeyword(String),
    /// No `type` (and no `$ref`/`anyOf`).
    #[error("missing-type")]
    MissingType,
    /// `type` is not one supported type name.
    #[error("unsupported-type")]
    UnsupportedType,
    /// A keyword that does not belong to the node's type.
    #[error("keyword `{0}` does not fit the type")]
    KeywordNotForType(String),
    /// `format` outside [`SUPPORTED_FORMATS`](super::SUPPORTED_FORMATS).
    #[error("unsupported-format")]
    UnsupportedFormat,
    /// A `pattern` using constructs that are not portable (lookaround,
    /// backreferences, inline flags…) or longer than 1,000 characters.
    #[error("unsupported-pattern")]
    UnsupportedPattern,
    /// `enum` empty, not an array, or with values not of the node's type.
    #[error("bad-enum")]
    BadEnum,
    /// An object without `properties`.
    #[error("missing-properties")]
    MissingProperties,
    /// An object whose `additionalProperties` is not `false`.
    #[error("additional-properties-not-false")]
    AdditionalPropertiesNotFalse,
    /// A property missing from `required`.
    #[error("property `{0}` is not in required")]
    PropertyNotRequired(String),
    /// `required` is not exactly the list of properties.
    #[error("bad-required")]
    BadRequired,
    /// An array without an `items` schema.
    #[error("missing-items")]
    MissingItems,
    /// A numeric keyword with a value that is not a (positive, for
    /// `multipleOf`; non-negative integer, for item counts) number.
    #[error("`{0}` has an invalid value")]
    BadNumber(String),
    /// More object nesting than [`StrictLimits::max_object_depth`](super::StrictLimits::max_object_depth).
    #[error("too-deep")]
    TooDeep,
    /// More properties than [`StrictLimits::max_properties`](super::StrictLimits::max_properties).
    #[error("too-many-properties")]
    TooManyProperties,
    /// More characters than [`StrictLimits::max_string_chars`](super::StrictLimits::max_string_chars).
    #[error("too-many-string-chars")]
    TooManyStringChars,
    /// More enum values than [`StrictLimits::max_enum_values`](super::StrictLimits::max_enum_values).
    #[error("too-many-enum-values")]
    TooManyEnumValues,
    /// A large string enum over [`StrictLimits::large_enum_chars`](super::StrictLimits::large_enum_chars).
    #[error("large-enum-too-long")]
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
