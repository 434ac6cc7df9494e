//! The generated types and the generated validators of every corpus tool
//! read the corpus samples (`tests/fixtures/corpus/*.samples.json`, valid
//! and invalid inputs made by `tests/corpus-tools`, each invalid one with
//! Ajv's first error) the same way:
//!
//! * a sample the validator accepts is read by the generated `Input` and
//!   written back unchanged (same JSON value);
//! * a sample the validator rejects for its `type` or `required` (Ajv's
//!   keyword) is refused by the generated `Input` too: a type that accepts
//!   it models a different shape than the validator checks (as a `$ref`
//!   the type generator treated as external, typed `serde_json::Value`,
//!   while the validator resolved it, once did).
//!
//! `additionalProperties` samples are not compared: generated structs keep
//! unknown members or ignore them by design (docs/codegen.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use corpus_types::{api, read_input};

/// Every (path, samples) of the corpus, then of `root-id.samples.json`
/// (hand-written; its invalid samples name their `keyword` directly).
fn samples() -> Vec<(String, Value)> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(here.join("../fixtures/corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".samples.json"))
        .collect();
    files.sort();
    files.push(here.join("root-id.samples.json"));
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let map: BTreeMap<String, Value> = serde_json::from_str(&text).unwrap();
        out.extend(map);
    }
    out
}

#[test]
fn generated_types_read_what_generated_validators_accept_and_refuse_what_they_reject_by_shape() {
    let (corpus, root_id) = (api::authority(), corpus_types::root_id::authority());
    let mut tools = 0;
    let mut accepted = 0;
    let mut refused = 0;
    let mut not_generated = Vec::new();
    let mut disagreements = Vec::new();
    for (path, sample) in samples() {
        tools += 1;
        let authority = if path.starts_with("refs.") {
            &root_id
        } else {
            &corpus
        };
        let Some(validator) = authority.input_validator(&path) else {
            not_generated.push(path);
            continue;
        };
        let input = &sample["input"];
        for valid in input["valid"].as_array().into_iter().flatten() {
            if !validator.is_valid(valid) {
                continue; // a validator/Ajv question: tests/schema-suite's differential
            }
            accepted += 1;
            match read_input(&path, valid).expect("every corpus path has a reader") {
                Ok(back) if back == *valid => {}
                Ok(back) => disagreements.push(format!("{path}: {valid} read back as {back}")),
                Err(e) => disagreements.push(format!(
                    "{path}: {valid} accepted by the validator, refused by the type: {e}"
                )),
            }
        }
        for invalid in input["invalid"].as_array().into_iter().flatten() {
            let keyword = invalid["ajv"]["keyword"]
                .as_str()
                .or(invalid["keyword"].as_str())
                .unwrap_or("");
            let value = &invalid["value"];
            if !matches!(keyword, "type" | "required") || validator.is_valid(value) {
                continue;
            }
            refused += 1;
            if let Ok(read) = read_input(&path, value).expect("every corpus path has a reader") {
                disagreements.push(format!(
                    "{path}: {value} rejected by the validator ({keyword} at {}), read by the type as {read}",
                    invalid["ajv"]["instancePath"]
                ));
            }
        }
    }
    assert_eq!(tools, 835);
    assert_eq!(
        not_generated,
        Vec::<String>::new(),
        "tools without a generated validator"
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreements (of {accepted} accepted, {refused} refused samples):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert_eq!(
        not_generated,
        Vec::<String>::new(),
        "tools without a generated validator"
    );
    println!(
        "{accepted} accepted and {refused} refused samples read alike by types and validators"
    );
}
