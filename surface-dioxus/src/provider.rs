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
use dioxus::dioxus_core::{provide_context, try_consume_context, use_hook};
use dioxus::prelude::*;

/// The page's agent surface in the Dioxus context: the [`PageSurface`]
/// (registry, bridge, session), the session's socket once connected, and
/// the held confirmations, activity and connection state as signals.
/// `Copy`: pass it around freely; it lives as long as the component that
/// provided it.
#[derive(Clone, Copy, PartialEq)]
pub struct AgentSurface {
    page: CopyValue<PageSurface>,
    socket: CopyValue<Option<SessionSocket>>,
    _subscription: CopyValue<Option<ChangeSubscription>>,
    pub(crate) held: ReadSignal<Vec<HeldConfirmation>>,
    activity: ReadSignal<Vec<AgentCall>>,
    connection: ReadSignal<ConnectionState>,
}

impl std::fmt::Debug for AgentSurface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentSurface")
    }
}

pub use agent_surface::page::ConnectError;

/// Provides `page` to this component and its descendants, and returns the
/// handle. A hook: call it once, near the root, unconditionally; the first
/// render's `page` is kept (later renders return the same handle and drop
/// the `page` they pass). The hooks find it with [`use_agent_surface`].
///
/// ```ignore
/// let surface = provide_agent_surface(PageSurface::orpc(
///     api::authority(),
///     Arc::new(FetchOrpcClient::new("/rpc")),
/// ));
/// ```
pub fn provide_agent_surface(page: PageSurface) -> AgentSurface {
    use_hook(move || {
        let held = Signal::new(page.held_confirmations());
        let activity = Signal::new(page.activity());
        let connection = Signal::new(page.connection());
        // The listener must not keep the page alive (the page keeps it).
        let source = page.downgrade();
        let subscription = page.on_change(move |change| {
            let Some(page) = source.upgrade() else {
                return;
            };
            // Called from wherever the change happened (a socket message, a
            // click handler); the signals may be gone once the provider
            // unmounted, before the subscription is dropped.
            match change {
                PageChange::Held => set(held, page.held_confirmations()),
                PageChange::Activity => set(activity, page.activity()),
                PageChange::Connection => set(connection, page.connection()),
                _ => {}
            }
        });
        provide_context(AgentSurface {
            page: CopyValue::new(page),
            socket: CopyValue::new(None),
            _subscription: CopyValue::new(Some(subscription)),
            held: held.into(),
            activity: activity.into(),
            connection: connection.into(),
        })
    })
}

/// Sets `signal` unless it was dropped (or is borrowed right now).
fn set<T: 'static>(mut signal: Signal<T>, value: T) {
    if let Ok(mut current) = signal.try_write() {
        *current = value;
    }
}

/// The [`AgentSurface`] an ancestor (or this component) provided. A hook
/// (the first render's lookup is kept).
///
/// # Panics
/// When no ancestor called [`provide_agent_surface`] (a wiring mistake in
/// the page, like Dioxus's own `use_context`); [`try_use_agent_surface`]
/// returns `None` instead.
#[track_caller]
pub fn use_agent_surface() -> AgentSurface {
    match try_use_agent_surface() {
        Some(surface) => surface,
        None => missing(),
    }
}

/// The [`AgentSurface`] an ancestor (or this component) provided, if any.
/// A hook (the first render's lookup is kept).
pub fn try_use_agent_surface() -> Option<AgentSurface> {
    use_hook(try_consume_context::<AgentSurface>)
}

/// The surface in the context, outside a hook (in another hook's
/// initializer).
#[track_caller]
pub(crate) fn consume_surface() -> AgentSurface {
    try_consume_context::<AgentSurface>().unwrap_or_else(|| missing())
}

#[track_caller]
fn missing() -> ! {
    panic!(
        "no AgentSurface in the Dioxus context: call provide_agent_surface(...) in an ancestor component"
    )
}

impl AgentSurface {
    /// The page surface (a cheap clone).
    pub fn page(&self) -> PageSurface {
        self.page.read().clone()
    }

    /// The registry (a cheap clone).
    pub fn registry(&self) -> SurfaceRegistry {
        self.page.read().registry().clone()
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
        let mut slot = self.socket;
        // The previous socket closes before the new session starts.
        slot.set(None);
        let opened = page.connect(session, socket, on_event)?;
        slot.set(Some(opened));
        Ok(())
    }

    /// The agent calls the page has seen, oldest first
    /// ([`PageSurface::activity`]), as a signal for an activity panel.
    pub fn activity(&self) -> ReadSignal<Vec<AgentCall>> {
        self.activity
    }

    /// The socket's state ([`PageSurface::connection`]) as a signal, for
    /// a status line.
    pub fn connection(&self) -> ReadSignal<ConnectionState> {
        self.connection
    }

    /// The socket's connection id, while connected.
    pub fn connection_id(&self) -> Option<String> {
        self.socket
            .read()
            .as_ref()
            .and_then(SessionSocket::connection_id)
    }

    /// Approves held call `confirmation_id` ([`PageSurface::approve`]).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`].
    pub fn approve(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.page().approve(confirmation_id)
    }

    /// Rejects held call `confirmation_id` ([`PageSurface::reject`]).
    ///
    /// # Errors
    /// [`ConfirmationDecisionError`].
    pub fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.page().reject(confirmation_id)
    }
}
