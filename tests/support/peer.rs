//! Starts the real oRPC test peer (`tests/orpc-peer`, its README.md) for
//! interop tests: `node tests/orpc-peer/server.mjs --port 0
//! --exit-on-stdin-close` with a piped stdin, reads its `{"port":N}` line,
//! and kills it on drop (the closed pipe stops it if this process dies).
//!
//! `npm ci` runs once per test process when `node_modules` is absent. When
//! Node.js is missing, [`Peer::start`] panics if `CI=true` and otherwise
//! prints a loud skip notice and returns `None`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

use surface_runtime::bridge::HttpOrpcClient;

/// How long the peer may take to print its ready line (Node.js starts it
/// in well under a second; a loaded CI machine gets some slack).
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

/// A running peer; killed when dropped.
pub struct Peer {
    child: Child,
    // Kept open: started with `--exit-on-stdin-close`, the peer exits when
    // this pipe closes (also when the test process dies without a signal).
    _stdin: Option<ChildStdin>,
    /// Its loopback port.
    pub port: u16,
    /// `http`, or `https` when started with [`Peer::start_tls`].
    pub scheme: &'static str,
}

/// The requester's credential (the peer's README.md, "Auth").
pub const USER_TOKEN: &str = "Bearer user-token";
/// The application approver's credential, only for the decision
/// endpoint (`POST /approvals/decide`).
pub const APPROVER_TOKEN: &str = "Bearer approver-token";

/// Repository root (the facade crate's manifest dir).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/orpc-peer`.
pub fn peer_dir() -> PathBuf {
    repo_root().join("tests").join("orpc-peer")
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Whether `node` runs. With `CI=true` a missing Node.js panics; otherwise
/// a skip notice is printed and `false` returned.
pub fn node_available(test: &str) -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if ci() {
            panic!(
                "Node.js is required for the oRPC interop tests (CI=true): install Node.js >= 20"
            );
        }
        // Written to the process's stderr directly: libtest captures
        // `eprintln!`, and a skip must be visible in a passing run.
        let _ = writeln!(
            std::io::stderr(),
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             !!! SKIPPED {test}: Node.js (`node`) is not installed, so the real\n\
             !!! oRPC peer cannot start. Install Node.js >= 20 to run this test;\n\
             !!! with CI=true this is a failure instead of a skip.\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        );
    }
    ok
}

/// `npm ci` results per package directory, once per process.
static NPM_CI: Mutex<Vec<(PathBuf, Result<(), String>)>> = Mutex::new(Vec::new());

/// Runs `npm ci` in the peer directory when its `node_modules` is absent,
/// once per process.
///
/// # Panics
/// When `npm ci` fails.
pub fn ensure_node_modules() {
    ensure_npm_ci(&peer_dir());
}

/// Runs `npm ci` in `dir` when its `node_modules` is absent (npm writes
/// `node_modules/.package-lock.json` last: a complete install), once per
/// process and directory.
///
/// # Panics
/// When `npm ci` fails.
pub fn ensure_npm_ci(dir: &Path) {
    let mut done = NPM_CI.lock().unwrap_or_else(|p| p.into_inner());
    if !done.iter().any(|(d, _)| d == dir) {
        let result = if dir.join("node_modules").join(".package-lock.json").exists() {
            Ok(())
        } else {
            eprintln!("running `npm ci` in {}", dir.display());
            match Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(dir)
                .stdout(Stdio::inherit())
                .stderr(Stdio::inherit())
                .status()
            {
                Ok(s) if s.success() => Ok(()),
                Ok(s) => Err(format!("`npm ci` in {} exited with {s}", dir.display())),
                Err(e) => Err(format!("could not run `npm ci` in {}: {e}", dir.display())),
            }
        };
        done.push((dir.to_path_buf(), result));
    }
    if let Some((_, Err(e))) = done.iter().find(|(d, _)| d == dir) {
        panic!("{e}");
    }
}

impl Peer {
    /// Starts a fresh peer (its state is per process), or `None` when Node
    /// is missing outside CI (see the module docs).
    ///
    /// # Panics
    /// When the peer cannot be installed or started.
    pub fn start(test: &str) -> Option<Peer> {
        if !node_available(test) {
            return None;
        }
        ensure_node_modules();
        Some(Self::spawn(&peer_dir(), &[]))
    }

    /// [`Peer::start`] serving https with the PEM certificate and key at
    /// `cert` and `key` (`--tls-cert`, `--tls-key`).
    ///
    /// # Panics
    /// As [`Peer::start`].
    pub fn start_tls(test: &str, cert: &Path, key: &Path) -> Option<Peer> {
        if !node_available(test) {
            return None;
        }
        ensure_node_modules();
        let args = [
            "--tls-cert".as_ref(),
            cert.as_os_str(),
            "--tls-key".as_ref(),
            key.as_os_str(),
        ];
        Some(Self::spawn(&peer_dir(), &args))
    }

    pub fn spawn(dir: &Path, extra: &[&std::ffi::OsStr]) -> Peer {
        let scheme = if extra.is_empty() { "http" } else { "https" };
        let mut child = Command::new("node")
            .arg(dir.join("server.mjs"))
            .args(["--port", "0", "--exit-on-stdin-close"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn `node tests/orpc-peer/server.mjs --port 0`");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("peer stdout");
        // The ready line, read on a thread so that a peer that starts but
        // never prints it fails the test in seconds instead of hanging it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
            let _ = tx.send(read);
        });
        let line = match rx.recv_timeout(READY_WITHIN) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => {
                let _ = child.kill();
                panic!("could not read the peer's ready line: {e}");
            }
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "the peer printed no `{{\"port\":N}}` line within {} s of starting",
                    READY_WITHIN.as_secs()
                );
            }
        };
        let ready: serde_json::Value = match serde_json::from_str(line.trim()) {
            Ok(v) => v,
            Err(e) => {
                let _ = child.kill();
                panic!("the peer's first stdout line is not `{{\"port\":N}}` ({e}): {line:?}");
            }
        };
        let port = ready["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or_else(|| panic!("no port in the peer's ready line: {line:?}"));
        Peer {
            child,
            _stdin: stdin,
            port,
            scheme,
        }
    }

    /// `http://127.0.0.1:<port>` (`https://…` for [`Peer::start_tls`]).
    pub fn origin(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }

    /// The domain router's URL prefix (`…/rpc`).
    pub fn rpc_url(&self) -> String {
        format!("{}/rpc", self.origin())
    }

    /// The examples' governed gateway's URL prefix (`…/gateway`: the
    /// domain router's devices, `tests/orpc-peer/README.md`).
    pub fn gateway_url(&self) -> String {
        format!("{}/gateway", self.origin())
    }

    /// The interop gateway's URL prefix (`…/capabilities`: `d1`, `d2`, `d3`,
    /// the set of ORIGINALS' "The gateway an interop test meets").
    pub fn capabilities_url(&self) -> String {
        format!("{}/capabilities", self.origin())
    }

    /// The application's decision endpoint (`…/approvals/decide`, plain
    /// JSON, the approver's token).
    pub fn approver_url(&self) -> String {
        format!("{}/approvals/decide", self.origin())
    }

    /// An HTTP oRPC client for the domain router, authenticated as the user.
    pub fn rpc_client(&self) -> HttpOrpcClient {
        HttpOrpcClient::new(self.rpc_url()).with_header("authorization", USER_TOKEN)
    }

    /// An HTTP oRPC client for the examples' gateway, authenticated as
    /// the user.
    pub fn gateway_client(&self) -> HttpOrpcClient {
        HttpOrpcClient::new(self.gateway_url()).with_header("authorization", USER_TOKEN)
    }

    /// Decides an approval at the application's decision endpoint with the
    /// approver's token: `(HTTP status, JSON body)`.
    ///
    /// # Panics
    /// When the peer cannot be reached or answers something that is not
    /// JSON.
    pub async fn decide(&self, approval_id: &str, status: &str) -> (u16, serde_json::Value) {
        decide_at(&self.approver_url(), APPROVER_TOKEN, approval_id, status).await
    }
}

/// `POST {approvalId, status}` to a decision endpoint `url` with
/// `authorization`: `(HTTP status, JSON body)`.
///
/// # Panics
/// When the endpoint cannot be reached or answers something that is not
/// JSON.
pub async fn decide_at(
    url: &str,
    authorization: &str,
    approval_id: &str,
    status: &str,
) -> (u16, serde_json::Value) {
    let body = serde_json::json!({ "approvalId": approval_id, "status": status });
    let response = reqwest::Client::new()
        .post(url)
        .header("authorization", authorization)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let code = response.status().as_u16();
    let bytes = response
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("POST {url} answered {code}, unreadable: {e}"));
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("POST {url} answered {code} without JSON ({e}): {bytes:?}"));
    (code, body)
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
