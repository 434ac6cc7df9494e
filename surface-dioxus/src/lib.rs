//! Dioxus 0.7 (web) hooks for agent-surface (`docs/frameworks.md`).
//!
//! A page provides one [`AgentSurface`] near the root of its component
//! tree ([`provide_agent_surface`]); components then register what the
//! agent may do *while they are mounted*:
//!
//! ```ignore
//! #[component]
//! fn DevicesTable() -> Element {
//!     let selection = use_signal(Vec::<String>::new);
//!     let disable = use_agent_procedure(
//!         AgentProcedureBinding::new(api::devices::disable())
//!             // `bind` runs at execution time: read untracked.
//!             .bind(move || DisableSelection { device_ids: selection.peek().clone() })
//!             // `when` and `describe` are tracked: when `selection`
//!             // changes, the surface is re-announced. No notify anywhere.
//!             .when(move || !selection.read().is_empty())
//!             .confirmation(ConfirmationLevel::Required),
//!     );
//!     rsx! { /* … */ }
//! }
//! ```
//!
//! Lifecycle (the seed's `useAgentProcedure`):
//!
//! * [`use_agent_procedure`] and [`use_agent_component`] are hooks: call
//!   them unconditionally, in the same order on every render. They
//!   register on the component's first render (`use_hook`) and unregister
//!   when it unmounts (`use_drop`): the agent host's tool list follows the
//!   page. Later renders return the first render's result and ignore the
//!   binding they are given (its closures read signals, so it need not
//!   change).
//! * A `use_effect` per registration evaluates its `when()`, unavailable
//!   reason and `describe()` ([`agent_surface::page::PageSurface::track`]);
//!   Dioxus records the signals they read, and when one changes the effect
//!   runs again and re-announces the surface if what the agent sees
//!   changed. The registration itself is evaluated outside the
//!   component's reactive context, so the component does not re-render
//!   for what its `when()` reads.
//! * `bind` is never tracked nor cached: the registry calls it when a call
//!   executes (read signals with `peek()` there).
//! * [`use_agent_component`] provides its [`AgentComponent`] as Dioxus
//!   context (scoped to the component's subtree): procedures registered
//!   after it in the same component, and in its descendants, record the
//!   component as their context unless the binding names one; elsewhere
//!   they are page-level.
//! * Calls that need the user's confirmation wait in the page:
//!   [`use_held_confirmations`] gives them as data (description,
//!   effective input, summary, approve, reject) for the page's own
//!   dialog, or
//!   [`ConfirmationDialog`] draws a plain one.
//! * With the cargo feature `ag-ui`, `use_ag_ui_agent` gives a component
//!   a chat with an AG-UI agent server (`agent_surface::agui`): the
//!   page's live surface as the agent's tools, its calls through the
//!   page's pipeline, the thread, status and last turn as signals.
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

#[cfg(all(target_arch = "wasm32", feature = "ag-ui"))]
pub use agui::{use_ag_ui_agent, UseAgUiAgent};
#[cfg(target_arch = "wasm32")]
pub use confirmations::{use_held_confirmations, ConfirmationDialog, HeldCall};
#[cfg(target_arch = "wasm32")]
pub use hooks::{use_agent_component, use_agent_procedure, AgentComponent, AgentRegistration};
#[cfg(target_arch = "wasm32")]
pub use provider::{
    provide_agent_surface, try_use_agent_surface, use_agent_surface, AgentSurface, ConnectError,
};
