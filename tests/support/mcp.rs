//! Starts `examples/devices_mcp.rs` (built next to the test binary, or with
//! `cargo build --example devices_mcp` when missing or stale), reads its
//! ready line `{"mcp":URL,"token":TOKEN}`, and kills it on drop; runs the
//! official MCP TypeScript SDK client in `tests/mcp-client`
//! (`npm ci` once per test process when its `node_modules` is missing).
//!
//! Without Node.js the TypeScript tests panic when `CI=true` and otherwise
//! print a loud skip notice (like the oRPC peer's tests).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::peer::{node_available, repo_root};

/// A running `devices_mcp` example; killed when dropped.
pub struct DevicesMcp {
    child: Child,
    /// The MCP endpoint (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    /// The bearer token it requires.
    pub token: String,
    stderr: Arc<Mutex<String>>,
    /// What it printed on stdout after the ready line (must stay empty).
    extra_stdout: Arc<Mutex<String>>,
    stdout_reader: Option<std::thread::JoinHandle<()>>,
    /// The directory of its own SQLite file, removed when it stops.
    database_dir: Option<PathBuf>,
}

fn newest_mtime(paths: &[PathBuf]) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.filter_map(Result::ok).map(|e| e.path()));
            }
        } else if let Ok(modified) = std::fs::metadata(&path).and_then(|m| m.modified()) {
            newest = newest.max(modified);
        }
    }
    newest
}

/// `target/<profile>/examples/devices_mcp`, built if missing or older than
/// its sources.
pub fn example_binary() -> PathBuf {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(path) = &*built {
        return path.clone();
    }
    let exe = std::env::current_exe().expect("current test executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/<profile>/deps");
    let binary = profile_dir
        .join("examples")
        .join(format!("devices_mcp{}", std::env::consts::EXE_SUFFIX));
    let root = repo_root();
    let sources = newest_mtime(&[
        root.join("examples/devices_mcp.rs"),
        root.join("examples/support"),
        root.join("examples/devices"),
        root.join("surface-runtime/src"),
        root.join("surface-host/src"),
        root.join("surface-store/src"),
        root.join("tests/fixtures/devices.manifest.json"),
    ]);
    let fresh = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .is_ok_and(|b| b >= sources);
    if !fresh {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .current_dir(&root)
            .args(["build", "--example", "devices_mcp"]);
        if let Some(profile) = profile_dir.file_name().and_then(|n| n.to_str()) {
            if profile != "debug" {
                build.args(["--profile", profile]);
            }
        }
        let status = build
            .status()
            .expect("run `cargo build --example devices_mcp`");
        assert!(
            status.success(),
            "`cargo build --example devices_mcp` failed"
        );
    }
    assert!(binary.exists(), "no example binary at {}", binary.display());
    *built = Some(binary.clone());
    binary
}

impl DevicesMcp {
    /// Starts the example with `args` (e.g. `["--approve"]`) on an
    /// ephemeral port.
    pub fn start(args: &[&str]) -> DevicesMcp {
        // The example's default store is a SQLite file; each start gets
        // its own (tests run in parallel), unless the test names one.
        let database_dir = (!args.contains(&"--database")).then(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            std::env::temp_dir().join(format!(
                "agent-surface-devices-mcp-{}-{nanos}",
                std::process::id()
            ))
        });
        let own_database = database_dir
            .as_ref()
            .map(|dir| format!("sqlite:{}", dir.join("host.db").display()));
        let mut child = Command::new(example_binary())
            .args(["--port", "0"])
            .args(args)
            .args(
                own_database
                    .iter()
                    .flat_map(|db| ["--database", db.as_str()]),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the devices_mcp example");
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let mut pipe = child.stderr.take().expect("stderr");
            let sink = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        let extra_stdout = Arc::new(Mutex::new(String::new()));
        let extra = extra_stdout.clone();
        let stdout_reader = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            // Anything after the ready line breaks the contract: kept, and
            // checked when the server is dropped.
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            *extra.lock().unwrap_or_else(|p| p.into_inner()) = rest;
        });
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "devices_mcp printed no ready line in 60 s; stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
        };
        let ready: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| {
            let _ = child.kill();
            panic!(
                "the ready line is not JSON ({e}): {line:?}; stderr:\n{}",
                stderr.lock().unwrap()
            )
        });
        let keys: Vec<&String> = ready
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["mcp", "token"], "ready line: {line}");
        let url = ready["mcp"].as_str().unwrap().to_string();
        let token = ready["token"].as_str().unwrap().to_string();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        DevicesMcp {
            child,
            url,
            token,
            stderr,
            extra_stdout,
            stdout_reader: Some(stdout_reader),
            database_dir,
        }
    }

    /// What the example logged so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for DevicesMcp {
    /// Kills the example; then (unless the test already failed) asserts
    /// that it printed nothing on stdout after the ready line.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.stdout_reader.take() {
            let _ = reader.join();
        }
        if let Some(dir) = &self.database_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if !std::thread::panicking() {
            let extra = self
                .extra_stdout
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            assert!(
                extra.is_empty(),
                "devices_mcp printed more than the ready line on stdout: {extra:?}"
            );
        }
    }
}

/// `tests/mcp-client`.
pub fn client_dir() -> PathBuf {
    repo_root().join("tests").join("mcp-client")
}

static NPM_CI: Mutex<Option<Result<(), String>>> = Mutex::new(None);

/// `npm ci` in `tests/mcp-client` when its `node_modules` is incomplete,
/// once per process.
///
/// # Panics
/// When `npm ci` fails.
pub fn ensure_client_installed() {
    let mut done = NPM_CI.lock().unwrap_or_else(|p| p.into_inner());
    if done.is_none() {
        let dir = client_dir();
        let result = if dir.join("node_modules").join(".package-lock.json").exists() {
            Ok(())
        } else {
            eprintln!("MCP client: running `npm ci` in {}", dir.display());
            match Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir)
                .status()
            {
                Ok(s) if s.success() => Ok(()),
                Ok(s) => Err(format!("`npm ci` in {} exited with {s}", dir.display())),
                Err(e) => Err(format!("could not run `npm ci` in {}: {e}", dir.display())),
            }
        };
        *done = Some(result);
    }
    if let Some(Err(e)) = &*done {
        panic!("{e}");
    }
}

/// Runs `node scenario.mjs <scenario> <url> <token>` with the official
/// TypeScript SDK client and returns its JSON report; `None` when Node.js
/// is missing outside CI.
pub fn ts_client(test: &str, scenario: &str, server: &DevicesMcp) -> Option<Value> {
    ts_client_on(test, scenario, &server.url, &server.token, &[server])
}

/// Runs `node scenario-v2.mjs <scenario> <url> <token>` with the official
/// TypeScript SDK v2 client pinned to protocol revision 2026-07-28 and
/// returns its JSON report; `None` when Node.js is missing outside CI.
pub fn ts_client_v2(test: &str, scenario: &str, server: &DevicesMcp) -> Option<Value> {
    run_client_script(
        "scenario-v2.mjs",
        test,
        scenario,
        &server.url,
        &server.token,
        &[server],
    )
}

/// [`ts_client_v2`] at `url` (several joined by commas for the
/// `replicas` scenario) with `token`.
pub fn ts_client_v2_on(
    test: &str,
    scenario: &str,
    url: &str,
    token: &str,
    servers: &[&DevicesMcp],
) -> Option<Value> {
    run_client_script("scenario-v2.mjs", test, scenario, url, token, servers)
}

/// [`ts_client`] at `url` (several joined by commas for the `replicas`
/// scenario) with `token`; a failure shows the stderr of `servers`.
pub fn ts_client_on(
    test: &str,
    scenario: &str,
    url: &str,
    token: &str,
    servers: &[&DevicesMcp],
) -> Option<Value> {
    run_client_script("scenario.mjs", test, scenario, url, token, servers)
}

fn run_client_script(
    script: &str,
    test: &str,
    scenario: &str,
    url: &str,
    token: &str,
    servers: &[&DevicesMcp],
) -> Option<Value> {
    if !node_available(test) {
        return None;
    }
    ensure_client_installed();
    let output = super::process::output_within(
        Command::new("node")
            .arg(client_dir().join(script))
            .args([scenario, url, token]),
        std::time::Duration::from_secs(30),
        &format!("node tests/mcp-client/{script} {scenario}"),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the TypeScript client failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        servers
            .iter()
            .map(|s| s.stderr())
            .collect::<Vec<_>>()
            .join("\n--- next server\n")
    );
    Some(
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("the TypeScript client's report is not JSON ({e}): {stdout}")
        }),
    )
}
