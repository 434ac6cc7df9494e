//! `manifest!` and `#[agent_procedure]` end to end (`docs/codegen.md`, `docs/bindings.md`): the refs,
//! the authority, the `Field` enums, and both binding roles, on the
//! hand-written fixture `tests/fixtures/handwritten.manifest.json`.

use agent_surface::{
    agent_procedure, AgentEffect, AgentManifest, AgentProcedureRef, BoundField, BoundInput,
    ProcedureInput,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

mod api {
    agent_surface::manifest!("tests/fixtures/handwritten.manifest.json");
}

/// The UI-bound subset of `devices.disable`: the selection is locked, the
/// reason is a default the agent may override.
#[agent_procedure(api, "devices.disable", overridable(reason))]
struct DisableSelection {
    device_ids: Vec<String>,
    reason: Option<String>,
}

/// The bound subset with an explicit property name.
#[agent_procedure(crate::api, "devices.purge")]
struct PurgeSelection {
    #[agent_procedure(rename = "deviceIds")]
    selected: Vec<String>,
}

/// The app's own full input type of `devices.rename`.
#[agent_procedure(api, "devices.rename", input)]
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RenameDevice {
    device_id: String,
    name: String,
}

/// A full input with an optional property that is not nullable.
#[agent_procedure(api, "mail.send", input)]
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct SendMail {
    to: String,
    subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cc: Option<String>,
}

#[test]
fn s2_refs_carry_canonical_identity_and_effect() {
    let disable = api::devices::disable();
    assert_eq!(disable.id(), "domain:devices.disable");
    assert_eq!(disable.path(), "devices.disable");
    assert_eq!(disable.capability_id(), "domain:devices.disable");
    assert_eq!(disable.effect(), AgentEffect::ServerMutation);
    assert_eq!(disable.description(), "Disable devices");
    assert!(!disable.requires_approval());
    assert_eq!(disable.contract_digest(), None);
    assert_eq!(
        disable.output_schema(),
        Some(
            &json!({"type": "object", "properties": {"disabled": {"type": "array", "items": {"type": "string"}}}, "required": ["disabled"]})
        )
    );

    let rename = api::devices::rename();
    assert_eq!(rename.id(), "domain:devices.rename");
    assert_eq!(rename.capability_id(), "devices.rename@v1");
    assert_eq!(rename.contract_digest(), Some("sha256:0d1f"));

    let purge = api::devices::purge();
    assert_eq!(purge.effect(), AgentEffect::Destructive);
    assert!(purge.requires_approval());

    assert_eq!(api::mail::send().effect(), AgentEffect::ExternalSideEffect);
    // Segment mapping: `listAll` → `list_all`, `type` → `r#type`, root level.
    assert_eq!(api::admin::users::list_all().path(), "admin.users.listAll");
    assert_eq!(api::catalog::r#type().path(), "catalog.type");
    assert_eq!(api::ping().id(), "domain:ping");
    assert_eq!(api::devices::disable::PATH, "devices.disable");
}

#[test]
fn s6_authority_is_the_whole_manifest_with_compile_time_digests() {
    let authority = api::authority();
    let manifest = AgentManifest::from_json_str(api::MANIFEST_JSON).unwrap();
    assert_eq!(authority.digest(), manifest.digest());
    assert_eq!(api::MANIFEST_DIGEST, manifest.digest());
    let paths: Vec<&str> = authority.procedures().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "admin.users.listAll",
            "catalog.type",
            "devices.disable",
            "devices.list",
            "devices.purge",
            "devices.rename",
            "mail.send",
            "ping"
        ]
    );
    let rename = authority.procedure("devices.rename").unwrap();
    assert_eq!(rename.capability_id, "devices.rename@v1");
    assert_eq!(
        rename.digest,
        manifest.procedure_digest("devices.rename").unwrap()
    );
    assert_eq!(api::devices::rename().digest(), rename.digest);
}

#[test]
fn s4_rebuild_manifest_json_is_the_file_on_disk() {
    // `MANIFEST_JSON` is `include_str!` of the file's canonical path, so
    // rustc tracks the file: editing it rebuilds this crate.
    let on_disk = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/handwritten.manifest.json"
    ))
    .unwrap();
    assert_eq!(api::MANIFEST_JSON, on_disk);
}

#[test]
fn field_enum_gives_json_names_in_schema_order() {
    use api::devices::disable::Field;
    assert_eq!(Field::DeviceIds.as_str(), "deviceIds");
    assert_eq!(Field::Reason.as_str(), "reason");
    assert_eq!(Field::ALL, &[Field::DeviceIds, Field::Reason]);
    assert_eq!(Field::DeviceIds.to_string(), "deviceIds");
    assert_eq!(api::catalog::r#type::Field::Type.as_str(), "type");
    assert!(api::ping::Field::ALL.is_empty());
}

#[test]
fn d8_bound_fields_locked_unless_overridable_in_declaration_order() {
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
    assert_eq!(DisableSelection::PROCEDURE, "devices.disable");
    assert_eq!(
        PurgeSelection::bound_fields(),
        &[BoundField {
            name: "deviceIds",
            locked: true
        }]
    );
}

#[test]
fn d7_to_bound_json_uses_schema_names_and_omits_none() {
    let without = DisableSelection {
        device_ids: vec!["dev-1".into(), "dev-2".into()],
        reason: None,
    };
    assert_eq!(
        serde_json::Value::Object(without.to_bound_json().unwrap()),
        json!({"deviceIds": ["dev-1", "dev-2"]})
    );
    let with = DisableSelection {
        device_ids: vec!["dev-1".into()],
        reason: Some("maintenance".into()),
    };
    assert_eq!(
        serde_json::Value::Object(with.to_bound_json().unwrap()),
        json!({"deviceIds": ["dev-1"], "reason": "maintenance"})
    );
    let purge = PurgeSelection {
        selected: vec!["dev-3".into()],
    };
    assert_eq!(
        serde_json::Value::Object(purge.to_bound_json().unwrap()),
        json!({"deviceIds": ["dev-3"]})
    );
}

/// The bound subset is tied to the generated input of its procedure.
fn input_of<B: BoundInput>(_: &B) -> std::any::TypeId
where
    B::Input: 'static,
{
    std::any::TypeId::of::<B::Input>()
}

#[test]
fn bound_input_is_tied_to_the_generated_input_type() {
    let b = DisableSelection {
        device_ids: vec![],
        reason: None,
    };
    assert_eq!(
        input_of(&b),
        std::any::TypeId::of::<api::devices::disable::Input>()
    );
}

#[test]
fn full_input_type_round_trips_through_the_generated_type() {
    let typed: AgentProcedureRef<RenameDevice, api::devices::rename::Output> =
        RenameDevice::typed_ref(api::devices::rename());
    assert_eq!(typed.path(), "devices.rename");
    assert_eq!(typed.capability_id(), "devices.rename@v1");
    assert_eq!(
        <RenameDevice as ProcedureInput>::PROCEDURE,
        "devices.rename"
    );

    let mine = RenameDevice {
        device_id: "dev-1".into(),
        name: "Lobby".into(),
    };
    let value = serde_json::to_value(&mine).unwrap();
    assert_eq!(value, json!({"deviceId": "dev-1", "name": "Lobby"}));
    // The generated type reads what the app's own type writes, and back.
    let generated: api::devices::rename::Input = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&generated).unwrap(), value);
    let back: RenameDevice =
        serde_json::from_value(serde_json::to_value(&generated).unwrap()).unwrap();
    assert_eq!(back, mine);

    let mail = SendMail {
        to: "a@example.com".into(),
        subject: "Hi".into(),
        cc: None,
    };
    assert_eq!(
        serde_json::to_value(&mail).unwrap(),
        json!({"to": "a@example.com", "subject": "Hi"})
    );
    assert_eq!(SendMail::typed_ref(api::mail::send()).path(), "mail.send");
}

/// The manifest generated from the real oRPC router of `tests/orpc-peer`.
mod devices_api {
    agent_surface::manifest!("tests/fixtures/devices.manifest.json");
}

/// The construct-coverage manifests (oRPC's and zod's converters): they
/// must expand to code that compiles (the snapshots' code is this code).
mod orpc_constructs {
    agent_surface::manifest!("tests/fixtures/codegen/orpc.manifest.json");
}
mod zod_constructs {
    agent_surface::manifest!("tests/fixtures/codegen/zod.manifest.json");
}

#[agent_procedure(devices_api, "devices.disable")]
struct OrpcDisableSelection {
    device_ids: Vec<String>,
}

#[test]
fn real_orpc_manifest_expands_and_binds() {
    assert_eq!(
        devices_api::devices::disable().id(),
        "domain:devices.disable"
    );
    assert_eq!(
        devices_api::devices::purge().effect(),
        AgentEffect::Destructive
    );
    assert_eq!(
        devices_api::agent::echo_invocation().path(),
        "agent.echoInvocation"
    );
    assert_eq!(
        devices_api::devices::list::Field::ALL
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>(),
        vec!["limit", "status"]
    );
    let b = OrpcDisableSelection {
        device_ids: vec!["dev-1".into()],
    };
    assert_eq!(
        serde_json::Value::Object(b.to_bound_json().unwrap()),
        json!({"deviceIds": ["dev-1"]})
    );
    assert_eq!(orpc_constructs::authority().procedures().count(), 19);
    assert_eq!(
        zod_constructs::authority().procedures().count(),
        orpc_constructs::authority().procedures().count()
    );
}

/// A closed string enum reads and writes its JSON strings outside serde
/// too: `as_str`, `Display`, `FromStr` with an error naming the values.
#[test]
fn string_enums_have_as_str_display_and_from_str() {
    use devices_api::devices::list::InputStatus;
    let active: InputStatus = "active".parse().unwrap();
    assert_eq!(active, InputStatus::Active);
    assert_eq!(InputStatus::Disabled.as_str(), "disabled");
    assert_eq!(InputStatus::Disabled.to_string(), "disabled");
    let err = "Active".parse::<InputStatus>().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#""Active" is not a value of `InputStatus`; its values are "active" and "disabled""#
    );
    // The same strings serde writes.
    assert_eq!(
        serde_json::to_value(InputStatus::Disabled).unwrap(),
        json!(InputStatus::Disabled.as_str())
    );
}

/// The adversarial fixtures compile (their expansion is checked in
/// `surface-codegen/tests/adversarial.rs`).
mod adversarial_docs {
    // Its schemas are deliberately broken: no validator can be generated.
    agent_surface::manifest!(
        "tests/fixtures/codegen/adversarial/doc_injection.manifest.json",
        validation = runtime
    );
}

mod adversarial_names {
    agent_surface::manifest!("tests/fixtures/codegen/adversarial/colliding_names.manifest.json");
}

#[test]
fn colliding_names_compile_and_keep_their_json_names() {
    use adversarial_names::names::collide::{Field, Input};
    let manifest: serde_json::Value =
        serde_json::from_str(adversarial_names::MANIFEST_JSON).unwrap();
    let properties = manifest["tools"]["names.collide"]["inputSchema"]["properties"]
        .as_object()
        .unwrap();
    let names: Vec<&str> = Field::ALL.iter().map(|f| f.as_str()).collect();
    let expected: Vec<&str> = properties.keys().map(String::as_str).collect();
    assert_eq!(names, expected);
    // Every property round-trips under its own name.
    let mut value = serde_json::Map::new();
    for (name, schema) in properties {
        let v = match schema.get("type").and_then(|t| t.as_str()) {
            Some("integer") => json!(7),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("string") if schema.get("enum").is_none() => json!(format!("v-{name}")),
            _ => continue,
        };
        value.insert(name.clone(), v);
    }
    value.insert("status".into(), json!("Self"));
    value.insert("extra".into(), json!(3));
    let value = serde_json::Value::Object(value);
    let input: Input = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&input).unwrap(), value);
    assert_eq!(adversarial_docs::adv::everywhere().path(), "adv.everywhere");
    // A property named `i64` (a string) does not change what the alias of
    // another `i64` property names.
    use adversarial_names::names::collide::__fields;
    let count: __fields::count = 7i64;
    let named_i64: __fields::i64 = String::from("x");
    let flag: __fields::flag = true;
    assert_eq!((count, named_i64.as_str(), flag), (7, "x", true));
}

mod validation_api {
    agent_surface::manifest!("tests/fixtures/codegen/validation.manifest.json");
}

/// `(instancePath, keyword, message)` of every error, sorted.
fn generated_errors(path: &str, instance: &serde_json::Value) -> Vec<(String, String, String)> {
    let validator = validation_api::authority()
        .input_validator(path)
        .expect("manifest! generated the validator");
    let mut errors: Vec<_> = validator
        .errors(instance)
        .into_iter()
        .map(|e| {
            (
                e.instance_path,
                e.keyword.to_string(),
                e.message.into_owned(),
            )
        })
        .collect();
    errors.sort();
    errors
}

fn jsonschema_errors(path: &str, instance: &serde_json::Value) -> Vec<(String, String, String)> {
    let manifest =
        agent_surface::AgentManifest::from_json_str(validation_api::MANIFEST_JSON).unwrap();
    let schema = &manifest.tool(path).unwrap().input_schema;
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap();
    let mut errors: Vec<_> = validator
        .iter_errors(instance)
        .map(|e| {
            (
                e.instance_path().as_str().to_string(),
                e.kind().keyword().to_string(),
                e.masked().to_string(),
            )
        })
        .collect();
    errors.sort();
    errors
}

#[test]
fn generated_validators_report_what_jsonschema_reports() {
    // 12 levels of objects and arrays: deeper than one generated function
    // inlines.
    let mut deep = json!("ok");
    for _ in 0..12 {
        deep = json!({"c": [deep]});
    }
    let mut deep_bad = json!("x");
    for level in 0..12 {
        deep_bad = if level == 5 {
            json!({"c": [deep_bad, 1, 2], "extra": true})
        } else {
            json!({"c": [deep_bad]})
        };
    }
    let cases = [
        ("v.deep", deep),
        ("v.deep", deep_bad),
        ("v.deep", json!({})),
        ("v.mixed", json!({"kind": "a"})),
        ("v.mixed", json!({"kind": "c", "zz": 1, "yy": 2})),
        (
            "v.mixed",
            json!({"kind": "b", "list": {"v": 1, "next": {"v": -1, "next": {}}},
                   "email": "not-an-email", "code": "abc", "n": 10.25,
                   "either": 1.5, "tags": ["a", "a"]}),
        ),
        (
            "v.mixed",
            json!({"kind": "a", "n": null, "either": "s", "email": "a@b.co"}),
        ),
        ("v.mixed", json!([1])),
    ];
    for (path, instance) in &cases {
        assert_eq!(
            generated_errors(path, instance),
            jsonschema_errors(path, instance),
            "{path} {instance}"
        );
    }
    // The valid cases are valid, the others are not.
    let valid: Vec<bool> = cases
        .iter()
        .map(|(path, instance)| generated_errors(path, instance).is_empty())
        .collect();
    assert_eq!(valid, [true, false, false, true, false, false, true, false]);
    // The declared output schema has a validator too.
    let output = validation_api::authority()
        .output_validator("v.mixed")
        .unwrap();
    assert!(output.is_valid(&json!({"ok": true})));
    assert_eq!(output.errors(&json!({}))[0].keyword, "required");
}

/// oRPC's converter omits `items: false` after `prefixItems` (further
/// elements allowed: `TupleWithRest`), zod's writes it (a closed tuple):
/// code using the tuple reads the same against both (docs/codegen.md,
/// "Tuples").
#[test]
fn a_tuple_without_items_false_is_used_like_the_closed_tuple() {
    fn first_two(
        point_x: &serde_json::Number,
        point_y: &serde_json::Number,
        labelled: (&String, &i64, &bool),
    ) -> String {
        format!(
            "{point_x},{point_y},{},{},{}",
            labelled.0, labelled.1, labelled.2
        )
    }
    let value = json!({"point": [1.5, 2], "labelled": ["a", 3, true]});
    let orpc: orpc_constructs::constructs::tuple::Input =
        serde_json::from_value(value.clone()).unwrap();
    let zod: zod_constructs::constructs::tuple::Input =
        serde_json::from_value(value.clone()).unwrap();
    let orpc_labelled = orpc.labelled.as_ref().unwrap();
    let zod_labelled = zod.labelled.as_ref().unwrap();
    assert_eq!(
        first_two(
            &orpc.point.0,
            &orpc.point.1,
            (&orpc_labelled.0, &orpc_labelled.1, &orpc_labelled.2)
        ),
        first_two(
            &zod.point.0,
            &zod.point.1,
            (&zod_labelled.0, &zod_labelled.1, &zod_labelled.2)
        ),
    );
    assert_eq!(serde_json::to_value(&orpc).unwrap(), value);
    assert_eq!(serde_json::to_value(&zod).unwrap(), value);
    // The elements oRPC's schema allows beyond the prefix are kept.
    let longer = json!({"point": [1, 2, "z", null]});
    let mut orpc: orpc_constructs::constructs::tuple::Input =
        serde_json::from_value(longer.clone()).unwrap();
    assert_eq!(orpc.point.rest, [json!("z"), json!(null)]);
    assert_eq!(serde_json::to_value(&orpc).unwrap(), longer);
    orpc.point.0 = serde_json::Number::from(7);
    orpc.point = (orpc.point.0.clone(), orpc.point.1.clone()).into();
    assert_eq!(
        serde_json::to_value(&orpc).unwrap(),
        json!({"point": [7, 2]})
    );
    assert!(serde_json::from_value::<zod_constructs::constructs::tuple::Input>(longer).is_err());
}

/// A `$ref` prefixed with the root `$id` is local for the generated types
/// too (as for the validator and the export): the field is the target's
/// type, and a `null` arm behind such a reference makes the union an
/// `Option`.
mod root_id_api {
    agent_surface::manifest!("tests/fixtures/codegen/root_id_refs.manifest.json");
}

#[test]
fn root_id_prefixed_refs_are_typed_like_local_refs() {
    use root_id_api::refs::root_id::Input;
    let input: Input = serde_json::from_value(json!({"a": "x", "maybe": "y"})).unwrap();
    let a: String = input.a.clone();
    let maybe: Option<Option<String>> = input.maybe.clone();
    assert_eq!((a.as_str(), maybe), ("x", Some(Some("y".to_string()))));
    assert!(serde_json::from_value::<Input>(json!({"a": 5})).is_err());
    let validator = root_id_api::authority()
        .input_validator("refs.rootId")
        .expect("manifest! generated the validator");
    assert!(validator
        .errors(&json!({"a": "x", "maybe": null}))
        .is_empty());
    assert_eq!(validator.errors(&json!({"a": 5})).len(), 1);
}
