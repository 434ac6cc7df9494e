//! A schema keyword the generated validators do not support is a compile
//! error naming the keyword and its JSON Pointer — never a silent accept.

mod api {
    agent_surface::manifest!("../fixtures/unsupported.manifest.json");
}

fn main() {}
