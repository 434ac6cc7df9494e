mod api {
    agent_surface::manifest!("../fixtures/duplicate.manifest.json");
}

fn main() {}
