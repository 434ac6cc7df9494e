//! Held confirmations as data, and a plain dialog.

use agent_surface::host::{ConfirmationDecisionError, HeldConfirmation};
use leptos::prelude::*;
use serde_json::Value;
use std::rc::Rc;

use crate::provider::{use_agent_surface, AgentSurface};

/// One call waiting for the user's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldCall {
    /// What the session holds: the capability, its description, the
    /// effective `input` (bound values included: exactly what the server
    /// will receive if approved now) and the registry's `summary` text.
    pub held: HeldConfirmation,
    surface: SurfaceKey,
}

#[derive(Clone, Copy)]
struct SurfaceKey(AgentSurface);

impl PartialEq for SurfaceKey {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for SurfaceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentSurface")
    }
}

impl HeldCall {
    /// The capability id (`domain:devices.disable`).
    pub fn capability_id(&self) -> &str {
        &self.held.capability_id
    }

    /// The effective input the server will receive if approved now (bound
    /// values included; `null` when the session could not show it).
    pub fn effective_input(&self) -> &Value {
        &self.held.input
    }

    /// The capability's description (a procedure's manifest text; the
    /// agent's contextual note is not part of what is approved).
    pub fn description(&self) -> &str {
        &self.held.description
    }

    /// The registry's one-line summary: `"<description> — input: <input
    /// as JSON>"`.
    pub fn summary(&self) -> &str {
        &self.held.summary
    }

    /// Approves: the call runs (unless the view changed since it asked,
    /// which the registry refuses as a different call).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`] (already decided, expired, …).
    pub fn approve(&self) -> Result<(), ConfirmationDecisionError> {
        self.surface.0.approve(&self.held.confirmation_id)
    }

    /// Rejects: the call is answered `CONFIRMATION_INVALID` (`denied`,
    /// retry `no`: the user declined it).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`].
    pub fn reject(&self) -> Result<(), ConfirmationDecisionError> {
        self.surface.0.reject(&self.held.confirmation_id)
    }
}

/// The calls waiting for the user's decision, oldest first, as a signal:
/// a page draws its own dialog from it.
///
/// # Panics
/// Without an [`AgentSurface`] in the context ([`use_agent_surface`]).
#[track_caller]
pub fn use_held_confirmations() -> Signal<Vec<HeldCall>> {
    let surface = use_agent_surface();
    let held = surface.held;
    Signal::derive(move || {
        held.get()
            .into_iter()
            .map(|held| HeldCall {
                held,
                surface: SurfaceKey(surface),
            })
            .collect()
    })
}

/// How [`ConfirmationDialog`] draws a held call instead of its own body:
/// a function of the [`HeldCall`] (the oldest waiting one; call its
/// [`HeldCall::approve`] and [`HeldCall::reject`] from the view's
/// buttons) to the view. Built from any `Fn(HeldCall) -> impl IntoView`
/// (`render=|call: HeldCall| view! { … }`).
#[derive(Clone)]
pub struct RenderHeld(Rc<dyn Fn(HeldCall) -> AnyView>);

impl<F, V> From<F> for RenderHeld
where
    F: Fn(HeldCall) -> V + 'static,
    V: IntoView + 'static,
{
    fn from(render: F) -> Self {
        RenderHeld(Rc::new(move |call| render(call).into_any()))
    }
}

impl RenderHeld {
    /// The view of `call`.
    pub fn render(&self, call: HeldCall) -> AnyView {
        (self.0)(call)
    }
}

/// The classes of the default body's parts: the component's own
/// (`agent-confirmation`, …) followed by the page's, if given.
fn classes(own: &'static str, extra: MaybeProp<String>) -> impl Fn() -> String + Copy {
    move || match extra.get() {
        Some(extra) if !extra.is_empty() => format!("{own} {extra}"),
        _ => own.to_string(),
    }
}

/// A confirmation dialog for the oldest held call: what the agent asked
/// for, the effective input, Approve and Reject; absent while nothing is
/// held. When that call is decided the next one (if any) shows.
///
/// Its elements carry ids and classes for the page's CSS:
/// `#agent-confirmation` (`.agent-confirmation`, `role="dialog"`),
/// `.agent-confirmation-title`, `.agent-confirmation-description`,
/// `#agent-confirmation-input`, `#agent-approve`
/// (`.agent-confirmation-approve`), `#agent-reject`
/// (`.agent-confirmation-reject`); an error deciding shows in
/// `.agent-confirmation-error`.
///
/// Restyling (`docs/frameworks.md`, "Restyling the confirmation dialog"):
/// `class`, `approve_class` and `reject_class` add the page's classes to
/// the dialog and its buttons (`<ConfirmationDialog class="card"
/// approve_class="btn btn-primary"/>`); `render` replaces the dialog's
/// body with the page's own view of the [`HeldCall`] (the `<aside>` with
/// its id, role and classes stays around it), whose buttons call
/// `call.approve()` / `call.reject()`.
#[component]
pub fn ConfirmationDialog(
    /// Classes added to the dialog's (`agent-confirmation`).
    #[prop(optional, into)]
    class: MaybeProp<String>,
    /// Classes added to the Approve button's (`agent-confirmation-approve`).
    #[prop(optional, into)]
    approve_class: MaybeProp<String>,
    /// Classes added to the Reject button's (`agent-confirmation-reject`).
    #[prop(optional, into)]
    reject_class: MaybeProp<String>,
    /// The page's own body for the held call, instead of the default one.
    #[prop(optional, into)]
    render: Option<RenderHeld>,
) -> impl IntoView {
    let calls = use_held_confirmations();
    let current = move || calls.get().into_iter().next();
    let custom = render.is_some();
    let render = StoredValue::new_local(render);
    // Chosen once per showing (nothing reactive is read here); the custom
    // body follows the oldest held call, the default one reads it itself.
    let body = move || {
        if custom {
            let oldest = move || {
                let call = current()?;
                render.with_value(|r| r.as_ref().map(|r| r.render(call)))
            };
            oldest.into_any()
        } else {
            default_body(current, approve_class, reject_class).into_any()
        }
    };
    view! {
        <Show when=move || current().is_some()>
            <aside id="agent-confirmation" class=classes("agent-confirmation", class) role="dialog">
                {body}
            </aside>
        </Show>
    }
}

/// The default body of [`ConfirmationDialog`].
fn default_body(
    current: impl Fn() -> Option<HeldCall> + Copy + Send + Sync + 'static,
    approve_class: MaybeProp<String>,
    reject_class: MaybeProp<String>,
) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let decide = move |approve: bool| {
        if let Some(call) = current() {
            let outcome = if approve {
                call.approve()
            } else {
                call.reject()
            };
            error.set(outcome.err().map(|e| e.to_string()));
        }
    };
    view! {
        <h2 class="agent-confirmation-title">
            {move || current().map(|c| format!("The agent wants to run {}", c.capability_id())).unwrap_or_default()}
        </h2>
        <p class="agent-confirmation-description">
            {move || current().map(|c| c.description().to_string()).unwrap_or_default()}
        </p>
        <pre id="agent-confirmation-input">
            {move || current().map(|c| serde_json::to_string_pretty(c.effective_input()).unwrap_or_default()).unwrap_or_default()}
        </pre>
        <Show when=move || error.get().is_some()>
            <p class="agent-confirmation-error">{move || error.get().unwrap_or_default()}</p>
        </Show>
        <button id="agent-reject" class=classes("agent-confirmation-reject", reject_class) on:click=move |_| decide(false)>"Reject"</button>
        <button id="agent-approve" class=classes("agent-confirmation-approve", approve_class) on:click=move |_| decide(true)>"Approve"</button>
    }
}
