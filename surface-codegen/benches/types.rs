//! Cost of `generate_procedure_types` for every procedure of the real zod
//! and oRPC fixture manifests, against a baseline measured in the same run:
//! parsing the same manifests' JSON text (work `manifest!` does anyway).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use quote::quote;
use serde_json::Value;
use surface_codegen::types::{generate_procedure_types, TypeOptions};

fn manifests() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/codegen");
    ["orpc.manifest.json", "zod.manifest.json"]
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).expect("fixture manifest"))
        .collect()
}

fn bench(c: &mut Criterion) {
    let texts = manifests();
    let parsed: Vec<Value> = texts
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    let options = TypeOptions {
        crate_path: quote!(::agent_surface),
        typed_formats: Default::default(),
    };
    let mut group = c.benchmark_group("types_fixture_manifests");
    group.bench_function("baseline_parse_manifest_json", |b| {
        b.iter(|| {
            for text in &texts {
                black_box(serde_json::from_str::<Value>(black_box(text)).unwrap());
            }
        })
    });
    group.bench_function("generate_procedure_types_all", |b| {
        b.iter(|| {
            for manifest in &parsed {
                for tool in manifest["tools"].as_object().unwrap().values() {
                    black_box(generate_procedure_types(
                        black_box(&tool["inputSchema"]),
                        tool.get("outputSchema"),
                        &options,
                    ));
                }
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
