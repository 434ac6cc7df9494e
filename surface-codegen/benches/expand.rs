//! Criterion bench of the plain `manifest!` expansion function
//! (`expand_manifest_text`) for synthetic manifests of 10, 100 and 500
//! procedures, each with a realistic zod-like object input (target: 500
//! procedures expand in well under a second).
//!
//! Baseline in the same run: `AgentManifest::from_json_str` (parse and
//! validate only) of the same text; report expansion as a ratio of it.
//! `types_only` runs just the JSON Schema → Rust converter over the same
//! procedures, to show its share of the expansion.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use proc_macro2::Span;
use quote::quote;
use serde_json::json;
use surface_codegen::manifest_macro::{expand_manifest_text, ExpandOptions};
use surface_codegen::types::{generate_procedure_types, TypeOptions};
use surface_manifest::AgentManifest;

/// A manifest of `n` procedures spread over `n / 10 + 1` router namespaces.
fn synthetic_manifest(n: usize) -> String {
    let mut tools = serde_json::Map::new();
    for i in 0..n {
        let input = json!({
            "type": "object",
            "properties": {
                "deviceIds": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                "reason": {"type": "string", "maxLength": 200, "description": "Why"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "status": {"type": "string", "enum": ["active", "disabled", "retired"]},
                "dryRun": {"type": "boolean", "default": false},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "filter": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "createdAfter": {"type": "string", "format": "date-time"}
                    },
                    "required": ["name"],
                    "additionalProperties": false
                }
            },
            "required": ["deviceIds", "note"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        });
        let output = json!({
            "type": "object",
            "properties": {"changed": {"type": "array", "items": {"type": "string"}}},
            "required": ["changed"]
        });
        let effect = [
            "server-query",
            "server-mutation",
            "destructive",
            "external-side-effect",
        ][i % 4];
        tools.insert(
            format!("ns{}.procedure{i}", i / 10),
            json!({"description": format!("Procedure {i}"), "inputSchema": input, "outputSchema": output, "effect": effect}),
        );
    }
    serde_json::to_string_pretty(&json!({ "tools": tools })).unwrap()
}

fn bench_expand(c: &mut Criterion) {
    let options = ExpandOptions {
        crate_path: quote!(::agent_surface),
        include_path: "/bench/agent.manifest.json".into(),
        display_path: "agent.manifest.json".into(),
        invocation_site: String::new(),
        validation: surface_codegen::manifest_macro::ValidationMode::Generated,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
    };
    let mut group = c.benchmark_group("manifest_expand");
    group.sample_size(10);
    for n in [10usize, 100, 500] {
        let text = synthetic_manifest(n);
        group.bench_with_input(
            BenchmarkId::new("parse_validate_baseline", n),
            &text,
            |b, text| b.iter(|| AgentManifest::from_json_str(text).unwrap()),
        );
        let manifest = AgentManifest::from_json_str(&text).unwrap();
        let type_options = TypeOptions::default();
        group.bench_with_input(
            BenchmarkId::new("types_only", n),
            &manifest,
            |b, manifest| {
                b.iter(|| {
                    for tool in manifest.tools.values() {
                        generate_procedure_types(
                            &tool.input_schema,
                            tool.output_schema.as_ref(),
                            &type_options,
                        );
                    }
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("expand", n), &text, |b, text| {
            b.iter(|| expand_manifest_text(text, &options, Span::call_site()).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_expand);
criterion_main!(benches);
