mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

#[agent_surface::agent_procedure(api, "devices.disable", input)]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Disable {
    device_ids: Vec<String>,
    reason: Option<String>,
}

fn main() {}
