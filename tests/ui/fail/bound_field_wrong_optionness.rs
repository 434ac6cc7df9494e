mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

// `deviceIds` is required: a binding always supplies it.
#[agent_surface::agent_procedure(api, "devices.disable")]
struct DisableSelection {
    device_ids: Option<Vec<String>>,
}

fn main() {}
