//! Interop tests of the governed bridge (`docs/bridges.md`, "Governed
//! bridge") against the oRPC peer's examples gateway (`/gateway`, the
//! domain router's devices, see `tests/orpc-peer/README.md`): every row of
//! the outcome table, reconciliation, approval → decide → resume, fresh
//! requester authority, and AS-GOVERNED-001/002. The flow against the
//! interop set, and against any gateway, is `tests/gateway_interop.rs`.

mod support;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use support::peer::Peer;
use surface_runtime::bridge::governed::GATEWAY_ISSUE_MESSAGE;
use surface_runtime::bridge::{
    create_governed_orpc_agent_bridge, CallOptions, CapabilityClient, DescribeScope,
    GatewayOutcome, GovernedBridgeOptions, GovernedOrpcAgentBridge, GovernedOutcome,
    HttpOrpcClient, ObserverResult, OrpcCallError, OrpcCapabilityClient, OrpcClient, OutcomeInfo,
    OutcomePhase, ResumeApprovalRequest, UnknownReason,
};
use surface_runtime::manifest::create_orpc_agent_manifest;
use surface_runtime::{
    AgentConsumer, AgentManifest, Cancellation, ErrorCode, ExecuteRequest, ExecutionError,
    ProcedureCallInfo, Retry,
};

type Seen = Arc<Mutex<Vec<(GovernedOutcome, OutcomeInfo)>>>;

/// The manifest of the peer's `/gateway` from its own `describe`.
async fn governed_manifest(peer: &Peer) -> AgentManifest {
    let client = OrpcCapabilityClient::new(peer.gateway_client());
    let descriptors = client
        .describe(DescribeScope::default(), CallOptions::default())
        .await
        .unwrap();
    create_orpc_agent_manifest(descriptors).expect("valid governed manifest")
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

fn details(err: &ExecutionError) -> Value {
    Value::Object(err.details.clone())
}

/// The details the error matrix does not allow for the error's code: kept
/// in the audit record (`internal.droppedDetails`), never shown the agent.
fn audited(err: &ExecutionError) -> Value {
    err.internal
        .as_ref()
        .and_then(|internal| internal.get("droppedDetails"))
        .cloned()
        .unwrap_or(Value::Null)
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

#[tokio::test]
async fn s3_describe_from_real_gateway_builds_the_manifest() {
    let Some(peer) = Peer::start("s3_describe_from_real_gateway_builds_the_manifest") else {
        return;
    };
    let manifest = governed_manifest(&peer).await;
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
    assert_eq!(purge.capability_id.as_deref(), Some("devices.purge"));
    assert!(purge.requires_approval);
    let digest = purge.contract_digest.as_deref().unwrap();
    assert!(
        digest.len() == 64
            && digest
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{digest}"
    );
    // Descriptors carry no output schema.
    assert!(manifest.tools.values().all(|t| t.output_schema.is_none()));
    // Scoped to one id, as a host that governs only the purge asks.
    let scoped = OrpcCapabilityClient::new(peer.gateway_client())
        .describe(
            DescribeScope::ids(["devices.purge"]),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(scoped.len(), 1);
    assert_eq!(scoped[0].contract_digest, digest);
}

#[tokio::test]
async fn s8_governed_completed_returns_output_and_reaches_observer() {
    let Some(peer) = Peer::start("s8_governed_completed_returns_output_and_reaches_observer")
    else {
        return;
    };
    let (bridge, seen) = bridge_over(peer.gateway_client(), governed_manifest(&peer).await);
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
        (OutcomePhase::Invoke, "inv-c1", Some("devices.disable"))
    );
}

/// AS-GOVERNED-001: the bridge sends the descriptor's capability id, the
/// stable agent invocation id and the contract digest; the gateway's
/// approval maps to `DOMAIN_APPROVAL_REQUIRED` (never a local
/// confirmation, nothing runs), is decided at the application's decision
/// endpoint, and the call resumes through `resumeApproval` without
/// re-dispatching the UI call.
#[tokio::test]
async fn as_governed_001_descriptor_id_digest_and_backend_approval_is_not_local_confirmation() {
    let Some(peer) = Peer::start("as_governed_001") else {
        return;
    };
    let manifest = governed_manifest(&peer).await;
    let (bridge, seen) = bridge_over(peer.gateway_client(), manifest.clone());

    // 1. The call: the gateway holds it for an approval.
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
        (err.code.clone(), err.retry),
        (ErrorCode::DomainApprovalRequired, Retry::No)
    );
    assert!(!err.details.contains_key("confirmationId"));
    let approval_id = err.details["approvalId"].as_str().unwrap().to_string();
    let execution_id = err.details["executionId"].as_str().unwrap().to_string();
    let expires_at = err.details["expiresAt"].as_str().unwrap().to_string();
    assert_eq!(
        details(&err),
        json!({"origin": "server", "invocationId": "inv-purge-1", "executionId": execution_id,
            "approvalId": approval_id, "expiresAt": expires_at})
    );
    assert!(device_ids(&peer, None).await.contains(&"dev-3".to_string()));

    // The gateway journaled it under the stable id the bridge sent.
    let stored = bridge.reconcile("inv-purge-1").await.unwrap();
    assert_eq!(stored.approval_id(), Some(approval_id.as_str()));

    // 2. Resuming before a decision: still pending, nothing runs.
    let resume = || ResumeApprovalRequest::new("inv-purge-1", &approval_id);
    let pending = bridge.resume(resume()).await;
    assert_eq!(
        pending.to_result().unwrap_err().code,
        ErrorCode::DomainApprovalRequired
    );
    assert!(device_ids(&peer, None).await.contains(&"dev-3".to_string()));

    // 3. The requester's token cannot decide; the approver's does.
    let (status, _) = support::peer::decide_at(
        &peer.approver_url(),
        support::peer::USER_TOKEN,
        &approval_id,
        "approved",
    )
    .await;
    assert_eq!(status, 403);
    let (status, decided) = peer.decide(&approval_id, "approved").await;
    assert_eq!((status, &decided["status"]), (200, &json!("approved")));

    // 4. Resume through the gateway with the requester's fresh authority.
    let resumed = bridge.resume(resume()).await;
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

    // The digest really is what the gateway checks: a stale one is refused
    // before anything is journaled.
    let mut stale = manifest;
    stale
        .tools
        .get_mut("devices.purge")
        .unwrap()
        .contract_digest = Some("0".repeat(64));
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
        (err.code.clone(), err.retry, details(&err)),
        (
            ErrorCode::StaleCapability,
            Retry::AfterRefresh,
            json!({"reason": "contract-changed"})
        )
    );
    assert_eq!(audited(&err), json!({"invocationId": "inv-purge-3"}));
    assert_eq!(
        bridge.reconcile("inv-purge-3").await.unwrap(),
        GovernedOutcome::NotRecorded {
            invocation_id: "inv-purge-3".into()
        }
    );
}

/// AS-GOVERNED-002: an answer lost after the gateway committed the effect
/// is `DOMAIN_OUTCOME_UNKNOWN` (retry no), never assumed failed; it is
/// reconciled through `getInvocation` by invocation id as completed, and
/// the effect happened exactly once.
#[tokio::test]
async fn as_governed_002_lost_response_is_outcome_unknown_then_reconciled_as_completed() {
    let Some(peer) = Peer::start("as_governed_002") else {
        return;
    };
    let manifest = governed_manifest(&peer).await;
    let dropping = peer
        .gateway_client()
        .with_header("x-test-drop-response", "1");
    let (bridge, seen) = bridge_over(dropping, manifest.clone());
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
        (err.code.clone(), err.retry),
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
    // The effect was committed although the answer was lost.
    assert_eq!(
        device_ids(&peer, Some("disabled")).await,
        ["dev-2", "dev-3"]
    );
    let outcome = bridge.reconcile("inv-lost-1").await.unwrap();
    assert_eq!(outcome.to_result(), Ok(json!({"disabled": ["dev-2"]})));
    assert_eq!(
        outcome.to_invocation_result("domain:devices.disable", 3),
        surface_runtime::AgentInvocationResult::ok(
            "inv-lost-1",
            "domain:devices.disable",
            json!({"disabled": ["dev-2"]}),
            3
        )
    );

    // The same invocation id never executes twice: a repeat answers the
    // recorded outcome.
    let (plain, _) = bridge_over(peer.gateway_client(), manifest);
    let again = plain
        .executor
        .execute(request(
            "devices.disable",
            "inv-lost-1",
            json!({"deviceIds": ["dev-2"]}),
        ))
        .await;
    assert_eq!(again, Ok(json!({"disabled": ["dev-2"]})));

    // The gateway's own outcome-unknown (the mail provider timed out after
    // sending) stays unknown after reconciliation: the receipt is pending.
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
        (err.code.clone(), err.retry, details(&err)),
        (
            ErrorCode::DomainOutcomeUnknown,
            Retry::No,
            json!({"invocationId": "inv-mail-1"})
        )
    );
    let outcome = plain.reconcile("inv-mail-1").await.unwrap();
    assert!(
        matches!(outcome, GovernedOutcome::Pending(_)),
        "{outcome:?}"
    );
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
    let (bridge, seen) = bridge_over(mismatching, governed_manifest(&peer).await);
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
        (err.code.clone(), err.retry, details(&err)),
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
    let (bridge, _) = bridge_over(peer.gateway_client(), governed_manifest(&peer).await);
    // (device, surface code, retry, details, status, gateway code); the
    // invocation id is in the audit record only (the error matrix allows it
    // in the details of the two domain codes alone): in the recorded
    // outcome, and where the mapping named it in details, moved to
    // `droppedDetails` (a cancelled outcome's mapping never names it).
    let cases = [
        (
            "dev-locked",
            ErrorCode::NotAuthorized,
            Retry::No,
            json!({"origin": "server"}),
            "failed",
            "FORBIDDEN",
        ),
        (
            "dev-3",
            ErrorCode::ExecutionFailed,
            Retry::AfterDelay,
            json!({"transient": true}),
            "failed",
            "EXECUTION_FAILED",
        ),
        (
            "dev-2",
            ErrorCode::Cancelled,
            Retry::No,
            json!({}),
            "cancelled",
            "CANCELLED",
        ),
    ];
    for (i, (device, code, retry, extra, status, gateway_code)) in cases.into_iter().enumerate() {
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
        assert_eq!((err.code.clone(), err.retry), (code, retry), "{device}");
        assert_eq!(details(&err), extra, "{device}");
        let dropped = if status == "cancelled" {
            Value::Null
        } else {
            json!({ "invocationId": id })
        };
        assert_eq!(audited(&err), dropped, "{device}");
        let internal = err.internal.clone().unwrap();
        assert_eq!(internal["outcome"]["invocationId"], json!(id), "{device}");
        assert_eq!(internal["outcome"]["status"], status);
        assert_eq!(internal["outcome"]["error"]["code"], gateway_code);
        // The gateway's text is audit-only.
        let agent = serde_json::to_string(&err.to_agent_error()).unwrap();
        assert!(!agent.contains("provider is down"), "{agent}");
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
async fn s8_governed_rejected_approval_resumes_as_not_authorized() {
    let Some(peer) = Peer::start("s8_governed_rejected_approval_resumes_as_not_authorized") else {
        return;
    };
    let (bridge, _) = bridge_over(peer.gateway_client(), governed_manifest(&peer).await);
    let approval_id = purge_awaiting_approval(&bridge, "inv-rej", "dev-1").await;
    assert_eq!(peer.decide(&approval_id, "rejected").await.0, 200);
    let outcome = bridge
        .resume(ResumeApprovalRequest::new("inv-rej", &approval_id))
        .await;
    let err = outcome.to_result().unwrap_err();
    assert_eq!(
        (
            err.code.clone(),
            err.retry,
            details(&err),
            err.message.as_str()
        ),
        (
            ErrorCode::NotAuthorized,
            Retry::No,
            json!({"origin": "server"}),
            "The approver rejected this call; it did not run."
        )
    );
    assert_eq!(audited(&err), json!({"invocationId": "inv-rej"}));
    assert_eq!(
        err.internal.unwrap()["outcome"]["error"]["code"],
        "APPROVAL_REJECTED"
    );
    assert!(device_ids(&peer, None).await.contains(&"dev-1".to_string()));
    let approval = bridge
        .get_approval(&approval_id, CallOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(approval.status.as_str(), "rejected");
}

#[tokio::test]
async fn s8_governed_gateway_refusals_run_nothing() {
    let Some(peer) = Peer::start("s8_governed_gateway_refusals_run_nothing") else {
        return;
    };
    let manifest = governed_manifest(&peer).await;
    let (bridge, _) = bridge_over(peer.gateway_client(), manifest.clone());
    // Input the gateway's contract refuses: INVALID_INPUT with the path (a
    // string, as the session writes it) and the fixed message.
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
        (err.code.clone(), err.retry, details(&err)),
        (
            ErrorCode::InvalidInput,
            Retry::WithChanges,
            json!({"issues": [{"path": "to", "message": GATEWAY_ISSUE_MESSAGE}]})
        )
    );
    assert_eq!(audited(&err), json!({"invocationId": "inv-bad"}));
    assert!(matches!(
        bridge.reconcile("inv-bad").await.unwrap(),
        GovernedOutcome::Gateway(GatewayOutcome::Failed { .. })
    ));
    // The requester's transport without credentials.
    let (anonymous, _) = bridge_over(HttpOrpcClient::new(peer.gateway_url()), manifest);
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
        (err.code.clone(), details(&err)),
        (ErrorCode::NotAuthenticated, json!({}))
    );
    assert_eq!(audited(&err), json!({"invocationId": "inv-anon"}));
    assert_eq!(device_ids(&peer, Some("disabled")).await, ["dev-3"]);
}

#[tokio::test]
async fn s8_governed_observer_error_or_panic_never_erases_completed_outcome() {
    let Some(peer) =
        Peer::start("s8_governed_observer_error_or_panic_never_erases_completed_outcome")
    else {
        return;
    };
    let manifest = governed_manifest(&peer).await;
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
            manifest.clone(),
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
    let manifest = AgentManifest::from_json_str(
        r#"{"tools": {"devices.disable": {"inputSchema": {"type": "object"}, "effect": "server-mutation", "capabilityId": "devices.disable"}}}"#,
    )
    .unwrap();
    let (bridge, _) = bridge_over(
        HttpOrpcClient::new(format!("http://{addr}/gateway")),
        manifest,
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
        (err.code.clone(), err.retry, details(&err)),
        (ErrorCode::ExecutionFailed, Retry::AfterDelay, json!({}))
    );
    assert_eq!(audited(&err), json!({"invocationId": "inv-down"}));
    let err = bridge.reconcile("inv-down").await.unwrap_err();
    assert!(matches!(err, OrpcCallError::Connect { .. }));
}

#[tokio::test]
async fn s8_governed_resume_carries_fresh_requester_authority() {
    let Some(peer) = Peer::start("s8_governed_resume_carries_fresh_requester_authority") else {
        return;
    };
    let (bridge, _) = bridge_over(peer.gateway_client(), governed_manifest(&peer).await);
    let approval_id = purge_awaiting_approval(&bridge, "inv-fresh", "dev-2").await;
    assert_eq!(peer.decide(&approval_id, "approved").await.0, 200);
    let with_auth = |token: &str| CallOptions {
        headers: vec![("authorization".into(), token.into())],
        ..CallOptions::default()
    };
    let resume = || ResumeApprovalRequest::new("inv-fresh", &approval_id);
    // An expired requester credential: the gateway refuses, nothing runs.
    let refused = bridge
        .resume_with(resume(), with_auth("Bearer expired-token"))
        .await;
    let err = refused.to_result().unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry, details(&err)),
        (ErrorCode::NotAuthenticated, Retry::No, json!({}))
    );
    assert_eq!(audited(&err), json!({"invocationId": "inv-fresh"}));
    assert!(matches!(refused, GovernedOutcome::Rejected { .. }));
    assert!(device_ids(&peer, None).await.contains(&"dev-2".to_string()));
    // The approver's credential is not the requester's authority either.
    let err = bridge
        .resume_with(resume(), with_auth(support::peer::APPROVER_TOKEN))
        .await
        .to_result()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotAuthenticated);
    // The requester's fresh credential resumes it.
    let outcome = bridge
        .resume_with(resume(), with_auth(support::peer::USER_TOKEN))
        .await;
    assert_eq!(outcome.to_result(), Ok(json!({"purged": ["dev-2"]})));
    assert!(!device_ids(&peer, None).await.contains(&"dev-2".to_string()));
}
