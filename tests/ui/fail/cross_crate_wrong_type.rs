#[agent_surface::agent_procedure(api, "devices.disable")]
struct DisableSelection {
    device_ids: Vec<u32>,
}

fn main() {}
