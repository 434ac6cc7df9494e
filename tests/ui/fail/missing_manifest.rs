mod api {
    agent_surface::manifest!("../fixtures/no-such.manifest.json");
}

fn main() {}
