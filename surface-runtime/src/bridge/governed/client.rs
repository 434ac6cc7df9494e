//! The capability gateway as a client ([`CapabilityClient`]) and its oRPC
//! implementation ([`OrpcCapabilityClient`]): five procedures of a flat
//! router under the backend's prefix (`docs/bridges.md`, "Governed
//! bridge").

use serde::Deserialize;
use serde_json::{json, Value};

use super::wire::{
    not_shaped, parse_approval, parse_outcome, parse_receipt, DescribeScope, GatewayApproval,
    GatewayOutcome, InvocationReceipt, InvokeRequest, ResumeApprovalRequest,
};
use crate::bridge::client::{CallOptions, OrpcCallError, OrpcClient};
use crate::manifest::CapabilityDescriptor;
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// The backend's capability gateway: `describe`, `invoke`,
/// `getInvocation`, `getApproval`, `resumeApproval`
/// ([`OrpcCapabilityClient`] over oRPC). Each call carries
/// [`CallOptions`] (headers, cancellation); the implementation's own
/// transport carries the requester's authentication. Approval decisions
/// are not part of it: they are the application's own endpoint.
pub trait CapabilityClient: MaybeSend + MaybeSync {
    /// The descriptors the caller may see (feed them to
    /// [`crate::manifest::create_orpc_agent_manifest`]).
    ///
    /// # Errors
    /// The failed call; an answer that is not a list of version-1
    /// descriptors is [`OrpcCallError::UnexpectedResponse`].
    fn describe(
        &self,
        scope: DescribeScope,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>>;

    /// Dispatches one call; returns its outcome.
    ///
    /// # Errors
    /// The failed call; an answer that is not an outcome is
    /// [`OrpcCallError::UnexpectedResponse`].
    fn invoke(
        &self,
        request: InvokeRequest,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>>;

    /// The receipt of an invocation (reconciliation); `None` when the
    /// gateway has no record of the id.
    ///
    /// # Errors
    /// The failed call, or an answer that is neither a receipt nor `null`.
    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>>;

    /// An approval (its status, reasons, types, expiry); `None` when the
    /// gateway has none with this id.
    ///
    /// # Errors
    /// The failed call, or an answer that is neither an approval nor `null`.
    fn get_approval<'a>(
        &'a self,
        approval_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>>;

    /// Resumes a held invocation after its approval was decided, with the
    /// requester's fresh authority; returns the outcome (a still-pending
    /// approval answers the same `approval-required` outcome).
    ///
    /// # Errors
    /// As [`Self::invoke`].
    fn resume_approval(
        &self,
        request: ResumeApprovalRequest,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>>;
}

/// Router paths of the gateway's procedures, relative to the client's
/// base URL (the router's prefix, e.g. `https://app/capabilities`).
/// Defaults: the bare names `describe`, `invoke`, `getInvocation`,
/// `getApproval`, `resumeApproval`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapabilityPaths {
    /// Default `describe`.
    pub describe: String,
    /// Default `invoke`.
    pub invoke: String,
    /// Default `getInvocation`.
    pub get_invocation: String,
    /// Default `getApproval`.
    pub get_approval: String,
    /// Default `resumeApproval`.
    pub resume_approval: String,
}

impl Default for CapabilityPaths {
    fn default() -> Self {
        Self {
            describe: "describe".into(),
            invoke: "invoke".into(),
            get_invocation: "getInvocation".into(),
            get_approval: "getApproval".into(),
            resume_approval: "resumeApproval".into(),
        }
    }
}

/// [`CapabilityClient`] over any [`OrpcClient`] pointed at the gateway's
/// prefix (for example `HttpOrpcClient::new("https://app/capabilities")`).
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

    /// The router paths in use.
    pub fn paths(&self) -> &CapabilityPaths {
        &self.paths
    }
}

/// A request as the JSON the gateway reads (a derived `Serialize` of plain
/// strings and values cannot fail).
fn input_of(request: &impl serde::Serialize) -> Value {
    serde_json::to_value(request).unwrap_or(Value::Null)
}

impl<C: OrpcClient> CapabilityClient for OrpcCapabilityClient<C> {
    fn describe(
        &self,
        scope: DescribeScope,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>> {
        Box::pin(async move {
            let value = self
                .client
                .call(&self.paths.describe, Some(scope.to_input()), options)
                .await?;
            Vec::<CapabilityDescriptor>::deserialize(&value)
                .map_err(|e| not_shaped(&value, "a list of capability descriptors", &e))
        })
    }

    fn invoke(
        &self,
        request: InvokeRequest,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        Box::pin(async move {
            let input = input_of(&request);
            parse_outcome(
                self.client
                    .call(&self.paths.invoke, Some(input), options)
                    .await?,
            )
        })
    }

    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>> {
        Box::pin(async move {
            let input = json!({ "invocationId": invocation_id });
            let path = &self.paths.get_invocation;
            parse_receipt(self.client.call(path, Some(input), options).await?)
        })
    }

    fn get_approval<'a>(
        &'a self,
        approval_id: &'a str,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>> {
        Box::pin(async move {
            let input = json!({ "approvalId": approval_id });
            let path = &self.paths.get_approval;
            parse_approval(self.client.call(path, Some(input), options).await?)
        })
    }

    fn resume_approval(
        &self,
        request: ResumeApprovalRequest,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        Box::pin(async move {
            let input = input_of(&request);
            let path = &self.paths.resume_approval;
            parse_outcome(self.client.call(path, Some(input), options).await?)
        })
    }
}
