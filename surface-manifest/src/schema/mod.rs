//! The typed view of JSON Schema shared by the code generator and the
//! runtime: [`Pointer`] (the one JSON Pointer escaper), [`resolve_ref`] (the
//! one `$ref` resolver), the [`keyword`] table and the [`subschemas`] /
//! [`walk`] visitor. Every walker in the workspace (type generation,
//! validator generation, schema export, strict mode) reads schemas through
//! these and none escapes tokens, percent-decodes or resolves references on
//! its own.
//!
//! Why a typed *view* of `serde_json::Value` and not a typed schema model
//! (as typify does over schemars' `SchemaObject`): the schemas come from
//! manifests nobody here wrote, in every draft from 4 to 2020-12 plus
//! OpenAPI's vocabulary, and the walkers must keep what they do not
//! understand (unknown keywords, `x-` extensions) byte for byte — the
//! export forwards it, the validator reports where it sits. A model type
//! would have to carry an "everything else" map at every node and convert
//! back, and a draft-specific model would reject schemas the runtime
//! validator accepts. A view keeps the document as the one truth and puts
//! the rules (pointers, references, the keyword table) in one place.

pub mod keyword;
pub mod pointer;
pub mod reference;
pub mod visit;

pub use keyword::{
    is_annotation, is_known, keyword, AppliesTo, Keyword, KeywordKind, Subschemas, KEYWORDS,
};
pub use pointer::{child_pointer, escape_token, push_token, unescape_token, Pointer, PointerError};
pub use reference::{local_pointer, resolve_ref, root_id, RefError, Resolved};
pub use visit::{subschemas, walk, Step};
