//! Starts the AG-UI test agent (`tests/agui-agent`, its README.md): the
//! official `@ag-ui/mastra` adapter over `@mastra/core` with a scripted
//! `MockLanguageModelV3`, `node server.mjs --port 0 --exit-on-stdin-close`.
//! Like the oRPC peer: `npm ci` once per process when `node_modules` is
//! absent; without Node.js, `None` and a loud skip notice, or a panic when
//! `CI=true`.
#![allow(dead_code)]

use std::path::PathBuf;

use super::peer::{ensure_npm_ci, node_available, repo_root, Peer};

/// `tests/agui-agent`.
pub fn agent_dir() -> PathBuf {
    repo_root().join("tests").join("agui-agent")
}

/// A running AG-UI agent (a [`Peer`] process); killed when dropped.
pub struct AguiAgent {
    process: Peer,
}

impl AguiAgent {
    /// Starts one, or `None` when Node is missing outside CI.
    pub fn start(test: &str) -> Option<Self> {
        if !node_available(test) {
            return None;
        }
        ensure_npm_ci(&agent_dir());
        Some(Self {
            process: Peer::spawn(&agent_dir(), &[]),
        })
    }

    /// `http://127.0.0.1:<port>/agent`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/agent", self.process.port)
    }
}
