mod api {
    agent_surface::manifest!("../fixtures/reserved.manifest.json");
}

fn main() {}
