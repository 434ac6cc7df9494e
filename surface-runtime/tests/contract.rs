//! `contract::SurfaceContract` (docs/drift.md, "The contract"): what a
//! registry's contract holds, its canonical text and its parse errors.

use serde_json::{json, Value};
use surface_runtime::contract::{
    schema_hash, ContractError, SurfaceContract, ViewCapabilityKind, ViewContractEffect,
    CONTRACT_VERSION,
};
use surface_runtime::policy::{authorize_with, check_input_with, RequireConfirmation};
use surface_runtime::*;

const MANIFEST: &str = r#"{"tools":{
  "devices.list":{"description":"List devices","inputSchema":{"type":"object"},"effect":"server-query"},
  "devices.purge":{"description":"Purge","inputSchema":{"type":"object","properties":{"ids":{"type":"array"},"why":{"type":"string"}},"required":["ids"]},"effect":"destructive","requiresApproval":true,"contractDigest":"c-1"}}}"#;

/// The ids bound into `devices.purge` (locked).
struct PurgeIds;

impl BoundInput for PurgeIds {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.purge";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "ids",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<serde_json::Map<String, Value>, serde_json::Error> {
        Ok(serde_json::Map::from_iter([(
            "ids".to_string(),
            json!(["a"]),
        )]))
    }
}

fn registry() -> (SurfaceRegistry, Vec<RegistrationHandle>) {
    let authority = Authority::from_manifest(AgentManifest::from_json_str(MANIFEST).unwrap());
    let registry = SurfaceRegistry::builder(authority.clone())
        .policy(authorize_with("tenant", |_| PolicyDecision::Allow))
        .policy(authorize_with("audit", |_| PolicyDecision::Allow))
        .policy(RequireConfirmation(ConfirmationLevel::Optional))
        .build();
    let list: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(&authority, "devices.list").unwrap();
    let purge: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(&authority, "devices.purge").unwrap();
    let table = registry
        .register_component(
            ComponentDefinition::new("devices.table", "row-17")
                .capability(ViewCapability::observation(
                    "read",
                    "The rows",
                    json!({"type": "object"}),
                    || async { Ok(json!({})) },
                ))
                .capability(
                    ViewCapability::with_schema(
                        "go",
                        "Open a device page",
                        json!({"type": "object", "properties": {"id": {"type": "string"}}}),
                        |_| async { Ok(json!({})) },
                    )
                    .effect(ViewEffect::Navigation)
                    .confirmation(ConfirmationLevel::Optional),
                ),
        )
        .unwrap();
    let purge = registry
        .register_procedure(
            AgentProcedureBinding::new(purge)
                .bind(|| PurgeIds)
                .when(|| false)
                .policy(check_input_with("limit", |_, _| PolicyDecision::Allow))
                .policy(RequireConfirmation(ConfirmationLevel::Required))
                .context(&table),
        )
        .unwrap();
    let list = registry
        .register_procedure(AgentProcedureBinding::new(list))
        .unwrap();
    (registry, vec![table, purge, list])
}

#[test]
fn a_registry_contract_holds_every_registration_whatever_when_says() {
    let (registry, _handles) = registry();
    let contract = SurfaceContract::from_registry(&registry);
    assert_eq!(contract.contract_version, CONTRACT_VERSION);
    assert_eq!(
        contract.policies,
        ["audit", "require-confirmation", "tenant"]
    );
    let ids: Vec<&str> = contract.procedures.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["domain:devices.list", "domain:devices.purge"]);
    // The registry-wide `RequireConfirmation(Optional)` raises a query's
    // `never`.
    assert_eq!(
        contract.procedures[0].confirmation,
        ConfirmationLevel::Optional
    );
    let purge = &contract.procedures[1];
    assert_eq!(purge.effect, AgentEffect::Destructive);
    assert!(purge.requires_approval);
    assert_eq!(purge.confirmation, ConfirmationLevel::Required);
    assert_eq!(purge.component.as_deref(), Some("devices.table"));
    assert_eq!(purge.policies, ["limit", "require-confirmation"]);
    assert_eq!(purge.bound_fields.len(), 1);
    assert_eq!(purge.bound_fields[0].path, "ids");
    assert!(purge.bound_fields[0].locked);
    assert_eq!(
        purge.input_schema,
        json!({"type": "object", "properties": {"why": {"type": "string"}}})
    );
    assert_eq!(purge.input_schema_hash, schema_hash(&purge.input_schema));
    let views: Vec<(
        &str,
        ViewCapabilityKind,
        ViewContractEffect,
        ConfirmationLevel,
    )> = contract
        .views
        .iter()
        .map(|v| (v.id.as_str(), v.kind, v.effect, v.confirmation))
        .collect();
    assert_eq!(
        views,
        [
            (
                "view:devices.table.go",
                ViewCapabilityKind::Action,
                ViewContractEffect::Navigation,
                ConfirmationLevel::Optional
            ),
            (
                "view:devices.table.read",
                ViewCapabilityKind::Observation,
                ViewContractEffect::Read,
                ConfirmationLevel::Optional
            ),
        ]
    );
    let manifest = contract.manifest.as_ref().unwrap();
    assert_eq!(manifest.digest, registry.authority().digest());
    assert_eq!(
        manifest.procedures[1].contract_digest.as_deref(),
        Some("c-1")
    );
    assert_eq!(
        manifest.procedures[1].digest,
        registry
            .authority()
            .procedure("devices.purge")
            .unwrap()
            .digest
    );
}

#[test]
fn the_text_is_canonical_and_stable() {
    let (first, _a) = registry();
    let (second, _b) = registry();
    let text = SurfaceContract::from_registry(&first).to_json();
    assert_eq!(text, SurfaceContract::from_registry(&second).to_json());
    assert!(text.starts_with("{\n  \"contractVersion\": 1,\n  \"manifest\": {\n"));
    assert!(text.ends_with("\n}\n"));
    assert!(!text.contains("row-17"), "instance ids are not part of it");
    assert!(!text.contains(first.surface_id()));
    let parsed = SurfaceContract::from_json_str(&text).unwrap();
    assert_eq!(parsed.to_json(), text);
}

#[test]
fn parse_errors_say_what() {
    let err = SurfaceContract::from_json_str(r#"{"contractVersion": 2}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported contractVersion 2 (this tool reads contractVersion 1)"
    );
    let err = SurfaceContract::from_json_str(r#"{"procedures": []}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported contractVersion (missing) (this tool reads contractVersion 1)"
    );
    let err = SurfaceContract::from_json_str("[1,").unwrap_err();
    assert!(matches!(err, ContractError::Json(_)));
    assert_eq!(
        err.to_string(),
        "not a surface contract: EOF while parsing a value at line 1 column 3"
    );
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let err = SurfaceContract::from_json_str(&deep).unwrap_err();
    assert_eq!(
        err.to_string(),
        "not a surface contract: recursion limit exceeded at line 1 column 128"
    );
    let big = " ".repeat(surface_runtime::contract::MAX_CONTRACT_BYTES + 1);
    assert_eq!(
        SurfaceContract::from_json_str(&big)
            .unwrap_err()
            .to_string(),
        "the contract is 16777217 bytes; the limit is 16777216 bytes"
    );
}

#[test]
fn a_manifest_contract_has_no_bindings() {
    let manifest = AgentManifest::from_json_str(MANIFEST).unwrap();
    let contract = SurfaceContract::from_manifest(&manifest);
    assert!(contract.procedures.is_empty() && contract.views.is_empty());
    let ids: Vec<&str> = contract
        .manifest
        .as_ref()
        .unwrap()
        .procedures
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(ids, ["domain:devices.list", "domain:devices.purge"]);
}

#[test]
fn a_policy_that_takes_part_in_discovery_is_named_with_its_mode() {
    use surface_runtime::policy::{authenticated, rate_limit};
    let authority = Authority::from_manifest(AgentManifest::from_json_str(MANIFEST).unwrap());
    let registry = surface_runtime::SurfaceRegistry::builder(authority)
        .policy(authenticated())
        .policy(rate_limit(5, std::time::Duration::from_secs(1)))
        .build();
    let contract = surface_runtime::contract::SurfaceContract::from_registry(&registry);
    assert_eq!(
        contract.policies,
        [
            "authenticated [hides]",
            "rate-limit(5 per 1000 ms) [discloses]"
        ]
    );
}
