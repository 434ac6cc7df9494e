//! Differential test of `surface_runtime::format` and
//! `surface_runtime::pattern` against the real zod 4 and JavaScript's
//! `RegExp` (docs/formats.md), on the hand-picked strings of
//! `tests/fixtures/formats/cases.json`.
//!
//! `tests/orpc-peer/scripts/format-verdicts.mjs` evaluates every case
//! string with every zod constructor of `tests/orpc-peer/src/formats.mjs`,
//! with every format's zod reference (the union rule of docs/formats.md)
//! and with `new RegExp(pattern, "u")` for every `pattern` the converters
//! emit (`tests/fixtures/formats/zod-formats.json`); this test evaluates
//! the same strings in Rust and requires zero disagreements. Without
//! Node.js it is skipped loudly, and fails when `CI=true`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;
use support::peer::{ensure_node_modules, node_available, peer_dir, repo_root};
use surface_runtime::format::{self, FORMATS};
use surface_runtime::pattern::Pattern;

/// `format` values the converters emit that stay annotations, and why.
const ANNOTATIONS: &[(&str, &str)] = &[
    (
        "starts_with",
        "the prefix lives only in the sibling pattern",
    ),
    ("ends_with", "the suffix lives only in the sibling pattern"),
    (
        "includes",
        "the substring lives only in the sibling pattern",
    ),
    ("even-length", "a user's z.stringFormat: unknown"),
];

/// (constructor, converter) pairs whose emitted string keywords accept
/// strictly more than the constructor (the converter drops what tells the
/// constructor apart from the others writing the same `format`): the
/// server refuses the difference, as before. Every other pair is exact.
const LOOSER: &[(&str, &str)] = &[
    // oRPC writes `format: uuid` with no pattern for every uuid flavour;
    // the check is z.guid()'s.
    ("z.uuid()", "orpc"),
    ("z.uuidv4()", "orpc"),
    ("z.uuidv6()", "orpc"),
    ("z.uuidv7()", "orpc"),
    ("z.uuid({ version: \"v1\" })", "orpc"),
    ("z.uuid({ version: \"v2\" })", "orpc"),
    ("z.uuid({ version: \"v3\" })", "orpc"),
    ("z.uuid({ version: \"v5\" })", "orpc"),
    ("z.uuid({ version: \"v8\" })", "orpc"),
    // protocol / hostname rules of z.httpUrl() and z.url({ protocol }).
    ("z.httpUrl()", "orpc"),
    ("z.httpUrl()", "zod"),
    ("z.url({ protocol: /^https$/ })", "orpc"),
    ("z.url({ protocol: /^https$/ })", "zod"),
    // oRPC writes `format: date-time` / `time` whatever the options.
    ("z.iso.datetime()", "orpc"),
    ("z.iso.datetime({ offset: true })", "orpc"),
    ("z.iso.datetime({ local: true })", "orpc"),
    ("z.iso.datetime({ offset: true, local: true })", "orpc"),
    ("z.iso.datetime({ precision: -1 })", "orpc"),
    ("z.iso.datetime({ precision: -1, offset: true })", "orpc"),
    ("z.iso.datetime({ precision: -1, local: true })", "orpc"),
    (
        "z.iso.datetime({ precision: -1, offset: true, local: true })",
        "orpc",
    ),
    ("z.iso.datetime({ precision: 0 })", "orpc"),
    ("z.iso.datetime({ precision: 3 })", "orpc"),
    ("z.iso.datetime({ precision: 3, offset: true })", "orpc"),
    ("z.iso.time({ precision: -1 })", "orpc"),
    ("z.iso.time({ precision: 0 })", "orpc"),
    ("z.iso.time({ precision: 3 })", "orpc"),
    // z.date() refuses every string (the wire carries no Date meta); oRPC
    // still writes `format: date-time` for it.
    ("z.date()", "orpc"),
    // z.jwt({ alg }) checks the header's alg; neither converter says so.
    ("z.jwt({ alg: \"HS256\" })", "orpc"),
    ("z.jwt({ alg: \"HS256\" })", "zod"),
    // oRPC's stand-in pattern for a JWT is only three [\w-]+ parts.
    ("z.jwt()", "orpc"),
    // `email` is z.email()'s default check, not the html5 pattern.
    ("z.email({ pattern: z.regexes.html5Email })", "orpc"),
    // Luhn / mod-97 checksums are not expressible as a pattern and oRPC
    // writes no format for them.
    ("z.creditCard()", "orpc"),
    ("z.iban()", "orpc"),
    // oRPC writes only `contentEncoding` (an annotation) for base64, and a
    // lax charset pattern for base64url.
    ("z.base64()", "orpc"),
    ("z.base64url()", "orpc"),
    // oRPC drops z.stringFormat's function; zod keeps only its name.
    (
        "z.stringFormat(\"even-length\", (v) => v.length % 2 === 0)",
        "orpc",
    ),
    (
        "z.stringFormat(\"even-length\", (v) => v.length % 2 === 0)",
        "zod",
    ),
];

/// (constructor, converter) pairs whose emitted keywords refuse strings the
/// constructor accepts, and why: none of them is caused by a `format`
/// check.
const STRICTER: &[(&str, &str, &str)] = &[
    (
        "z.ipv6()",
        "zod",
        "zod's converter writes a pattern without embedded IPv4 (::ffff:1.2.3.4); z.ipv6() checks with the URL parser",
    ),
    (
        "z.cidrv6()",
        "zod",
        "the same pattern quirk as z.ipv6()",
    ),
    (
        "z.cidrv6()",
        "orpc",
        "oRPC writes zod's cidrv6 pattern (no format), which has the same quirk",
    ),
    (
        "z.jwt()",
        "orpc",
        "oRPC's stand-in pattern ^[\\w-]+\\.[\\w-]+\\.[\\w-]+$ refuses padded or empty parts z.jwt() accepts",
    ),
    (
        "z.jwt({ alg: \"HS256\" })",
        "orpc",
        "the same stand-in pattern",
    ),
    (
        "z.email({ pattern: z.regexes.html5Email })",
        "orpc",
        "`email` is z.email()'s default check; a custom pattern that widens it is not in the schema",
    ),
    (
        "z.email({ pattern: z.regexes.html5Email })",
        "zod",
        "`email` is z.email()'s default check (docs/formats.md); the widening pattern cannot loosen it",
    ),
    (
        "z.coerce.date()",
        "orpc",
        "the server coerces with JavaScript's Date parser; locally only the date-time forms pass",
    ),
];

/// Node runs with `--jitless`: Node 20's optimized `URL.canParse` (the one
/// zod's `z.url()` calls) refuses URLs with Latin-1 characters such as
/// `http://bücher.example/` once it is hot, while `new URL()` and the
/// unoptimized path accept them. The reference is the specified behaviour.
fn node(args: &[&str]) -> std::process::Output {
    Command::new("node")
        .arg("--jitless")
        .args(args)
        .current_dir(peer_dir())
        .output()
        .unwrap_or_else(|e| panic!("run node {args:?}: {e}"))
}

fn node_ok(args: &[&str]) -> String {
    let out = node(args);
    assert!(
        out.status.success(),
        "node {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn bits(v: &Value) -> Vec<bool> {
    v.as_str()
        .expect("a verdict string")
        .bytes()
        .map(|b| b == b'1')
        .collect()
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// What the emitted string keywords accept, as a validator evaluates them:
/// `format` through `format::check` (annotations accept), `pattern` and
/// `allOf[*].pattern` through `pattern::Pattern`.
fn local_verdict(schema: &Value, value: &str, patterns: &BTreeMap<&str, Pattern>) -> bool {
    let format_ok = schema["format"]
        .as_str()
        .is_none_or(|f| format::check(f, value).unwrap_or(true));
    let mut sources: Vec<&str> = schema["pattern"].as_str().into_iter().collect();
    if let Some(all) = schema["allOf"].as_array() {
        sources.extend(all.iter().filter_map(|s| s["pattern"].as_str()));
    }
    format_ok
        && sources.iter().all(|src| {
            patterns[src]
                .matches(value)
                .expect("fixture patterns compile")
        })
}

#[test]
fn formats_and_patterns_agree_with_real_zod_and_regexp_on_every_case() {
    if !node_available("formats_and_patterns_agree_with_real_zod_and_regexp_on_every_case") {
        return;
    }
    ensure_node_modules();
    node_ok(&["scripts/formats.mjs", "--check"]);
    node_ok(&["scripts/format-verdicts.mjs", "--labels"]);
    let verdicts: Value =
        serde_json::from_str(&node_ok(&["scripts/format-verdicts.mjs"])).expect("verdicts JSON");
    let values: Vec<&str> = verdicts["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut disagreements = Vec::new();

    // 1. Every asserted format equals its zod reference on every string
    //    (each string is tried against every format, not only its own).
    let references = verdicts["formats"].as_object().unwrap();
    let ours: BTreeSet<&str> = FORMATS.iter().map(|f| f.name).collect();
    let theirs: BTreeSet<&str> = references.keys().map(String::as_str).collect();
    assert_eq!(
        ours, theirs,
        "FORMATS and the zod references name the same formats"
    );
    for (name, expected) in references {
        for (value, expected) in values.iter().zip(bits(expected)) {
            if format::check(name, value) != Some(expected) {
                disagreements.push(format!(
                    "format {name} {value:?}: zod {expected}, ours {}",
                    !expected
                ));
            }
        }
    }

    // 2. Every format the converters emit is asserted or a listed annotation.
    for emitted in verdicts["emitted"].as_array().unwrap() {
        let emitted = emitted.as_str().unwrap();
        let annotation = ANNOTATIONS.iter().any(|(n, _)| *n == emitted);
        assert!(
            ours.contains(emitted) != annotation,
            "emitted format {emitted:?} must be asserted or a documented annotation"
        );
        if annotation {
            assert_eq!(format::check(emitted, "x"), None, "{emitted}");
        }
    }

    // 3. Every emitted pattern matches exactly what JavaScript's RegExp (u
    //    flag, as Ajv) matches.
    let mut patterns = BTreeMap::new();
    for (source, expected) in verdicts["patterns"].as_object().unwrap() {
        let pattern = Pattern::new(leak(source));
        if let Some(error) = expected.get("error") {
            if pattern.matches("").is_ok() {
                disagreements.push(format!(
                    "pattern {source:?} compiles here but not in JavaScript: {error}"
                ));
            }
            continue;
        }
        for (value, expected) in values.iter().zip(bits(expected)) {
            match pattern.matches(value) {
                Ok(ours) if ours == expected => {}
                Ok(ours) => disagreements.push(format!(
                    "pattern {source:?} on {value:?}: RegExp {expected}, ours {ours}"
                )),
                Err(e) => {
                    disagreements.push(format!("{e}"));
                    break;
                }
            }
        }
        patterns.insert(source.as_str(), pattern);
    }

    // 4. Per constructor and converter: the emitted keywords never refuse
    //    what the constructor accepts (except the listed, non-format
    //    causes), and accept more only where listed.
    let schemas: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("tests/fixtures/formats/zod-formats.json"))
            .unwrap(),
    )
    .unwrap();
    let mut exact = 0;
    for (constructor, accepted) in verdicts["constructors"].as_object().unwrap() {
        let accepted = bits(accepted);
        for converter in ["orpc", "zod"] {
            let schema = &schemas[constructor.as_str()][converter];
            if schema.get("error").is_some() {
                continue;
            }
            let (mut looser, mut stricter) = (Vec::new(), Vec::new());
            for (value, zod) in values.iter().zip(&accepted) {
                match (local_verdict(schema, value, &patterns), zod) {
                    (true, false) => looser.push(*value),
                    (false, true) => stricter.push(*value),
                    _ => {}
                }
            }
            let listed_looser = LOOSER.contains(&(constructor.as_str(), converter));
            let listed_stricter = STRICTER
                .iter()
                .any(|(c, k, _)| *c == constructor.as_str() && *k == converter);
            if looser.is_empty() == listed_looser {
                disagreements.push(format!(
                    "{constructor} via {converter}: listed looser {listed_looser}, \
                     accepts {} strings zod refuses, e.g. {:?}",
                    looser.len(),
                    looser.first()
                ));
            }
            if stricter.is_empty() == listed_stricter {
                disagreements.push(format!(
                    "{constructor} via {converter}: listed stricter {listed_stricter}, \
                     refuses {} strings zod accepts, e.g. {:?}",
                    stricter.len(),
                    stricter.first()
                ));
            }
            if looser.is_empty() && stricter.is_empty() {
                exact += 1;
            }
        }
    }

    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("tests/fixtures/formats/cases.json")).unwrap(),
    )
    .unwrap();
    let per_format: Vec<String> = cases
        .as_object()
        .unwrap()
        .iter()
        .map(|(f, s)| {
            format!(
                "{f} {}+{}",
                s["valid"].as_array().unwrap().len(),
                s["invalid"].as_array().unwrap().len()
            )
        })
        .collect();
    println!(
        "{} distinct strings x {} formats, {} patterns, {} exact (constructor, converter) pairs\n\
         cases (valid+invalid): {}",
        values.len(),
        references.len(),
        patterns.len(),
        exact,
        per_format.join(", ")
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreements with zod / RegExp:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}
