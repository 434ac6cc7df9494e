//! Binding structs to a generated API that lives in another crate (`api`,
//! `tests/ui/api`), in both roles, through both of its `manifest!`
//! invocations.

use agent_surface::{BoundField, BoundInput, ProcedureInput};

#[agent_surface::agent_procedure(api, "devices.disable", overridable(reason))]
struct DisableSelection {
    device_ids: Vec<String>,
    reason: Option<String>,
}

#[agent_surface::agent_procedure(::api, "devices.rename", input)]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RenameDevice {
    device_id: String,
    name: String,
}

#[agent_surface::agent_procedure(api::renamed, "devices.list")]
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
    let bound = DisableSelection {
        device_ids: vec!["d1".into()],
        reason: None,
    };
    assert_eq!(
        serde_json::Value::Object(bound.to_bound_json().unwrap()),
        serde_json::json!({"deviceIds": ["d1"]})
    );
    let rename = RenameDevice::typed_ref(api::devices::rename());
    assert_eq!(rename.id(), "domain:devices.rename");
    assert_eq!(<RenameDevice as ProcedureInput>::PROCEDURE, "devices.rename");
    let _ = RenameDevice {
        device_id: String::new(),
        name: String::new(),
    };
    assert_eq!(ListLimit::PROCEDURE, "devices.list");
    assert!(ListLimit { limit: None }.to_bound_json().unwrap().is_empty());
    assert_eq!(api::renamed::MANIFEST_DIGEST, api::MANIFEST_DIGEST);
}
