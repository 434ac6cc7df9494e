//! The governed oRPC bridge (`docs/bridges.md`, "Governed bridge"): the
//! backend's capability gateway as orpc-agent publishes it — a flat oRPC
//! router of `describe`, `invoke`, `getInvocation`, `getApproval` and
//! `resumeApproval` under the backend's prefix.
//!
//! The executor does not call the domain procedure itself: it asks the
//! gateway to `invoke` the descriptor's capability id with the agent
//! invocation id as the stable id (the gateway's journal is idempotent per
//! id), `correlationId` (the invocation id unless configured) and the
//! contract digest `describe` gave. The gateway authenticates and
//! authorizes afresh, owns approval state and answers with an outcome:
//!
//! | gateway answer | surface result | host action |
//! |---|---|---|
//! | `completed` | success with `output` | — |
//! | `approval-required` | `DOMAIN_APPROVAL_REQUIRED`, retry `no`, details `{origin: "server", invocationId, executionId, approvalId, expiresAt}` | persist; decide via the app's endpoint; [`GovernedOrpcAgentBridge::resume`] |
//! | `outcome-unknown`; a gateway `TIMEOUT`; a lost answer (transport failure, timeout or cancellation after sending, a 5xx, a redirect, an unreadable or oversized 2xx); an answer for another invocation id | `DOMAIN_OUTCOME_UNKNOWN`, retry `no`, details `invocationId` | [`GovernedOrpcAgentBridge::reconcile`]; never assume failure |
//! | `failed` / `cancelled` | the gateway's code mapped ([`mapping`]: `UNAUTHENTICATED` → `NOT_AUTHENTICATED`, `FORBIDDEN`/`POLICY_DENIED` → `NOT_AUTHORIZED`, `INPUT_INVALID` → `INVALID_INPUT` with `details.issues`, `INVOCATION_CONFLICT`, `CONTRACT_MISMATCH` → `STALE_CAPABILITY`, `CAPABILITY_NOT_FOUND`, …) | app failure handling |
//! | an oRPC refusal (4xx: `UNAUTHORIZED` → `NOT_AUTHENTICATED`, `FORBIDDEN` → `NOT_AUTHORIZED`, others as the ordinary bridge) or connection refused | as listed, plus `invocationId`: nothing ran | fix, then a fresh call |
//!
//! Gateway messages are server text: they stay in the audit record
//! (`ExecutionError::internal`); the agent gets the fixed messages of
//! [`mapping`]. The `on_outcome` observer sees every outcome synchronously;
//! an error it returns or a panic in it is logged and never changes the
//! result. Approval decisions are the application's own endpoint, never
//! model tools and never part of this bridge.
//!
//! * [`wire`] — the requests and answers, as recorded from orpc-agent's
//!   gateway;
//! * [`client`] — [`CapabilityClient`] and its oRPC implementation;
//! * [`outcome`] — [`GovernedOutcome`]: an answer classified, mapped to the
//!   surface result;
//! * [`mapping`] — the gateway code table.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use serde_json::{json, Value};

pub mod client;
pub mod mapping;
pub mod outcome;
pub mod wire;

pub use client::{CapabilityClient, CapabilityPaths, OrpcCapabilityClient};
pub use mapping::{GATEWAY_ISSUE_MESSAGE, MAX_ISSUE_PATH, MAX_REPORTED_ISSUES};
pub use outcome::{GovernedOutcome, UnknownReason};
pub use wire::{
    parse_approval, parse_outcome, parse_receipt, ApprovalDecisionRecord, ApprovalStatus,
    DescribeScope, GatewayApproval, GatewayFailure, GatewayOutcome, InvocationReceipt,
    InvokeRequest, ReceiptState, ResumeApprovalRequest, MAX_GATEWAY_ID_CHARS,
};

use crate::bridge::client::{CallOptions, OrpcCallError};
use crate::bridge::ordinary::{cancelled, not_in_manifest, BridgeRefs, CallContext};
use crate::executor::{AgentProcedureExecutor, ExecuteRequest, ExecutionError, ProcedureCallInfo};
use crate::invocation::{AgentConsumer, ErrorCode, Retry};
use crate::manifest::AgentManifest;
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// Which bridge call produced an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomePhase {
    /// The executor's `invoke`.
    Invoke,
    /// [`GovernedOrpcAgentBridge::reconcile`] (`getInvocation`).
    Reconcile,
    /// [`GovernedOrpcAgentBridge::resume`] (`resumeApproval`).
    Resume,
}

/// Context of one outcome for the observer.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeInfo {
    /// The invocation id sent to the gateway.
    pub invocation_id: String,
    /// Which call produced it.
    pub phase: OutcomePhase,
    /// Dotted path (known for [`OutcomePhase::Invoke`]).
    pub path: Option<String>,
    /// Capability id sent (known for [`OutcomePhase::Invoke`]).
    pub capability_id: Option<String>,
    /// The invoking consumer (known for [`OutcomePhase::Invoke`]).
    pub consumer: Option<AgentConsumer>,
}

/// What an observer may return: an error is logged and otherwise ignored.
pub type ObserverResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// The synchronous `on_outcome` observer: correlate approvals,
/// invalidate caches after completed outcomes. Not durable storage and not
/// an acknowledgment barrier; its errors and panics never change the
/// result. Implemented for closures `Fn(&GovernedOutcome, &OutcomeInfo) ->
/// ObserverResult`.
pub trait OutcomeObserver: MaybeSend + MaybeSync {
    /// Called once per outcome, before the result is returned.
    ///
    /// # Errors
    /// Anything; it is logged.
    fn on_outcome(&self, outcome: &GovernedOutcome, info: &OutcomeInfo) -> ObserverResult;
}

impl<F> OutcomeObserver for F
where
    F: Fn(&GovernedOutcome, &OutcomeInfo) -> ObserverResult + MaybeSend + MaybeSync,
{
    fn on_outcome(&self, outcome: &GovernedOutcome, info: &OutcomeInfo) -> ObserverResult {
        self(outcome, info)
    }
}

/// The `correlationId` an `invoke` carries, from the call's context
/// (`None`: omitted). Implemented for closures `Fn(&ProcedureCallInfo) ->
/// Option<String>`. The default is the invocation id, as the TypeScript
/// bridge sends it.
pub trait CorrelationIds: MaybeSend + MaybeSync {
    /// The correlation id of one call.
    fn correlation_id(&self, info: &ProcedureCallInfo) -> Option<String>;
}

impl<F> CorrelationIds for F
where
    F: Fn(&ProcedureCallInfo) -> Option<String> + MaybeSend + MaybeSync,
{
    fn correlation_id(&self, info: &ProcedureCallInfo) -> Option<String> {
        self(info)
    }
}

/// Options of [`create_governed_orpc_agent_bridge`].
#[derive(Clone)]
pub struct GovernedBridgeOptions {
    /// The gateway's client, authenticated as the requester.
    pub client: Arc<dyn CapabilityClient>,
    /// The governed procedures (usually `create_orpc_agent_manifest` of
    /// `describe`): their `capabilityId` (else the dotted path) and
    /// `contractDigest` are what `invoke` sends.
    pub manifest: AgentManifest,
    /// The outcome observer.
    pub on_outcome: Option<Arc<dyn OutcomeObserver>>,
    /// Extra per-call headers for `invoke`.
    pub call_context: Option<Arc<dyn CallContext>>,
    /// `correlationId` per call; `None` sends the invocation id.
    pub correlation: Option<Arc<dyn CorrelationIds>>,
    /// The executor for paths the manifest does not hold (e.g. the
    /// ordinary bridge's), so one registry serves ordinary and governed
    /// procedures; `None` refuses them (`EXECUTION_FAILED`).
    pub fallback: Option<Arc<dyn AgentProcedureExecutor>>,
}

impl GovernedBridgeOptions {
    /// Options with no observer, no call context, the invocation id as
    /// correlation id and no fallback.
    pub fn new(client: Arc<dyn CapabilityClient>, manifest: AgentManifest) -> Self {
        Self {
            client,
            manifest,
            on_outcome: None,
            call_context: None,
            correlation: None,
            fallback: None,
        }
    }

    /// Sets the observer (a closure `(&GovernedOutcome, &OutcomeInfo) ->
    /// ObserverResult`).
    pub fn on_outcome<F>(mut self, observer: F) -> Self
    where
        F: Fn(&GovernedOutcome, &OutcomeInfo) -> ObserverResult + MaybeSend + MaybeSync + 'static,
    {
        self.on_outcome = Some(Arc::new(observer));
        self
    }

    /// Sets the call context (a closure or fn `(&ProcedureCallInfo) ->
    /// Headers`).
    pub fn call_context<F>(mut self, call_context: F) -> Self
    where
        F: Fn(&ProcedureCallInfo) -> crate::bridge::client::Headers
            + MaybeSend
            + MaybeSync
            + 'static,
    {
        self.call_context = Some(Arc::new(call_context));
        self
    }

    /// Sets the correlation id of each `invoke` (a closure
    /// `(&ProcedureCallInfo) -> Option<String>`; `None` omits it).
    pub fn correlation_id<F>(mut self, correlation: F) -> Self
    where
        F: Fn(&ProcedureCallInfo) -> Option<String> + MaybeSend + MaybeSync + 'static,
    {
        self.correlation = Some(Arc::new(correlation));
        self
    }

    /// Sends the paths the manifest does not hold to `executor`.
    pub fn fallback(mut self, executor: Arc<dyn AgentProcedureExecutor>) -> Self {
        self.fallback = Some(executor);
        self
    }
}

/// What [`create_governed_orpc_agent_bridge`] returns.
#[derive(Clone)]
pub struct GovernedOrpcAgentBridge {
    /// One reference per governed manifest path.
    pub refs: BridgeRefs,
    /// Dispatches governed calls through the gateway's `invoke` (and the
    /// others to the fallback).
    pub executor: Arc<dyn AgentProcedureExecutor>,
    inner: Arc<GovernedInner>,
}

struct GovernedInner {
    client: Arc<dyn CapabilityClient>,
    manifest: AgentManifest,
    on_outcome: Option<Arc<dyn OutcomeObserver>>,
    call_context: Option<Arc<dyn CallContext>>,
    correlation: Option<Arc<dyn CorrelationIds>>,
    fallback: Option<Arc<dyn AgentProcedureExecutor>>,
}

/// Creates the governed bridge (`docs/bridges.md`, "Governed bridge").
pub fn create_governed_orpc_agent_bridge(
    options: GovernedBridgeOptions,
) -> GovernedOrpcAgentBridge {
    let refs = BridgeRefs::new(&options.manifest);
    let inner = Arc::new(GovernedInner {
        client: options.client,
        manifest: options.manifest,
        on_outcome: options.on_outcome,
        call_context: options.call_context,
        correlation: options.correlation,
        fallback: options.fallback,
    });
    GovernedOrpcAgentBridge {
        refs,
        executor: Arc::new(GovernedExecutor {
            inner: inner.clone(),
        }),
        inner,
    }
}

impl GovernedOrpcAgentBridge {
    /// Reconciles an invocation by id through the gateway's
    /// `getInvocation` (after `DOMAIN_OUTCOME_UNKNOWN`, or after a
    /// restart): a settled receipt's outcome,
    /// [`GovernedOutcome::Pending`] while the gateway does not know it
    /// either, [`GovernedOutcome::NotRecorded`] for `null`. The observer
    /// sees it. Never re-dispatches.
    ///
    /// # Errors
    /// The failed `getInvocation` call itself.
    pub async fn reconcile(&self, invocation_id: &str) -> Result<GovernedOutcome, OrpcCallError> {
        self.reconcile_with(invocation_id, CallOptions::default())
            .await
    }

    /// [`Self::reconcile`] with per-call options (headers, cancellation).
    ///
    /// # Errors
    /// As [`Self::reconcile`].
    pub async fn reconcile_with(
        &self,
        invocation_id: &str,
        options: CallOptions,
    ) -> Result<GovernedOutcome, OrpcCallError> {
        let client = &self.inner.client;
        let receipt = client.get_invocation(invocation_id, options).await?;
        let outcome = GovernedOutcome::from_receipt(invocation_id, receipt);
        let info = phase_info(invocation_id, OutcomePhase::Reconcile);
        self.inner.observe(&outcome, &info);
        Ok(outcome)
    }

    /// The gateway's view of an approval (`getApproval`): status, reasons,
    /// types, expiry; `None` when it has none with this id.
    ///
    /// # Errors
    /// The failed call.
    pub async fn get_approval(
        &self,
        approval_id: &str,
        options: CallOptions,
    ) -> Result<Option<GatewayApproval>, OrpcCallError> {
        self.inner.client.get_approval(approval_id, options).await
    }

    /// Resumes a held invocation after its approval was decided, through
    /// the gateway's `resumeApproval` with the requester's fresh authority
    /// (the client's own credentials at this moment). It never
    /// re-dispatches the UI call through the registry and needs no local
    /// confirmation: a local confirmation cannot satisfy a domain approval.
    /// Classified like an `invoke` answer (a still-pending approval is
    /// `approval-required` again; a settled call answers its recorded
    /// outcome, with no second effect).
    pub async fn resume(&self, request: ResumeApprovalRequest) -> GovernedOutcome {
        self.resume_with(request, CallOptions::default()).await
    }

    /// [`Self::resume`] with per-call options: pass the requester's current
    /// credentials in `options.headers` (e.g. a freshly issued
    /// `authorization`; `HttpOrpcClient` lets it replace the transport's
    /// header of the same name) when the client's own credentials may be
    /// stale.
    pub async fn resume_with(
        &self,
        request: ResumeApprovalRequest,
        options: CallOptions,
    ) -> GovernedOutcome {
        let invocation_id = request.invocation_id.clone();
        let answer = self.inner.client.resume_approval(request, options).await;
        let outcome = GovernedOutcome::classify(&invocation_id, answer);
        let info = phase_info(&invocation_id, OutcomePhase::Resume);
        self.inner.observe(&outcome, &info);
        outcome
    }
}

fn phase_info(invocation_id: &str, phase: OutcomePhase) -> OutcomeInfo {
    OutcomeInfo {
        invocation_id: invocation_id.to_string(),
        phase,
        path: None,
        capability_id: None,
        consumer: None,
    }
}

impl GovernedInner {
    fn observe(&self, outcome: &GovernedOutcome, info: &OutcomeInfo) {
        let Some(observer) = &self.on_outcome else {
            return;
        };
        match catch_unwind(AssertUnwindSafe(|| observer.on_outcome(outcome, info))) {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(
                invocation_id = %info.invocation_id,
                %error,
                "on_outcome observer failed; the outcome stands"
            ),
            Err(_) => tracing::warn!(
                invocation_id = %info.invocation_id,
                "on_outcome observer panicked; the outcome stands"
            ),
        }
    }

    /// The `invoke` request for a call to a governed `path`.
    fn invoke_request(&self, request: ExecuteRequest) -> InvokeRequest {
        let tool = self.manifest.tool(&request.path);
        let capability_id = tool
            .and_then(|t| t.capability_id.clone())
            .unwrap_or_else(|| request.path.to_string());
        let contract_digest = tool
            .and_then(|t| t.contract_digest.clone())
            .or_else(|| request.contract_digest.as_deref().map(str::to_string));
        let correlation_id = match &self.correlation {
            Some(c) => c.correlation_id(&request.info),
            None => Some(request.info.invocation_id.to_string()),
        };
        InvokeRequest {
            invocation_id: request.info.invocation_id.to_string(),
            capability_id,
            input: request.input,
            correlation_id,
            contract_digest,
        }
    }
}

/// An invocation id longer than the gateway accepts: refused before
/// sending (the gateway would answer 400 and run nothing).
fn id_too_long(invocation_id: &str) -> ExecutionError {
    ExecutionError::new(
        ErrorCode::ExecutionFailed,
        "The invocation id is longer than the backend accepts (256 characters); nothing was sent.",
        Retry::No,
    )
    .with_detail("reason", "invocation-id-too-long")
    .with_internal(
        json!({"kind": "invocation-id-too-long", "chars": invocation_id.chars().count()}),
    )
}

struct GovernedExecutor {
    inner: Arc<GovernedInner>,
}

impl AgentProcedureExecutor for GovernedExecutor {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(async move {
            let inner = &self.inner;
            if inner.manifest.tool(&request.path).is_none() {
                return match &inner.fallback {
                    Some(fallback) => fallback.execute(request).await,
                    None => Err(not_in_manifest(&request.path)),
                };
            }
            if request.info.cancellation.is_cancelled() {
                return Err(cancelled());
            }
            if request.info.invocation_id.chars().count() > MAX_GATEWAY_ID_CHARS {
                return Err(id_too_long(&request.info.invocation_id));
            }
            let headers = inner
                .call_context
                .as_ref()
                .map(|c| c.headers(&request.info))
                .unwrap_or_default();
            let options = CallOptions {
                headers,
                cancellation: Some(request.info.cancellation.clone()),
                ..CallOptions::default()
            };
            let path = request.path.to_string();
            let consumer = request.info.consumer.clone();
            let invoke = inner.invoke_request(request);
            let info = OutcomeInfo {
                invocation_id: invoke.invocation_id.clone(),
                phase: OutcomePhase::Invoke,
                path: Some(path),
                capability_id: Some(invoke.capability_id.clone()),
                consumer: Some(consumer),
            };
            let answer = inner.client.invoke(invoke, options).await;
            let outcome = GovernedOutcome::classify(&info.invocation_id, answer);
            inner.observe(&outcome, &info);
            outcome.to_result()
        })
    }
}

#[cfg(test)]
mod tests;
