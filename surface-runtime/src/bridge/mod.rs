//! oRPC bridges (SPEC §8): how procedure references reach a real oRPC
//! backend.
//!
//! * [`client`] — the [`OrpcClient`] seam every transport implements and
//!   the RPC wire codec (URLs, request envelope, response and error
//!   decoding, `meta` codes 0–7); wasm-compatible.
//! * [`ordinary`] — [`create_orpc_agent_bridge`]: refs for the manifest's
//!   paths and an executor calling the app's oRPC client, with the error
//!   mapping of SPEC §8.
//! * [`governed`] — [`create_governed_orpc_agent_bridge`]: an executor that
//!   dispatches through the backend's capability gateway with the canonical
//!   capability id, a stable invocation id and the contract digest, the
//!   outcome table of SPEC §8, reconciliation and approval resumption.
//! * `http` (cargo feature `http`) — [`http::HttpOrpcClient`], the reqwest
//!   transport.

pub mod client;
pub mod governed;
#[cfg(feature = "http")]
pub mod http;
pub mod ordinary;

pub use client::{
    CallMethod, CallOptions, Headers, MetaEntry, MetaPathItem, MetaType, OrpcCallError, OrpcClient,
    OrpcError,
};
pub use governed::{
    create_governed_orpc_agent_bridge, CapabilityClient, CapabilityInvokeRequest, CapabilityPaths,
    DomainFailure, DomainReceipt, GovernedBridgeOptions, GovernedOrpcAgentBridge, GovernedOutcome,
    ObserverResult, OrpcCapabilityClient, OutcomeInfo, OutcomeObserver, OutcomePhase,
    UnknownReason,
};
#[cfg(feature = "http")]
pub use http::HttpOrpcClient;
pub use ordinary::{
    create_orpc_agent_bridge, invocation_id_header, map_orpc_error, BridgeRefs, CallContext,
    OrpcAgentBridge, OrpcAgentBridgeOptions, INVOCATION_ID_HEADER,
};

#[cfg(test)]
mod tests;
