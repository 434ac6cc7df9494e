#[agent_surface::agent_procedure(api::renamed, "devices.renme", input)]
#[derive(serde::Serialize, serde::Deserialize)]
struct Rename {
    name: String,
}

fn main() {}
