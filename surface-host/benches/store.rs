//! Per-call overhead of the host store on the dispatch + result path
//! (`docs/host.md`, "Durability and cost"), every variant in the same run:
//!
//! * `in-memory` — the plain `AgentHost` (no store): the baseline;
//! * `memory-store` — `DurableHost` over `MemoryStore` (the wrapper's own
//!   cost);
//! * `sqlite`, `sqlite-full` — a SQLite file, `Durability::ProcessCrash`
//!   (WAL, `synchronous = NORMAL`) and `PowerLoss` (`FULL`);
//! * `postgres`, `postgres-sync` — a throwaway PostgreSQL cluster on
//!   loopback, `synchronous_commit = off` and `on` (skipped with a notice
//!   when PostgreSQL is absent).
//!
//! One call = `dispatch` (the row written before the call is returned)
//! + `accept_result` (the result recorded), the browser's answer built by
//!   hand so the page's own cost is not in it. Criterion reports the mean;
//!   the table printed first gives p50/p95 per call and calls/s over
//!   2,000 sequential calls per variant, and each p95 as a ratio of the
//!   baseline's.
//!
//! Run: `cargo bench -p surface-store --bench store`.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;
#[path = "../tests/support/pg.rs"]
mod pg;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use surface_host::host::DurableHost;
use surface_runtime::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceAnnouncement, BrowserSurfaceCall,
    BrowserSurfaceOutcome, BrowserSurfaceResult, KnownBuild, ToolCallRequest,
};
use surface_runtime::{AgentInvocationResult, ConsumerKind};
use surface_store::{
    Durability, HostStore, MemoryStore, PostgresStore, PostgresStoreOptions, SqliteStore,
    SqliteStoreOptions,
};

const SAMPLE_CALLS: usize = 2_000;
static NEXT: AtomicU64 = AtomicU64::new(0);

fn auth() -> AuthenticatedConnection {
    AuthenticatedConnection::new("conn-1", "sess-1", "user-1")
}

fn fresh_host(announcement: &BrowserSurfaceAnnouncement) -> AgentHost {
    let host = AgentHost::new()
        .with_known_build(KnownBuild::new(
            "console",
            "build-1",
            host_support::authority(),
        ))
        .with_max_invocation_ids(10_000_000);
    host.accept_announcement(&auth(), announcement).unwrap();
    host
}

fn run() -> AgentRun {
    AgentRun {
        run_id: "run-1".into(),
        session_id: "sess-1".into(),
        tab_id: Some("tab-1".into()),
        kind: ConsumerKind::Embedded,
    }
}

fn request() -> ToolCallRequest {
    let id = format!("inv-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    ToolCallRequest::new(
        "run-1",
        format!("tc-{id}"),
        id,
        "domain:devices.disable",
        json!({"reason": "lost"}),
    )
}

fn answer(call: &BrowserSurfaceCall) -> BrowserSurfaceResult {
    let result = AgentInvocationResult::ok(
        call.invocation.invocation_id.clone(),
        call.invocation.capability_id.clone(),
        json!({"disabled": ["d1", "d2"]}),
        call.invocation.surface_version.unwrap_or_default(),
    );
    BrowserSurfaceResult::for_call(
        &call.identity,
        call,
        BrowserSurfaceOutcome::Invocation(result),
    )
}

/// One variant: a host with or without a store.
enum Target {
    Plain(AgentHost),
    Durable(DurableHost),
}

impl Target {
    async fn one_call(&self) {
        match self {
            Target::Plain(host) => {
                let call = host.dispatch(request()).unwrap();
                host.accept_result(&auth(), &answer(&call)).unwrap();
            }
            Target::Durable(host) => {
                let call = host.dispatch(request()).await.unwrap();
                host.accept_result(&auth(), &answer(&call)).await.unwrap();
            }
        }
    }
}

async fn durable(s: &BrowserSurfaceAnnouncement, store: Arc<dyn HostStore>) -> Target {
    let (host, _) = DurableHost::open(fresh_host(s), store, "bench")
        .await
        .unwrap();
    host.start_run(run()).await.unwrap();
    Target::Durable(host)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn bench_store(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("surface-store-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cluster = pg::PgCluster::require("bench store/postgres");
    let fixture = host_support::session();
    let s = fixture.session.connect("conn-1").unwrap();
    let mut targets: Vec<(&str, Target)> = Vec::new();
    rt.block_on(async {
        let plain = fresh_host(&s);
        plain.start_run(run()).unwrap();
        targets.push(("in-memory", Target::Plain(plain)));
        targets.push((
            "memory-store",
            durable(&s, Arc::new(MemoryStore::new())).await,
        ));
        for (name, file, durability) in [
            ("sqlite", "a.db", Durability::ProcessCrash),
            ("sqlite-full", "b.db", Durability::PowerLoss),
        ] {
            let options = SqliteStoreOptions::file(dir.join(file)).durability(durability);
            let store = SqliteStore::open(options).await.unwrap();
            targets.push((name, durable(&s, Arc::new(store)).await));
        }
        if let Some(cluster) = &cluster {
            for (name, durability) in [
                ("postgres", Durability::ProcessCrash),
                ("postgres-sync", Durability::PowerLoss),
            ] {
                let options =
                    PostgresStoreOptions::new(cluster.database("bench")).durability(durability);
                let store = PostgresStore::open(options).await.unwrap();
                targets.push((name, durable(&s, Arc::new(store)).await));
            }
        }
    });
    print_table(&rt, &targets);
    let mut group = c.benchmark_group("store/dispatch+result");
    for (name, target) in &targets {
        group.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        target.one_call().await;
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
    drop(targets);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

fn print_table(rt: &tokio::runtime::Runtime, targets: &[(&str, Target)]) {
    let mut baseline_p95 = None;
    println!("variant         p50 µs    p95 µs   calls/s   p95 / in-memory   overhead p95 µs");
    for (name, target) in targets {
        let mut samples = rt.block_on(async {
            let mut samples = Vec::with_capacity(SAMPLE_CALLS);
            for _ in 0..SAMPLE_CALLS {
                let start = Instant::now();
                target.one_call().await;
                samples.push(start.elapsed());
            }
            samples
        });
        let total: Duration = samples.iter().sum();
        samples.sort();
        let (p50, p95) = (percentile(&samples, 0.50), percentile(&samples, 0.95));
        let base = *baseline_p95.get_or_insert(p95);
        println!(
            "{name:<14} {:>8.1}  {:>8.1}  {:>8.0}   {:>15.1}x   {:>15.1}",
            p50.as_secs_f64() * 1e6,
            p95.as_secs_f64() * 1e6,
            SAMPLE_CALLS as f64 / total.as_secs_f64(),
            p95.as_secs_f64() / base.as_secs_f64(),
            (p95.as_secs_f64() - base.as_secs_f64()) * 1e6,
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench_store
}
criterion_main!(benches);
