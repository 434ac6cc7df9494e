//! `use_agent_procedure` and `use_agent_component`: register on the first
//! render, unregister on unmount, re-announce when tracked state changes.

use std::rc::Rc;

use agent_surface::{
    AgentProcedureBinding, ComponentContext, ComponentDefinition, Observation, RegistrationError,
    RegistrationHandle,
};
use dioxus::dioxus_core::{
    current_scope_id, provide_context, try_consume_context, use_drop, use_hook, ReactiveContext,
};
use dioxus::prelude::*;

use crate::provider::{consume_surface, AgentSurface};

/// A live registration of the current component: unregistered when the
/// component unmounts (or by [`AgentRegistration::unregister`]). `Copy`.
#[derive(Clone, Copy, PartialEq)]
pub struct AgentRegistration {
    handle: CopyValue<Option<Rc<RegistrationHandle>>>,
}

impl std::fmt::Debug for AgentRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRegistration")
            .field("registration_id", &self.registration_id())
            .finish()
    }
}

impl AgentRegistration {
    /// The live handle, if still registered (a transient clone).
    fn handle(&self) -> Option<Rc<RegistrationHandle>> {
        self.handle.try_read().ok().and_then(|h| h.clone())
    }

    /// The registration id (`r7`), while registered.
    pub fn registration_id(&self) -> Option<String> {
        self.handle().map(|h| h.registration_id().to_string())
    }

    /// Whether it is still registered.
    pub fn is_registered(&self) -> bool {
        self.registration_id().is_some()
    }

    /// Unregisters now instead of at unmount.
    pub fn unregister(&self) {
        let mut slot = self.handle;
        let taken = match slot.try_write() {
            Ok(mut handle) => handle.take(),
            Err(_) => None,
        };
        // Dropping the handle unregisters (and re-announces): outside the
        // borrow, since the announcement may read other values.
        drop(taken);
    }
}

/// A component registered with [`use_agent_component`]; procedures this
/// component registers after it, and its descendants, record it as their
/// context. `Copy`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct AgentComponent {
    registration: AgentRegistration,
}

impl AgentComponent {
    /// The component's type and instance id, while registered.
    pub fn context(&self) -> Option<ComponentContext> {
        self.registration
            .handle()
            .and_then(|h| h.component_context().cloned())
    }

    /// The registration.
    pub fn registration(&self) -> AgentRegistration {
        self.registration
    }

    /// [`use_agent_procedure`] with this component as the binding's
    /// context (unless the binding names one). A hook, like
    /// [`use_agent_procedure`].
    ///
    /// # Errors
    /// As [`use_agent_procedure`].
    #[track_caller]
    pub fn use_procedure<I: 'static>(
        &self,
        binding: AgentProcedureBinding<I>,
    ) -> Result<AgentRegistration, RegistrationError> {
        use_registration(Some(*self), binding)
    }
}

/// Registers `binding` for as long as the calling component is mounted.
/// A hook: call it unconditionally, in the same order on every render. It
/// registers on the first render; later renders return that result (and
/// drop the binding they pass, unregistered).
///
/// Its `when()`, unavailable reason and `describe()` are tracked: they run
/// in a Dioxus effect, and when a signal they read changes the surface is
/// re-announced (if what the agent sees changed). `bind` runs only when a
/// call executes (read signals with `peek()` there). Without a context of
/// its own, the binding gets the nearest [`AgentComponent`] in the Dioxus
/// context (a [`use_agent_component`] earlier in this component or in an
/// ancestor), else it is page-level.
///
/// It unregisters when the component unmounts (`use_drop`): an `if` or a
/// list row that removes it, a route change, the page's unmount.
///
/// # Errors
/// The registry's [`RegistrationError`] (an unknown procedure, a binding
/// that does not match it, a context that is not live); nothing is
/// registered then, and every render returns the same error.
///
/// # Panics
/// Without an [`AgentSurface`] in the context (see
/// [`crate::use_agent_surface`]).
#[track_caller]
pub fn use_agent_procedure<I: 'static>(
    binding: AgentProcedureBinding<I>,
) -> Result<AgentRegistration, RegistrationError> {
    use_registration(None, binding)
}

/// Registers the component `definition` (its view capabilities) for as
/// long as the calling component is mounted, and provides the
/// [`AgentComponent`] as Dioxus context: procedures registered after this
/// hook in the same component ([`use_agent_procedure`] or
/// [`AgentComponent::use_procedure`]) and in its descendants record it as
/// their context. A hook, like [`use_agent_procedure`] (registers on the
/// first render; later renders return that result). The capabilities'
/// `when()` and unavailable reasons are tracked as in
/// [`use_agent_procedure`]; their handlers run when a call executes and
/// see the state they read then.
///
/// # Errors
/// The registry's [`RegistrationError`] (a duplicate instance, a
/// capability colliding with a manifest path, …); nothing is registered
/// nor provided then.
///
/// # Panics
/// Without an [`AgentSurface`] in the context (see
/// [`crate::use_agent_surface`]).
#[track_caller]
pub fn use_agent_component(
    definition: ComponentDefinition,
) -> Result<AgentComponent, RegistrationError> {
    let kept = use_kept(move || {
        let surface = consume_surface();
        let kept = Kept::register(surface, |registry| registry.register_component(definition))?;
        provide_context(AgentComponent {
            registration: kept.registration,
        });
        Ok(kept)
    });
    kept.map(|registration| AgentComponent { registration })
}

#[track_caller]
fn use_registration<I: 'static>(
    component: Option<AgentComponent>,
    binding: AgentProcedureBinding<I>,
) -> Result<AgentRegistration, RegistrationError> {
    use_kept(move || {
        let surface = consume_surface();
        let component = if binding.has_context() {
            None
        } else {
            component
                .or_else(try_consume_context::<AgentComponent>)
                .and_then(|c| c.registration.handle())
        };
        let binding = match component {
            Some(component) => binding.context(&component),
            None => binding,
        };
        Kept::register(surface, |registry| registry.register_procedure(binding))
    })
}

/// A registration kept by a component, with its tracking state.
#[derive(Clone, Copy)]
struct Kept {
    surface: AgentSurface,
    registration: AgentRegistration,
    /// The last observation: at registration, then each effect run's.
    previous: CopyValue<Option<Observation>>,
}

impl Kept {
    /// Registers with `register` outside the component's reactive context
    /// (what the registry evaluates now must not subscribe the render),
    /// and takes the observation at registration: the effect's first run
    /// happens after the render, and a change in between must re-announce
    /// too.
    fn register(
        surface: AgentSurface,
        register: impl FnOnce(
            &agent_surface::SurfaceRegistry,
        ) -> Result<RegistrationHandle, RegistrationError>,
    ) -> Result<Kept, RegistrationError> {
        let registry = surface.registry();
        let (handle, observation) = untracked(|| {
            let handle = register(&registry)?;
            let observation = registry.observe(&handle);
            Ok::<_, RegistrationError>((handle, observation))
        })?;
        Ok(Kept {
            surface,
            registration: AgentRegistration {
                handle: CopyValue::new(Some(Rc::new(handle))),
            },
            previous: CopyValue::new(observation),
        })
    }

    /// One effect run: evaluates the closures (the effect records what
    /// they read) and re-announces if the result changed.
    fn track(&self) {
        let Some(handle) = self.registration.handle() else {
            return;
        };
        let mut previous = self.previous;
        let last = previous.try_write().ok().and_then(|mut p| p.take());
        let now = self.surface.page().track(&handle, last.as_ref());
        if let Ok(mut p) = previous.try_write() {
            *p = now;
        };
    }
}

/// The hooks of one registration, in a fixed order: the registration
/// (first render only), its tracking effect, its removal at unmount.
#[track_caller]
fn use_kept(
    register: impl FnOnce() -> Result<Kept, RegistrationError>,
) -> Result<AgentRegistration, RegistrationError> {
    let kept = use_hook(register);
    let tracked = kept.as_ref().ok().copied();
    use_effect(move || {
        if let Some(kept) = tracked {
            kept.track();
        }
    });
    let dropped = tracked.map(|k| k.registration);
    use_drop(move || {
        if let Some(registration) = dropped {
            registration.unregister();
        }
    });
    kept.map(|k| k.registration)
}

/// Runs `f` in a reactive context nobody listens to, so the signals it
/// reads do not subscribe the current component's render (Dioxus has no
/// untracked scope of its own).
pub(crate) fn untracked<O>(f: impl FnOnce() -> O) -> O {
    let context = ReactiveContext::new_with_callback(
        || {},
        current_scope_id(),
        std::panic::Location::caller(),
    );
    let out = context.run_in(f);
    context.clear_subscribers();
    out
}
