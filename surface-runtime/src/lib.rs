//! Runtime of agent-surface: the manifest model, the registry of live
//! procedure bindings and components, the snapshot (the agent's tool
//! catalog), the invocation pipeline, the oRPC bridges and the
//! browser-session protocol.
//!
//! The repository's `docs/design.md` maps every concept to its module;
//! `docs/pipeline.md`, `docs/bindings.md`, `docs/bridges.md` and
//! `docs/host.md` describe the rules the modules implement.
//!
//! # The registry in one page
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::{json, Value};
//! use surface_runtime::*;
//!
//! let authority = Authority::from_manifest(AgentManifest::from_json_str(r#"{"tools":{
//!   "devices.list":{"description":"List devices","inputSchema":{"type":"object"},"effect":"server-query"}}}"#).unwrap());
//! let registry = SurfaceRegistry::new(authority.clone());
//! // registry.set_procedure_executor(bridge.executor());
//! let list: AgentProcedureRef<Value, Value> =
//!     AgentProcedureRef::from_authority(&authority, "devices.list").unwrap();
//! let handle = registry
//!     .register_procedure(AgentProcedureBinding::new(list).when(|| true))
//!     .unwrap();
//! let snapshot = registry.snapshot(&AgentConsumer::embedded("user-1"));
//! assert_eq!(snapshot.procedures[0].procedure_id, "domain:devices.list");
//! drop(handle); // unregisters; surfaceVersion increases
//! assert!(registry.snapshot(&AgentConsumer::embedded("user-1")).procedures.is_empty());
//! ```
//!
//! Layers, each using only those below it (no module cycle):
//!
//! * [`pipeline`] — `invoke`, one function per phase; [`snapshot`] — the
//!   catalog and how it is built; both above
//! * [`registry`] — [`SurfaceRegistry`]: registration rules, the live
//!   entries, surface version, subscriptions, confirmation approval;
//!   above
//! * [`binding`] ([`AgentProcedureBinding`], the binding rules),
//!   [`component`] (view capabilities and their rules),
//!   [`confirmation`] (levels, issuance, approval, single use), [`policy`], [`audit`],
//!   [`executor`], [`authority`], [`procedure`] ([`AgentProcedureRef`]),
//!   [`invocation`] (the wire types), [`clock`] and [`cancellation`]
//!   (no async runtime is required), [`sync`].
//!
//! [`bridge`] (oRPC), [`host`] (browser sessions and the agent host) and
//! [`export`] (MCP / OpenAI / Anthropic tools) sit on top.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// On wasm32 the runtime is single-threaded and `MaybeSend`/`MaybeSync` are
// empty, so the shared `Arc`s hold values that are not `Send`: the same
// code serves both targets, and an `Rc` there would only split it.
#![cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]

mod admission;
#[cfg(feature = "ag-ui")]
pub mod agui;
pub mod audit;
pub mod authority;
pub mod binding;
pub mod bridge;
#[cfg(all(feature = "browser", target_arch = "wasm32"))]
pub mod browser;
pub(crate) mod budget;
mod callback;
pub mod cancellation;
pub mod clock;
pub mod component;
mod concurrency;
pub mod confirmation;
pub mod contract;
pub mod executor;
pub mod export;
pub mod format;
pub mod hash;
pub mod host;
pub mod invocation;
mod json;
mod ledger;
pub mod manifest;
pub mod page;
pub mod pattern;
pub mod pipeline;
pub mod policy;
pub mod procedure;
mod regexp;
mod registration;
pub mod registry;
#[doc(hidden)]
pub mod serde_helpers;
pub mod snapshot;
pub mod sync;
#[cfg(feature = "testing")]
pub mod testing;
pub mod validation;
#[cfg(all(feature = "browser", target_arch = "wasm32"))]
pub mod webmcp;

pub use authority::{Authority, AuthorityError, AuthorityProcedure};
pub use binding::{AgentProcedureBinding, BoundField, BoundInput, ProcedureInput};
pub use cancellation::Cancellation;
pub use executor::{
    executor_fn, AgentProcedureExecutor, ExecuteRequest, ExecutionError, FnExecutor,
    ProcedureCallInfo,
};
pub use invocation::{
    check_invocation_id, AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult,
    ConsumerKind, ErrorCode, InvalidInvocationId, Retry, MAX_INVOCATION_ID_CHARS,
};
pub use manifest::{AgentEffect, AgentManifest, ManifestError, ManifestIssue, ManifestTool};
pub use procedure::AgentProcedureRef;

pub use audit::{AuditEvent, Phase, RegistrationKind};
#[cfg(feature = "tokio")]
pub use clock::TokioTimer;
pub use clock::{Clock, ManualClock, SystemClock, Timer};
pub use component::{ComponentDefinition, ViewCapability, ViewEffect, ViewInput};
pub use confirmation::{
    ConfirmationError, ConfirmationLevel, ConfirmationState, PendingConfirmation,
};
pub use executor::ConfirmationInfo;
pub use policy::{
    AgentPolicy, Discovery, PolicyContext, PolicyDecision, PolicyExt, PolicyStage, Principal,
};
pub use registry::{
    ChangeReason, Observation, ObservedItem, RegistrationError, RegistrationHandle, Subscription,
    SurfaceChange, SurfaceRegistry, SurfaceRegistryBuilder,
};
pub use snapshot::{
    ActionDescriptor, AgentProcedureDescriptor, BindingSource, BoundFieldDescriptor,
    ComponentContext, ComponentDescriptor, ObservationDescriptor, SnapshotOptions, SurfaceRoute,
    SurfaceSnapshot, ViewCapabilityDescriptor,
};

/// Items the code generated by `surface-macros` names. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::authority::GeneratedProcedure;
    pub use crate::serde_helpers;
    pub use crate::validation;
    pub use crate::{format, pattern};
    pub use serde;
    pub use serde_json;
}
