//! Held confirmations as data, and a plain dialog.

use agent_surface::host::{ConfirmationDecisionError, HeldConfirmation};
use dioxus::prelude::*;
use serde_json::Value;

use crate::provider::{use_agent_surface, AgentSurface};

/// One call waiting for the user's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldCall {
    /// What the session holds: the capability, its description, the
    /// effective `input` (bound values included: exactly what the server
    /// will receive if approved now) and the registry's `summary` text.
    pub held: HeldConfirmation,
    surface: AgentSurface,
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
        self.surface.approve(&self.held.confirmation_id)
    }

    /// Rejects: the call is answered `CONFIRMATION_INVALID` (`denied`,
    /// retry `no`: the user declined it).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`].
    pub fn reject(&self) -> Result<(), ConfirmationDecisionError> {
        self.surface.reject(&self.held.confirmation_id)
    }
}

/// The calls waiting for the user's decision, oldest first, as a memo (a
/// read-only signal: reading it in a component re-renders the component
/// when the list changes); a page draws its own dialog from it. A hook.
///
/// # Panics
/// Without an [`AgentSurface`] in the context
/// ([`crate::use_agent_surface`]).
#[track_caller]
pub fn use_held_confirmations() -> Memo<Vec<HeldCall>> {
    let surface = use_agent_surface();
    let held = surface.held;
    use_memo(move || {
        held.read()
            .iter()
            .map(|held| HeldCall {
                held: held.clone(),
                surface,
            })
            .collect()
    })
}

/// A plain confirmation dialog for the oldest held call: what the agent
/// asked for, the effective input, Approve and Reject. Its elements carry
/// ids and classes for the page's CSS: `#agent-confirmation`
/// (`.agent-confirmation`), `.agent-confirmation-title`,
/// `.agent-confirmation-description`, `#agent-confirmation-input`,
/// `#agent-approve`, `#agent-reject`; an error deciding shows in
/// `.agent-confirmation-error`. Nothing is rendered while no call waits.
/// The buttons also carry `.agent-confirmation-approve` and
/// `.agent-confirmation-reject`; `class`, `approve_class` and
/// `reject_class` add the page's classes after the component's own
/// (`ConfirmationDialog { class: "card", approve_class: "btn btn-primary" }`
/// gives `class="agent-confirmation card"`: `docs/frameworks.md`,
/// "Dioxus"). A page that wants its own markup draws it from
/// [`use_held_confirmations`].
#[component]
pub fn ConfirmationDialog(
    /// Classes added to the dialog's (`agent-confirmation`).
    class: Option<String>,
    /// Classes added to the Approve button's (`agent-confirmation-approve`).
    approve_class: Option<String>,
    /// Classes added to the Reject button's (`agent-confirmation-reject`).
    reject_class: Option<String>,
) -> Element {
    let calls = use_held_confirmations();
    let mut error = use_signal(|| None::<String>);
    // The call decided is the oldest one at the click, not at the render.
    let mut decide = move |approve: bool| {
        let Some(call) = calls.peek().first().cloned() else {
            return;
        };
        let outcome = if approve {
            call.approve()
        } else {
            call.reject()
        };
        error.set(outcome.err().map(|e| e.to_string()));
    };
    let Some(call) = calls.read().first().cloned() else {
        return rsx! {};
    };
    let title = format!("The agent wants to run {}", call.capability_id());
    let description = call.description().to_string();
    let input = serde_json::to_string_pretty(call.effective_input()).unwrap_or_default();
    rsx! {
        aside { id: "agent-confirmation", class: classes("agent-confirmation", class.as_deref()), role: "dialog",
            h2 { class: "agent-confirmation-title", "{title}" }
            p { class: "agent-confirmation-description", "{description}" }
            pre { id: "agent-confirmation-input", "{input}" }
            if let Some(message) = error() {
                p { class: "agent-confirmation-error", "{message}" }
            }
            button { id: "agent-reject", class: classes("agent-confirmation-reject", reject_class.as_deref()), onclick: move |_| decide(false), "Reject" }
            button { id: "agent-approve", class: classes("agent-confirmation-approve", approve_class.as_deref()), onclick: move |_| decide(true), "Approve" }
        }
    }
}

/// The component's own class, then the page's, if given.
fn classes(own: &str, extra: Option<&str>) -> String {
    match extra {
        Some(extra) if !extra.is_empty() => format!("{own} {extra}"),
        _ => own.to_string(),
    }
}
