// Two procedures with one canonical capability id, an override naming
// another procedure's `domain:` id, and a `view:` override: the agent host
// would merge different operations under one tool.
mod api {
    agent_surface::manifest!("../fixtures/capability-ids.manifest.json");
}

fn main() {}
