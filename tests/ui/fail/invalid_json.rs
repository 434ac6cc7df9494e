mod api {
    agent_surface::manifest!("../../../../tests/ui/fixtures/invalid.json");
}

fn main() {}
