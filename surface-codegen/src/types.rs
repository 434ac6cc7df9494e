//! JSON Schema → Rust types (SPEC §4; issue "codegen" item 4).
//!
//! INTERFACE STUB written by the lead: the types helper replaces the body
//! with the real converter; callers (the `manifest!` expansion) rely only on
//! the items below.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

/// Options for type generation.
#[derive(Clone, Debug)]
pub struct TypeOptions {
    /// Path of the facade crate that generated code names for its support
    /// items: `#crate_path::__private::serde`, `…::serde_json`,
    /// `…::serde_helpers`. Default `::agent_surface`.
    pub crate_path: TokenStream,
}

impl Default for TypeOptions {
    fn default() -> Self {
        TypeOptions {
            crate_path: quote!(::agent_surface),
        }
    }
}

/// Whether an object admits properties beyond `properties`.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// `serde_json::Value` (also emitted as doc comments).
    pub notes: Vec<String>,
}

/// Generates the input and output types of one procedure. Never panics:
/// what cannot be represented becomes `serde_json::Value` with a note.
pub fn generate_procedure_types(
    input_schema: &Value,
    output_schema: Option<&Value>,
    options: &TypeOptions,
) -> ProcedureTypes {
    let _ = (input_schema, output_schema);
    let krate = &options.crate_path;
    ProcedureTypes {
        items: quote! {
            /// Procedure input (placeholder until the converter lands).
            pub type Input = #krate::__private::serde_json::Value;
            /// Procedure output.
            pub type Output = #krate::__private::serde_json::Value;
        },
        input_object: None,
        notes: vec!["placeholder converter".into()],
    }
}
