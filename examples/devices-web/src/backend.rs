//! The page's servers: the backend's RPC handler and the host's page API
//! (`/app`), both oRPC over `fetch` on the page's origin.

use agent_surface::bridge::{CallOptions, ClientLimits, OrpcCallError, OrpcClient};
use agent_surface::browser::FetchOrpcClient;
use devices_api::{api, RunStatus, SessionInfo, TurnReport};
use serde_json::json;

/// One row of the devices table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Device id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// `active` or `disabled`.
    pub status: String,
}

/// The host's page API (oRPC-shaped, so the same client calls it).
fn app_client() -> FetchOrpcClient {
    // A turn waits while the user decides: allow 10 minutes.
    FetchOrpcClient::with_limits(
        "/app",
        ClientLimits::default().with_timeout(std::time::Duration::from_secs(600)),
    )
}

/// The backend's RPC handler, proxied same-origin by the host (which adds
/// the backend credential for the session cookie).
pub fn rpc_client() -> FetchOrpcClient {
    FetchOrpcClient::new("/rpc")
}

/// `POST /app/session`.
pub async fn session_info() -> Result<SessionInfo, String> {
    let value = app_client()
        .call("session", None, CallOptions::default())
        .await
        .map_err(|e| describe_call_error(&e))?;
    serde_json::from_value(value)
        .map_err(|e| format!("the host answered an unexpected session: {e}"))
}

/// `POST /app/config`: the path of the host's AG-UI agent for the chat
/// panel (`/app/agent`), or `None` when the host has none.
pub async fn agent_path() -> Result<Option<String>, String> {
    let value = app_client()
        .call("config", None, CallOptions::default())
        .await
        .map_err(|e| describe_call_error(&e))?;
    Ok(value["agUi"].as_str().map(str::to_string))
}

/// `POST /app/turn`.
pub async fn run_turn(script: &str) -> Result<TurnReport, String> {
    let value = app_client()
        .call(
            "turn",
            Some(json!({ "script": script })),
            CallOptions::default(),
        )
        .await
        .map_err(|e| describe_call_error(&e))?;
    serde_json::from_value(value)
        .map_err(|e| format!("the host answered an unexpected report: {e}"))
}

/// `POST /app/run`: the run's approvals and, once a person decided and the
/// host resumed the call, their outcome.
pub async fn run_status(run_id: &str) -> Result<RunStatus, String> {
    let value = app_client()
        .call(
            "run",
            Some(json!({ "runId": run_id })),
            CallOptions::default(),
        )
        .await
        .map_err(|e| describe_call_error(&e))?;
    serde_json::from_value(value)
        .map_err(|e| format!("the host answered an unexpected run status: {e}"))
}

/// `POST /app/mcp-run`: a run on this page's tab (`tab_id`, the one it
/// announced) for an MCP client — the host's MCP endpoint and the run's
/// bearer token (shown once).
pub async fn mcp_run(tab_id: &str) -> Result<(String, String), String> {
    let value = app_client()
        .call(
            "mcp-run",
            Some(json!({ "tabId": tab_id })),
            CallOptions::default(),
        )
        .await
        .map_err(|e| describe_call_error(&e))?;
    match (value["mcpUrl"].as_str(), value["token"].as_str()) {
        (Some(url), Some(token)) => Ok((url.to_string(), token.to_string())),
        _ => Err("the host answered an unexpected MCP run".into()),
    }
}

/// Loads the table through `devices.list` (the generated output type).
pub async fn load_devices() -> Result<Vec<Device>, String> {
    let value = rpc_client()
        .call("devices.list", Some(json!({})), CallOptions::default())
        .await
        .map_err(|e| describe_call_error(&e))?;
    let output: api::devices::list::Output = serde_json::from_value(value)
        .map_err(|e| format!("the server answered an unexpected device list: {e}"))?;
    Ok(output
        .devices
        .into_iter()
        .map(|d| Device {
            id: d.id,
            name: d.name,
            status: d.status.to_string(),
        })
        .collect())
}

fn describe_call_error(error: &OrpcCallError) -> String {
    match error {
        OrpcCallError::Orpc(e) => format!("the server refused ({}): {}", e.code, e.message),
        OrpcCallError::Timeout { .. } => "the server did not answer in time".to_string(),
        OrpcCallError::Transport { .. } => "the server could not be reached".to_string(),
        other => format!("the server answered something unexpected: {other}"),
    }
}
