//! Leptos signals as a binding's `when`, unavailable reason and
//! `describe` (`docs/frameworks.md`, "Signals and memos"): the runtime's
//! builders take closures; these extension methods take anything that
//! converts into a [`Signal`] (`Signal`, `Memo`, `RwSignal`,
//! `ReadSignal`, a fixed value) and read it the way the closures should:
//! tracked inside the registration's effect, untracked when the registry
//! evaluates it for a snapshot or a call.

use agent_surface::{AgentProcedureBinding, ViewCapability};
use leptos::prelude::*;

/// `when`/`unavailable_reason`/`describe` from signals, for
/// [`AgentProcedureBinding`]. The closure builders (`.when(move || …)`)
/// stay as they are; these are the same with a signal:
///
/// ```ignore
/// let selection = RwSignal::new(Vec::<String>::new());
/// let any_selected = Memo::new(move |_| !selection.get().is_empty());
/// let note = Signal::derive(move || format!("Applies to {} device(s).", selection.get().len()));
/// AgentProcedureBinding::new(api::devices::disable())
///     .when_signal(any_selected)
///     .describe_signal(note);
/// ```
///
/// A signal read after its owner is disposed reads as `false` (`when`) or
/// the empty text (reason, description: no contextual note).
pub trait BindingSignals: Sized {
    /// [`AgentProcedureBinding::when`] from a `bool` signal or memo.
    #[must_use]
    fn when_signal(self, when: impl Into<Signal<bool>>) -> Self;

    /// [`AgentProcedureBinding::unavailable_reason_with`] from a `String`
    /// signal or memo.
    #[must_use]
    fn unavailable_reason_signal(self, reason: impl Into<Signal<String>>) -> Self;

    /// [`AgentProcedureBinding::describe`] from a `String` signal or memo
    /// (the contextual note; an empty text is no note).
    #[must_use]
    fn describe_signal(self, text: impl Into<Signal<String>>) -> Self;
}

impl<I> BindingSignals for AgentProcedureBinding<I> {
    fn when_signal(self, when: impl Into<Signal<bool>>) -> Self {
        let when = when.into();
        self.when(move || when.try_get().unwrap_or(false))
    }

    fn unavailable_reason_signal(self, reason: impl Into<Signal<String>>) -> Self {
        let reason = reason.into();
        self.unavailable_reason_with(move || reason.try_get().unwrap_or_default())
    }

    fn describe_signal(self, text: impl Into<Signal<String>>) -> Self {
        let text = text.into();
        self.describe(move || text.try_get().unwrap_or_default())
    }
}

/// `when`/`unavailable_reason` from signals, for a component's
/// [`ViewCapability`] (as [`BindingSignals`]).
pub trait CapabilitySignals: Sized {
    /// [`ViewCapability::when`] from a `bool` signal or memo.
    #[must_use]
    fn when_signal(self, when: impl Into<Signal<bool>>) -> Self;

    /// [`ViewCapability::unavailable_reason_with`] from a `String` signal
    /// or memo.
    #[must_use]
    fn unavailable_reason_signal(self, reason: impl Into<Signal<String>>) -> Self;
}

impl CapabilitySignals for ViewCapability {
    fn when_signal(self, when: impl Into<Signal<bool>>) -> Self {
        let when = when.into();
        self.when(move || when.try_get().unwrap_or(false))
    }

    fn unavailable_reason_signal(self, reason: impl Into<Signal<String>>) -> Self {
        let reason = reason.into();
        self.unavailable_reason_with(move || reason.try_get().unwrap_or_default())
    }
}
