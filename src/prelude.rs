//! The names a page's binding and registration code uses, in one import
//! (`use agent_surface::prelude::*;`; `docs/frameworks.md`, "Leptos":
//! `agent_surface_leptos::prelude` re-exports this and adds its hooks).
//!
//! | name | what it is |
//! |---|---|
//! | `manifest!`, `#[agent_procedure]`, `view_inputs!` | the macros ([`crate::manifest!`], [`crate::agent_procedure`], [`crate::view_inputs!`]) |
//! | [`AgentProcedureBinding`], [`ConfirmationLevel`], [`BoundInput`] | a procedure binding and its confirmation level |
//! | [`ComponentDefinition`], [`ViewCapability`], [`ViewEffect`] | a component and its view capabilities |
//! | [`SurfaceRegistry`], [`RegistrationHandle`], [`RegistrationError`] | the registry, what a registration returns, why one is refused |
//! | [`AgentConsumer`], [`AgentInvocation`], [`AgentInvocationResult`], [`SurfaceSnapshot`] | what a test of the surface calls and reads |
//! | [`PageSurface`] | the page's registry, bridge and session (`agent_surface::page`) |
//! | `json!` | `serde_json::json!` (`agent_surface::serde_json`: no serde_json dependency of your own needed) |

pub use crate::page::PageSurface;
pub use crate::serde_json::json;
pub use crate::{agent_procedure, manifest, view_inputs};
pub use crate::{
    AgentConsumer, AgentInvocation, AgentInvocationResult, AgentProcedureBinding, BoundInput,
    ComponentDefinition, ConfirmationLevel, RegistrationError, RegistrationHandle, SurfaceRegistry,
    SurfaceSnapshot, ViewCapability, ViewEffect,
};
