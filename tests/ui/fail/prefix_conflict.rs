mod api {
    agent_surface::manifest!("../fixtures/prefix.manifest.json");
}

fn main() {}
