//! Leptos 0.8 (client-side rendering) hooks for agent-surface
//! (`docs/frameworks.md`).
//!
//! A page provides one [`AgentSurface`] near the root of its component
//! tree ([`provide_agent_surface`]); components then register what the
//! agent may do *while they are mounted*:
//!
//! ```ignore
//! use agent_surface_leptos::prelude::*;
//! use leptos::prelude::*;
//!
//! #[component]
//! fn DevicesTable() -> Result<impl IntoView, RegistrationError> {
//!     let selection = RwSignal::new(Vec::<String>::new());
//!     use_agent_procedure(
//!         AgentProcedureBinding::new(api::devices::disable())
//!             // `bind` runs at execution time: read untracked.
//!             .bind(move || DisableSelection { device_ids: selection.get_untracked(), reason: None })
//!             // `when` and `describe` are tracked: when `selection`
//!             // changes, the surface is re-announced. No notify anywhere.
//!             .when(move || !selection.get().is_empty())
//!             .confirmation(ConfirmationLevel::Required),
//!     )?;
//!     Ok(view! { /* … */ })
//! }
//! ```
//!
//! (the whole page, compiled and run: `tests/frameworks.rs`, quoted by
//! `docs/frameworks.md`; [`prelude`] has every name it uses).
//!
//! Lifecycle (the seed's `useAgentProcedure`):
//!
//! * [`use_agent_procedure`] and [`use_agent_component`] register when the
//!   component runs (it mounts) and unregister in `on_cleanup` (it
//!   unmounts): the agent host's tool list follows the page. The handles
//!   they return are `Copy`; dropping one unregisters nothing
//!   ([`AgentRegistration::unregister`] does, earlier).
//! * [`ConfirmationDialog`] takes `class`, `approve_class`,
//!   `reject_class` and a `render` function of the [`HeldCall`] to
//!   restyle it.
//! * A reactive effect per registration evaluates its `when()`,
//!   unavailable reason and `describe()` ([`agent_surface::page::PageSurface::track`]);
//!   Leptos records the signals they read, and when one changes the effect
//!   runs again and re-announces the surface if what the agent sees
//!   changed.
//! * `bind` is never tracked nor cached: the registry calls it when a call
//!   executes (read signals with `get_untracked` there).
//! * A procedure registered in a component that called
//!   [`use_agent_component`] (or in one of its descendants) records that
//!   component as its context, unless the binding names one itself;
//!   elsewhere it is page-level.
//! * Calls that need the user's confirmation wait in the page:
//!   [`use_held_confirmations`] gives them as data (description,
//!   effective input, summary, approve, reject) for the page's own
//!   dialog, or
//!   [`ConfirmationDialog`] draws a plain one.
//!
//! With feature `ag-ui`, [`use_ag_ui_agent`] puts an AG-UI agent (an
//! agent whose loop runs on a server) in a component: its thread, status
//! and streamed text as signals for a chat panel, its tool calls run
//! through the page's pipeline (`docs/frameworks.md`, "Leptos:
//! use_ag_ui_agent").
//!
//! Reading a signal with `.get()` in `when`/`describe` is right (the
//! effect tracks it). When the registry evaluates the same closure outside
//! any effect (a snapshot, a call, the registration itself), the
//! evaluation scope [`provide_agent_surface`] sets reads untracked, so
//! Leptos debug builds log no "outside a reactive tracking context"
//! warning. [`BindingSignals`] and [`CapabilitySignals`] take a `Signal`
//! or a `Memo` where the builders take a closure.
//!
//! Everything is wasm32-only; on other targets this crate is empty.
#![forbid(unsafe_code)]

#[cfg(all(target_arch = "wasm32", feature = "ag-ui"))]
mod agui;
#[cfg(target_arch = "wasm32")]
mod confirmations;
#[cfg(target_arch = "wasm32")]
mod hooks;
#[cfg(target_arch = "wasm32")]
pub mod prelude;
#[cfg(target_arch = "wasm32")]
mod provider;
#[cfg(target_arch = "wasm32")]
mod signals;

#[cfg(all(target_arch = "wasm32", feature = "ag-ui"))]
pub use agui::{transcript, use_ag_ui_agent, AgUiHandle, ChatEntry};
#[cfg(target_arch = "wasm32")]
pub use confirmations::{use_held_confirmations, ConfirmationDialog, HeldCall, RenderHeld};
#[cfg(target_arch = "wasm32")]
pub use hooks::{use_agent_component, use_agent_procedure, AgentComponent, AgentRegistration};
#[cfg(target_arch = "wasm32")]
pub use provider::{
    provide_agent_surface, try_use_agent_surface, use_agent_surface, AgentSurface, ConnectError,
};
#[cfg(target_arch = "wasm32")]
pub use signals::{BindingSignals, CapabilitySignals};
