//! A whole MCP agent turn on the devices console, with each official MCP
//! TypeScript SDK client (`tests/mcp-client/scenario-turn.mjs`): the v2
//! client (`@modelcontextprotocol/client` 2.4.0) pinned to 2026-07-28 and
//! the v1 client (`@modelcontextprotocol/sdk` 1.32.2) on the legacy lane
//! (2025-11-25). Each turn: `tools/list`; `devices__disable`, which waits
//! in the page for the user's confirmation (the client receives its
//! progress); `devices__purge` as a task — confirmed in the page too
//! (with progress), then held by the backend for a person's approval —
//! which a person approves **on the approver page, driven in Chromium**
//! (sign-in form, the Approve button of the row); the client polls the
//! task until it is `completed` and reads the result.
//!
//! The host runs in process on a temporary SQLite store, with the real
//! oRPC peer (`tests/orpc-peer`), the Leptos page built for wasm32 and
//! headless Chromium over WebDriver. The page gives the MCP run its token
//! as the console does ("Connect an MCP agent").
//!
//! Needs Chromium + ChromeDriver, Node.js with `tests/mcp-client/node_modules`,
//! the wasm32 target and wasm-bindgen (`scripts/test` installs them all).
//! Without them the tests print a skip notice — and fail when `CI=true`.

mod webdriver;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use agent_surface::bridge::{
    CallOptions, CapabilityClient, HttpOrpcClient, OrpcCapabilityClient, OrpcClient,
};
use devices_host::{page, peer::Peer, serve, Database, HostConfig, Running, PEER_USER_TOKEN};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use webdriver::{Driver, Session};

const WAIT: Duration = Duration::from_secs(30);
const APPROVER_SECRET: &str = "approver-secret-turns";
/// The progress a client receives while the page waits for the user, and
/// once the user confirmed.
const WAITING: &str = "Waiting for the user to confirm this call in the application.";
const CONFIRMED: &str = "The user confirmed; the call runs.";
const HELD: &str = "The backend holds this call until a person approves or rejects it.";
const APPROVED: &str = "Approved; the call is being resumed.";
const FINAL: &str = "A person decided and the call was resumed; the result is final.";

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
    std::process::Command::new(tool)
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

/// Tests run one at a time (each starts a browser).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One turn's world: peer, host, browser with the console open.
struct Stack {
    peer: Peer,
    host: Running,
    _driver: Driver,
    browser: Session,
    profile: PathBuf,
    shots: PathBuf,
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Whether everything the turn needs is installed (or `false` after a
/// skip notice; a failure under `CI=true`).
fn tools_present(test: &str) -> bool {
    let chromium = tool("CHROMIUM", "/usr/bin/chromium");
    let chromedriver = tool("CHROMEDRIVER", "/usr/bin/chromedriver");
    let missing = if !chromium.exists() || !chromedriver.exists() {
        "Chromium or ChromeDriver is missing: apt-get install -y chromium chromium-driver"
    } else if !available("node")
        || !mcp_client_dir()
            .join("node_modules/.package-lock.json")
            .exists()
    {
        "Node.js or tests/mcp-client/node_modules is missing (npm ci there)"
    } else if !available("wasm-bindgen") {
        "wasm-bindgen is missing (scripts/test installs it)"
    } else {
        return true;
    };
    unavailable(test, missing);
    false
}

/// Starts the peer, the host on a temporary SQLite store and Chromium; the
/// console is open, connected, with dev-2 selected.
async fn stack(test: &str) -> Option<Stack> {
    if !tools_present(test) {
        return None;
    }
    let built = tokio::task::spawn_blocking(built_page)
        .await
        .expect("page build task")
        .as_ref()
        .unwrap_or_else(|e| panic!("{test}: the page could not be built: {e}"));
    let peer = Peer::start().expect("the oRPC peer starts");
    let profile = page::target_dir()
        .join("browser-e2e")
        .join(format!("profile-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).unwrap();
    let mut config = HostConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        peer.rpc_url(),
        built.dir.clone(),
    );
    config.database = Database::Sqlite(profile.join("host.db"));
    config.approver_secret = APPROVER_SECRET.into();
    let host = serve(config).await.expect("the host starts");
    let driver =
        Driver::start(&tool("CHROMEDRIVER", "/usr/bin/chromedriver")).expect("chromedriver starts");
    let browser = driver
        .session_with(&tool("CHROMIUM", "/usr/bin/chromium"), &profile, &[])
        .await
        .expect("a Chromium session");
    let s = Stack {
        peer,
        host,
        _driver: driver,
        browser,
        profile,
        shots: page::target_dir().join("browser-e2e"),
    };
    s.browser.goto(&s.host.url()).await.unwrap();
    s.browser
        .wait_for_text("#agent-status", WAIT, |t| t == "Agent connected")
        .await
        .expect("the page connects to the agent host");
    s.browser.wait_for("#status-dev-2", WAIT).await.unwrap();
    s.browser.click("#select-dev-2").await.unwrap();
    s.browser
        .wait_for_text("#selection", WAIT, |t| t.starts_with("Selected: dev-2"))
        .await
        .unwrap();
    Some(s)
}

impl Stack {
    async fn shot(&self, name: &str) {
        let path = self.shots.join(format!("{name}.png"));
        self.browser.screenshot(&path).await.expect("screenshot");
    }

    /// The user clicks "Connect an MCP agent" (`POST /app/mcp-run` with the
    /// page's session cookie) and reads the run's token.
    async fn mcp_token(&self) -> String {
        self.browser.click("#mcp-connect").await.unwrap();
        let token = self
            .browser
            .wait_for_text("#mcp-token", WAIT, |t| t.len() == 64)
            .await
            .expect("the page shows the MCP run's token");
        let url = self.browser.wait_for("#mcp-url", WAIT).await.unwrap();
        assert_eq!(
            self.browser.text(&url).await.unwrap(),
            format!("{}mcp", self.host.url())
        );
        token
    }

    /// Waits for the page's confirmation of `procedure` on dev-2 and
    /// approves it.
    async fn confirm_in_page(&self, procedure: &str, shot: &str) {
        let title = format!("The agent wants to run {procedure}");
        self.browser
            .wait_for_text("#confirm-title", WAIT, |t| t == title)
            .await
            .unwrap_or_else(|e| panic!("the page asks to confirm {procedure}: {e}"));
        let input = self.browser.wait_for("#confirm-input", WAIT).await.unwrap();
        let input: Value = serde_json::from_str(&self.browser.text(&input).await.unwrap()).unwrap();
        assert_eq!(input, json!({"deviceIds": ["dev-2"]}));
        self.shot(shot).await;
        self.browser.click("#approve").await.unwrap();
    }

    /// A person opens the approver page in a new tab, signs in and approves
    /// `approval_id` there; the page shows the resumed outcome.
    async fn approve_on_approver_page(&self, approval_id: &str, shot: &str) {
        let console = self.browser.window().await.unwrap();
        let tab = self.browser.new_tab().await.unwrap();
        self.browser.switch_to(&tab).await.unwrap();
        self.browser
            .goto(&format!("{}approver", self.host.url()))
            .await
            .unwrap();
        self.browser
            .wait_for("#approver-secret", WAIT)
            .await
            .unwrap();
        self.browser
            .execute(
                "document.querySelector('#approver-secret').value = arguments[0];",
                json!([APPROVER_SECRET]),
            )
            .await
            .unwrap();
        self.browser.click("#approver-login").await.unwrap();
        self.browser
            .wait_for(&format!("#approval-{approval_id}"), WAIT)
            .await
            .unwrap_or_else(|e| panic!("the approver page lists {approval_id}: {e}"));
        self.shot(&format!("{shot}-pending")).await;
        self.browser
            .click(&format!("#approve-{approval_id}"))
            .await
            .unwrap();
        let resumed =
            format!("{approval_id}: Approved by approver and resumed: the server purged dev-2.");
        self.browser
            .wait_for_text("#approver-result", WAIT, |t| t == resumed)
            .await
            .expect("the approver sees the resumed outcome");
        self.shot(&format!("{shot}-decided")).await;
        self.browser.close_window().await.unwrap();
        self.browser.switch_to(&console).await.unwrap();
    }

    async fn server_ids(&self) -> Vec<String> {
        let client =
            HttpOrpcClient::new(self.peer.rpc_url()).with_header("authorization", PEER_USER_TOKEN);
        let out = client
            .call("devices.list", Some(json!({})), CallOptions::default())
            .await
            .expect("devices.list on the peer");
        out["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                format!(
                    "{}:{}",
                    d["id"].as_str().unwrap(),
                    d["status"].as_str().unwrap()
                )
            })
            .collect()
    }

    /// The gateway's status of `approval_id` (`consumed` once it resumed
    /// the call it held).
    async fn gateway_status(&self, approval_id: &str) -> String {
        let gateway = OrpcCapabilityClient::new(
            HttpOrpcClient::new(self.peer.rpc_url().replace("/rpc", "/gateway"))
                .with_header("authorization", PEER_USER_TOKEN),
        );
        let approval = gateway
            .get_approval(approval_id, CallOptions::default())
            .await
            .unwrap()
            .expect("the gateway knows the approval");
        approval.status.as_str().to_string()
    }
}

/// The scenario's process and its JSON lines, read as they come.
struct Scenario {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    seen: Vec<Value>,
}

impl Scenario {
    fn start(lane: &str, url: &str, token: &str) -> Scenario {
        let mut child = Command::new("node")
            .current_dir(mcp_client_dir())
            .args(["scenario-turn.mjs", lane, url, token])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Scenario {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line, which must be `step`'s.
    async fn next(&mut self, step: &str) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(90), self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no {step} line within 90 s; so far {:#?}", self.seen))
            .unwrap()
            .unwrap_or_else(|| panic!("the client ended before {step}; so far {:#?}", self.seen));
        let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        self.seen.push(value.clone());
        assert_eq!(value["step"], json!(step), "{:#?}", self.seen);
        value
    }

    async fn exit_success(mut self) {
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the client exits")
            .unwrap();
        assert!(status.success(), "{:#?}", self.seen);
    }
}

/// Asserts the progress a client received for a call the page held for
/// the user's confirmation: numbered 1, 2, …, the waiting message (again
/// every progress interval while the user decides), the confirmation last.
fn assert_progress(progress: &Value) {
    let progress = progress.as_array().expect("a progress list");
    assert!(progress.len() >= 2, "{progress:?}");
    for (n, report) in progress.iter().enumerate() {
        let message = if n + 1 == progress.len() {
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
}

/// The methods the client sent, consecutive repeats once.
fn sent_methods(wire: &Value) -> Vec<String> {
    let mut methods: Vec<String> = Vec::new();
    for message in wire.as_array().unwrap() {
        if let Some(method) = message["sent"]["method"].as_str() {
            if methods.last().map(String::as_str) != Some(method) {
                methods.push(method.to_string());
            }
        }
    }
    methods
}

/// What the turn's client saw up to its task result; the page
/// confirmations and the approver's decision are made meanwhile.
struct Seen {
    /// The host's id of the purge's approval: the task id.
    approval_id: String,
    connected: Value,
    disable: Value,
    task: Value,
    statuses: Vec<Value>,
    result: Value,
    wire: Value,
}

/// The host's id of the approval the backend named `backend` (the held
/// call's invocation id, the task id an MCP client sees).
async fn approval_of(s: &Stack, backend: &str) -> String {
    let named = s
        .host
        .durable()
        .store()
        .backend_approvals(backend, 2)
        .await
        .unwrap();
    assert_eq!(named.len(), 1, "one approval named {backend}");
    named[0].approval_id.clone()
}

async fn turn(s: &Stack, lane: &str, shots: &str) -> Seen {
    let token = s.mcp_token().await;
    let mut client = Scenario::start(lane, &format!("{}mcp", s.host.url()), &token);
    let connected = client.next("connected").await;
    let tools = client.next("tools").await;
    assert_eq!(
        tools["names"],
        json!([
            "devices__disable",
            "devices__list",
            "devices__purge",
            "devices__rename",
            "view__devices__table__clearSelection",
            "view__devices__table__filter",
            "view__devices__table__readState",
            "view__devices__table__select"
        ])
    );
    s.confirm_in_page("devices.disable", &format!("{shots}-1-confirm-disable"))
        .await;
    let disable = client.next("disable").await;
    s.confirm_in_page("devices.purge", &format!("{shots}-2-confirm-purge"))
        .await;
    let task = client.next("task").await;
    let approval_id = approval_of(s, "appr-1").await;
    // The client polled once and saw the task working before anyone decided.
    let working = client.next("status").await;
    assert_eq!(
        working,
        json!({"step": "status", "taskId": approval_id, "status": "working", "statusMessage": HELD})
    );
    assert_eq!(
        s.server_ids().await,
        [
            "dev-1:active",
            "dev-2:disabled",
            "dev-3:disabled",
            "dev-locked:active"
        ]
    );
    s.approve_on_approver_page(&approval_id, &format!("{shots}-3-approver"))
        .await;
    let mut statuses = vec![working];
    let result = loop {
        let line = client.lines.next_line();
        let line = tokio::time::timeout(Duration::from_secs(90), line)
            .await
            .expect("the client reads the result within 90 s")
            .unwrap()
            .expect("the client prints the result");
        let value: Value = serde_json::from_str(&line).unwrap();
        client.seen.push(value.clone());
        match value["step"].as_str() {
            Some("status") => statuses.push(value),
            Some("result") => break value,
            _ => panic!("{:#?}", client.seen),
        }
    };
    let wire = client.next("wire").await;
    client.exit_success().await;
    Seen {
        approval_id,
        connected,
        disable,
        task,
        statuses,
        result,
        wire,
    }
}

/// After the turn: the peer purged dev-2 once (its approval consumed by the
/// one resume), and the host recorded the outcome once.
async fn assert_purged_once(s: &Stack) {
    assert_eq!(
        s.server_ids().await,
        ["dev-1:active", "dev-3:disabled", "dev-locked:active"]
    );
    assert_eq!(s.gateway_status("appr-1").await, "consumed");
    let pending = s.host.durable().pending_approvals(10).await.unwrap();
    assert!(pending.is_empty(), "{pending:?}");
    let approval = s
        .host
        .durable()
        .store()
        .approval(&approval_of(s, "appr-1").await)
        .await
        .unwrap()
        .expect("the host recorded appr-1");
    // The MCP run the console started: `run-` and 32 hex digits.
    let hex = approval.run_id.strip_prefix("run-").unwrap_or_default();
    assert!(
        hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        approval.run_id
    );
    assert!(approval.resumed_at_ms.is_some());
    let approvals = s
        .host
        .durable()
        .run_approvals(&approval.run_id, 10)
        .await
        .unwrap();
    assert_eq!(approvals.len(), 1, "one approval for the run");
    let outcome: Value = serde_json::from_str(approval.outcome.as_deref().unwrap()).unwrap();
    assert_eq!(outcome["status"], json!("ok"));
    assert_eq!(outcome["capabilityId"], json!("domain:devices.purge"));
    assert_eq!(outcome["output"], json!({"purged": ["dev-2"]}));
}

/// The statuses after the first: `working` while the decision is resumed
/// (if the client polled then), then `completed`.
fn assert_statuses_after_decision(statuses: &[Value], task_id: &str) {
    let last = statuses.last().unwrap();
    assert_eq!(
        last,
        &json!({"step": "status", "taskId": task_id, "status": "completed", "statusMessage": FINAL})
    );
    for between in &statuses[1..statuses.len() - 1] {
        assert_eq!(
            between,
            &json!({"step": "status", "taskId": task_id, "status": "working", "statusMessage": APPROVED})
        );
    }
}

fn without_times(task: &Value) -> Value {
    let mut task = task.clone();
    for at in ["createdAt", "lastUpdatedAt"] {
        let stamp = task[at].take();
        let stamp = stamp.as_str().unwrap_or_else(|| panic!("{at} in {task}"));
        assert!(stamp.ends_with('Z') && stamp.len() == 24, "{stamp}");
    }
    task.as_object_mut()
        .unwrap()
        .retain(|k, _| k != "createdAt" && k != "lastUpdatedAt");
    task
}

fn disabled_dev_2() -> Value {
    json!({"isError": false, "text": ["{\"disabled\":[\"dev-2\"]}"],
           "structuredContent": {"disabled": ["dev-2"]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ts_sdk_v2_pinned_to_2026_07_28_runs_a_whole_turn_with_a_purge_approved_on_the_approver_page(
) {
    let _serial = SERIAL.lock().await;
    let test = "ts_sdk_v2_turn";
    let Some(s) = stack(test).await else {
        return;
    };
    let seen = turn(&s, "v2", "turn-v2").await;
    assert_eq!(
        seen.connected,
        json!({"step": "connected", "sdk": "@modelcontextprotocol/client", "sdkVersion": "2.4.0",
               "protocolVersion": "2026-07-28", "tasks": {}})
    );
    assert_progress(&seen.disable["progress"]);
    assert_eq!(seen.disable["result"], disabled_dev_2());
    assert_progress(&seen.task["progress"]);
    // SDK 2.4.0 has no runtime for the tasks extension: `callTool` rejects
    // the task answer; the scenario reads the task from the wire.
    assert_eq!(seen.task["callToolError"], json!("UNSUPPORTED_RESULT_TYPE"));
    assert_eq!(
        without_times(&seen.task["task"]),
        json!({"resultType": "task", "taskId": seen.approval_id, "status": "working",
               "statusMessage": HELD, "ttlMs": null, "pollIntervalMs": 2000})
    );
    assert_statuses_after_decision(&seen.statuses, &seen.approval_id);
    assert_eq!(
        seen.result,
        json!({"step": "result", "result": {"isError": false,
            "text": ["{\"purged\":[\"dev-2\"]}"], "structuredContent": {"purged": ["dev-2"]}}})
    );
    assert_eq!(
        sent_methods(&seen.wire["messages"]),
        ["tools/list", "tools/call", "tasks/get"]
    );
    assert_purged_once(&s).await;
    eprintln!("{}", serde_json::to_string_pretty(&seen.wire).unwrap());
    s.browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ts_sdk_v1_on_the_legacy_lane_runs_a_whole_turn_with_a_purge_approved_on_the_approver_page()
{
    let _serial = SERIAL.lock().await;
    let test = "ts_sdk_v1_turn";
    let Some(s) = stack(test).await else {
        return;
    };
    let seen = turn(&s, "v1", "turn-v1").await;
    assert_eq!(
        seen.connected,
        json!({"step": "connected", "sdk": "@modelcontextprotocol/sdk", "sdkVersion": "1.32.2",
               "protocolVersion": "2025-11-25",
               "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}})
    );
    assert_progress(&seen.disable["progress"]);
    assert_eq!(seen.disable["result"], disabled_dev_2());
    // The task-augmented purge waited for the page's confirmation too, and
    // its progress reached the client before the task.
    assert_progress(&seen.task["progress"]);
    assert_eq!(
        without_times(&seen.task["task"]),
        json!({"taskId": seen.approval_id, "status": "working", "statusMessage": HELD,
               "ttl": null, "pollInterval": 2000})
    );
    assert_statuses_after_decision(&seen.statuses, &seen.approval_id);
    assert_eq!(
        seen.result,
        json!({"step": "result", "result": {"isError": false,
            "text": ["{\"purged\":[\"dev-2\"]}"], "structuredContent": {"purged": ["dev-2"]},
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": seen.approval_id}}}})
    );
    assert_eq!(
        sent_methods(&seen.wire["messages"]),
        ["tools/list", "tools/call", "tasks/get", "tasks/result"]
    );
    assert_purged_once(&s).await;
    eprintln!("{}", serde_json::to_string_pretty(&seen.wire).unwrap());
    s.browser.quit().await;
}
