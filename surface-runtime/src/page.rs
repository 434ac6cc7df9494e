//! The page side of the surface, owned in one place for a UI framework
//! adapter (`docs/frameworks.md`): the registry, the oRPC bridge it runs
//! procedures through, the browser session to the agent host once the page
//! has one, and the calls that session holds for the user's confirmation.
//!
//! Nothing here knows a UI framework. `agent-surface-leptos` and
//! `agent-surface-dioxus` keep a [`PageSurface`] in their context and
//! implement their hooks with three calls:
//!
//! * registering — [`SurfaceRegistry::register_procedure`] /
//!   [`SurfaceRegistry::register_component`] on [`PageSurface::registry`],
//!   the [`RegistrationHandle`] dropped when the component unmounts;
//! * tracking — [`PageSurface::track`] inside the framework's reactive
//!   effect: it evaluates the registration's `when()`, unavailable reason
//!   and `describe()` (so the effect subscribes to what they read) and
//!   re-announces the surface when the result differs from the previous
//!   run's;
//! * confirming — [`PageSurface::held_confirmations`],
//!   [`PageSurface::on_held_changed`], [`PageSurface::approve`],
//!   [`PageSurface::reject`], over the session's
//!   [`ConfirmationMode::Hold`] calls.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::authority::Authority;
use crate::bridge::{
    create_orpc_agent_bridge, invocation_id_header, OrpcAgentBridgeOptions, OrpcClient,
};
use crate::host::{
    BrowserSurfaceSession, BrowserSurfaceSessionOptions, ConfirmationDecisionError,
    ConfirmationEvent, ConfirmationMode, HeldConfirmation, SessionError, SessionEventSubscription,
};
use crate::registry::{Observation, RegistrationHandle, SurfaceRegistry, SurfaceRegistryBuilder};
use crate::sync::{lock, MaybeSend, MaybeSync};

#[cfg(not(target_arch = "wasm32"))]
type HeldListener = dyn Fn(&[HeldConfirmation]) + Send + Sync;
#[cfg(target_arch = "wasm32")]
type HeldListener = dyn Fn(&[HeldConfirmation]);

/// The registry, bridge, session and held confirmations of one page.
/// Cheap to clone: clones share one page surface.
#[derive(Clone)]
pub struct PageSurface {
    inner: Arc<Inner>,
}

struct Inner {
    registry: SurfaceRegistry,
    attached: Mutex<Option<Attached>>,
    /// The calls the session holds now, in the order they were asked.
    held: Mutex<Vec<HeldConfirmation>>,
    listeners: Mutex<Listeners>,
}

struct Attached {
    session: BrowserSurfaceSession,
    _confirmations: SessionEventSubscription,
}

#[derive(Default)]
struct Listeners {
    next: u64,
    list: Vec<(u64, Arc<HeldListener>)>,
}

impl fmt::Debug for PageSurface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageSurface")
            .field("surface_version", &self.inner.registry.surface_version())
            .field("attached", &lock(&self.inner.attached).is_some())
            .field("held", &lock(&self.inner.held).len())
            .finish()
    }
}

impl PageSurface {
    /// A page surface over `registry` (procedure calls go to whatever
    /// executor the registry has; see [`PageSurface::orpc`]).
    pub fn new(registry: SurfaceRegistry) -> Self {
        Self {
            inner: Arc::new(Inner {
                registry,
                attached: Mutex::new(None),
                held: Mutex::new(Vec::new()),
                listeners: Mutex::new(Listeners::default()),
            }),
        }
    }

    /// The usual page: a registry over `authority` (with
    /// [`crate::browser::BrowserTimer`] on wasm32 with the `browser`
    /// feature, so the registry's call timeout runs) whose procedure calls go
    /// to the oRPC server behind `client` (the ordinary bridge, with the
    /// invocation id as the `x-agent-invocation-id` header).
    pub fn orpc(authority: Authority, client: Arc<dyn OrpcClient>) -> Self {
        Self::orpc_with(SurfaceRegistry::builder(authority), client)
    }

    /// [`PageSurface::orpc`] with the registry's other settings from
    /// `builder` (policies, timeouts, bounds). The timer is set as in
    /// [`PageSurface::orpc`] unless the builder has one.
    pub fn orpc_with(builder: SurfaceRegistryBuilder, client: Arc<dyn OrpcClient>) -> Self {
        #[cfg(all(target_arch = "wasm32", feature = "browser"))]
        let builder = builder.default_timer(Arc::new(crate::browser::BrowserTimer));
        let registry = builder.build();
        let manifest = registry.authority().manifest().clone();
        let bridge = create_orpc_agent_bridge(
            OrpcAgentBridgeOptions::new(client, manifest).call_context(invocation_id_header),
        );
        registry.set_procedure_executor(bridge.executor);
        Self::new(registry)
    }

    /// The registry (register and unregister through it).
    pub fn registry(&self) -> &SurfaceRegistry {
        &self.inner.registry
    }

    /// Starts the page's browser session with `options`, in
    /// [`ConfirmationMode::Hold`] whatever `options` says (calls that need
    /// the user's confirmation wait in the page: [`PageSurface::held_confirmations`]).
    /// A session attached before is disposed. Returns the session (for
    /// `SessionSocket::open` or another transport).
    ///
    /// # Errors
    /// [`SessionError`] when the new session refuses the confirmation
    /// listener (it cannot for a fresh session with the default bounds).
    pub fn attach(
        &self,
        options: BrowserSurfaceSessionOptions,
    ) -> Result<BrowserSurfaceSession, SessionError> {
        let session = BrowserSurfaceSession::new(options.confirmations(ConfirmationMode::Hold));
        let weak = Arc::downgrade(&self.inner);
        let subscription = session.on_confirmation(move |event| {
            if let Some(inner) = weak.upgrade() {
                inner.confirmation_event(event);
            }
        })?;
        let previous = lock(&self.inner.attached).replace(Attached {
            session: session.clone(),
            _confirmations: subscription,
        });
        if let Some(previous) = previous {
            previous.session.dispose();
            self.inner.set_held(Vec::new());
        }
        Ok(session)
    }

    /// The attached session, if any.
    pub fn session(&self) -> Option<BrowserSurfaceSession> {
        lock(&self.inner.attached)
            .as_ref()
            .map(|a| a.session.clone())
    }

    /// The calls waiting for the user's decision, oldest first: each with
    /// the effective input the server will receive
    /// ([`HeldConfirmation::summary`]).
    pub fn held_confirmations(&self) -> Vec<HeldConfirmation> {
        lock(&self.inner.held).clone()
    }

    /// Calls `listener` with the held calls every time the list changes
    /// (a call asks, one is decided, expires or is aborted), outside any
    /// lock. Dropping the returned [`HeldSubscription`] unsubscribes.
    pub fn on_held_changed(
        &self,
        listener: impl Fn(&[HeldConfirmation]) + MaybeSend + MaybeSync + 'static,
    ) -> HeldSubscription {
        let mut listeners = lock(&self.inner.listeners);
        listeners.next += 1;
        let id = listeners.next;
        listeners.list.push((id, Arc::new(listener)));
        HeldSubscription {
            inner: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// The user approves held call `confirmation_id`: it runs (unless the
    /// view changed meanwhile, which the registry refuses).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`]; `Unknown` also when no session is
    /// attached.
    pub fn approve(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.attached_session(confirmation_id)?
            .approve(confirmation_id)
    }

    /// The user rejects held call `confirmation_id`: it is answered
    /// `CONFIRMATION_INVALID` (`rejected`) and nothing runs.
    ///
    /// # Errors
    /// As [`PageSurface::approve`].
    pub fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.attached_session(confirmation_id)?
            .reject(confirmation_id)
    }

    fn attached_session(
        &self,
        confirmation_id: &str,
    ) -> Result<BrowserSurfaceSession, ConfirmationDecisionError> {
        self.session()
            .ok_or_else(|| ConfirmationDecisionError::Unknown(confirmation_id.to_string()))
    }

    /// One run of a framework's reactive effect for `registration`:
    /// evaluates its closures now ([`SurfaceRegistry::observe`]; the
    /// framework records the signals they read) and, when `previous` (the
    /// last run's result) differs, re-announces the surface once
    /// ([`SurfaceRegistry::observation_changed`]). Returns this run's
    /// observation, `None` once the registration is gone.
    pub fn track(
        &self,
        registration: &RegistrationHandle,
        previous: Option<&Observation>,
    ) -> Option<Observation> {
        let now = self.inner.registry.observe(registration)?;
        if previous.is_some_and(|p| p != &now) {
            self.inner.registry.observation_changed();
        }
        Some(now)
    }

    /// Opens the session's WebSocket to the agent host
    /// ([`crate::browser::SessionSocket::open`]) for the attached session.
    /// The caller keeps the socket: dropping it closes the connection.
    ///
    /// # Errors
    /// [`crate::browser::SocketError::Create`] when no session is attached
    /// or the browser refuses the URL.
    #[cfg(all(target_arch = "wasm32", feature = "browser"))]
    pub fn open_socket(
        &self,
        options: crate::browser::SessionSocketOptions,
        listener: impl Fn(&crate::browser::SocketEvent) + 'static,
    ) -> Result<crate::browser::SessionSocket, crate::browser::SocketError> {
        let session = self
            .session()
            .ok_or_else(|| crate::browser::SocketError::Create {
                message: "no browser session is attached (PageSurface::attach)".to_string(),
            })?;
        crate::browser::SessionSocket::open(session, options, listener)
    }
}

impl Inner {
    fn confirmation_event(&self, event: &ConfirmationEvent) {
        let mut held = lock(&self.held).clone();
        match event {
            ConfirmationEvent::Requested(call) => {
                held.retain(|h| h.confirmation_id != call.confirmation_id);
                held.push(call.clone());
            }
            ConfirmationEvent::Settled {
                confirmation_id, ..
            } => held.retain(|h| &h.confirmation_id != confirmation_id),
        }
        self.set_held(held);
    }

    fn set_held(&self, held: Vec<HeldConfirmation>) {
        *lock(&self.held) = held.clone();
        let listeners: Vec<Arc<HeldListener>> = lock(&self.listeners)
            .list
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            listener(&held);
        }
    }
}

/// A listener from [`PageSurface::on_held_changed`]; dropping it (or
/// [`HeldSubscription::unsubscribe`]) removes the listener.
#[must_use = "dropping the subscription unsubscribes the listener"]
pub struct HeldSubscription {
    inner: std::sync::Weak<Inner>,
    id: u64,
}

impl fmt::Debug for HeldSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeldSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl HeldSubscription {
    /// Unsubscribes now (same as dropping).
    pub fn unsubscribe(self) {}
}

impl Drop for HeldSubscription {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            lock(&inner.listeners).list.retain(|(id, _)| *id != self.id);
        }
    }
}
