//! The Node.js servers of the repository's tests that the demo and the
//! end-to-end tests start: the real oRPC backend (`node
//! tests/orpc-peer/server.mjs --port 0 --exit-on-stdin-close`, an
//! unmodified `@orpc/server` with zod 4 contracts) and, for the page's
//! chat panel, the AG-UI agent (`tests/agui-agent`: the official
//! `@ag-ui/mastra` adapter over `@mastra/core` with a scripted model; no
//! model provider, no network). `npm ci` runs first when `node_modules` is
//! missing. A server exits when its stdin pipe closes; [`Peer`] kills it
//! when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};

/// A running server.
pub struct Peer {
    child: Child,
    _stdin: Option<ChildStdin>,
    /// Its loopback port.
    pub port: u16,
}

impl Peer {
    /// Installs (once) and starts a fresh oRPC peer on an ephemeral port.
    ///
    /// # Errors
    /// Node.js or npm missing, `npm ci` failing, or the peer not printing
    /// its `{"port":N}` line.
    pub fn start() -> Result<Peer, String> {
        Self::start_in("orpc-peer", &[])
    }

    /// Installs (once) and starts a fresh AG-UI test agent
    /// (`tests/agui-agent`, telemetry off) on an ephemeral port; its
    /// endpoint is [`Peer::agent_url`].
    ///
    /// # Errors
    /// As [`Peer::start`].
    pub fn start_ag_ui_agent() -> Result<Peer, String> {
        Self::start_in("agui-agent", &[("MASTRA_TELEMETRY_DISABLED", "1")])
    }

    /// `node server.mjs --port 0 --exit-on-stdin-close` in `tests/{name}`.
    fn start_in(name: &str, env: &[(&str, &str)]) -> Result<Peer, String> {
        let dir = crate::page::repo_root().join("tests").join(name);
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
            .envs(env.iter().copied())
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
                .map_err(|e| format!("reading the {name} ready line: {e}"))?;
        }
        let port = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| v["port"].as_u64())
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else {
            let _ = child.kill();
            return Err(format!(
                "tests/{name} did not print {{\"port\":N}} (got {line:?})"
            ));
        };
        Ok(Peer {
            child,
            _stdin: stdin,
            port,
        })
    }

    /// The oRPC peer's RPC handler, `http://127.0.0.1:PORT/rpc`.
    pub fn rpc_url(&self) -> String {
        format!("http://127.0.0.1:{}/rpc", self.port)
    }

    /// The AG-UI agent's endpoint, `http://127.0.0.1:PORT/agent`.
    pub fn agent_url(&self) -> String {
        format!("http://127.0.0.1:{}/agent", self.port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
