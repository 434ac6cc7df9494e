//! The embedded, in-process devices backend: an [`AgentProcedureExecutor`]
//! with the semantics of the real oRPC peer's domain router
//! (`tests/orpc-peer`, its README, "Domain router"), so the scripted
//! run needs nothing started.
//!
//! Errors are produced as the oRPC error the peer would send
//! ([`OrpcError`]: code, HTTP status, message, data) and mapped with the
//! ordinary bridge's own [`map_orpc_error`], so the agent sees exactly what
//! it sees through `--orpc-url`.

use std::collections::HashMap;
use std::sync::Mutex;

use agent_surface::bridge::{
    map_orpc_error, CallOptions, CapabilityClient, CapabilityInvokeRequest, DomainReceipt,
    OrpcCallError, OrpcError, UnexpectedReason,
};
use agent_surface::manifest::PortableDescriptor;
use agent_surface::sync::BoxFuture;
use agent_surface::{AgentProcedureExecutor, ExecuteRequest, ExecutionError};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::app::Device;

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
    approvals: u64,
    /// approval id → `pending` / `approve` / `reject`.
    decisions: HashMap<String, String>,
    /// Purges held for approval, by the invocation id they arrived with
    /// (the peer's `x-agent-invocation-id`): what `resume` runs.
    held: HashMap<String, Held>,
}

/// A purge the backend holds until a person decides.
struct Held {
    approval_id: String,
    device_ids: Vec<String>,
    execution_id: String,
    /// Once resumed after a decision: the receipt, returned ever after.
    settled: Option<DomainReceipt>,
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
                approvals: 0,
                decisions: HashMap::new(),
                held: HashMap::new(),
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
                // Held under the invocation id (the same id asks again for
                // the same approval), resumable once a person decided.
                let approval_id = match state.held.get(invocation_id) {
                    Some(held) if held.settled.is_none() => held.approval_id.clone(),
                    Some(_) => {
                        return Err(orpc_error(
                            false,
                            "CONFLICT",
                            409,
                            "The invocation id was already used",
                            None,
                        ))
                    }
                    None => {
                        state.approvals += 1;
                        let approval_id = format!("appr-{}", state.approvals);
                        state
                            .decisions
                            .insert(approval_id.clone(), "pending".into());
                        let execution_id = format!("exec-{}", state.approvals);
                        state.held.insert(
                            invocation_id.to_string(),
                            Held {
                                approval_id: approval_id.clone(),
                                device_ids: input.device_ids,
                                execution_id,
                                settled: None,
                            },
                        );
                        approval_id
                    }
                };
                Err(orpc_error(
                    true,
                    "APPROVAL_REQUIRED",
                    409,
                    "Purging devices requires approval",
                    Some(json!({ "approvalId": approval_id })),
                ))
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

impl EmbeddedDevices {
    /// The backend's approver endpoint (the peer's `approvals.decide`):
    /// the first decision stands; returns the stored one.
    ///
    /// # Errors
    /// An unknown approval id (the peer's `NOT_FOUND`).
    pub fn decide(&self, approval_id: &str, decision: &str) -> Result<String, OrpcCallError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.decisions.get_mut(approval_id) {
            Some(stored) => {
                if stored == "pending" {
                    *stored = decision.to_string();
                }
                Ok(stored.clone())
            }
            None => Err(orpc_error(true, "NOT_FOUND", 404, "Unknown approval", None)),
        }
    }

    /// The peer's `capabilities.resume`: a held purge runs once after its
    /// approval (rejected: `failed APPROVAL_REJECTED`; pending: still
    /// `approval-required`); later calls return the stored receipt.
    fn resume_held(&self, invocation_id: &str) -> Result<DomainReceipt, OrpcCallError> {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let state = &mut *guard;
        let Some(held) = state.held.get_mut(invocation_id) else {
            return Err(orpc_error(
                true,
                "NOT_FOUND",
                404,
                "Unknown invocation",
                None,
            ));
        };
        if let Some(receipt) = &held.settled {
            return Ok(receipt.clone());
        }
        let invocation_id = invocation_id.to_string();
        let execution_id = Some(held.execution_id.clone());
        let receipt = match state.decisions.get(&held.approval_id).map(String::as_str) {
            Some("approve") => {
                let mut purged = Vec::new();
                for id in &held.device_ids {
                    if let Some(at) = state.devices.iter().position(|d| &d.id == id) {
                        state.devices.remove(at);
                        purged.push(id.clone());
                    }
                }
                DomainReceipt::Completed {
                    invocation_id,
                    execution_id,
                    output: json!({ "purged": purged }),
                }
            }
            Some("reject") => serde_json::from_value(json!({
                "status": "failed", "invocationId": invocation_id, "executionId": held.execution_id,
                "error": {"code": "APPROVAL_REJECTED", "message": "The approval was rejected"}
            }))
            .map_err(|e| bad_request(&e))?,
            _ => {
                return Ok(DomainReceipt::ApprovalRequired {
                    invocation_id,
                    execution_id,
                    approval_id: held.approval_id.clone(),
                })
            }
        };
        held.settled = Some(receipt.clone());
        Ok(receipt)
    }
}

/// The governed gateway's receipts for the held purges (`resume`,
/// `getInvocation`); `describe` and `invoke` are not served in process.
impl CapabilityClient for EmbeddedDevices {
    fn describe(
        &self,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<PortableDescriptor>, OrpcCallError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn invoke(
        &self,
        _: CapabilityInvokeRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<DomainReceipt, OrpcCallError>> {
        Box::pin(std::future::ready(Err(orpc_error(
            false,
            "NOT_FOUND",
            404,
            "Unknown capability",
            None,
        ))))
    }

    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<DomainReceipt, OrpcCallError>> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let answer = match state.held.get(invocation_id) {
            Some(held) => Ok(held
                .settled
                .clone()
                .unwrap_or(DomainReceipt::ApprovalRequired {
                    invocation_id: invocation_id.to_string(),
                    execution_id: Some(held.execution_id.clone()),
                    approval_id: held.approval_id.clone(),
                })),
            None => Err(orpc_error(
                true,
                "NOT_FOUND",
                404,
                "Unknown invocation",
                None,
            )),
        };
        Box::pin(std::future::ready(answer))
    }

    fn resume<'a>(
        &'a self,
        invocation_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<DomainReceipt, OrpcCallError>> {
        Box::pin(std::future::ready(self.resume_held(invocation_id)))
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
