mod api {
    agent_surface::manifest!("../fixtures/types.manifest.json");
}

/// The app's own filter type, not the one `manifest!` generated.
#[derive(agent_surface::__private::serde::Serialize)]
#[serde(crate = "agent_surface::__private::serde")]
struct MyFilter {
    kind: String,
}

#[agent_surface::agent_procedure(api, "devices.tag")]
struct TagSelection {
    device_ids: Vec<String>,
    filter: MyFilter,
}

fn main() {}
