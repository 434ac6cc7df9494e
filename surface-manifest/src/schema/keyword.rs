//! The keyword table: every JSON Schema keyword the crates read (drafts 4
//! to 2020-12, plus the OpenAPI 3 vocabulary found in real manifests), what
//! kind of keyword it is, which subschemas it holds and which instance type
//! it constrains. Walkers ask this table instead of keeping keyword lists.

/// What a keyword does (JSON Schema 2020-12 Core §7 vocabulary terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeywordKind {
    /// Identifies or configures the schema (`$schema`, `$id`, `$anchor`,
    /// `$vocabulary`, `$comment`, `$defs`): neither shapes nor constrains
    /// the instance.
    Identifier,
    /// Points at another schema (`$ref`, `$dynamicRef`, `$recursiveRef`).
    Reference,
    /// Applies subschemas to the instance or its parts (`properties`,
    /// `allOf`, `items`, …).
    Applicator,
    /// Constrains the instance itself (`type`, `minimum`, `required`, …).
    Assertion,
    /// Describes without constraining (`title`, `description`, `default`,
    /// `format` as an annotation, OpenAPI's `discriminator`, …).
    Annotation,
}

/// The subschemas a keyword's value holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Subschemas {
    /// None.
    None,
    /// The value is one schema (`not`, `additionalProperties`).
    One,
    /// An object whose every value is a schema (`properties`, `$defs`).
    Map,
    /// An array of schemas (`allOf`, `prefixItems`).
    List,
    /// One schema or an array of them (`items` before 2020-12).
    OneOrList,
    /// An object of schemas or string arrays (draft-04..07
    /// `dependencies`): the object values are schemas.
    MapOfSchemasOrNames,
}

/// The instance type a keyword constrains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppliesTo {
    /// Every instance.
    Any,
    /// Objects only.
    Object,
    /// Arrays only.
    Array,
    /// Strings only.
    String,
    /// Numbers (and integers) only.
    Number,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Keyword {
    /// The keyword as written.
    pub name: &'static str,
    /// What it does.
    pub kind: KeywordKind,
    /// The subschemas its value holds.
    pub subschemas: Subschemas,
    /// The instance type it constrains.
    pub applies_to: AppliesTo,
    /// From the OpenAPI 3 schema vocabulary rather than JSON Schema.
    pub openapi: bool,
}

const fn row(
    name: &'static str,
    kind: KeywordKind,
    subschemas: Subschemas,
    applies_to: AppliesTo,
) -> Keyword {
    Keyword {
        name,
        kind,
        subschemas,
        applies_to,
        openapi: false,
    }
}

const fn openapi(name: &'static str) -> Keyword {
    Keyword {
        name,
        kind: KeywordKind::Annotation,
        subschemas: Subschemas::None,
        applies_to: AppliesTo::Any,
        openapi: true,
    }
}

use AppliesTo as T;
use KeywordKind as K;
use Subschemas as S;

/// Every known keyword, in no particular order.
pub const KEYWORDS: &[Keyword] = &[
    // Core.
    row("$schema", K::Identifier, S::None, T::Any),
    row("$id", K::Identifier, S::None, T::Any),
    row("id", K::Identifier, S::None, T::Any),
    row("$anchor", K::Identifier, S::None, T::Any),
    row("$dynamicAnchor", K::Identifier, S::None, T::Any),
    row("$recursiveAnchor", K::Identifier, S::None, T::Any),
    row("$vocabulary", K::Identifier, S::None, T::Any),
    row("$comment", K::Identifier, S::None, T::Any),
    row("$defs", K::Identifier, S::Map, T::Any),
    row("definitions", K::Identifier, S::Map, T::Any),
    row("$ref", K::Reference, S::None, T::Any),
    row("$dynamicRef", K::Reference, S::None, T::Any),
    row("$recursiveRef", K::Reference, S::None, T::Any),
    // Applicators.
    row("allOf", K::Applicator, S::List, T::Any),
    row("anyOf", K::Applicator, S::List, T::Any),
    row("oneOf", K::Applicator, S::List, T::Any),
    row("not", K::Applicator, S::One, T::Any),
    row("if", K::Applicator, S::One, T::Any),
    row("then", K::Applicator, S::One, T::Any),
    row("else", K::Applicator, S::One, T::Any),
    row("properties", K::Applicator, S::Map, T::Object),
    row("patternProperties", K::Applicator, S::Map, T::Object),
    row("additionalProperties", K::Applicator, S::One, T::Object),
    row("propertyNames", K::Applicator, S::One, T::Object),
    row("dependentSchemas", K::Applicator, S::Map, T::Object),
    row(
        "dependencies",
        K::Applicator,
        S::MapOfSchemasOrNames,
        T::Object,
    ),
    row("unevaluatedProperties", K::Applicator, S::One, T::Object),
    row("items", K::Applicator, S::OneOrList, T::Array),
    row("prefixItems", K::Applicator, S::List, T::Array),
    row("additionalItems", K::Applicator, S::One, T::Array),
    row("contains", K::Applicator, S::One, T::Array),
    row("unevaluatedItems", K::Applicator, S::One, T::Array),
    // Validation.
    row("type", K::Assertion, S::None, T::Any),
    row("enum", K::Assertion, S::None, T::Any),
    row("const", K::Assertion, S::None, T::Any),
    row("multipleOf", K::Assertion, S::None, T::Number),
    row("maximum", K::Assertion, S::None, T::Number),
    row("exclusiveMaximum", K::Assertion, S::None, T::Number),
    row("minimum", K::Assertion, S::None, T::Number),
    row("exclusiveMinimum", K::Assertion, S::None, T::Number),
    row("maxLength", K::Assertion, S::None, T::String),
    row("minLength", K::Assertion, S::None, T::String),
    row("pattern", K::Assertion, S::None, T::String),
    row("maxItems", K::Assertion, S::None, T::Array),
    row("minItems", K::Assertion, S::None, T::Array),
    row("uniqueItems", K::Assertion, S::None, T::Array),
    row("maxContains", K::Assertion, S::None, T::Array),
    row("minContains", K::Assertion, S::None, T::Array),
    row("maxProperties", K::Assertion, S::None, T::Object),
    row("minProperties", K::Assertion, S::None, T::Object),
    row("required", K::Assertion, S::None, T::Object),
    row("dependentRequired", K::Assertion, S::None, T::Object),
    // `format` asserts when the validator is told to (this project's
    // validators do, for the formats they know).
    row("format", K::Assertion, S::None, T::String),
    // Meta-data and content (annotations).
    row("title", K::Annotation, S::None, T::Any),
    row("description", K::Annotation, S::None, T::Any),
    row("default", K::Annotation, S::None, T::Any),
    row("deprecated", K::Annotation, S::None, T::Any),
    row("readOnly", K::Annotation, S::None, T::Any),
    row("writeOnly", K::Annotation, S::None, T::Any),
    row("examples", K::Annotation, S::None, T::Any),
    row("contentEncoding", K::Annotation, S::None, T::String),
    row("contentMediaType", K::Annotation, S::None, T::String),
    row("contentSchema", K::Annotation, S::One, T::String),
    // OpenAPI 3.0/3.1 schema object extras.
    openapi("nullable"),
    openapi("discriminator"),
    openapi("example"),
    openapi("externalDocs"),
    openapi("xml"),
];

/// The row of `name`, `None` for an unknown keyword.
///
/// ```
/// use surface_manifest::schema::{keyword, KeywordKind, Subschemas};
///
/// assert_eq!(keyword("items").unwrap().subschemas, Subschemas::OneOrList);
/// assert_eq!(keyword("title").unwrap().kind, KeywordKind::Annotation);
/// assert!(keyword("x-order").is_none());
/// ```
#[must_use]
pub fn keyword(name: &str) -> Option<&'static Keyword> {
    KEYWORDS.iter().find(|k| k.name == name)
}

/// Whether `name` neither shapes a type nor constrains a value: an
/// annotation, an identifier (`$defs` included), OpenAPI's extras
/// (`nullable` included: callers that read it ask for it by name) or an
/// `x-` extension.
#[must_use]
pub fn is_annotation(name: &str) -> bool {
    name.starts_with("x-")
        || keyword(name).is_some_and(|k| matches!(k.kind, K::Annotation | K::Identifier))
}

/// Whether `name` is a keyword of the JSON Schema vocabularies or OpenAPI's
/// (an `x-` extension or anything else is unknown).
#[must_use]
pub fn is_known(name: &str) -> bool {
    keyword(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, k) in KEYWORDS.iter().enumerate() {
            assert!(
                KEYWORDS[i + 1..].iter().all(|o| o.name != k.name),
                "{} twice",
                k.name
            );
        }
    }

    #[test]
    fn annotations() {
        for a in [
            "description",
            "$comment",
            "nullable",
            "x-order",
            "$defs",
            "examples",
        ] {
            assert!(is_annotation(a), "{a}");
        }
        for a in ["type", "$ref", "properties", "format", "unknownThing"] {
            assert!(!is_annotation(a), "{a}");
        }
    }
}
