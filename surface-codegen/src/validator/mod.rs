//! JSON Schema → a validator in plain Rust (issue 13).
//!
//! [`validator_tokens`] turns one schema into an expression of type
//! `<crate>::__private::validation::Validator`: a pair of generated
//! functions, a fast `is_valid` that allocates nothing and an error pass
//! that runs only on invalid instances and reports every violation with its
//! instance path, keyword and a masked message — the same errors, keyword by
//! keyword and path by path, as the runtime `jsonschema` validator reports.
//!
//! # Generated code
//! One function per subschema that is referenced more than once or
//! recursively (plus the root), everything else inlined; instance paths are
//! linked lists on the stack, rendered only when an error is recorded; large
//! `anyOf`/`oneOf`/`not`/`if`/`contains` branches become `is_valid`-only
//! functions shared by both passes. Nothing is generic, so nothing is
//! monomorphized per schema.
//!
//! # Keywords
//! Draft 2020-12 (the default, also for a missing `$schema`), 2019-09,
//! draft-07 and draft-06, picked by `$schema` as the runtime validator picks
//! them: `type` (also arrays; `integer` is a number with a zero fraction),
//! `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `multipleOf` (exact in the decimal reading),
//! `minLength`/`maxLength` (code points), `pattern` (ECMA-262), `format`,
//! `properties`, `required`, `additionalProperties`, `patternProperties`,
//! `propertyNames`, `minProperties`/`maxProperties`, `dependentRequired`,
//! `dependentSchemas`, `dependencies`, `items` (schema or draft-07 array
//! form), `prefixItems`, `additionalItems`, `contains`,
//! `minContains`/`maxContains`, `minItems`/`maxItems`, `uniqueItems`,
//! `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, and `$ref` to any
//! JSON Pointer in the document (`#`, `#/$defs/…`, `#/definitions/…`,
//! `~0`/`~1` and percent-escapes; recursion allowed, `$ref` siblings applied
//! from 2019-09 on and ignored before, as the drafts say), 2019-09's
//! `$recursiveRef` to the root, and the draft-mix readings of
//! docs/validation.md ("Draft-mix readings": a boolean `$recursiveAnchor`
//! in a 2020-12 document turns on 2019-09's recursion keywords; a boolean
//! `exclusiveMinimum`/`exclusiveMaximum` is draft-04's modifier of
//! `minimum`/`maximum` in every draft). References are resolved by
//! `surface_manifest::schema::resolve_ref`. Everything else —
//! `title`, `description`, `default`, `examples`, `deprecated`, `readOnly`,
//! `writeOnly`, `content*`, `$comment`, `x-*`, OpenAPI's `nullable` and any
//! unknown keyword — is an annotation and checks nothing.
//!
//! [`Unsupported`] (never a silent accept): `unevaluatedProperties`,
//! `unevaluatedItems`, `$dynamicRef`, a `$recursiveRef` to anything but the
//! root or in a document with embedded `$id` resources, `$ref` to an anchor
//! or another document, `$ref` inside a subschema with its own `$id`, a
//! `$ref` cycle that does not descend into the instance, draft-04 and
//! unknown `$schema` dialects, a `pattern` that is not a valid ECMA-262
//! regular expression, and keyword values of the wrong shape.

use std::fmt;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

pub(crate) use analysis::{size_limit, Analysis, TYPES};

mod analysis;
mod emit;
#[cfg(test)]
mod tests;

/// How [`validator_tokens`] names the runtime.
#[derive(Clone, Debug)]
pub struct ValidatorOptions {
    /// Path of the runtime crate in the generated code, e.g.
    /// `::surface_runtime` or `::agent_surface`; the code names
    /// `<crate_path>::__private::{validation, pattern, format, serde_json}`.
    pub crate_path: TokenStream,
}

impl Default for ValidatorOptions {
    fn default() -> Self {
        ValidatorOptions {
            crate_path: quote!(::surface_runtime),
        }
    }
}

/// A part of the schema the generator cannot turn into a validator.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Unsupported {
    /// The keyword (`"unevaluatedProperties"`, `"$ref"`, `"pattern"`, …).
    pub keyword: String,
    /// JSON Pointer of the keyword in the schema (`"/properties/a/pattern"`).
    pub pointer: String,
    /// What is wrong, in a sentence.
    pub reason: UnsupportedReason,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.keyword.is_empty() {
            // A subschema itself (e.g. a number where a schema belongs).
            return write!(
                f,
                "the subschema at `{}`: {}",
                if self.pointer.is_empty() {
                    "#"
                } else {
                    &self.pointer
                },
                self.reason
            );
        }
        write!(
            f,
            "`{}` at `{}`: {}",
            self.keyword,
            if self.pointer.is_empty() {
                "#"
            } else {
                &self.pointer
            },
            self.reason
        )
    }
}

/// Generates the validator of `schema`: an expression of type
/// `<crate_path>::__private::validation::Validator`, usable as a `const`
/// initializer (docs/validation.md, "Keywords" and "Draft-mix readings").
///
/// # Errors
/// Every unsupported part of the schema, each an [`Unsupported`] with its
/// keyword, JSON Pointer and [`UnsupportedReason`]; never panics on a
/// schema of any shape.
pub fn validator_tokens(
    schema: &Value,
    options: &ValidatorOptions,
) -> Result<TokenStream, Vec<Unsupported>> {
    let analysis = Analysis::run(schema)?;
    Ok(emit::Emitter::new(&analysis, options).emit())
}

/// The JSON Schema dialect, as far as the supported keywords differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    D6,
    D7,
    D2019,
    D2020,
}

impl Draft {
    /// `$ref` siblings apply (2019-09 on).
    pub(crate) fn ref_siblings(self) -> bool {
        self >= Draft::D2019
    }
    pub(crate) fn knows(self, keyword: &str) -> bool {
        match keyword {
            "if" => self >= Draft::D7,
            "dependentRequired" | "dependentSchemas" | "minContains" | "maxContains" => {
                self >= Draft::D2019
            }
            "prefixItems" | "$dynamicRef" => self >= Draft::D2020,
            "unevaluatedProperties" | "unevaluatedItems" => self >= Draft::D2019,
            // Replaced by `$dynamicRef` in 2020-12, where it means nothing
            // (the runtime validator ignores it too).
            "$recursiveRef" => self == Draft::D2019,
            _ => true,
        }
    }
}

/// Why a part of a schema has no generated validator; the message completes
/// "`keyword` at `pointer`: …".
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum UnsupportedReason {
    /// `$schema` names another dialect (draft-04, an unknown URI).
    #[error("only the 2020-12, 2019-09, draft-07 and draft-06 dialects are supported")]
    Dialect,
    /// A subschema is neither an object nor a boolean.
    #[error("a schema must be an object or a boolean")]
    NotASchema,
    /// A keyword value the draft's meta-schema rejects (the runtime validator rejects such a schema too).
    #[error("has a value the draft's meta-schema does not allow")]
    MetaSchema,
    /// The value must be a string.
    #[error("must be a string")]
    MustBeString,
    /// The value must be a boolean.
    #[error("must be a boolean")]
    MustBeBoolean,
    /// The value must be an array.
    #[error("must be an array")]
    MustBeArray,
    /// The value must be an object.
    #[error("must be an object")]
    MustBeObject,
    /// The value must be an array of strings.
    #[error("must be an array of strings")]
    MustBeStringArray,
    /// The value must be an array of schemas.
    #[error("must be an array of schemas")]
    MustBeSchemaArray,
    /// The value must be a non-empty array of schemas.
    #[error("must be a non-empty array of schemas")]
    MustBeNonEmptySchemaArray,
    /// The value must be an object of schemas.
    #[error("must be an object of schemas")]
    MustBeSchemaObject,
    /// The value must be an object of string arrays.
    #[error("must be an object of string arrays")]
    MustBeStringArrayObject,
    /// The value must be a JSON type name or an array of them.
    #[error("must be a JSON type name or an array of them")]
    MustBeTypeNames,
    /// The value must be a non-negative integer.
    #[error("must be a non-negative integer")]
    MustBeSize,
    /// The value must be a number.
    #[error("must be a number")]
    MustBeNumber,
    /// The value must be a number, or a boolean (draft-04's modifier of
    /// `minimum`/`maximum`).
    #[error("must be a number, or a boolean (draft-04's modifier of `minimum`/`maximum`)")]
    MustBeNumberOrBoolean,
    /// The value must be a number greater than 0.
    #[error("must be a number greater than 0")]
    MustBePositive,
    /// `unevaluatedProperties`, `unevaluatedItems`, `$dynamicRef`.
    #[error("is not supported by the generated validator")]
    Keyword,
    /// A `$recursiveRef` whose value does not name the document root
    /// (2019-09 defines the keyword for `"#"` only).
    #[error("only `\"#\"` (the document root) is supported: 2019-09 defines `$recursiveRef` for no other value")]
    RecursiveRefNotRoot,
    /// A `$recursiveRef` in a document with embedded `$id` resources, where
    /// its target depends on the dynamic scope.
    #[error("a `$recursiveRef` in a document with embedded `$id` resources is not supported (its target depends on the dynamic scope)")]
    RecursiveRefWithResources,
    /// A `$ref` inside a subschema with its own `$id` is not supported.
    #[error("a `$ref` inside a subschema with its own `$id` is not supported")]
    RefInResource,
    /// A `$ref` to another document.
    #[error("only references within this schema (`#…`) are supported")]
    ExternalRef,
    /// The fragment is not valid percent-encoded UTF-8, or not a JSON
    /// Pointer (a `~` not followed by `0` or `1`).
    #[error("the fragment is not valid percent-encoded UTF-8 or not a JSON Pointer")]
    BadFragment,
    /// References to anchors (`#name`) are not supported.
    #[error("references to anchors (`#name`) are not supported")]
    AnchorRef,
    /// Points at nothing in this schema.
    #[error("points at nothing in this schema")]
    DanglingRef,
    /// Points at something that is not a schema.
    #[error("points at something that is not a schema")]
    RefToNonSchema,
    /// A `$ref` cycle that does not descend into the instance never terminates.
    #[error("a `$ref` cycle that does not descend into the instance never terminates")]
    EndlessCycle,
    /// A `pattern` or `patternProperties` key that is not an ECMA-262
    /// regular expression; the parser's message.
    #[error("is not a valid ECMA-262 regular expression ({0})")]
    Pattern(String),
}
