mod api {
    agent_surface::manifest!("../../../../tests/ui/fixtures/prefix.manifest.json");
}

fn main() {}
