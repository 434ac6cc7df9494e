//! A small W3C WebDriver client over reqwest: just the commands the
//! end-to-end test needs (session, navigation, elements, clicks, typing,
//! text, script, windows, screenshots), against Debian's `chromedriver`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
#[cfg(unix)]
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The Chromium flags of a reproducible headless run.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,860",
];

/// A running `chromedriver` on an ephemeral loopback port; killed on drop.
pub struct Driver {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Driver {
    /// Starts `chromedriver --port=0` and reads the port it chose.
    pub fn start(chromedriver: &Path) -> Result<Driver, String> {
        // Its own process group: Chromium inherits it, so dropping the
        // driver (also when a test fails before `quit`) ends the browser too.
        let mut command = Command::new(chromedriver);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", chromedriver.display()))?;
        let stdout = child.stdout.take().ok_or("no chromedriver stdout")?;
        let mut reader = BufReader::new(stdout);
        let mut port = None;
        let mut line = String::new();
        for _ in 0..20 {
            line.clear();
            if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                break;
            }
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                port = rest.trim().trim_end_matches('.').parse::<u16>().ok();
                break;
            }
        }
        // Keep draining stdout so chromedriver never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        let Some(port) = port else {
            let _ = child.kill();
            return Err(format!(
                "chromedriver did not report its port (last line {line:?})"
            ));
        };
        Ok(Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        })
    }

    /// A new browser session with the [`CHROMIUM_FLAGS`] and a fresh
    /// profile directory.
    pub async fn session(&self, chromium: &Path, profile: &Path) -> Result<Session, String> {
        self.session_with(chromium, profile, &[]).await
    }

    /// [`Driver::session`] with `extra` Chromium flags
    /// (`--enable-features=WebMCP`).
    pub async fn session_with(
        &self,
        chromium: &Path,
        profile: &Path,
        extra: &[&str],
    ) -> Result<Session, String> {
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(format!("--user-data-dir={}", profile.display()));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let answer = send(
            &self.http,
            reqwest::Method::POST,
            &format!("{}/session", self.base),
            Some(capabilities),
        )
        .await?;
        let id = answer["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session id in {answer}"))?
            .to_string();
        Ok(Session {
            url: format!("{}/session/{id}", self.base),
            http: self.http.clone(),
        })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and the Chromium it started.
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let mut request = http
        .request(method.clone(), url)
        .timeout(Duration::from_secs(60));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let answer = request
        .send()
        .await
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let status = answer.status();
    let text = answer
        .text()
        .await
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(format!("{method} {url}: HTTP {status}: {text}"));
    }
    Ok(value["value"].clone())
}

/// One browser session.
pub struct Session {
    url: String,
    http: reqwest::Client,
}

impl Session {
    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        send(
            &self.http,
            reqwest::Method::POST,
            &format!("{}{path}", self.url),
            Some(body),
        )
        .await
    }

    async fn get(&self, path: &str) -> Result<Value, String> {
        send(
            &self.http,
            reqwest::Method::GET,
            &format!("{}{path}", self.url),
            None,
        )
        .await
    }

    /// Navigates.
    pub async fn goto(&self, url: &str) -> Result<(), String> {
        self.post("/url", json!({ "url": url })).await.map(drop)
    }

    /// The first element matching `css`, if any.
    pub async fn find(&self, css: &str) -> Result<Option<String>, String> {
        let found = self
            .post("/elements", json!({"using": "css selector", "value": css}))
            .await?;
        Ok(found
            .as_array()
            .and_then(|a| a.first())
            .and_then(|e| e[ELEMENT].as_str())
            .map(str::to_string))
    }

    /// Waits (up to `timeout`) for an element matching `css`.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> Result<String, String> {
        let start = Instant::now();
        loop {
            if let Some(element) = self.find(css).await? {
                return Ok(element);
            }
            if start.elapsed() > timeout {
                return Err(format!("no element `{css}` within {timeout:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the text of `css` satisfies `check`; returns it.
    pub async fn wait_for_text(
        &self,
        css: &str,
        timeout: Duration,
        check: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let start = Instant::now();
        let mut last = String::new();
        loop {
            if let Some(element) = self.find(css).await? {
                // The element may be re-rendered between find and read.
                if let Ok(text) = self.text(&element).await {
                    if check(&text) {
                        return Ok(text);
                    }
                    last = text;
                }
            }
            if start.elapsed() > timeout {
                return Err(format!(
                    "`{css}` never matched within {timeout:?}; last text {last:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the element matching `css` (waits for it first).
    pub async fn click(&self, css: &str) -> Result<(), String> {
        let element = self.wait_for(css, Duration::from_secs(10)).await?;
        self.post(&format!("/element/{element}/click"), json!({}))
            .await
            .map(drop)
    }

    /// Types `text` into the element matching `css` (waits for it first),
    /// key by key as a user would.
    pub async fn type_text(&self, css: &str, text: &str) -> Result<(), String> {
        let element = self.wait_for(css, Duration::from_secs(10)).await?;
        self.post(
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await
        .map(drop)
    }

    /// An element's rendered text.
    pub async fn text(&self, element: &str) -> Result<String, String> {
        Ok(self
            .get(&format!("/element/{element}/text"))
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns
    /// its value.
    pub async fn execute(&self, script: &str, args: Value) -> Result<Value, String> {
        self.post("/execute/sync", json!({"script": script, "args": args}))
            .await
    }

    /// A PNG of the viewport, written to `path`.
    pub async fn screenshot(&self, path: &Path) -> Result<PathBuf, String> {
        let data = self.get("/screenshot").await?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .map_err(|e| format!("screenshot is not base64: {e}"))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, png).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path.to_path_buf())
    }

    /// The current window handle.
    pub async fn window(&self) -> Result<String, String> {
        Ok(self
            .get("/window")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Opens a new tab and returns its handle (the current window stays).
    pub async fn new_tab(&self) -> Result<String, String> {
        let answer = self.post("/window/new", json!({"type": "tab"})).await?;
        Ok(answer["handle"].as_str().unwrap_or_default().to_string())
    }

    /// Switches to window `handle`.
    pub async fn switch_to(&self, handle: &str) -> Result<(), String> {
        self.post("/window", json!({ "handle": handle }))
            .await
            .map(drop)
    }

    /// Closes the current window.
    pub async fn close_window(&self) -> Result<(), String> {
        send(
            &self.http,
            reqwest::Method::DELETE,
            &format!("{}/window", self.url),
            None,
        )
        .await
        .map(drop)
    }

    /// Ends the session (closes the browser).
    pub async fn quit(&self) {
        let _ = send(&self.http, reqwest::Method::DELETE, &self.url, None).await;
    }
}
