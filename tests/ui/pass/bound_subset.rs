use agent_surface::{BoundField, BoundInput};

mod api {
    agent_surface::manifest!("../fixtures/bind.manifest.json");
}

#[agent_surface::agent_procedure(api, "devices.disable", overridable(reason))]
struct DisableSelection {
    device_ids: Vec<String>,
    reason: Option<String>,
}

#[agent_surface::agent_procedure(crate::api, "devices.disable")]
struct DisableRenamed {
    #[agent_procedure(rename = "deviceIds")]
    selected: Vec<String>,
    /// An optional property bound as its plain type.
    reason: String,
}

#[agent_surface::agent_procedure(api, "devices.list")]
struct ListLimit {
    limit: Option<i64>,
}

fn main() {
    assert_eq!(
        DisableSelection::bound_fields(),
        &[
            BoundField {
                name: "deviceIds",
                locked: true
            },
            BoundField {
                name: "reason",
                locked: false
            },
        ]
    );
    let r = DisableRenamed {
        selected: vec![],
        reason: String::new(),
    };
    assert_eq!(r.to_bound_json().unwrap().len(), 2);
    assert!(ListLimit { limit: None }
        .to_bound_json()
        .unwrap()
        .is_empty());
    let _ = DisableSelection {
        device_ids: vec![],
        reason: None,
    };
}
