//! Everything a Leptos page's agent surface names, in one import
//! (`docs/frameworks.md`, "Leptos"):
//!
//! ```ignore
//! use agent_surface_leptos::prelude::*;
//! use leptos::prelude::*;
//! ```
//!
//! | from | names |
//! |---|---|
//! | this crate | [`provide_agent_surface`], [`use_agent_surface`], [`try_use_agent_surface`], [`use_agent_procedure`], [`use_agent_component`], [`use_held_confirmations`], [`ConfirmationDialog`], [`AgentSurface`], [`AgentRegistration`], [`AgentComponent`], [`HeldCall`], [`RenderHeld`], [`ConnectError`], and the signal builders [`BindingSignals`] and [`CapabilitySignals`] |
//! | `agent_surface::prelude` | `manifest!`, `#[agent_procedure]`, `view_inputs!`, `AgentProcedureBinding`, `ConfirmationLevel`, `BoundInput`, `ComponentDefinition`, `ViewCapability`, `ViewEffect`, `SurfaceRegistry`, `RegistrationHandle`, `RegistrationError`, `AgentConsumer`, `AgentInvocation`, `AgentInvocationResult`, `SurfaceSnapshot`, `PageSurface`, `json!` |
//! | `agent_surface::browser` | [`FetchOrpcClient`] (the oRPC bridge over `fetch`), [`SessionSocketOptions`], [`SocketEvent`], [`same_origin_socket_url`] |
//! | `agent_surface::host` | [`BrowserSurfaceIdentity`] (who the page is, for [`AgentSurface::session_options`]) |
//! | with feature `ag-ui` | `use_ag_ui_agent`, `AgUiHandle`, `ChatEntry`, `transcript` (this crate); `AgUiAgent`, `AgUiOptions`, `AgUiStatus`, `AgUiMessage`, `AgUiStreaming`, `AgUiTurn`, `AgUiError`, `PendingApproval` (`agent_surface::agui`); `FetchAgUiTransport` (`agent_surface::agui`) |

pub use agent_surface::browser::{
    same_origin_socket_url, FetchOrpcClient, SessionSocketOptions, SocketEvent,
};
pub use agent_surface::host::BrowserSurfaceIdentity;
pub use agent_surface::prelude::*;

#[cfg(feature = "ag-ui")]
pub use crate::agui::{transcript, use_ag_ui_agent, AgUiHandle, ChatEntry};
#[cfg(feature = "ag-ui")]
pub use agent_surface::agui::{
    AgUiAgent, AgUiError, AgUiMessage, AgUiOptions, AgUiStatus, AgUiStreaming, AgUiTurn,
    FetchAgUiTransport, PendingApproval,
};

pub use crate::confirmations::{use_held_confirmations, ConfirmationDialog, HeldCall, RenderHeld};
pub use crate::hooks::{
    use_agent_component, use_agent_procedure, AgentComponent, AgentRegistration,
};
pub use crate::provider::{
    provide_agent_surface, try_use_agent_surface, use_agent_surface, AgentSurface, ConnectError,
};
pub use crate::signals::{BindingSignals, CapabilitySignals};
