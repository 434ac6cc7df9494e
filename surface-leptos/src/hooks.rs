//! `use_agent_procedure` and `use_agent_component`: register on mount,
//! unregister on cleanup, re-announce when tracked state changes.

use agent_surface::{
    AgentProcedureBinding, ComponentContext, ComponentDefinition, Observation, RegistrationError,
    RegistrationHandle,
};
use std::rc::Rc;

use leptos::prelude::*;

use crate::provider::{use_agent_surface, AgentSurface};

/// A registration made by a hook ([`use_agent_procedure`],
/// [`AgentComponent::use_procedure`]; a component's:
/// [`AgentComponent::registration`]). `Copy`: the registration itself is
/// owned by the calling component's reactive owner, not by this value, so
/// **dropping it unregisters nothing** (unlike the runtime's
/// `RegistrationHandle`). It is unregistered when that owner is cleaned
/// up (the component unmounts) or by [`AgentRegistration::unregister`],
/// whichever comes first (`docs/frameworks.md`, "What the hooks return,
/// and when they unregister").
#[derive(Clone, Copy)]
pub struct AgentRegistration {
    handle: StoredValue<Option<Rc<RegistrationHandle>>, LocalStorage>,
}

impl AgentRegistration {
    /// The registration id (`r7`, the snapshot's `registrationId`), while
    /// registered; `None` after it was unregistered.
    pub fn registration_id(&self) -> Option<String> {
        self.handle
            .try_with_value(|h| h.as_ref().map(|h| h.registration_id().to_string()))
            .flatten()
    }

    /// Whether it is still registered.
    pub fn is_registered(&self) -> bool {
        self.registration_id().is_some()
    }

    /// Unregisters now instead of at unmount (the surface version moves
    /// and the agent host is told); a no-op when already unregistered.
    pub fn unregister(&self) {
        let _ = self.handle.try_update_value(Option::take);
    }
}

/// A component registered with [`use_agent_component`]; procedures this
/// component and its descendants register record it as their context.
/// `Copy`, and like [`AgentRegistration`] dropping it unregisters nothing:
/// the component is unregistered at its owner's cleanup or by
/// `registration().unregister()`.
#[derive(Clone, Copy)]
pub struct AgentComponent {
    registration: AgentRegistration,
}

impl AgentComponent {
    /// The component's type and instance id, while registered.
    pub fn context(&self) -> Option<ComponentContext> {
        self.registration
            .handle
            .try_with_value(|h| h.as_ref().and_then(|h| h.component_context().cloned()))
            .flatten()
    }

    /// The registration.
    pub fn registration(&self) -> AgentRegistration {
        self.registration
    }
}

/// Registers `binding` for as long as the calling component is mounted.
///
/// Its `when()`, unavailable reason and `describe()` are tracked: they run
/// in a Leptos effect, and when a signal they read changes the surface is
/// re-announced (if what the agent sees changed). `bind` runs only when a
/// call executes. Without a context of its own, the binding gets the
/// [`AgentComponent`] in the Leptos context (`<Provider value=component>`
/// around this component), else it is page-level.
///
/// Returns an [`AgentRegistration`]: `Copy`, and **dropping it does not
/// unregister**. The binding is unregistered when the calling component's
/// reactive owner is cleaned up (`on_cleanup`: a `<Show>` or `<For>` row
/// that removes it, a route change, the page's unmount) or by
/// [`AgentRegistration::unregister`], whichever comes first
/// (`docs/frameworks.md`, "What the hooks return, and when they
/// unregister").
///
/// A component that calls it with `?` returns `Result<impl IntoView,
/// RegistrationError>` and ends with `Ok(view! { … })`; Leptos renders the
/// `Err` in the nearest `<ErrorBoundary>` (`docs/frameworks.md`,
/// "Errors").
///
/// # Errors
/// The registry's [`RegistrationError`] (an unknown procedure, a binding
/// that does not match it, a context that is not live); nothing is
/// registered then.
///
/// # Panics
/// Without an [`AgentSurface`] in the context ([`use_agent_surface`]).
#[track_caller]
pub fn use_agent_procedure<I: 'static>(
    binding: AgentProcedureBinding<I>,
) -> Result<AgentRegistration, RegistrationError> {
    register(use_context::<AgentComponent>(), binding)
}

#[track_caller]
fn register<I: 'static>(
    component: Option<AgentComponent>,
    binding: AgentProcedureBinding<I>,
) -> Result<AgentRegistration, RegistrationError> {
    let surface = use_agent_surface();
    let component = component
        .filter(|_| !binding.has_context())
        .and_then(|c| c.registration.handle.try_get_value().flatten());
    let binding = match component {
        Some(component) => binding.context(&component),
        None => binding,
    };
    let handle = surface.registry().register_procedure(binding)?;
    Ok(keep(surface, handle))
}

/// Registers the component `definition` (its view capabilities) for as
/// long as the calling component is mounted. Returns an
/// [`AgentComponent`]: `Copy`, and dropping it does not unregister; the
/// component is unregistered when the calling component's reactive owner
/// is cleaned up, or by `registration().unregister()`. The capabilities' `when()`
/// and unavailable reasons are tracked as in [`use_agent_procedure`];
/// their handlers run when a call executes and see the state they read
/// then.
///
/// Procedures belong to the component when registered with
/// [`AgentComponent::use_procedure`], or with [`use_agent_procedure`]
/// inside Leptos's `<Provider value=component>` (for descendants). A
/// Leptos component has no reactive owner of its own, so the hook does not
/// provide the context itself: it would reach the component's later
/// siblings too.
///
/// # Errors
/// The registry's [`RegistrationError`] (a duplicate instance, a
/// capability colliding with a manifest path, …).
///
/// # Panics
/// Without an [`AgentSurface`] in the context ([`use_agent_surface`]).
#[track_caller]
pub fn use_agent_component(
    definition: ComponentDefinition,
) -> Result<AgentComponent, RegistrationError> {
    let surface = use_agent_surface();
    let handle = surface.registry().register_component(definition)?;
    Ok(AgentComponent {
        registration: keep(surface, handle),
    })
}

impl AgentComponent {
    /// [`use_agent_procedure`] with this component as the binding's
    /// context (unless the binding names one).
    ///
    /// # Errors
    /// As [`use_agent_procedure`].
    #[track_caller]
    pub fn use_procedure<I: 'static>(
        &self,
        binding: AgentProcedureBinding<I>,
    ) -> Result<AgentRegistration, RegistrationError> {
        register(Some(*self), binding)
    }
}

/// Keeps `handle` until the current owner is cleaned up, with an effect
/// that tracks its closures.
fn keep(surface: AgentSurface, handle: RegistrationHandle) -> AgentRegistration {
    let page = surface.page();
    // What the agent sees at registration: the effect's first run happens
    // later (on the browser's task queue), and a change in between must
    // re-announce too.
    let mut at_registration = Some(page.registry().observe(&handle));
    let handle = StoredValue::new_local(Some(Rc::new(handle)));
    Effect::new(move |previous: Option<Option<Observation>>| {
        let previous = previous.unwrap_or_else(|| at_registration.take().flatten());
        handle
            .try_with_value(|h| h.as_ref().and_then(|h| page.track(h, previous.as_ref())))
            .flatten()
    });
    on_cleanup(move || {
        // Dropping the handle unregisters (and re-announces); the only
        // other `Rc`s are transient (a child's registration borrowing it
        // as its context).
        let _ = handle.try_update_value(Option::take);
    });
    AgentRegistration { handle }
}
