//! The provider: one [`AgentSurface`] in the component tree's context.

use agent_surface::browser::{SessionSocket, SessionSocketOptions, SocketEvent};
use agent_surface::host::{
    BrowserSurfaceIdentity, BrowserSurfaceSessionOptions, ConfirmationDecisionError,
    HeldConfirmation,
};
use agent_surface::page::{
    AgentCall, ChangeSubscription, ConnectionState, PageChange, PageSurface,
};
use agent_surface::{AgentConsumer, SurfaceRegistry};
use leptos::prelude::*;
use leptos::reactive::graph::{untrack, Observer};

/// The page's agent surface in the Leptos context: the
/// [`PageSurface`] (registry, bridge, session), the session's socket once
/// connected, and the held confirmations as a signal. `Copy`: pass it
/// around freely; it lives as long as the component that provided it.
#[derive(Clone, Copy)]
pub struct AgentSurface {
    page: StoredValue<PageSurface, LocalStorage>,
    socket: StoredValue<Option<SessionSocket>, LocalStorage>,
    _subscription: StoredValue<Option<ChangeSubscription>, LocalStorage>,
    pub(crate) held: RwSignal<Vec<HeldConfirmation>>,
    activity: RwSignal<Vec<AgentCall>>,
    connection: RwSignal<ConnectionState>,
}

pub use agent_surface::page::ConnectError;

/// Provides `page` to this component and its descendants, and returns the
/// handle. Call it once, near the root; the hooks find it with
/// [`use_agent_surface`].
///
/// ```ignore
/// let surface = provide_agent_surface(PageSurface::orpc(
///     api::authority(),
///     Arc::new(FetchOrpcClient::new("/rpc")),
/// ));
/// ```
///
/// It also sets the registry's evaluation scope
/// ([`SurfaceRegistry::set_evaluation_scope`]) for the registrations the
/// hooks make: `when`/`describe` read their signals tracked inside the
/// registration's effect and untracked everywhere else (a snapshot, a
/// call), so debug builds log no "outside a reactive tracking context"
/// warning for them.
pub fn provide_agent_surface(page: PageSurface) -> AgentSurface {
    page.registry()
        .set_evaluation_scope(evaluate_untracked_outside_effects);
    let held = RwSignal::new(page.held_confirmations());
    let activity = RwSignal::new(page.activity());
    let connection = RwSignal::new(page.connection());
    let source = page.downgrade();
    let subscription = page.on_change(move |change| {
        let Some(page) = source.upgrade() else {
            return;
        };
        match change {
            PageChange::Held => held.set(page.held_confirmations()),
            PageChange::Activity => activity.set(page.activity()),
            PageChange::Connection => connection.set(page.connection()),
            _ => {}
        }
    });
    let surface = AgentSurface {
        page: StoredValue::new_local(page),
        socket: StoredValue::new_local(None),
        _subscription: StoredValue::new_local(Some(subscription)),
        held,
        activity,
        connection,
    };
    provide_context(surface);
    surface
}

/// Runs `evaluate` as is inside a reactive observer (the registration's
/// effect: the signals it reads are tracked), else untracked.
fn evaluate_untracked_outside_effects(evaluate: &mut dyn FnMut()) {
    if Observer::get().is_some() {
        evaluate();
    } else {
        untrack(evaluate);
    }
}

/// The [`AgentSurface`] an ancestor provided.
///
/// # Panics
/// When no ancestor called [`provide_agent_surface`] (a wiring mistake in
/// the page, like Leptos' own `expect_context`); [`try_use_agent_surface`]
/// returns `None` instead.
#[track_caller]
pub fn use_agent_surface() -> AgentSurface {
    match try_use_agent_surface() {
        Some(surface) => surface,
        None => panic!(
            "no AgentSurface in the Leptos context: call provide_agent_surface(...) in an ancestor component"
        ),
    }
}

/// The [`AgentSurface`] an ancestor provided, if any.
pub fn try_use_agent_surface() -> Option<AgentSurface> {
    use_context::<AgentSurface>()
}

impl AgentSurface {
    /// The page surface (a cheap clone).
    pub fn page(&self) -> PageSurface {
        self.page.get_value()
    }

    /// The registry (a cheap clone).
    pub fn registry(&self) -> SurfaceRegistry {
        self.page.with_value(|p| p.registry().clone())
    }

    /// Session options for this page's registry with `identity` and
    /// `consumer`, the browser timer set (held confirmations expire on
    /// time); adjust them before [`AgentSurface::connect`].
    pub fn session_options(
        &self,
        identity: BrowserSurfaceIdentity,
        consumer: AgentConsumer,
    ) -> BrowserSurfaceSessionOptions {
        self.page().session_options(identity, consumer)
    }

    /// Starts the browser session (held confirmations) and opens its
    /// socket to the agent host; `on_event` sees every [`SocketEvent`]
    /// (connection state for the page's header, calls for an activity
    /// list). Connecting again replaces the session and the socket.
    ///
    /// # Errors
    /// [`ConnectError`]; nothing stays connected then.
    pub fn connect(
        &self,
        session: BrowserSurfaceSessionOptions,
        socket: SessionSocketOptions,
        on_event: impl Fn(&SocketEvent) + 'static,
    ) -> Result<(), ConnectError> {
        let page = self.page();
        // The previous socket closes before the new session starts.
        self.socket.set_value(None);
        let opened = page.connect(session, socket, on_event)?;
        self.socket.set_value(Some(opened));
        Ok(())
    }

    /// The agent calls the page has seen, oldest first
    /// ([`PageSurface::activity`]), as a signal for an activity panel.
    pub fn activity(&self) -> Signal<Vec<AgentCall>> {
        self.activity.into()
    }

    /// The socket's state ([`PageSurface::connection`]) as a signal, for
    /// a status line.
    pub fn connection(&self) -> Signal<ConnectionState> {
        self.connection.into()
    }

    /// The socket's connection id, while connected.
    pub fn connection_id(&self) -> Option<String> {
        self.socket
            .with_value(|s| s.as_ref().and_then(SessionSocket::connection_id))
    }

    /// Approves held call `confirmation_id` ([`PageSurface::approve`]).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`].
    pub fn approve(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.page.with_value(|p| p.approve(confirmation_id))
    }

    /// Rejects held call `confirmation_id` ([`PageSurface::reject`]).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`].
    pub fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.page.with_value(|p| p.reject(confirmation_id))
    }
}
