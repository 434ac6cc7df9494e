//! The governed bridge against orpc-agent's capability gateway
//! (`docs/bridges.md`, "Governed bridge"; `cargo test --test
//! gateway_interop`).
//!
//! * **Interop** — the governed flow (describe, manifest, a completed
//!   write, a replay and a conflicting reuse of an id, an approval
//!   required, pending, approved at the decision endpoint, resumed and
//!   replayed, a rejected one, an outcome unknown reconciled through
//!   `getInvocation`, the refusals) against the project's peer
//!   (`tests/orpc-peer`, prefix `/capabilities`) by default, or against any
//!   gateway named by `AGENT_SURFACE_GATEWAY_URL` (the router's prefix),
//!   `AGENT_SURFACE_GATEWAY_TOKEN` (sent as `Authorization: Bearer …`),
//!   `AGENT_SURFACE_APPROVER_URL` (the application's decision endpoint)
//!   and `AGENT_SURFACE_APPROVER_TOKEN`, serving the interop set
//!   (`devices.list`, `devices.disable`, `devices.purge`). Every run uses
//!   fresh invocation ids (a gateway keeps its journal) and assumes no
//!   device state but what the flow itself does.
//! * **Golden** — what the bridge sends and accepts, compared with the 36
//!   exchanges recorded from the real gateway
//!   (`tests/fixtures/originals/gateway/exchanges.normalized.json`) and
//!   the TypeScript bridge's calls (`…/session-governed/`), in both
//!   directions, through the real HTTP client and a local server replaying
//!   the recorded answers (no Node.js needed).

mod support;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use support::peer::{decide_at, repo_root, Peer, APPROVER_TOKEN, USER_TOKEN};
use surface_runtime::bridge::governed::GATEWAY_ISSUE_MESSAGE;
use surface_runtime::bridge::{
    create_governed_orpc_agent_bridge, ApprovalStatus, CallOptions, CapabilityClient,
    DescribeScope, GatewayOutcome, GovernedBridgeOptions, GovernedOrpcAgentBridge, GovernedOutcome,
    HttpOrpcClient, OrpcCapabilityClient, ReceiptState, ResumeApprovalRequest,
};
use surface_runtime::manifest::{create_orpc_agent_manifest, CapabilityDescriptor};
use surface_runtime::{
    AgentConsumer, AgentManifest, Cancellation, ErrorCode, ExecuteRequest, ExecutionError,
    ProcedureCallInfo, Retry,
};

// ------------------------------------------------------------------ target

/// The gateway under test and its decision endpoint.
struct Target {
    gateway_url: String,
    /// `Bearer …`.
    gateway_auth: String,
    approver_url: String,
    /// `Bearer …`.
    approver_auth: String,
    /// The project's peer, when no gateway was named.
    peer: Option<Peer>,
    /// A prefix for this run's invocation ids.
    run: String,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The named gateway, or the project's peer (`None` when Node.js is
/// missing outside CI: the peer helper printed why).
fn target(test: &str) -> Option<Target> {
    let run = run_id();
    if let Some(gateway_url) = env("AGENT_SURFACE_GATEWAY_URL") {
        let need = |name: &str| {
            env(name).unwrap_or_else(|| {
                panic!("AGENT_SURFACE_GATEWAY_URL is set, so {name} must be set too")
            })
        };
        return Some(Target {
            gateway_url,
            gateway_auth: format!("Bearer {}", need("AGENT_SURFACE_GATEWAY_TOKEN")),
            approver_url: need("AGENT_SURFACE_APPROVER_URL"),
            approver_auth: format!("Bearer {}", need("AGENT_SURFACE_APPROVER_TOKEN")),
            peer: None,
            run,
        });
    }
    let peer = Peer::start(test)?;
    Some(Target {
        gateway_url: peer.capabilities_url(),
        gateway_auth: USER_TOKEN.into(),
        approver_url: peer.approver_url(),
        approver_auth: APPROVER_TOKEN.into(),
        peer: Some(peer),
        run,
    })
}

/// A fresh prefix per run: the clock's nanoseconds and the process id.
fn run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("gi-{:x}-{:x}", nanos, std::process::id())
}

impl Target {
    fn id(&self, step: &str) -> String {
        format!("{}-{step}", self.run)
    }

    fn client(&self) -> OrpcCapabilityClient<HttpOrpcClient> {
        OrpcCapabilityClient::new(
            HttpOrpcClient::new(self.gateway_url.clone())
                .with_header("authorization", self.gateway_auth.clone()),
        )
    }

    async fn descriptors(&self) -> Vec<CapabilityDescriptor> {
        let all = self
            .client()
            .describe(DescribeScope::default(), CallOptions::default())
            .await
            .expect("describe");
        let interop = ["devices.list", "devices.disable", "devices.purge"];
        let found: Vec<_> = all.iter().map(|d| d.id.as_str()).collect();
        for id in interop {
            assert!(
                found.contains(&id),
                "the gateway does not serve {id}: {found:?}"
            );
        }
        all.into_iter()
            .filter(|d| interop.contains(&d.id.as_str()))
            .collect()
    }

    async fn bridge(&self) -> GovernedOrpcAgentBridge {
        let manifest = create_orpc_agent_manifest(self.descriptors().await).unwrap();
        create_governed_orpc_agent_bridge(GovernedBridgeOptions::new(
            Arc::new(self.client()),
            manifest,
        ))
    }

    async fn decide(&self, approval_id: &str, status: &str) -> (u16, Value) {
        decide_at(&self.approver_url, &self.approver_auth, approval_id, status).await
    }

    async fn list(&self, bridge: &GovernedOrpcAgentBridge) -> Value {
        let id = self.id(&format!("list-{}", uniq()));
        bridge
            .executor
            .execute(request("devices.list", &id, json!({})))
            .await
            .expect("devices.list")
    }
}

fn uniq() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
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

fn is_iso(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 20 && b[4] == b'-' && b[10] == b'T' && text.ends_with('Z')
}

fn device<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["items"]
        .as_array()
        .and_then(|items| items.iter().find(|d| d["id"] == id))
        .unwrap_or_else(|| panic!("devices.list has no {id}: {list}"))
}

// ----------------------------------------------------------------- interop

fn fixture(path: &str) -> Value {
    let file = repo_root().join("tests/fixtures/originals").join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn interop_describe_and_manifest_match_the_recorded_gateway() {
    let Some(target) = target("interop_describe_and_manifest_match_the_recorded_gateway") else {
        return;
    };
    let descriptors = target.descriptors().await;
    let recorded = fixture("session-governed/governed.describe.json");
    let mut expected_manifest = fixture("session-governed/governed.manifest.json");
    for recorded in recorded.as_array().unwrap() {
        let id = recorded["id"].as_str().unwrap();
        let ours = descriptors.iter().find(|d| d.id == id).unwrap();
        let digest = &ours.contract_digest;
        assert!(
            digest.len() == 64
                && digest
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{id}: contractDigest {digest:?} is not bare lowercase hex"
        );
        let mut ours = serde_json::to_value(ours).unwrap();
        ours["contractDigest"] = recorded["contractDigest"].clone();
        assert_eq!(&ours, recorded, "{id}");
        expected_manifest["tools"][id]["contractDigest"] = json!(digest);
    }
    let manifest = create_orpc_agent_manifest(descriptors).unwrap();
    assert_eq!(serde_json::to_value(&manifest).unwrap(), expected_manifest);
}

#[tokio::test]
async fn interop_completed_write_replay_and_conflicting_reuse() {
    let Some(target) = target("interop_completed_write_replay_and_conflicting_reuse") else {
        return;
    };
    let bridge = target.bridge().await;
    let id = target.id("disable");
    let input = json!({"deviceIds": ["d1"], "reason": "interop"});
    let first = bridge
        .executor
        .execute(request("devices.disable", &id, input.clone()))
        .await
        .expect("devices.disable completes");
    assert_eq!(
        (first["disabled"].clone(), first["deviceIds"].clone()),
        (json!(1), json!(["d1"]))
    );
    assert!(is_iso(first["at"].as_str().unwrap()), "{first}");
    // The same id and input: the recorded outcome, no second effect.
    let replay = bridge
        .executor
        .execute(request("devices.disable", &id, input))
        .await;
    assert_eq!(replay, Ok(first.clone()));
    let reconciled = bridge.reconcile(&id).await.unwrap();
    assert_eq!(reconciled.completed_output(), Some(&first));
    // The same id with another input: refused, nothing runs.
    let err = bridge
        .executor
        .execute(request(
            "devices.disable",
            &id,
            json!({"deviceIds": ["d2"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry, details(&err)),
        (
            ErrorCode::InvocationConflict,
            Retry::WithChanges,
            json!({"reason": "id-reused-with-different-request"})
        )
    );
    assert_eq!(audited(&err), json!({"invocationId": id}));
    assert_eq!(
        device(&target.list(&bridge).await, "d1")["enabled"],
        json!(false)
    );
}

/// AS-GOVERNED-001 against the gateway: approval required → pending →
/// decided at the application's endpoint → `resumeApproval` → completed,
/// and a replayed resume answers the recorded outcome.
#[tokio::test]
async fn interop_approval_required_pending_approved_resumed_and_replayed() {
    let Some(target) = target("interop_approval_required_pending_approved_resumed_and_replayed")
    else {
        return;
    };
    let bridge = target.bridge().await;
    let id = target.id("purge");
    let err = bridge
        .executor
        .execute(request("devices.purge", &id, json!({"deviceIds": ["d3"]})))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::DomainApprovalRequired, Retry::No)
    );
    let approval_id = err.details["approvalId"].as_str().unwrap().to_string();
    let mut keys: Vec<&str> = err.details.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "approvalId",
            "executionId",
            "expiresAt",
            "invocationId",
            "origin"
        ]
    );
    assert_eq!(
        (&err.details["origin"], &err.details["invocationId"]),
        (&json!("server"), &json!(id))
    );

    let approval = bridge
        .get_approval(&approval_id, CallOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            approval.capability_id.as_str(),
            approval.status,
            approval.types.clone()
        ),
        (
            "devices.purge",
            ApprovalStatus::Pending,
            vec!["irreversible".to_string()]
        )
    );
    assert!(!approval.reasons.is_empty());
    assert_eq!(err.details["expiresAt"], json!(approval.expires_at));
    let held = bridge.reconcile(&id).await.unwrap();
    assert_eq!(held.approval_id(), Some(approval_id.as_str()));

    // Not decided yet: resuming answers the same approval, nothing runs.
    let pending = bridge
        .resume(ResumeApprovalRequest::new(&id, &approval_id))
        .await;
    assert_eq!(pending.approval_id(), Some(approval_id.as_str()));

    let (status, decided) = target.decide(&approval_id, "approved").await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(
        (&decided["id"], &decided["status"]),
        (&json!(approval_id), &json!("approved"))
    );
    assert_eq!(decided["decision"]["status"], "approved");

    let done = bridge
        .resume(ResumeApprovalRequest::new(&id, &approval_id))
        .await;
    assert_eq!(done.to_result(), Ok(json!({"purged": 1})));
    let again = bridge
        .resume(ResumeApprovalRequest::new(&id, &approval_id))
        .await;
    assert_eq!(again, done, "a settled call answers its recorded outcome");
    let consumed = bridge
        .get_approval(&approval_id, CallOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(consumed.status, ApprovalStatus::Consumed);
    assert_eq!(bridge.reconcile(&id).await.unwrap(), done);
    assert_eq!(
        device(&target.list(&bridge).await, "d3")["purged"],
        json!(true)
    );
}

#[tokio::test]
async fn interop_rejected_approval_resumes_as_not_authorized() {
    let Some(target) = target("interop_rejected_approval_resumes_as_not_authorized") else {
        return;
    };
    let bridge = target.bridge().await;
    let id = target.id("purge-rejected");
    let err = bridge
        .executor
        .execute(request("devices.purge", &id, json!({"deviceIds": ["d2"]})))
        .await
        .unwrap_err();
    let approval_id = err.details["approvalId"].as_str().unwrap().to_string();
    let (status, decided) = target.decide(&approval_id, "rejected").await;
    assert_eq!((status, &decided["status"]), (200, &json!("rejected")));
    let outcome = bridge
        .resume(ResumeApprovalRequest::new(&id, &approval_id))
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
    assert_eq!(audited(&err), json!({"invocationId": id}));
    assert!(matches!(
        &outcome,
        GovernedOutcome::Gateway(GatewayOutcome::Failed { error, .. }) if error.code == "APPROVAL_REJECTED"
    ));
    // A second decision is refused: the first one stands.
    let (status, answer) = target.decide(&approval_id, "approved").await;
    assert_ne!(status, 200, "{answer}");
}

/// AS-GOVERNED-002 against the gateway: the effect happened, the handler
/// failed: `DOMAIN_OUTCOME_UNKNOWN`, never a failure; `getInvocation`
/// keeps the receipt pending and the bridge keeps it unknown.
#[tokio::test]
async fn interop_outcome_unknown_is_reconciled_through_get_invocation() {
    let Some(target) = target("interop_outcome_unknown_is_reconciled_through_get_invocation")
    else {
        return;
    };
    let bridge = target.bridge().await;
    let id = target.id("unknown");
    let input = json!({"deviceIds": ["fail-after-effect"]});
    let err = bridge
        .executor
        .execute(request("devices.disable", &id, input))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry, details(&err)),
        (
            ErrorCode::DomainOutcomeUnknown,
            Retry::No,
            json!({"invocationId": id})
        )
    );
    let receipt = target
        .client()
        .get_invocation(&id, CallOptions::default())
        .await
        .unwrap()
        .expect("the gateway recorded the call");
    assert_eq!(
        (
            receipt.capability_id.as_str(),
            receipt.state,
            receipt.outcome.is_none()
        ),
        ("devices.disable", ReceiptState::Pending, true)
    );
    let digest = &target
        .descriptors()
        .await
        .into_iter()
        .find(|d| d.id == "devices.disable")
        .unwrap()
        .contract_digest;
    assert_eq!(&receipt.contract_digest, digest);
    let reconciled = bridge.reconcile(&id).await.unwrap();
    assert!(
        matches!(reconciled, GovernedOutcome::Pending(_)),
        "{reconciled:?}"
    );
    assert_eq!(
        reconciled.to_result().unwrap_err().code,
        ErrorCode::DomainOutcomeUnknown
    );
    // An id the gateway never saw is `null`: nothing ran under it.
    let never = target.id("never-sent");
    assert_eq!(
        bridge.reconcile(&never).await.unwrap(),
        GovernedOutcome::NotRecorded {
            invocation_id: never
        }
    );
}

#[tokio::test]
async fn interop_refusals_unknown_capability_contract_mismatch_invalid_input_unauthenticated() {
    let Some(target) = target("interop_refusals") else {
        return;
    };
    let descriptors = target.descriptors().await;
    let mut manifest: AgentManifest = create_orpc_agent_manifest(descriptors).unwrap();
    let mut reboot = manifest.tools["devices.list"].clone();
    reboot.capability_id = Some("devices.reboot".into());
    reboot.contract_digest = None;
    manifest.tools.insert("devices.reboot".into(), reboot);
    manifest
        .tools
        .get_mut("devices.purge")
        .unwrap()
        .contract_digest = Some("0".repeat(64));
    let bridge = create_governed_orpc_agent_bridge(GovernedBridgeOptions::new(
        Arc::new(target.client()),
        manifest.clone(),
    ));
    let run = |path: &'static str, step: &str, input: Value| {
        let call = request(path, &target.id(step), input);
        let executor = bridge.executor.clone();
        async move { executor.execute(call).await.unwrap_err() }
    };
    let err = run("devices.reboot", "reboot", json!({})).await;
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::CapabilityNotFound, Retry::AfterRefresh)
    );
    let err = run("devices.purge", "stale", json!({"deviceIds": ["d1"]})).await;
    assert_eq!(
        (err.code.clone(), err.retry, err.details["reason"].clone()),
        (
            ErrorCode::StaleCapability,
            Retry::AfterRefresh,
            json!("contract-changed")
        )
    );
    let err = run("devices.disable", "invalid", json!({"deviceIds": []})).await;
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::InvalidInput, Retry::WithChanges)
    );
    assert_eq!(
        details(&err),
        json!({"issues": [{"path": "deviceIds", "message": GATEWAY_ISSUE_MESSAGE}]})
    );
    let anonymous = create_governed_orpc_agent_bridge(GovernedBridgeOptions::new(
        Arc::new(OrpcCapabilityClient::new(HttpOrpcClient::new(
            target.gateway_url.clone(),
        ))),
        manifest,
    ));
    let id = target.id("anonymous");
    let err = anonymous
        .executor
        .execute(request("devices.list", &id, json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry, details(&err)),
        (ErrorCode::NotAuthenticated, Retry::No, json!({}))
    );
    assert_eq!(audited(&err), json!({"invocationId": id}));
}

/// A redeploy with a new revision between the approval and the resume:
/// the approval's contract changed (`CONTRACT_MISMATCH` →
/// `STALE_CAPABILITY`). Needs the peer's redeploy hook, so it runs against
/// the project's peer only.
#[tokio::test]
async fn peer_redeploy_makes_an_approved_call_stale() {
    let Some(target) = target("peer_redeploy_makes_an_approved_call_stale") else {
        return;
    };
    let Some(peer) = &target.peer else {
        eprintln!("peer_redeploy_makes_an_approved_call_stale: a named gateway has no redeploy hook; not run");
        return;
    };
    let bridge = target.bridge().await;
    let id = target.id("redeploy");
    let err = bridge
        .executor
        .execute(request("devices.purge", &id, json!({"deviceIds": ["d1"]})))
        .await
        .unwrap_err();
    let approval_id = err.details["approvalId"].as_str().unwrap().to_string();
    assert_eq!(target.decide(&approval_id, "approved").await.0, 200);
    let hook = format!("{}/__peer/revision", peer.origin());
    let answer = reqwest::Client::new()
        .post(hook)
        .header("content-type", "application/json")
        .body(r#"{"revision":"peer-rev-2"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let outcome = bridge
        .resume(ResumeApprovalRequest::new(&id, &approval_id))
        .await;
    let err = outcome.to_result().unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry, details(&err)),
        (
            ErrorCode::StaleCapability,
            Retry::AfterRefresh,
            json!({"reason": "contract-changed"})
        )
    );
    assert_eq!(audited(&err), json!({"invocationId": id}));
}

// ------------------------------------------------------------------ golden

/// One request as the replay server received it.
#[derive(Clone, Debug, PartialEq)]
struct Received {
    method: String,
    path: String,
    auth: Option<String>,
    body: Value,
}

/// A local HTTP server answering each request with the next scripted
/// `(status, body)` and recording what it received.
struct Replay {
    addr: std::net::SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    answers: Arc<Mutex<std::collections::VecDeque<(u16, Value)>>>,
}

impl Replay {
    async fn start() -> Replay {
        use axum::body::Bytes;
        use axum::http::{HeaderMap, Method, StatusCode, Uri};
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let answers: Arc<Mutex<std::collections::VecDeque<(u16, Value)>>> = Arc::default();
        let (r, a) = (received.clone(), answers.clone());
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (r, a) = (r.clone(), a.clone());
                async move {
                    r.lock().unwrap().push(Received {
                        method: method.to_string(),
                        path: uri.path().to_string(),
                        auth: headers
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_string()),
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    });
                    let (status, body) = a.lock().unwrap().pop_front().expect("a scripted answer");
                    (
                        StatusCode::from_u16(status).unwrap(),
                        [("content-type", "application/json")],
                        body.to_string(),
                    )
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Replay {
            addr,
            received,
            answers,
        }
    }

    fn answer(&self, status: u16, body: Value) {
        self.answers.lock().unwrap().push_back((status, body));
    }

    fn last(&self) -> Received {
        self.received
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("a request")
    }

    fn all(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// The recorded exchanges, by name.
fn exchanges() -> Vec<Value> {
    fixture("gateway/exchanges.normalized.json")
        .as_array()
        .unwrap()
        .clone()
}

fn exchange(all: &[Value], name: &str) -> Value {
    all.iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no exchange {name}"))
        .clone()
}

/// The golden harness: a replay server, the requester's client and the
/// bridge over the recorded describe (digests as recorded).
struct Golden {
    replay: Replay,
    all: Vec<Value>,
    client: Arc<OrpcCapabilityClient<HttpOrpcClient>>,
    manifest: AgentManifest,
}

impl Golden {
    async fn new() -> Golden {
        let replay = Replay::start().await;
        let all = exchanges();
        let client = Arc::new(OrpcCapabilityClient::new(
            HttpOrpcClient::new(format!("http://{}/capabilities", replay.addr))
                .with_header("authorization", "Bearer peer-token"),
        ));
        let describe = exchange(&all, "01-describe");
        let descriptors: Vec<CapabilityDescriptor> =
            serde_json::from_value(describe["response"]["body"]["json"].clone()).unwrap();
        let manifest = create_orpc_agent_manifest(descriptors).unwrap();
        Golden {
            replay,
            all,
            client,
            manifest,
        }
    }

    /// Scripts the recorded answer of `name` and returns its request.
    fn script(&self, name: &str) -> Value {
        let e = exchange(&self.all, name);
        let status = e["response"]["status"].as_u64().unwrap() as u16;
        self.replay.answer(status, e["response"]["body"].clone());
        e["request"].clone()
    }

    /// What the bridge sent equals the recorded request of `name`.
    fn assert_sent(&self, name: &str, recorded: &Value) {
        let got = self.replay.last();
        let expected = Received {
            method: recorded["method"].as_str().unwrap().into(),
            path: recorded["path"].as_str().unwrap().into(),
            auth: recorded["auth"].as_str().map(str::to_string),
            body: recorded["body"].clone(),
        };
        assert_eq!(got, expected, "{name}");
    }

    /// A bridge over the manifest with `edit` applied and this
    /// correlation id on every `invoke`.
    fn bridge(
        &self,
        correlation: Option<&'static str>,
        edit: impl FnOnce(&mut AgentManifest),
    ) -> GovernedOrpcAgentBridge {
        let mut manifest = self.manifest.clone();
        edit(&mut manifest);
        create_governed_orpc_agent_bridge(
            GovernedBridgeOptions::new(self.client.clone(), manifest)
                .correlation_id(move |_| correlation.map(str::to_string)),
        )
    }

    /// Runs `invoke` for step `name` (path, id, input from the recording).
    async fn invoke(
        &self,
        name: &str,
        bridge: &GovernedOrpcAgentBridge,
        path: &str,
    ) -> Result<Value, ExecutionError> {
        let recorded = self.script(name);
        let body = &recorded["body"]["json"];
        let call = request(
            path,
            body["invocationId"].as_str().unwrap(),
            body["input"].clone(),
        );
        let result = bridge.executor.execute(call).await;
        self.assert_sent(name, &recorded);
        result
    }
}

fn no_digest(path: &'static str) -> impl FnOnce(&mut AgentManifest) {
    move |m| m.tools.get_mut(path).unwrap().contract_digest = None
}

#[tokio::test]
async fn golden_describe_requests_and_answers_match_the_recording() {
    let g = Golden::new().await;
    let recorded = g.script("01-describe");
    let all = g
        .client
        .describe(DescribeScope::default(), CallOptions::default())
        .await
        .unwrap();
    g.assert_sent("01-describe", &recorded);
    assert_eq!(
        serde_json::to_value(&all).unwrap(),
        exchange(&g.all, "01-describe")["response"]["body"]["json"]
    );
    let recorded = g.script("02-describe-scoped");
    let scoped = g
        .client
        .describe(
            DescribeScope::ids(["devices.purge"]),
            CallOptions::default(),
        )
        .await
        .unwrap();
    g.assert_sent("02-describe-scoped", &recorded);
    assert_eq!(scoped.len(), 1);
    assert!(scoped[0].requires_approval);
    // The manifest keeps the recorded digests bare, as given.
    assert_eq!(
        g.manifest.tools["devices.disable"]
            .contract_digest
            .as_deref(),
        Some("81fe6ca9080611885529275f291b6a5229e903c168c205314eca2e89a930acb2")
    );
}

#[tokio::test]
async fn golden_completed_replay_conflict_and_receipts() {
    let g = Golden::new().await;
    let run1 = g.bridge(Some("run-1"), |_| {});
    let output = json!({"disabled": 1, "deviceIds": ["d1"], "at": "2026-09-13T00:00:00.000Z"});
    assert_eq!(
        g.invoke("03-invoke-disable-completed", &run1, "devices.disable")
            .await,
        Ok(output.clone())
    );
    assert_eq!(
        g.invoke("04-invoke-disable-replay", &run1, "devices.disable")
            .await,
        Ok(output.clone())
    );
    let plain = g.bridge(None, |_| {});
    let err = g
        .invoke("05-invoke-disable-conflict", &plain, "devices.disable")
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::InvocationConflict, Retry::WithChanges)
    );
    let recorded = g.script("06-getInvocation-settled");
    let outcome = plain.reconcile("inv-disable-1").await.unwrap();
    g.assert_sent("06-getInvocation-settled", &recorded);
    assert_eq!(outcome.completed_output(), Some(&output));
}

#[tokio::test]
async fn golden_approval_flow_requests_and_answers() {
    let g = Golden::new().await;
    let run1 = g.bridge(Some("run-1"), |_| {});
    let err = g
        .invoke("07-invoke-purge-approval-required", &run1, "devices.purge")
        .await
        .unwrap_err();
    // The recording's `<kind#n>` placeholders are not identifiers: the
    // bridge withholds them, exactly as it would a hostile value.
    assert_eq!(
        details(&err),
        json!({"origin": "server", "invocationId": "inv-purge-1"})
    );
    assert_eq!(
        err.internal.as_ref().unwrap()["withheldDetails"],
        json!(["executionId", "approvalId", "expiresAt"])
    );
    let recorded = g.script("08-getInvocation-awaiting-approval");
    let held = run1.reconcile("inv-purge-1").await.unwrap();
    g.assert_sent("08-getInvocation-awaiting-approval", &recorded);
    assert_eq!(held.approval_id(), Some("<approvalId#1>"));
    let recorded = g.script("09-getApproval-pending");
    let approval = run1
        .get_approval("<approvalId#1>", CallOptions::default())
        .await
        .unwrap()
        .unwrap();
    g.assert_sent("09-getApproval-pending", &recorded);
    assert_eq!(
        (approval.status, approval.types),
        (ApprovalStatus::Pending, vec!["irreversible".to_string()])
    );
    let resume = |name: &str, digest: bool| {
        let recorded = g.script(name);
        let mut request = ResumeApprovalRequest::new("inv-purge-1", "<approvalId#1>");
        if digest {
            request = request.with_contract_digest(
                "f34196f57e10b41004da82a0119eb2474740e4007b3570c1fb4cdb6d289fe88c",
            );
        }
        (recorded, run1.resume(request))
    };
    let (recorded, pending) = resume("10-resumeApproval-while-pending", false);
    assert_eq!(pending.await.approval_id(), Some("<approvalId#1>"));
    g.assert_sent("10-resumeApproval-while-pending", &recorded);
    decide_golden(&g, "11-app-decide-approved", Some("ok")).await;
    let (recorded, done) = resume("12-resumeApproval-completed", true);
    assert_eq!(done.await.to_result(), Ok(json!({"purged": 1})));
    g.assert_sent("12-resumeApproval-completed", &recorded);
    let (recorded, again) = resume("13-resumeApproval-replay", false);
    assert_eq!(again.await.to_result(), Ok(json!({"purged": 1})));
    g.assert_sent("13-resumeApproval-replay", &recorded);
    let recorded = g.script("14-getInvocation-after-resume");
    assert_eq!(
        run1.reconcile("inv-purge-1").await.unwrap().to_result(),
        Ok(json!({"purged": 1}))
    );
    g.assert_sent("14-getInvocation-after-resume", &recorded);
    let recorded = g.script("15-getApproval-consumed");
    let consumed = run1
        .get_approval("<approvalId#1>", CallOptions::default())
        .await
        .unwrap()
        .unwrap();
    g.assert_sent("15-getApproval-consumed", &recorded);
    assert_eq!(consumed.status, ApprovalStatus::Consumed);
}

/// The test's decision-endpoint client against the replay server: what
/// it sends is the recorded body; what it gets parses as an approval with
/// its decision.
async fn decide_golden(g: &Golden, name: &str, comment: Option<&str>) {
    let recorded = g.script(name);
    let mut body =
        json!({"approvalId": recorded["body"]["approvalId"], "status": recorded["body"]["status"]});
    if let Some(comment) = comment {
        body["comment"] = json!(comment);
    }
    let response = reqwest::Client::new()
        .post(format!("http://{}/approvals/decide", g.replay.addr))
        .header("authorization", "Bearer approver-token")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let answer: surface_runtime::bridge::GatewayApproval =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    g.assert_sent(name, &recorded);
    let decision = answer
        .decision
        .expect("the decided approval carries its decision");
    assert_eq!(decision.status, answer.status);
    assert_eq!(decision.comment.as_deref(), comment);
}

#[tokio::test]
async fn golden_rejection_refusals_and_outcome_unknown() {
    let g = Golden::new().await;
    let plain = g.bridge(None, no_digest("devices.purge"));
    let err = g
        .invoke(
            "16-invoke-purge-2-approval-required",
            &plain,
            "devices.purge",
        )
        .await
        .unwrap_err();
    assert_eq!(err.code.clone(), ErrorCode::DomainApprovalRequired);
    decide_golden(&g, "17-app-decide-rejected", None).await;
    let recorded = g.script("18-resumeApproval-rejected");
    let rejected = plain
        .resume(ResumeApprovalRequest::new("inv-purge-2", "<approvalId#2>"))
        .await;
    g.assert_sent("18-resumeApproval-rejected", &recorded);
    let err = rejected.to_result().unwrap_err();
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

    let reboot = g.bridge(None, |m| {
        let mut tool = m.tools["devices.list"].clone();
        tool.capability_id = Some("devices.reboot".into());
        tool.contract_digest = None;
        m.tools.insert("devices.reboot".into(), tool);
    });
    let err = g
        .invoke("19-invoke-unknown-capability", &reboot, "devices.reboot")
        .await
        .unwrap_err();
    assert_eq!(err.code.clone(), ErrorCode::CapabilityNotFound);
    let stale = g.bridge(None, |m| {
        m.tools.get_mut("devices.disable").unwrap().contract_digest = Some("0".repeat(64));
    });
    let err = g
        .invoke("20-invoke-contract-mismatch", &stale, "devices.disable")
        .await
        .unwrap_err();
    assert_eq!(err.code.clone(), ErrorCode::StaleCapability);
    let bare = g.bridge(None, no_digest("devices.disable"));
    let err = g
        .invoke("21-invoke-input-invalid", &bare, "devices.disable")
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.details["issues"].clone()),
        (
            ErrorCode::InvalidInput,
            json!([{"path": "deviceIds", "message": GATEWAY_ISSUE_MESSAGE}])
        )
    );
    let err = g
        .invoke("22-invoke-fail-after-effect", &bare, "devices.disable")
        .await
        .unwrap_err();
    assert_eq!(err.code.clone(), ErrorCode::DomainOutcomeUnknown);
    for (name, id) in [
        ("23-getInvocation-pending", "inv-unknown-effect-1"),
        ("24-getInvocation-unknown-id", "never-seen"),
    ] {
        let recorded = g.script(name);
        let outcome = bare.reconcile(id).await.unwrap();
        g.assert_sent(name, &recorded);
        let expected_pending = name.starts_with("23");
        assert_eq!(
            matches!(outcome, GovernedOutcome::Pending(_)),
            expected_pending,
            "{name}"
        );
        assert_eq!(
            matches!(outcome, GovernedOutcome::NotRecorded { .. }),
            !expected_pending,
            "{name}"
        );
    }
    let recorded = g.script("25-getApproval-unknown-id");
    assert_eq!(
        bare.get_approval("never-seen", CallOptions::default())
            .await,
        Ok(None)
    );
    g.assert_sent("25-getApproval-unknown-id", &recorded);
}

#[tokio::test]
async fn golden_unauthenticated_and_strict_schema_answers() {
    let g = Golden::new().await;
    let mut m = g.manifest.clone();
    m.tools.get_mut("devices.list").unwrap().contract_digest = None;
    let anonymous_plain = create_governed_orpc_agent_bridge(
        GovernedBridgeOptions::new(
            Arc::new(OrpcCapabilityClient::new(HttpOrpcClient::new(format!(
                "http://{}/capabilities",
                g.replay.addr
            )))),
            m,
        )
        .correlation_id(|_| None),
    );
    let err = g
        .invoke(
            "26-invoke-unauthenticated",
            &anonymous_plain,
            "devices.list",
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::NotAuthenticated, Retry::No)
    );
    // 27: a request the bridge never makes (`surface` is not a field it
    // has); its recorded 400 answer is a refusal: nothing ran.
    let e = exchange(&g.all, "27-invoke-unknown-field");
    g.replay.answer(400, e["response"]["body"].clone());
    let plain = g.bridge(None, no_digest("devices.list"));
    let err = plain
        .executor
        .execute(request("devices.list", "inv-surface-1", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code.clone(), err.retry),
        (ErrorCode::ExecutionFailed, Retry::No)
    );
    assert_eq!(
        err.internal.unwrap()["data"],
        json!({"issues": [{"message": "Invalid capability gateway request"}]})
    );
}

/// Exchanges 28–31 recorded what the old Rust bridge sent: `resume`, a
/// resume body without `approvalId`, a `domain:`-prefixed capability id
/// and a `sha256:`-prefixed digest. None of them happens any more: the
/// requests the bridge sends for the same steps are the new ones, and the
/// recorded answers to the old ones still map to refusals.
#[tokio::test]
async fn golden_the_old_requests_of_28_to_31_no_longer_happen() {
    let g = Golden::new().await;
    // 28/29: resuming sends `resumeApproval` with the approval id.
    g.replay.answer(200, json!({"json": {"status": "completed", "invocationId": "inv-purge-1", "executionId": "e", "output": {"purged": 1}}}));
    g.bridge(None, |_| {})
        .resume(ResumeApprovalRequest::new("inv-purge-1", "appr-1"))
        .await;
    let sent = g.replay.last();
    assert_eq!(sent.path, "/capabilities/resumeApproval");
    assert_eq!(
        sent.body,
        json!({"json": {"invocationId": "inv-purge-1", "approvalId": "appr-1"}})
    );
    // 30/31: a manifest without `capabilityId` sends the dotted path; the
    // digest goes bare, as `describe` gave it.
    g.replay.answer(200, json!({"json": {"status": "completed", "invocationId": "inv-rust-1", "executionId": "e", "output": {}}}));
    let no_override = g.bridge(None, |m| {
        m.tools.get_mut("devices.disable").unwrap().capability_id = None
    });
    no_override
        .executor
        .execute(request(
            "devices.disable",
            "inv-rust-1",
            json!({"deviceIds": ["d1"]}),
        ))
        .await
        .unwrap();
    let body = g.replay.last().body["json"].clone();
    assert_eq!(body["capabilityId"], "devices.disable");
    assert_eq!(
        body["contractDigest"],
        "81fe6ca9080611885529275f291b6a5229e903c168c205314eca2e89a930acb2"
    );
    for r in g.replay.all() {
        assert_ne!(r.path, "/capabilities/resume");
        let cap = r.body["json"]["capabilityId"].as_str().unwrap_or("");
        let digest = r.body["json"]["contractDigest"].as_str().unwrap_or("");
        assert!(
            !cap.starts_with("domain:") && !digest.starts_with("sha256:"),
            "{r:?}"
        );
    }
    // The recorded answers to the old requests are refusals.
    for (name, code) in [
        ("28-rust-resume-path", ErrorCode::ExecutionFailed),
        (
            "29-rust-resume-body-on-resumeApproval",
            ErrorCode::ExecutionFailed,
        ),
        (
            "30-rust-invoke-domain-prefixed-id",
            ErrorCode::CapabilityNotFound,
        ),
        (
            "31-rust-invoke-sha256-prefixed-digest",
            ErrorCode::StaleCapability,
        ),
    ] {
        let e = exchange(&g.all, name);
        let id = e["request"]["body"]["json"]["invocationId"]
            .as_str()
            .unwrap()
            .to_string();
        g.replay.answer(
            e["response"]["status"].as_u64().unwrap() as u16,
            e["response"]["body"].clone(),
        );
        let outcome = g
            .bridge(None, |_| {})
            .resume(ResumeApprovalRequest::new(&id, "appr-1"))
            .await;
        let err = outcome.to_result().unwrap_err();
        assert_eq!(err.code.clone(), code, "{name}");
        assert!(
            !matches!(outcome, GovernedOutcome::Unknown { .. }),
            "{name}: a refusal, nothing ran"
        );
    }
}

/// What the TypeScript bridge sent (`domainCalls.json`: `correlationId`
/// equal to the invocation id, the descriptor's id and digest) is what
/// this bridge sends for the same calls, and the recorded approval outcome
/// becomes the error of the original session's result
/// (`domain-approval.result.json`), details included.
#[tokio::test]
async fn golden_the_typescript_bridge_calls_and_the_session_result() {
    let replay = Replay::start().await;
    let client = Arc::new(OrpcCapabilityClient::new(HttpOrpcClient::new(format!(
        "http://{}/capabilities",
        replay.addr
    ))));
    let manifest: AgentManifest =
        serde_json::from_value(fixture("session-governed/governed.manifest.json")).unwrap();
    let bridge = create_governed_orpc_agent_bridge(GovernedBridgeOptions::new(client, manifest));
    let calls = fixture("session-governed/domainCalls.json");
    let mut results = Vec::new();
    for call in calls.as_array().unwrap() {
        let id = call["options"]["invocationId"].as_str().unwrap();
        let path = call["capabilityId"].as_str().unwrap();
        replay.answer(200, json!({"json": call["outcome"]}));
        results.push(
            bridge
                .executor
                .execute(request(path, id, call["input"].clone()))
                .await,
        );
        let mut expected = call["options"].clone();
        expected["capabilityId"] = call["capabilityId"].clone();
        expected["input"] = call["input"].clone();
        assert_eq!(replay.last().body, json!({"json": expected}), "{id}");
    }
    assert_eq!(results[0], Ok(calls[0]["outcome"]["output"].clone()));
    // The recording's ids are `<kind#n>` placeholders, which the bridge
    // withholds as non-identifiers; with identifier-shaped values in their
    // place the agent's error is exactly the original session's.
    let session = fixture("session-governed/domain-approval.result.json");
    let mut outcome = calls[1]["outcome"].clone();
    outcome["executionId"] = json!("exec-1");
    outcome["approval"]["id"] = json!("appr-1");
    outcome["approval"]["expiresAt"] = json!("2026-09-13T00:15:00.000Z");
    let outcome: GatewayOutcome = serde_json::from_value(outcome).unwrap();
    let err = GovernedOutcome::classify("invocation-8b", Ok(outcome))
        .to_result()
        .unwrap_err();
    let mut expected = session["result"]["error"].clone();
    expected["details"]["executionId"] = json!("exec-1");
    expected["details"]["approvalId"] = json!("appr-1");
    expected["details"]["expiresAt"] = json!("2026-09-13T00:15:00.000Z");
    assert_eq!(
        serde_json::to_value(err.to_agent_error()).unwrap(),
        expected
    );
}
