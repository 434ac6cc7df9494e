//! [`SessionSocket`]: a [`BrowserSurfaceSession`] over a browser
//! `WebSocket`, with reconnects.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{BinaryType, CloseEvent, Event, MessageEvent, WebSocket};

use super::js_error_text;
use super::timer::sleep;
use crate::host::{
    AnnouncementSubscription, BrowserSurfaceAnnouncement, BrowserSurfaceCall,
    BrowserSurfaceProgress, BrowserSurfaceResult, BrowserSurfaceSession, SessionError,
    SessionEventSubscription,
};

/// Default [`Backoff::initial`]: 500 ms.
pub const DEFAULT_BACKOFF_INITIAL: Duration = Duration::from_millis(500);
/// Default [`Backoff::max`]: 30 s.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Default [`Backoff::max_attempts`]: 10 consecutive failed attempts.
pub const DEFAULT_MAX_RECONNECT_ATTEMPTS: u32 = 10;

/// When [`SessionSocket`] reconnects after the socket closed or failed to
/// open (`docs/browser.md`, "Reconnects").
///
/// The `n`-th consecutive failure waits a random delay between half and
/// all of `min(max, initial × 2ⁿ⁻¹)` (exponential backoff with jitter,
/// so many tabs do not reconnect in step). With the defaults: 0.25–0.5 s,
/// 0.5–1 s, 1–2 s, … up to 15–30 s. A connection that opens resets the
/// count. After `max_attempts` consecutive failures the socket stops
/// ([`SocketEvent::Stopped`] with [`StopReason::GaveUp`]) — with the
/// defaults after about 4 to 8 minutes — until
/// [`SessionSocket::reconnect_now`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Backoff {
    /// Delay bound of the first retry (default [`DEFAULT_BACKOFF_INITIAL`]).
    pub initial: Duration,
    /// Largest delay bound (default [`DEFAULT_BACKOFF_MAX`]).
    pub max: Duration,
    /// Consecutive failed attempts before giving up (default
    /// [`DEFAULT_MAX_RECONNECT_ATTEMPTS`]); `0` never reconnects.
    pub max_attempts: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: DEFAULT_BACKOFF_INITIAL,
            max: DEFAULT_BACKOFF_MAX,
            max_attempts: DEFAULT_MAX_RECONNECT_ATTEMPTS,
        }
    }
}

impl Backoff {
    /// Sets [`Self::initial`].
    #[must_use]
    pub const fn with_initial(mut self, initial: Duration) -> Self {
        self.initial = initial;
        self
    }

    /// Sets [`Self::max`].
    #[must_use]
    pub const fn with_max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    /// Sets [`Self::max_attempts`].
    #[must_use]
    pub const fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The delay before retry number `failures` (1 = the first retry),
    /// with `jitter` in `[0, 1]` choosing within `[bound / 2, bound]`.
    pub fn delay(&self, failures: u32, jitter: f64) -> Duration {
        let exponent = failures.saturating_sub(1).min(31);
        let bound = self
            .initial
            .checked_mul(1u32 << exponent)
            .unwrap_or(self.max)
            .min(self.max);
        let jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            1.0
        };
        bound / 2 + (bound / 2).mul_f64(jitter)
    }
}

/// Configuration of [`SessionSocket::open`].
#[derive(Clone, Debug)]
pub struct SessionSocketOptions {
    /// The host's WebSocket URL (`wss://…`, or `ws://` on loopback). The
    /// browser sends the page origin's cookies with it; a token can also be
    /// put in the URL or in [`Self::protocols`] — browsers cannot set other
    /// headers on a WebSocket.
    pub url: String,
    /// `Sec-WebSocket-Protocol` values (none by default).
    pub protocols: Vec<String>,
    /// Reconnect policy.
    pub backoff: Backoff,
}

impl SessionSocketOptions {
    /// Options for `url` with no protocols and the default [`Backoff`].
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            protocols: Vec::new(),
            backoff: Backoff::default(),
        }
    }

    /// Adds a `Sec-WebSocket-Protocol` value.
    #[must_use]
    pub fn protocol(mut self, protocol: impl Into<String>) -> Self {
        self.protocols.push(protocol.into());
        self
    }

    /// Sets the reconnect policy.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }
}

/// Why [`SessionSocket::open`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SocketError {
    /// The browser refused to create the `WebSocket` (an invalid or
    /// non-`ws(s)` URL, a bad protocol value).
    #[error("the WebSocket could not be created: {message}")]
    Create {
        /// The browser's error text.
        message: String,
    },
}

/// Why a [`SessionSocket`] stopped for good (until
/// [`SessionSocket::reconnect_now`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// [`SessionSocket::close`] or the socket was dropped.
    Closed,
    /// [`Backoff::max_attempts`] consecutive attempts failed.
    GaveUp {
        /// How many attempts failed in a row.
        attempts: u32,
    },
    /// The session refused a new connection (expired, disposed, out of
    /// connection ids): create a new session with a fresh tab identity.
    Session(SessionError),
    /// The browser refused to create a new `WebSocket`.
    Create {
        /// The browser's error text.
        message: String,
    },
}

/// What a [`SessionSocket`] reports to the application (for a status
/// line or an activity panel). Delivered synchronously, in order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SocketEvent {
    /// A `WebSocket` is being opened; `attempt` counts consecutive tries
    /// since the last successful connection (1 = first).
    Connecting {
        /// Attempt number.
        attempt: u32,
    },
    /// The socket opened, the session connected under `connection_id`
    /// (fresh for every socket) and its announcement was sent.
    Connected {
        /// The new connection id.
        connection_id: String,
        /// The announced surface version.
        surface_version: u64,
    },
    /// A refreshed announcement was sent after a registry change.
    Announced {
        /// The connection it went on.
        connection_id: String,
        /// The announced surface version.
        surface_version: u64,
    },
    /// A call arrived and was handed to the session (only when the text
    /// parsed as a call; anything else is still answered, with
    /// `invalid-call`).
    Call(Box<BrowserSurfaceCall>),
    /// Progress of a call held for the user's confirmation (`awaiting-confirmation`,
    /// `confirmed`) was sent to the host.
    Progress(BrowserSurfaceProgress),
    /// The session answered a message; `sent` is whether the socket that
    /// brought the call was still open to carry the answer.
    Answered {
        /// The answer.
        result: Box<BrowserSurfaceResult>,
        /// Whether it was sent.
        sent: bool,
    },
    /// The socket closed; calls pending on it were aborted (answered
    /// `disconnected` by the session, not sent). `retry_in` is the delay
    /// before the next attempt, `None` when none follows.
    Disconnected {
        /// The connection that closed (`None` if it never opened).
        connection_id: Option<String>,
        /// The WebSocket close code (1006: closed without a close frame).
        code: u16,
        /// The close reason the host sent, if any.
        reason: String,
        /// How many calls were pending and aborted.
        aborted_calls: usize,
        /// Delay before the next attempt.
        retry_in: Option<Duration>,
    },
    /// No further attempts will be made.
    Stopped(StopReason),
}

type Listener = Rc<dyn Fn(&SocketEvent)>;

/// Runs a [`BrowserSurfaceSession`] over a browser `WebSocket`
/// (`docs/browser.md`, cargo feature `browser`, wasm32 only).
///
/// * **Messages** — one protocol message per text frame, as JSON: the
///   browser sends announcements, results and the progress of calls held
///   for confirmation (parse them with
///   [`BrowserToHostMessage`](crate::host::BrowserToHostMessage)), the host
///   sends calls. Binary frames are ignored.
/// * **Connect** — on every `open` the session connects under a fresh
///   random connection id (`conn-` + 32 hex digits) and its announcement
///   is sent; every later registry change sends a refreshed announcement.
/// * **Calls** — each text frame goes to
///   [`BrowserSurfaceSession::invoke_json`] (its checks and size limit
///   apply) and the answer goes back on the socket that brought it, if it
///   is still open.
/// * **Disconnect** — when the socket closes, the session disconnects:
///   pending calls are aborted (their cancellation fires) and answered
///   `disconnected`, never sent on a later connection.
/// * **Reconnect** — a new socket under a NEW connection id after the
///   [`Backoff`] delay; the host sees a reconnect of the same tab.
///
/// Dropping the `SessionSocket` closes it ([`Self::close`]). The session
/// itself is not disposed: dispose it when the page is done with it.
pub struct SessionSocket {
    shared: Rc<Shared>,
}

impl std::fmt::Debug for SessionSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSocket")
            .field("url", &self.shared.options.url)
            .field("connection_id", &self.connection_id())
            .finish()
    }
}

struct Shared {
    session: BrowserSurfaceSession,
    options: SessionSocketOptions,
    listener: Listener,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    live: Option<Live>,
    /// Counts sockets; a callback of an older socket is ignored.
    generation: u64,
    connection_id: Option<String>,
    failures: u32,
    stopped: bool,
    /// Bumped to cancel a scheduled reconnect.
    reconnect_token: u64,
    subscription: Option<AnnouncementSubscription>,
    progress: Option<SessionEventSubscription>,
}

struct Live {
    ws: WebSocket,
    generation: u64,
    _handlers: Handlers,
}

struct Handlers {
    _open: Closure<dyn FnMut(Event)>,
    _message: Closure<dyn FnMut(MessageEvent)>,
    _close: Closure<dyn FnMut(CloseEvent)>,
}

impl SessionSocket {
    /// Opens the first socket to `options.url` for `session` and reports
    /// every [`SocketEvent`] to `listener`.
    ///
    /// # Errors
    /// [`SocketError::Create`] when the browser refuses the URL or a
    /// protocol value; nothing is retried then.
    pub fn open(
        session: BrowserSurfaceSession,
        options: SessionSocketOptions,
        listener: impl Fn(&SocketEvent) + 'static,
    ) -> Result<Self, SocketError> {
        let shared = Rc::new(Shared {
            session,
            options,
            listener: Rc::new(listener),
            state: RefCell::new(State::default()),
        });
        let weak = Rc::downgrade(&shared);
        // Announcements after registry changes (the session publishes them
        // only while connected).
        let subscription = shared.session.subscribe(move |announcement| {
            if let Some(shared) = weak.upgrade() {
                shared.send_announcement(announcement);
            }
        });
        if let Ok(subscription) = subscription {
            shared.state.borrow_mut().subscription = Some(subscription);
        }
        // Progress of calls held for confirmation (ConfirmationMode::Hold).
        let weak = Rc::downgrade(&shared);
        let progress = shared.session.on_progress(move |progress| {
            if let Some(shared) = weak.upgrade() {
                shared.send_progress(progress);
            }
        });
        if let Ok(progress) = progress {
            shared.state.borrow_mut().progress = Some(progress);
        }
        shared
            .open_socket()
            .map_err(|message| SocketError::Create { message })?;
        Ok(SessionSocket { shared })
    }

    /// The connection id of the open connection, if any.
    pub fn connection_id(&self) -> Option<String> {
        self.shared.state.borrow().connection_id.clone()
    }

    /// Whether a connection is open (the announcement was sent).
    pub fn is_connected(&self) -> bool {
        self.shared.state.borrow().connection_id.is_some()
    }

    /// Closes the socket (code 1000) and stops reconnecting; pending calls
    /// are aborted. Reports [`SocketEvent::Disconnected`] (if a socket was
    /// open or opening) and [`SocketEvent::Stopped`] with
    /// [`StopReason::Closed`].
    pub fn close(&self) {
        self.shared.close();
    }

    /// Connects now: after the socket stopped (gave up, closed), or instead
    /// of waiting for a scheduled retry. Does nothing while a socket is open
    /// or opening. The attempt count starts again.
    ///
    /// # Errors
    /// [`SocketError::Create`] when the browser refuses to create the
    /// socket.
    pub fn reconnect_now(&self) -> Result<(), SocketError> {
        {
            let mut state = self.shared.state.borrow_mut();
            if state.live.is_some() {
                return Ok(());
            }
            state.stopped = false;
            state.failures = 0;
            state.reconnect_token += 1;
        }
        self.shared
            .open_socket()
            .map_err(|message| SocketError::Create { message })
    }
}

impl Drop for SessionSocket {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// A fresh connection id: `conn-` + 32 hex digits from the platform's
/// random source.
fn fresh_connection_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // crypto.getRandomValues is missing: still unique within the page.
        let a = (js_sys::Math::random() * f64::from(u32::MAX)) as u64;
        let b = js_sys::Date::now() as u64;
        bytes[..8].copy_from_slice(&a.to_le_bytes());
        bytes[8..].copy_from_slice(&b.to_le_bytes());
    }
    format!("conn-{}", hex::encode(bytes))
}

impl Shared {
    fn emit(&self, event: &SocketEvent) {
        (self.listener)(event);
    }

    /// Creates a socket and installs its handlers.
    fn open_socket(self: &Rc<Self>) -> Result<(), String> {
        let (generation, attempt) = {
            let mut state = self.state.borrow_mut();
            if state.stopped || state.live.is_some() {
                return Ok(());
            }
            state.generation += 1;
            (state.generation, state.failures + 1)
        };
        self.emit(&SocketEvent::Connecting { attempt });
        let created = if self.options.protocols.is_empty() {
            WebSocket::new(&self.options.url)
        } else {
            let protocols = js_sys::Array::new();
            for p in &self.options.protocols {
                protocols.push(&p.into());
            }
            WebSocket::new_with_str_sequence(&self.options.url, &protocols)
        };
        let ws = created.map_err(|e| js_error_text(&e))?;
        ws.set_binary_type(BinaryType::Arraybuffer);
        let weak = Rc::downgrade(self);
        let open = Closure::<dyn FnMut(Event)>::new({
            let weak = weak.clone();
            move |_event: Event| {
                if let Some(shared) = weak.upgrade() {
                    shared.on_open(generation);
                }
            }
        });
        let message = Closure::<dyn FnMut(MessageEvent)>::new({
            let weak = weak.clone();
            move |event: MessageEvent| {
                if let Some(shared) = weak.upgrade() {
                    if let Some(text) = event.data().as_string() {
                        shared.on_message(generation, text);
                    }
                }
            }
        });
        let close = Closure::<dyn FnMut(CloseEvent)>::new({
            let weak = weak.clone();
            move |event: CloseEvent| {
                if let Some(shared) = weak.upgrade() {
                    shared.on_close(generation, event.code(), event.reason());
                }
            }
        });
        ws.set_onopen(Some(open.as_ref().unchecked_ref()));
        ws.set_onmessage(Some(message.as_ref().unchecked_ref()));
        ws.set_onclose(Some(close.as_ref().unchecked_ref()));
        self.state.borrow_mut().live = Some(Live {
            ws,
            generation,
            _handlers: Handlers {
                _open: open,
                _message: message,
                _close: close,
            },
        });
        Ok(())
    }

    fn is_current(&self, generation: u64) -> bool {
        self.state
            .borrow()
            .live
            .as_ref()
            .is_some_and(|l| l.generation == generation)
    }

    fn on_open(self: &Rc<Self>, generation: u64) {
        if !self.is_current(generation) {
            return;
        }
        let connection_id = fresh_connection_id();
        match self.session.connect(connection_id.clone()) {
            Ok(announcement) => {
                {
                    let mut state = self.state.borrow_mut();
                    state.connection_id = Some(connection_id.clone());
                    state.failures = 0;
                }
                self.send(generation, &announcement);
                self.emit(&SocketEvent::Connected {
                    connection_id,
                    surface_version: announcement.snapshot.surface_version,
                });
            }
            Err(error) => self.stop_for_good(StopReason::Session(error)),
        }
    }

    fn on_message(self: &Rc<Self>, generation: u64, text: String) {
        if !self.is_current(generation) {
            return;
        }
        if let Ok(call) = serde_json::from_str::<BrowserSurfaceCall>(&text) {
            self.emit(&SocketEvent::Call(Box::new(call)));
        }
        let session = self.session.clone();
        let weak = Rc::downgrade(self);
        js_sys::futures::spawn_local(async move {
            let result = session.invoke_json(&text).await;
            if let Some(shared) = weak.upgrade() {
                let sent = shared.send(generation, &result);
                shared.emit(&SocketEvent::Answered {
                    result: Box::new(result),
                    sent,
                });
            }
        });
    }

    fn on_close(self: &Rc<Self>, generation: u64, code: u16, reason: String) {
        let Some((live, connection_id)) = self.take_live(generation) else {
            return;
        };
        retire(live);
        let aborted_calls = self.disconnect_session(connection_id.is_some());
        let retry_in = self.schedule_reconnect();
        self.emit(&SocketEvent::Disconnected {
            connection_id,
            code,
            reason,
            aborted_calls,
            retry_in,
        });
        if retry_in.is_none() {
            let (stopped_by_us, attempts) = {
                let state = self.state.borrow();
                (state.stopped, state.failures)
            };
            if stopped_by_us {
                self.emit(&SocketEvent::Stopped(StopReason::GaveUp { attempts }));
            }
        }
    }

    /// Takes the live socket if it is `generation` and detaches its
    /// handlers.
    fn take_live(&self, generation: u64) -> Option<(Live, Option<String>)> {
        let mut state = self.state.borrow_mut();
        if state.live.as_ref().map(|l| l.generation) != Some(generation) {
            return None;
        }
        let live = state.live.take()?;
        Some((live, state.connection_id.take()))
    }

    /// Disconnects the session if a connection was open; returns how many
    /// calls were pending.
    fn disconnect_session(&self, was_connected: bool) -> usize {
        if !was_connected {
            return 0;
        }
        let pending = self.session.usage().pending_calls;
        self.session.disconnect();
        pending
    }

    /// Schedules the next attempt; `None` when stopped or out of attempts
    /// (then `stopped` is set).
    fn schedule_reconnect(self: &Rc<Self>) -> Option<Duration> {
        let (delay, token) = {
            let mut state = self.state.borrow_mut();
            if state.stopped {
                return None;
            }
            state.failures = state.failures.saturating_add(1);
            if state.failures > self.options.backoff.max_attempts {
                state.failures -= 1;
                state.stopped = true;
                return None;
            }
            state.reconnect_token += 1;
            (
                self.options
                    .backoff
                    .delay(state.failures, js_sys::Math::random()),
                state.reconnect_token,
            )
        };
        let weak = Rc::downgrade(self);
        js_sys::futures::spawn_local(async move {
            sleep(delay).await;
            let Some(shared) = weak.upgrade() else {
                return;
            };
            let due = {
                let state = shared.state.borrow();
                state.reconnect_token == token && !state.stopped && state.live.is_none()
            };
            if due {
                if let Err(message) = shared.open_socket() {
                    shared.stop_for_good(StopReason::Create { message });
                }
            }
        });
        Some(delay)
    }

    fn stop_for_good(self: &Rc<Self>, reason: StopReason) {
        let (live, connection_id) = {
            let mut state = self.state.borrow_mut();
            state.stopped = true;
            state.reconnect_token += 1;
            (state.live.take(), state.connection_id.take())
        };
        if let Some(live) = live {
            let _ = live.ws.close_with_code(1000);
            retire(live);
        }
        self.disconnect_session(connection_id.is_some());
        self.emit(&SocketEvent::Stopped(reason));
    }

    fn close(&self) {
        let (live, connection_id, was_stopped) = {
            let mut state = self.state.borrow_mut();
            let was_stopped = state.stopped && state.live.is_none();
            state.stopped = true;
            state.reconnect_token += 1;
            state.subscription = None;
            state.progress = None;
            (state.live.take(), state.connection_id.take(), was_stopped)
        };
        let had_socket = live.is_some();
        if let Some(live) = live {
            let _ = live.ws.close_with_code(1000);
            retire(live);
        }
        let aborted_calls = self.disconnect_session(connection_id.is_some());
        if had_socket {
            self.emit(&SocketEvent::Disconnected {
                connection_id,
                code: 1000,
                reason: String::new(),
                aborted_calls,
                retry_in: None,
            });
        }
        if !was_stopped {
            self.emit(&SocketEvent::Stopped(StopReason::Closed));
        }
    }

    fn send_announcement(&self, announcement: &BrowserSurfaceAnnouncement) {
        let generation = {
            let state = self.state.borrow();
            match (&state.live, &state.connection_id) {
                (Some(live), Some(id)) if *id == announcement.connection_id => live.generation,
                _ => return,
            }
        };
        if self.send(generation, announcement) {
            self.emit(&SocketEvent::Announced {
                connection_id: announcement.connection_id.clone(),
                surface_version: announcement.snapshot.surface_version,
            });
        }
    }

    fn send_progress(&self, progress: &BrowserSurfaceProgress) {
        let generation = {
            let state = self.state.borrow();
            match (&state.live, &state.connection_id) {
                (Some(live), Some(id)) if *id == progress.connection_id => live.generation,
                _ => return,
            }
        };
        if self.send(generation, progress) {
            self.emit(&SocketEvent::Progress(progress.clone()));
        }
    }

    /// Sends `message` as JSON on the socket `generation` if it is still
    /// the open one.
    fn send(&self, generation: u64, message: &impl serde::Serialize) -> bool {
        let Ok(text) = serde_json::to_string(message) else {
            return false;
        };
        let state = self.state.borrow();
        match &state.live {
            Some(live)
                if live.generation == generation && live.ws.ready_state() == WebSocket::OPEN =>
            {
                live.ws.send_with_str(&text).is_ok()
            }
            _ => false,
        }
    }
}

/// Detaches a socket's handlers and frees them after the current callback
/// returned (a closure is never dropped while it runs).
fn retire(live: Live) {
    live.ws.set_onopen(None);
    live.ws.set_onmessage(None);
    live.ws.set_onclose(None);
    if live.ws.ready_state() == WebSocket::CONNECTING || live.ws.ready_state() == WebSocket::OPEN {
        let _ = live.ws.close_with_code(1000);
    }
    js_sys::futures::spawn_local(async move {
        drop(live);
    });
}
