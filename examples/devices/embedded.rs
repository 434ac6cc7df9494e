//! The embedded, in-process devices backend, so the scripted run needs
//! nothing started:
//!
//! * an [`AgentProcedureExecutor`] with the semantics of the real oRPC
//!   peer's domain router (`tests/orpc-peer`, its README, "Domain
//!   router"): errors are produced as the oRPC error the peer would send
//!   ([`OrpcError`]) and mapped with the ordinary bridge's own
//!   [`map_orpc_error`], so the agent sees exactly what it sees through
//!   `--orpc-url`;
//! * a [`CapabilityClient`]: the peer's governed gateway (`/gateway`) for
//!   `devices.purge`, with the contract of orpc-agent's gateway —
//!   `describe` (descriptor version 1), `invoke` (an idempotent journal:
//!   the same id and input answer the recorded outcome, another input is
//!   `INVOCATION_CONFLICT`), `getInvocation`, `getApproval`,
//!   `resumeApproval` — and [`EmbeddedDevices::decide`], the application's
//!   decision endpoint. Its clock is fixed: approvals are requested at
//!   2026-09-13T00:00:00.000Z and expire 15 minutes later, never during a
//!   run.

use std::collections::HashMap;
use std::sync::Mutex;

use agent_surface::bridge::{
    map_orpc_error, ApprovalDecisionRecord, ApprovalStatus, CallOptions, CapabilityClient,
    DescribeScope, GatewayApproval, GatewayFailure, GatewayOutcome, InvocationReceipt,
    InvokeRequest, OrpcCallError, OrpcError, ReceiptState, ResumeApprovalRequest, UnexpectedReason,
};
use agent_surface::manifest::{AgentManifest, CapabilityDescriptor};
use agent_surface::sync::BoxFuture;
use agent_surface::{AgentProcedureExecutor, ExecuteRequest, ExecutionError};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::app::{api, Device};

/// The governed capability the embedded gateway serves.
const PURGE: &str = "devices.purge";
/// The embedded gateway's fixed clock: when approvals are requested.
const REQUESTED_AT: &str = "2026-09-13T00:00:00.000Z";
/// … and when they expire.
const EXPIRES_AT: &str = "2026-09-13T00:15:00.000Z";

/// The device whose disabling the server forbids.
const LOCKED_DEVICE_ID: &str = "dev-locked";

/// The peer's seed devices, in list order.
fn seed_devices() -> Vec<Device> {
    [
        ("dev-1", "Lobby camera", "active"),
        ("dev-2", "Door sensor", "active"),
        ("dev-3", "Old router", "disabled"),
        (LOCKED_DEVICE_ID, "Core switch", "active"),
    ]
    .into_iter()
    .map(|(id, name, status)| Device {
        id: id.into(),
        name: name.into(),
        status: status.into(),
    })
    .collect()
}

struct State {
    devices: Vec<Device>,
    /// The last `appr-n` / `exec-n` number handed out.
    ids: u64,
    /// The gateway's journal: governed purges by invocation id.
    journal: HashMap<String, Held>,
    /// Approvals by id.
    approvals: HashMap<String, GatewayApproval>,
}

/// A purge the gateway journaled: held until a person decides, then run
/// once by `resumeApproval`.
struct Held {
    /// The input as sent, to tell a replay from a conflicting reuse.
    input: Value,
    device_ids: Vec<String>,
    correlation_id: Option<String>,
    /// The `approval-required` outcome, then the settled one.
    outcome: GatewayOutcome,
    approval_id: String,
}

/// The in-process backend. State is per instance, like one peer process.
pub struct EmbeddedDevices {
    state: Mutex<State>,
}

/// Like the peer's `z.object({...})`, every input type ignores properties
/// it does not name (zod strips them): the published input schemas have no
/// `additionalProperties: false`, so such a call is valid.
#[derive(Deserialize)]
struct ListInput {
    status: Option<String>,
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DisableInput {
    device_ids: Vec<String>,
    #[allow(dead_code)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RenameInput {
    device_id: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PurgeInput {
    device_ids: Vec<String>,
}

fn orpc_error(
    defined: bool,
    code: &str,
    status: u16,
    message: &str,
    data: Option<Value>,
) -> OrpcCallError {
    OrpcCallError::Orpc(OrpcError {
        defined,
        code: code.into(),
        status,
        message: message.into(),
        data,
    })
}

/// oRPC's input validation failure (`BAD_REQUEST` 400).
fn bad_request(err: &serde_json::Error) -> OrpcCallError {
    orpc_error(
        false,
        "BAD_REQUEST",
        400,
        "Input validation failed",
        Some(json!({"issues": [{"message": err.to_string()}]})),
    )
}

fn not_found(device_id: &str) -> OrpcCallError {
    orpc_error(
        true,
        "NOT_FOUND",
        404,
        "Device not found",
        Some(json!({"deviceId": device_id})),
    )
}

fn parse<T: for<'de> Deserialize<'de>>(input: &Value) -> Result<T, OrpcCallError> {
    serde_json::from_value(input.clone()).map_err(|e| bad_request(&e))
}

impl EmbeddedDevices {
    /// A backend holding the peer's four seed devices.
    pub fn seeded() -> Self {
        Self {
            state: Mutex::new(State {
                devices: seed_devices(),
                ids: 0,
                journal: HashMap::new(),
                approvals: HashMap::new(),
            }),
        }
    }

    /// One procedure call, as the peer's router handles it.
    pub fn handle(
        &self,
        path: &str,
        input: &Value,
        invocation_id: &str,
    ) -> Result<Value, OrpcCallError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match path {
            "devices.list" => {
                let input: ListInput = parse(input)?;
                if let Some(status) = &input.status {
                    if status != "active" && status != "disabled" {
                        return Err(orpc_error(
                            false,
                            "BAD_REQUEST",
                            400,
                            "Input validation failed",
                            None,
                        ));
                    }
                }
                if input.limit.is_some_and(|l| !(1..=100).contains(&l)) {
                    return Err(orpc_error(
                        false,
                        "BAD_REQUEST",
                        400,
                        "Input validation failed",
                        None,
                    ));
                }
                let devices: Vec<&Device> = state
                    .devices
                    .iter()
                    .filter(|d| input.status.as_ref().is_none_or(|s| &d.status == s))
                    .take(input.limit.map_or(usize::MAX, |l| l as usize))
                    .collect();
                Ok(json!({ "devices": devices }))
            }
            "devices.disable" => {
                let input: DisableInput = parse(input)?;
                if input.device_ids.is_empty() {
                    return Err(orpc_error(
                        false,
                        "BAD_REQUEST",
                        400,
                        "Input validation failed",
                        None,
                    ));
                }
                // Every id is checked before anything changes.
                for id in &input.device_ids {
                    if !state.devices.iter().any(|d| &d.id == id) {
                        return Err(not_found(id));
                    }
                    if id == LOCKED_DEVICE_ID {
                        return Err(orpc_error(
                            false,
                            "FORBIDDEN",
                            403,
                            &format!("Device {id} is locked"),
                            None,
                        ));
                    }
                }
                let mut disabled: Vec<String> = Vec::new();
                for id in &input.device_ids {
                    if let Some(device) = state.devices.iter_mut().find(|d| &d.id == id) {
                        if device.status != "disabled" {
                            device.status = "disabled".into();
                            disabled.push(id.clone());
                        }
                    }
                }
                Ok(json!({ "disabled": disabled }))
            }
            "devices.rename" => {
                let input: RenameInput = parse(input)?;
                let len = input.name.chars().count();
                if !(1..=64).contains(&len) {
                    return Err(orpc_error(
                        false,
                        "BAD_REQUEST",
                        400,
                        "Input validation failed",
                        None,
                    ));
                }
                match state.devices.iter_mut().find(|d| d.id == input.device_id) {
                    Some(device) => {
                        device.name = input.name;
                        Ok(json!(device))
                    }
                    None => Err(not_found(&input.device_id)),
                }
            }
            "devices.purge" => {
                let input: PurgeInput = parse(input)?;
                // As the peer's domain router: governed, through the
                // gateway's `invoke` under the caller's invocation id.
                drop(state);
                let request = InvokeRequest {
                    invocation_id: invocation_id.to_string(),
                    capability_id: PURGE.into(),
                    input: json!({ "deviceIds": input.device_ids }),
                    correlation_id: Some(invocation_id.to_string()),
                    contract_digest: None,
                };
                match self.invoke_now(request) {
                    GatewayOutcome::ApprovalRequired { approval, .. } => Err(orpc_error(
                        true,
                        "APPROVAL_REQUIRED",
                        409,
                        "Purging devices requires approval",
                        Some(json!({ "approvalId": approval.id })),
                    )),
                    GatewayOutcome::Completed { output, .. } => Ok(output),
                    _ => Err(orpc_error(
                        false,
                        "CONFLICT",
                        409,
                        "The invocation id was already used",
                        None,
                    )),
                }
            }
            // The peer's fixed statistics, as the oRPC codec decodes them
            // (BigInt as a decimal string, Date as ISO-8601, Set and Map as
            // arrays).
            "devices.stats" => Ok(json!({
                "lastSeen": "2026-01-02T03:04:05.678Z",
                "bytes": "9007199254740993",
                "tags": ["camera", "sensor"],
                "counters": [["dev-1", 3], ["dev-2", 0]],
            })),
            // In-process there is no header: the invocation id comes from
            // the call context directly.
            "agent.echoInvocation" => Ok(json!({ "invocationId": invocation_id })),
            _ => Err(OrpcCallError::UnexpectedResponse {
                status: 404,
                content_type: Some("text/plain".into()),
                body: "Not found".into(),
                // What `HttpOrpcClient` reports for the peer's `Not found`.
                reason: UnexpectedReason::NotJson {
                    message: "expected value at line 1 column 1".into(),
                },
            }),
        }
    }
}

/// A refusal before execution: `failed` with `executionId: ""`.
fn refusal(invocation_id: &str, code: &str, message: &str) -> GatewayOutcome {
    GatewayOutcome::Failed {
        invocation_id: invocation_id.to_string(),
        execution_id: String::new(),
        error: GatewayFailure {
            code: code.into(),
            message: message.into(),
            retryable: false,
            details: None,
        },
    }
}

/// The purge's contract digest: the compiled manifest's per-procedure
/// digest of `devices.purge` (opaque to the bridge, bare lowercase hex).
fn purge_digest() -> String {
    AgentManifest::from_json_str(api::MANIFEST_JSON)
        .ok()
        .and_then(|m| m.procedure_digest(PURGE))
        .unwrap_or_default()
}

/// The gateway's descriptor of `devices.purge` (version 1).
fn purge_descriptor() -> CapabilityDescriptor {
    serde_json::from_value(json!({
        "version": 1, "id": PURGE, "path": ["devices", "purge"],
        "description": "Permanently delete devices",
        "inputSchema": {"type": "object", "properties": {"deviceIds": {"type": "array",
            "items": {"type": "string"}, "minItems": 1}}, "required": ["deviceIds"],
            "additionalProperties": false},
        "sideEffect": "destructive", "risk": "critical", "tags": ["devices"],
        "discovery": "discoverable", "requiresApproval": true,
        "toolNames": {"aiSdk": "devices_purge", "mcp": "devices_purge"},
        "contractDigest": purge_digest(),
    }))
    .expect("the purge descriptor is a version-1 descriptor")
}

/// The device ids of a purge input, or `None` when it breaks the schema
/// (an object with a non-empty `deviceIds` array of strings, nothing else).
fn purge_ids(input: &Value) -> Option<Vec<String>> {
    let object = input.as_object().filter(|o| o.len() == 1)?;
    let ids: Vec<String> = serde_json::from_value(object.get("deviceIds")?.clone()).ok()?;
    (!ids.is_empty()).then_some(ids)
}

impl State {
    fn next(&mut self, kind: &str) -> String {
        self.ids += 1;
        format!("{kind}-{}", self.ids)
    }

    /// The held call's outcome with its approval's current view.
    fn outcome_of(&self, held: &Held) -> GatewayOutcome {
        match &held.outcome {
            GatewayOutcome::ApprovalRequired {
                invocation_id,
                execution_id,
                ..
            } => GatewayOutcome::ApprovalRequired {
                invocation_id: invocation_id.clone(),
                execution_id: execution_id.clone(),
                approval: self.approvals[&held.approval_id].clone(),
            },
            settled => settled.clone(),
        }
    }

    /// Holds a new purge for an approval.
    fn hold(&mut self, request: InvokeRequest, device_ids: Vec<String>) -> GatewayOutcome {
        let approval_id = self.next("appr");
        let execution_id = self.next("exec");
        let approval = GatewayApproval {
            id: approval_id.clone(),
            capability_id: PURGE.into(),
            status: ApprovalStatus::Pending,
            reasons: vec![format!("Approval is required for {PURGE}.")],
            types: vec!["irreversible".into()],
            requested_at: REQUESTED_AT.into(),
            expires_at: EXPIRES_AT.into(),
            decision: None,
        };
        self.approvals.insert(approval_id.clone(), approval.clone());
        let outcome = GatewayOutcome::ApprovalRequired {
            invocation_id: request.invocation_id.clone(),
            execution_id,
            approval,
        };
        let held = Held {
            input: request.input,
            device_ids,
            correlation_id: request.correlation_id,
            outcome: outcome.clone(),
            approval_id,
        };
        self.journal.insert(request.invocation_id, held);
        outcome
    }

    /// Runs an approved purge once; the outcome it settles with.
    fn purge(&mut self, invocation_id: &str) -> GatewayOutcome {
        let execution_id = self.next("exec");
        let ids = self.journal[invocation_id].device_ids.clone();
        let mut purged = Vec::new();
        for id in ids {
            if let Some(at) = self.devices.iter().position(|d| d.id == id) {
                self.devices.remove(at);
                purged.push(id);
            }
        }
        GatewayOutcome::Completed {
            invocation_id: invocation_id.to_string(),
            execution_id,
            output: json!({ "purged": purged }),
        }
    }
}

impl EmbeddedDevices {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The gateway's `invoke`: the journal first, then the capability.
    fn invoke_now(&self, request: InvokeRequest) -> GatewayOutcome {
        let mut state = self.lock();
        let id = request.invocation_id.clone();
        if let Some(held) = state.journal.get(&id) {
            if request.capability_id != PURGE || held.input != request.input {
                let message = "Invocation ID was already used for different input or capability.";
                return refusal(&id, "INVOCATION_CONFLICT", message);
            }
            return state.outcome_of(held);
        }
        if request.capability_id != PURGE {
            return refusal(&id, "CAPABILITY_NOT_FOUND", "Capability not found.");
        }
        if request
            .contract_digest
            .as_ref()
            .is_some_and(|d| *d != purge_digest())
        {
            let message = "Capability contract changed. Refresh discovery.";
            return refusal(&id, "CONTRACT_MISMATCH", message);
        }
        match purge_ids(&request.input) {
            Some(ids) => state.hold(request, ids),
            None => refusal(&id, "INPUT_INVALID", "Input validation failed."),
        }
    }

    /// The gateway's `resumeApproval`.
    fn resume_now(&self, request: &ResumeApprovalRequest) -> GatewayOutcome {
        let mut state = self.lock();
        let id = request.invocation_id.as_str();
        let Some(held) = state.journal.get(id) else {
            return refusal(id, "CAPABILITY_NOT_FOUND", "Capability not found.");
        };
        if held.approval_id != request.approval_id {
            return refusal(id, "CAPABILITY_NOT_FOUND", "Capability not found.");
        }
        if !matches!(held.outcome, GatewayOutcome::ApprovalRequired { .. }) {
            return held.outcome.clone();
        }
        let approval_id = held.approval_id.clone();
        let settled = match state.approvals[&approval_id].status {
            ApprovalStatus::Pending => return state.outcome_of(&state.journal[id]),
            ApprovalStatus::Approved => {
                let outcome = state.purge(id);
                if let Some(approval) = state.approvals.get_mut(&approval_id) {
                    approval.status = ApprovalStatus::Consumed;
                }
                outcome
            }
            _ => GatewayOutcome::Failed {
                invocation_id: id.to_string(),
                execution_id: state.next("exec"),
                error: GatewayFailure {
                    code: "APPROVAL_REJECTED".into(),
                    message: "The approval was rejected.".into(),
                    retryable: false,
                    details: None,
                },
            },
        };
        if let Some(held) = state.journal.get_mut(id) {
            held.outcome = settled.clone();
        }
        settled
    }

    /// The application's decision endpoint (the peer's `POST
    /// /approvals/decide`): `approved` or `rejected` by the approver, once.
    ///
    /// # Errors
    /// An unknown approval, one no longer pending, or another status.
    pub fn decide(&self, approval_id: &str, status: &str) -> Result<GatewayApproval, String> {
        let status = match status {
            "approved" => ApprovalStatus::Approved,
            "rejected" => ApprovalStatus::Rejected,
            other => return Err(format!("a decision is approved or rejected, not {other:?}")),
        };
        let mut state = self.lock();
        let Some(approval) = state.approvals.get_mut(approval_id) else {
            return Err(format!("no approval {approval_id}"));
        };
        if approval.status != ApprovalStatus::Pending {
            return Err(format!("approval {approval_id} is not pending"));
        }
        approval.status = status;
        approval.decision = Some(ApprovalDecisionRecord {
            status,
            approver: json!({"id": "approver-1", "kind": "user"}),
            decided_at: REQUESTED_AT.into(),
            comment: None,
        });
        Ok(approval.clone())
    }

    /// The gateway's `getInvocation`.
    fn receipt(&self, invocation_id: &str) -> Option<InvocationReceipt> {
        let state = self.lock();
        let held = state.journal.get(invocation_id)?;
        Some(InvocationReceipt {
            invocation_id: invocation_id.to_string(),
            capability_id: PURGE.into(),
            contract_digest: purge_digest(),
            correlation_id: held.correlation_id.clone(),
            state: ReceiptState::Settled,
            outcome: Some(state.outcome_of(held)),
            approval_id: Some(held.approval_id.clone()),
            created_at: REQUESTED_AT.into(),
            updated_at: REQUESTED_AT.into(),
        })
    }
}

/// The embedded gateway (module docs): only `devices.purge` is governed.
impl CapabilityClient for EmbeddedDevices {
    fn describe(
        &self,
        scope: DescribeScope,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>> {
        let wanted = scope.ids.is_none_or(|ids| ids.iter().any(|i| i == PURGE));
        let descriptors = if wanted {
            vec![purge_descriptor()]
        } else {
            Vec::new()
        };
        Box::pin(std::future::ready(Ok(descriptors)))
    }

    fn invoke(
        &self,
        request: InvokeRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        Box::pin(std::future::ready(Ok(self.invoke_now(request))))
    }

    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>> {
        Box::pin(std::future::ready(Ok(self.receipt(invocation_id))))
    }

    fn get_approval<'a>(
        &'a self,
        approval_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>> {
        let approval = self.lock().approvals.get(approval_id).cloned();
        Box::pin(std::future::ready(Ok(approval)))
    }

    fn resume_approval(
        &self,
        request: ResumeApprovalRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        Box::pin(std::future::ready(Ok(self.resume_now(&request))))
    }
}

impl AgentProcedureExecutor for EmbeddedDevices {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        let result = self
            .handle(&request.path, &request.input, &request.info.invocation_id)
            .map_err(|e| map_orpc_error(&e));
        Box::pin(std::future::ready(result))
    }
}
