mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

/// The table's selection, declared for `devices.disable`.
#[agent_surface::agent_procedure(api, "devices.disable")]
struct DisableSelection {
    device_ids: Vec<String>,
}

fn main() {
    // Used for `devices.rename`: the error names the binding type and the
    // procedure's input, and rustc's help the input it does bind.
    let _ = agent_surface::AgentProcedureBinding::new(api::devices::rename()).bind(|| {
        DisableSelection {
            device_ids: vec!["dev-1".to_string()],
        }
    });
}
