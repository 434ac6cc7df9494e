mod api {
    agent_surface::manifest!("../../../../tests/ui/fixtures/unsafe.manifest.json");
}

fn main() {}
