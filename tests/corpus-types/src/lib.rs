//! The whole public corpus as one generated API (`api`), with default
//! features: 834 procedures, each with its generated `Input`/`Output` types
//! and generated validators (no `dynamic`, no jsonschema). The differential
//! test in `tests/type_reading.rs` compares how the types and the validators
//! read the corpus samples; `root_id` adds a schema whose references carry
//! the root `$id`.

/// The generated API of `tests/fixtures/corpus/all.manifest.json`.
#[allow(clippy::all, missing_docs)]
pub mod api {
    agent_surface::manifest!("../fixtures/corpus/all.manifest.json");
}

/// A schema whose `$ref`s carry the root `$id`
/// (`https://x.test/refs#/$defs/Name`): local references, which the type
/// generator once took for external ones.
#[allow(clippy::all, missing_docs)]
pub mod root_id {
    agent_surface::manifest!("root-id.manifest.json");
}

/// `value` read into `T` and written back.
fn through<T: serde::de::DeserializeOwned + serde::Serialize>(
    value: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

include!(concat!(env!("OUT_DIR"), "/readers.rs"));
