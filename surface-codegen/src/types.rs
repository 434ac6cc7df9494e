//! JSON Schema → Rust types (the README's "JSON Schema → Rust" table).
//!
//! [`generate_procedure_types`] turns a procedure's `inputSchema` and
//! `outputSchema` (as emitted by zod 4's `z.toJSONSchema` and by oRPC's
//! `@orpc/zod` converter) into items for the procedure's module: `Input`,
//! `Output` and the helper types they need. Generated types round-trip:
//! serde names equal the schema's property names, and a valid instance
//! deserializes and serializes back to equal JSON.
//!
//! # Why not typify
//! This is our own converter rather than `typify-impl` 0.8 (the latest
//! stable release), because typify-impl: lacks `prefixItems` tuples (zod's
//! `items: false` turns into an uninhabitable type) and `const`; collides
//! zod's `$defs` names (`__schema0`) when schemas share one type space;
//! panics on some zod inputs (a `$ref: "#"` root recursion without a
//! title); emits `::uuid`, `::chrono` and `::regress` paths the user's crate
//! would have to depend on; and pulls in schemars 0.8. Here every path goes
//! through the facade (`<crate_path>::__private::…`), so the user's crate
//! needs no serde dependency, and nothing panics.
//!
//! # Mapping
//! | schema | Rust |
//! |---|---|
//! | `{"type":"object","properties":…}` | `struct` with `pub` fields |
//! | required property, not nullable | `T` |
//! | required property, nullable | `Option<T>`, must be present (`required_nullable` helper) |
//! | optional property, not nullable | `Option<T>`, absent ⇒ `None`, `null` rejected (`optional` helper) |
//! | optional property, nullable | `Option<Option<T>>`: absent ⇒ `None`, `null` ⇒ `Some(None)` |
//! | `additionalProperties: false` | `#[serde(deny_unknown_fields)]` |
//! | `properties` + `additionalProperties` absent, `true` or `{}` | struct + `#[serde(flatten)] additional_properties: BTreeMap<String, Value>` |
//! | name in `required` without a schema in `properties` | required `serde_json::Value` field, with a note |
//! | `additionalProperties: S` without `properties` (record) | `BTreeMap<String, S>` |
//! | `properties` + `additionalProperties: S` | struct + `#[serde(flatten)]` map field |
//! | `{"type":"object"}` alone | `BTreeMap<String, Value>` |
//! | string `enum` | enum with `#[serde(rename = "…")]` unit variants (`+1` → `Plus1`, `-1` → `Minus1`) |
//! | `const` string | single-variant enum |
//! | `const` number / boolean | unit struct writing and accepting exactly that value |
//! | `const: null`, `{"type":"null"}` | `()` |
//! | `anyOf`/`oneOf` of string literals | one string enum |
//! | `anyOf`/`oneOf` of one plain `{"type":"string"}` and string literals (open enum) | enum of the known values + `Other(String)`, hand-written serde impls |
//! | `anyOf`/`oneOf` of objects sharing a required string-`const` property | `#[serde(tag = "…")]` enum of structs |
//! | other `anyOf`/`oneOf` | `#[serde(untagged)]` enum (first matching arm wins) |
//! | `anyOf [T, {"type":"null"}]`, `type: [T, "null"]`, `nullable: true` | `Option<T>` |
//! | `prefixItems` + `items: false` | tuple `(A, B, …)` (1 to 12 elements) |
//! | `prefixItems` + `items: S` or no `items` (oRPC) | `serde_helpers::TupleWithRest<(A, B, …), S or Value>` |
//! | `items: S` | `Vec<S>` |
//! | `integer` / `boolean` / `string` | `i64` / `bool` / `String` |
//! | `number` | `serde_json::Number` (keeps `42` and `1.5` as they were read) |
//! | `integer` with `minimum` ≥ 0 and `maximum` > `i64::MAX` | `u64` |
//! | `$ref` (`#/$defs/…`, `#/definitions/…`, `#`, any local pointer) | named item; recursion boxed where needed |
//! | `allOf` of objects (nested `allOf`s, also behind `$ref`s, flattened) | merged struct; any other part (a non-object type, `anyOf`/`oneOf`/`not` in a part, validation keywords only) named in a doc note, checked by the validator |
//! | `allOf` of one object or typed part (plus annotations, constraints) | that part's type (its name kept) |
//! | `$ref` + `nullable: true`, `allOf: [{$ref}, {nullable: true}]` (OpenAPI 3.0) | `Option<Ref>` |
//! | `properties` + `anyOf`/`oneOf` of `required`-only arms | the struct (fields only an arm requires are `Option`s), the rule in a doc note |
//! | `not` | the type of the rest of the schema, `not` in a doc note (checked by the validator) |
//! | `format` (`uuid`, `date-time`, `email`, …) | `String`, format named in the doc comment |
//! | `format` `uuid` / `date-time` / `date` / `uri`, `url` with [`TypedFormats`] | `uuid::Uuid` / `chrono::DateTime<FixedOffset>` / `chrono::NaiveDate` / `url::Url`, through `<crate_path>::__private` |
//! | `default` | property stays optional; default in the doc comment |
//! | `description` / `title` | doc comment / type name |
//! | `{}`, `true` | `serde_json::Value` |
//!
//! Nothing the schema admits is lost: properties beyond `properties`, when
//! `additionalProperties` is absent, `true` or `{}`, are kept in the
//! flattened `additional_properties` map (numbered like any field when a
//! property takes the name) and written back after the properties. The
//! binding facts ([`InputObject`]) still list only the schema's properties,
//! with [`AdditionalProperties::Allowed`].
//!
//! Numbers keep their form: a `number` is `serde_json::Number`, so `42`
//! round-trips as `42` and `1.5` as `1.5` (`serde_json::Value` equality).
//! An `integer` is `i64`/`u64`; since JSON Schema's integers are the numbers
//! with a zero fractional part, every field, newtype and untagged variant
//! whose type is an integer (or `Option`s, `Vec`s, `Box`es and maps of
//! integers) is read with `serde_helpers::integer`/`optional_integer`:
//! `2.0` reads as `2` and is written as `2` (as JavaScript writes it). An
//! untagged union with a `number` arm reads `2.0` into that arm instead, so
//! it keeps its form. Integers inside tuples are read by serde alone
//! (`2.0` refused).
//!
//! Not representable, so `serde_json::Value` with a doc note and an entry in
//! [`ProcedureTypes::notes`]: `false` schemas, tuples of more
//! than 12 elements, `const` arrays/objects, external or dangling `$ref`s,
//! `allOf` of several non-object types, nesting deeper than 32 levels, anything that is
//! not a schema, and whatever remains once a procedure's conversion work
//! budget is spent (4,096 + 16 steps per unit of its schemas' weight; it
//! stops schemas that re-expand shared `allOf`/`$ref` parts at every level
//! from growing exponentially). Descriptions, formats, defaults and notes
//! become doc comments through [`crate::doc::manifest_text`], so no
//! schema text is markdown in the user's crate. Validation keywords (`minLength`, `minimum`, `pattern`,
//! `format`, …) are not encoded in the types: the runtime validates every
//! call against the full schema. Formats are `String`s unless
//! [`TypeOptions::typed_formats`] asks for typed values.
//!
//! # Names
//! Every generated type name starts with `Input` or `Output` (`Input`,
//! `InputDevicesItem`, `InputRoot`), so it never shadows a prelude name
//! and input and output definitions never collide. A nested type is named
//! by its `title`, else by the key of the `$ref` that names it, else by
//! the property path where it is first reached; a converter's made-up
//! `$defs` keys (zod's `__schema0`) count as no name (docs/codegen.md,
//! "Names of nested types"). Property names become
//! snake_case field identifiers with `#[serde(rename = "<property>")]` when
//! they differ; keywords become raw identifiers (`r#type`), `self`/`super`/
//! `crate`/`Self` get a trailing `_`, non-identifier characters become `_`,
//! and collisions (`aB` and `a_b`) get a numeric suffix (`a_b_2`). Fields
//! appear in the order of serde_json's map (sorted by property name).

pub(crate) mod convert;
mod emit;
mod model;
pub(crate) mod names;
#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use crate::doc::DocText;

/// Options for type generation.
#[derive(Clone, Debug)]
pub struct TypeOptions {
    /// Path of the facade crate that generated code names for its support
    /// items: `#crate_path::__private::serde`, `…::serde_json`,
    /// `…::serde_helpers`. Default `::agent_surface`.
    pub crate_path: TokenStream,
    /// Which `format`s become typed values instead of `String` (none by
    /// default).
    pub typed_formats: TypedFormats,
}

impl Default for TypeOptions {
    fn default() -> Self {
        TypeOptions {
            crate_path: quote!(::agent_surface),
            typed_formats: TypedFormats::default(),
        }
    }
}

/// The `format`s generated as typed values (`manifest!(…, typed_formats =
/// [uuid, chrono, url])`, each needing the facade feature of the same name,
/// `typed-uuid`, `typed-chrono`, `typed-url`; docs/codegen.md, "Typed
/// formats"). The types are named through the facade
/// (`<crate_path>::__private::uuid::Uuid`), so the user's crate does not
/// depend on the format crates. All `false` by default: `String`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypedFormats {
    /// `format: uuid` → `uuid::Uuid` (written lowercase and hyphenated).
    pub uuid: bool,
    /// `format: date-time` → `chrono::DateTime<chrono::FixedOffset>`,
    /// `format: date` → `chrono::NaiveDate`.
    pub chrono: bool,
    /// `format: uri` and `format: url` → `url::Url` (WHATWG-normalized).
    pub url: bool,
}

/// Whether an object admits properties beyond `properties`. Also a fact
/// `manifest!` hands to `#[agent_procedure]` ([`crate::facts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdditionalProperties {
    /// `additionalProperties: false`.
    Forbidden,
    /// Absent or `true`.
    Allowed,
    /// A schema for extra properties (kept in a flattened map field).
    Typed,
}

/// One top-level property of an object input.
#[derive(Clone, Debug)]
pub struct FieldInfo {
    /// The schema's property name (`"deviceIds"`).
    pub json_name: String,
    /// The Rust field identifier as source text (`device_ids`, `r#type`).
    pub ident: String,
    /// The field's full type as emitted in the struct
    /// (`Option<String>` for an optional property).
    pub ty: TokenStream,
    /// The type of a present value: `ty` without the optionality wrapper
    /// (for an optional non-nullable property `T`; for a required nullable
    /// one `Option<T>`).
    pub value_ty: TokenStream,
    /// Listed in `required`.
    pub required: bool,
    /// Admits `null`.
    pub nullable: bool,
    /// `description`, if any.
    pub description: Option<String>,
}

/// The top-level shape of an object input schema.
#[derive(Clone, Debug)]
pub struct InputObject {
    /// Properties in schema order.
    pub fields: Vec<FieldInfo>,
    /// Extra-property policy.
    pub additional_properties: AdditionalProperties,
}

/// Types generated for one procedure.
#[derive(Clone, Debug)]
pub struct ProcedureTypes {
    /// Item definitions to place inside the procedure's module: always an
    /// item named `Input` (struct, enum or type alias) and one named
    /// `Output` (`serde_json::Value` alias when the manifest has no output
    /// schema), plus any helper types they need, all uniquely named within
    /// the module.
    pub items: TokenStream,
    /// `Some` when the input schema is an object with `properties`.
    pub input_object: Option<InputObject>,
    /// Human-readable notes about constructs that fell back to
    /// `serde_json::Value` or that the type does not encode and the
    /// validator checks (`not`, non-object `allOf` parts, "exactly one of"
    /// rules) (plain text, manifest text unescaped).
    pub notes: Vec<String>,
    /// The same notes as documentation paragraphs, manifest text escaped
    /// (also emitted as doc comments of the affected items).
    pub note_docs: Vec<DocText>,
}

/// Generates the input and output types of one procedure. Never panics:
/// what cannot be represented becomes `serde_json::Value` with a note.
///
/// `items` always defines `Input` and `Output` (an alias of
/// `serde_json::Value` when `output_schema` is `None`); the types named in
/// [`FieldInfo::ty`] are relative to the module holding `items`.
pub fn generate_procedure_types(
    input_schema: &Value,
    output_schema: Option<&Value>,
    options: &TypeOptions,
) -> ProcedureTypes {
    let krate = &options.crate_path;
    let weight = convert::Converter::weight_of(input_schema)
        .saturating_add(output_schema.map_or(0, convert::Converter::weight_of));
    let mut converter = convert::Converter::new(krate, weight, options.typed_formats);
    converter.convert_document(input_schema, "Input");
    match output_schema {
        Some(output) => converter.convert_document(output, "Output"),
        None => converter.value_alias(
            "Output",
            "Procedure output: the manifest declares no `outputSchema`, so it is opaque JSON.",
        ),
    }
    let input_object = converter.object_of("Input");
    let note_docs = converter.notes.clone();
    let notes = note_docs.iter().map(DocText::to_string).collect();
    let paths = emit::Paths::new(krate);
    let items = converter
        .into_items()
        .iter()
        .map(|item| emit::item_tokens(item, &paths))
        .collect();
    ProcedureTypes {
        items,
        input_object,
        notes,
        note_docs,
    }
}
