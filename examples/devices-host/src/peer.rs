//! The real oRPC backend for the demo and the end-to-end test: `node
//! tests/orpc-peer/server.mjs --port 0 --exit-on-stdin-close` (an unmodified
//! `@orpc/server` with zod 4 contracts), `npm ci` first when `node_modules`
//! is missing. The peer exits when its stdin pipe closes; [`Peer`] kills it
//! when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};

/// A running peer.
pub struct Peer {
    child: Child,
    _stdin: Option<ChildStdin>,
    /// Its loopback port.
    pub port: u16,
}

impl Peer {
    /// Installs (once) and starts a fresh peer on an ephemeral port.
    ///
    /// # Errors
    /// Node.js or npm missing, `npm ci` failing, or the peer not printing
    /// its `{"port":N}` line.
    pub fn start() -> Result<Peer, String> {
        let dir = crate::page::repo_root().join("tests").join("orpc-peer");
        if !dir.join("node_modules").join(".package-lock.json").exists() {
            eprintln!("devices-host: npm ci in {}", dir.display());
            let mut npm = Command::new("npm");
            let ci = npm
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir);
            if !ci.status().is_ok_and(|s| s.success()) {
                let dir = dir.display();
                return Err(format!(
                    "npm ci in {dir} failed (Node.js >= 20 and npm are needed)"
                ));
            }
        }
        let mut child = Command::new("node")
            .args(["server.mjs", "--port", "0", "--exit-on-stdin-close"])
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("could not start node (Node.js >= 20 is needed): {e}"))?;
        let stdin = child.stdin.take();
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            BufReader::new(stdout)
                .read_line(&mut line)
                .map_err(|e| format!("reading the peer's ready line: {e}"))?;
        }
        let port = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| v["port"].as_u64())
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else {
            let _ = child.kill();
            return Err(format!(
                "the oRPC peer did not print {{\"port\":N}} (got {line:?})"
            ));
        };
        Ok(Peer {
            child,
            _stdin: stdin,
            port,
        })
    }

    /// The peer's RPC handler, `http://127.0.0.1:PORT/rpc`.
    pub fn rpc_url(&self) -> String {
        format!("http://127.0.0.1:{}/rpc", self.port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
