mod api {
    agent_surface::manifest!("../fixtures/invalid.json");
}

fn main() {}
