mod api {
    agent_surface::manifest!("../fixtures/unsafe.manifest.json");
}

fn main() {}
