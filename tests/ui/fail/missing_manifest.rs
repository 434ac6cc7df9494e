mod api {
    agent_surface::manifest!("../../../../tests/ui/fixtures/no-such.manifest.json");
}

fn main() {}
