mod api {
    agent_surface::manifest!("../../../../tests/ui/fixtures/reserved.manifest.json");
}

fn main() {}
