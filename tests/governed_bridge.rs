//! Interop tests of the governed bridge (`docs/bridges.md`, "Governed
//! bridge") against the real gateway of the oRPC peer (`/gateway`, see
//! `tests/orpc-peer/README.md`): every row of the outcome table, reconciliation,
//! approval → decide → resume, and AS-GOVERNED-001/002.

mod support;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use support::peer::{repo_root, Peer};
use surface_runtime::bridge::{
    create_governed_orpc_agent_bridge, CallOptions, CapabilityClient, DomainReceipt,
    GovernedBridgeOptions, GovernedOrpcAgentBridge, GovernedOutcome, HttpOrpcClient,
    ObserverResult, OrpcCallError, OrpcCapabilityClient, OrpcClient, OutcomeInfo, OutcomePhase,
    UnknownReason,
};
use surface_runtime::manifest::{create_orpc_agent_manifest, PortableDescriptor};
use surface_runtime::{
    AgentConsumer, AgentManifest, Cancellation, ErrorCode, ExecuteRequest, ExecutionError,
    ProcedureCallInfo, Retry,
};

type Seen = Arc<Mutex<Vec<(GovernedOutcome, OutcomeInfo)>>>;

fn fixture_descriptors() -> Vec<PortableDescriptor> {
    let text =
        std::fs::read_to_string(repo_root().join("tests/fixtures/governed.descriptors.json"))
            .expect("tests/fixtures/governed.descriptors.json");
    serde_json::from_str(&text).expect("descriptors")
}

fn governed_manifest() -> AgentManifest {
    create_orpc_agent_manifest(fixture_descriptors()).expect("valid governed manifest")
}

fn request(path: &str, invocation_id: &str, input: Value) -> ExecuteRequest {
    ExecuteRequest {
        path: path.into(),
        capability_id: format!("domain:{path}").into(),
        contract_digest: None,
        input,
        info: ProcedureCallInfo {
            invocation_id: invocation_id.into(),
            consumer: AgentConsumer::embedded("user-1"),
            cancellation: Cancellation::new(),
            confirmation: None,
        },
    }
}

/// A governed bridge over `gateway` (an HTTP client of `/gateway`) with a
/// recording observer.
/// Starts a governed `devices.purge` of one device, which the gateway holds
/// for approval; returns the approval id.
async fn purge_awaiting_approval(
    bridge: &GovernedOrpcAgentBridge,
    invocation_id: &str,
    device_id: &str,
) -> String {
    let err = bridge
        .executor
        .execute(request(
            "devices.purge",
            invocation_id,
            json!({"deviceIds": [device_id]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::DomainApprovalRequired, "{err:?}");
    err.details["approvalId"].as_str().unwrap().to_string()
}

fn bridge_over(
    gateway: HttpOrpcClient,
    manifest: AgentManifest,
) -> (GovernedOrpcAgentBridge, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let bridge = create_governed_orpc_agent_bridge(
        GovernedBridgeOptions::new(Arc::new(OrpcCapabilityClient::new(gateway)), manifest)
            .on_outcome(
                move |o: &GovernedOutcome, i: &OutcomeInfo| -> ObserverResult {
                    sink.lock().unwrap().push((o.clone(), i.clone()));
                    Ok(())
                },
            ),
    );
    (bridge, seen)
}

fn details(err: &ExecutionError) -> Value {
    Value::Object(err.details.clone())
}

/// The device list as the domain router reports it.
async fn device_ids(peer: &Peer, status: Option<&str>) -> Vec<String> {
    let input = match status {
        Some(s) => json!({ "status": s }),
        None => json!({}),
    };
    let out = peer
        .rpc_client()
        .call("devices.list", Some(input), CallOptions::default())
        .await
        .unwrap();
    out["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

/// The application's approval endpoint (never a model tool): the approver
/// decides with its own credentials.
async fn decide(peer: &Peer, approval_id: &str, decision: &str) -> Value {
    peer.approver_client()
        .call(
            "approvals.decide",
            Some(json!({ "approvalId": approval_id, "decision": decision })),
            CallOptions::default(),
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn s3_describe_from_real_gateway_builds_the_manifest() {
    let Some(peer) = Peer::start("s3_describe_from_real_gateway_builds_the_manifest") else {
        return;
    };
    let client = OrpcCapabilityClient::new(peer.gateway_client());
    let descriptors = client.describe(CallOptions::default()).await.unwrap();
    assert_eq!(descriptors, fixture_descriptors());
    let manifest = create_orpc_agent_manifest(descriptors).unwrap();
    assert_eq!(manifest, governed_manifest());
    assert_eq!(
        manifest.tools.keys().collect::<Vec<_>>(),
        [
            "devices.disable",
            "devices.locate",
            "devices.purge",
            "mail.send"
        ]
    );
    let purge = manifest.tool("devices.purge").unwrap();
    assert_eq!(purge.capability_id.as_deref(), Some("devices.purge@v1"));
    assert!(purge.requires_approval);
    assert!(purge
        .contract_digest
        .as_deref()
        .unwrap()
        .starts_with("sha256:"));
    // Only the declared model-output schema is exposed.
    assert!(manifest
        .tool("devices.locate")
        .unwrap()
        .output_schema
        .is_some());
    assert!(manifest
        .tool("devices.disable")
        .unwrap()
        .output_schema
        .is_none());
}

#[tokio::test]
async fn s8_governed_completed_returns_output_and_reaches_observer() {
    let Some(peer) = Peer::start("s8_governed_completed_returns_output_and_reaches_observer")
    else {
        return;
    };
    let (bridge, seen) = bridge_over(peer.gateway_client(), governed_manifest());
    let out = bridge
        .executor
        .execute(request(
            "devices.disable",
            "inv-c1",
            json!({"deviceIds": ["dev-1"]}),
        ))
        .await
        .unwrap();
    assert_eq!(out, json!({"disabled": ["dev-1"]}));
    assert_eq!(
        device_ids(&peer, Some("disabled")).await,
        ["dev-1", "dev-3"]
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (outcome, info) = &seen[0];
    assert_eq!(
        outcome.completed_output(),
        Some(&json!({"disabled": ["dev-1"]}))
    );
    assert_eq!(
        (
            info.phase,
            info.invocation_id.as_str(),
            info.capability_id.as_deref()
        ),
        (OutcomePhase::Invoke, "inv-c1", Some("devices.disable@v1"))
    );
}

/// AS-GOVERNED-001: the bridge sends the canonical capability id, the
/// stable agent invocation id and the contract digest; backend approval
/// maps to `DOMAIN_APPROVAL_REQUIRED` (never a local confirmation, nothing
/// runs), is decided through the application's approver endpoint, and the
/// call resumes through the backend without re-dispatching the UI call.
#[tokio::test]
async fn as_governed_001_canonical_id_digest_and_backend_approval_is_not_local_confirmation() {
    let Some(peer) = Peer::start("as_governed_001") else {
        return;
    };
    let manifest = governed_manifest();
    let (bridge, seen) = bridge_over(peer.gateway_client(), manifest.clone());

    // 1. The call: approval required by the backend.
    let err = bridge
        .executor
        .execute(request(
            "devices.purge",
            "inv-purge-1",
            json!({"deviceIds": ["dev-3"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry),
        (ErrorCode::DomainApprovalRequired, Retry::No)
    );
    assert_ne!(err.code, ErrorCode::ConfirmationRequired);
    assert!(!err.details.contains_key("confirmationId"));
    let approval_id = err.details["approvalId"].as_str().unwrap().to_string();
    let execution_id = err.details["executionId"].as_str().unwrap().to_string();
    assert_eq!(
        details(&err),
        json!({"invocationId": "inv-purge-1", "executionId": execution_id, "approvalId": approval_id})
    );
    // Nothing ran: dev-3 still exists.
    assert!(device_ids(&peer, None).await.contains(&"dev-3".to_string()));

    // The gateway stored the receipt under the stable invocation id the
    // bridge sent (it also verified the canonical id and the digest, or it
    // would have answered NOT_FOUND / CONTRACT_MISMATCH; see below).
    let stored = bridge.reconcile("inv-purge-1").await.unwrap();
    assert_eq!(
        stored,
        GovernedOutcome::Receipt(DomainReceipt::ApprovalRequired {
            invocation_id: "inv-purge-1".into(),
            execution_id: Some(execution_id.clone()),
            approval_id: approval_id.clone(),
        })
    );

    // 2. Resuming before a decision: still pending, nothing runs.
    let pending = bridge.resume("inv-purge-1").await;
    assert_eq!(
        pending.to_result().unwrap_err().code,
        ErrorCode::DomainApprovalRequired
    );
    assert!(device_ids(&peer, None).await.contains(&"dev-3".to_string()));

    // 3. The requester (the user's token) cannot decide its own approval;
    //    the application's approver endpoint does.
    let refused = peer
        .gateway_client()
        .call(
            "approvals.decide",
            Some(json!({"approvalId": approval_id, "decision": "approve"})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.orpc_code(), Some("FORBIDDEN"));
    assert_eq!(
        decide(&peer, &approval_id, "approve").await,
        json!({"approvalId": approval_id, "decision": "approve"})
    );

    // 4. Resume through the backend with the requester's fresh authority.
    let resumed = bridge.resume("inv-purge-1").await;
    assert_eq!(
        resumed,
        GovernedOutcome::Receipt(DomainReceipt::Completed {
            invocation_id: "inv-purge-1".into(),
            execution_id: Some(execution_id),
            output: json!({"purged": ["dev-3"]}),
        })
    );
    assert_eq!(resumed.to_result(), Ok(json!({"purged": ["dev-3"]})));
    assert!(!device_ids(&peer, None).await.contains(&"dev-3".to_string()));
    let phases: Vec<OutcomePhase> = seen.lock().unwrap().iter().map(|(_, i)| i.phase).collect();
    assert_eq!(
        phases,
        [
            OutcomePhase::Invoke,
            OutcomePhase::Reconcile,
            OutcomePhase::Resume,
            OutcomePhase::Resume
        ]
    );

    // The ids really are what the gateway checks: a manifest without the
    // canonical override sends `domain:devices.purge` (unknown), one with a
    // stale digest is refused; neither executes.
    let mut no_override = manifest.clone();
    no_override
        .tools
        .get_mut("devices.purge")
        .unwrap()
        .capability_id = None;
    let (plain, _) = bridge_over(peer.gateway_client(), no_override);
    let err = plain
        .executor
        .execute(request(
            "devices.purge",
            "inv-purge-2",
            json!({"deviceIds": ["dev-1"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry),
        (ErrorCode::ExecutionFailed, Retry::No)
    );
    assert_eq!(
        details(&err),
        json!({"orpcCode": "NOT_FOUND", "invocationId": "inv-purge-2"})
    );
    assert_eq!(
        err.internal.unwrap()["data"],
        json!({"capabilityId": "domain:devices.purge"})
    );
    let mut stale = manifest;
    stale
        .tools
        .get_mut("devices.purge")
        .unwrap()
        .contract_digest = Some("sha256:stale".into());
    let (stale, _) = bridge_over(peer.gateway_client(), stale);
    let err = stale
        .executor
        .execute(request(
            "devices.purge",
            "inv-purge-3",
            json!({"deviceIds": ["dev-1"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        details(&err),
        json!({"orpcCode": "CONTRACT_MISMATCH", "invocationId": "inv-purge-3"})
    );
    for id in ["inv-purge-2", "inv-purge-3"] {
        assert_eq!(
            bridge.reconcile(id).await.unwrap_err().orpc_code(),
            Some("NOT_FOUND"),
            "{id} was never stored"
        );
    }
}

/// AS-GOVERNED-002: a response lost after the backend committed the effect
/// is `DOMAIN_OUTCOME_UNKNOWN` (retry no), never assumed failed; it is
/// reconciled through `getInvocation` by invocation id as completed, and
/// the effect happened exactly once.
#[tokio::test]
async fn as_governed_002_lost_response_is_outcome_unknown_then_reconciled_as_completed() {
    let Some(peer) = Peer::start("as_governed_002") else {
        return;
    };
    let dropping = peer
        .gateway_client()
        .with_header("x-test-drop-response", "1");
    let (bridge, seen) = bridge_over(dropping, governed_manifest());
    let err = bridge
        .executor
        .execute(request(
            "devices.disable",
            "inv-lost-1",
            json!({"deviceIds": ["dev-2"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry),
        (ErrorCode::DomainOutcomeUnknown, Retry::No)
    );
    assert_eq!(details(&err), json!({"invocationId": "inv-lost-1"}));
    assert_eq!(err.internal.as_ref().unwrap()["kind"], "transport");
    assert!(matches!(
        &seen.lock().unwrap()[0].0,
        GovernedOutcome::Unknown {
            reason: UnknownReason::LostResponse,
            ..
        }
    ));
    // The effect was committed although the response was lost.
    assert_eq!(
        device_ids(&peer, Some("disabled")).await,
        ["dev-2", "dev-3"]
    );

    // Reconcile by invocation id: completed.
    let outcome = bridge.reconcile("inv-lost-1").await.unwrap();
    assert_eq!(outcome.to_result(), Ok(json!({"disabled": ["dev-2"]})));
    assert_eq!(
        outcome.to_invocation_result(),
        surface_runtime::AgentInvocationResult::Success {
            invocation_id: "inv-lost-1".into(),
            output: json!({"disabled": ["dev-2"]}),
        }
    );

    // The same invocation id never executes twice: a repeat (here through a
    // bridge whose responses arrive) returns the stored receipt.
    let (plain, _) = bridge_over(peer.gateway_client(), governed_manifest());
    let again = plain
        .executor
        .execute(request(
            "devices.disable",
            "inv-lost-1",
            json!({"deviceIds": ["dev-2"]}),
        ))
        .await
        .unwrap();
    assert_eq!(again, json!({"disabled": ["dev-2"]}));

    // The backend's own outcome-unknown (mail provider timeout) stays
    // unknown after reconciliation: never turned into a failure.
    let err = plain
        .executor
        .execute(request(
            "mail.send",
            "inv-mail-1",
            json!({"to": "a@example.com", "subject": "Hi"}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry, details(&err)),
        (
            ErrorCode::DomainOutcomeUnknown,
            Retry::No,
            json!({"invocationId": "inv-mail-1"})
        )
    );
    let outcome = plain.reconcile("inv-mail-1").await.unwrap();
    assert!(matches!(
        outcome,
        GovernedOutcome::Receipt(DomainReceipt::OutcomeUnknown { .. })
    ));
    assert_eq!(
        outcome.to_result().unwrap_err().code,
        ErrorCode::DomainOutcomeUnknown
    );
}

#[tokio::test]
async fn s8_governed_response_for_another_invocation_is_outcome_unknown() {
    let Some(peer) = Peer::start("s8_governed_response_for_another_invocation_is_outcome_unknown")
    else {
        return;
    };
    let mismatching = peer
        .gateway_client()
        .with_header("x-test-mismatch-invocation", "1");
    let (bridge, seen) = bridge_over(mismatching, governed_manifest());
    let err = bridge
        .executor
        .execute(request(
            "devices.disable",
            "inv-mm-1",
            json!({"deviceIds": ["dev-1"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry, details(&err)),
        (
            ErrorCode::DomainOutcomeUnknown,
            Retry::No,
            json!({"invocationId": "inv-mm-1"})
        )
    );
    assert_eq!(
        seen.lock().unwrap()[0].0,
        GovernedOutcome::Unknown {
            invocation_id: "inv-mm-1".into(),
            reason: UnknownReason::MismatchedInvocation {
                received: "other-inv-mm-1".into()
            },
            internal: err.internal.clone().unwrap(),
        }
    );
    // getInvocation answers with the real id (the control only alters invoke).
    let outcome = bridge.reconcile("inv-mm-1").await.unwrap();
    assert_eq!(outcome.to_result(), Ok(json!({"disabled": ["dev-1"]})));
}

#[tokio::test]
async fn s8_governed_failed_and_cancelled_rows() {
    let Some(peer) = Peer::start("s8_governed_failed_and_cancelled_rows") else {
        return;
    };
    let (bridge, _) = bridge_over(peer.gateway_client(), governed_manifest());
    // (device, surface code, backend code in the audit record)
    let cases = [
        (
            "dev-locked",
            ErrorCode::NotAuthorized,
            Some("FORBIDDEN"),
            "failed",
        ),
        (
            "dev-3",
            ErrorCode::ExecutionFailed,
            Some("PROVIDER_DOWN"),
            "failed",
        ),
        ("dev-2", ErrorCode::ExecutionFailed, None, "cancelled"),
    ];
    for (i, (device, code, backend_code, status)) in cases.into_iter().enumerate() {
        let id = format!("inv-locate-{i}");
        let err = bridge
            .executor
            .execute(request(
                "devices.locate",
                &id,
                json!({ "deviceId": device }),
            ))
            .await
            .unwrap_err();
        assert_eq!((err.code, err.retry), (code, Retry::No), "{device}");
        assert_eq!(details(&err), json!({ "invocationId": id }));
        let internal = err.internal.clone().unwrap();
        assert_eq!(internal["receipt"]["status"], status);
        assert_eq!(internal["receipt"]["error"]["code"].as_str(), backend_code);
        // Backend text is audit-only.
        let agent = serde_json::to_string(&err.to_agent_error()).unwrap();
        assert!(
            !agent.contains("provider is down") && !agent.contains("Not allowed"),
            "{agent}"
        );
    }
    let ok = bridge
        .executor
        .execute(request(
            "devices.locate",
            "inv-locate-ok",
            json!({"deviceId": "dev-1"}),
        ))
        .await
        .unwrap();
    assert_eq!(ok, json!({"deviceId": "dev-1", "room": "Lobby"}));
}

#[tokio::test]
async fn s8_governed_rejected_approval_resumes_as_failed() {
    let Some(peer) = Peer::start("s8_governed_rejected_approval_resumes_as_failed") else {
        return;
    };
    let (bridge, _) = bridge_over(peer.gateway_client(), governed_manifest());
    let approval_id = purge_awaiting_approval(&bridge, "inv-rej", "dev-1").await;
    decide(&peer, &approval_id, "reject").await;
    let outcome = bridge.resume("inv-rej").await;
    let err = outcome.to_result().unwrap_err();
    assert_eq!(
        (err.code, err.retry, details(&err)),
        (
            ErrorCode::ExecutionFailed,
            Retry::No,
            json!({"invocationId": "inv-rej"})
        )
    );
    assert_eq!(
        err.internal.unwrap()["receipt"]["error"]["code"],
        "APPROVAL_REJECTED"
    );
    assert!(device_ids(&peer, None).await.contains(&"dev-1".to_string()));
}

#[tokio::test]
async fn s8_governed_gateway_refusals_run_nothing() {
    let Some(peer) = Peer::start("s8_governed_gateway_refusals_run_nothing") else {
        return;
    };
    let (bridge, _) = bridge_over(peer.gateway_client(), governed_manifest());
    // Input the gateway's contract rejects.
    let err = bridge
        .executor
        .execute(request(
            "mail.send",
            "inv-bad",
            json!({"to": "not-an-email", "subject": "x"}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry),
        (ErrorCode::ExecutionFailed, Retry::No)
    );
    assert_eq!(err.internal.as_ref().unwrap()["code"], "BAD_REQUEST");
    assert_eq!(
        bridge.reconcile("inv-bad").await.unwrap_err().orpc_code(),
        Some("NOT_FOUND")
    );
    // The requester's transport without credentials.
    let (anonymous, _) = bridge_over(HttpOrpcClient::new(peer.gateway_url()), governed_manifest());
    let err = anonymous
        .executor
        .execute(request(
            "devices.disable",
            "inv-anon",
            json!({"deviceIds": ["dev-1"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, details(&err)),
        (
            ErrorCode::NotAuthorized,
            json!({"invocationId": "inv-anon"})
        )
    );
    assert_eq!(device_ids(&peer, Some("disabled")).await, ["dev-3"]);
}

#[tokio::test]
async fn s8_governed_observer_error_or_panic_never_erases_completed_receipt() {
    let Some(peer) =
        Peer::start("s8_governed_observer_error_or_panic_never_erases_completed_receipt")
    else {
        return;
    };
    let failing: [(&str, Arc<dyn surface_runtime::bridge::OutcomeObserver>); 2] = [
        (
            "error",
            Arc::new(|_: &GovernedOutcome, _: &OutcomeInfo| -> ObserverResult {
                Err("receipt store unavailable".into())
            }),
        ),
        (
            "panic",
            Arc::new(|_: &GovernedOutcome, _: &OutcomeInfo| -> ObserverResult {
                panic!("observer bug")
            }),
        ),
    ];
    for (i, (label, observer)) in failing.into_iter().enumerate() {
        let mut options = GovernedBridgeOptions::new(
            Arc::new(OrpcCapabilityClient::new(peer.gateway_client())),
            governed_manifest(),
        );
        options.on_outcome = Some(observer);
        let bridge = create_governed_orpc_agent_bridge(options);
        let device = ["dev-1", "dev-2"][i];
        let out = bridge
            .executor
            .execute(request(
                "devices.disable",
                &format!("inv-obs-{label}"),
                json!({ "deviceIds": [device] }),
            ))
            .await;
        assert_eq!(out, Ok(json!({ "disabled": [device] })), "{label}");
        let reconciled = bridge.reconcile(&format!("inv-obs-{label}")).await.unwrap();
        assert_eq!(
            reconciled.completed_output(),
            Some(&json!({ "disabled": [device] }))
        );
    }
}

#[tokio::test]
async fn s8_governed_connection_refused_is_retryable_execution_failure() {
    let refusing = support::net::RefusingPort::new();
    let addr = refusing.addr;
    let (bridge, _) = bridge_over(
        HttpOrpcClient::new(format!("http://{addr}/gateway")),
        governed_manifest(),
    );
    let err = bridge
        .executor
        .execute(request(
            "devices.disable",
            "inv-down",
            json!({"deviceIds": ["dev-1"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.retry, details(&err)),
        (
            ErrorCode::ExecutionFailed,
            Retry::Yes,
            json!({"invocationId": "inv-down"})
        )
    );
    let err = bridge.reconcile("inv-down").await.unwrap_err();
    assert!(matches!(err, OrpcCallError::Connect { .. }));
}

#[tokio::test]
async fn s8_governed_resume_carries_fresh_requester_authority() {
    let Some(peer) = Peer::start("s8_governed_resume_carries_fresh_requester_authority") else {
        return;
    };
    let (bridge, _) = bridge_over(peer.gateway_client(), governed_manifest());
    let approval_id = purge_awaiting_approval(&bridge, "inv-fresh", "dev-2").await;
    decide(&peer, &approval_id, "approve").await;
    let with_auth = |token: &str| CallOptions {
        headers: vec![("authorization".into(), token.into())],
        ..CallOptions::default()
    };
    // An expired requester credential: the backend refuses, nothing runs.
    let refused = bridge
        .resume_with("inv-fresh", with_auth("Bearer expired-token"))
        .await;
    let err = refused.to_result().unwrap_err();
    assert_eq!(
        (err.code, err.retry, details(&err)),
        (
            ErrorCode::NotAuthorized,
            Retry::No,
            json!({"invocationId": "inv-fresh"})
        )
    );
    assert!(matches!(refused, GovernedOutcome::Rejected { .. }));
    assert!(device_ids(&peer, None).await.contains(&"dev-2".to_string()));
    // The approver's credential is not the requester's authority either.
    let err = bridge
        .resume_with("inv-fresh", with_auth(support::peer::APPROVER_TOKEN))
        .await
        .to_result()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotAuthorized);
    // The requester's fresh credential resumes it.
    let outcome = bridge
        .resume_with("inv-fresh", with_auth(support::peer::USER_TOKEN))
        .await;
    assert_eq!(outcome.to_result(), Ok(json!({"purged": ["dev-2"]})));
    assert!(!device_ids(&peer, None).await.contains(&"dev-2".to_string()));
}
