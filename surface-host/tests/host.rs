//! The agent host as one component (`surface_host::host`; docs/host.md,
//! "The Host"): a `Host` on a SQLite file with a page's session connected
//! in process, its MCP tools and a call, and the same file reopened by a
//! new `Host` — the run and its token survive.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;

use std::time::Duration;

use bytes::Bytes;
use host_support::*;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use surface_host::host::{Database, Host, InProcessTab};
use surface_runtime::host::{
    AgentRun, BrowserSurfaceSession, BrowserSurfaceSessionOptions, KnownBuild,
};
use surface_runtime::{AgentConsumer, ConsumerKind, TokioTimer};

/// A fresh database file under the system's temporary directory.
fn database_file(name: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir()
        .join(format!(
            "agent-surface-host-{name}-{}-{nanos}",
            std::process::id()
        ))
        .join("host.db")
}

async fn host_on(path: &std::path::Path) -> Host {
    Host::builder(Database::sqlite(path))
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .expect("the host starts on a new SQLite file")
}

/// A 2026-07-28 `tools/list` with `token`: the status and the tool names.
async fn list_tools(host: &Host, token: &str) -> (u16, Vec<String>) {
    let request = http::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}})
            .to_string(),
        )))
        .unwrap();
    let mut service = host.mcp_service();
    let response = tower_service::Service::call(&mut service, request)
        .await
        .unwrap();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let first = match tokio::time::timeout(Duration::from_secs(5), body.frame()).await {
        Ok(Some(Ok(frame))) => frame
            .into_data()
            .map(|d| String::from_utf8_lossy(&d).into_owned())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let data = first
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&first);
    let names = serde_json::from_str::<Value>(data.trim())
        .ok()
        .and_then(|m| m["result"]["tools"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    (status, names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_on_sqlite_serves_an_in_process_tab_and_keeps_runs_and_tokens_across_a_restart() {
    let path = database_file("restart");
    let host = host_on(&path).await;
    assert_eq!(host.replica_name(), "host");
    host.start_run(AgentRun {
        run_id: "run-1".into(),
        session_id: "sess-1".into(),
        tab_id: Some("tab-1".into()),
        kind: ConsumerKind::Embedded,
    })
    .await
    .unwrap();
    let token = host.issue_token("run-1").await.unwrap();

    let fx = Fixture::new();
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            fx.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        )
        .timer(std::sync::Arc::new(TokioTimer)),
    );
    let tab = InProcessTab::connect(&host, &session, "u1").await.unwrap();
    assert!(tab.connection_id().starts_with("inproc-"));
    assert_eq!(tab.connection_id().len(), "inproc-".len() + 32);

    // Connected: the host has the page's surface.
    let tools = host.mcp().tools("run-1").await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"devices__list"), "{names:?}");
    let (status, listed) = list_tools(&host, &token).await;
    assert_eq!(status, 200);
    assert_eq!(listed, names);

    // A call runs in the page's session and answers the MCP client.
    let answer = host
        .mcp()
        .call_tool("run-1", "tc-1", "devices__list", Some(json!({})))
        .await;
    assert!(!answer.is_error, "{answer:?}");
    assert_eq!(fx.executor.count(), 1);
    assert_eq!(
        fx.executor.calls.lock().unwrap()[0],
        ("devices.list".to_string(), json!({}))
    );

    // A restart: a new Host on the same file restores the run; the token
    // still authenticates (no tab yet: no tools).
    drop(tab);
    drop(host);
    let again = host_on(&path).await;
    let runs: Vec<&str> = again
        .recovery()
        .runs
        .iter()
        .map(|r| r.run_id.as_str())
        .collect();
    assert_eq!(runs, ["run-1"]);
    let (status, listed) = list_tools(&again, &token).await;
    assert_eq!(status, 200);
    assert_eq!(listed, Vec::<String>::new());
    let (status, _) = list_tools(&again, "not-a-token").await;
    assert_eq!(status, 401);
    // Revoked (in the store): refused from the next request on.
    assert!(again.revoke_token(&token).await.unwrap());
    assert!(!again.revoke_token(&token).await.unwrap());
    let (status, _) = list_tools(&again, &token).await;
    assert_eq!(status, 401);
    drop(again);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn a_host_in_memory_starts_without_a_file() {
    let host = Host::builder("memory".parse().unwrap())
        .replica("r-1")
        .build()
        .await
        .unwrap();
    assert_eq!(host.replica_name(), "r-1");
    assert!(host.recovery().runs.is_empty());
}
