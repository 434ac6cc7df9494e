//! Every malformed, unknown or repeated argument is reported in one build,
//! each at its own token, and the valid ones still bind.

mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

#[agent_surface::agent_procedure(api, "devices.disable", nope, overridable(why, 1), overridable(device_ids), wat = 3)]
struct DisableSelection {
    device_ids: Vec<String>,
    #[agent_procedure(rename = "reason", colour = "red")]
    why: Option<String>,
}

fn main() {
    use agent_surface::BoundInput;
    let _ = DisableSelection::bound_fields();
}
