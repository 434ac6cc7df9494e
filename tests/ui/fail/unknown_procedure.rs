mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

#[agent_surface::agent_procedure(api, "devices.disabel")]
struct DisableSelection {
    device_ids: Vec<String>,
}

fn main() {}
