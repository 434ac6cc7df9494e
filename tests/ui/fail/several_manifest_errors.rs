//! A manifest with a reserved root name, a prefix conflict and an unsafe
//! segment: all three are reported in one build.

mod api {
    agent_surface::manifest!("../fixtures/several.manifest.json");
}

fn main() {}
