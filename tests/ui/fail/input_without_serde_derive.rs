mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

// A full input type without the serde derives: the error names the
// procedure and says where the derive goes.
#[agent_surface::agent_procedure(api, "devices.rename", input)]
#[allow(dead_code, non_snake_case)]
struct RenameDevice {
    deviceId: String,
    name: String,
}

fn main() {}
