//! The devices console's shared API crate: what both the page
//! (`examples/devices-web`, wasm32) and its agent host
//! (`examples/devices-host`) compile from the backend's agent manifest, so
//! both have the same generated types, the same typed references and the
//! same compiler-generated authority — the host knows the page's build
//! artifact because it links the same code.
//!
//! * [`api`] — `manifest!` of `tests/fixtures/devices.manifest.json` (the
//!   one the real oRPC peer's zod contracts generate).
//! * [`view`] — `view_inputs!` of `view-inputs.json`: the input types of
//!   the page's view capabilities, typed and validated at compile time.
//! * [`DisableSelection`], [`PurgeSelection`] — the table's selection bound
//!   into `devices.disable` / `devices.purge` (locked: the agent never sees
//!   or sets `deviceIds`).
//! * [`APP_ID`], [`build_id`], [`known_build`] — the build identity the page
//!   announces and the host accepts.
//! * The small JSON types the page and the host exchange besides the
//!   session protocol ([`SessionInfo`], [`TurnReport`]).
#![forbid(unsafe_code)]

use agent_surface::agent_procedure;
use serde::{Deserialize, Serialize};

/// The input types of the page's view capabilities — the table's
/// [`view::SelectRows`] and [`view::FilterRows`], the details panel's
/// [`view::ShowDetails`] — with their schemas and validators generated at
/// compile time (`view_inputs!` of `view-inputs.json`): the page registers
/// them without the `dynamic` feature.
pub mod view {
    agent_surface::view_inputs!("view-inputs.json");
}

/// Everything `manifest!` generates from the devices manifest.
pub mod api {
    agent_surface::manifest!("../../tests/fixtures/devices.manifest.json");
}

/// The selected rows, bound into `devices.disable` (locked).
#[agent_procedure(api, "devices.disable")]
pub struct DisableSelection {
    /// The selected device ids, in selection order.
    pub device_ids: Vec<String>,
}

/// The selected rows, bound into `devices.purge` (locked).
#[agent_procedure(api, "devices.purge")]
pub struct PurgeSelection {
    /// The selected device ids, in selection order.
    pub device_ids: Vec<String>,
}

/// The device the details panel shows, bound into `devices.rename`
/// (locked: the agent chooses only the new name).
#[agent_procedure(api, "devices.rename")]
pub struct RenameShown {
    /// The shown device's id.
    pub device_id: String,
}

/// The application id the page announces.
pub const APP_ID: &str = "devices-console";

/// The page's build id: this crate's version and the first 16 hex digits
/// of the manifest digest, so a page built from another manifest is not
/// this build (its announcement is refused).
pub fn build_id() -> String {
    let digest = api::MANIFEST_DIGEST
        .rsplit(':')
        .next()
        .unwrap_or(api::MANIFEST_DIGEST);
    format!(
        "devices-web-{}-{}",
        env!("CARGO_PKG_VERSION"),
        &digest[..digest.len().min(16)]
    )
}

/// The host's record of the page's build artifact: [`APP_ID`],
/// [`build_id`] and the generated authority, with the table's view
/// capabilities (feature `host`).
#[cfg(feature = "host")]
pub fn known_build() -> agent_surface::host::KnownBuild {
    agent_surface::host::KnownBuild::new(APP_ID, build_id(), api::authority())
        .with_view_capabilities([
            READ_STATE_CAPABILITY,
            SELECT_CAPABILITY,
            CLEAR_SELECTION_CAPABILITY,
            FILTER_CAPABILITY,
        ])
}

/// The table's observation of what it shows (rows, selection, filter).
pub const READ_STATE_CAPABILITY: &str = "view:devices.table.readState";
/// The table's view capability that replaces the selection.
pub const SELECT_CAPABILITY: &str = "view:devices.table.select";
/// The table's view capability that empties the selection.
pub const CLEAR_SELECTION_CAPABILITY: &str = "view:devices.table.clearSelection";
/// The table's view capability that filters rows by status.
pub const FILTER_CAPABILITY: &str = "view:devices.table.filter";

/// `GET /session`: what the host tells the page it issued the session
/// cookie to. camelCase JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session the page's announcements must carry.
    pub session_id: String,
    /// The user the session belongs to.
    pub user_id: String,
    /// The WebSocket path of the agent session (same origin).
    pub socket_path: String,
}

/// One step of a scripted agent turn, as the host reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStep {
    /// What the agent did (`discover`, `call devices.disable`, …).
    pub action: String,
    /// What came back, as JSON.
    pub outcome: serde_json::Value,
}

/// `POST /agent/turn`: the scripted turn's steps and its last outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnReport {
    /// The run id.
    pub run_id: String,
    /// Every step in order.
    pub steps: Vec<TurnStep>,
    /// One line for a person: what happened.
    pub summary: String,
}

/// `POST /app/run` `{"runId"}`: how a run that asked the server for an
/// approval observes what became of it. A person decides on the host's
/// approver page; the host resumes the held call through the backend and
/// records the outcome for the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStatus {
    /// The run id.
    pub run_id: String,
    /// The approvals the run waits for or waited for, oldest first.
    pub approvals: Vec<ApprovalStatus>,
}

/// One approval of a run ([`RunStatus`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalStatus {
    /// The backend's approval id (`appr-1`, …).
    pub approval_id: String,
    /// `pending`, `approved` or `rejected`.
    pub state: String,
    /// The result the run received once the host resumed the call (an
    /// `AgentInvocationResult` as JSON); `None` while it waits.
    pub outcome: Option<serde_json::Value>,
    /// One line for a person once there is an outcome.
    pub summary: Option<String>,
}
