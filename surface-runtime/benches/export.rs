//! Tool export of the public corpus (`tests/fixtures/corpus/all.manifest.json`,
//! the tools the registry registers): `ToolCatalog::new` over the snapshot
//! (schema normalization, strict-mode transform and check of every tool),
//! then the MCP and OpenAI strict tool lists. Run with
//! `cargo bench -p surface-runtime --features dynamic --bench export`.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use std::hint::black_box;
use surface_runtime::export::{OpenAiMode, ToolCatalog};
use surface_runtime::{
    AgentConsumer, AgentManifest, AgentProcedureBinding, AgentProcedureRef, Authority,
    SurfaceRegistry,
};

fn bench_export(c: &mut Criterion) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/corpus/all.manifest.json"
    );
    let manifest = AgentManifest::from_json_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let paths: Vec<String> = manifest.tools.keys().cloned().collect();
    let authority = Authority::from_manifest(manifest);
    let registry = SurfaceRegistry::new(authority.clone());
    let handles: Vec<_> = paths
        .iter()
        .filter_map(|p| {
            let r: AgentProcedureRef<Value, Value> =
                AgentProcedureRef::from_authority(&authority, p).unwrap();
            registry
                .register_procedure(AgentProcedureBinding::new(r))
                .ok()
        })
        .collect();
    let snapshot = registry.snapshot(&AgentConsumer::embedded("bench"));
    let mut group = c.benchmark_group("export/corpus");
    group.sample_size(20);
    group.bench_function(format!("catalog ({} tools)", handles.len()), |b| {
        b.iter(|| black_box(ToolCatalog::new(&snapshot).unwrap()))
    });
    let catalog = ToolCatalog::new(&snapshot).unwrap();
    group.bench_function("mcp_tools", |b| b.iter(|| black_box(catalog.mcp_tools())));
    group.bench_function("openai_responses_tools strict", |b| {
        b.iter(|| black_box(catalog.openai_responses_tools(OpenAiMode::Strict)))
    });
    group.finish();
}

criterion_group!(benches, bench_export);
criterion_main!(benches);
