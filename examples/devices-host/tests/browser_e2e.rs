//! The devices console end to end in headless Chromium: the real oRPC peer
//! (`tests/orpc-peer`), the agent host (in process), the Leptos page built
//! for wasm32, and Debian's `chromium` driven over WebDriver
//! (`chromedriver`). Each test starts its own peer, host and browser.
//!
//! Screenshots of each step go to `target/browser-e2e/*.png`.
//!
//! Needs Chromium + ChromeDriver (`/usr/bin/chromium`,
//! `/usr/bin/chromedriver`, or `CHROMIUM` / `CHROMEDRIVER`), Node.js, the
//! `wasm32-unknown-unknown` target and `wasm-bindgen` (`scripts/test`
//! installs them all). Without them the tests print a skip notice — and
//! fail when `CI=true`.

mod webdriver;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use agent_surface::bridge::{CallOptions, HttpOrpcClient, OrpcClient};
use agent_surface::host::replica::CallEnd;
use agent_surface::host::{
    AgentRun, BrowserReference, BrowserSurfaceOutcome, HostTool, ToolCallRequest,
};
use agent_surface::ViewCapabilityDescriptor;
use devices_host::{page, peer::Peer, serve, Database, HostConfig, Running, PEER_USER_TOKEN};
use serde_json::{json, Value};
use webdriver::{Driver, Session};

const WAIT: Duration = Duration::from_secs(20);

/// What the approver types on `/approver` in these tests.
const APPROVER_SECRET: &str = "approver-secret-e2e";

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips loudly, or fails under CI.
fn unavailable(test: &str, why: &str) {
    if ci() {
        panic!("{test} cannot run (CI=true makes this a failure): {why}");
    }
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "\n!!! SKIPPED {test}: {why}\n!!! Run scripts/test (it installs everything); with CI=true this fails.\n"
    );
}

fn tool(env: &str, default: &str) -> PathBuf {
    std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

fn node_available() -> bool {
    available("node")
}

fn available(tool: &str) -> bool {
    std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds the page once per test process.
fn built_page() -> &'static Result<page::Built, String> {
    static PAGE: OnceLock<Result<page::Built, String>> = OnceLock::new();
    PAGE.get_or_init(page::build)
}

/// One test's world: peer, host, chromedriver, browser.
struct Stack {
    peer: Peer,
    host: Running,
    config: HostConfig,
    _driver: Driver,
    browser: Session,
    profile: PathBuf,
    shots: PathBuf,
}

/// Tests run one at a time (each starts a browser; the machine is small).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn stack(test: &str) -> Option<Stack> {
    stack_with(test, &[]).await
}

/// [`stack`] with extra Chromium flags.
async fn stack_with(test: &str, flags: &[&str]) -> Option<Stack> {
    let chromium = tool("CHROMIUM", "/usr/bin/chromium");
    let chromedriver = tool("CHROMEDRIVER", "/usr/bin/chromedriver");
    if !chromium.exists() || !chromedriver.exists() {
        unavailable(
            test,
            &format!(
                "Chromium ({}) or ChromeDriver ({}) is missing: apt-get install -y chromium chromium-driver",
                chromium.display(),
                chromedriver.display()
            ),
        );
        return None;
    }
    if !node_available() {
        unavailable(
            test,
            "Node.js is missing (the oRPC peer needs Node.js >= 20)",
        );
        return None;
    }
    if !available("wasm-bindgen") {
        unavailable(
            test,
            "wasm-bindgen is missing: cargo install wasm-bindgen-cli --version <the wasm-bindgen version in Cargo.lock> (scripts/test does it)",
        );
        return None;
    }
    // A missing tool is a skip outside CI; a page that does not build is
    // a failure everywhere (it is the project's own code).
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
    // The host store is a SQLite file beside the profile, so a test can
    // restart the host on it.
    config.database = Database::Sqlite(profile.join("host.db"));
    config.approver_secret = APPROVER_SECRET.into();
    let host = serve(config.clone()).await.expect("the host starts");
    config.bind = host.addr;
    let driver = Driver::start(&chromedriver).expect("chromedriver starts");
    let browser = driver
        .session_with(&chromium, &profile, flags)
        .await
        .expect("a Chromium session");
    browser.goto(&host.url()).await.unwrap();
    browser
        .wait_for_text("#agent-status", WAIT, |t| t == "Agent connected")
        .await
        .expect("the page connects to the agent host");
    browser
        .wait_for("#status-dev-1", WAIT)
        .await
        .expect("the devices table loads from the oRPC peer");
    Some(Stack {
        peer,
        host,
        config,
        _driver: driver,
        browser,
        profile,
        shots: page::target_dir().join("browser-e2e"),
    })
}

impl Stack {
    async fn shot(&self, name: &str) {
        let path = self.shots.join(format!("{name}.png"));
        self.browser.screenshot(&path).await.expect("screenshot");
    }

    /// The statuses the backend itself reports, by id.
    async fn server_statuses(&self) -> Vec<(String, String)> {
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
                (
                    d["id"].as_str().unwrap().to_string(),
                    d["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    async fn table_status(&self, id: &str) -> String {
        let element = self
            .browser
            .wait_for(&format!("#status-{id}"), WAIT)
            .await
            .unwrap();
        self.browser.text(&element).await.unwrap()
    }

    async fn wait_table_status(&self, id: &str, status: &str) {
        self.browser
            .wait_for_text(&format!("#status-{id}"), WAIT, |t| t == status)
            .await
            .unwrap_or_else(|e| panic!("{id} never shown {status}: {e}"));
    }

    async fn select(&self, ids: &[&str]) {
        for id in ids {
            self.browser.click(&format!("#select-{id}")).await.unwrap();
        }
        let expected = format!("Selected: {}", ids.join(", "));
        self.browser
            .wait_for_text("#selection", WAIT, |t| t.starts_with(&expected))
            .await
            .unwrap();
    }

    /// Clicks "Ask the agent…" and waits for the dialog; returns the
    /// effective input it shows.
    async fn start_turn_until_confirmation(&self, button: &str) -> Value {
        self.browser.click(button).await.unwrap();
        let text = self
            .browser
            .wait_for_text("#confirm-input", WAIT, |t| !t.is_empty())
            .await
            .expect("the page shows a confirmation");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    async fn report(&self) -> String {
        self.browser
            .wait_for_text("#turn-report", WAIT, |t| !t.is_empty())
            .await
            .expect("the page shows the turn's report")
    }

    async fn activity(&self) -> String {
        let element = self.browser.wait_for("#activity", WAIT).await.unwrap();
        self.browser.text(&element).await.unwrap()
    }

    async fn finish(self) {
        self.browser.quit().await;
    }
}

impl Drop for Stack {
    /// Also on a failed assertion: the Chromium profile goes away.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn seed_with(disabled: &[&str]) -> Vec<(String, String)> {
    ["dev-1", "dev-2", "dev-3", "dev-locked"]
        .iter()
        .map(|id| {
            let status = if *id == "dev-3" || disabled.contains(id) {
                "disabled"
            } else {
                "active"
            };
            (id.to_string(), status.to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_the_confirmation_disables_exactly_the_selected_devices() {
    let _serial = SERIAL.lock().await;
    let started = Instant::now();
    let Some(s) = stack("approving_the_confirmation_disables_exactly_the_selected_devices").await
    else {
        return;
    };
    s.select(&["dev-1", "dev-2"]).await;
    s.shot("01-selection").await;
    let input = s.start_turn_until_confirmation("#start-turn").await;
    assert_eq!(input, json!({"deviceIds": ["dev-1", "dev-2"]}));
    // What the call does (the manifest's description) above the input.
    let description = s
        .browser
        .wait_for("#confirm-description", WAIT)
        .await
        .unwrap();
    assert_eq!(
        s.browser.text(&description).await.unwrap(),
        "Disable devices"
    );
    let title = s.browser.wait_for("#confirm-title", WAIT).await.unwrap();
    assert_eq!(
        s.browser.text(&title).await.unwrap(),
        "The agent wants to run devices.disable"
    );
    s.shot("02-confirmation").await;
    // Nothing ran yet: the call waits for the user.
    assert_eq!(s.server_statuses().await, seed_with(&[]));
    s.browser.click("#approve").await.unwrap();
    let report = s.report().await;
    assert_eq!(
        report,
        "Agent turn: Success: devices.disable ran; the server disabled dev-1, dev-2."
    );
    s.wait_table_status("dev-1", "disabled").await;
    s.wait_table_status("dev-2", "disabled").await;
    assert_eq!(s.table_status("dev-locked").await, "active");
    assert_eq!(s.server_statuses().await, seed_with(&["dev-1", "dev-2"]));
    assert!(
        s.activity().await.contains("Done: disabled dev-1, dev-2."),
        "{}",
        s.activity().await
    );
    s.shot("03-result").await;
    let reports = s.host.reports();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].steps[0].action, "discover");
    let disable = reports[0].steps[0]
        .outcome
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["capabilityId"] == "domain:devices.disable")
        .cloned()
        .expect("devices.disable discovered");
    assert_eq!(disable["presentation"], "browser");
    assert_eq!(
        disable["references"][0]["boundFields"],
        json!([{"path": "deviceIds", "locked": true}])
    );
    assert_eq!(reports[0].steps[1].outcome["input"], json!({}));
    s.finish().await;
    eprintln!("e2e approve: {:.1} s", started.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_the_confirmation_leaves_the_devices_active() {
    let _serial = SERIAL.lock().await;
    let Some(s) = stack("rejecting_the_confirmation_leaves_the_devices_active").await else {
        return;
    };
    s.select(&["dev-1", "dev-2"]).await;
    let input = s.start_turn_until_confirmation("#start-turn").await;
    assert_eq!(input, json!({"deviceIds": ["dev-1", "dev-2"]}));
    s.browser.click("#reject").await.unwrap();
    let report = s.report().await;
    assert!(
        report.starts_with("Agent turn: Not done: CONFIRMATION_INVALID (denied) — The user declined this action. Do not retry; respect the decision."),
        "{report}"
    );
    assert!(s
        .activity()
        .await
        .contains("You declined it; nothing was done."));
    assert!(s.browser.find("#confirm-dialog").await.unwrap().is_none());
    assert_eq!(s.table_status("dev-1").await, "active");
    assert_eq!(s.table_status("dev-2").await, "active");
    assert_eq!(s.server_statuses().await, seed_with(&[]));
    s.shot("04-rejected").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selection_change_after_discovery_makes_the_old_confirmation_a_different_call() {
    let _serial = SERIAL.lock().await;
    let Some(s) =
        stack("a_selection_change_after_discovery_makes_the_old_confirmation_a_different_call")
            .await
    else {
        return;
    };
    s.select(&["dev-1", "dev-2"]).await;
    let input = s.start_turn_until_confirmation("#start-turn").await;
    assert_eq!(input, json!({"deviceIds": ["dev-1", "dev-2"]}));
    // The user adds dev-3 while the confirmation is open, then approves.
    s.browser.click("#select-dev-3").await.unwrap();
    s.browser
        .wait_for_text("#selection", WAIT, |t| {
            t.starts_with("Selected: dev-1, dev-2, dev-3")
        })
        .await
        .unwrap();
    s.shot("05-selection-changed").await;
    s.browser.click("#approve").await.unwrap();
    let report = s.report().await;
    assert!(
        report.starts_with("Agent turn: Not done: CONFIRMATION_INVALID (mismatch) — The confirmation does not match this exact invocation."),
        "{report}"
    );
    assert!(
        s.activity()
            .await
            .contains("Your approval does not match this call: the selection changed after the agent asked, or the approval was for another call, so nothing was done."),
        "{}",
        s.activity().await
    );
    assert_eq!(s.server_statuses().await, seed_with(&[]));
    s.shot("06-different-call").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_tab_aborts_the_pending_call_and_the_host_removes_its_tools() {
    let _serial = SERIAL.lock().await;
    let Some(s) =
        stack("closing_the_tab_aborts_the_pending_call_and_the_host_removes_its_tools").await
    else {
        return;
    };
    s.select(&["dev-1"]).await;
    let input = s.start_turn_until_confirmation("#start-turn").await;
    assert_eq!(input, json!({"deviceIds": ["dev-1"]}));
    let sessions = s.host.sessions();
    assert_eq!(sessions.len(), 1);
    let tab = sessions[0]
        .tab_id
        .clone()
        .expect("the tab announced itself");
    assert!(s.host.host().has_live_surface(&tab));
    assert_eq!(s.host.host().outstanding().len(), 1, "the call is pending");
    s.shot("07-pending-before-close").await;
    // Keep the browser alive in another tab, close the page's tab.
    let page_tab = s.browser.window().await.unwrap();
    let other = s.browser.new_tab().await.unwrap();
    s.browser.switch_to(&page_tab).await.unwrap();
    s.browser.close_window().await.unwrap();
    s.browser.switch_to(&other).await.unwrap();
    let reports = s.host.wait_for_reports(1, WAIT).await;
    assert_eq!(reports.len(), 1, "the turn ended");
    assert_eq!(
        reports[0].summary,
        "Interrupted: the tab went away while devices.disable was pending; its outcome is unknown, reconcile before retrying."
    );
    assert!(!s.host.host().has_live_surface(&tab));
    assert!(s.host.host().outstanding().is_empty());
    // A new run for that session gets no browser tools.
    s.host
        .host()
        .start_run(AgentRun {
            run_id: "after-close".into(),
            session_id: sessions[0].session_id.clone(),
            tab_id: Some(tab.clone()),
            kind: agent_surface::ConsumerKind::Embedded,
        })
        .unwrap();
    assert!(s.host.host().tools_for_run("after-close").is_empty());
    assert_eq!(s.server_statuses().await, seed_with(&[]));
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_and_stale_capability_are_told_to_the_user_in_words() {
    let _serial = SERIAL.lock().await;
    let Some(s) = stack("unavailable_and_stale_capability_are_told_to_the_user_in_words").await
    else {
        return;
    };
    // Nothing selected: devices.disable is unavailable.
    s.browser.click("#start-turn").await.unwrap();
    let report = s.report().await;
    assert_eq!(
        report,
        "Agent turn: Not done: CAPABILITY_NOT_AVAILABLE — This capability exists but is currently unavailable: Select at least one device in the table first. Perform the enabling step first, then refresh."
    );
    assert!(
        s.activity()
            .await
            .contains("Not available right now: Select at least one device in the table first"),
        "{}",
        s.activity().await
    );
    s.shot("08-unavailable").await;
    // devices.purge (destructive) waits for confirmation; the view changes
    // (the filter) before the user approves: the call was made against an
    // outdated view.
    s.select(&["dev-2"]).await;
    let input = s.start_turn_until_confirmation("#start-purge").await;
    assert_eq!(input, json!({"deviceIds": ["dev-2"]}));
    s.browser
        .click("#filter option[value=active]")
        .await
        .unwrap();
    s.browser
        .wait_for_text("#devices tbody", WAIT, |t| !t.contains("dev-3"))
        .await
        .unwrap();
    s.browser.click("#approve").await.unwrap();
    s.browser
        .wait_for_text("#turn-report", WAIT, |t| t.contains("STALE_CAPABILITY"))
        .await
        .unwrap();
    assert!(
        s.activity()
            .await
            .contains("The agent acted on an outdated view of this page; nothing was done."),
        "{}",
        s.activity().await
    );
    assert_eq!(s.server_statuses().await, seed_with(&[]));
    s.shot("09-stale-capability").await;
    s.finish().await;
}

// ----- the details panel mounts and unmounts --------------------------------

impl Stack {
    /// The capability ids of the tools run `run_id` is offered now, sorted,
    /// each marked ` (unavailable)` when no registration of it is
    /// available (the host's MCP export leaves those out).
    fn tool_ids(&self, run_id: &str) -> Vec<String> {
        let mut ids: Vec<String> = self
            .host
            .host()
            .tools_for_run(run_id)
            .iter()
            .map(|t| {
                let available = match t {
                    HostTool::Browser(b) => b.references.iter().any(|r| match r {
                        BrowserReference::Procedure(p) => p.available,
                        BrowserReference::View { capability, .. } => capability.available(),
                    }),
                    HostTool::Server(_) => true,
                };
                if available {
                    t.capability_id().to_string()
                } else {
                    format!("{} (unavailable)", t.capability_id())
                }
            })
            .collect();
        ids.sort();
        ids
    }

    /// Waits (at most `WAIT`) until run `run_id`'s tools are `expected`.
    async fn wait_tools(&self, step: &str, run_id: &str, expected: &[&str]) {
        let deadline = Instant::now() + WAIT;
        loop {
            let now = self.tool_ids(run_id);
            if now == expected {
                return;
            }
            if Instant::now() > deadline {
                panic!("{step}: run {run_id}'s tools never became {expected:?}; last {now:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_details_panel_adds_its_tool_while_mounted_and_availability_follows_the_selection() {
    let _serial = SERIAL.lock().await;
    let Some(s) = stack(
        "the_details_panel_adds_its_tool_while_mounted_and_availability_follows_the_selection",
    )
    .await
    else {
        return;
    };
    let session = s.host.sessions()[0].clone();
    let tab = session.tab_id.clone().expect("the tab announced itself");
    s.host
        .host()
        .start_run(AgentRun {
            run_id: "panel-run".into(),
            session_id: session.session_id.clone(),
            tab_id: Some(tab),
            kind: agent_surface::ConsumerKind::Embedded,
        })
        .unwrap();
    // Nothing selected: no details panel, no rename tool, and disable,
    // purge and clearSelection are unavailable.
    s.wait_tools(
        "nothing selected",
        "panel-run",
        &[
            "domain:devices.disable (unavailable)",
            "domain:devices.list",
            "domain:devices.purge (unavailable)",
            "view:devices.table.clearSelection (unavailable)",
            "view:devices.table.filter",
            "view:devices.table.readState",
            "view:devices.table.select",
        ],
    )
    .await;
    assert!(s.browser.find("#details").await.unwrap().is_none());

    // One device selected: the panel mounts and its tool appears;
    // disable, purge and clearSelection become available — no notify
    // anywhere in the page.
    s.select(&["dev-1"]).await;
    s.browser
        .wait_for_text("#details-id", WAIT, |t| t == "dev-1")
        .await
        .expect("the details panel shows dev-1");
    s.wait_tools(
        "one selected",
        "panel-run",
        &[
            "domain:devices.disable",
            "domain:devices.list",
            "domain:devices.purge",
            "domain:devices.rename",
            "view:devices.table.clearSelection",
            "view:devices.table.filter",
            "view:devices.table.readState",
            "view:devices.table.select",
        ],
    )
    .await;
    let rename = s
        .host
        .host()
        .tools_for_run("panel-run")
        .into_iter()
        .find(|t| t.capability_id() == "domain:devices.rename")
        .unwrap();
    let HostTool::Browser(rename) = rename else {
        panic!("devices.rename is the page's: {rename:?}");
    };
    let [BrowserReference::Procedure(rename)] = rename.references.as_slice() else {
        panic!("one registration of devices.rename: {rename:?}");
    };
    // The manifest's description, and what the panel says about this
    // device as the contextual note; a tool list shows both.
    assert_eq!(rename.description, "Rename a device");
    assert_eq!(
        rename.contextual_note.as_deref(),
        Some("Renames the device shown in the details panel (now “Lobby camera”).")
    );
    assert_eq!(
        rename.model_description(),
        "Rename a device\n\nRenames the device shown in the details panel (now “Lobby camera”)."
    );
    s.shot("10-details-mounted").await;

    // A second device selected: the panel unmounts and its tool goes away.
    s.browser.click("#select-dev-2").await.unwrap();
    s.browser
        .wait_for_text("#selection", WAIT, |t| {
            t.starts_with("Selected: dev-1, dev-2")
        })
        .await
        .unwrap();
    s.wait_tools(
        "two selected",
        "panel-run",
        &[
            "domain:devices.disable",
            "domain:devices.list",
            "domain:devices.purge",
            "view:devices.table.clearSelection",
            "view:devices.table.filter",
            "view:devices.table.readState",
            "view:devices.table.select",
        ],
    )
    .await;
    assert!(s.browser.find("#details").await.unwrap().is_none());
    s.shot("11-details-unmounted").await;

    // Nothing selected again: disable, purge and clearSelection are
    // unavailable again.
    s.browser.click("#select-dev-1").await.unwrap();
    s.browser
        .wait_for_text("#selection", WAIT, |t| t.starts_with("Selected: dev-2 "))
        .await
        .unwrap();
    s.browser.click("#select-dev-2").await.unwrap();
    s.browser
        .wait_for_text("#selection", WAIT, |t| t.starts_with("No device selected"))
        .await
        .unwrap();
    s.wait_tools(
        "none again",
        "panel-run",
        &[
            "domain:devices.disable (unavailable)",
            "domain:devices.list",
            "domain:devices.purge (unavailable)",
            "view:devices.table.clearSelection (unavailable)",
            "view:devices.table.filter",
            "view:devices.table.readState",
            "view:devices.table.select",
        ],
    )
    .await;
    s.host.host().end_run("panel-run");
    s.finish().await;
}

// ----- the table's observation and actions ---------------------------------

impl Stack {
    /// Starts run `run_id` on the page's tab (as `/app/turn` does).
    async fn start_view_run(&self, run_id: &str) {
        let session = self.host.sessions()[0].clone();
        self.host
            .durable()
            .start_run(AgentRun {
                run_id: run_id.into(),
                session_id: session.session_id,
                tab_id: Some(session.tab_id.expect("the tab announced itself")),
                kind: agent_surface::ConsumerKind::Embedded,
            })
            .await
            .unwrap();
    }

    /// The `devices.table` observations and actions run `run_id` is
    /// offered, by name, as the announcement described them (JSON).
    fn table_capabilities(&self, run_id: &str) -> BTreeMap<String, Value> {
        let mut found = BTreeMap::new();
        for tool in self.host.host().tools_for_run(run_id) {
            let HostTool::Browser(tool) = tool else {
                continue;
            };
            for reference in &tool.references {
                if let BrowserReference::View {
                    component,
                    capability,
                } = reference
                {
                    assert_eq!(component.component_type, "devices.table");
                    let described = match capability {
                        ViewCapabilityDescriptor::Observation(o) => serde_json::to_value(o),
                        ViewCapabilityDescriptor::Action(a) => serde_json::to_value(a),
                    };
                    found.insert(capability.name().to_string(), described.unwrap());
                }
            }
        }
        found
    }

    /// The surface version of the announcement run `run_id`'s table tools
    /// come from.
    fn table_version(&self, run_id: &str) -> u64 {
        self.host
            .host()
            .tools_for_run(run_id)
            .into_iter()
            .find_map(|tool| match tool {
                HostTool::Browser(b) if b.capability_id == "view:devices.table.readState" => {
                    Some(b.surface_version)
                }
                _ => None,
            })
            .expect("readState is offered")
    }

    /// Calls the table's `name` as the agent of run `run_id` would, through
    /// the host (fresh ids); the page's answer as JSON.
    async fn call_view(&self, run_id: &str, name: &str, input: Value) -> Value {
        static CALLS: AtomicU64 = AtomicU64::new(1);
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        let request = ToolCallRequest::new(
            run_id,
            format!("tc-{n}"),
            format!("{run_id}-{n}"),
            format!("view:devices.table.{name}"),
            input,
        );
        match self.host.replica().call(request, None).await {
            CallEnd::Outcome {
                outcome: BrowserSurfaceOutcome::Invocation(result),
            } => serde_json::to_value(result).unwrap(),
            other => panic!("{name}: not answered by the page: {other:?}"),
        }
    }
}

/// The JSON Schema of a list of device ids, as the page declares it.
fn ids_schema() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// What the agent may do on the table beyond the bound procedures: read
/// what it shows (an observation, no input), select, clear and filter rows
/// (local actions with honest metadata) — each call acting on the page the
/// user sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_reads_the_table_and_changes_its_selection_through_its_view_tools() {
    let _serial = SERIAL.lock().await;
    let Some(s) =
        stack("the_agent_reads_the_table_and_changes_its_selection_through_its_view_tools").await
    else {
        return;
    };
    s.select(&["dev-1", "dev-2"]).await;
    s.start_view_run("view-run").await;
    s.wait_tools(
        "two selected",
        "view-run",
        &[
            "domain:devices.disable",
            "domain:devices.list",
            "domain:devices.purge",
            "view:devices.table.clearSelection",
            "view:devices.table.filter",
            "view:devices.table.readState",
            "view:devices.table.select",
        ],
    )
    .await;
    let described = s.table_capabilities("view-run");
    let row = json!({
        "type": "object",
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "status": {"type": "string"}},
        "required": ["id", "name", "status"],
        "additionalProperties": false,
    });
    assert_eq!(
        described["readState"],
        json!({
            "capabilityId": "view:devices.table.readState",
            "name": "readState",
            "description": "The rows the devices table shows, the selection and the status filter",
            "outputSchema": {
                "type": "object",
                "properties": {
                    "visibleRows": {"type": "array", "items": row},
                    "selectedIds": ids_schema(),
                    "filter": {"type": "string", "enum": ["all", "active", "disabled"]},
                },
                "required": ["visibleRows", "selectedIds", "filter"],
                "additionalProperties": false,
            },
            "available": true,
        })
    );
    assert_eq!(
        described["clearSelection"],
        json!({
            "capabilityId": "view:devices.table.clearSelection",
            "name": "clearSelection",
            "description": "Clear the selection of the devices table",
            "inputSchema": {
                "type": "object",
                "description": "Input of `view:devices.table.clearSelection`: none.",
                "properties": {},
                "additionalProperties": false,
            },
            "effect": "local-state",
            "idempotent": true,
            "reversible": true,
            "confirmation": "never",
            "available": true,
        })
    );
    let metadata = |name: &str| {
        let d = &described[name];
        (
            d["effect"].clone(),
            d["idempotent"].clone(),
            d["reversible"].clone(),
            d["confirmation"].clone(),
            d["available"].clone(),
            d["outputSchema"]["required"].clone(),
        )
    };
    assert_eq!(
        metadata("select"),
        (
            json!("local-state"),
            json!(true),
            json!(true),
            json!("never"),
            json!(true),
            json!(["selected"])
        )
    );
    // Hidden rows leave the selection, and showing them again does not
    // select them again: not reversible.
    assert_eq!(
        metadata("filter"),
        (
            json!("local-state"),
            json!(true),
            json!(false),
            json!("never"),
            json!(true),
            json!(["visible", "selected"])
        )
    );

    // readState: exactly what the user sees, at the announced version.
    let version = s.table_version("view-run");
    let read = s.call_view("view-run", "readState", json!({})).await;
    assert_eq!(read["status"], "ok", "{read}");
    assert_eq!(read["capabilityId"], "view:devices.table.readState");
    assert_eq!(read["surfaceVersion"], version.to_string(), "{read}");
    assert_eq!(
        read["output"],
        json!({
            "visibleRows": [
                {"id": "dev-1", "name": "Lobby camera", "status": "active"},
                {"id": "dev-2", "name": "Door sensor", "status": "active"},
                {"id": "dev-3", "name": "Old router", "status": "disabled"},
                {"id": "dev-locked", "name": "Core switch", "status": "active"},
            ],
            "selectedIds": ["dev-1", "dev-2"],
            "filter": "all",
        })
    );
    // An observation ignores its input, as the original: the same state.
    let ignored = s
        .call_view("view-run", "readState", json!({"filter": "disabled"}))
        .await;
    assert_eq!(ignored["status"], "ok", "{ignored}");
    assert_eq!(ignored["output"], read["output"], "{ignored}");

    // select replaces the selection in the page.
    let selected = s
        .call_view("view-run", "select", json!({"deviceIds": ["dev-locked"]}))
        .await;
    assert_eq!(
        selected["output"],
        json!({"selected": ["dev-locked"]}),
        "{selected}"
    );
    s.browser
        .wait_for_text("#selection", WAIT, |t| {
            t.starts_with("Selected: dev-locked ")
        })
        .await
        .unwrap();

    // clearSelection: a void action (no output); the page's selection is
    // empty, the details panel unmounts, and clearSelection itself becomes
    // unavailable with the page's reason.
    let cleared = s.call_view("view-run", "clearSelection", json!({})).await;
    assert_eq!(cleared["status"], "ok", "{cleared}");
    assert_eq!(cleared["capabilityId"], "view:devices.table.clearSelection");
    assert!(cleared.get("output").is_none(), "{cleared}");
    s.browser
        .wait_for_text("#selection", WAIT, |t| t.starts_with("No device selected"))
        .await
        .unwrap();
    s.wait_tools(
        "cleared",
        "view-run",
        &[
            "domain:devices.disable (unavailable)",
            "domain:devices.list",
            "domain:devices.purge (unavailable)",
            "view:devices.table.clearSelection (unavailable)",
            "view:devices.table.filter",
            "view:devices.table.readState",
            "view:devices.table.select",
        ],
    )
    .await;
    assert_eq!(
        s.table_capabilities("view-run")["clearSelection"]["unavailableReason"],
        "No device is selected"
    );
    let again = s.call_view("view-run", "clearSelection", json!({})).await;
    assert_eq!(
        again["error"]["code"], "CAPABILITY_NOT_AVAILABLE",
        "{again}"
    );
    assert_eq!(again["error"]["details"]["reason"], "No device is selected");
    let activity = s.activity().await;
    for line in [
        "Done: the agent read the table (4 row(s) shown, 2 selected).",
        "Done: selected dev-locked.",
        "Done: the selection was cleared.",
        "Not available right now: No device is selected",
    ] {
        assert!(activity.contains(line), "{line}: {activity}");
    }
    s.shot("17-view-tools").await;
    s.host.durable().end_run("view-run").await.unwrap();
    s.finish().await;
}

/// The page another server on the same machine serves (another
/// `127.0.0.1` port: the same *site*, so the browser sends the host's
/// `SameSite=Strict` cookie with its requests). `HOST` is replaced by the
/// host's origin. Each attack writes its outcome into `#result` as JSON.
const FOREIGN_PAGE: &str = r#"<!doctype html>
<meta charset="utf-8"><title>another page on this machine</title>
<pre id="result"></pre>
<iframe name="sink" style="display:none"></iframe>
<form id="form" method="POST" enctype="text/plain" target="sink" action="HOST/rpc/devices/disable">
<input name='{"json":{"deviceIds":["dev-2"]},"pad":"' value='"}'>
</form>
<script>
const host = "HOST";
const out = {};
async function attempt(name, f) {
  try { out[name] = await f(); } catch (e) { out[name] = "error: " + e.name; }
}
(async () => {
  // A simple request (text/plain, no preflight) with the cookie.
  await attempt("disable_no_cors", async () => {
    const r = await fetch(host + "/rpc/devices/disable", { method: "POST", mode: "no-cors",
      credentials: "include", body: '{"json":{"deviceIds":["dev-1"]}}' });
    return "sent, " + r.type;
  });
  // A JSON request: the browser asks first (preflight).
  await attempt("rename_json", async () => {
    const r = await fetch(host + "/rpc/devices/rename", { method: "POST", credentials: "include",
      headers: { "Content-Type": "application/json" },
      body: '{"json":{"deviceId":"dev-locked","name":"renamed-by-evil"}}' });
    return "status " + r.status;
  });
  // Reading the device list with the user's cookie.
  await attempt("list_read", async () => {
    const r = await fetch(host + "/rpc/devices/list", { method: "POST", credentials: "include",
      body: '{"json":{}}' });
    return "read: " + (await r.text());
  });
  // The session socket, which would let this page act as the console.
  await attempt("socket", () => new Promise((resolve) => {
    const ws = new WebSocket(host.replace("http:", "ws:") + "/agent/ws");
    ws.onopen = () => { resolve("open"); ws.close(); };
    ws.onerror = () => resolve("refused");
  }));
  // The classic cross-site form: a text/plain body shaped as JSON.
  await attempt("form", () => new Promise((resolve) => {
    setTimeout(() => resolve("no load event"), 5000);
    document.querySelector("iframe").onload = () => resolve("submitted");
    document.getElementById("form").submit();
  }));
  document.getElementById("result").textContent = JSON.stringify(out);
})();
</script>
"#;

/// Serves [`FOREIGN_PAGE`] on a new loopback port; returns its URL.
async fn serve_foreign_page(host_origin: &str) -> (String, tokio::task::JoinHandle<()>) {
    let page = FOREIGN_PAGE.replace("HOST", host_origin);
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let page = page.clone();
            async move { axum::response::Html(page) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_loopback_port_cannot_act_through_the_host() {
    let _serial = SERIAL.lock().await;
    let Some(s) = stack("a_page_on_another_loopback_port_cannot_act_through_the_host").await else {
        return;
    };
    let host_origin = s.host.url().trim_end_matches('/').to_string();
    // Control: the console's own page reaches the proxy with its cookie.
    let own = s
        .browser
        .execute(
            "return fetch('/rpc/devices/list', {method: 'POST', \
             headers: {'Content-Type': 'application/json'}, body: '{\"json\":{}}'}) \
             .then(r => r.status)",
            json!([]),
        )
        .await
        .unwrap();
    assert_eq!(own, json!(200), "the page's own call through the proxy");
    // The browser holds the host's cookie; now another page of the same
    // site (another port) tries to use it.
    let (foreign, server) = serve_foreign_page(&host_origin).await;
    s.browser.goto(&foreign).await.unwrap();
    let result = s
        .browser
        .wait_for_text("#result", WAIT, |t| !t.is_empty())
        .await
        .expect("the foreign page finishes its attempts");
    s.shot("10-foreign-page").await;
    let result: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(
        result,
        json!({
            "disable_no_cors": "sent, opaque",
            "rename_json": "error: TypeError",
            "list_read": "error: TypeError",
            "socket": "refused",
            "form": "submitted",
        })
    );
    // Nothing happened on the backend, and no turn ran.
    assert_eq!(s.server_statuses().await, seed_with(&[]));
    let client =
        HttpOrpcClient::new(s.peer.rpc_url()).with_header("authorization", PEER_USER_TOKEN);
    let out = client
        .call("devices.list", Some(json!({})), CallOptions::default())
        .await
        .unwrap();
    let names: Vec<&str> = out["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"renamed-by-evil"), "{names:?}");
    assert!(s.host.reports().is_empty());
    server.abort();
    s.finish().await;
}

/// The page's tools through Chromium's WebMCP: `getTools()` names and
/// input schemas.
async fn webmcp_tools(s: &Stack) -> Vec<Value> {
    s.browser
        .execute(
            "return document.modelContext.getTools().then(t => t.map(x => \
             ({name: x.name, inputSchema: x.inputSchema})))",
            json!([]),
        )
        .await
        .unwrap()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Starts `executeTool(devices__disable, input)`; its result lands in
/// `window.__webmcp` (the JSON text Chromium resolves to).
async fn webmcp_disable(s: &Stack, input: Value) {
    s.browser
        .execute(
            "window.__webmcp = null; const input = arguments[0]; \
             document.modelContext.getTools() \
               .then(t => document.modelContext.executeTool(t.find(x => x.name == 'devices__disable'), input)) \
               .then(r => window.__webmcp = r, e => window.__webmcp = 'rejected: ' + e);",
            json!([input]),
        )
        .await
        .unwrap();
}

async fn webmcp_result(s: &Stack) -> Value {
    let started = Instant::now();
    loop {
        let value = s
            .browser
            .execute("return window.__webmcp", json!([]))
            .await
            .unwrap();
        if let Some(text) = value.as_str() {
            return serde_json::from_str(text).unwrap_or_else(|_| panic!("{text}"));
        }
        assert!(started.elapsed() < WAIT, "executeTool did not resolve");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The console's surface through the browser's own agent API (WebMCP,
/// Chromium with `--enable-features=WebMCP`) while the host session is
/// connected: tools follow the selection with `deviceIds` bound, a
/// supplied `deviceIds` is refused, a call waits in the page's dialog and
/// Approve runs it once on the real peer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webmcp_tools_follow_the_view_and_wait_for_the_pages_confirmation() {
    let _serial = SERIAL.lock().await;
    let test = "webmcp_tools_follow_the_view_and_wait_for_the_pages_confirmation";
    let Some(s) = stack_with(test, &["--enable-features=WebMCP"]).await else {
        return;
    };
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let before = webmcp_tools(&s).await;
    assert!(
        names(&before).contains(&"devices__list".to_string()),
        "{before:?}"
    );
    assert!(
        !names(&before).contains(&"devices__disable".to_string()),
        "{before:?}"
    );
    s.select(&["dev-1", "dev-2"]).await;
    let after = webmcp_tools(&s).await;
    let disable = after
        .iter()
        .find(|t| t["name"] == "devices__disable")
        .unwrap_or_else(|| panic!("{after:?}"));
    assert!(
        disable["inputSchema"]["properties"]
            .get("deviceIds")
            .is_none(),
        "{disable}"
    );

    webmcp_disable(&s, json!({"deviceIds": ["dev-locked"]})).await;
    let refused = webmcp_result(&s).await;
    assert_eq!(refused["isError"], json!(true), "{refused}");
    assert_eq!(
        refused["structuredContent"]["code"], "INVALID_INPUT",
        "{refused}"
    );

    webmcp_disable(&s, json!({})).await;
    s.browser.wait_for("#confirm-dialog", WAIT).await.unwrap();
    s.shot("10-webmcp-confirmation").await;
    assert_eq!(s.server_statuses().await, seed_with(&[]), "nothing ran yet");
    s.browser.click("#approve").await.unwrap();
    let done = webmcp_result(&s).await;
    assert_eq!(done["isError"], json!(false), "{done}");
    assert_eq!(
        done["structuredContent"],
        json!({"disabled": ["dev-1", "dev-2"]})
    );
    s.wait_table_status("dev-1", "disabled").await;
    assert_eq!(s.server_statuses().await, seed_with(&["dev-1", "dev-2"]));
    assert!(s.host.reports().is_empty(), "no host turn ran");
    s.shot("11-webmcp-result").await;
}

/// Without the flag the page registers nothing: `document.modelContext`
/// is absent and the page still connects and loads (the other tests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_webmcp_the_page_has_no_model_context() {
    let _serial = SERIAL.lock().await;
    let Some(s) = stack("without_webmcp_the_page_has_no_model_context").await else {
        return;
    };
    let kind = s
        .browser
        .execute("return typeof document.modelContext", json!([]))
        .await
        .unwrap();
    assert_eq!(kind, json!("undefined"));
}

impl Stack {
    /// Opens the approver page in a new tab (the console's tab stays
    /// open), signs in and waits for `approval_id`'s row; returns the
    /// console tab's handle.
    async fn approver_tab(&self, approval_id: &str) -> String {
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
        console
    }

    /// The statuses the backend reports, ids only.
    async fn server_ids(&self) -> Vec<String> {
        self.server_statuses()
            .await
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    /// Asks the agent to purge `dev-2`, confirms in the page and waits
    /// until the server holds it for approval `appr-1`; returns the run id
    /// and the host's id of the approval (the held call's invocation id).
    async fn purge_until_approval_required(&self) -> (String, String) {
        self.select(&["dev-2"]).await;
        let input = self.start_turn_until_confirmation("#start-purge").await;
        assert_eq!(input, json!({"deviceIds": ["dev-2"]}));
        self.browser.click("#approve").await.unwrap();
        let report = self.report().await;
        assert!(self.server_ids().await.contains(&"dev-2".to_string()));
        let approvals = self.host.durable().pending_approvals(10).await.unwrap();
        assert_eq!(approvals.len(), 1);
        let id = &approvals[0].approval_id;
        assert_eq!(
            report,
            format!("Agent turn: Waiting for approval {id} (the backend's appr-1): the server holds devices.purge until a person decides on the approver page; nothing was done yet.")
        );
        assert_eq!(approvals[0].backend_approval_id, "appr-1");
        assert_eq!(approvals[0].approval_id, approvals[0].invocation_id);
        assert_eq!(approvals[0].capability_id, "domain:devices.purge");
        // The page confirmed, so the server knows the call by the retry's id.
        assert_ne!(
            approvals[0].backend_invocation_id,
            approvals[0].invocation_id
        );
        (
            approvals[0].run_id.clone(),
            approvals[0].approval_id.clone(),
        )
    }
}

/// What the approver page shows of a pending approval: the gateway's
/// `getApproval` (status, types, reasons, expiry); asserts the values the
/// peer gives a purge and returns `expiresAt`.
async fn assert_shown_approval(s: &Stack, approval_id: &str) -> String {
    let row = format!("#approval-{approval_id}");
    let text = s
        .browser
        .wait_for_text(&format!("{row} code.approval"), WAIT, |t| !t.is_empty())
        .await
        .unwrap();
    let mut shown: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    let expires_at = shown["expiresAt"].take();
    let expires_at = expires_at.as_str().expect("an ISO 8601 expiry").to_string();
    assert_eq!(
        shown,
        json!({
            "status": "pending",
            "types": ["irreversible"],
            "reasons": ["Approval is required for devices.purge."],
            "expiresAt": null,
        })
    );
    assert_eq!(
        expires_at.len(),
        "2026-09-13T00:15:00.000Z".len(),
        "{expires_at}"
    );
    assert!(expires_at.ends_with('Z'), "{expires_at}");
    let element = s
        .browser
        .wait_for(&format!("{row} .expires"), WAIT)
        .await
        .unwrap();
    assert_eq!(s.browser.text(&element).await.unwrap(), expires_at);
    let element = s
        .browser
        .wait_for(&format!("{row} .status"), WAIT)
        .await
        .unwrap();
    assert_eq!(s.browser.text(&element).await.unwrap(), "pending");
    expires_at
}

/// What the approver sees after approving `approval_id`.
fn resumed(approval_id: &str) -> String {
    format!("{approval_id}: Approved by approver and resumed: the server purged dev-2.")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_approved_on_the_approver_page_is_resumed_and_the_run_gets_the_outcome() {
    let _serial = SERIAL.lock().await;
    let Some(s) =
        stack("a_purge_approved_on_the_approver_page_is_resumed_and_the_run_gets_the_outcome")
            .await
    else {
        return;
    };
    let (run_id, id) = s.purge_until_approval_required().await;
    s.shot("12-waiting-for-approval").await;
    let console = s.approver_tab(&id).await;
    assert_shown_approval(&s, &id).await;
    s.shot("13-approver-page").await;
    s.browser.click(&format!("#approve-{id}")).await.unwrap();
    s.browser
        .wait_for_text("#approver-result", WAIT, |t| t == resumed(&id))
        .await
        .expect("the approver sees the resumed outcome");
    s.browser.wait_for("#no-approvals", WAIT).await.unwrap();
    s.shot("14-approver-decided").await;
    assert!(
        !s.server_ids().await.contains(&"dev-2".to_string()),
        "purged at the peer"
    );
    // The run observes the outcome: its approvals in the store, and the
    // console (polling /app/run) shows it.
    let approvals = s.host.durable().run_approvals(&run_id, 10).await.unwrap();
    assert_eq!(approvals.len(), 1);
    let outcome: Value = serde_json::from_str(approvals[0].outcome.as_deref().unwrap()).unwrap();
    assert_eq!(outcome["status"], "ok");
    assert_eq!(outcome["capabilityId"], "domain:devices.purge");
    assert_eq!(outcome["invocationId"], json!(approvals[0].invocation_id));
    assert_eq!(outcome["output"], json!({"purged": ["dev-2"]}));
    s.browser.close_window().await.unwrap();
    s.browser.switch_to(&console).await.unwrap();
    s.browser
        .wait_for_text("#turn-report", WAIT, |t| {
            t == "Agent turn: Approved by approver and resumed: the server purged dev-2."
        })
        .await
        .expect("the console shows the run's outcome");
    wait_gone(&s, "#status-dev-2").await;
    s.shot("15-console-after-approval").await;
    let reports = s.host.reports();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[1].run_id, run_id);
    assert_eq!(
        reports[1].summary,
        "Approved by approver and resumed: the server purged dev-2."
    );
    // Deciding again changes nothing and resumes nothing.
    assert_eq!(
        s.host.durable().pending_approvals(10).await.unwrap().len(),
        0
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_survives_a_host_restart_and_is_resumed_once_after_it() {
    let _serial = SERIAL.lock().await;
    let Some(mut s) =
        stack("an_approval_survives_a_host_restart_and_is_resumed_once_after_it").await
    else {
        return;
    };
    let (run_id, id) = s.purge_until_approval_required().await;
    // The host stops between the request and the decision; a new host
    // process state starts on the same store (a new port: the old page
    // session is gone with the old host's memory anyway).
    let mut config = s.config.clone();
    config.bind = "127.0.0.1:0".parse().unwrap();
    let restarted = serve(config).await.expect("the host restarts on its store");
    drop(std::mem::replace(&mut s.host, restarted));
    assert!(s.host.reports().is_empty(), "a fresh host");
    let pending = s.host.durable().pending_approvals(10).await.unwrap();
    assert_eq!(
        pending.len(),
        1,
        "the approval is still pending after the restart"
    );
    assert_eq!(pending[0].run_id, run_id);
    s.approver_tab(&id).await;
    assert_shown_approval(&s, &id).await;
    s.browser.click(&format!("#approve-{id}")).await.unwrap();
    s.browser
        .wait_for_text("#approver-result", WAIT, |t| t == resumed(&id))
        .await
        .expect("the approver sees the resumed outcome");
    s.shot("16-approver-after-restart").await;
    assert!(
        !s.server_ids().await.contains(&"dev-2".to_string()),
        "purged at the peer"
    );
    let approvals = s.host.durable().run_approvals(&run_id, 10).await.unwrap();
    let outcome: Value = serde_json::from_str(approvals[0].outcome.as_deref().unwrap()).unwrap();
    assert_eq!(outcome["output"], json!({"purged": ["dev-2"]}));
    let first_resume = approvals[0].resumed_at_ms;
    // Deciding again (a second click, a stale form) resumes nothing.
    s.browser
        .goto(&format!("{}approver", s.host.url()))
        .await
        .unwrap();
    s.browser.wait_for("#no-approvals", WAIT).await.unwrap();
    let again = s.host.durable().run_approvals(&run_id, 10).await.unwrap();
    assert_eq!(again[0].resumed_at_ms, first_resume);
    let reports = s.host.reports();
    assert_eq!(reports.len(), 1);
    assert_eq!(
        (reports[0].run_id.as_str(), reports[0].summary.as_str()),
        (
            run_id.as_str(),
            "Approved by approver and resumed: the server purged dev-2."
        )
    );
    s.finish().await;
}

/// Waits until nothing matches `css`.
async fn wait_gone(s: &Stack, css: &str) {
    let deadline = Instant::now() + WAIT;
    while s.browser.find(css).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "{css} is still shown");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a browser downloads of the page (the wasm and its JS glue, gzip,
/// as the host sends them): the budget the page is held to. The goal is
/// 200 KiB; the page weighs about 450 KiB (docs/performance.md, "Page
/// weight": 379.9 KiB before policies at discovery, the meta-mode tools of
/// its WebMCP bridge, concurrency groups and the Leptos adapter's signals
/// and dialog props; 395.8 KiB before the "Agent chat" panel, whose AG-UI
/// client — `agent_surface::agui`'s turn loop and event decoder,
/// `FetchAgUiTransport`, `use_ag_ui_agent` — and view added 54.7 KiB), so
/// the budget is the measured weight and a little slack: a change that
/// adds to the page has to say so here. Raised from 400 KiB for the chat
/// panel.
const SERVED_PAGE_BUDGET_BYTES: u64 = 456 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_a_browser_downloads_is_gzipped_and_within_its_budget() {
    let test = "the_page_a_browser_downloads_is_gzipped_and_within_its_budget";
    if !available("wasm-bindgen") {
        unavailable(test, "wasm-bindgen is missing (scripts/test installs it)");
        return;
    }
    let built = tokio::task::spawn_blocking(built_page)
        .await
        .expect("page build task")
        .as_ref()
        .unwrap_or_else(|e| panic!("{test}: the page could not be built: {e}"));
    // No backend: the host starts without calling it.
    let config = HostConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        "http://127.0.0.1:9/rpc",
        built.dir.clone(),
    );
    let host = serve(config).await.expect("the host starts");
    let client = reqwest::Client::new();
    let mut served = 0u64;
    for (name, content_type) in page::PAGE_FILES {
        let response = client
            .get(format!("{}pkg/{name}", host.url()))
            .header("accept-encoding", "gzip, deflate, br, zstd")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{name}");
        assert_eq!(response.headers()["content-type"], content_type, "{name}");
        assert_eq!(response.headers()["content-encoding"], "gzip", "{name}");
        let body = response.bytes().await.unwrap();
        // The gzip magic number: the bytes are the compressed copy.
        assert_eq!(&body[..2], &[0x1f, 0x8b], "{name}");
        served += body.len() as u64;
    }
    assert_eq!(served, built.served_gzip_bytes);
    assert!(
        served <= SERVED_PAGE_BUDGET_BYTES,
        "the page a browser downloads grew to {served} B ({:.1} KiB), past its budget of {} KiB",
        served as f64 / 1024.0,
        SERVED_PAGE_BUDGET_BYTES / 1024
    );
}
