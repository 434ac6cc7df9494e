//! oRPC bridges (`docs/bridges.md`): how procedure references reach a real oRPC
//! backend.
//!
//! * [`client`] — the [`OrpcClient`] seam every transport implements and
//!   the RPC wire codec (URLs, request envelope, response and error
//!   decoding, `meta` codes 0–7); wasm-compatible.
//! * [`ordinary`] — [`create_orpc_agent_bridge`]: refs for the manifest's
//!   paths and an executor calling the app's oRPC client, with the error
//!   mapping of `docs/bridges.md`.
//! * [`governed`] — [`create_governed_orpc_agent_bridge`]: an executor that
//!   dispatches through orpc-agent's capability gateway (`describe`,
//!   `invoke`, `getInvocation`, `getApproval`, `resumeApproval`) with the
//!   descriptor's capability id, a stable invocation id, `correlationId`
//!   and the contract digest; the outcome and code tables of
//!   `docs/bridges.md`, reconciliation and approval resumption.
//! * [`limits`] — [`ClientLimits`] (response size, connect and total
//!   timeouts, with defaults) and [`LimitedBody`], the incremental size cap
//!   every transport reads through; wasm-compatible.
//! * [`sanitize`] — [`safe_identifier`], the one gate every server-derived
//!   value passes before it reaches an agent-facing result.
//! * `http` (cargo feature `http`) — [`http::HttpOrpcClient`], the reqwest
//!   transport.
//! * `tls` (cargo feature `rustls`) — `tls::TlsRoots`, the roots its
//!   https connections trust.

pub mod client;
pub mod governed;
#[cfg(feature = "http")]
pub mod http;
pub mod limits;
pub mod ordinary;
pub mod sanitize;
#[cfg(all(feature = "rustls", not(target_arch = "wasm32")))]
pub mod tls;

pub use client::{
    CallMethod, CallOptions, Headers, MetaEntry, MetaPathItem, MetaType, OrpcCallError, OrpcClient,
    OrpcError, PayloadError, UnexpectedReason,
};
pub use governed::{
    create_governed_orpc_agent_bridge, ApprovalDecisionRecord, ApprovalStatus, CapabilityClient,
    CapabilityPaths, CorrelationIds, DescribeScope, GatewayApproval, GatewayFailure,
    GatewayOutcome, GovernedBridgeOptions, GovernedOrpcAgentBridge, GovernedOutcome,
    InvocationReceipt, InvokeRequest, ObserverResult, OrpcCapabilityClient, OutcomeInfo,
    OutcomeObserver, OutcomePhase, ReceiptState, ResumeApprovalRequest, UnknownReason,
    MAX_GATEWAY_ID_CHARS,
};
#[cfg(feature = "http")]
pub use http::HttpOrpcClient;
pub use limits::{ClientLimits, LimitedBody};
pub use ordinary::{
    create_orpc_agent_bridge, invocation_id_header, map_orpc_error, BridgeRefs, CallContext,
    OrpcAgentBridge, OrpcAgentBridgeOptions, INVOCATION_ID_HEADER,
};
pub use sanitize::{safe_identifier, MAX_IDENTIFIER_CHARS};
#[cfg(all(feature = "rustls", not(target_arch = "wasm32")))]
pub use tls::{TlsError, TlsRoots};

#[cfg(test)]
mod tests;
