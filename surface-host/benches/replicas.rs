//! The cost of replicas (`docs/host.md`, "Replicas"), every figure in the
//! same run, on one database of a throwaway PostgreSQL 15 cluster:
//!
//! * **latency** — MCP `tools/call` over streamable HTTP on loopback
//!   (rmcp's client), the tab on replica `r1`: a client of `r1` (same
//!   replica) and a client of `r2` (the call is routed to `r1`);
//! * **necessary work** — what routing one call must do in the store,
//!   alone: read the tab's lease, insert the route, wake the holder
//!   (`NOTIFY` → `LISTEN` delivery), take it (one `UPDATE … RETURNING`), answer it, wake the
//!   requester, read the answer — the goal is cross − same ≤ 1.5× this;
//! * **throughput** — 50 concurrent runs (one MCP client each, 10 tabs),
//!   20 sequential calls per client: one replica holding every tab and
//!   serving every client, vs two replicas holding five tabs each with the
//!   clients spread over both (about half the calls routed).
//!
//! The page is a task answering each call by hand (no browser session in
//! the measurement). Criterion reports means; the table printed first
//! gives p50/p95 and the ratios.
//!
//! Run: `cargo bench -p surface-host --features mcp,store --bench replicas`.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;
#[path = "../tests/support/pg.rs"]
mod pg;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use surface_host::host::replica::Replica;
use surface_host::host::{Database, Host};
use surface_host::mcp::McpServer;
use surface_runtime::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceAnnouncement,
    BrowserSurfaceOutcome, BrowserSurfaceResult, BrowserToHostMessage, KnownBuild,
};
use surface_runtime::{AgentInvocationResult, ConsumerKind};
use surface_store::wake::{Delivery, PostgresWakeups, Wakeups};
use surface_store::{HostStore, PostgresStore, PostgresStoreOptions, RouteRecord, RouteState};

const LATENCY_CALLS: usize = 300;
const CLIENTS: usize = 50;
const TABS: usize = 10;
const CALLS_PER_CLIENT: usize = 20;
static NEXT: AtomicU64 = AtomicU64::new(0);

type Client = RunningService<RoleClient, ()>;

fn host() -> AgentHost {
    AgentHost::new()
        .with_known_build(KnownBuild::new(
            "console",
            "build-1",
            host_support::authority(),
        ))
        .with_max_invocation_ids(10_000_000)
}

async fn replica(url: &str, name: &str) -> (Replica, McpServer, String) {
    let store = PostgresStore::open(PostgresStoreOptions::new(url))
        .await
        .unwrap();
    let wake = Arc::new(PostgresWakeups::for_store(&store));
    let host = Host::builder(Database::Postgres(url.to_string()))
        .store(Arc::new(store))
        .agent_host(host())
        .replica(name)
        .wakeups(wake)
        .build()
        .await
        .unwrap();
    let (replica, mcp) = (host.replica().clone(), host.mcp().clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let service = mcp.http_service();
    tokio::spawn(surface_host::server::serve(
        listener,
        service,
        surface_host::server::ServeOptions::default(),
    ));
    (replica, mcp, format!("http://127.0.0.1:{port}/mcp"))
}

/// A page on `replica` for `tab`: announces, then answers every call by
/// hand.
async fn page(replica: &Replica, announcement: &BrowserSurfaceAnnouncement, tab: usize) {
    let connection = format!("conn-{tab}");
    let mut a = announcement.clone();
    a.connection_id = connection.clone();
    a.identity.tab_id = format!("tab-{tab}");
    let (tab, mut calls) = replica
        .open_connection(AuthenticatedConnection::new(
            &connection,
            "sess-1",
            "user-1",
        ))
        .unwrap();
    tab.receive(BrowserToHostMessage::Announcement(Box::new(a)))
        .await
        .unwrap();
    tokio::spawn(async move {
        while let Some(call) = calls.next().await {
            let id = call.invocation.invocation_id.clone();
            let output = AgentInvocationResult::ok(
                id,
                call.invocation.capability_id.clone(),
                json!({"disabled": ["d1", "d2"]}),
                call.invocation.surface_version.unwrap_or_default(),
            );
            let result = BrowserSurfaceResult::for_call(
                &call.identity,
                &call,
                BrowserSurfaceOutcome::Invocation(output),
            );
            tab.receive(BrowserToHostMessage::Result(Box::new(result)))
                .await
                .unwrap();
        }
    });
}

/// A run on `tab` and an rmcp client of `url` for it.
async fn client(owner: &Replica, mcp: &McpServer, url: &str, tab: usize) -> Client {
    let run_id = format!("run-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    owner
        .durable()
        .start_run(AgentRun {
            run_id: run_id.clone(),
            session_id: "sess-1".into(),
            tab_id: Some(format!("tab-{tab}")),
            kind: ConsumerKind::Embedded,
        })
        .await
        .unwrap();
    let token = mcp.issue_token(&run_id).await.unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn one_call(client: &Client) {
    let params = CallToolRequestParams::new("devices__disable")
        .with_arguments(json!({"reason": "lost"}).as_object().unwrap().clone());
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

/// One routed call's store work and wake-ups, alone (module docs).
struct NecessaryWork {
    requester: PostgresStore,
    requester_wake: PostgresWakeups,
    holder: PostgresStore,
    holder_wake: PostgresWakeups,
    holder_calls: tokio::sync::Mutex<surface_store::wake::Subscription>,
    requester_answers: tokio::sync::Mutex<surface_store::wake::Subscription>,
}

impl NecessaryWork {
    async fn new(url: &str) -> Self {
        let requester = PostgresStore::open(PostgresStoreOptions::new(url))
            .await
            .unwrap();
        let holder = PostgresStore::open(PostgresStoreOptions::new(url))
            .await
            .unwrap();
        let requester_wake = PostgresWakeups::for_store(&requester);
        let holder_wake = PostgresWakeups::for_store(&holder);
        let mut calls = holder_wake.subscribe("c.nw-holder").await.unwrap();
        let mut answers = requester_wake.subscribe("a.nw-requester").await.unwrap();
        assert_eq!(calls.next().await, Some(Delivery::Rescan));
        assert_eq!(answers.next().await, Some(Delivery::Rescan));
        Self {
            requester,
            requester_wake,
            holder,
            holder_wake,
            holder_calls: tokio::sync::Mutex::new(calls),
            requester_answers: tokio::sync::Mutex::new(answers),
        }
    }

    async fn one(&self) {
        let id = format!("nw-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let route = RouteRecord {
            invocation_id: id.clone(),
            run_id: "run-nw".into(),
            tab_id: "tab-0".into(),
            requester: "nw-requester".into(),
            holder: "nw-holder".into(),
            request: json!({"runId": "run-nw", "toolCallId": "tc", "invocationId": id,
                "capabilityId": "domain:devices.disable", "input": {"reason": "lost"}})
            .to_string(),
            state: RouteState::Requested,
            result: None,
            progress: None,
            requested_at_ms: 1,
            settled_at_ms: None,
        };
        self.requester.surface("tab-0").await.unwrap();
        self.requester.record_route(&route).await.unwrap();
        self.requester_wake
            .notify("c.nw-holder", &id)
            .await
            .unwrap();
        let woken = self.holder_calls.lock().await.next().await;
        assert_eq!(woken, Some(Delivery::Wake(id.clone())));
        let taken = self.holder.take_route(&id, "nw-holder", 0).await.unwrap();
        assert!(matches!(taken, surface_store::RouteTake::Taken(_)));
        let answer =
            r#"{"end":"outcome","outcome":{"status":"success","invocationId":"x","output":{}}}"#;
        self.holder.answer_route(&id, answer, 3).await.unwrap();
        self.holder_wake
            .notify("a.nw-requester", &id)
            .await
            .unwrap();
        let woken = self.requester_answers.lock().await.next().await;
        assert_eq!(woken, Some(Delivery::Wake(id.clone())));
        self.requester.route(&id).await.unwrap();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// p50 and p95 of `n` sequential runs of `f`, in microseconds.
async fn latency<F, Fut>(n: usize, f: F) -> (f64, f64)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..n / 10 {
        f().await;
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        f().await;
        samples.push(start.elapsed());
    }
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (
        us(percentile(&samples, 0.5)),
        us(percentile(&samples, 0.95)),
    )
}

/// Calls per second of every client making its calls at once.
async fn throughput(clients: &[Client]) -> f64 {
    let start = Instant::now();
    let all = clients.iter().map(|c| async move {
        for _ in 0..CALLS_PER_CLIENT {
            one_call(c).await;
        }
    });
    futures_util::future::join_all(all).await;
    (clients.len() * CALLS_PER_CLIENT) as f64 / start.elapsed().as_secs_f64()
}

/// Two replicas, tab-0 … tab-4 on r1 and tab-5 … tab-9 on r2, the
/// clients of run i on replica i % 2.
struct Pair {
    same: Client,
    cross: Client,
    spread: Vec<Client>,
    /// The same runs, each client on the replica holding its tab (no
    /// call routed): what two replicas cost without routing.
    pinned: Vec<Client>,
}

async fn pair(url: &str, announcement: &BrowserSurfaceAnnouncement) -> Pair {
    let (r1, mcp1, url1) = replica(url, "r1").await;
    let (r2, mcp2, url2) = replica(url, "r2").await;
    for tab in 0..TABS {
        page(if tab < TABS / 2 { &r1 } else { &r2 }, announcement, tab).await;
    }
    let same = client(&r1, &mcp1, &url1, 0).await;
    let cross = client(&r1, &mcp2, &url2, 0).await;
    let mut spread = Vec::new();
    let mut pinned = Vec::new();
    for i in 0..CLIENTS {
        let tab = i % TABS;
        let (mcp, url) = if i % 2 == 0 {
            (&mcp1, &url1)
        } else {
            (&mcp2, &url2)
        };
        spread.push(client(&r1, mcp, url, tab).await);
        let (mcp, url) = if tab < TABS / 2 {
            (&mcp1, &url1)
        } else {
            (&mcp2, &url2)
        };
        pinned.push(client(&r1, mcp, url, tab).await);
    }
    // The servers' tasks keep the replicas alive.
    drop((r1, r2, mcp1, mcp2));
    Pair {
        same,
        cross,
        spread,
        pinned,
    }
}

async fn single(url: &str, announcement: &BrowserSurfaceAnnouncement) -> Vec<Client> {
    let (r1, mcp1, url1) = replica(url, "solo").await;
    for tab in 0..TABS {
        page(&r1, announcement, tab).await;
    }
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        clients.push(client(&r1, &mcp1, &url1, i % TABS).await);
    }
    drop((r1, mcp1));
    clients
}

fn bench_replicas(c: &mut Criterion) {
    let Some(cluster) = pg::PgCluster::require("bench replicas") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fixture = host_support::session();
    let announcement = fixture.session.connect("conn-0").unwrap();
    let (pair, solo, work) = rt.block_on(async {
        let pair = pair(&cluster.database("pair"), &announcement).await;
        let solo = single(&cluster.database("solo"), &announcement).await;
        let work = NecessaryWork::new(&cluster.database("work")).await;
        (pair, solo, work)
    });
    rt.block_on(async {
        let (same50, same95) = latency(LATENCY_CALLS, || one_call(&pair.same)).await;
        let (cross50, cross95) = latency(LATENCY_CALLS, || one_call(&pair.cross)).await;
        let (work50, work95) = latency(LATENCY_CALLS, || work.one()).await;
        println!("MCP tools/call over loopback HTTP, {LATENCY_CALLS} sequential calls each (µs)");
        println!("variant                          p50        p95");
        println!("same replica (tab on r1, r1)  {same50:>8.0}   {same95:>8.0}");
        println!("other replica (tab on r1, r2) {cross50:>8.0}   {cross95:>8.0}");
        println!("necessary work, alone         {work50:>8.0}   {work95:>8.0}");
        println!(
            "(cross - same) / necessary work: p50 {:.2}x, p95 {:.2}x (goal <= 1.5x)",
            (cross50 - same50) / work50,
            (cross95 - same95) / work95
        );
        let one = throughput(&solo).await;
        let two = throughput(&pair.spread).await;
        let pinned = throughput(&pair.pinned).await;
        println!("{CLIENTS} concurrent runs x {CALLS_PER_CLIENT} calls (calls/s):");
        println!("  1 replica, every tab and client                 {one:>6.0}");
        println!(
            "  2 replicas, clients on either (half routed)     {two:>6.0}  ({:.2}x, goal >= 0.9x)",
            two / one
        );
        println!(
            "  2 replicas, clients on their tab's replica      {pinned:>6.0}  ({:.2}x)",
            pinned / one
        );
    });
    let mut group = c.benchmark_group("replicas/tools-call");
    group.bench_function("same-replica", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    one_call(&pair.same).await;
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("other-replica", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    one_call(&pair.cross).await;
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("necessary-work", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    work.one().await;
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    rt.block_on(async move { drop((pair, solo, work)) });
    rt.shutdown_timeout(Duration::from_secs(2));
    drop(cluster);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3));
    targets = bench_replicas
}
criterion_main!(benches);
