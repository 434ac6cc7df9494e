//! Starts the AG-UI test agent (`tests/agui-agent`, its README.md): the
//! official `@ag-ui/mastra` adapter over `@mastra/core` with a scripted
//! `MockLanguageModelV3`, `node server.mjs --port 0 --exit-on-stdin-close`.
//! Like the oRPC peer: `npm ci` once per process when `node_modules` is
//! absent; without Node.js, `None` and a loud skip notice, or a panic when
//! `CI=true`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use super::peer::{node_available, repo_root, Peer};

/// `tests/agui-agent`.
pub fn agent_dir() -> PathBuf {
    repo_root().join("tests").join("agui-agent")
}

static NPM_CI: Mutex<Option<Result<(), String>>> = Mutex::new(None);

fn ensure_installed() {
    let mut done = NPM_CI.lock().unwrap_or_else(|p| p.into_inner());
    if done.is_none() {
        let dir = agent_dir();
        let result = if dir.join("node_modules").join(".package-lock.json").exists() {
            Ok(())
        } else {
            eprintln!("AG-UI agent: running `npm ci` in {}", dir.display());
            match Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir)
                .stdout(Stdio::inherit())
                .stderr(Stdio::inherit())
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
        ensure_installed();
        Some(Self {
            process: Peer::spawn(&agent_dir(), &[]),
        })
    }

    /// `http://127.0.0.1:<port>/agent`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/agent", self.process.port)
    }
}
