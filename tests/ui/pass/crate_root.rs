//! `manifest!` at the crate root (no `mod api { … }`), bound with `crate`.

use agent_surface::BoundInput;

agent_surface::manifest!("../fixtures/bind.manifest.json");

#[agent_surface::agent_procedure(crate, "devices.disable")]
struct DisableSelection {
    device_ids: Vec<String>,
}

mod nested {
    #[agent_surface::agent_procedure(crate, "devices.list")]
    pub struct ListLimit {
        pub limit: Option<i64>,
    }
}

fn main() {
    assert_eq!(DisableSelection::PROCEDURE, "devices.disable");
    assert_eq!(devices::disable().id(), "domain:devices.disable");
    let _ = DisableSelection { device_ids: vec![] };
    assert_eq!(nested::ListLimit::bound_fields().len(), 1);
    let _ = nested::ListLimit { limit: Some(1) }.limit;
    assert_eq!(authority().procedures().count(), 3);
}
