//! Criterion benchmarks (issue 3 item 9).
//!
//! * `invoke_overhead/bare_validation` — `jsonschema` validation of the
//!   effective input alone (the baseline);
//!   `invoke_overhead/invoke_noop_executor` — a full `invoke` of a bound
//!   reference producing that same effective input, with a no-op executor.
//!   Target: invoke ≤ 3× the baseline.
//! * `snapshot/{10,100,1000}` — a snapshot of N live references (binding,
//!   `when`, `describe`). Target: 1,000 under 2 ms, growing linearly.
//!
//! The registry is recreated every `REGISTRY_CALLS` invocations outside the timed
//! region, because it remembers every invocation id for its lifetime.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Map, Value};
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentManifest, AgentProcedureExecutor, AgentProcedureRef,
    Authority, BoundField, BoundInput, ExecuteRequest, ExecutionError, ProcedureReference,
    SurfaceRegistry,
};

const MANIFEST: &str = r#"{"tools": {
  "devices.rename": {
    "description": "Rename a device",
    "inputSchema": {"type": "object",
      "properties": {"deviceId": {"type": "string", "minLength": 1}, "name": {"type": "string", "minLength": 1, "maxLength": 64},
                     "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["deviceId", "name"], "additionalProperties": false},
    "effect": "server-mutation"
  }
}}"#;

/// Calls per registry before a fresh one is made (outside the timed
/// region): a registry remembers every invocation id for its lifetime, and
/// a long browser session makes a few thousand calls.
const REGISTRY_CALLS: u64 = 5_000;
/// Invocations built (untimed) and then invoked (timed) at a time.
const BATCH: u64 = 32;

struct RenameBinding;

impl BoundInput for RenameBinding {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.rename";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "deviceId",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("deviceId".into(), Value::String("device-42".into()));
        Ok(m)
    }
}

struct Noop;

impl AgentProcedureExecutor for Noop {
    fn execute(
        &self,
        _request: ExecuteRequest,
    ) -> surface_runtime::sync::BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(std::future::ready(Ok(Value::Null)))
    }
}

fn authority() -> Authority {
    Authority::from_manifest(AgentManifest::from_json_str(MANIFEST).unwrap())
}

fn registry(authority: &Authority) -> (SurfaceRegistry, surface_runtime::RegistrationHandle) {
    let registry = SurfaceRegistry::builder(authority.clone())
        .secret([3; 32])
        .build();
    registry.set_procedure_executor(Arc::new(Noop));
    let r: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(authority, "devices.rename").unwrap();
    let h = registry
        .register_procedure(
            ProcedureReference::new(r)
                .bind(|| RenameBinding)
                .when(|| true),
        )
        .unwrap();
    (registry, h)
}

fn agent_input() -> Value {
    json!({"name": "Edge router", "tags": ["a", "b", "c"]})
}

fn bench_invoke(c: &mut Criterion) {
    let authority = authority();
    let schema = authority
        .manifest()
        .tool("devices.rename")
        .unwrap()
        .input_schema
        .clone();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let effective =
        json!({"deviceId": "device-42", "name": "Edge router", "tags": ["a", "b", "c"]});
    assert!(validator.is_valid(&effective));
    let consumer = AgentConsumer::embedded("bench");

    let mut group = c.benchmark_group("invoke_overhead");
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("bare_validation", |b| {
        b.iter(|| black_box(validator.is_valid(black_box(&effective))))
    });
    group.bench_function("invoke_noop_executor", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            let mut counter = 0u64;
            let (mut registry, mut handle) = self::registry(&authority);
            while done < iters {
                if counter >= REGISTRY_CALLS {
                    drop(handle);
                    (registry, handle) = self::registry(&authority);
                    counter = 0;
                }
                // A small batch, built untimed just before it runs, so its
                // inputs are as warm as a just-deserialized call's (and as
                // the baseline's input).
                let n = (iters - done).min(BATCH).min(REGISTRY_CALLS - counter);
                let invocations: Vec<AgentInvocation> = (counter..counter + n)
                    .map(|i| {
                        let mut inv =
                            AgentInvocation::new(format!("inv-{i}"), "domain:devices.rename");
                        inv.input = agent_input();
                        inv
                    })
                    .collect();
                let start = Instant::now();
                for inv in invocations {
                    let result =
                        futures_util::FutureExt::now_or_never(registry.invoke(inv, &consumer))
                            .expect("immediate");
                    debug_assert!(result.error().is_none());
                    black_box(result);
                }
                total += start.elapsed();
                done += n;
                counter += n;
            }
            drop(handle);
            total
        })
    });
    group.finish();
}

fn bench_snapshot(c: &mut Criterion) {
    let authority = authority();
    let consumer = AgentConsumer::embedded("bench");
    let mut group = c.benchmark_group("snapshot");
    for n in [10usize, 100, 1_000] {
        let registry = SurfaceRegistry::builder(authority.clone())
            .secret([3; 32])
            .build();
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let r: AgentProcedureRef<Value, Value> =
                    AgentProcedureRef::from_authority(&authority, "devices.rename").unwrap();
                registry
                    .register_procedure(
                        ProcedureReference::new(r)
                            .bind(|| RenameBinding)
                            .when(move || i % 7 != 0)
                            .unavailable_reason("Select a device first")
                            .describe(move || format!("Row {i}")),
                    )
                    .unwrap()
            })
            .collect();
        assert_eq!(registry.snapshot(&consumer).procedures.len(), n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| black_box(registry.snapshot(&consumer)))
        });
        drop(handles);
    }
    group.finish();
}

criterion_group!(benches, bench_invoke, bench_snapshot);
criterion_main!(benches);
