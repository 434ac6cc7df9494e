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

use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use host_support::{session, SessionFixture};
use serde_json::{json, Value};
use support::pg::PgCluster;
use support::{auth, devices_host};
use surface_runtime::host::{
    AgentRun, BrowserSurfaceOutcome, BrowserSurfaceProgress, BrowserToHostMessage, ToolCallRequest,
};
use surface_runtime::ConsumerKind;
use surface_store::replica::{CallEnd, Received, Refusal, Replica, ReplicaOptions, ReplicaTab};
use surface_store::wake::{LocalWakeups, PostgresWakeups, Wakeups};
use surface_store::{
    CallState, DurableHost, HostStore, MemoryStore, PostgresStore, PostgresStoreOptions, RouteState,
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
