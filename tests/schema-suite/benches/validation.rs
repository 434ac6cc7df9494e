//! Generated validators against `jsonschema` on the two schemas of
//! surface-runtime's `invoke_overhead` bench (same inputs):
//! `validation/<case>/{jsonschema,generated}_is_valid` on the valid
//! effective input, and `validation/<case>/{jsonschema,generated}_errors`
//! collecting every error of an invalid one (`is_valid` then the error
//! pass, as the pipeline does).
//!
//! `cargo bench -p schema-suite --bench validation`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use schema_suite::{FIXTURES, PLAIN, PLAIN_SCHEMA};
use serde_json::{json, Value};
use surface_runtime::validation::Validator;

fn zod_formats() -> (Value, Validator) {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}/zod.manifest.json", schema_suite::CODEGEN_DIR))
            .unwrap(),
    )
    .unwrap();
    let schema = manifest["tools"]["constructs.formats"]["inputSchema"].clone();
    let fixture = FIXTURES
        .iter()
        .find(|f| {
            f.source == "codegen/zod.manifest.json"
                && f.tool == "constructs.formats"
                && f.schema == "input"
        })
        .unwrap();
    (schema, fixture.validator.unwrap())
}

fn bench(c: &mut Criterion) {
    let (zod_schema, zod) = zod_formats();
    let cases = [
        (
            "plain",
            serde_json::from_str::<Value>(PLAIN_SCHEMA).unwrap(),
            PLAIN,
            json!({"deviceId": "device-42", "name": "Edge router", "tags": ["a", "b", "c"]}),
            json!({"deviceId": "", "name": "", "tags": ["a", 1], "extra": true}),
        ),
        (
            "zod_formats",
            zod_schema,
            zod,
            json!({"id": "6f1c2a9e-4b7d-4c1a-9e3f-2d8b7a6c5e4f", "at": "2026-11-29T21:43:01Z", "email": "ops@example.com", "replyTo": "noc.team@example.org"}),
            json!({"id": "6f1c2a9e", "at": "2026-11-29", "email": "ops@", "replyTo": 3}),
        ),
    ];
    for (name, schema, generated, valid, invalid) in cases {
        let reference = jsonschema::validator_for(&schema).unwrap();
        assert!(reference.is_valid(&valid) && generated.is_valid(&valid));
        assert_eq!(
            reference.iter_errors(&invalid).count(),
            generated.errors(&invalid).len()
        );
        let mut group = c.benchmark_group(format!("validation/{name}"));
        group.measurement_time(Duration::from_secs(4));
        group.bench_function("jsonschema_is_valid", |b| {
            b.iter(|| black_box(reference.is_valid(black_box(&valid))))
        });
        group.bench_function("generated_is_valid", |b| {
            b.iter(|| black_box(generated.is_valid(black_box(&valid))))
        });
        group.bench_function("jsonschema_errors", |b| {
            b.iter(|| {
                let i = black_box(&invalid);
                if reference.is_valid(i) {
                    return Vec::new();
                }
                reference
                    .iter_errors(i)
                    .map(|e| {
                        (
                            e.instance_path().as_str().to_string(),
                            e.masked().to_string(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        });
        group.bench_function("generated_errors", |b| {
            b.iter(|| black_box(generated.errors(black_box(&invalid))))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
