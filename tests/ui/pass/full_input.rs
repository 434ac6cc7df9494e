use agent_surface::{AgentProcedureRef, ProcedureInput};

mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

#[agent_surface::agent_procedure(api, "devices.rename", input)]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RenameDevice {
    device_id: String,
    name: String,
    #[serde(skip)]
    #[allow(dead_code)]
    local_only: u8,
}

#[agent_surface::agent_procedure(api, "devices.disable", input)]
#[derive(serde::Serialize, serde::Deserialize)]
struct Disable {
    #[serde(rename = "deviceIds")]
    ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

fn main() {
    let r: AgentProcedureRef<RenameDevice, api::devices::rename::Output> =
        RenameDevice::typed_ref(api::devices::rename());
    assert_eq!(r.path(), "devices.rename");
    assert_eq!(<Disable as ProcedureInput>::PROCEDURE, "devices.disable");
}
