//! Criterion benchmarks of the registry.
//!
//! * `invoke_overhead/<case>/…` — per case, measured in the same run:
//!   - `bare_validation`: `jsonschema` validation of the effective input
//!     alone, borrowed and warm (the baseline);
//!   - `validation_and_input_drop`: the same validation plus dropping an
//!     owned copy of that input — the floor of any pipeline that takes the
//!     call's input by value and hands it on (someone must free it);
//!   - `generated_validation_and_input_drop`: the same floor with the
//!     generated validator the registry really runs — the honest floor of
//!     `invoke_noop_executor` (the jsonschema floor above is slower, so a
//!     ratio against it flatters the pipeline);
//!   - `bare_validation_formats_asserted`: the same with jsonschema's
//!     format assertion on (`should_validate_formats(true)`, jsonschema's
//!     own format checks) — the same work as the generated validator,
//!     which asserts `format` where jsonschema's default (draft 2020-12)
//!     leaves it an annotation;
//!   - `bare_validation_zod_formats`: the same with the runtime validator
//!     the registry compiles under feature `dynamic`
//!     (`format::validator_for`: jsonschema asserting zod's format checks,
//!     the ones the generated validator calls);
//!   - `generated_validation`: the validator `manifest!` generated from the
//!     same schema, on the same input;
//!   - `invoke_noop_executor`: a full `invoke` of a binding that
//!     produces that same effective input, with a no-op executor (the
//!     registry validates with the generated validator). Every timed
//!     call's result is checked (counted in the loop, asserted after the
//!     timing), so a pipeline that fails is never timed as fast.
//!
//!   Cases: `plain` (a small schema with no `pattern`: validation is as
//!   cheap as it gets) and `zod_formats` (the real zod 4 output for
//!   `z.uuid()`, `z.iso.datetime()` and `z.email()` fields, from
//!   `tests/fixtures/codegen/zod.manifest.json`; the uuid is bound from the
//!   UI and locked, the rest comes from the agent).
//! * `snapshot/{10,100,1000}` — a snapshot of N live bindings (bound fields,
//!   `when`, `describe`). Target: 1,000 under 2 ms, growing linearly.
//!
//! The registry is recreated every `REGISTRY_CALLS` invocations outside the
//! timed region, because it remembers every invocation id for its lifetime.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use serde_json::{json, Map, Value};
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentProcedureBinding, AgentProcedureExecutor,
    AgentProcedureRef, Authority, BoundField, BoundInput, ExecuteRequest, ExecutionError,
    SurfaceRegistry,
};

/// The benchmark manifests, compiled by `manifest!`: the registry validates
/// with the generated validators.
mod plain_api {
    surface_macros::manifest!("benches/plain.manifest.json", crate = ::surface_runtime);
}

/// `constructs.formats` exactly as zod emitted it
/// (`tests/fixtures/codegen/zod.manifest.json`), with its effect set to
/// `server-mutation` so no local confirmation is involved (the fixture
/// marks it `external-side-effect`).
mod zod_api {
    surface_macros::manifest!(
        "benches/zod_formats.manifest.json",
        crate = ::surface_runtime
    );
}

/// Calls per registry before a fresh one is made (outside the timed
/// region): a registry remembers every invocation id for its lifetime, and
/// a long browser session makes a few thousand calls.
const REGISTRY_CALLS: u64 = 5_000;
/// Invocations built (untimed) and then invoked (timed) at a time.
const BATCH: u64 = 32;

/// `devices.rename`: `deviceId` bound from the selected row, locked.
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

/// `constructs.formats`: the open record's uuid `id`, locked.
struct FormatsBinding;

impl BoundInput for FormatsBinding {
    type Input = Value;
    const PROCEDURE: &'static str = "constructs.formats";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "id",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert(
            "id".into(),
            Value::String("6f1c2a9e-4b7d-4c1a-9e3f-2d8b7a6c5e4f".into()),
        );
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

fn zod_formats_authority() -> Authority {
    zod_api::authority()
}

fn authority() -> Authority {
    plain_api::authority()
}

/// One benchmark case: a procedure, its binding, and the agent's part.
struct Case {
    name: &'static str,
    authority: Authority,
    path: &'static str,
    register: fn(&SurfaceRegistry, AgentProcedureRef<Value, Value>) -> RegistrationHandle,
    agent_input: fn() -> Value,
    effective: Value,
}

use surface_runtime::RegistrationHandle;

fn registry(case: &Case) -> (SurfaceRegistry, RegistrationHandle) {
    let registry = SurfaceRegistry::builder(case.authority.clone())
        .secret([3; 32])
        .build();
    registry.set_procedure_executor(Arc::new(Noop));
    let r: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(&case.authority, case.path).unwrap();
    let h = (case.register)(&registry, r);
    (registry, h)
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "plain",
            authority: authority(),
            path: "devices.rename",
            register: |registry, r| {
                registry
                    .register_procedure(
                        AgentProcedureBinding::new(r)
                            .bind(|| RenameBinding)
                            .when(|| true),
                    )
                    .unwrap()
            },
            agent_input: || json!({"name": "Edge router", "tags": ["a", "b", "c"]}),
            effective: json!({"deviceId": "device-42", "name": "Edge router", "tags": ["a", "b", "c"]}),
        },
        Case {
            name: "zod_formats",
            authority: zod_formats_authority(),
            path: "constructs.formats",
            register: |registry, r| {
                registry
                    .register_procedure(
                        AgentProcedureBinding::new(r)
                            .bind(|| FormatsBinding)
                            .when(|| true),
                    )
                    .unwrap()
            },
            agent_input: || json!({"at": "2026-11-29T21:43:01Z", "email": "ops@example.com", "replyTo": "noc.team@example.org"}),
            effective: json!({"id": "6f1c2a9e-4b7d-4c1a-9e3f-2d8b7a6c5e4f", "at": "2026-11-29T21:43:01Z", "email": "ops@example.com", "replyTo": "noc.team@example.org"}),
        },
    ]
}

fn bench_invoke(c: &mut Criterion) {
    let consumer = AgentConsumer::embedded("bench");
    for case in cases() {
        let schema = case
            .authority
            .manifest()
            .tool(case.path)
            .unwrap()
            .input_schema
            .clone();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let asserting = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap();
        let zod = surface_runtime::format::validator_for(&schema).unwrap();
        let generated = case
            .authority
            .input_validator(case.path)
            .expect("manifest! generated the validator");
        let effective = case.effective.clone();
        assert!(validator.is_valid(&effective));
        assert!(asserting.is_valid(&effective));
        assert!(zod.is_valid(&effective));
        assert!(generated.is_valid(&effective));
        // The pipeline really produces `effective`: check once, untimed.
        {
            let (registry, _h) = registry(&case);
            let mut inv = AgentInvocation::new("check", format!("domain:{}", case.path));
            inv.input = (case.agent_input)();
            let result =
                futures_util::FutureExt::now_or_never(registry.invoke(inv, &consumer)).unwrap();
            assert!(result.error().is_none(), "{result:?}");
        }

        let mut group = c.benchmark_group(format!("invoke_overhead/{}", case.name));
        group.measurement_time(Duration::from_secs(4));
        group.bench_function("bare_validation", |b| {
            b.iter(|| black_box(validator.is_valid(black_box(&effective))))
        });
        group.bench_function("bare_validation_formats_asserted", |b| {
            b.iter(|| black_box(asserting.is_valid(black_box(&effective))))
        });
        group.bench_function("bare_validation_zod_formats", |b| {
            b.iter(|| black_box(zod.is_valid(black_box(&effective))))
        });
        group.bench_function("generated_validation", |b| {
            b.iter(|| black_box(generated.is_valid(black_box(&effective))))
        });
        group.bench_function("validation_and_input_drop", |b| {
            b.iter_batched(
                || effective.clone(),
                |input| {
                    let valid = validator.is_valid(&input);
                    drop(input);
                    black_box(valid)
                },
                BatchSize::SmallInput,
            )
        });
        group.bench_function("generated_validation_and_input_drop", |b| {
            b.iter_batched(
                || effective.clone(),
                |input| {
                    let valid = generated.is_valid(&input);
                    drop(input);
                    black_box(valid)
                },
                BatchSize::SmallInput,
            )
        });
        group.bench_function("invoke_noop_executor", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0u64;
                let mut counter = 0u64;
                // Counted in the timed loop (one branch per call) and
                // asserted after it: a pipeline that started refusing the
                // call would otherwise be timed as a fast one.
                let mut failures = 0u64;
                let (mut registry, mut handle) = self::registry(&case);
                while done < iters {
                    if counter >= REGISTRY_CALLS {
                        drop(handle);
                        (registry, handle) = self::registry(&case);
                        counter = 0;
                    }
                    // A small batch, built untimed just before it runs, so
                    // its inputs are as warm as a just-deserialized call's
                    // (and as the baseline's input).
                    let n = (iters - done).min(BATCH).min(REGISTRY_CALLS - counter);
                    let capability = format!("domain:{}", case.path);
                    let invocations: Vec<AgentInvocation> = (counter..counter + n)
                        .map(|i| {
                            let mut inv = AgentInvocation::new(format!("inv-{i}"), &*capability);
                            inv.input = (case.agent_input)();
                            inv
                        })
                        .collect();
                    let start = Instant::now();
                    for inv in invocations {
                        let result =
                            futures_util::FutureExt::now_or_never(registry.invoke(inv, &consumer))
                                .expect("immediate");
                        failures += u64::from(result.error().is_some());
                        black_box(result);
                    }
                    total += start.elapsed();
                    done += n;
                    counter += n;
                }
                drop(handle);
                assert_eq!(
                    failures, 0,
                    "{failures} of {iters} timed invocations failed"
                );
                total
            })
        });
        group.finish();
    }
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
                        AgentProcedureBinding::new(r)
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
