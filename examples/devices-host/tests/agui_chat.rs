//! The devices console's "Agent chat" end to end: the real oRPC peer
//! (`tests/orpc-peer`), the AG-UI test agent (`tests/agui-agent`: the
//! official `@ag-ui/mastra` adapter over `@mastra/core`, a scripted model),
//! the agent host (in process) forwarding the page's runs to it at
//! `/app/agent`, the Leptos page built for wasm32, and Debian's `chromium`
//! driven over WebDriver. The user selects two devices and asks the
//! agent in the chat; the agent calls `devices__disable` with no ids; the
//! call runs in the page through the pipeline, so the page's dialog shows
//! the selected ids; the user approves, the server disables exactly
//! those, and the agent's answer quotes the result.
//!
//! Screenshots go to `target/agui-chat/*.png`. Needs Chromium +
//! ChromeDriver (`CHROMIUM`, `CHROMEDRIVER`), Node.js, the
//! `wasm32-unknown-unknown` target and `wasm-bindgen` (`scripts/test`
//! installs them all, and `npm ci` in both Node.js packages). Without
//! them the tests print a skip notice — and fail when `CI=true`.

mod webdriver;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use agent_surface::bridge::{CallOptions, HttpOrpcClient, OrpcClient};
use devices_host::{page, peer::Peer, serve, HostConfig, Running, COOKIE, PEER_USER_TOKEN};
use serde_json::{json, Value};
use webdriver::{Driver, Session};

const WAIT: Duration = Duration::from_secs(30);

/// What the agent answers once the page's tool result is in the thread
/// (`tests/agui-agent/scripts.mjs`: `The tool answered <tool>: <result>`),
/// the result being the peer's `devices.disable` output.
const ANSWER: &str = r#"The tool answered devices__disable: {"disabled":["dev-1","dev-2"]}"#;

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

/// Tests run one at a time (each starts Node.js servers, one a browser).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The oRPC peer and the AG-UI agent, or `None` (skipped) without Node.js.
fn servers(test: &str) -> Option<(Peer, Peer)> {
    if !available("node") {
        unavailable(
            test,
            "Node.js is missing (the peer and the agent need Node.js >= 20)",
        );
        return None;
    }
    let peer = Peer::start().expect("the oRPC peer starts");
    let agent = Peer::start_ag_ui_agent().expect("the AG-UI agent starts");
    Some((peer, agent))
}

/// A host over `peer` (and `agent`'s endpoint, if any) serving `dir`.
async fn host(peer: &Peer, agent: Option<&Peer>, dir: PathBuf) -> Running {
    let mut config = HostConfig::new("127.0.0.1:0".parse().unwrap(), peer.rpc_url(), dir);
    config.ag_ui = agent.map(Peer::agent_url);
    serve(config).await.expect("the host starts")
}

/// The statuses the backend itself reports, by id.
async fn server_statuses(peer: &Peer) -> Vec<(String, String)> {
    let client = HttpOrpcClient::new(peer.rpc_url()).with_header("authorization", PEER_USER_TOKEN);
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
                d["id"].as_str().unwrap().into(),
                d["status"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn seed_with(disabled: &[&str]) -> Vec<(String, String)> {
    ["dev-1", "dev-2", "dev-3", "dev-locked"]
        .iter()
        .map(|id| {
            let off = *id == "dev-3" || disabled.contains(id);
            (
                id.to_string(),
                if off { "disabled" } else { "active" }.to_string(),
            )
        })
        .collect()
}

/// Chromium on a fresh profile, or `None` (skipped) without it.
async fn browser(test: &str) -> Option<(Driver, Session, PathBuf)> {
    let chromium = tool("CHROMIUM", "/usr/bin/chromium");
    let chromedriver = tool("CHROMEDRIVER", "/usr/bin/chromedriver");
    if !chromium.exists() || !chromedriver.exists() {
        let why = format!(
            "Chromium ({}) or ChromeDriver ({}) is missing: apt-get install -y chromium chromium-driver",
            chromium.display(),
            chromedriver.display()
        );
        unavailable(test, &why);
        return None;
    }
    if !available("wasm-bindgen") {
        unavailable(test, "wasm-bindgen is missing: cargo install wasm-bindgen-cli --version <the wasm-bindgen version in Cargo.lock> (scripts/test does it)");
        return None;
    }
    let profile = page::target_dir()
        .join("agui-chat")
        .join(format!("profile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).unwrap();
    let driver = Driver::start(&chromedriver).expect("chromedriver starts");
    let session = driver
        .session(&chromium, &profile)
        .await
        .expect("a Chromium session");
    Some((driver, session, profile))
}

async fn shot(browser: &Session, name: &str) -> PathBuf {
    let path = page::target_dir()
        .join("agui-chat")
        .join(format!("{name}.png"));
    browser.screenshot(&path).await.expect("screenshot")
}

/// Opens the console and waits until it is connected and shows the table.
async fn open(browser: &Session, host: &Running) {
    browser.goto(&host.url()).await.unwrap();
    browser
        .wait_for_text("#agent-status", WAIT, |t| t == "Agent connected")
        .await
        .expect("the page connects to the agent host");
    browser
        .wait_for("#status-dev-1", WAIT)
        .await
        .expect("the devices table loads from the oRPC peer");
}

async fn text(browser: &Session, css: &str) -> String {
    let element = browser.wait_for(css, WAIT).await.unwrap();
    browser.text(&element).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_agent_disables_the_selected_devices_once_the_user_approves() {
    let test = "the_chat_agent_disables_the_selected_devices_once_the_user_approves";
    let _serial = SERIAL.lock().await;
    let Some((driver, browser, profile)) = browser(test).await else {
        return;
    };
    let Some((peer, agent)) = servers(test) else {
        return;
    };
    let built = tokio::task::spawn_blocking(built_page)
        .await
        .expect("page build task")
        .as_ref()
        .unwrap_or_else(|e| panic!("{test}: the page could not be built: {e}"));
    let host = host(&peer, Some(&agent), built.dir.clone()).await;
    open(&browser, &host).await;
    browser
        .wait_for_text("#chat-status", WAIT, |t| t == "Ready")
        .await
        .expect("the page shows the chat panel, idle");

    for id in ["dev-1", "dev-2"] {
        browser.click(&format!("#select-{id}")).await.unwrap();
    }
    browser
        .wait_for_text("#selection", WAIT, |t| {
            t.starts_with("Selected: dev-1, dev-2")
        })
        .await
        .unwrap();
    browser
        .type_text("#chat-input", "disable the selected devices")
        .await
        .unwrap();
    browser.click("#chat-send").await.unwrap();

    // The agent called devices__disable with no ids: the call waits in
    // the page's dialog, which shows the ids the selection binds.
    let input = browser
        .wait_for_text("#confirm-input", WAIT, |t| !t.is_empty())
        .await
        .expect("the page shows the confirmation");
    let input: Value = serde_json::from_str(&input).unwrap();
    assert_eq!(
        input,
        json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"})
    );
    let ids = text(&browser, "#confirm-dialog .ids").await;
    assert_eq!(
        ids.split_whitespace().collect::<Vec<_>>(),
        ["dev-1", "dev-2"]
    );
    assert_eq!(
        text(&browser, "#confirm-title").await,
        "The agent wants to run devices.disable"
    );
    browser
        .wait_for_text("#chat-status", WAIT, |t| {
            t == "The agent's calls run in this page: approve or reject them in the dialog."
        })
        .await
        .unwrap();
    assert_eq!(
        server_statuses(&peer).await,
        seed_with(&[]),
        "nothing ran yet"
    );
    shot(&browser, "01-chat-confirmation").await;

    browser.click("#approve").await.unwrap();
    let answer = browser
        .wait_for_text("#chat-messages li.assistant", WAIT, |t| !t.is_empty())
        .await
        .expect("the agent answers in the chat");
    assert_eq!(answer, ANSWER);
    for id in ["dev-1", "dev-2"] {
        browser
            .wait_for_text(&format!("#status-{id}"), WAIT, |t| t == "disabled")
            .await
            .unwrap_or_else(|e| panic!("{id} never shown disabled: {e}"));
    }
    assert_eq!(text(&browser, "#status-dev-locked").await, "active");
    assert_eq!(server_statuses(&peer).await, seed_with(&["dev-1", "dev-2"]));
    browser
        .wait_for_text("#chat-status", WAIT, |t| t == "Ready")
        .await
        .unwrap();
    assert_eq!(
        text(&browser, "#chat-messages").await,
        format!(
            "disable the selected devices\ncalled devices__disable {}\n→ {}\n{ANSWER}",
            r#"{"reason":"maintenance"}"#, r#"{"disabled":["dev-1","dev-2"]}"#
        )
    );
    assert!(browser.find("#chat-error").await.unwrap().is_none());
    assert!(browser.find("#confirm-dialog").await.unwrap().is_none());
    assert!(text(&browser, "#activity")
        .await
        .contains("Done: disabled dev-1, dev-2."));
    let path = shot(&browser, "02-chat-answered").await;
    eprintln!("{test}: screenshot {}", path.display());

    // A host with no agent: the page says so instead of a chat.
    let plain = self::host(&peer, None, built.dir.clone()).await;
    open(&browser, &plain).await;
    assert_eq!(
        text(&browser, "#chat-unavailable").await,
        "Agent chat: no AG-UI agent is configured (start the host with --ag-ui-agent)."
    );
    assert!(browser.find("#agent-chat").await.unwrap().is_none());
    browser.quit().await;
    drop(driver);
    let _ = std::fs::remove_dir_all(profile);
}

/// Loads the page like a browser and returns its session cookie.
async fn page_cookie(host: &Running) -> String {
    let response = reqwest::get(host.url()).await.unwrap();
    assert_eq!(response.status(), 200);
    let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
    let pair = set_cookie.split(';').next().unwrap().to_string();
    assert!(pair.starts_with(&format!("{COOKIE}=")), "{pair}");
    pair
}

/// `POST path` as the page would send it: its origin, and `cookie`.
async fn post(host: &Running, path: &str, cookie: Option<&str>, body: Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("http://{}{path}", host.addr))
        .header("origin", format!("http://{}", host.addr))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

/// The host tells the page where its agent is, and forwards a run to the
/// agent only with the page's session cookie, streaming the agent's
/// events back as they come; a host without an agent says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_forwards_runs_to_the_agent_only_for_the_pages_session() {
    let test = "the_host_forwards_runs_to_the_agent_only_for_the_pages_session";
    let _serial = SERIAL.lock().await;
    let Some((peer, agent)) = servers(test) else {
        return;
    };
    let host = host(&peer, Some(&agent), std::env::temp_dir()).await;
    let run = json!({
        "threadId": "t1", "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "hello"}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {}
    });
    let refused = post(&host, "/app/agent", None, run.clone()).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(
        post(&host, "/app/config", None, json!({})).await.status(),
        401
    );

    let cookie = page_cookie(&host).await;
    let config = post(&host, "/app/config", Some(&cookie), json!({})).await;
    assert_eq!(config.status(), 200);
    assert_eq!(
        serde_json::from_str::<Value>(&config.text().await.unwrap()).unwrap(),
        json!({"json": {"agUi": "/app/agent"}})
    );
    let answer = post(&host, "/app/agent", Some(&cookie), run.clone()).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-type"], "text/event-stream");
    assert_eq!(answer.headers()["cache-control"], "no-store");
    let events: Vec<Value> = answer
        .text()
        .await
        .unwrap()
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_CHUNK",
            "TEXT_MESSAGE_CHUNK",
            "RUN_FINISHED"
        ]
    );
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(text, "Hello from the scripted agent.");

    let plain = self::host(&peer, None, std::env::temp_dir()).await;
    let cookie = page_cookie(&plain).await;
    let config = post(&plain, "/app/config", Some(&cookie), json!({})).await;
    assert_eq!(
        serde_json::from_str::<Value>(&config.text().await.unwrap()).unwrap(),
        json!({"json": {"agUi": null}})
    );
    let none = post(&plain, "/app/agent", Some(&cookie), run).await;
    assert_eq!(none.status(), 404);
}
