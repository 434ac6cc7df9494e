//! Where the devices console's procedures run, for the `devices` and
//! `devices_mcp` examples: the embedded in-process backend, or a real oRPC
//! server called as the user (`--orpc-url`, e.g. the peer in
//! `tests/orpc-peer`).

use std::sync::Arc;

use agent_surface::bridge::{create_orpc_agent_bridge, invocation_id_header, CallOptions};
use agent_surface::bridge::{HttpOrpcClient, OrpcAgentBridgeOptions, OrpcClient};
use agent_surface::{AgentManifest, AgentProcedureExecutor};
use serde_json::json;

use crate::app::Device;
use crate::embedded::EmbeddedDevices;

/// The requester's credential the real oRPC peer accepts.
pub const USER_TOKEN: &str = "Bearer user-token";

/// Where the procedures run.
pub enum Backend {
    /// The embedded backend (four devices, `EmbeddedDevices::seeded`).
    Embedded(Arc<EmbeddedDevices>),
    /// A real oRPC server: its `…/rpc` URL and the user's client.
    Orpc {
        url: String,
        client: Arc<HttpOrpcClient>,
    },
}

impl Backend {
    /// `url` (`--orpc-url`), or the embedded backend without one.
    pub fn new(url: Option<String>) -> Self {
        match url {
            None => Backend::Embedded(Arc::new(EmbeddedDevices::seeded())),
            Some(url) => {
                let client =
                    HttpOrpcClient::new(url.clone()).with_header("authorization", USER_TOKEN);
                let client = Arc::new(client);
                Backend::Orpc { url, client }
            }
        }
    }

    /// The domain router's executor: the ordinary bridge (every call with
    /// `x-agent-invocation-id: <invocationId>`; `gets` sent as GET), or the
    /// embedded backend.
    pub fn ordinary(
        &self,
        manifest: AgentManifest,
        gets: &[&str],
    ) -> Arc<dyn AgentProcedureExecutor> {
        let client: Arc<dyn OrpcClient> = match self {
            Backend::Embedded(backend) => return backend.clone(),
            Backend::Orpc { client, .. } => client.clone(),
        };
        let options =
            OrpcAgentBridgeOptions::new(client, manifest).call_context(invocation_id_header);
        create_orpc_agent_bridge(gets.iter().fold(options, |o, path| o.get(*path))).executor
    }

    /// The table's rows, loaded by the app itself (not by the agent).
    pub async fn load_devices(&self) -> Result<Vec<Device>, String> {
        let output = match self {
            Backend::Embedded(backend) => backend
                .handle("devices.list", &json!({}), "app-load")
                .map_err(|e| format!("the embedded backend failed to list devices: {e}"))?,
            Backend::Orpc { url, client } => client
                .call("devices.list", Some(json!({})), CallOptions::default())
                .await
                .map_err(|e| format!("could not list devices from {url}: {e}"))?,
        };
        serde_json::from_value::<Vec<Device>>(output["devices"].clone())
            .map_err(|e| format!("devices.list returned an unexpected shape ({e}): {output}"))
    }
}
