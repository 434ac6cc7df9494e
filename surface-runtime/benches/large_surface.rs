//! A surface of 1,000 capabilities (docs/performance.md, "Large
//! surfaces"): 1,000 procedure bindings over a generated manifest (100
//! areas × 10 actions, three-property input schemas). Measures the
//! snapshot with and without a budget, the MCP export in direct and meta
//! mode, and a `surface_discover` call; prints the exported bytes of each
//! mode first. Run with
//! `cargo bench -p surface-runtime --features dynamic --bench large_surface`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Map, Value};
use surface_runtime::export::{ExportOptions, ResolvedCall, ToolCall, ToolCatalog, ToolMode};
use surface_runtime::{
    AgentConsumer, AgentManifest, AgentProcedureBinding, AgentProcedureRef, Authority,
    SnapshotOptions, SurfaceRegistry,
};

const AREAS: usize = 100;
const ACTIONS: [&str; 10] = [
    "list", "get", "create", "update", "archive", "restore", "assign", "export", "tag", "comment",
];

fn manifest() -> AgentManifest {
    let mut tools = Map::new();
    for area in 0..AREAS {
        for (n, action) in ACTIONS.iter().enumerate() {
            let effect = if n < 2 {
                "server-query"
            } else {
                "server-mutation"
            };
            tools.insert(
                format!("area{area}.{action}"),
                json!({
                    "description": format!("{action} the records of area {area} (tickets, assets and their history)"),
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "ids": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 100},
                            "note": {"type": "string", "maxLength": 500},
                            "limit": {"type": "integer", "minimum": 1, "maximum": 1000}
                        },
                        "additionalProperties": false
                    },
                    "effect": effect
                }),
            );
        }
    }
    AgentManifest::from_json_str(&json!({ "tools": tools }).to_string()).unwrap()
}

fn bench_large_surface(c: &mut Criterion) {
    let manifest = manifest();
    let paths: Vec<String> = manifest.tools.keys().cloned().collect();
    let authority = Authority::from_manifest(manifest);
    let registry = SurfaceRegistry::new(authority.clone());
    let _handles: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let r: AgentProcedureRef<Value, Value> =
                AgentProcedureRef::from_authority(&authority, p).unwrap();
            // Every tenth area is the current view's: higher priority.
            let priority = i32::from(i % (10 * ACTIONS.len()) < ACTIONS.len());
            registry
                .register_procedure(AgentProcedureBinding::new(r).priority(priority))
                .unwrap()
        })
        .collect();
    let consumer = AgentConsumer::embedded("bench");
    let snapshot = registry.snapshot(&consumer);
    assert_eq!(snapshot.procedures.len(), AREAS * ACTIONS.len());
    let meta = ExportOptions {
        mode: ToolMode::Meta,
        ..ExportOptions::default()
    };
    let direct_catalog = ToolCatalog::new(&snapshot).unwrap();
    let meta_catalog = ToolCatalog::with_options(&snapshot, &meta).unwrap();
    let discover = || {
        meta_catalog
            .resolve_call(ToolCall::new(
                "surface_discover",
                "d",
                Some(json!({"query": "archive area4"})),
            ))
            .unwrap()
    };
    let bytes = |v: &dyn erased::Size| v.size();
    let answer = match discover() {
        ResolvedCall::Discovered(answer) => answer,
        ResolvedCall::Tool(_) => unreachable!("surface_discover is answered"),
    };
    let found = answer.structured_content.clone().unwrap_or_default();
    eprintln!(
        "large_surface: {} capabilities; tools/list bytes: direct {}, meta {}; one surface_discover answer (\"archive area4\": {} matched, {} listed) {} bytes",
        snapshot.procedures.len(),
        bytes(&direct_catalog.mcp_tools()),
        bytes(&meta_catalog.mcp_tools()),
        found["matched"],
        found["tools"].as_array().map_or(0, Vec::len),
        bytes(&answer),
    );

    let mut group = c.benchmark_group("large_surface");
    group.sample_size(20);
    group.bench_function("snapshot (1,000)", |b| {
        b.iter(|| black_box(registry.snapshot(&consumer)))
    });
    let budget = SnapshotOptions {
        budget: Some(50),
        ..SnapshotOptions::default()
    };
    group.bench_function("snapshot, budget 50", |b| {
        b.iter(|| black_box(registry.snapshot_with(&consumer, &budget)))
    });
    group.bench_function("catalog + tools/list, direct", |b| {
        b.iter(|| black_box(ToolCatalog::new(&snapshot).unwrap().mcp_tools()))
    });
    group.bench_function("catalog + tools/list, meta", |b| {
        b.iter(|| {
            black_box(
                ToolCatalog::with_options(&snapshot, &meta)
                    .unwrap()
                    .mcp_tools(),
            )
        })
    });
    group.bench_function("surface_discover", |b| b.iter(|| black_box(discover())));
    group.finish();
}

/// The serialized size of what an export sends.
mod erased {
    pub trait Size {
        fn size(&self) -> usize;
    }
    impl<T: serde::Serialize> Size for T {
        fn size(&self) -> usize {
            serde_json::to_vec(self).map_or(0, |v| v.len())
        }
    }
}

criterion_group!(benches, bench_large_surface);
criterion_main!(benches);
