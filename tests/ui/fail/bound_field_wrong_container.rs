use std::collections::BTreeSet;

mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

#[agent_surface::agent_procedure(api, "devices.disable")]
struct DisableSelection {
    device_ids: BTreeSet<String>,
}

fn main() {}
