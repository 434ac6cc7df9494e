//! The official JSON-Schema-Test-Suite (draft 2020-12 files of every
//! supported keyword, draft-07 files of the draft-07 spellings) against the
//! generated validators.
//!
//! Every case of every group the generator supports must pass, in both
//! passes (`is_valid`, and `errors` being empty exactly when valid). A group
//! the generator rejects is "skipped" and must be listed in [`SKIPPED`] with
//! the reason; files in [`UNSUPPORTED_FILES`] test keywords the generator
//! rejects, so every group using them must be rejected (never a silent
//! accept). Run with `--nocapture` for the per-file counts.

use std::collections::BTreeMap;

use schema_suite::{SUITE, SUITE_DIR};
use serde_json::Value;

const URI_REF: &str = "a `$ref` to another document or by `$id`-relative URI: only `#…` references within the schema are supported";
const ANCHOR: &str = "a `$ref` to an `$anchor`: only JSON Pointer fragments are supported";
const NESTED_ID: &str = "a `$ref` inside a subschema with its own `$id` (another base URI)";
const UNEVALUATED: &str = "`unevaluatedProperties` is not supported";

/// Groups of claimed files that the generator rejects, by file and group
/// description, and why. Each must really be rejected.
const SKIPPED: &[(&str, &str, &str)] = &[
    (
        "draft2020-12/defs.json",
        "validate definition against metaschema",
        URI_REF,
    ),
    (
        "draft2020-12/not.json",
        "collect annotations inside a 'not', even if collection is disabled",
        UNEVALUATED,
    ),
    (
        "draft2020-12/ref.json",
        "remote ref, containing refs itself",
        URI_REF,
    ),
    (
        "draft2020-12/ref.json",
        "Recursive references between schemas",
        URI_REF,
    ),
    (
        "draft2020-12/ref.json",
        "ref creates new scope when adjacent to keywords",
        UNEVALUATED,
    ),
    (
        "draft2020-12/ref.json",
        "refs with relative uris and defs",
        URI_REF,
    ),
    (
        "draft2020-12/ref.json",
        "relative refs with absolute uris and defs",
        URI_REF,
    ),
    (
        "draft2020-12/ref.json",
        "$id must be resolved against nearest parent, not just immediate parent",
        URI_REF,
    ),
    (
        "draft2020-12/ref.json",
        "order of evaluation: $id and $ref",
        URI_REF,
    ),
    (
        "draft2020-12/ref.json",
        "order of evaluation: $id and $anchor and $ref",
        ANCHOR,
    ),
    (
        "draft2020-12/ref.json",
        "order of evaluation: $id and $ref on nested schema",
        URI_REF,
    ),
    (
        "draft2020-12/ref.json",
        "URN base URI with URN and anchor ref",
        ANCHOR,
    ),
    (
        "draft2020-12/ref.json",
        "URN ref with nested pointer ref",
        URI_REF,
    ),
    ("draft2020-12/ref.json", "ref to if", URI_REF),
    ("draft2020-12/ref.json", "ref to then", URI_REF),
    ("draft2020-12/ref.json", "ref to else", URI_REF),
    (
        "draft2020-12/ref.json",
        "ref with absolute-path-reference",
        URI_REF,
    ),
    (
        "draft7/ref.json",
        "$ref prevents a sibling $id from changing the base uri",
        NESTED_ID,
    ),
    (
        "draft7/ref.json",
        "remote ref, containing refs itself",
        URI_REF,
    ),
    (
        "draft7/ref.json",
        "Recursive references between schemas",
        URI_REF,
    ),
    ("draft7/ref.json", "Location-independent identifier", ANCHOR),
    (
        "draft7/ref.json",
        "Reference an anchor with a non-relative URI",
        ANCHOR,
    ),
    (
        "draft7/ref.json",
        "Location-independent identifier with base URI change in subschema",
        URI_REF,
    ),
    (
        "draft7/ref.json",
        "refs with relative uris and defs",
        URI_REF,
    ),
    (
        "draft7/ref.json",
        "relative refs with absolute uris and defs",
        URI_REF,
    ),
    (
        "draft7/ref.json",
        "$id must be resolved against nearest parent, not just immediate parent",
        URI_REF,
    ),
    (
        "draft7/ref.json",
        "URN base URI with URN and anchor ref",
        ANCHOR,
    ),
    ("draft7/ref.json", "ref to if", URI_REF),
    ("draft7/ref.json", "ref to then", URI_REF),
    ("draft7/ref.json", "ref to else", URI_REF),
    (
        "draft7/ref.json",
        "ref with absolute-path-reference",
        URI_REF,
    ),
];

/// Files whose keyword the generator does not support: their groups are
/// rejected (and any group the generator does accept must pass).
const UNSUPPORTED_FILES: &[&str] = &[
    "draft2020-12/anchor.json",
    "draft2020-12/dynamicRef.json",
    "draft2020-12/refRemote.json",
    "draft2020-12/unevaluatedItems.json",
    "draft2020-12/unevaluatedProperties.json",
];

/// Files not claimed: run for information only (format: zod's semantics,
/// not the suite's).
const INFORMATIONAL: &[&str] = &["draft2020-12/format.json"];

fn load(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{SUITE_DIR}/{file}")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[derive(Default)]
struct Count {
    groups: usize,
    skipped: usize,
    cases: usize,
    passed: usize,
    failures: Vec<String>,
}

#[test]
fn json_schema_test_suite_passes_on_every_supported_group() {
    let mut files: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut counts: BTreeMap<&str, Count> = BTreeMap::new();
    let mut problems = Vec::new();
    for entry in SUITE {
        let groups = files.entry(entry.file).or_insert_with(|| load(entry.file));
        let group = &groups[entry.group];
        let description = group["description"].as_str().unwrap();
        let count = counts.entry(entry.file).or_default();
        count.groups += 1;
        let skip = SKIPPED
            .iter()
            .find(|(f, d, _)| *f == entry.file && *d == description);
        let unsupported_file = UNSUPPORTED_FILES.contains(&entry.file);
        match (&entry.validator, skip) {
            (Err(_), Some(_)) => count.skipped += 1,
            (Err(reasons), None) => {
                count.skipped += 1;
                if !unsupported_file {
                    problems.push(format!(
                        "{} / {description}: rejected but not listed in SKIPPED: {reasons:?}",
                        entry.file
                    ));
                }
            }
            (Ok(_), Some(_)) => problems.push(format!(
                "{} / {description}: listed in SKIPPED but now generated",
                entry.file
            )),
            (Ok(validator), None) => {
                for case in group["tests"].as_array().unwrap() {
                    count.cases += 1;
                    let data = &case["data"];
                    let expected = case["valid"].as_bool().unwrap();
                    let valid = validator.is_valid(data);
                    let errors = validator.errors(data);
                    if valid == expected && errors.is_empty() == expected {
                        count.passed += 1;
                    } else {
                        count.failures.push(format!(
                            "{description} / {}: expected {expected}, is_valid {valid}, errors {:?}",
                            case["description"], errors
                        ));
                    }
                }
            }
        }
    }
    // Floors from the vendored suite (2026-12: 53 files, 473 groups, 1,222
    // cases run): a suite that lost files or groups fails here.
    let groups: usize = counts.values().map(|c| c.groups).sum();
    let cases: usize = counts.values().map(|c| c.cases).sum();
    assert!(
        counts.len() >= 53 && groups >= 470 && cases >= 1200,
        "the JSON Schema Test Suite ran {} files, {groups} groups, {cases} cases; \
         expected at least 53, 470 and 1,200",
        counts.len()
    );
    println!("file\tgroups\tskipped\tcases\tpassed");
    for (file, c) in &counts {
        println!(
            "{file}\t{}\t{}\t{}\t{}",
            c.groups, c.skipped, c.cases, c.passed
        );
        if INFORMATIONAL.contains(file) {
            continue;
        }
        for f in &c.failures {
            problems.push(format!("{file}: {f}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
