//! The page's agent surface: the registry over the generated authority,
//! the oRPC bridge over `fetch`, the table's registrations and the
//! session to the agent host over a WebSocket.

use std::sync::Arc;

use agent_surface::bridge::{
    create_orpc_agent_bridge, invocation_id_header, CallOptions, ClientLimits,
    OrpcAgentBridgeOptions, OrpcCallError, OrpcClient,
};
use agent_surface::browser::{BrowserTimer, FetchOrpcClient};
use agent_surface::host::{
    BrowserSurfaceIdentity, BrowserSurfaceSession, BrowserSurfaceSessionOptions, ConfirmationMode,
};
use agent_surface::{
    AgentConsumer, AgentManifest, AgentProcedureBinding, ComponentDefinition, ConfirmationLevel,
    ErrorCode, ExecutionError, RegistrationError, RegistrationHandle, Retry, SurfaceRegistry,
    ViewCapability,
};
use devices_api::{api, DisableSelection, PurgeSelection, SessionInfo, TurnReport};
use leptos::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
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

/// The table's status filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Active devices.
    Active,
    /// Disabled devices.
    Disabled,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Disabled => "disabled",
        }
    }
}

/// The table's UI state (Leptos signals: `Copy`, shared).
#[derive(Clone, Copy)]
pub struct TableState {
    /// Every row loaded.
    pub rows: RwSignal<Vec<Device>>,
    /// The status filter (`None`: all).
    pub filter: RwSignal<Option<Status>>,
    /// The selected ids, in selection order.
    pub selection: RwSignal<Vec<String>>,
}

impl TableState {
    /// The rows the filter shows.
    pub fn visible(&self) -> Vec<Device> {
        let filter = self.filter.get();
        self.rows
            .get()
            .into_iter()
            .filter(|d| filter.is_none_or(|f| d.status == f.as_str()))
            .collect()
    }

    fn visible_untracked(&self) -> Vec<Device> {
        let filter = self.filter.get_untracked();
        self.rows
            .get_untracked()
            .into_iter()
            .filter(|d| filter.is_none_or(|f| d.status == f.as_str()))
            .collect()
    }

    /// Keeps only visible rows in the selection.
    pub fn prune(&self) {
        let visible = self.visible_untracked();
        self.selection
            .update(|s| s.retain(|id| visible.iter().any(|d| &d.id == id)));
    }

    /// Selects exactly `ids`; unknown or hidden ids are refused.
    pub fn select(&self, ids: Vec<String>) -> Result<(), Vec<String>> {
        let visible = self.visible_untracked();
        let unknown: Vec<String> = ids
            .iter()
            .filter(|id| !visible.iter().any(|d| &&d.id == id))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
        let mut deduped = Vec::with_capacity(ids.len());
        for id in ids {
            if !deduped.contains(&id) {
                deduped.push(id);
            }
        }
        self.selection.set(deduped);
        Ok(())
    }

    /// Adds or removes one row (a click on its checkbox).
    pub fn toggle(&self, id: &str) {
        self.selection
            .update(|s| match s.iter().position(|x| x == id) {
                Some(i) => {
                    s.remove(i);
                }
                None => s.push(id.to_string()),
            });
    }
}

/// Input of `view:devices.table.select`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectRows {
    /// Ids of visible rows to select; replaces the selection.
    pub device_ids: Vec<String>,
}

/// Input of `view:devices.table.filter`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilterRows {
    /// Show only devices with this status; omit to show all.
    #[serde(default)]
    pub status: Option<Status>,
}

/// The host's page API (oRPC-shaped, so the same client calls it).
pub fn app_client() -> FetchOrpcClient {
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

/// A fresh tab id (`crypto.randomUUID`, a secure context: https or
/// loopback).
pub fn fresh_tab_id() -> String {
    let uuid = web_sys::window()
        .and_then(|w| w.crypto().ok())
        .map(|c| c.random_uuid())
        .unwrap_or_else(|| format!("{:x}", (js_sys::Math::random() * 1e16) as u64));
    format!("tab-{uuid}")
}

/// Everything the page keeps for its agent surface.
pub struct Surface {
    /// The registry (created with the generated authority).
    pub registry: SurfaceRegistry,
    /// The session to the agent host.
    pub session: BrowserSurfaceSession,
    _registrations: Vec<RegistrationHandle>,
}

/// Creates the registry, the bridge, the table's registrations and the
/// session for `info`.
pub fn create(info: &SessionInfo, table: TableState) -> Result<Surface, String> {
    let authority = api::authority();
    let registry = SurfaceRegistry::builder(authority)
        .timer(Arc::new(BrowserTimer))
        .build();
    let manifest = AgentManifest::from_json_str(api::MANIFEST_JSON).map_err(|e| e.to_string())?;
    let bridge = create_orpc_agent_bridge(
        OrpcAgentBridgeOptions::new(Arc::new(rpc_client()), manifest)
            .call_context(invocation_id_header),
    );
    registry.set_procedure_executor(bridge.executor.clone());
    let registrations = register(&registry, table).map_err(|e| e.to_string())?;
    // Calls that need the user's confirmation wait in the page (the dialog)
    // and the host gets one answer for its original call.
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            registry.clone(),
            BrowserSurfaceIdentity::new(
                devices_api::APP_ID,
                devices_api::build_id(),
                info.session_id.clone(),
                fresh_tab_id(),
            ),
            AgentConsumer::embedded(info.user_id.clone()),
        )
        .confirmations(ConfirmationMode::Hold)
        .timer(Arc::new(BrowserTimer)),
    );
    Ok(Surface {
        registry,
        session,
        _registrations: registrations,
    })
}

fn register(
    registry: &SurfaceRegistry,
    table: TableState,
) -> Result<Vec<RegistrationHandle>, RegistrationError> {
    let component = registry.register_component(
        ComponentDefinition::new("devices.table", "main")
            .description("The devices table; its selection feeds devices.disable and devices.purge")
            .capability(ViewCapability::new::<SelectRows, _, _>(
                "select",
                "Select rows of the devices table (replaces the selection)",
                move |input: SelectRows| {
                    let outcome = table.select(input.device_ids);
                    let selected = table.selection.get_untracked();
                    async move {
                        match outcome {
                            Ok(()) => Ok(json!({ "selected": selected })),
                            Err(unknown) => Err(ExecutionError::new(
                                ErrorCode::InvalidInput,
                                "Some ids are not visible rows of the table; nothing was selected.",
                                Retry::WithChanges,
                            )
                            .with_detail("unknownIds", unknown)),
                        }
                    }
                },
            ))
            .capability(ViewCapability::new::<FilterRows, _, _>(
                "filter",
                "Filter the devices table by status; hidden rows leave the selection",
                move |input: FilterRows| {
                    table.filter.set(input.status);
                    table.prune();
                    let visible: Vec<String> = table
                        .visible_untracked()
                        .into_iter()
                        .map(|d| d.id)
                        .collect();
                    let selected = table.selection.get_untracked();
                    async move { Ok(json!({ "visible": visible, "selected": selected })) }
                },
            )),
    )?;
    let list = registry.register_procedure(AgentProcedureBinding::new(api::devices::list()))?;
    let selected_count = move || table.selection.get_untracked().len();
    let disable = registry.register_procedure(
        AgentProcedureBinding::new(api::devices::disable())
            .bind(move || DisableSelection {
                device_ids: table.selection.get_untracked(),
            })
            .when(move || selected_count() > 0)
            .unavailable_reason("Select at least one device in the table first")
            .confirmation(ConfirmationLevel::Required)
            .describe(move || applies_to(selected_count()))
            .context(&component),
    )?;
    let purge = registry.register_procedure(
        AgentProcedureBinding::new(api::devices::purge())
            .bind(move || PurgeSelection {
                device_ids: table.selection.get_untracked(),
            })
            .when(move || selected_count() > 0)
            .unavailable_reason("Select at least one device in the table first")
            .describe(move || applies_to(selected_count()))
            .context(&component),
    )?;
    Ok(vec![component, list, disable, purge])
}

/// Re-announces after a UI change the surface shows (availability, the
/// descriptions' counts).
pub fn surface_changed(registry: &SurfaceRegistry) {
    registry.notify_changed();
}

/// The contextual description of the selection-bound procedures.
fn applies_to(count: usize) -> String {
    match count {
        1 => "Applies to the device selected in the table.".to_string(),
        n => format!("Applies to the {n} devices selected in the table."),
    }
}
