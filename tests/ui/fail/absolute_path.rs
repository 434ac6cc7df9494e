mod api {
    agent_surface::manifest!("/etc/agent.manifest.json");
}

fn main() {}
