//! Round-trip latency of one `devices.list` call, measured in one run
//! (docs/agents.md, "Latency"):
//!
//! 1. `registry.invoke` directly on the tab's registry (the baseline);
//! 2. `McpServer::call_tool` in process: the host composes the run's
//!    tools, dispatches through `AgentHost`, the tab's
//!    `BrowserSurfaceSession` runs the registry call, the result comes
//!    back through the host — no HTTP;
//! 3. an MCP `tools/call` over streamable HTTP on loopback, sent by rmcp's
//!    client to the same server.
//!
//! ```text
//! cargo run --release --example mcp_latency -- [--iterations N]
//! ```
//!
//! Prints the median and p95 of each, in microseconds, and their ratio to
//! the baseline. Measure in release: debug numbers mostly time serde.
//!
//! Each path runs `N` measured calls after `N / 10` warm-up calls
//! (default `N` = 400). Paths 2 and 3 go through one tab session, which
//! records at most 1,000 calls in its lifetime (docs/limits.md), so `N` is
//! at most 450.

#[allow(dead_code)]
#[path = "devices/app.rs"]
mod app;
#[allow(dead_code)]
#[path = "devices/backend.rs"]
mod backend;
#[allow(dead_code)]
#[path = "devices/embedded.rs"]
mod embedded;
#[allow(dead_code)]
#[path = "support/devices_mcp_host.rs"]
mod host;

use std::time::{Duration, Instant};

// `agent_surface::mcp` and `agent_surface::TokioTimer` need the facade's
// `mcp`/`tokio` features. An application enables them on `agent-surface`;
// a cargo example cannot enable its own package's features, so the examples
// name the same items through the runtime crate (a dev-dependency with `mcp`).
use agent_surface::AgentInvocation;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;

/// Paths 2 and 3 make `2 × (N + N / 10)` session calls: at most 990 of
/// the session's 1,000.
const MAX_ITERATIONS: usize = 450;

struct Stats {
    median: f64,
    p95: f64,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    Stats {
        median: at(0.5),
        p95: at(0.95),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), String> {
    let mut iterations = 400usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iterations" => {
                iterations = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--iterations needs a number")?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if !(10..=MAX_ITERATIONS).contains(&iterations) {
        return Err(format!(
            "--iterations must be 10 to {MAX_ITERATIONS}: the tab session records at most 1,000 calls"
        ));
    }
    host::set_quiet(true);
    let running = host::start(host::Setup {
        backend: backend::Backend::new(None),
        decision: host::UserDecision::Approve,
        decide_after: Duration::ZERO,
        database: surface_host::host::Database::Memory,
        replica: surface_host::host::DEFAULT_REPLICA_NAME.into(),
    })
    .await?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let app = axum::Router::new().route_service("/mcp", running.host.mcp_service());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let snapshot = running.registry.snapshot(&running.consumer);
    let list = snapshot
        .procedures
        .iter()
        .find(|p| p.procedure_id == "domain:devices.list")
        .ok_or("devices.list is not registered")?
        .clone();

    // 1. The baseline: the registry itself.
    let mut direct = Vec::with_capacity(iterations);
    for i in 0..iterations + iterations / 10 {
        let mut invocation = AgentInvocation::new(format!("direct-{i}"), "domain:devices.list");
        invocation.registration_id = Some(list.registration_id.clone());
        invocation.surface_version = Some(snapshot.surface_version);
        let start = Instant::now();
        let result = running.registry.invoke(invocation, &running.consumer).await;
        let elapsed = start.elapsed();
        if !result.is_ok() {
            return Err(format!("direct call failed: {result:?}"));
        }
        if i >= iterations / 10 {
            direct.push(elapsed);
        }
    }

    // 2. Through the host and the session, in process.
    let mut in_process = Vec::with_capacity(iterations);
    for i in 0..iterations + iterations / 10 {
        let start = Instant::now();
        let result = running
            .host
            .mcp()
            .call_tool(&running.run, &format!("tc-{i}"), "devices__list", None)
            .await;
        let elapsed = start.elapsed();
        if result.is_error {
            return Err(format!("in-process call failed: {result:?}"));
        }
        if i >= iterations / 10 {
            in_process.push(elapsed);
        }
    }

    // 3. MCP tools/call over streamable HTTP (rmcp's client).
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{port}/mcp"))
            .auth_header(running.token.clone());
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .map_err(|e| e.to_string())?;
    let mut over_http = Vec::with_capacity(iterations);
    for i in 0..iterations + iterations / 10 {
        let start = Instant::now();
        let result = client
            .call_tool(CallToolRequestParams::new("devices__list"))
            .await
            .map_err(|e| e.to_string())?;
        let elapsed = start.elapsed();
        if result.is_error == Some(true) {
            return Err(format!("MCP call failed: {result:?}"));
        }
        if i >= iterations / 10 {
            over_http.push(elapsed);
        }
    }
    let _ = client.cancel().await;

    let base = stats(direct);
    println!(
        "devices.list round trip ({iterations} measured calls per path after {} warm-up calls)",
        iterations / 10
    );
    println!(
        "{:<52} {:>12} {:>12} {:>8}",
        "path", "median µs", "p95 µs", "× median"
    );
    for (label, s) in [
        ("registry.invoke (direct)", &base),
        (
            "McpServer::call_tool (host + session, in process)",
            &stats(in_process),
        ),
        (
            "MCP tools/call over HTTP (rmcp client, loopback)",
            &stats(over_http),
        ),
    ] {
        println!(
            "{label:<52} {:>12.1} {:>12.1} {:>8.1}",
            s.median,
            s.p95,
            s.median / base.median
        );
    }
    Ok(())
}
