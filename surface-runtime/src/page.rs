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
//!   [`PageSurface::approve`], [`PageSurface::reject`], over the session's
//!   [`ConfirmationMode::Hold`] calls and the calls of in-page agents
//!   ([`PageSurface::invoke_in_page`], the WebMCP bridge's);
//! * showing — [`PageSurface::activity`] (the agent's calls and where they
//!   stand) and [`PageSurface::connection`] (the socket's state), with
//!   [`PageSurface::on_change`] to re-render.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::authority::Authority;
use crate::bridge::{
    create_orpc_agent_bridge, invocation_id_header, OrpcAgentBridgeOptions, OrpcClient,
};
use crate::host::{
    BrowserSurfaceCall, BrowserSurfaceOutcome, BrowserSurfaceResult, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, ConfirmationDecisionError, ConfirmationEvent, ConfirmationMode,
    ConfirmationOutcome, HeldConfirmation, LocalHolds, SessionError, SessionEventSubscription,
};
use crate::invocation::{AgentConsumer, AgentInvocation, AgentInvocationResult};
use crate::registry::{Observation, RegistrationHandle, SurfaceRegistry, SurfaceRegistryBuilder};
use crate::sync::{lock, MaybeSend, MaybeSync};

#[cfg(not(target_arch = "wasm32"))]
type Listener = dyn Fn(PageChange) + Send + Sync;
#[cfg(target_arch = "wasm32")]
type Listener = dyn Fn(PageChange);

/// The `connectionId` of the held confirmations of in-page agents' calls
/// ([`PageSurface::invoke_in_page`]): no host connection carries them.
pub const IN_PAGE_CONNECTION_ID: &str = "in-page";

/// How many agent calls [`PageSurface::activity`] keeps by default (the
/// newest; older ones are dropped).
pub const DEFAULT_ACTIVITY_ENTRIES: usize = 50;

/// What changed, for [`PageSurface::on_change`] listeners (read the new
/// state with the matching getter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageChange {
    /// [`PageSurface::held_confirmations`].
    Held,
    /// [`PageSurface::activity`].
    Activity,
    /// [`PageSurface::connection`].
    Connection,
}

/// One agent call the page has seen, for an activity panel.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentCall {
    /// The host's invocation id.
    pub invocation_id: String,
    /// The capability called (`domain:devices.disable`,
    /// `view:devices.table.select`).
    pub capability_id: String,
    /// The agent's own input (bound values are not in it).
    pub input: serde_json::Value,
    /// Where it stands.
    pub state: AgentCallState,
}

/// Where an [`AgentCall`] stands.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentCallState {
    /// Arrived; running.
    Running,
    /// Waiting for the user's decision ([`PageSurface::held_confirmations`]).
    AwaitingConfirmation,
    /// The user's decision or the confirmation's end (approved: running
    /// again; rejected, expired, aborted: its answer follows).
    Confirmation(ConfirmationOutcome),
    /// Answered: the registry's result or the session's refusal.
    Answered(BrowserSurfaceOutcome),
}

/// The state of the session's socket to the agent host
/// ([`PageSurface::connection`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// No socket opened yet.
    #[default]
    Idle,
    /// Opening a socket; `attempt` counts tries since the last success.
    Connecting {
        /// Attempt number (1 = first).
        attempt: u32,
    },
    /// Connected under `connection_id`.
    Connected {
        /// The connection id.
        connection_id: String,
    },
    /// Lost; the next attempt follows after `retry_in`. `aborted_calls`
    /// calls were pending and may or may not have taken effect.
    Retrying {
        /// Delay before the next attempt.
        retry_in: std::time::Duration,
        /// Calls aborted by the loss.
        aborted_calls: usize,
    },
    /// Stopped for good; the reason in words (`StopReason`'s).
    Stopped {
        /// Why, for the page's status line.
        reason: String,
    },
}

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
    /// The newest agent calls, oldest first, at most `max_activity`.
    activity: Mutex<std::collections::VecDeque<AgentCall>>,
    max_activity: std::sync::atomic::AtomicUsize,
    connection: Mutex<ConnectionState>,
    listeners: Mutex<Listeners>,
    /// Held confirmations of in-page agents' calls
    /// ([`PageSurface::invoke_in_page`]).
    local: LocalHolds,
    local_subscription: Mutex<Option<SessionEventSubscription>>,
}

struct Attached {
    session: BrowserSurfaceSession,
    _confirmations: SessionEventSubscription,
}

#[derive(Default)]
struct Listeners {
    next: u64,
    list: Vec<(u64, Arc<Listener>)>,
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
        #[cfg(all(target_arch = "wasm32", feature = "browser"))]
        let timer: Option<Arc<dyn crate::clock::Timer>> =
            Some(Arc::new(crate::browser::BrowserTimer));
        #[cfg(not(all(target_arch = "wasm32", feature = "browser")))]
        let timer: Option<Arc<dyn crate::clock::Timer>> = None;
        // The registry's clock: held confirmations expire when the
        // registry's do (a test's manual clock, or the system's).
        let local = LocalHolds::new(Arc::new(registry.clone()), registry.clock(), timer);
        let surface = Self {
            inner: Arc::new(Inner {
                local,
                local_subscription: Mutex::new(None),
                registry,
                attached: Mutex::new(None),
                held: Mutex::new(Vec::new()),
                activity: Mutex::new(std::collections::VecDeque::new()),
                max_activity: std::sync::atomic::AtomicUsize::new(DEFAULT_ACTIVITY_ENTRIES),
                connection: Mutex::new(ConnectionState::Idle),
                listeners: Mutex::new(Listeners::default()),
            }),
        };
        let weak = Arc::downgrade(&surface.inner);
        *lock(&surface.inner.local_subscription) =
            surface
                .inner
                .local
                .on_confirmation(Arc::new(move |event: &ConfirmationEvent| {
                    if let Some(inner) = weak.upgrade() {
                        inner.confirmation_event(event);
                    }
                }));
        surface
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

    /// A weak reference (for a listener of this surface that needs to read
    /// it: holding a clone there would keep the surface alive forever).
    pub fn downgrade(&self) -> WeakPageSurface {
        WeakPageSurface(Arc::downgrade(&self.inner))
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
            // The in-page agents' held calls stay.
            self.inner.set_held(self.inner.local.list());
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

    /// The agent calls seen, oldest first: the newest
    /// [`DEFAULT_ACTIVITY_ENTRIES`] (or [`PageSurface::max_activity`]).
    pub fn activity(&self) -> Vec<AgentCall> {
        lock(&self.inner.activity).iter().cloned().collect()
    }

    /// Keeps the newest `count` agent calls in [`PageSurface::activity`]
    /// (default [`DEFAULT_ACTIVITY_ENTRIES`]), for every clone; older
    /// entries go at the next recorded call.
    #[must_use]
    pub fn max_activity(self, count: usize) -> Self {
        self.inner
            .max_activity
            .store(count, std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// The socket's state ([`ConnectionState::Idle`] until
    /// `PageSurface::open_socket`).
    pub fn connection(&self) -> ConnectionState {
        lock(&self.inner.connection).clone()
    }

    /// Records a call that arrived for the session (`SocketEvent::Call`;
    /// `open_socket` does it): a [`AgentCallState::Running`] entry.
    pub fn record_call(&self, call: &BrowserSurfaceCall) {
        self.inner.update_activity(|list, max| {
            list.push_back(AgentCall {
                invocation_id: call.invocation.invocation_id.clone(),
                capability_id: call.invocation.capability_id.clone(),
                input: call.invocation.input.clone(),
                state: AgentCallState::Running,
            });
            while list.len() > max {
                list.pop_front();
            }
        });
    }

    /// Records the session's answer (`SocketEvent::Answered`; `open_socket`
    /// does it): the call's entry becomes [`AgentCallState::Answered`].
    /// An answer to a call not in the list (dropped at the bound, or never
    /// a call) changes nothing.
    pub fn record_answer(&self, answer: &BrowserSurfaceResult) {
        let state = AgentCallState::Answered(answer.result.clone());
        self.inner.set_call_state(&answer.invocation_id, state);
    }

    /// Calls `listener` after every change of the held confirmations, the
    /// activity or the connection state, outside any lock. Dropping the
    /// returned [`ChangeSubscription`] unsubscribes.
    pub fn on_change(
        &self,
        listener: impl Fn(PageChange) + MaybeSend + MaybeSync + 'static,
    ) -> ChangeSubscription {
        let mut listeners = lock(&self.inner.listeners);
        listeners.next += 1;
        let id = listeners.next;
        listeners.list.push((id, Arc::new(listener)));
        ChangeSubscription {
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
        if self.inner.local.holds(confirmation_id) {
            return self.inner.local.approve(confirmation_id);
        }
        self.attached_session(confirmation_id)?
            .approve(confirmation_id)
    }

    /// The user rejects held call `confirmation_id`: it is answered
    /// `CONFIRMATION_INVALID` (`rejected`) and nothing runs.
    ///
    /// # Errors
    /// As [`PageSurface::approve`].
    pub fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        if self.inner.local.holds(confirmation_id) {
            return self.inner.local.reject(confirmation_id);
        }
        self.attached_session(confirmation_id)?
            .reject(confirmation_id)
    }

    /// Runs a call of an agent **inside the page** (the browser's own
    /// agent through WebMCP: `webmcp::WebMcpBridge`) through the
    /// registry's pipeline as `consumer`. A call that needs the user's
    /// confirmation waits in the page exactly as a held host call does: it
    /// appears in [`PageSurface::held_confirmations`] (its
    /// `connectionId` is [`IN_PAGE_CONNECTION_ID`], its `runId` the
    /// consumer id, its `toolCallId` the invocation id), and
    /// [`PageSurface::approve`] re-runs it with its confirmation id under a fresh
    /// invocation id while [`PageSurface::reject`] answers it
    /// `CONFIRMATION_INVALID`. The call and its answer are recorded in
    /// [`PageSurface::activity`]. No session or socket is needed.
    /// Cancelling `cancellation` ends the call at once: a held wait is
    /// withdrawn (its confirmation settles as aborted and leaves
    /// [`PageSurface::held_confirmations`]), a running procedure call is
    /// dropped (a `fetch` in flight is aborted), and the answer is
    /// `CANCELLED`.
    pub fn invoke_in_page(
        &self,
        invocation: AgentInvocation,
        consumer: AgentConsumer,
        cancellation: crate::Cancellation,
    ) -> impl std::future::Future<Output = AgentInvocationResult> + 'static {
        let identity = self.session().map_or_else(
            || crate::host::BrowserSurfaceIdentity::new("", "", "", ""),
            |s| s.identity().clone(),
        );
        let tool_call_id = invocation.invocation_id.clone();
        let call = BrowserSurfaceCall::new(
            identity,
            IN_PAGE_CONNECTION_ID,
            consumer.id.to_string(),
            tool_call_id,
            invocation,
        );
        self.record_call(&call);
        let invocation_id = call.invocation.invocation_id.clone();
        let capability_id = call.invocation.capability_id.clone();
        let registry = self.inner.registry.clone();
        let cancelled = Box::pin(cancellation.cancelled());
        // Cancelled before it starts: the pipeline is never asked.
        let run = (!cancellation.is_cancelled())
            .then(|| self.inner.local.invoke(call, consumer, cancellation));
        let weak = Arc::downgrade(&self.inner);
        async move {
            use futures_util::future::{select, Either};
            let result = match run {
                None => {
                    cancelled_in_page(&invocation_id, &capability_id, registry.surface_version())
                }
                Some(run) => match select(run, cancelled).await {
                    Either::Left((result, _)) => result,
                    // Dropping the call ends a held wait (the confirmation is
                    // withdrawn and settles as aborted) or the executor's call.
                    Either::Right(((), run)) => {
                        drop(run);
                        cancelled_in_page(
                            &invocation_id,
                            &capability_id,
                            registry.surface_version(),
                        )
                    }
                },
            };
            if let Some(inner) = weak.upgrade() {
                let state =
                    AgentCallState::Answered(BrowserSurfaceOutcome::Invocation(result.clone()));
                inner.set_call_state(&invocation_id, state);
            }
            result
        }
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

    /// Session options for this page's registry with `identity` and
    /// `consumer`, the browser timer set (held confirmations expire on
    /// time); adjust them before [`PageSurface::connect`].
    #[cfg(all(target_arch = "wasm32", feature = "browser"))]
    pub fn session_options(
        &self,
        identity: crate::host::BrowserSurfaceIdentity,
        consumer: crate::AgentConsumer,
    ) -> BrowserSurfaceSessionOptions {
        BrowserSurfaceSessionOptions::new(self.registry().clone(), identity, consumer)
            .timer(Arc::new(crate::browser::BrowserTimer))
    }

    /// [`PageSurface::attach`] then [`PageSurface::open_socket`]: starts
    /// the browser session (held confirmations) and opens its socket to the
    /// agent host; `on_event` sees every `SocketEvent`. The caller keeps
    /// the socket (dropping it closes the connection); drop a previous one
    /// first.
    ///
    /// # Errors
    /// [`ConnectError`].
    #[cfg(all(target_arch = "wasm32", feature = "browser"))]
    pub fn connect(
        &self,
        session: BrowserSurfaceSessionOptions,
        socket: crate::browser::SessionSocketOptions,
        on_event: impl Fn(&crate::browser::SocketEvent) + 'static,
    ) -> Result<crate::browser::SessionSocket, ConnectError> {
        self.attach(session)?;
        Ok(self.open_socket(socket, on_event)?)
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
        let page = self.clone();
        crate::browser::SessionSocket::open(session, options, move |event| {
            page.socket_event(event);
            listener(event);
        })
    }

    #[cfg(all(target_arch = "wasm32", feature = "browser"))]
    fn socket_event(&self, event: &crate::browser::SocketEvent) {
        use crate::browser::{SocketEvent, StopReason};
        let connection = match event {
            SocketEvent::Call(call) => return self.record_call(call),
            SocketEvent::Answered { result, .. } => return self.record_answer(result),
            SocketEvent::Connecting { attempt } => {
                ConnectionState::Connecting { attempt: *attempt }
            }
            SocketEvent::Connected { connection_id, .. } => ConnectionState::Connected {
                connection_id: connection_id.clone(),
            },
            SocketEvent::Disconnected {
                aborted_calls,
                retry_in: Some(retry_in),
                ..
            } => ConnectionState::Retrying {
                retry_in: *retry_in,
                aborted_calls: *aborted_calls,
            },
            SocketEvent::Disconnected { retry_in: None, .. } => ConnectionState::Stopped {
                reason: "the agent session is closed".to_string(),
            },
            SocketEvent::Stopped(reason) => ConnectionState::Stopped {
                reason: match reason {
                    StopReason::GaveUp { attempts } => {
                        format!("the agent host could not be reached after {attempts} attempts")
                    }
                    StopReason::Session(e) => format!("the agent session ended: {e}"),
                    StopReason::Create { message } => {
                        format!("the socket could not be created: {message}")
                    }
                    _ => "the agent session is closed".to_string(),
                },
            },
            _ => return,
        };
        *lock(&self.inner.connection) = connection;
        self.inner.notify(PageChange::Connection);
    }
}

impl Inner {
    fn confirmation_event(&self, event: &ConfirmationEvent) {
        let mut held = lock(&self.held).clone();
        match event {
            ConfirmationEvent::Requested(call) => {
                held.retain(|h| h.confirmation_id != call.confirmation_id);
                held.push(call.clone());
                self.set_call_state(&call.invocation_id, AgentCallState::AwaitingConfirmation);
            }
            ConfirmationEvent::Settled {
                confirmation_id,
                invocation_id,
                outcome,
            } => {
                held.retain(|h| &h.confirmation_id != confirmation_id);
                self.set_call_state(invocation_id, AgentCallState::Confirmation(*outcome));
            }
        }
        self.set_held(held);
    }

    fn set_held(&self, held: Vec<HeldConfirmation>) {
        *lock(&self.held) = held;
        self.notify(PageChange::Held);
    }

    fn update_activity(
        &self,
        change: impl FnOnce(&mut std::collections::VecDeque<AgentCall>, usize),
    ) {
        change(
            &mut lock(&self.activity),
            self.max_activity.load(std::sync::atomic::Ordering::Relaxed),
        );
        self.notify(PageChange::Activity);
    }

    /// Sets the state of call `invocation_id`, unless it was answered
    /// already (an answer is final).
    fn set_call_state(&self, invocation_id: &str, state: AgentCallState) {
        let changed = {
            let mut activity = lock(&self.activity);
            match activity
                .iter_mut()
                .rev()
                .find(|c| c.invocation_id == invocation_id)
            {
                Some(call) if !matches!(call.state, AgentCallState::Answered(_)) => {
                    call.state = state;
                    true
                }
                _ => false,
            }
        };
        if changed {
            self.notify(PageChange::Activity);
        }
    }

    fn notify(&self, change: PageChange) {
        let listeners: Vec<Arc<Listener>> = lock(&self.listeners)
            .list
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            listener(change);
        }
    }
}

/// Why [`PageSurface::connect`] failed (wasm32, `browser`).
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The browser session could not start.
    #[error("the agent session could not start: {0}")]
    Session(#[from] SessionError),
    /// The socket to the agent host could not be created.
    #[error("{0}")]
    Socket(#[from] crate::browser::SocketError),
}

/// The answer to an in-page call cancelled before it ended.
fn cancelled_in_page(
    invocation_id: &str,
    capability_id: &str,
    surface_version: u64,
) -> AgentInvocationResult {
    AgentInvocationResult::err(
        invocation_id,
        capability_id,
        crate::invocation::AgentError::new(
            crate::invocation::ErrorCode::Cancelled,
            "The call was cancelled before it finished; it may or may not have taken effect.",
            crate::invocation::Retry::No,
        ),
        surface_version,
    )
}

/// A [`PageSurface`] that does not keep it alive
/// ([`PageSurface::downgrade`]).
#[derive(Clone)]
pub struct WeakPageSurface(std::sync::Weak<Inner>);

impl WeakPageSurface {
    /// The surface, unless every clone was dropped.
    pub fn upgrade(&self) -> Option<PageSurface> {
        self.0.upgrade().map(|inner| PageSurface { inner })
    }
}

impl fmt::Debug for WeakPageSurface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WeakPageSurface")
    }
}

/// A listener from [`PageSurface::on_change`]; dropping it (or
/// [`ChangeSubscription::unsubscribe`]) removes the listener.
#[must_use = "dropping the subscription unsubscribes the listener"]
pub struct ChangeSubscription {
    inner: std::sync::Weak<Inner>,
    id: u64,
}

impl fmt::Debug for ChangeSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChangeSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl ChangeSubscription {
    /// Unsubscribes now (same as dropping).
    pub fn unsubscribe(self) {}
}

impl Drop for ChangeSubscription {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            lock(&inner.listeners).list.retain(|(id, _)| *id != self.id);
        }
    }
}
