//! Two replicas of the devices host (`docs/host.md`, "Replicas"), as real
//! processes (`devices-host --database postgres://… --replica NAME`) on
//! one database of a throwaway PostgreSQL 15 cluster, with the real oRPC
//! peer, the page in headless Chromium connected to replica `r1`, and the
//! official MCP TypeScript SDK client (`tests/mcp-client`) connected to
//! replica `r2` — or to both, in turn, within one MCP session.
//!
//! Needs PostgreSQL, Chromium + ChromeDriver, Node.js (with
//! `tests/mcp-client/node_modules`), the wasm32 target and wasm-bindgen
//! (`scripts/test` installs them all). Without them the tests print a skip
//! notice — and fail when `CI=true`.

#[path = "../../../surface-host/tests/support/pg.rs"]
mod pg;
mod webdriver;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use agent_surface::bridge::{CallOptions, HttpOrpcClient, OrpcClient};
use agent_surface::store::{CallState, HostStore, PostgresStore, PostgresStoreOptions, RouteState};
use devices_host::{page, peer::Peer, PEER_USER_TOKEN};
use pg::PgCluster;
use serde_json::{json, Value};
use webdriver::{Driver, Session};

const WAIT: Duration = Duration::from_secs(30);
/// The progress messages an MCP client receives while the page waits for
/// the user, and once the user confirmed.
const WAITING: &str = "Waiting for the user to confirm this call in the application.";
const CONFIRMED: &str = "The user confirmed; the call runs.";
/// What the MCP client reads for a call interrupted by a lost replica.
const INTERRUPTED: &str = "EXECUTION_FAILED: The application's page disconnected before answering; the call may or may not have taken effect. Do not retry this call; tell the user what happened.";

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips loudly, or fails under CI.
fn unavailable(test: &str, why: &str) {
    if ci() {
        panic!("{test} cannot run (CI=true makes this a failure): {why}");
    }
    eprintln!("\n!!! SKIPPED {test}: {why}\n!!! Run scripts/test (it installs everything); with CI=true this fails.\n");
}

fn tool(env: &str, default: &str) -> PathBuf {
    std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

fn available(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn mcp_client_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp-client")
}

fn built_page() -> &'static Result<page::Built, String> {
    static PAGE: OnceLock<Result<page::Built, String>> = OnceLock::new();
    PAGE.get_or_init(page::build)
}

/// Tests run one at a time (each starts a browser and two hosts).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One `devices-host` replica process.
struct HostProcess {
    child: Child,
    url: String,
}

impl HostProcess {
    fn start(name: &str, database: &str, backend: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_devices-host"))
            .args(["--port", "0", "--no-build", "--replica", name])
            .args(["--database", database, "--backend", backend])
            .args(["--approver-secret", "replicas-e2e"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("devices-host starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("devices console: ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|e| panic!("replica {name} did not print its URL: {e}"));
        Self { child, url }
    }

    fn mcp(&self) -> String {
        format!("{}mcp", self.url)
    }

    /// `kill -9`, and the exit status says so.
    fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL sent");
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "the replica died of SIGKILL");
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The world of one test: PostgreSQL, peer, browser.
struct World {
    _cluster: PgCluster,
    database: String,
    peer: Peer,
    _driver: Driver,
    browser: Session,
    profile: PathBuf,
    shots: PathBuf,
}

async fn world(test: &str) -> Option<World> {
    let chromium = tool("CHROMIUM", "/usr/bin/chromium");
    let chromedriver = tool("CHROMEDRIVER", "/usr/bin/chromedriver");
    if !chromium.exists() || !chromedriver.exists() {
        unavailable(
            test,
            "Chromium or ChromeDriver is missing: apt-get install -y chromium chromium-driver",
        );
        return None;
    }
    if !available("node") || !mcp_client_dir().join("node_modules").exists() {
        unavailable(
            test,
            "Node.js or tests/mcp-client/node_modules is missing (npm ci there)",
        );
        return None;
    }
    if !available("wasm-bindgen") {
        unavailable(test, "wasm-bindgen is missing (scripts/test installs it)");
        return None;
    }
    let cluster = PgCluster::require(test)?;
    tokio::task::spawn_blocking(built_page)
        .await
        .expect("page build task")
        .as_ref()
        .unwrap_or_else(|e| panic!("{test}: the page could not be built: {e}"));
    let database = cluster.database("replicas");
    let peer = Peer::start().expect("the oRPC peer starts");
    let profile = page::target_dir()
        .join("browser-e2e")
        .join(format!("profile-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).unwrap();
    let driver = Driver::start(&chromedriver).expect("chromedriver starts");
    let browser = driver
        .session_with(&chromium, &profile, &[])
        .await
        .expect("a Chromium session");
    Some(World {
        _cluster: cluster,
        database,
        peer,
        _driver: driver,
        browser,
        profile,
        shots: page::target_dir().join("browser-e2e"),
    })
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl World {
    fn replica(&self, name: &str) -> HostProcess {
        HostProcess::start(name, &self.database, &self.peer.rpc_url())
    }

    async fn store(&self) -> PostgresStore {
        PostgresStore::open(PostgresStoreOptions::new(self.database.clone()))
            .await
            .expect("the test's own store handle")
    }

    async fn shot(&self, name: &str) {
        let path = self.shots.join(format!("{name}.png"));
        self.browser.screenshot(&path).await.expect("screenshot");
    }

    /// Opens the console on `host`, waits until it is connected, selects
    /// `ids`.
    async fn open_page(&self, host: &HostProcess, ids: &[&str]) {
        self.browser.goto(&host.url).await.unwrap();
        self.browser
            .wait_for_text("#agent-status", WAIT, |t| t == "Agent connected")
            .await
            .expect("the page connects to its replica");
        self.browser.wait_for("#status-dev-1", WAIT).await.unwrap();
        for id in ids {
            self.browser.click(&format!("#select-{id}")).await.unwrap();
        }
        let expected = format!("Selected: {}", ids.join(", "));
        self.browser
            .wait_for_text("#selection", WAIT, |t| t.starts_with(&expected))
            .await
            .unwrap();
    }

    /// A run on the page's tab and its MCP bearer token (`POST
    /// /app/mcp-run` from the page, with its session cookie).
    /// The user clicks "Connect an MCP agent" and reads the token.
    async fn mcp_token(&self, host: &HostProcess, shot: &str) -> String {
        // A fresh answer each time: wait for a token other than the last.
        let last = match self.browser.find("#mcp-token").await.unwrap() {
            Some(element) => self.browser.text(&element).await.unwrap(),
            None => String::new(),
        };
        self.browser.click("#mcp-connect").await.unwrap();
        let token = self
            .browser
            .wait_for_text("#mcp-token", WAIT, |t| t.len() == 64 && t != last)
            .await
            .expect("the page shows the MCP run's token");
        let url = self.browser.wait_for("#mcp-url", WAIT).await.unwrap();
        assert_eq!(self.browser.text(&url).await.unwrap(), host.mcp());
        self.shot(shot).await;
        token
    }

    /// The statuses the backend itself reports.
    async fn server_statuses(&self) -> Value {
        let client =
            HttpOrpcClient::new(self.peer.rpc_url()).with_header("authorization", PEER_USER_TOKEN);
        let out = client
            .call("devices.list", Some(json!({})), CallOptions::default())
            .await
            .expect("devices.list on the peer");
        let mut statuses = serde_json::Map::new();
        for d in out["devices"].as_array().unwrap() {
            statuses.insert(d["id"].as_str().unwrap().into(), d["status"].clone());
        }
        Value::Object(statuses)
    }

    /// Waits for the page's confirmation of a call and approves it.
    async fn approve_in_page(&self, shot: &str) {
        self.browser
            .wait_for_text("#confirm-input", WAIT, |t| !t.is_empty())
            .await
            .expect("the page shows the call's confirmation");
        self.shot(shot).await;
        self.browser.click("#approve").await.unwrap();
    }
}

/// The SDK client's `replicas` scenario on `urls` (in turn), in the
/// background.
fn mcp_client(urls: &[String], token: &str) -> tokio::task::JoinHandle<Value> {
    let urls = urls.join(",");
    let token = token.to_string();
    tokio::task::spawn_blocking(move || {
        let out = Command::new("node")
            .current_dir(mcp_client_dir())
            .args(["scenario.mjs", "replicas", &urls, &token])
            .output()
            .expect("node runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "the MCP client failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{stdout}: {e}"))
    })
}

/// Asserts the progress a client received for a call the page held for
/// the user's confirmation: numbered 1, 2, …, the waiting message first
/// (then again every progress interval while the user decides) and, when
/// `confirmed`, the confirmation last.
fn assert_progress(progress: &Value, confirmed: bool) {
    let progress = progress.as_array().expect("a progress list");
    assert!(!progress.is_empty(), "no progress reached the client");
    for (n, report) in progress.iter().enumerate() {
        let last = n + 1 == progress.len();
        let message = if confirmed && last {
            CONFIRMED
        } else {
            WAITING
        };
        assert_eq!(
            report,
            &json!({"progress": n + 1, "message": message}),
            "{progress:?}"
        );
    }
    if confirmed {
        assert!(progress.len() >= 2, "{progress:?}");
    }
}

fn statuses(disabled: &[&str]) -> Value {
    let mut map = serde_json::Map::new();
    for id in ["dev-1", "dev-2", "dev-3", "dev-locked"] {
        let status = if id == "dev-3" || disabled.contains(&id) {
            "disabled"
        } else {
            "active"
        };
        map.insert(id.into(), json!(status));
    }
    Value::Object(map)
}

/// The one routed call of a replica pair, from the store.
async fn routed(store: &PostgresStore, holder: &str, state: RouteState) -> Vec<String> {
    store
        .routes_for_holder(holder, state, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|r| format!("{}>{}", r.requester, r.holder))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reaching_the_other_replica_runs_once_on_the_tabs_replica() {
    let _serial = SERIAL.lock().await;
    let test = "a_call_reaching_the_other_replica_runs_once_on_the_tabs_replica";
    let Some(w) = world(test).await else {
        return;
    };
    let r1 = w.replica("r1");
    let r2 = w.replica("r2");
    w.open_page(&r1, &["dev-2"]).await;
    let token = w.mcp_token(&r1, "replicas-0-mcp-token").await;

    // The client talks to r2 only; the tab's socket is on r1.
    let client = mcp_client(&[r2.mcp()], &token);
    w.approve_in_page("replicas-1-confirm-on-r1").await;
    let out = client.await.unwrap();
    assert_eq!(out["protocolVersion"], json!("2025-11-25"));
    assert_eq!(out["session"], json!(true));
    assert!(out["tools"]
        .as_array()
        .unwrap()
        .contains(&json!("devices__disable")));
    assert_eq!(
        out["disable"],
        json!({"isError": false, "text": ["{\"disabled\":[\"dev-2\"]}"],
               "structuredContent": {"disabled": ["dev-2"]}})
    );
    // The page's progress, relayed from r1 through the store to r2.
    assert_progress(&out["progress"], true);
    assert_eq!(out["listed"], statuses(&["dev-2"]));
    assert_eq!(w.server_statuses().await, statuses(&["dev-2"]));
    let store = w.store().await;
    // One routed call r2 → r1 for the disable (the list went the same
    // way): each answered once, by r1's one dispatch.
    let answered = routed(&store, "r1", RouteState::Answered).await;
    assert_eq!(answered, vec!["r2>r1", "r2>r1"]);
    for route in store
        .routes_for_holder("r1", RouteState::Answered, 0, 10)
        .await
        .unwrap()
    {
        let call = store.call(&route.invocation_id).await.unwrap().unwrap();
        assert_eq!(
            (call.owner.as_str(), call.state),
            ("r1", CallState::Completed)
        );
    }

    // A second run whose requests alternate between the replicas within
    // one MCP session: no sticky routing.
    w.open_page(&r1, &["dev-1"]).await;
    let token = w.mcp_token(&r1, "replicas-2-mcp-token").await;
    let client = mcp_client(&[r1.mcp(), r2.mcp()], &token);
    w.approve_in_page("replicas-2-confirm-alternating").await;
    let out = client.await.unwrap();
    assert_eq!(out["session"], json!(true));
    assert_eq!(
        out["disable"]["structuredContent"],
        json!({"disabled": ["dev-1"]})
    );
    assert_progress(&out["progress"], true);
    let per_url = out["requestsPerUrl"].as_array().unwrap();
    assert!(
        per_url.iter().all(|n| n.as_u64().unwrap() >= 2),
        "both replicas served the session: {per_url:?}"
    );
    assert_eq!(w.server_statuses().await, statuses(&["dev-1", "dev-2"]));
    w.browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_interrupts_its_tabs_call_and_the_tab_moves_on() {
    let _serial = SERIAL.lock().await;
    let test = "a_killed_replica_interrupts_its_tabs_call_and_the_tab_moves_on";
    let Some(w) = world(test).await else {
        return;
    };
    let mut r1 = w.replica("r1");
    let r2 = w.replica("r2");
    w.open_page(&r1, &["dev-2"]).await;
    let token = w.mcp_token(&r1, "replicas-3-mcp-token").await;
    let client = mcp_client(&[r2.mcp()], &token);
    w.browser
        .wait_for_text("#confirm-input", WAIT, |t| !t.is_empty())
        .await
        .expect("the page shows the call's confirmation");
    w.shot("replicas-4-confirm-before-kill").await;

    // r1 dies while the call waits for the user.
    r1.kill9();
    let killed = Instant::now();
    let out = client.await.unwrap();
    let waited = killed.elapsed();
    eprintln!("the MCP client got its answer {waited:?} after the kill");
    assert_eq!(out["disable"]["isError"], json!(true));
    assert_eq!(out["disable"]["text"][0], json!(INTERRUPTED));
    // r1 relayed that the page waits for the user before it died.
    assert_progress(&out["progress"], false);
    // Lease 10 s + a renewal 3 s + a check 1 s, plus the client's list.
    assert!(
        waited < Duration::from_secs(20),
        "answered after {waited:?}"
    );
    assert_eq!(
        w.server_statuses().await,
        statuses(&[]),
        "nothing was disabled"
    );
    let store = w.store().await;
    assert_eq!(
        routed(&store, "r1", RouteState::Interrupted).await,
        vec!["r2>r1"]
    );

    // The tab reconnects to r2 (the page reloaded there); new calls work.
    w.open_page(&r2, &["dev-2"]).await;
    let token = w.mcp_token(&r2, "replicas-5-mcp-token-on-r2").await;
    let client = mcp_client(&[r2.mcp()], &token);
    w.approve_in_page("replicas-6-confirm-on-r2").await;
    let out = client.await.unwrap();
    assert_eq!(
        out["disable"]["structuredContent"],
        json!({"disabled": ["dev-2"]})
    );
    assert_eq!(w.server_statuses().await, statuses(&["dev-2"]));

    // r1 comes back: the call it held is interrupted, never completed.
    let interrupted = store
        .routes_for_holder("r1", RouteState::Interrupted, 0, 10)
        .await
        .unwrap();
    let id = &interrupted[0].invocation_id;
    let _r1 = w.replica("r1");
    let call = store.call(id).await.unwrap().unwrap();
    assert_eq!(
        (call.owner.as_str(), call.state),
        ("r1", CallState::Interrupted)
    );
    w.browser.quit().await;
}
