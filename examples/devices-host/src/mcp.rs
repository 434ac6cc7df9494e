//! The MCP endpoint of the console (`/mcp`, `docs/host.md`, "Replicas"):
//! an agent that speaks MCP acts in the user's open page. The page asks
//! for a run (`POST /app/mcp-run`) and gets a bearer token valid on every
//! replica of the host store; the agent's requests may reach any replica,
//! and each call runs on the replica holding the page's socket.

use std::net::SocketAddr;
use std::sync::Arc;

use agent_surface::host::AgentRun;
use agent_surface::mcp::McpServerOptions;
use agent_surface::ConsumerKind;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

use crate::server::{no_session, orpc_error, orpc_ok, random_hex, session_of, AppState};

/// The MCP server's options: loopback `Host`s (any port), no browser
/// origin, `serverInfo.name` `devices-host`.
pub(crate) fn options(_addr: SocketAddr) -> McpServerOptions {
    McpServerOptions {
        server_name: "devices-host".into(),
        ..McpServerOptions::default()
    }
}

/// `POST /app/mcp-run`: starts a run on this page's tab for an MCP client
/// and answers `{"json":{"runId","token","mcpUrl"}}` (the token is shown
/// once; only its SHA-256 is stored).
pub(crate) async fn mcp_run(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let Some((_, record)) = session_of(&state, &headers) else {
        return no_session();
    };
    let Some(tab_id) = record.tab_id.filter(|_| record.connection_id.is_some()) else {
        return orpc_error(
            StatusCode::CONFLICT,
            "CONFLICT",
            "This page has no live agent session yet; wait until it is connected.",
        );
    };
    let run_id = format!("mcp-run-{}", random_hex(8));
    let run = AgentRun {
        run_id: run_id.clone(),
        session_id: record.session_id.clone(),
        tab_id: Some(tab_id),
        kind: ConsumerKind::Embedded,
    };
    if let Err(e) = state.host.start_run(run).await {
        eprintln!("devices-host: starting an MCP run: {e}");
        return orpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_SERVER_ERROR",
            "The run could not be started.",
        );
    }
    match state.mcp.issue_token(&run_id).await {
        Ok(token) => orpc_ok(&json!({
            "runId": run_id,
            "token": token,
            "mcpUrl": format!("http://{}/mcp", host_of(&headers)),
        })),
        Err(e) => {
            eprintln!("devices-host: recording an MCP token: {e}");
            orpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL_SERVER_ERROR",
                "The token could not be recorded.",
            )
        }
    }
}

/// The request's `Host` (the page guard admitted it).
fn host_of(headers: &HeaderMap) -> String {
    headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string()
}
