//! Everything a Dioxus page's agent surface names, in one import
//! (`docs/frameworks.md`, "Dioxus"):
//!
//! ```ignore
//! use agent_surface_dioxus::prelude::*;
//! use dioxus::prelude::*;
//! ```
//!
//! | from | names |
//! |---|---|
//! | this crate | [`provide_agent_surface`], [`use_agent_surface`], [`try_use_agent_surface`], [`use_agent_procedure`], [`use_agent_component`], [`use_held_confirmations`], [`ConfirmationDialog`], [`AgentSurface`], [`AgentRegistration`], [`AgentComponent`], [`HeldCall`], [`ConnectError`] |
//! | `agent_surface::prelude` | `manifest!`, `#[agent_procedure]`, `view_inputs!`, `AgentProcedureBinding`, `ConfirmationLevel`, `BoundInput`, `ComponentDefinition`, `ViewCapability`, `ViewEffect`, `SurfaceRegistry`, `RegistrationHandle`, `RegistrationError`, `AgentConsumer`, `AgentInvocation`, `AgentInvocationResult`, `SurfaceSnapshot`, `PageSurface`, `json!` |
//! | `agent_surface::browser` | [`FetchOrpcClient`], [`SessionSocketOptions`], [`SocketEvent`], [`same_origin_socket_url`] |
//! | `agent_surface::host` | [`BrowserSurfaceIdentity`] |
//! | with feature `ag-ui` | `use_ag_ui_agent`, `UseAgUiAgent`; from `agent_surface::agui`: `AgUiAgent`, `AgUiOptions`, `AgUiLimits`, `AgUiError`, `AgUiMessage`, `AgUiStatus`, `AgUiStreaming`, `AgUiTurn`, `PendingApproval`, `FetchAgUiTransport` |

pub use agent_surface::browser::{
    same_origin_socket_url, FetchOrpcClient, SessionSocketOptions, SocketEvent,
};
pub use agent_surface::host::BrowserSurfaceIdentity;
pub use agent_surface::prelude::*;

#[cfg(feature = "ag-ui")]
pub use agent_surface::agui::{
    AgUiAgent, AgUiError, AgUiLimits, AgUiMessage, AgUiOptions, AgUiStatus, AgUiStreaming,
    AgUiTurn, FetchAgUiTransport, PendingApproval,
};

#[cfg(feature = "ag-ui")]
pub use crate::agui::{use_ag_ui_agent, UseAgUiAgent};
pub use crate::confirmations::{use_held_confirmations, ConfirmationDialog, HeldCall};
pub use crate::hooks::{
    use_agent_component, use_agent_procedure, AgentComponent, AgentRegistration,
};
pub use crate::provider::{
    provide_agent_surface, try_use_agent_surface, use_agent_surface, AgentSurface, ConnectError,
};
