//! Differential property test: the generated validator of every fixture
//! schema (codegen fixtures and, when present, the public corpus) against
//! `jsonschema` (formats off), on the fixtures' sample instances and on
//! mutations of them. They must agree on validity and, for invalid
//! instances, on the multiset of `(instancePath, keyword, message)` errors
//! (`propertyNames`: path and keyword only, as the runtime validator's
//! message there is the unmasked inner one).
//!
//! Disagreements found while building the generator are pinned as named
//! tests at the end of this file.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use schema_suite::{
    Fixture, CODEGEN_DIR, CORPUS_DIR, FIXTURES, REGRESSIONS, REGRESSIONS_FILE, ROOT_DIR,
};
use serde_json::{json, Map, Value};
use surface_runtime::validation::Validator;

/// Mutated instances tried per fixture schema.
const CASES_CODEGEN: u32 = 256;
const CASES_CORPUS: u32 = 16;

type ErrorKey = (String, String, String);

fn generated_errors(v: &Validator, instance: &Value) -> Vec<ErrorKey> {
    let mut out: Vec<ErrorKey> = v
        .errors(instance)
        .into_iter()
        .map(|e| {
            let message = if e.keyword == "propertyNames" {
                String::new()
            } else {
                e.message.into_owned()
            };
            (e.instance_path, e.keyword.to_string(), message)
        })
        .collect();
    out.sort();
    out
}

fn reference_errors(v: &jsonschema::Validator, instance: &Value) -> Vec<ErrorKey> {
    let mut out: Vec<ErrorKey> = v
        .iter_errors(instance)
        .map(|e| {
            let keyword = e.kind().keyword().to_string();
            let message = if keyword == "propertyNames" {
                String::new()
            } else {
                e.masked().to_string()
            };
            (e.instance_path().as_str().to_string(), keyword, message)
        })
        .collect();
    out.sort();
    out
}

/// `Err` describing the first difference between the two validators on
/// `instance`.
fn compare(
    generated: &Validator,
    reference: &jsonschema::Validator,
    instance: &Value,
) -> Result<(), String> {
    let (g, r) = (generated.is_valid(instance), reference.is_valid(instance));
    if g != r {
        return Err(format!(
            "validity: generated {g}, jsonschema {r} for {instance}"
        ));
    }
    let (ge, re) = (
        generated_errors(generated, instance),
        reference_errors(reference, instance),
    );
    if ge.is_empty() != g {
        return Err(format!(
            "generated is_valid {g} but errors {ge:?} for {instance}"
        ));
    }
    if ge != re {
        return Err(format!(
            "errors differ for {instance}:\n  generated {ge:?}\n  jsonschema {re:?}"
        ));
    }
    Ok(())
}

/// The runtime validator exactly as the registry compiles it: jsonschema
/// with `surface_runtime::format`'s zod-exact checks as its formats.
fn reference(schema: &Value) -> Result<jsonschema::Validator, String> {
    surface_runtime::format::validator_for(schema).map_err(|e| e.to_string())
}

/// The runtime validator of `schema` under the generator's draft-mix
/// readings (docs/validation.md, "Draft-mix readings"): `schema` itself
/// when jsonschema accepts it, else jsonschema on the schema in the
/// dialect the reading names — a 2020-12 document holding a boolean
/// `$recursiveAnchor` declared 2019-09, and draft-04's
/// `{"minimum": m, "exclusiveMinimum": true}` written as 2019-09's
/// `{"exclusiveMinimum": m}` (`false`: dropped; likewise for `maximum`).
/// Written independently of the generator, so the test checks the reading.
fn reference_for(schema: &Value) -> Result<jsonschema::Validator, String> {
    let as_is = reference(schema);
    if as_is.is_ok() {
        return as_is;
    }
    let mut rewritten = schema.clone();
    let mut boolean_anchor = false;
    draft_mix_rewrite(&mut rewritten, &mut boolean_anchor);
    if boolean_anchor {
        if let Value::Object(root) = &mut rewritten {
            let dialect = root.get("$schema").and_then(Value::as_str).unwrap_or("");
            if dialect.is_empty() || dialect.contains("2020-12") {
                root.insert(
                    "$schema".into(),
                    "https://json-schema.org/draft/2019-09/schema".into(),
                );
            }
        }
    }
    if rewritten == *schema {
        return as_is;
    }
    reference(&rewritten).map_err(|e| format!("{e} (in the draft-mix reading {rewritten})"))
}

/// See [`reference_for`]: rewrites every schema object below `v`.
fn draft_mix_rewrite(v: &mut Value, boolean_anchor: &mut bool) {
    match v {
        Value::Object(m) => {
            *boolean_anchor |= m.get("$recursiveAnchor").is_some_and(Value::is_boolean);
            for (bound, modifier) in [
                ("minimum", "exclusiveMinimum"),
                ("maximum", "exclusiveMaximum"),
            ] {
                match m.get(modifier) {
                    Some(Value::Bool(true)) => {
                        m.remove(modifier);
                        if let Some(limit) = m.remove(bound) {
                            m.insert(modifier.into(), limit);
                        }
                    }
                    Some(Value::Bool(false)) => {
                        m.remove(modifier);
                    }
                    _ => {}
                }
            }
            for sub in m.values_mut() {
                draft_mix_rewrite(sub, boolean_anchor);
            }
        }
        Value::Array(items) => {
            for item in items {
                draft_mix_rewrite(item, boolean_anchor);
            }
        }
        _ => {}
    }
}

fn read(path: &str) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The fixture's schema and its sample instances.
fn schema_and_samples(f: &Fixture) -> (Value, Vec<Value>) {
    let (kind, file) = f.source.split_once('/').unwrap();
    if kind == "view" {
        let inputs = read(&format!("{ROOT_DIR}/{file}")).unwrap();
        let mut samples = vec![json!({})];
        samples.extend(
            VIEW_SAMPLES
                .iter()
                .filter(|(name, _)| *name == f.tool)
                .map(|(_, text)| serde_json::from_str::<Value>(text).unwrap()),
        );
        return (inputs[f.tool].clone(), samples);
    }
    let dir = match kind {
        "codegen" => CODEGEN_DIR,
        _ => CORPUS_DIR,
    };
    let manifest = read(&format!("{dir}/{file}")).unwrap();
    let key = if f.schema == "input" {
        "inputSchema"
    } else {
        "outputSchema"
    };
    let schema = manifest["tools"][f.tool][key].clone();
    let mut samples = Vec::new();
    if kind == "codegen" {
        if let Some(all) = read(&format!("{dir}/samples.json")) {
            if let Some(list) = all[f.tool][f.schema].as_array() {
                samples.extend(list.iter().cloned());
            }
        }
    } else {
        let stem = file.trim_end_matches(".manifest.json");
        if let Some(all) = read(&format!("{dir}/{stem}.samples.json")) {
            let entry = &all[f.tool][f.schema];
            if let Some(list) = entry["valid"].as_array() {
                samples.extend(list.iter().cloned());
            }
            if let Some(list) = entry["invalid"].as_array() {
                samples.extend(list.iter().map(|s| s["value"].clone()));
            }
        }
    }
    if samples.is_empty() {
        samples.push(json!({}));
    }
    (schema, samples)
}

/// Strings and property names the schema mentions, so mutations hit
/// `enum`, `const`, discriminators and named properties.
fn harvest(schema: &Value, names: &mut BTreeSet<String>, strings: &mut Vec<Value>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                match k.as_str() {
                    "properties" | "patternProperties" | "dependentRequired"
                    | "dependentSchemas" => {
                        if let Value::Object(props) = v {
                            names.extend(props.keys().cloned());
                        }
                    }
                    "required" => {
                        if let Value::Array(r) = v {
                            names.extend(r.iter().filter_map(Value::as_str).map(String::from));
                        }
                    }
                    "enum" => {
                        if let Value::Array(e) = v {
                            strings.extend(e.iter().cloned());
                        }
                    }
                    "const" | "default" | "minimum" | "maximum" | "exclusiveMinimum"
                    | "exclusiveMaximum" | "multipleOf" => strings.push(v.clone()),
                    _ => {}
                }
                harvest(v, names, strings);
            }
        }
        Value::Array(items) => {
            for item in items {
                harvest(item, names, strings);
            }
        }
        _ => {}
    }
}

struct Pools {
    names: Vec<String>,
    values: Vec<Value>,
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

fn node_mut(v: &mut Value, mut n: usize) -> &mut Value {
    let mut at = v;
    loop {
        if n == 0 {
            return at;
        }
        n -= 1;
        let sizes: Vec<usize> = match &*at {
            Value::Array(a) => a.iter().map(count_nodes).collect(),
            Value::Object(o) => o.values().map(count_nodes).collect(),
            _ => return at,
        };
        let mut idx = 0;
        while idx < sizes.len() && n >= sizes[idx] {
            n -= sizes[idx];
            idx += 1;
        }
        if idx == sizes.len() {
            return at;
        }
        at = match at {
            Value::Array(a) => &mut a[idx],
            Value::Object(o) => o.values_mut().nth(idx).unwrap(),
            _ => unreachable!(),
        };
    }
}

fn numbers(k: u32) -> Value {
    match k % 12 {
        0 => json!(0),
        1 => json!(-1),
        2 => json!(1.5),
        3 => json!(9_007_199_254_740_993u64),
        4 => json!(1e300),
        5 => json!(f64::from(k % 200) - 100.0),
        6 => json!(i64::from(k % 1000) - 500),
        7 => json!(0.1 * f64::from(k % 50)),
        8 => json!(2.0),
        9 => json!(-9_007_199_254_740_991i64),
        10 => json!(u64::from(k)),
        _ => json!(-0.0001),
    }
}

fn mutate(instance: &mut Value, (sel, op, k): (u32, u8, u32), pools: &Pools, samples: &[Value]) {
    let total = count_nodes(instance);
    let node = node_mut(instance, sel as usize % total);
    let pick_name = |k: u32| -> String {
        if pools.names.is_empty() || k.is_multiple_of(4) {
            format!("k{}", k % 3)
        } else {
            pools.names[k as usize % pools.names.len()].clone()
        }
    };
    match op % 12 {
        0 => *node = Value::Null,
        1 => {
            let unit = if k.is_multiple_of(5) { "é" } else { "x" };
            *node = Value::String(unit.repeat((k % 70) as usize));
        }
        2 => *node = numbers(k),
        3 => *node = Value::Bool(k.is_multiple_of(2)),
        4 => {
            *node = if k.is_multiple_of(2) {
                json!([])
            } else {
                json!([node.clone()])
            }
        }
        5 => *node = json!({}),
        6 => match node {
            Value::Object(o) if !o.is_empty() => {
                let key = o.keys().nth(k as usize % o.len()).unwrap().clone();
                o.remove(&key);
            }
            Value::Array(a) if !a.is_empty() => {
                a.remove(k as usize % a.len());
            }
            _ => *node = Value::Null,
        },
        7 => {
            let value = if pools.values.is_empty() || k.is_multiple_of(3) {
                numbers(k)
            } else {
                pools.values[k as usize % pools.values.len()].clone()
            };
            match node {
                Value::Object(o) => {
                    o.insert(pick_name(k), value);
                }
                Value::Array(a) => a.push(value),
                _ => *node = value,
            }
        }
        8 => match node {
            Value::String(s) => {
                if k.is_multiple_of(2) {
                    s.truncate(s.len() / 2);
                } else {
                    s.push_str(&"y".repeat((k % 9) as usize));
                }
            }
            Value::Number(n) => {
                let f = n.as_f64().unwrap_or(0.0);
                *node = match k % 4 {
                    0 => json!(f + 1.0),
                    1 => json!(f - 1.0),
                    2 => json!(f * 10.0),
                    _ => json!(f / 3.0),
                };
            }
            Value::Array(a) if !a.is_empty() => {
                let dup = a[k as usize % a.len()].clone();
                a.push(dup);
            }
            Value::Object(o) => {
                let name = pick_name(k);
                o.insert(name, Value::String("z".into()));
            }
            _ => *node = Value::String(String::new()),
        },
        9 => {
            let donor = &samples[k as usize % samples.len()];
            let n = count_nodes(donor);
            let mut donor = donor.clone();
            *node = node_mut(&mut donor, (k as usize / 7) % n).clone();
        }
        10 => {
            if !pools.values.is_empty() {
                *node = pools.values[k as usize % pools.values.len()].clone();
            }
        }
        _ => {
            if let Value::Object(o) = node {
                // Replace every member's value by a pool value.
                let keys: Vec<String> = o.keys().cloned().collect();
                for (n, key) in keys.iter().enumerate() {
                    if !pools.values.is_empty() {
                        o[key] = pools.values[(k as usize + n) % pools.values.len()].clone();
                    }
                }
            } else {
                let mut m = Map::new();
                m.insert(pick_name(k), numbers(k));
                *node = Value::Object(m);
            }
        }
    }
}

/// Runs the differential test over one fixture; returns the disagreements.
fn run_fixture(f: &Fixture, cases: u32) -> Vec<String> {
    let Ok(generated) = &f.validator else {
        return Vec::new();
    };
    let (schema, samples) = schema_and_samples(f);
    let reference = reference_for(&schema).unwrap();
    let mut names = BTreeSet::new();
    let mut values = Vec::new();
    harvest(&schema, &mut names, &mut values);
    let pools = Pools {
        names: names.into_iter().collect(),
        values,
    };
    let mut problems = Vec::new();
    for sample in &samples {
        if let Err(e) = compare(generated, &reference, sample) {
            problems.push(format!("{}/{}/{}: sample: {e}", f.source, f.tool, f.schema));
        }
    }
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (
        0..samples.len(),
        prop::collection::vec((any::<u32>(), any::<u8>(), any::<u32>()), 1..4),
    );
    let result = runner.run(&strategy, |(s, mutations)| {
        let mut instance = samples[s].clone();
        for m in mutations {
            mutate(&mut instance, m, &pools, &samples);
        }
        compare(generated, &reference, &instance).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        problems.push(format!("{}/{}/{}: {e}", f.source, f.tool, f.schema));
    }
    problems
}

#[test]
fn generated_validators_agree_with_jsonschema_on_codegen_fixtures() {
    let fixtures: Vec<&Fixture> = FIXTURES
        .iter()
        .filter(|f| f.source.starts_with("codegen/"))
        .collect();
    assert_eq!(
        fixtures.len(),
        80,
        "orpc and zod: 19 + 19 tools with input and output; validation: 2 inputs, 1 output; root_id_refs: 1 input"
    );
    let rejected: Vec<String> = fixtures
        .iter()
        .filter_map(|f| f.validator.err().map(|r| format!("{}: {r:?}", f.tool)))
        .collect();
    assert!(rejected.is_empty(), "{rejected:#?}");
    let problems: Vec<String> = fixtures
        .iter()
        .flat_map(|f| run_fixture(f, CASES_CODEGEN))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Valid inputs of the examples' view capabilities (the mutations start
/// from these and from `{}`).
const VIEW_SAMPLES: [(&str, &str); 5] = [
    ("SelectRows", r#"{"deviceIds": ["dev-1", "dev-2"]}"#),
    ("SelectRows", r#"{"deviceIds": []}"#),
    ("FilterRows", r#"{"status": "active"}"#),
    ("FilterRows", r#"{}"#),
    ("ShowDetails", r#"{"deviceId": "dev-1"}"#),
];

/// The schema a view capability shows the agent and the validator
/// `view_inputs!` generates from it agree (docs/codegen.md, "`view_inputs!`").
#[test]
fn generated_validators_agree_with_jsonschema_on_the_view_capability_inputs() {
    let fixtures: Vec<&Fixture> = FIXTURES
        .iter()
        .filter(|f| f.source.starts_with("view/"))
        .collect();
    let names: Vec<String> = fixtures
        .iter()
        .map(|f| format!("{}#{}", f.source, f.tool))
        .collect();
    assert_eq!(
        names,
        [
            "view/examples/devices-api/view-inputs.json#FilterRows",
            "view/examples/devices-api/view-inputs.json#SelectRows",
            "view/examples/devices-api/view-inputs.json#ShowDetails",
            "view/examples/devices/view-inputs.json#FilterRows",
            "view/examples/devices/view-inputs.json#SelectRows",
        ]
    );
    let problems: Vec<String> = fixtures
        .iter()
        .flat_map(|f| {
            assert!(f.validator.is_ok(), "{}: {:?}", f.tool, f.validator.err());
            run_fixture(f, CASES_CODEGEN)
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The same for the types `view_inputs!` compiled in `devices-api` (what
/// the devices page registers): the schema the agent is shown is
/// `INPUT_SCHEMA_JSON`, the file's schema, and the validator that runs,
/// `VALIDATOR`, agrees with jsonschema on that schema.
#[test]
fn compiled_view_inputs_show_the_files_schema_and_validate_as_jsonschema_does() {
    use devices_api::view::{FilterRows, SelectRows, ShowDetails};
    use surface_runtime::ViewInput;

    fn check<I: ViewInput>(tool: &'static str) -> Vec<String> {
        let source = "view/examples/devices-api/view-inputs.json";
        let from_file = FIXTURES
            .iter()
            .find(|f| f.source == source && f.tool == tool)
            .unwrap_or_else(|| panic!("{tool} is not a fixture of {source}"));
        let shown: Value = serde_json::from_str(I::INPUT_SCHEMA_JSON).unwrap();
        assert_eq!(shown, schema_and_samples(from_file).0, "{tool}");
        let compiled = Fixture {
            source,
            tool,
            schema: "input",
            validator: Ok(I::VALIDATOR),
        };
        run_fixture(&compiled, CASES_CODEGEN)
    }
    let problems: Vec<String> = [
        check::<SelectRows>("SelectRows"),
        check::<FilterRows>("FilterRows"),
        check::<ShowDetails>("ShowDetails"),
    ]
    .concat();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn generated_validators_agree_with_jsonschema_on_public_corpus() {
    let fixtures: Vec<&Fixture> = FIXTURES
        .iter()
        .filter(|f| f.source.starts_with("corpus/"))
        .collect();
    // 902 schemas from the vendored corpus (2026-12): a corpus that lost
    // manifests, or a build that found none, fails here.
    assert!(
        fixtures.len() >= 900,
        "the public corpus gave {} schemas, expected at least 900 (tests/fixtures/corpus)",
        fixtures.len()
    );
    // Every corpus schema has a generated validator (the 11 OpenAI tools
    // that mix drafts through the draft-mix readings), compared below with
    // jsonschema in the reading's dialect.
    let mut draft_mix = 0;
    let mut rejected = Vec::new();
    for f in &fixtures {
        let (schema, _) = schema_and_samples(f);
        draft_mix += usize::from(reference(&schema).is_err());
        if let Err(reasons) = f.validator {
            rejected.push(format!("{}/{}/{}: {reasons:?}", f.source, f.tool, f.schema));
        }
    }
    eprintln!(
        "corpus: {} schemas, {} rejected by the generator, {draft_mix} compared in a draft-mix reading",
        fixtures.len(),
        rejected.len()
    );
    assert!(rejected.is_empty(), "{rejected:#?}");
    let problems: Vec<String> = fixtures
        .iter()
        .flat_map(|f| run_fixture(f, CASES_CORPUS))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Runs the regression `name` of `regressions.json`: the generated validator
/// agrees with jsonschema (in the draft-mix reading, see [`reference_for`])
/// on each instance, or both reject the schema (`"rejected"`), or the
/// generator does (`"rejected_by_the_generator"`).
fn regression(name: &str) {
    let all = read(REGRESSIONS_FILE).unwrap();
    let case = &all[name];
    let entry = REGRESSIONS.iter().find(|r| r.name == name).unwrap();
    let reference = reference_for(&case["schema"]);
    if case["rejected_by_the_generator"] == Value::Bool(true) {
        // A schema the generator refuses although jsonschema reads it (a
        // reading the generator does not guess at, docs/validation.md).
        assert!(entry.validator.is_err(), "the generator accepts {name}");
        return;
    }
    if case["rejected"] == Value::Bool(true) {
        assert!(entry.validator.is_err(), "the generator accepts {name}");
        assert!(reference.is_err(), "jsonschema accepts {name}");
        return;
    }
    let generated = entry.validator.unwrap();
    let reference = reference.unwrap();
    let instances = case["instances"].as_array().unwrap();
    assert!(!instances.is_empty());
    for instance in instances {
        compare(&generated, &reference, instance).unwrap();
    }
}

/// A `$ref` through the root `$id` is local: the generated validator
/// follows it as jsonschema does (the generated type does too:
/// surface-codegen's `a_ref_through_the_root_id_is_the_same_local_ref`).
#[test]
fn regression_ref_through_the_root_id_is_local() {
    regression("ref_through_the_root_id_is_local");
}

#[test]
fn regression_pattern_message_quotes_the_source_unescaped() {
    regression("pattern_message_quotes_the_source_unescaped");
}

#[test]
fn regression_lone_additional_properties_false_reports_false_schema_at_the_object() {
    regression("lone_additional_properties_false_reports_false_schema_at_the_object");
}

#[test]
fn regression_additional_properties_false_with_empty_properties_lists_the_keys() {
    regression("additional_properties_false_with_empty_properties_lists_the_keys");
}

#[test]
fn regression_additional_properties_false_with_pattern_properties_lists_the_keys() {
    regression("additional_properties_false_with_pattern_properties_lists_the_keys");
}

#[test]
fn regression_recursive_ref_is_an_unknown_keyword_in_2020_12() {
    regression("recursive_ref_is_an_unknown_keyword_in_2020_12");
}

/// OpenAI's `CompoundFilter` shape: 2019-09's recursion keywords in a
/// 2020-12 document, read as 2019-09 (the draft-mix reading).
#[test]
fn regression_recursive_anchor_true_in_2020_12_is_read_as_2019_09() {
    regression("recursive_anchor_true_in_2020_12_is_read_as_2019_09");
}

#[test]
fn regression_recursive_ref_in_2019_09_targets_the_root() {
    regression("recursive_ref_in_2019_09_targets_the_root");
}

#[test]
fn regression_recursive_ref_in_2019_09_without_a_root_anchor_targets_the_root() {
    regression("recursive_ref_in_2019_09_without_a_root_anchor_targets_the_root");
}

/// OpenAI's `FineTuneDPOHyperparameters.beta`: draft-04's boolean
/// `exclusiveMinimum` in a 2020-12 document.
#[test]
fn regression_boolean_exclusive_minimum_makes_minimum_exclusive() {
    regression("boolean_exclusive_minimum_makes_minimum_exclusive");
}

#[test]
fn regression_recursive_ref_to_another_subschema_is_rejected() {
    regression("recursive_ref_to_another_subschema_is_rejected");
}

#[test]
fn regression_draft_07_format_is_asserted_with_the_zod_checks() {
    regression("draft_07_format_is_asserted_with_the_zod_checks");
}

#[test]
fn every_regression_case_has_a_test() {
    let all = read(REGRESSIONS_FILE).unwrap();
    let source = include_str!("differential.rs");
    for name in all.as_object().unwrap().keys() {
        assert!(
            source.contains(&format!("fn regression_{name}()")),
            "regressions.json case {name} has no named test"
        );
    }
}
