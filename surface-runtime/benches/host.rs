//! Browser-session throughput and memory (`docs/host.md`), against the registry
//! itself as the baseline measured in the same run.
//!
//! * `host/invoke/*` — calls per second through `registry.invoke`
//!   (baseline), `session.invoke`, `session.invoke_json` (parse included)
//!   and a replay answered from the frozen result, all with a no-op
//!   executor. Each batch of 1,000 calls runs on a fresh registry and
//!   session (setup untimed) so the session never hits `max_entries`.
//! * memory at `max_entries` — printed once: live heap bytes held by a
//!   session whose 1,000 call slots are full, measured with a counting
//!   global allocator, next to the registry's own growth for the same
//!   calls and the serialized size of the retained envelopes.
//!
//! Run: `cargo bench -p surface-runtime --bench host`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures_util::FutureExt;
use serde_json::{json, Value};
use surface_runtime::host::{
    BrowserSurfaceCall, BrowserSurfaceIdentity, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, DEFAULT_MAX_ENTRIES,
};
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentManifest, AgentProcedureBinding, AgentProcedureExecutor,
    AgentProcedureRef, Authority, ExecuteRequest, ExecutionError, RegistrationHandle,
    SurfaceRegistry,
};

// A counting wrapper around the system allocator, used only to report the
// bytes a full session holds. `unsafe impl GlobalAlloc` is the only way to
// observe heap use from inside a Rust program; it lives in this bench file
// alone (the library keeps `#![forbid(unsafe_code)]`) and only forwards to
// `System` while adding the size to a counter.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees hold; the counter has no effect on
// the returned memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const MANIFEST: &str = include_str!("../../tests/fixtures/devices.manifest.json");
const BATCH: u64 = 1_000;

struct Noop;

impl AgentProcedureExecutor for Noop {
    fn execute(&self, _request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(std::future::ready(Ok(Value::Null)))
    }
}

struct Setup {
    registry: SurfaceRegistry,
    session: BrowserSurfaceSession,
    registration_id: String,
    version: u64,
    _handle: RegistrationHandle,
}

fn setup(max_entries: usize) -> Setup {
    let authority =
        Authority::from_manifest(AgentManifest::from_json_str(MANIFEST).expect("fixture"));
    let registry = SurfaceRegistry::new(authority.clone());
    registry.set_procedure_executor(Arc::new(Noop));
    let list: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(&authority, "devices.list").expect("list");
    let handle = registry
        .register_procedure(AgentProcedureBinding::new(list))
        .expect("registers");
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(registry.clone(), identity(), consumer())
            .max_entries(max_entries),
    );
    session.connect("conn-1").expect("connects");
    Setup {
        registration_id: handle.registration_id().to_string(),
        version: registry.surface_version(),
        registry,
        session,
        _handle: handle,
    }
}

fn identity() -> BrowserSurfaceIdentity {
    BrowserSurfaceIdentity::new("console", "build-1", "sess-1", "tab-1")
}

fn consumer() -> AgentConsumer {
    AgentConsumer::embedded("u1")
}

fn invocation(s: &Setup, i: u64) -> AgentInvocation {
    let mut inv = AgentInvocation::new(format!("inv-{i}"), "domain:devices.list");
    inv.registration_id = Some(s.registration_id.clone());
    inv.surface_version = Some(s.version);
    inv.input = json!({"status": "active", "limit": 10});
    inv
}

fn call(s: &Setup, i: u64) -> BrowserSurfaceCall {
    BrowserSurfaceCall::new(
        identity(),
        "conn-1",
        "run-1",
        format!("tc-{i}"),
        invocation(s, i),
    )
}

/// Times `iters` calls of `op`, in batches of [`BATCH`] on fresh setups.
fn batched(iters: u64, mut op: impl FnMut(&Setup, u64)) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = BATCH.min(iters - done);
        let s = setup(DEFAULT_MAX_ENTRIES);
        let start = Instant::now();
        for i in 0..n {
            op(&s, i);
        }
        total += start.elapsed();
        done += n;
    }
    total
}

fn invoke(c: &mut Criterion) {
    let mut group = c.benchmark_group("host/invoke");
    group.throughput(Throughput::Elements(1));
    group.bench_function("registry.invoke (baseline)", |b| {
        b.iter_custom(|iters| {
            batched(iters, |s, i| {
                let r = s
                    .registry
                    .invoke(invocation(s, i), &consumer())
                    .now_or_never()
                    .expect("no-op executor completes in one poll");
                assert!(r.error().is_none());
            })
        })
    });
    group.bench_function("session.invoke", |b| {
        b.iter_custom(|iters| {
            batched(iters, |s, i| {
                let r = s
                    .session
                    .invoke(call(s, i))
                    .now_or_never()
                    .expect("completes in one poll");
                assert!(r.rejection().is_none());
            })
        })
    });
    group.bench_function("session.invoke_json", |b| {
        b.iter_custom(|iters| {
            batched(iters, |s, i| {
                let text = serde_json::to_string(&call(s, i)).expect("serializes");
                let r = s
                    .session
                    .invoke_json(&text)
                    .now_or_never()
                    .expect("completes in one poll");
                assert!(r.rejection().is_none());
            })
        })
    });
    group.bench_function("session.invoke replay (frozen result)", |b| {
        let s = setup(DEFAULT_MAX_ENTRIES);
        let c = call(&s, 0);
        s.session.invoke(c.clone()).now_or_never().expect("first");
        b.iter(|| {
            let r = s.session.invoke(c.clone()).now_or_never().expect("replay");
            assert!(r.rejection().is_none());
        })
    });
    group.finish();
}

/// Live heap bytes added by filling a session's 1,000 call slots, versus
/// the registry's own growth for the same calls.
fn memory(c: &mut Criterion) {
    let _ = c;
    let n = DEFAULT_MAX_ENTRIES as u64;

    let s = setup(DEFAULT_MAX_ENTRIES);
    let calls: Vec<_> = (0..n).map(|i| call(&s, i)).collect();
    let serialized: usize = calls
        .iter()
        .map(|c| serde_json::to_string(c).map(|t| t.len()).unwrap_or(0))
        .sum();
    let before = LIVE_BYTES.load(Ordering::SeqCst);
    for c in &calls {
        s.session
            .invoke(c.clone())
            .now_or_never()
            .expect("completes");
    }
    let session_path = LIVE_BYTES.load(Ordering::SeqCst) - before;
    assert_eq!(s.session.usage().calls, DEFAULT_MAX_ENTRIES);

    let r = setup(DEFAULT_MAX_ENTRIES);
    let invocations: Vec<_> = (0..n).map(|i| invocation(&r, i)).collect();
    let before = LIVE_BYTES.load(Ordering::SeqCst);
    for inv in &invocations {
        r.registry
            .invoke(inv.clone(), &consumer())
            .now_or_never()
            .expect("completes");
    }
    let registry_path = LIVE_BYTES.load(Ordering::SeqCst) - before;

    println!(
        "host/memory at max_entries = {n}: session path holds {session_path} B \
         ({:.0} B/call), registry alone {registry_path} B ({:.0} B/call); \
         session overhead {} B ({:.0} B/call); retained envelopes serialize to {serialized} B \
         ({:.0} B/call)",
        session_path as f64 / n as f64,
        registry_path as f64 / n as f64,
        session_path - registry_path,
        (session_path - registry_path) as f64 / n as f64,
        serialized as f64 / n as f64,
    );
}

criterion_group!(benches, invoke, memory);
criterion_main!(benches);
