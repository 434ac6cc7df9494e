//! The governed oRPC bridge (`docs/bridges.md`, "Governed bridge"):
//! governed contextual procedures, approval and reconciliation.
//!
//! The executor does not call the domain procedure itself: it asks the
//! backend's capability gateway to `invoke` the canonical capability id with
//! a stable invocation id (the agent invocation id) and the manifest's
//! contract digest. The gateway verifies the digest, authorizes afresh, owns
//! approval state and answers with a receipt. Outcomes map as follows:
//!
//! | domain result | surface result | host action |
//! |---|---|---|
//! | `completed` | success with `output` | — |
//! | `approval-required` | `DOMAIN_APPROVAL_REQUIRED`, retry `no`, details `invocationId`, `executionId`, `approvalId` | persist; decide via the app's authenticated endpoint; [`GovernedOrpcAgentBridge::resume`] |
//! | `outcome-unknown`, a lost response (transport failure, timeout or cancellation after sending, a 5xx, a redirect, an unreadable or oversized 2xx), a receipt for another invocation id | `DOMAIN_OUTCOME_UNKNOWN`, retry `no`, details `invocationId` | [`GovernedOrpcAgentBridge::reconcile`]; never assume failure |
//! | `failed` with code `UNAUTHORIZED`/`FORBIDDEN` | `NOT_AUTHORIZED`, retry `no`, details `invocationId` | app failure handling |
//! | `failed` (other codes), `cancelled` | `EXECUTION_FAILED`, retry `no`, details `invocationId` | app failure handling |
//! | the gateway refused the call with a 4xx error (digest mismatch, validation, auth) | as the ordinary bridge ([`map_orpc_error`]) plus `invocationId`: nothing ran | fix and retry with a fresh id |
//! | connection refused (nothing sent) | `EXECUTION_FAILED`, retry `yes` | retry |
//!
//! The `on_outcome` observer sees every outcome synchronously; an error it
//! returns or a panic in it is logged and never changes the result (a
//! completed receipt stays a success). Approval decisions are application
//! actions through the app's own authenticated endpoint, never model tools
//! and never part of this bridge.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::bridge::client::{
    json_excerpt, CallOptions, OrpcCallError, OrpcClient, UnexpectedReason,
};
use crate::bridge::ordinary::{
    cancelled, is_authorization_code, map_orpc_error, not_in_manifest, BridgeRefs, CallContext,
};
use crate::bridge::sanitize::with_server_identifier;
use crate::executor::{AgentProcedureExecutor, ExecuteRequest, ExecutionError};
use crate::invocation::{AgentConsumer, AgentInvocationResult, ErrorCode, Retry};
use crate::manifest::{canonical_capability_id, AgentManifest, PortableDescriptor};
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// Input of the gateway's `invoke` (wire: `{capabilityId, invocationId,
/// contractDigest?, input}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityInvokeRequest {
    /// Canonical capability id (the manifest's `capabilityId` override, else
    /// `"domain:" + path`).
    pub capability_id: String,
    /// Stable invocation id: the agent invocation id. The gateway is
    /// idempotent per id, so a repeat returns the stored receipt.
    pub invocation_id: String,
    /// The manifest's contract digest; omitted when the manifest has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
    /// The effective input, validated by the registry.
    pub input: Value,
}

/// Why a governed execution failed on the backend (`receipt.error`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainFailure {
    /// The backend's code (`FORBIDDEN`, `PROVIDER_DOWN`,
    /// `APPROVAL_REJECTED`, …).
    pub code: String,
    /// Backend text; audit only.
    #[serde(default)]
    pub message: String,
}

/// A backend receipt: what `invoke`, `getInvocation` and `resume` return,
/// discriminated by `status` (wire names camelCase:
/// `{"status": "completed", "invocationId", "executionId", "output"}`, …).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum DomainReceipt {
    /// The effect happened; `output` is the model output (`null` if none).
    Completed {
        /// Invocation the receipt is for.
        invocation_id: String,
        /// Backend execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// Output.
        #[serde(default)]
        output: Value,
    },
    /// The backend holds the call until an approver decides.
    ApprovalRequired {
        /// Invocation the receipt is for.
        invocation_id: String,
        /// Backend execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// The approval to decide.
        approval_id: String,
    },
    /// The backend itself does not know whether the effect happened.
    OutcomeUnknown {
        /// Invocation the receipt is for.
        invocation_id: String,
        /// Backend execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
    },
    /// The execution failed.
    Failed {
        /// Invocation the receipt is for.
        invocation_id: String,
        /// Backend execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// Why.
        error: DomainFailure,
    },
    /// The execution was cancelled on the backend.
    Cancelled {
        /// Invocation the receipt is for.
        invocation_id: String,
        /// Backend execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
    },
}

impl DomainReceipt {
    /// The invocation id the receipt names.
    pub fn invocation_id(&self) -> &str {
        match self {
            DomainReceipt::Completed { invocation_id, .. }
            | DomainReceipt::ApprovalRequired { invocation_id, .. }
            | DomainReceipt::OutcomeUnknown { invocation_id, .. }
            | DomainReceipt::Failed { invocation_id, .. }
            | DomainReceipt::Cancelled { invocation_id, .. } => invocation_id,
        }
    }

    /// The backend execution id, when given.
    pub fn execution_id(&self) -> Option<&str> {
        match self {
            DomainReceipt::Completed { execution_id, .. }
            | DomainReceipt::ApprovalRequired { execution_id, .. }
            | DomainReceipt::OutcomeUnknown { execution_id, .. }
            | DomainReceipt::Failed { execution_id, .. }
            | DomainReceipt::Cancelled { execution_id, .. } => execution_id.as_deref(),
        }
    }
}

/// The backend's capability client: `describe`, `invoke`,
/// `getInvocation` and `resume`, themselves oRPC procedures of the gateway
/// ([`OrpcCapabilityClient`]). Each call carries [`CallOptions`] (headers,
/// cancellation); the implementation's own transport carries the
/// requester's authentication.
pub trait CapabilityClient: MaybeSend + MaybeSync {
    /// Caller-scoped descriptors (feed them to
    /// [`crate::manifest::create_orpc_agent_manifest`]).
    ///
    /// # Errors
    /// The failed call.
    fn describe(
        &self,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<PortableDescriptor>, OrpcCallError>>;

    /// Dispatches one governed call; returns the receipt.
    ///
    /// # Errors
    /// The failed call; an answer that is not a receipt is
    /// [`OrpcCallError::UnexpectedResponse`].
    fn invoke(
        &self,
        request: CapabilityInvokeRequest,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<DomainReceipt, OrpcCallError>>;

    /// The stored receipt of an invocation (reconciliation).
    ///
    /// # Errors
    /// The failed call; the gateway answers `NOT_FOUND` when it has no
    /// record of the id.
    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<DomainReceipt, OrpcCallError>>;

    /// Resumes an invocation after its approval was decided, with the
    /// requester's fresh authority; returns the new receipt.
    ///
    /// # Errors
    /// The failed call.
    fn resume<'a>(
        &'a self,
        invocation_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<DomainReceipt, OrpcCallError>>;
}

/// Router paths of the gateway's capability procedures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapabilityPaths {
    /// Default `capabilities.describe`.
    pub describe: String,
    /// Default `capabilities.invoke`.
    pub invoke: String,
    /// Default `capabilities.getInvocation`.
    pub get_invocation: String,
    /// Default `capabilities.resume`.
    pub resume: String,
}

impl Default for CapabilityPaths {
    fn default() -> Self {
        Self {
            describe: "capabilities.describe".into(),
            invoke: "capabilities.invoke".into(),
            get_invocation: "capabilities.getInvocation".into(),
            resume: "capabilities.resume".into(),
        }
    }
}

/// [`CapabilityClient`] over any [`OrpcClient`] pointed at the gateway
/// handler (for example `HttpOrpcClient::new("https://app/gateway")`).
#[derive(Clone, Debug)]
pub struct OrpcCapabilityClient<C> {
    client: C,
    paths: CapabilityPaths,
}

impl<C: OrpcClient> OrpcCapabilityClient<C> {
    /// A client using the default [`CapabilityPaths`].
    pub fn new(client: C) -> Self {
        Self {
            client,
            paths: CapabilityPaths::default(),
        }
    }

    /// Uses other router paths.
    pub fn with_paths(mut self, paths: CapabilityPaths) -> Self {
        self.paths = paths;
        self
    }

    /// The underlying oRPC client.
    pub fn inner(&self) -> &C {
        &self.client
    }

    async fn receipt(
        &self,
        path: &str,
        input: Value,
        options: CallOptions,
    ) -> Result<DomainReceipt, OrpcCallError> {
        let value = self.client.call(path, Some(input), options).await?;
        parse_receipt(value)
    }
}

/// Parses a receipt; a value that is not one is an
/// [`OrpcCallError::UnexpectedResponse`] (status 200).
///
/// # Errors
/// As above.
pub fn parse_receipt(value: Value) -> Result<DomainReceipt, OrpcCallError> {
    DomainReceipt::deserialize(&value).map_err(|e| not_shaped(&value, "a capability receipt", &e))
}

/// A 2xx answer that does not have the expected shape; the body kept for
/// audit is an excerpt.
fn not_shaped(value: &Value, expected: &'static str, error: &serde_json::Error) -> OrpcCallError {
    OrpcCallError::UnexpectedResponse {
        status: 200,
        content_type: Some("application/json".into()),
        body: json_excerpt(value),
        reason: UnexpectedReason::NotShaped {
            expected,
            message: error.to_string(),
        },
    }
}

impl<C: OrpcClient> CapabilityClient for OrpcCapabilityClient<C> {
    fn describe(
        &self,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<PortableDescriptor>, OrpcCallError>> {
        Box::pin(async move {
            let value = self
                .client
                .call(&self.paths.describe, Some(json!({})), options)
                .await?;
            Vec::<PortableDescriptor>::deserialize(&value)
                .map_err(|e| not_shaped(&value, "a list of portable descriptors", &e))
        })
    }

    fn invoke(
        &self,
        request: CapabilityInvokeRequest,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<DomainReceipt, OrpcCallError>> {
        Box::pin(async move {
            let input = serde_json::to_value(&request).unwrap_or(Value::Null);
            self.receipt(&self.paths.invoke, input, options).await
        })
    }

    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<DomainReceipt, OrpcCallError>> {
        Box::pin(self.receipt(
            &self.paths.get_invocation,
            json!({ "invocationId": invocation_id }),
            options,
        ))
    }

    fn resume<'a>(
        &'a self,
        invocation_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<DomainReceipt, OrpcCallError>> {
        Box::pin(self.receipt(
            &self.paths.resume,
            json!({ "invocationId": invocation_id }),
            options,
        ))
    }
}

/// Why an outcome is unknown although the backend did not say so itself.
#[derive(Clone, Debug, PartialEq)]
pub enum UnknownReason {
    /// The request was sent but no complete response came back (also the
    /// transport's total timeout).
    LostResponse,
    /// The call was cancelled after it was sent.
    Cancelled,
    /// The gateway answered 5xx: it may have failed after committing.
    ServerError,
    /// A 2xx answer that is not a receipt or is over the size limit, or a
    /// redirect (never followed).
    InvalidResponse,
    /// A receipt for another invocation id.
    MismatchedInvocation {
        /// The invocation id the receipt named.
        received: String,
    },
}

/// The classified result of one governed call, handed to `on_outcome`
/// and mapped to the surface result by [`GovernedOutcome::to_result`].
#[derive(Clone, Debug, PartialEq)]
pub enum GovernedOutcome {
    /// A receipt for this invocation (any status, including the backend's
    /// own `outcome-unknown`).
    Receipt(DomainReceipt),
    /// No trustworthy receipt: the effect may or may not have happened.
    Unknown {
        /// Our invocation id.
        invocation_id: String,
        /// Why.
        reason: UnknownReason,
        /// The transport error or foreign receipt, for audit.
        internal: Value,
    },
    /// The gateway refused the call before executing it (a 4xx answer), or
    /// it was never sent (connection refused): nothing ran.
    Rejected {
        /// Our invocation id.
        invocation_id: String,
        /// The refusal.
        error: OrpcCallError,
    },
}

impl GovernedOutcome {
    /// Classifies one gateway answer for `invocation_id` (the table in the
    /// module docs).
    pub fn classify(invocation_id: &str, answer: Result<DomainReceipt, OrpcCallError>) -> Self {
        match answer {
            Ok(receipt) if receipt.invocation_id() == invocation_id => {
                GovernedOutcome::Receipt(receipt)
            }
            Ok(receipt) => GovernedOutcome::Unknown {
                invocation_id: invocation_id.to_string(),
                reason: UnknownReason::MismatchedInvocation {
                    received: receipt.invocation_id().to_string(),
                },
                internal: json!({"kind": "mismatched-invocation", "receipt": receipt}),
            },
            Err(error) if error.may_have_executed() => {
                let reason = match &error {
                    OrpcCallError::Cancelled => UnknownReason::Cancelled,
                    OrpcCallError::Transport { .. } | OrpcCallError::Timeout { .. } => {
                        UnknownReason::LostResponse
                    }
                    OrpcCallError::Redirect { .. } => UnknownReason::InvalidResponse,
                    OrpcCallError::UnexpectedResponse { status, .. }
                    | OrpcCallError::ResponseTooLarge { status, .. }
                        if *status < 400 =>
                    {
                        UnknownReason::InvalidResponse
                    }
                    _ => UnknownReason::ServerError,
                };
                GovernedOutcome::Unknown {
                    invocation_id: invocation_id.to_string(),
                    reason,
                    internal: error.to_internal(),
                }
            }
            Err(error) => GovernedOutcome::Rejected {
                invocation_id: invocation_id.to_string(),
                error,
            },
        }
    }

    /// The invocation id the outcome is about (ours, also for mismatches).
    pub fn invocation_id(&self) -> &str {
        match self {
            GovernedOutcome::Receipt(r) => r.invocation_id(),
            GovernedOutcome::Unknown { invocation_id, .. }
            | GovernedOutcome::Rejected { invocation_id, .. } => invocation_id,
        }
    }

    /// The completed receipt's output, if the effect is known to have
    /// happened.
    pub fn completed_output(&self) -> Option<&Value> {
        match self {
            GovernedOutcome::Receipt(DomainReceipt::Completed { output, .. }) => Some(output),
            _ => None,
        }
    }

    /// The surface result (the table in the module docs): `Ok(output)` for
    /// a completed receipt, else the mapped [`ExecutionError`] (safe
    /// message, details, full record in `internal`). `invocationId` is the
    /// id this outcome is about (a receipt naming another id is classified
    /// [`GovernedOutcome::Unknown`]); the backend's `executionId` and
    /// `approvalId` reach `details` only through
    /// [`safe_identifier`](crate::bridge::safe_identifier) and are otherwise
    /// withheld (named in `internal.withheldDetails`).
    pub fn to_result(&self) -> Result<Value, ExecutionError> {
        let invocation_id = self.invocation_id().to_string();
        match self {
            GovernedOutcome::Receipt(receipt) => {
                let internal = json!({"kind": "receipt", "receipt": receipt});
                match receipt {
                    DomainReceipt::Completed { output, .. } => Ok(output.clone()),
                    DomainReceipt::ApprovalRequired {
                        execution_id,
                        approval_id,
                        ..
                    } => {
                        let mut err = ExecutionError::new(
                            ErrorCode::DomainApprovalRequired,
                            "The backend requires an approval for this call. It is decided in the application, then the call is resumed through the backend.",
                            Retry::No,
                        )
                        .with_detail("invocationId", invocation_id)
                        .with_internal(internal);
                        if let Some(execution_id) = execution_id {
                            err = with_server_identifier(err, "executionId", execution_id);
                        }
                        Err(with_server_identifier(err, "approvalId", approval_id))
                    }
                    DomainReceipt::OutcomeUnknown { .. } => {
                        Err(outcome_unknown(invocation_id).with_internal(internal))
                    }
                    DomainReceipt::Failed { error, .. } => {
                        let err = if is_authorization_code(&error.code) {
                            ExecutionError::new(
                                ErrorCode::NotAuthorized,
                                "The backend refused to authorize this call.",
                                Retry::No,
                            )
                        } else {
                            ExecutionError::new(
                                ErrorCode::ExecutionFailed,
                                "The backend could not execute the call.",
                                Retry::No,
                            )
                        };
                        Err(err
                            .with_detail("invocationId", invocation_id)
                            .with_internal(internal))
                    }
                    DomainReceipt::Cancelled { .. } => Err(ExecutionError::new(
                        ErrorCode::ExecutionFailed,
                        "The backend cancelled the call.",
                        Retry::No,
                    )
                    .with_detail("invocationId", invocation_id)
                    .with_internal(internal)),
                }
            }
            GovernedOutcome::Unknown { internal, .. } => {
                Err(outcome_unknown(invocation_id).with_internal(internal.clone()))
            }
            GovernedOutcome::Rejected { error, .. } => {
                Err(map_orpc_error(error).with_detail("invocationId", invocation_id))
            }
        }
    }

    /// [`GovernedOutcome::to_result`] as the wire result for the agent.
    pub fn to_invocation_result(&self) -> AgentInvocationResult {
        let invocation_id = self.invocation_id().to_string();
        match self.to_result() {
            Ok(output) => AgentInvocationResult::Success {
                invocation_id,
                output,
            },
            Err(e) => AgentInvocationResult::Error {
                invocation_id,
                error: e.to_agent_error(),
            },
        }
    }
}

fn outcome_unknown(invocation_id: String) -> ExecutionError {
    ExecutionError::new(
        ErrorCode::DomainOutcomeUnknown,
        "The backend's outcome is unknown; the effect may have happened. It is reconciled by invocation id, not retried.",
        Retry::No,
    )
    .with_detail("invocationId", invocation_id)
}

/// Which bridge call produced an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomePhase {
    /// The executor's `invoke`.
    Invoke,
    /// [`GovernedOrpcAgentBridge::reconcile`] (`getInvocation`).
    Reconcile,
    /// [`GovernedOrpcAgentBridge::resume`].
    Resume,
}

/// Context of one outcome for the observer.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeInfo {
    /// The invocation id sent to the backend.
    pub invocation_id: String,
    /// Which call produced it.
    pub phase: OutcomePhase,
    /// Dotted path (known for [`OutcomePhase::Invoke`]).
    pub path: Option<String>,
    /// Canonical capability id sent (known for [`OutcomePhase::Invoke`]).
    pub capability_id: Option<String>,
    /// The invoking consumer (known for [`OutcomePhase::Invoke`]).
    pub consumer: Option<AgentConsumer>,
}

/// What an observer may return: an error is logged and otherwise ignored.
pub type ObserverResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// The synchronous `on_outcome` observer: correlate approvals,
/// invalidate caches after completed receipts. Not durable storage and not
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

/// Options of [`create_governed_orpc_agent_bridge`].
#[derive(Clone)]
pub struct GovernedBridgeOptions {
    /// The backend's capability client, authenticated as the requester.
    pub client: Arc<dyn CapabilityClient>,
    /// The manifest (usually `create_orpc_agent_manifest(describe())`).
    pub manifest: AgentManifest,
    /// The outcome observer.
    pub on_outcome: Option<Arc<dyn OutcomeObserver>>,
    /// Extra per-call headers for `invoke` (e.g.
    /// [`crate::bridge::invocation_id_header`]).
    pub call_context: Option<Arc<dyn CallContext>>,
}

impl GovernedBridgeOptions {
    /// Options with no observer and no call context.
    pub fn new(client: Arc<dyn CapabilityClient>, manifest: AgentManifest) -> Self {
        Self {
            client,
            manifest,
            on_outcome: None,
            call_context: None,
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
        F: Fn(&crate::executor::ProcedureCallInfo) -> crate::bridge::client::Headers
            + MaybeSend
            + MaybeSync
            + 'static,
    {
        self.call_context = Some(Arc::new(call_context));
        self
    }
}

/// What [`create_governed_orpc_agent_bridge`] returns.
#[derive(Clone)]
pub struct GovernedOrpcAgentBridge {
    /// One reference per manifest path.
    pub refs: BridgeRefs,
    /// Dispatches calls through the gateway's `invoke`.
    pub executor: Arc<dyn AgentProcedureExecutor>,
    inner: Arc<GovernedInner>,
}

struct GovernedInner {
    client: Arc<dyn CapabilityClient>,
    manifest: AgentManifest,
    on_outcome: Option<Arc<dyn OutcomeObserver>>,
    call_context: Option<Arc<dyn CallContext>>,
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
    /// Reconciles an invocation by id through the backend's
    /// `getInvocation` (after `DOMAIN_OUTCOME_UNKNOWN`, or after a
    /// restart). The observer sees the outcome. Never re-dispatches.
    ///
    /// # Errors
    /// The failed `getInvocation` call itself; `NOT_FOUND` from the gateway
    /// means it has no record of the id.
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
        let receipt = self
            .inner
            .client
            .get_invocation(invocation_id, options)
            .await?;
        let outcome = GovernedOutcome::classify(invocation_id, Ok(receipt));
        self.inner.observe(
            &outcome,
            &phase_info(invocation_id, OutcomePhase::Reconcile),
        );
        Ok(outcome)
    }

    /// Resumes an invocation after its backend approval was decided, through
    /// the backend's `resume` with the requester's fresh authority (the
    /// capability client's own credentials at this moment). It never
    /// re-dispatches the UI call through the registry and needs no local
    /// confirmation: a local confirmation cannot satisfy a domain approval.
    /// Classified like an `invoke` answer (a still-pending approval is
    /// `approval-required` again).
    pub async fn resume(&self, invocation_id: &str) -> GovernedOutcome {
        self.resume_with(invocation_id, CallOptions::default())
            .await
    }

    /// [`Self::resume`] with per-call options: pass the requester's current
    /// credentials in `options.headers` (e.g. a freshly issued
    /// `authorization`; `HttpOrpcClient` lets it replace the transport's
    /// header of the same name) when the capability client's own
    /// credentials may be stale.
    pub async fn resume_with(&self, invocation_id: &str, options: CallOptions) -> GovernedOutcome {
        let answer = self.inner.client.resume(invocation_id, options).await;
        let outcome = GovernedOutcome::classify(invocation_id, answer);
        self.inner
            .observe(&outcome, &phase_info(invocation_id, OutcomePhase::Resume));
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
}

struct GovernedExecutor {
    inner: Arc<GovernedInner>,
}

impl AgentProcedureExecutor for GovernedExecutor {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(async move {
            let inner = &self.inner;
            let Some(tool) = inner.manifest.tool(&request.path) else {
                return Err(not_in_manifest(&request.path));
            };
            if request.info.cancellation.is_cancelled() {
                return Err(cancelled());
            }
            let capability_id = canonical_capability_id(&request.path, tool);
            let invocation_id = request.info.invocation_id.to_string();
            let invoke = CapabilityInvokeRequest {
                capability_id: capability_id.clone(),
                invocation_id: invocation_id.clone(),
                contract_digest: tool.contract_digest.clone(),
                input: request.input,
            };
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
            let answer = inner.client.invoke(invoke, options).await;
            let outcome = GovernedOutcome::classify(&invocation_id, answer);
            let info = OutcomeInfo {
                invocation_id,
                phase: OutcomePhase::Invoke,
                path: Some(request.path.to_string()),
                capability_id: Some(capability_id),
                consumer: Some(request.info.consumer),
            };
            inner.observe(&outcome, &info);
            outcome.to_result()
        })
    }
}
