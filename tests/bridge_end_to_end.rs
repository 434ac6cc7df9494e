//! End to end: `SurfaceRegistry` (binding, validation, confirmation) →
//! bridge executor → real oRPC peer (`tests/orpc-peer`). The registry
//! decides what may be called with which input; the bridges carry the call
//! to the server, which stays the authority.

mod support;

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use support::peer::{repo_root, Peer};
use surface_runtime::bridge::{
    create_governed_orpc_agent_bridge, create_orpc_agent_bridge, invocation_id_header, CallOptions,
    CapabilityClient, DescribeScope, GovernedBridgeOptions, OrpcAgentBridgeOptions,
    OrpcCapabilityClient, OrpcClient, ResumeApprovalRequest,
};
use surface_runtime::manifest::create_orpc_agent_manifest;
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentManifest, AgentProcedureBinding, Authority, BoundField,
    BoundInput, ErrorCode, Retry, SurfaceRegistry,
};

fn consumer() -> AgentConsumer {
    AgentConsumer::embedded("user-1")
}

/// The UI selection bound to `devices.disable` / `devices.purge`
/// `deviceIds` (locked), as `#[agent_procedure]` would generate it.
struct Selection<const PURGE: bool>(Arc<Mutex<Vec<String>>>);

impl<const PURGE: bool> BoundInput for Selection<PURGE> {
    type Input = Value;
    const PROCEDURE: &'static str = if PURGE {
        "devices.purge"
    } else {
        "devices.disable"
    };
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "deviceIds",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert(
            "deviceIds".into(),
            serde_json::to_value(&*self.0.lock().unwrap())?,
        );
        Ok(m)
    }
}

fn invocation(id: &str, capability_id: &str, input: Value) -> AgentInvocation {
    let mut inv = AgentInvocation::new(id, capability_id);
    inv.input = input;
    inv
}

async fn statuses(peer: &Peer) -> Vec<(String, String)> {
    let out = peer
        .rpc_client()
        .call("devices.list", Some(json!({})), CallOptions::default())
        .await
        .unwrap();
    out["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_string(),
                d["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn e2e_ordinary_registry_binds_ui_input_and_bridge_reaches_server() {
    let Some(peer) = Peer::start("e2e_ordinary_registry_binds_ui_input_and_bridge_reaches_server")
    else {
        return;
    };
    let text =
        std::fs::read_to_string(repo_root().join("tests/fixtures/devices.manifest.json")).unwrap();
    let manifest = AgentManifest::from_json_str(&text).unwrap();
    let registry = SurfaceRegistry::new(Authority::from_manifest(manifest.clone()));
    let bridge = create_orpc_agent_bridge(
        OrpcAgentBridgeOptions::new(Arc::new(peer.rpc_client()), manifest)
            .call_context(invocation_id_header),
    );
    registry.set_procedure_executor(bridge.executor.clone());

    let selected = Arc::new(Mutex::new(vec!["dev-2".to_string()]));
    let sel = selected.clone();
    let _disable = registry
        .register_procedure(
            AgentProcedureBinding::new(bridge.refs.get("devices.disable").unwrap().clone())
                .bind(move || Selection::<false>(sel.clone())),
        )
        .unwrap();
    let _echo = registry
        .register_procedure(AgentProcedureBinding::new(
            bridge.refs.get("agent.echoInvocation").unwrap().clone(),
        ))
        .unwrap();

    // The agent supplies only the unlocked `reason`; the selection is bound.
    let result = registry
        .invoke(
            invocation(
                "inv-e2e-1",
                "domain:devices.disable",
                json!({"reason": "agent"}),
            ),
            &consumer(),
        )
        .await;
    assert_eq!(result.invocation_id(), "inv-e2e-1");
    assert_eq!(result.output(), Some(&json!({"disabled": ["dev-2"]})));
    // A model-guessed value for the locked field never reaches the server.
    let result = registry
        .invoke(
            invocation(
                "inv-e2e-2",
                "domain:devices.disable",
                json!({"deviceIds": ["dev-1"]}),
            ),
            &consumer(),
        )
        .await;
    let err = result.error().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(err.details["lockedFields"], json!(["deviceIds"]));
    // The server re-checks: a bound locked device is refused by the server.
    *selected.lock().unwrap() = vec!["dev-locked".into()];
    let result = registry
        .invoke(
            invocation("inv-e2e-3", "domain:devices.disable", json!({})),
            &consumer(),
        )
        .await;
    assert_eq!(result.error().unwrap().code, ErrorCode::NotAuthorized);
    assert_eq!(
        statuses(&peer).await,
        [
            ("dev-1".to_string(), "active".to_string()),
            ("dev-2".into(), "disabled".into()),
            ("dev-3".into(), "disabled".into()),
            ("dev-locked".into(), "active".into()),
        ]
    );
    // The registry's invocation id reaches the server as a header.
    let result = registry
        .invoke(
            invocation("inv-e2e-echo", "domain:agent.echoInvocation", json!({})),
            &consumer(),
        )
        .await;
    assert_eq!(
        result.output(),
        Some(&json!({"invocationId": "inv-e2e-echo"}))
    );
}

/// AS-GOVERNED-001, end to end: a destructive governed call passes the
/// local confirmation (the app approves the registry's confirmation), and
/// the gateway still requires its own approval — the local confirmation
/// never satisfies it. The approver decides at the application's endpoint,
/// and the call resumes through the gateway's `resumeApproval`, not
/// through the registry.
#[tokio::test]
async fn as_governed_001_local_confirmation_never_satisfies_backend_approval_end_to_end() {
    let Some(peer) = Peer::start("as_governed_001_end_to_end") else {
        return;
    };
    let gateway = Arc::new(OrpcCapabilityClient::new(peer.gateway_client()));
    let descriptors = gateway
        .describe(
            DescribeScope::ids(["devices.purge"]),
            CallOptions::default(),
        )
        .await
        .unwrap();
    let manifest = create_orpc_agent_manifest(descriptors).unwrap();
    let registry = SurfaceRegistry::new(Authority::from_manifest(manifest.clone()));
    let bridge = create_governed_orpc_agent_bridge(GovernedBridgeOptions::new(gateway, manifest));
    registry.set_procedure_executor(bridge.executor.clone());
    let selected = Arc::new(Mutex::new(vec!["dev-1".to_string()]));
    let sel = selected.clone();
    let _purge = registry
        .register_procedure(
            AgentProcedureBinding::new(bridge.refs.get("devices.purge").unwrap().clone())
                .bind(move || Selection::<true>(sel.clone())),
        )
        .unwrap();
    let snapshot = registry.snapshot(&consumer());
    let version = snapshot.surface_version;
    assert_eq!(snapshot.procedures.len(), 1);
    let capability = snapshot.procedures[0].procedure_id.clone();

    // Destructive: the registry asks for a local confirmation first.
    let mut call = invocation("inv-g-1", &capability, json!({}));
    call.surface_version = Some(version);
    let result = registry.invoke(call, &consumer()).await;
    let err = result.error().unwrap();
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::ConfirmationRequired, Retry::WithConfirmation)
    );
    let confirmation_id = err.details["confirmationId"].as_str().unwrap().to_string();
    // The app approves (never the model) and the agent retries with a fresh
    // id and the approved confirmation.
    registry.confirm(&confirmation_id).unwrap();
    let mut call = invocation("inv-g-2", &capability, json!({}));
    call.surface_version = Some(version);
    call.confirmation_id = Some(confirmation_id);
    let result = registry.invoke(call, &consumer()).await;
    let err = result.error().unwrap();
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::DomainApprovalRequired, Retry::No)
    );
    assert_eq!(
        (&err.details["invocationId"], &err.details["origin"]),
        (&json!("inv-g-2"), &json!("server"))
    );
    let approval_id = err.details["approvalId"].as_str().unwrap().to_string();
    assert!(statuses(&peer).await.iter().any(|(id, _)| id == "dev-1"));

    // The application's approver decides; the requester's bridge resumes.
    assert_eq!(peer.decide(&approval_id, "approved").await.0, 200);
    let outcome = bridge
        .resume(ResumeApprovalRequest::new("inv-g-2", &approval_id))
        .await;
    let resumed = outcome.to_invocation_result(&capability, version);
    assert_eq!(
        (resumed.invocation_id(), resumed.output()),
        ("inv-g-2", Some(&json!({"purged": ["dev-1"]})))
    );
    assert!(!statuses(&peer).await.iter().any(|(id, _)| id == "dev-1"));
    // Resumption did not go through the registry: the invocation id there
    // is spent, and reusing it without the confirmation is refused.
    let mut replay = invocation("inv-g-2", &capability, json!({}));
    replay.surface_version = Some(version);
    let replayed = registry.invoke(replay, &consumer()).await;
    let err = replayed.error().unwrap();
    assert_eq!(err.code, ErrorCode::InvocationConflict);
    assert_eq!(err.details["reason"], "id-reused-with-different-request");
}
