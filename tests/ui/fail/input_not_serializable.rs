mod api {
    agent_surface::manifest!("../../../../tests/ui/fixtures/bind.manifest.json");
}

#[agent_surface::agent_procedure(api, "devices.rename", input)]
struct RenameDevice {
    #[allow(dead_code)]
    name: String,
}

fn main() {}
