//! Replicas (`docs/host.md`, "Replicas"): two [`Replica`]s on one store —
//! the in-process store with in-process wake-ups, and a database of a
//! throwaway PostgreSQL 15 cluster with `LISTEN/NOTIFY` (two pools, as two
//! processes would have; failing under `CI=true` when PostgreSQL is
//! absent). The page (a browser session with a counting executor) is
//! connected to replica `r1`; the agent's calls reach `r2`. The kill test
//! runs `r1` in a child process (this binary re-run as `replica_probe`)
//! and kills it with `kill -9`; the same process answers calls for the
//! test that sends one invocation id to both replica processes at once.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;
mod support;

use support::faults;

use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use host_support::{session, SessionFixture};
use serde_json::{json, Value};
use support::pg::PgCluster;
use support::{auth, devices_host};
use surface_host::host::replica::{
    CallEnd, Received, Refusal, Replica, ReplicaOptions, ReplicaTab,
};
use surface_host::host::DurableHost;
use surface_runtime::host::{
    AgentRun, BrowserSurfaceOutcome, BrowserSurfaceProgress, BrowserToHostMessage, ToolCallRequest,
};
use surface_runtime::ConsumerKind;
use surface_store::wake::{LocalWakeups, PostgresWakeups, Wakeups};
use surface_store::{
    CallState, HostStore, MemoryStore, PostgresStore, PostgresStoreOptions, RouteState,
};

const DISABLE: &str = "domain:devices.disable";
const PROBE_ENV: &str = "SURFACE_STORE_REPLICA_PROBE";
const PROBE_MODE_ENV: &str = "SURFACE_STORE_REPLICA_PROBE_MODE";

fn options() -> ReplicaOptions {
    ReplicaOptions {
        lease: Duration::from_secs(2),
        renew_interval: Duration::from_millis(500),
        check_interval: Duration::from_millis(200),
        call_timeout: Duration::from_secs(30),
        ..ReplicaOptions::default()
    }
}

fn run1() -> AgentRun {
    AgentRun {
        run_id: "run-1".into(),
        session_id: "sess-1".into(),
        tab_id: Some("tab-1".into()),
        kind: ConsumerKind::Embedded,
    }
}

fn disable(invocation_id: &str) -> ToolCallRequest {
    ToolCallRequest::new(
        "run-1",
        format!("tc-{invocation_id}"),
        invocation_id,
        DISABLE,
        json!({"reason": "lost"}),
    )
}

/// One database and its wake-up bus, as each replica process opens them.
enum Shared {
    Memory(Arc<MemoryStore>, Arc<LocalWakeups>),
    Postgres(String),
}

impl Shared {
    async fn open(&self) -> (Arc<dyn HostStore>, Arc<dyn Wakeups>) {
        match self {
            Shared::Memory(store, wake) => (store.clone(), wake.clone()),
            Shared::Postgres(url) => {
                let store = PostgresStore::open(PostgresStoreOptions::new(url))
                    .await
                    .expect("postgres store opens");
                let wake = Arc::new(PostgresWakeups::for_store(&store));
                (Arc::new(store), wake)
            }
        }
    }

    async fn replica(&self, name: &str) -> Replica {
        let (store, wake) = self.open().await;
        let (durable, _) = DurableHost::open(devices_host(), store, name)
            .await
            .expect("host opens");
        let (replica, _) = Replica::start(Arc::new(durable), wake, options())
            .await
            .expect("replica starts");
        replica
    }
}

/// The page on `replica`: announces on `connection`, then answers every
/// call through the session (or holds them when `hold`).
async fn page(
    replica: &Replica,
    s: &Arc<SessionFixture>,
    connection: &str,
    hold: bool,
) -> (Arc<ReplicaTab>, bool, tokio::task::JoinHandle<()>) {
    let (tab, mut calls) = replica.open_connection(auth(connection)).unwrap();
    let announcement = s.session.connect(connection).expect("session connects");
    let received = tab
        .receive(BrowserToHostMessage::Announcement(Box::new(announcement)))
        .await
        .expect("announcement accepted");
    let Received::Announcement { leased, .. } = received else {
        panic!("not an announcement: {received:?}");
    };
    let tab = Arc::new(tab);
    let (answering, s) = (tab.clone(), s.clone());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some(call) = calls.next().await {
            if hold {
                held.push(call);
                continue;
            }
            let result = s.session.invoke(call).await;
            let _ = answering
                .receive(BrowserToHostMessage::Result(Box::new(result)))
                .await;
        }
    });
    (tab, leased, task)
}

fn success(end: &CallEnd) -> bool {
    matches!(end, CallEnd::Outcome { outcome: BrowserSurfaceOutcome::Invocation(r) } if r.error().is_none())
}

async fn wait_for_route(store: &Arc<dyn HostStore>, id: &str, state: RouteState) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let row = store.route(id).await.unwrap();
        if row.as_ref().map(|r| r.state) == Some(state) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "route {id} never reached {state:?}: {row:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the holder dispatched `id` to its page (its row written).
async fn wait_for_dispatch(store: &Arc<dyn HostStore>, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while store.call(id).await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "{id} was never dispatched");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn a_call_on_another_replica_runs_once_on_the_tabs_replica(shared: &Shared) {
    let s = Arc::new(session());
    let r1 = shared.replica("r1").await;
    let r2 = shared.replica("r2").await;
    let (_tab, leased, _page) = page(&r1, &s, "conn-1", false).await;
    assert!(leased, "r1 holds the tab's lease");
    r2.durable().start_run(run1()).await.unwrap();

    let tools = r2.tools_for_run("run-1").await.unwrap();
    assert!(
        tools.iter().any(|t| t.capability_id() == DISABLE),
        "r2 composes the tab's tools from the store"
    );
    let end = r2.call(disable("inv-1"), None).await;
    assert!(success(&end), "{end:?}");
    assert_eq!(s.fx.executor.count(), 1);

    let store = r2.durable().store();
    let row = store
        .call("inv-1")
        .await
        .unwrap()
        .expect("the holder's row");
    assert_eq!(
        (row.owner.as_str(), row.state),
        ("r1", CallState::Completed)
    );
    let route = store.route("inv-1").await.unwrap().expect("the route");
    assert_eq!(
        (route.requester.as_str(), route.holder.as_str(), route.state),
        ("r2", "r1", RouteState::Answered)
    );

    // The id is spent on both replicas; nothing runs again.
    for replica in [&r1, &r2] {
        let again = replica.call(disable("inv-1"), None).await;
        assert_eq!(
            again,
            CallEnd::Refused {
                reason: Refusal::Conflict
            }
        );
    }
    assert_eq!(s.fx.executor.count(), 1);

    // The same run on r1 (the tab's own replica) runs locally.
    let local = r1.call(disable("inv-2"), None).await;
    assert!(success(&local), "{local:?}");
    assert_eq!(store.route("inv-2").await.unwrap(), None, "not routed");
    assert_eq!(s.fx.executor.count(), 2);
}

async fn one_id_sent_to_both_replicas_at_once_runs_once(shared: &Shared) {
    let s = Arc::new(session());
    let r1 = shared.replica("r1").await;
    let r2 = shared.replica("r2").await;
    let (_tab, _, _page) = page(&r1, &s, "conn-1", false).await;
    r1.durable().start_run(run1()).await.unwrap();
    for n in 0..5 {
        let id = format!("both-{n}");
        let (a, b) = tokio::join!(r1.call(disable(&id), None), r2.call(disable(&id), None));
        let ran = [&a, &b].iter().filter(|e| success(e)).count();
        let refused = [&a, &b]
            .iter()
            .filter(|e| {
                **e == &CallEnd::Refused {
                    reason: Refusal::Conflict,
                }
            })
            .count();
        assert_eq!((ran, refused), (1, 1), "{id}: {a:?} / {b:?}");
    }
    assert_eq!(s.fx.executor.count(), 5);
}

async fn a_tab_closing_on_its_replica_interrupts_the_routed_call(shared: &Shared) {
    let s = Arc::new(session());
    let r1 = shared.replica("r1").await;
    let r2 = shared.replica("r2").await;
    let (tab, _, page_task) = page(&r1, &s, "conn-1", true).await;
    r2.durable().start_run(run1()).await.unwrap();
    let call = tokio::spawn({
        let r2 = r2.clone();
        async move { r2.call(disable("held-1"), None).await }
    });
    wait_for_route(r2.durable().store(), "held-1", RouteState::Taken).await;
    wait_for_dispatch(r2.durable().store(), "held-1").await;
    page_task.abort();
    let _ = page_task.await;
    let tab = Arc::try_unwrap(tab).expect("the page task let go of the tab");
    let interrupted = tab.close().await;
    assert_eq!(interrupted.len(), 1);
    assert_eq!(call.await.unwrap(), CallEnd::Interrupted);
    assert_eq!(s.fx.executor.count(), 0);
    let tools = r2.tools_for_run("run-1").await.unwrap();
    assert!(
        tools.iter().all(|t| t.capability_id() != DISABLE),
        "the tab's tools are gone"
    );
    assert_eq!(
        r2.call(disable("after-close"), None).await,
        CallEnd::Refused {
            reason: Refusal::NoLivePage
        }
    );
}

async fn a_routed_calls_progress_reaches_the_requester_once_per_stage(shared: &Shared) {
    let s = Arc::new(session());
    let r1 = shared.replica("r1").await;
    let r2 = shared.replica("r2").await;
    // The page on r1 reports that it waits for the user (twice), that the
    // user confirmed, then answers.
    let (tab, mut calls) = r1.open_connection(auth("conn-1")).unwrap();
    let announcement = s.session.connect("conn-1").unwrap();
    tab.receive(BrowserToHostMessage::Announcement(Box::new(announcement)))
        .await
        .unwrap();
    let page = tokio::spawn({
        let s = s.clone();
        async move {
            let call = calls
                .next()
                .await
                .expect("the routed call reaches the page");
            let awaiting = BrowserSurfaceProgress::awaiting_confirmation(&call, 42);
            for message in [
                awaiting.clone(),
                awaiting,
                BrowserSurfaceProgress::confirmed(&call, "confirmed-1"),
            ] {
                let received = tab
                    .receive(BrowserToHostMessage::Progress(message))
                    .await
                    .unwrap();
                assert_eq!(received, Received::Progress);
            }
            let result = s.session.invoke(call).await;
            tab.receive(BrowserToHostMessage::Result(Box::new(result)))
                .await
                .unwrap();
            tab
        }
    });
    r2.durable().start_run(run1()).await.unwrap();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let end = r2.call(disable("progress-1"), Some(sender)).await;
    assert!(success(&end), "{end:?}");
    let _tab = page.await.unwrap();
    let mut relayed = Vec::new();
    while let Ok(message) = receiver.try_recv() {
        relayed.push(message);
    }
    let stages: Vec<_> = relayed.iter().map(|p| p.stage.as_str()).collect();
    // The requester reads the row after each wake-up; with both stages
    // written before the answer it may find the second one only.
    assert!(
        stages == ["awaiting-confirmation", "confirmed"] || stages == ["confirmed"],
        "{stages:?}"
    );
    let confirmed = relayed.last().unwrap();
    assert_eq!(
        (
            confirmed.invocation_id.as_str(),
            confirmed.retry_invocation_id.as_deref()
        ),
        ("progress-1", Some("confirmed-1"))
    );
    if let [awaiting, _] = relayed.as_slice() {
        assert_eq!(awaiting.expires_at_ms, Some(42));
    }
    let row = r2
        .durable()
        .store()
        .route("progress-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, RouteState::Answered);
    assert_eq!(
        row.progress.as_deref(),
        Some(serde_json::to_string(confirmed).unwrap().as_str())
    );
    assert_eq!(s.fx.executor.count(), 1);
}

/// Two replicas over `store` (each through its own wrapper, if any) on
/// in-process wake-ups.
async fn replica_on(
    name: &str,
    store: Arc<dyn HostStore>,
    wake: Arc<dyn Wakeups>,
    options: ReplicaOptions,
) -> Replica {
    let (durable, _) = DurableHost::open(devices_host(), store, name)
        .await
        .expect("host opens");
    Replica::start(Arc::new(durable), wake, options)
        .await
        .expect("replica starts")
        .0
}

/// Closes a page opened by [`page`].
async fn close_page(tab: Arc<ReplicaTab>, task: tokio::task::JoinHandle<()>) {
    task.abort();
    let _ = task.await;
    Arc::try_unwrap(tab)
        .expect("the page task let go of the tab")
        .close()
        .await;
}

/// Waits until `check` holds (20 s at most).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A lease claim in flight when its socket closes leaves no lease behind:
/// the tab, back on a third replica, gets the lease and its calls run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_racing_a_close_leaves_no_lease_behind() {
    let memory: Arc<dyn HostStore> = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let slow = faults::Faulty::new(memory.clone());
    let r1 = replica_on("r1", memory.clone(), wake.clone(), options()).await;
    let r2 = replica_on("r2", slow.clone(), wake.clone(), options()).await;
    let r3 = replica_on("r3", memory.clone(), wake.clone(), options()).await;
    let s = Arc::new(session());
    let (tab1, leased, page1) = page(&r1, &s, "conn-1", true).await;
    assert!(leased);
    // The tab reconnects to r2 while r1's lease holds: r2 claims it at
    // each renewal, slowly.
    let (tab2, leased, page2) = page(&r2, &s, "conn-2", true).await;
    assert!(!leased);
    slow.claim_delay_ms
        .store(400, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(700)).await;
    // Both sockets close, r2's while its claim is in flight.
    close_page(tab1, page1).await;
    close_page(tab2, page2).await;
    slow.claim_delay_ms
        .store(0, std::sync::atomic::Ordering::SeqCst);
    eventually("r2 holds no lease for the closed socket", || async {
        memory.surface("tab-1").await.unwrap().is_none()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        memory.surface("tab-1").await.unwrap(),
        None,
        "not claimed again"
    );

    let (_tab3, leased, _page3) = page(&r3, &s, "conn-3", false).await;
    assert!(leased, "the tab's new replica gets the lease at once");
    r1.durable().start_run(run1()).await.unwrap();
    let end = r1.call(disable("after-race"), None).await;
    assert!(success(&end), "{end:?}");
    assert_eq!(s.fx.executor.count(), 1);
}

/// A holder whose answer write fails retries it: the requester gets the
/// result at once, not at its call timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_answer_write_is_retried() {
    let memory: Arc<dyn HostStore> = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let failing = faults::Faulty::new(memory.clone());
    failing
        .failing_answers
        .store(2, std::sync::atomic::Ordering::SeqCst);
    let r1 = replica_on("r1", failing.clone(), wake.clone(), options()).await;
    let r2 = replica_on("r2", memory.clone(), wake.clone(), options()).await;
    let s = Arc::new(session());
    let (_tab, _, _page) = page(&r1, &s, "conn-1", false).await;
    r2.durable().start_run(run1()).await.unwrap();
    let started = Instant::now();
    let end = r2.call(disable("answer-1"), None).await;
    assert!(success(&end), "{end:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        failing
            .failing_answers
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    assert_eq!(s.fx.executor.count(), 1);
}

/// A holder that loses its wake-ups without a rescan (a listening
/// connection that died silently) takes its routed calls at its next
/// lease renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_deaf_to_wake_ups_takes_its_calls_at_the_next_renewal() {
    let memory: Arc<dyn HostStore> = Arc::new(MemoryStore::new());
    let local = Arc::new(LocalWakeups::new());
    let r1 = replica_on("r1", memory.clone(), local.clone(), options()).await;
    // Every wake-up r2 sends to r1's calls is lost.
    let deaf = Arc::new(faults::Deaf {
        inner: local.clone(),
        deaf: "c.r1".into(),
    });
    let r2 = replica_on("r2", memory.clone(), deaf, options()).await;
    let s = Arc::new(session());
    let (_tab, _, _page) = page(&r1, &s, "conn-1", false).await;
    r2.durable().start_run(run1()).await.unwrap();
    let started = Instant::now();
    let end = r2.call(disable("deaf-1"), None).await;
    assert!(success(&end), "{end:?}");
    let bound = options().renew_interval + Duration::from_secs(1);
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());
    assert_eq!(s.fx.executor.count(), 1);
}

/// A routed call nobody takes — its holder stopped before it took it —
/// is withdrawn when the holder's lease ends: refused (it never ran),
/// not "may have taken effect".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_no_holder_took_is_refused_when_its_lease_ends() {
    let memory: Arc<dyn HostStore> = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let r2 = replica_on("r2", memory.clone(), wake.clone(), options()).await;
    let s = Arc::new(session());
    // A replica `ghost` claimed the tab, then stopped (no process runs it).
    let announcement = s.session.connect("conn-g").unwrap();
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let lease = surface_store::SurfaceLease {
        tab_id: "tab-1".into(),
        session_id: "sess-1".into(),
        replica: "ghost".into(),
        connection_id: "conn-g".into(),
        announcement: serde_json::to_string(&announcement).unwrap(),
        lease_expires_at_ms: now + 1_500,
        updated_at_ms: now,
    };
    memory.claim_surface(&lease, now).await.unwrap();
    r2.durable().start_run(run1()).await.unwrap();
    assert!(!r2.tools_for_run("run-1").await.unwrap().is_empty());
    let end = r2.call(disable("ghost-1"), None).await;
    assert_eq!(
        end,
        CallEnd::Refused {
            reason: Refusal::HolderUnavailable
        }
    );
    let row = memory.route("ghost-1").await.unwrap().unwrap();
    assert_eq!(row.state, RouteState::Interrupted);
    // It can never run now.
    assert!(matches!(
        memory.take_route("ghost-1", "ghost", 0).await.unwrap(),
        surface_store::RouteTake::NotTaken(_)
    ));
}

/// A requester whose agent went away (the call's future dropped) cancels
/// its routed call while nobody took it: it never runs later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_routed_call_is_cancelled() {
    let memory: Arc<dyn HostStore> = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    // r1 runs no routed call (no slot): the row stays requested.
    let busy = ReplicaOptions {
        max_routed_calls: 0,
        ..options()
    };
    let r1 = replica_on("r1", memory.clone(), wake.clone(), busy).await;
    let r2 = replica_on("r2", memory.clone(), wake.clone(), options()).await;
    let s = Arc::new(session());
    let (_tab, _, _page) = page(&r1, &s, "conn-1", false).await;
    r2.durable().start_run(run1()).await.unwrap();
    let call = tokio::spawn({
        let r2 = r2.clone();
        async move { r2.call(disable("gone-1"), None).await }
    });
    eventually("the call is routed", || async {
        memory.route("gone-1").await.unwrap().is_some()
    })
    .await;
    call.abort();
    let _ = call.await;
    eventually("the abandoned call is cancelled", || async {
        memory.route("gone-1").await.unwrap().map(|r| r.state) == Some(RouteState::Interrupted)
    })
    .await;
    assert_eq!(s.fx.executor.count(), 0, "it never ran");
    let _ = r1;
}

/// A call is sent only to the socket that announced its tab on this
/// replica: a socket here carrying the connection id of another
/// replica's tab (a mirror) never receives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_sent_only_to_the_socket_that_announced_its_tab() {
    let memory: Arc<dyn HostStore> = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let r1 = replica_on("r1", memory.clone(), wake.clone(), options()).await;
    let r2 = replica_on("r2", memory.clone(), wake.clone(), options()).await;
    let s = Arc::new(session());
    let (_tab, _, _page) = page(&r1, &s, "conn-1", true).await;
    r2.durable().start_run(run1()).await.unwrap();
    // r2 mirrors tab-1 under r1's connection id conn-1 …
    assert!(!r2.tools_for_run("run-1").await.unwrap().is_empty());
    // … a socket reaches r2 under that same id and never announces …
    let (_other, mut other_calls) = r2.open_connection(auth("conn-1")).unwrap();
    // … and r1's lease disappears without a wake-up.
    assert!(memory
        .release_surface("tab-1", "r1", "conn-1")
        .await
        .unwrap());
    // Past the listing's reuse window: the call reads the lease afresh.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let end = r2.call(disable("stray-1"), None).await;
    assert_eq!(
        end,
        CallEnd::Refused {
            reason: Refusal::NoLivePage
        }
    );
    let received = tokio::time::timeout(Duration::from_millis(300), other_calls.next()).await;
    assert!(received.is_err(), "the other socket received {received:?}");
}

/// A routed request too large to store is refused as invalid at once: it
/// was never written, so it never runs (and waits for nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_routed_request_is_refused_at_once() {
    let memory: Arc<dyn HostStore> = Arc::new(MemoryStore::new());
    let wake = Arc::new(LocalWakeups::new());
    let r1 = replica_on("r1", memory.clone(), wake.clone(), options()).await;
    let r2 = replica_on("r2", memory.clone(), wake.clone(), options()).await;
    let s = Arc::new(session());
    let (_tab, _, _page) = page(&r1, &s, "conn-1", false).await;
    r2.durable().start_run(run1()).await.unwrap();
    let big = ToolCallRequest::new(
        "run-1",
        "tc-big",
        "big-1",
        DISABLE,
        json!({"reason": "x".repeat(surface_store::store::MAX_STORED_JSON_BYTES)}),
    );
    assert_eq!(
        r2.call(big, None).await,
        CallEnd::Refused {
            reason: Refusal::Invalid
        }
    );
    assert_eq!(memory.route("big-1").await.unwrap(), None);
    assert_eq!(s.fx.executor.count(), 0);
}

async fn run_all(shared: impl Fn() -> Shared) {
    a_call_on_another_replica_runs_once_on_the_tabs_replica(&shared()).await;
    one_id_sent_to_both_replicas_at_once_runs_once(&shared()).await;
    a_tab_closing_on_its_replica_interrupts_the_routed_call(&shared()).await;
    a_routed_calls_progress_reaches_the_requester_once_per_stage(&shared()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_in_memory() {
    run_all(|| Shared::Memory(Arc::new(MemoryStore::new()), Arc::new(LocalWakeups::new()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_postgres() {
    let Some(cluster) = PgCluster::require("replicas_on_postgres") else {
        return;
    };
    run_all(|| Shared::Postgres(cluster.database("replica"))).await;
}

/// Replica `r1` in a process of its own, with the page: not a test of its
/// own (ignored), run by the tests below. With [`PROBE_MODE_ENV`] `hold`
/// the page holds every call ([`a_killed_replica_loses_its_tab_and_its_routed_call`]);
/// with `answer` it answers them, and the process reads commands on
/// stdin: `call ID DELAY_MS` runs `devices.disable` under `ID` on `r1`
/// after `DELAY_MS` milliseconds and prints
/// `END {"id":ID,"ran":bool,"end":CallEnd}`; `count` prints `COUNT n`,
/// the executions of the page's executor.
#[test]
#[ignore = "the replica process of the multi-process tests; run by them"]
fn replica_probe() {
    let Ok(url) = std::env::var(PROBE_ENV) else {
        panic!("replica_probe is started by the multi-process tests with {PROBE_ENV} set");
    };
    let hold = std::env::var(PROBE_MODE_ENV).as_deref() != Ok("answer");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let shared = Shared::Postgres(url);
        let r1 = shared.replica("r1").await;
        let s = Arc::new(session());
        let (_tab, leased, page_task) = page(&r1, &s, "conn-1", hold).await;
        println!("PROBE {}", json!({"leased": leased}));
        if hold {
            let _ = page_task.await;
            return;
        }
        let (sender, mut commands) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        while let Some(line) = commands.recv().await {
            match line.split_once(' ') {
                Some(("call", rest)) => {
                    let (id, delay) = rest.split_once(' ').expect("call ID DELAY_MS");
                    tokio::time::sleep(Duration::from_millis(delay.parse().unwrap())).await;
                    let end = r1.call(disable(id), None).await;
                    let report = json!({"id": id, "ran": success(&end), "end": end});
                    println!("END {report}");
                }
                _ if line == "count" => println!("COUNT {}", s.fx.executor.count()),
                _ => panic!("unknown command {line:?}"),
            }
        }
    });
}

/// Starts [`replica_probe`] on `url` in `mode` (`hold` or `answer`),
/// waits for its ready line and returns it with its stdout lines.
async fn probe(
    url: &str,
    mode: &str,
) -> (
    std::process::Child,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["replica_probe", "--exact", "--ignored", "--nocapture"])
        .env(PROBE_ENV, url)
        .env(PROBE_MODE_ENV, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the replica process starts");
    let stdout = child.stdout.take().unwrap();
    let (sender, mut lines) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let ready = probe_line(&mut lines, "PROBE ").await;
    assert_eq!(
        serde_json::from_str::<Value>(&ready).unwrap(),
        json!({"leased": true})
    );
    (child, lines)
}

/// The next line of the probe starting with `prefix`, without it.
async fn probe_line(
    lines: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    prefix: &str,
) -> String {
    let wait = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.recv().await {
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.to_string();
            }
        }
        panic!("the replica process ended before printing {prefix:?}");
    });
    wait.await
        .unwrap_or_else(|_| panic!("no {prefix:?} line from the replica process in 30 s"))
}

/// One invocation id sent at once to `r1` (a process of its own, holding
/// the tab) and to `r2` (this process, routing it to `r1`): it runs once,
/// the other is refused `conflict` — the database's unique keys decide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_id_sent_to_two_replica_processes_at_once_runs_once() {
    let test = "one_id_sent_to_two_replica_processes_at_once_runs_once";
    let Some(cluster) = PgCluster::require(test) else {
        return;
    };
    let url = cluster.database("both");
    let (mut child, mut lines) = probe(&url, "answer").await;
    let mut commands = child.stdin.take().unwrap();
    let shared = Shared::Postgres(url);
    let r2 = shared.replica("r2").await;
    r2.durable().start_run(run1()).await.unwrap();
    // r1 starts after a delay, so either side wins some of the races:
    // without one the local call (fewer statements) wins them all.
    const DELAYS_MS: [u64; 5] = [0, 2, 5, 20, 100];
    const IDS: usize = 20;
    let mut ran_on = [0usize; 2];
    for n in 0..IDS {
        let id = format!("both-{n}");
        writeln!(commands, "call {id} {}", DELAYS_MS[n % DELAYS_MS.len()]).unwrap();
        commands.flush().unwrap();
        let here = r2.call(disable(&id), None).await;
        let there: Value = serde_json::from_str(&probe_line(&mut lines, "END ").await).unwrap();
        assert_eq!(there["id"], json!(id));
        let conflict = json!({"end": "refused", "reason": "conflict"});
        let here_json = serde_json::to_value(&here).unwrap();
        let (r1_ran, r2_ran) = (there["ran"] == json!(true), success(&here));
        assert!(
            (r1_ran && here_json == conflict) || (r2_ran && there["end"] == conflict),
            "{id}: r1 {there} / r2 {here_json}"
        );
        ran_on[usize::from(r2_ran)] += 1;
    }
    writeln!(commands, "count").unwrap();
    commands.flush().unwrap();
    let count = probe_line(&mut lines, "COUNT ").await;
    assert_eq!(count, IDS.to_string(), "each id ran once, in r1's page");
    eprintln!(
        "{test}: {} ran through r1 directly, {} routed from r2",
        ran_on[0], ran_on[1]
    );
    assert!(
        ran_on.iter().all(|&n| n > 0),
        "both sides won some races: {ran_on:?}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// `kill -9` of the replica holding the tab while a routed call waits on
/// it: the requester answers it interrupted within the lease bound, the
/// page (reconnected to `r2`) takes the lease once it expired and new
/// calls run there; the restarted `r1` never completes the old call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_loses_its_tab_and_its_routed_call() {
    let Some(cluster) = PgCluster::require("a_killed_replica_loses_its_tab_and_its_routed_call")
    else {
        return;
    };
    let url = cluster.database("kill");
    let (mut child, _lines) = probe(&url, "hold").await;

    let shared = Shared::Postgres(url);
    let r2 = shared.replica("r2").await;
    r2.durable().start_run(run1()).await.unwrap();
    let call = tokio::spawn({
        let r2 = r2.clone();
        async move { r2.call(disable("held-kill"), None).await }
    });
    let store = r2.durable().store().clone();
    wait_for_route(&store, "held-kill", RouteState::Taken).await;
    // Dispatched to the page by r1 (its row written) and held there.
    wait_for_dispatch(&store, "held-kill").await;

    child.kill().expect("SIGKILL sent");
    let killed = Instant::now();
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_eq!(call.await.unwrap(), CallEnd::Interrupted);
    let waited = killed.elapsed();
    eprintln!("the routed call was answered interrupted {waited:?} after the kill");
    let bound = options().lease + options().renew_interval + 2 * options().check_interval;
    assert!(
        waited <= bound + Duration::from_secs(1),
        "answered after {waited:?}; bound {bound:?}"
    );
    let row = store.call("held-kill").await.unwrap().unwrap();
    assert_eq!(
        (row.owner.as_str(), row.state),
        ("r1", CallState::Dispatched)
    );

    // The tab reconnects to r2 and takes the expired lease.
    let s = Arc::new(session());
    let (_tab, _, _page) = page(&r2, &s, "conn-2", false).await;
    let end = r2.call(disable("after-kill"), None).await;
    assert!(success(&end), "{end:?}");
    assert_eq!(s.fx.executor.count(), 1, "only the new call ran");

    // r1 comes back: its outstanding call is interrupted, never completed.
    let r1 = shared.replica("r1").await;
    let row = store.call("held-kill").await.unwrap().unwrap();
    assert_eq!(row.state, CallState::Interrupted);
    assert_eq!(
        r1.call(disable("held-kill"), None).await,
        CallEnd::Refused {
            reason: Refusal::Conflict
        }
    );
}
