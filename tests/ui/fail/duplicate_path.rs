mod api {
    agent_surface::manifest!("../../../../tests/ui/fixtures/duplicate.manifest.json");
}

fn main() {}
