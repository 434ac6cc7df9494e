//! Memory held at the bounds: what an agent's traffic
//! can make the runtime keep is bounded by the documented limits, never by
//! the traffic itself. Measured with a counting global allocator, as live
//! heap bytes before and after; the tests of this binary measure one at a
//! time.

mod common;
mod host_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentInvocation, AgentProcedureExecutor, ExecuteRequest, ExecutionError, SurfaceRegistry,
};

// A counting wrapper around the system allocator. `unsafe impl
// GlobalAlloc` is the only way to observe heap use from inside a Rust
// program; it lives in this test binary alone (the library keeps
// `#![forbid(unsafe_code)]`) and only forwards to `System` while adding the
// size to a counter.
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

/// One measurement at a time (the harness runs tests on threads).
static SERIAL: Mutex<()> = Mutex::new(());

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::SeqCst)
}

const MIB: f64 = 1024.0 * 1024.0;

struct Noop;

impl AgentProcedureExecutor for Noop {
    fn execute(&self, _request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(std::future::ready(Ok(Value::Null)))
    }
}

/// An id of exactly 256 visible ASCII characters (the longest accepted),
/// distinct per `n`.
fn longest_id(n: usize) -> String {
    format!("{n:~>256}")
}

#[test]
fn session_at_its_call_bound_holds_little_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = host_support::session();
    s.session.connect("conn-1").unwrap();
    let before = live_bytes();

    // 100 calls whose ids are 255,000 characters long (24 MB of traffic,
    // each envelope within the 262,144-character limit), then calls with
    // the longest ids accepted until the session is full.
    let mut refused = 0;
    for n in 0..100 {
        let id = format!("{n}{}", "x".repeat(255_000 - n.to_string().len()));
        let mut call = s.call("conn-1", &id, "domain:devices.list", json!({}));
        call.tool_call_id = format!("tc-{n}");
        let text = serde_json::to_string(&call).unwrap();
        assert!(text.len() < 262_144);
        let r = futures_util::FutureExt::now_or_never(s.session.invoke_json(&text)).unwrap();
        refused += usize::from(r.rejection().is_some());
    }
    for n in 0..1_000 {
        let id = longest_id(n);
        let text = serde_json::to_string(&s.call("conn-1", &id, "domain:devices.list", json!({})))
            .unwrap();
        futures_util::FutureExt::now_or_never(s.session.invoke_json(&text)).unwrap();
    }
    assert_eq!(s.session.usage().calls, 1_000, "at the call bound");
    let held = live_bytes() - before;
    println!(
        "session + registry at the 1,000-call bound with 256-character ids: {held} bytes ({:.2} MiB, {} bytes per call)",
        held as f64 / MIB,
        held / 1_000
    );
    // Per call: the id (twice: key and frozen result), the 32-byte envelope
    // digest, the frozen result; in the registry a 32-byte id record and
    // the recorded result; the test executor's own record of the call.
    assert!(
        held < 4 * 1024 * 1024,
        "{held} bytes held at the bound (733 MB before the bound existed)"
    );
    assert_eq!(refused, 100, "the 255,000-character ids were refused");
}

#[test]
fn registry_remembers_a_fixed_size_digest_per_invocation_id() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    const IDS: usize = 100_000; // the default `max_invocation_ids`
    let registry = SurfaceRegistry::builder(common::authority())
        .secret([9; 32])
        .recorded_results(1)
        .build();
    registry.set_procedure_executor(Arc::new(Noop));
    let _h = common::register_plain(&registry, "devices.list");
    let consumer = common::consumer();
    let invoke = |id: String| {
        common::now(registry.invoke(AgentInvocation::new(id, "domain:devices.list"), &consumer))
    };
    let before = live_bytes();
    for n in 0..IDS {
        let r = invoke(longest_id(n));
        assert!(r.error().is_none(), "call {n}: {r:?}");
    }
    let held = live_bytes() - before;
    println!(
        "registry id table with {IDS} ids of 256 characters: {held} bytes ({:.2} MiB, {:.1} bytes per id)",
        held as f64 / MIB,
        held as f64 / IDS as f64
    );
    // 40 bytes per record plus the hash table's control byte and spare
    // capacity (a power of two of buckets, at most 7/8 full).
    assert!(
        held < 64 * IDS as isize,
        "{held} bytes for {IDS} ids: more than 64 bytes per id"
    );

    // At the bound: a new id is refused, known ids are still answered.
    let r = invoke("one-more".into());
    let error = r.error().expect("refused");
    assert_eq!(error.code.as_str(), "PRECONDITION_FAILED");
    assert_eq!(
        Value::Object(error.details.clone()),
        json!({"reason": "invocation-ids-exhausted"})
    );
    let r = invoke(longest_id(IDS - 1));
    assert_eq!(r.error(), None, "the last result is replayed");
    let r = invoke(longest_id(0));
    assert_eq!(
        Value::Object(r.error().expect("refused").details.clone()),
        json!({"reason": "duplicate-invocation"}),
        "an old id is still known"
    );
}
