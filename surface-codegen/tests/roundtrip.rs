//! Compiled round-trip tests (typify style): the committed generated code
//! of every fixture is compiled here, and every sample instance must
//! deserialize into the generated type and serialize back to equal JSON
//! (`serde_json::Value` equality: a number keeps its integer or float form),
//! also with extra properties where the schema's top level allows them;
//! every invalid variant must fail to deserialize (generated types
//! round-trip the schema's JSON).

mod support;

use serde_json::Value;
use surface_codegen::types::{generate_procedure_types, AdditionalProperties, TypeOptions};
use surface_runtime::__private::serde::{de::DeserializeOwned, Serialize};

/// One generated procedure: its path and round-trip functions.
pub struct Procedure {
    pub path: &'static str,
    pub input: fn(&Value) -> Result<Value, String>,
    pub output: fn(&Value) -> Result<Value, String>,
}

/// Deserializes `value` into `T` and serializes it back.
fn roundtrip<T: DeserializeOwned + Serialize>(value: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

#[allow(clippy::all, dead_code)]
mod handmade {
    use super::{roundtrip, Procedure};
    include!("generated/handmade.rs");
}

#[allow(clippy::all, dead_code)]
mod orpc {
    use super::{roundtrip, Procedure};
    include!("generated/orpc.rs");
}

#[allow(clippy::all, dead_code)]
mod zod {
    use super::{roundtrip, Procedure};
    include!("generated/zod.rs");
}

/// Invalid variants derived from a valid object sample and the schema's
/// top-level shape: each required property removed, `null` for each
/// optional non-nullable property, an extra property when
/// `additionalProperties` is false.
fn invalid_variants(schema: &Value, sample: &Value) -> Vec<(String, Value)> {
    let Some(object) = sample.as_object() else {
        return Vec::new();
    };
    let types = generate_procedure_types(schema, None, &TypeOptions::default());
    let Some(shape) = types.input_object else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for field in &shape.fields {
        if field.required && object.contains_key(&field.json_name) {
            let mut v = object.clone();
            v.remove(&field.json_name);
            out.push((
                format!("required property {:?} missing", field.json_name),
                Value::Object(v),
            ));
        }
        if !field.required && !field.nullable {
            let mut v = object.clone();
            v.insert(field.json_name.clone(), Value::Null);
            out.push((
                format!("null for optional non-nullable {:?}", field.json_name),
                Value::Object(v),
            ));
        }
    }
    if shape.additional_properties == AdditionalProperties::Forbidden {
        let mut v = object.clone();
        v.insert("__surface_unexpected__".into(), Value::Bool(true));
        out.push((
            "extra property under additionalProperties false".into(),
            Value::Object(v),
        ));
    }
    out
}

/// A valid object sample with extra properties, when the schema's top
/// level admits any (`additionalProperties` absent, `true` or `{}`): they
/// must come back unchanged (kept in the flattened map).
fn with_extras(schema: &Value, sample: &Value) -> Option<Value> {
    let object = sample.as_object()?;
    let types = generate_procedure_types(schema, None, &TypeOptions::default());
    let shape = types.input_object?;
    if shape.additional_properties != AdditionalProperties::Allowed {
        return None;
    }
    let mut v = object.clone();
    v.insert(
        "__surface_extra__".into(),
        serde_json::json!({"n": 42, "x": 1.5, "list": [null, true]}),
    );
    v.insert("__surface_extra_2__".into(), serde_json::json!(2.0));
    Some(Value::Object(v))
}

#[derive(Default)]
struct Counts {
    valid: usize,
    invalid: usize,
}

fn check(fixture_name: &str, procedures: &[Procedure]) -> Counts {
    let fixture = support::fixtures()
        .into_iter()
        .find(|f| f.name == fixture_name)
        .expect("fixture listed");
    let manifest = support::read_json(&fixture.manifest);
    let samples = support::read_json(&fixture.samples);
    let tools = support::tools(&fixture, &manifest);
    assert_eq!(
        procedures.iter().map(|p| p.path).collect::<Vec<_>>(),
        tools.iter().map(|(p, ..)| p.as_str()).collect::<Vec<_>>(),
        "{fixture_name}: generated code is stale (run the generated_code test with SURFACE_BLESS=1)"
    );
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for (procedure, (path, input_schema, output_schema)) in procedures.iter().zip(&tools) {
        let entry = &samples[path.as_str()];
        // Corpus samples: `{"input": {"valid": [..], "invalid": [..]}}`;
        // their invalid values break validation keywords, not always the
        // type, so only the derived invalid variants are checked.
        let samples_of = |side: &Value| match side {
            Value::Object(side) => side
                .get("valid")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            other => other.as_array().cloned().unwrap_or_default(),
        };
        let input_samples = samples_of(&entry["input"]);
        // Every real procedure has samples; hand-made `hostile.*` ones only
        // need to compile.
        if input_samples.is_empty() && !path.starts_with("hostile.") {
            failures.push(format!("{path}: no input samples"));
        }
        let sides = [
            (
                "input",
                procedure.input,
                Some(input_schema),
                input_samples,
                "invalidInput",
            ),
            (
                "output",
                procedure.output,
                output_schema.as_ref(),
                samples_of(&entry["output"]),
                "invalidOutput",
            ),
        ];
        for (side, f, schema, valid, invalid_key) in sides {
            for sample in &valid {
                counts.valid += 1;
                match f(sample) {
                    // Strict: `serde_json::Value` equality, so `42` must not come
                    // back as `42.0` nor `1.5` as anything else.
                    Ok(back) if back == *sample => {}
                    Ok(back) => {
                        failures.push(format!("{path} {side}: {sample} came back as {back}"))
                    }
                    Err(e) => failures.push(format!("{path} {side}: {sample} rejected: {e}")),
                }
                if let Some(extended) = schema.and_then(|schema| with_extras(schema, sample)) {
                    counts.valid += 1;
                    match f(&extended) {
                        Ok(back) if back == extended => {}
                        Ok(back) => failures.push(format!(
                            "{path} {side}: extra properties lost: {extended} came back as {back}"
                        )),
                        Err(e) => failures.push(format!(
                            "{path} {side}: {extended} (extra properties) rejected: {e}"
                        )),
                    }
                }
                if let Some(schema) = schema {
                    for (why, bad) in invalid_variants(schema, sample) {
                        counts.invalid += 1;
                        if let Ok(back) = f(&bad) {
                            failures.push(format!(
                                "{path} {side}: accepted invalid ({why}) {bad} as {back}"
                            ));
                        }
                    }
                }
            }
            for bad in entry[invalid_key].as_array().into_iter().flatten() {
                counts.invalid += 1;
                if let Ok(back) = f(bad) {
                    failures.push(format!("{path} {side}: accepted invalid {bad} as {back}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{fixture_name}: {} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(counts.valid > 0 && counts.invalid > 0);
    eprintln!(
        "{fixture_name}: {} valid samples round-tripped, {} invalid variants rejected",
        counts.valid, counts.invalid
    );
    counts
}

#[allow(clippy::all, dead_code)]
mod corpus_github {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_github.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_notion {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_notion.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_filesystem {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_filesystem.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_memory {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_memory.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_playwright {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_playwright.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_firecrawl {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_firecrawl.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_orpc_playground {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_orpc_playground.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_orpc_playground_zod {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_orpc_playground_zod.rs");
}

#[allow(clippy::all, dead_code)]
mod corpus_openai_selected {
    use super::{roundtrip, Procedure};
    include!("generated/corpus_openai_selected.rs");
}

#[test]
fn corpus_openai_selected_samples_round_trip_exactly() {
    check("corpus_openai_selected", corpus_openai_selected::PROCEDURES);
}

#[test]
fn handmade_samples_round_trip_and_invalid_variants_fail() {
    check("handmade", handmade::PROCEDURES);
}

#[test]
fn orpc_fixture_samples_round_trip_and_invalid_variants_fail() {
    check("orpc", orpc::PROCEDURES);
}

#[test]
fn zod_fixture_samples_round_trip_and_invalid_variants_fail() {
    check("zod", zod::PROCEDURES);
}

#[test]
fn corpus_github_samples_round_trip_exactly() {
    check("corpus_github", corpus_github::PROCEDURES);
}

#[test]
fn corpus_notion_samples_round_trip_exactly() {
    check("corpus_notion", corpus_notion::PROCEDURES);
}

#[test]
fn corpus_filesystem_samples_round_trip_exactly() {
    check("corpus_filesystem", corpus_filesystem::PROCEDURES);
}

#[test]
fn corpus_memory_samples_round_trip_exactly() {
    check("corpus_memory", corpus_memory::PROCEDURES);
}

#[test]
fn corpus_playwright_samples_round_trip_exactly() {
    check("corpus_playwright", corpus_playwright::PROCEDURES);
}

#[test]
fn corpus_firecrawl_samples_round_trip_exactly() {
    check("corpus_firecrawl", corpus_firecrawl::PROCEDURES);
}

#[test]
fn corpus_orpc_playground_samples_round_trip_exactly() {
    check("corpus_orpc_playground", corpus_orpc_playground::PROCEDURES);
}

#[test]
fn corpus_orpc_playground_zod_samples_round_trip_exactly() {
    check(
        "corpus_orpc_playground_zod",
        corpus_orpc_playground_zod::PROCEDURES,
    );
}
