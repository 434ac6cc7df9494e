//! The browser side of the session protocol (`docs/host.md`): [`BrowserSurfaceSession`]
//! announces a registry's live surface to a remote agent host and answers
//! its correlated calls.
//!
//! Order of checks in [`BrowserSurfaceSession::invoke`] (the first failure
//! answers; only the last step reaches the registry):
//!
//! 1. expired ⇒ `session-expired` (state cleared first); disposed, or no
//!    connection open (never connected, or after `disconnect`) ⇒
//!    `disconnected` — before the shape and identity checks, as the
//!    original answers: a call for another tab or with an empty `runId`
//!    gets `disconnected` then, not `wrong-session` or `invalid-call`;
//! 2. envelope longer than [`MAX_ENVELOPE_CHARS`](super::MAX_ENVELOPE_CHARS)
//!    (the text received by `invoke_json`; the compact serialization for
//!    an already parsed call), `protocolVersion` absent or ≠ 1, `type`
//!    absent or not `surface-call`, an empty id or one longer than
//!    [`MAX_ID_CHARS`](super::MAX_ID_CHARS), an invocation id that breaks
//!    the invocation-id rule ([`check_invocation_id`]: 1–256 visible ASCII
//!    characters, stricter than the original), or a missing
//!    `registrationId`/`surfaceVersion` ⇒ `invalid-call` (with
//!    [`ConfirmationMode::Hold`], also a call carrying a `confirmationId`:
//!    the page decides confirmations itself);
//! 3. identity (app, build, session, tab) ≠ the session's ⇒ `wrong-session`;
//! 4. any connection id but the current one (closed, or never opened) ⇒
//!    `disconnected`;
//! 5. invocation id already recorded: identical envelope ⇒ joins the call
//!    in flight or returns the frozen result (even if the surface changed
//!    since); different envelope ⇒ `invocation-conflict`. Envelopes are
//!    compared by their canonical JSON (keys sorted, no whitespace), as the
//!    original does: for `invoke_json` the whole envelope as received
//!    (unknown fields count, an absent `input` differs from `{}`), for
//!    `invoke` the serialization of the parsed call (`input` always
//!    present);
//! 6. `maxEntries` calls retained ⇒ `capacity-exceeded` (nothing evicted;
//!    checked before staleness, as the original does);
//! 7. `surfaceVersion` ≠ the registry's current version, the
//!    capability/registration pair not in the consumer's current snapshot,
//!    or an `instanceId` that is not the instance of that registration's
//!    component (a view capability's component, a procedure's `context`;
//!    a procedure without one has none) ⇒ `stale-surface` (only
//!    discoverable capabilities are dispatched);
//! 8. dispatch to the registry; the call is recorded and its result frozen
//!    (with [`ConfirmationMode::Hold`], a `CONFIRMATION_REQUIRED` answer
//!    first waits for the user's decision: see `docs/host.md`,
//!    "Confirmation while the call waits").
//!
//! Only dispatched calls are recorded: rejections are stateless, so
//! garbage cannot fill the table. The table is the shared invocation-id
//! ledger ([`crate::ledger::IdLedger`], also used by the registry and the
//! agent host): per recorded call it keeps a 16-byte keyed digest of the
//! invocation id (whatever its length), the 32-byte SHA-256 of the
//! envelope — never the envelope — and, once settled, the frozen outcome;
//! the ledger's bound of ids and of kept outcomes are both `max_entries`,
//! so nothing is ever evicted. What only the session does stays here: the
//! futures of calls in flight, which duplicates join. Every bound is listed
//! in `docs/limits.md`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures_util::future::{AbortHandle, Abortable, FutureExt, Shared};
use serde_json::Value;

use super::confirm::{
    self, ConfirmationDecisionError, ConfirmationEvent, ConfirmationMode, HeldConfirmation,
    HeldTable, HoldContext, SessionEventSubscription,
};
use super::progress::BrowserSurfaceProgress;
use super::source::{SourceListener, SourceSubscription, SurfaceSource};
use super::wire::{
    echo_ids, serialized_chars, within_envelope_limit, BrowserSurfaceAnnouncement,
    BrowserSurfaceCall, BrowserSurfaceIdentity, BrowserSurfaceOutcome, BrowserSurfaceResult,
    RejectionReason, ResultType, MAX_ID_CHARS, PROTOCOL_VERSION,
};
use super::wire_text::{from_json_lossy, from_lossy_copy};
use crate::cancellation::Cancellation;
use crate::clock::{Clock, SystemClock, Timer};
use crate::hash::{sha256, IdDigest, IdDigester};
use crate::invocation::{check_invocation_id, AgentConsumer};
use crate::ledger::{Admission, IdLedger, Known, Status};
use crate::manifest::canonical_json;
use crate::snapshot::SurfaceSnapshot;
use crate::sync::BoxFuture;

/// Default bound of each retained collection (calls, connection ids,
/// listeners): 1,000.
pub const DEFAULT_MAX_ENTRIES: usize = 1_000;

/// Default adapter lifetime: 30 minutes.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 60);

/// Receives every refreshed announcement. `Send + Sync` on native targets,
/// plain on `wasm32` (browser closures capture `Rc` signals).
#[cfg(not(target_arch = "wasm32"))]
pub type AnnouncementListener = dyn Fn(&BrowserSurfaceAnnouncement) + Send + Sync;
/// Receives every refreshed announcement. `Send + Sync` on native targets,
/// plain on `wasm32` (browser closures capture `Rc` signals).
#[cfg(target_arch = "wasm32")]
pub type AnnouncementListener = dyn Fn(&BrowserSurfaceAnnouncement);

/// Configuration of [`BrowserSurfaceSession::new`].
pub struct BrowserSurfaceSessionOptions {
    /// The registry to expose (already created with the compiler-generated
    /// authority).
    pub registry: Arc<dyn SurfaceSource>,
    /// This tab's identity; `tab_id` must be fresh for every document
    /// lifetime and never reused.
    pub identity: BrowserSurfaceIdentity,
    /// The consumer snapshots are computed for and calls run as.
    pub consumer: AgentConsumer,
    /// Bound of each retained collection: calls, connection ids, listeners
    /// (default [`DEFAULT_MAX_ENTRIES`]).
    pub max_entries: usize,
    /// Lifetime of the whole adapter from creation (default
    /// [`DEFAULT_TTL`]).
    pub ttl: Duration,
    /// Time source for expiry (default [`SystemClock`]). With
    /// [`ConfirmationMode::Hold`] it must read the registry's time: held
    /// confirmations expire at the registry's `expiresAtMs`.
    pub clock: Arc<dyn Clock>,
    /// How calls that need local confirmation are answered (default
    /// [`ConfirmationMode::Return`]; docs/host.md, "Confirmation while the
    /// call waits").
    pub confirmations: ConfirmationMode,
    /// Wakes held calls when their confirmation expires (default none:
    /// expiry is then noticed at the next `invoke`, `approve`, `reject` or
    /// `held_confirmations`, and the host's own timeout bounds the wait).
    pub timer: Option<Arc<dyn Timer>>,
}

impl BrowserSurfaceSessionOptions {
    /// Options with the defaults: 1,000 entries, 30 minutes, system clock.
    /// `registry` is usually a `SurfaceRegistry` clone (clones share one
    /// registry).
    pub fn new(
        registry: impl SurfaceSource,
        identity: BrowserSurfaceIdentity,
        consumer: AgentConsumer,
    ) -> Self {
        Self {
            registry: Arc::new(registry),
            identity,
            consumer,
            max_entries: DEFAULT_MAX_ENTRIES,
            ttl: DEFAULT_TTL,
            clock: Arc::new(SystemClock),
            confirmations: ConfirmationMode::Return,
            timer: None,
        }
    }
    /// Sets `max_entries`.
    pub fn max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries;
        self
    }
    /// Sets `ttl`.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
    /// Sets the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    /// Sets how calls that need local confirmation are answered
    /// ([`ConfirmationMode::Hold`]: they wait for the user's decision).
    pub fn confirmations(mut self, mode: ConfirmationMode) -> Self {
        self.confirmations = mode;
        self
    }
    /// Sets the timer that ends held calls when their confirmation expires.
    pub fn timer(mut self, timer: Arc<dyn Timer>) -> Self {
        self.timer = Some(timer);
        self
    }
}

/// Why [`BrowserSurfaceSession::connect`] or
/// [`BrowserSurfaceSession::subscribe`] refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The adapter outlived its ttl; dispose it and create a session with a
    /// fresh identity.
    #[error("the browser surface session expired; dispose it and create a new session with a fresh tab identity")]
    Expired,
    /// The adapter was disposed.
    #[error("the browser surface session was disposed; create a new session")]
    Disposed,
    /// The connection id is empty.
    #[error("connection ids must be non-empty")]
    EmptyConnectionId,
    /// The connection id was used before in this session; ids are never
    /// reused.
    #[error("connection id `{0}` was already used by this session; generate a fresh id for every connection")]
    ConnectionIdReused(String),
    /// `max_entries` items of `collection` are retained.
    #[error("the session already holds {max} {collection}; nothing is evicted — dispose the session and create a new one")]
    CapacityExceeded {
        /// The full collection.
        collection: SessionCollection,
        /// The bound.
        max: usize,
    },
}

/// A bounded collection of a session that refuses new entries when full
/// (`SessionError::CapacityExceeded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionCollection {
    /// The connection ids the session has opened.
    ConnectionIds,
    /// The announcement listeners.
    Listeners,
    /// The confirmation listeners.
    ConfirmationListeners,
    /// The progress listeners.
    ProgressListeners,
}

impl std::fmt::Display for SessionCollection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SessionCollection::ConnectionIds => "connection ids",
            SessionCollection::Listeners => "listeners",
            SessionCollection::ConfirmationListeners => "confirmation listeners",
            SessionCollection::ProgressListeners => "progress listeners",
        })
    }
}

/// Shared output of a dispatched call.
type CallFuture = Shared<BoxFuture<'static, BrowserSurfaceOutcome>>;

/// A recorded call still in flight: what duplicates join and what
/// `disconnect` aborts.
struct PendingCall {
    future: CallFuture,
    abort: AbortHandle,
    cancellation: Cancellation,
}

/// The envelope value of a recorded call in the ledger — its replay
/// identity: the SHA-256 of the envelope's canonical JSON
/// ([`canonical_json`]: object keys sorted, no whitespace, as the
/// original's fingerprint) instead of the envelope itself, which keeps a
/// full table small (see `benches/host.rs`). Key order and formatting on
/// the wire never matter (whatever serde_json's `preserve_order`).
type EnvelopeDigest = [u8; 32];

/// The recorded calls: invocation ids (as keyed digests) with their
/// envelope digests and frozen outcomes.
type CallLedger = IdLedger<EnvelopeDigest, BrowserSurfaceOutcome>;

/// What a call's replay identity is computed from.
#[derive(Clone, Copy, Debug)]
enum Envelope<'a> {
    /// `invoke_json`: the envelope as received, parsed (unknown fields
    /// included, an absent `input` distinct from `{}`); its text was
    /// within the size limit.
    Received(&'a Value),
    /// `invoke`: the call's serialization, whose size is still to be
    /// measured.
    Parsed,
}

/// The replay identity of `call` (step 2): the SHA-256 of the canonical
/// JSON of `envelope`; `None` when an already parsed call serializes to
/// more than [`MAX_ENVELOPE_CHARS`](super::MAX_ENVELOPE_CHARS) (or not at
/// all).
fn envelope_digest(call: &BrowserSurfaceCall, envelope: Envelope<'_>) -> Option<EnvelopeDigest> {
    let text = match envelope {
        Envelope::Received(value) => canonical_json(value),
        Envelope::Parsed => {
            // As long as the compact serialization: sorting keys moves
            // characters, it adds none.
            let text = canonical_json(&serde_json::to_value(call).ok()?);
            if !within_envelope_limit(&text) {
                return None;
            }
            text
        }
    };
    Some(sha256(text.as_bytes()))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Active,
    Expired,
    Disposed,
}

impl Phase {
    /// `Ok` while active; the error a disposed or expired session answers
    /// `connect` and `subscribe` with.
    fn require_active(self) -> Result<(), SessionError> {
        match self {
            Phase::Active => Ok(()),
            Phase::Expired => Err(SessionError::Expired),
            Phase::Disposed => Err(SessionError::Disposed),
        }
    }
}

struct ListenerEntry {
    id: u64,
    listener: Arc<AnnouncementListener>,
}

struct State {
    phase: Phase,
    connection: Option<String>,
    used_connections: HashSet<String>,
    listeners: Vec<ListenerEntry>,
    next_id: u64,
    /// Every recorded call (pending or frozen), at most `max_entries`.
    calls: CallLedger,
    /// The calls of `calls` still pending, by id digest.
    pending: HashMap<IdDigest, PendingCall>,
    source_subscription: Option<Box<dyn SourceSubscription>>,
    /// Call futures aborted under the lock, dropped once it is released
    /// (dropping a held call runs its clean-up, which calls listeners).
    graveyard: Vec<PendingCall>,
}

/// The locked state; drops the aborted call futures after unlocking.
struct StateGuard<'a> {
    guard: Option<MutexGuard<'a, State>>,
}

impl std::ops::Deref for StateGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.guard.as_deref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.guard.as_deref_mut().expect("present until dropped")
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        let graveyard = self
            .guard
            .as_mut()
            .map(|g| std::mem::take(&mut g.graveyard))
            .unwrap_or_default();
        drop(self.guard.take());
        drop(graveyard);
    }
}

/// One discoverable registration of a capability: its id and the
/// instance id of its component (a view capability's component, a
/// procedure's `context`), if any.
struct Discoverable {
    registration: String,
    instance: Option<String>,
}

/// The discoverable registrations of each capability id in one snapshot.
struct SnapshotIndex {
    version: u64,
    registrations: HashMap<String, Vec<Discoverable>>,
}

impl SnapshotIndex {
    fn build(snapshot: &SurfaceSnapshot) -> Self {
        let mut registrations: HashMap<String, Vec<Discoverable>> = HashMap::new();
        let mut add = |cap: &str, registration: &str, instance: Option<&str>| {
            registrations
                .entry(cap.to_string())
                .or_default()
                .push(Discoverable {
                    registration: registration.to_string(),
                    instance: instance.map(str::to_string),
                });
        };
        for p in &snapshot.procedures {
            let instance = p.context.as_ref().map(|c| c.instance_id.as_str());
            add(&p.procedure_id, &p.registration_id, instance);
        }
        for c in &snapshot.components {
            let instance = Some(c.instance_id.as_str());
            for o in &c.observations {
                add(&o.capability_id, &c.registration_id, instance);
            }
            for a in &c.actions {
                add(&a.capability_id, &c.registration_id, instance);
            }
        }
        SnapshotIndex {
            version: snapshot.surface_version,
            registrations,
        }
    }

    /// Whether `registration_id` serves `capability_id` in this snapshot
    /// and, when the call names an `instance_id`, belongs to a component
    /// of that instance (the original's `present` check; a procedure with
    /// no `context` belongs to none).
    fn discoverable(
        &self,
        capability_id: &str,
        registration_id: &str,
        instance_id: Option<&str>,
    ) -> bool {
        self.registrations.get(capability_id).is_some_and(|regs| {
            regs.iter().any(|d| {
                d.registration == registration_id
                    && instance_id.is_none_or(|i| d.instance.as_deref() == Some(i))
            })
        })
    }
}

struct Inner {
    source: Arc<dyn SurfaceSource>,
    identity: BrowserSurfaceIdentity,
    consumer: AgentConsumer,
    max_entries: usize,
    expires_at_ms: u64,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    index: Mutex<Option<Arc<SnapshotIndex>>>,
    confirmations: ConfirmationMode,
    timer: Option<Arc<dyn Timer>>,
    held: Arc<HeldTable>,
}

/// The browser side of a remote agent session (`docs/host.md`): announces the
/// registry's surface for one consumer over one connection at a time and
/// answers the host's correlated calls, with bounded replay protection.
///
/// Cheap to clone (all clones share one adapter). Every method first
/// checks expiry: once `ttl` has elapsed since creation, the first API call
/// (or registry event) clears every retained call, connection id and
/// listener, aborts pending calls, and from then on `announcement()` is
/// `None`, `connect`/`subscribe` fail with [`SessionError::Expired`] and
/// `invoke` answers `session-expired`.
///
/// ```ignore
/// let session = BrowserSurfaceSession::new(BrowserSurfaceSessionOptions::new(
///     Arc::new(registry), identity, AgentConsumer::embedded(user_id)));
/// transport.send(&session.connect(uuid())?);
/// let _sub = session.subscribe(move |a| transport.send(a))?;
/// // per call: transport.send(&session.invoke(call).await);
/// // on disconnect: session.disconnect(); on reconnect: session.connect(new_uuid())
/// ```
#[derive(Clone)]
pub struct BrowserSurfaceSession {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BrowserSurfaceSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("BrowserSurfaceSession")
            .field("identity", &self.inner.identity)
            .field("phase", &state.phase)
            .field("connection", &state.connection)
            .field("calls", &state.calls.len())
            .finish()
    }
}

/// A listener registration from [`BrowserSurfaceSession::subscribe`];
/// dropping it (or calling [`AnnouncementSubscription::unsubscribe`])
/// removes the listener.
#[must_use = "dropping the subscription unsubscribes the listener"]
pub struct AnnouncementSubscription {
    inner: Weak<Inner>,
    id: u64,
}

impl AnnouncementSubscription {
    /// Removes the listener now.
    pub fn unsubscribe(self) {}
}

impl Drop for AnnouncementSubscription {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.lock().listeners.retain(|l| l.id != self.id);
        }
    }
}

impl std::fmt::Debug for AnnouncementSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnnouncementSubscription")
            .field("id", &self.id)
            .finish()
    }
}

/// How many entries each collection of a session retains, for monitoring
/// (and the "when full, rotate the session" decision).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionUsage {
    /// Recorded calls (pending and frozen).
    pub calls: usize,
    /// Calls still in flight.
    pub pending_calls: usize,
    /// Connection ids used so far.
    pub connection_ids: usize,
    /// Live listeners.
    pub listeners: usize,
}

impl Inner {
    fn lock(&self) -> StateGuard<'_> {
        StateGuard {
            guard: Some(self.state.lock().unwrap_or_else(|p| p.into_inner())),
        }
    }

    /// Checks expiry; on the first call after the deadline clears the state
    /// and returns the subscription guard to drop outside the lock.
    fn expire_if_due(&self, state: &mut State) -> Option<Box<dyn SourceSubscription>> {
        if state.phase == Phase::Active && self.clock.now_ms() >= self.expires_at_ms {
            state.phase = Phase::Expired;
            self.held.clear_listeners();
            return clear(state, RejectionReason::SessionExpired);
        }
        None
    }

    fn index(&self, version: u64) -> Arc<SnapshotIndex> {
        {
            let cached = self.index.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(idx) = cached.as_ref().filter(|i| i.version == version) {
                return idx.clone();
            }
        }
        let snapshot = self.source.snapshot(&self.consumer);
        let idx = Arc::new(SnapshotIndex::build(&snapshot));
        *self.index.lock().unwrap_or_else(|p| p.into_inner()) = Some(idx.clone());
        idx
    }

    fn on_source_change(self: &Arc<Self>) {
        let (connection, listeners, guard) = {
            let mut state = self.lock();
            let guard = self.expire_if_due(&mut state);
            let connection = match (state.phase, &state.connection) {
                (Phase::Active, Some(c)) => Some(c.clone()),
                _ => None,
            };
            let listeners: Vec<_> = state.listeners.iter().map(|l| l.listener.clone()).collect();
            (connection, listeners, guard)
        };
        drop(guard);
        let Some(connection_id) = connection else {
            return;
        };
        if listeners.is_empty() {
            return;
        }
        let announcement = self.announce(connection_id);
        for listener in listeners {
            listener(&announcement);
        }
    }

    fn announce(&self, connection_id: String) -> BrowserSurfaceAnnouncement {
        BrowserSurfaceAnnouncement::new(
            self.identity.clone(),
            connection_id,
            self.source.snapshot(&self.consumer),
        )
    }
}

/// Aborts pending calls (freezing `reason` as their result), and clears
/// everything; returns the source subscription to drop outside the lock.
fn clear(state: &mut State, reason: RejectionReason) -> Option<Box<dyn SourceSubscription>> {
    abort_pending(state, reason);
    state.calls.clear();
    state.listeners.clear();
    state.used_connections.clear();
    state.connection = None;
    state.source_subscription.take()
}

/// Aborts every pending call and freezes `reason` as its outcome.
fn abort_pending(state: &mut State, reason: RejectionReason) {
    for (id, pending) in state.pending.drain() {
        pending.cancellation.cancel();
        pending.abort.abort();
        state
            .calls
            .complete(id, BrowserSurfaceOutcome::rejected(reason));
        state.graveyard.push(pending);
    }
}

/// Shape checks of step 2 (size is checked separately): ids are 1 to
/// [`MAX_ID_CHARS`] characters, the invocation id follows the one
/// invocation-id rule ([`check_invocation_id`]).
fn shape_ok(call: &BrowserSurfaceCall) -> bool {
    let id_ok = |id: &str| {
        !id.is_empty() && id.len() <= 4 * MAX_ID_CHARS && serialized_chars(id) <= MAX_ID_CHARS
    };
    let inv = &call.invocation;
    call.protocol_version == PROTOCOL_VERSION
        && id_ok(&call.connection_id)
        && id_ok(&call.run_id)
        && id_ok(&call.tool_call_id)
        && check_invocation_id(&inv.invocation_id).is_ok()
        && id_ok(&inv.capability_id)
        && inv.registration_id.as_deref().is_some_and(id_ok)
        && inv.instance_id.as_deref().is_none_or(id_ok)
        && inv.confirmation_id.as_deref().is_none_or(id_ok)
        && inv.surface_version.is_some()
}

impl BrowserSurfaceSession {
    /// Creates the adapter and subscribes to the registry's
    /// changes. Its ttl starts now (per `options.clock`).
    pub fn new(options: BrowserSurfaceSessionOptions) -> Self {
        let ttl_ms = u64::try_from(options.ttl.as_millis()).unwrap_or(u64::MAX);
        let inner = Arc::new(Inner {
            source: options.registry,
            identity: options.identity,
            consumer: options.consumer,
            max_entries: options.max_entries,
            expires_at_ms: options.clock.now_ms().saturating_add(ttl_ms),
            clock: options.clock,
            state: Mutex::new(State {
                phase: Phase::Active,
                connection: None,
                used_connections: HashSet::new(),
                listeners: Vec::new(),
                next_id: 0,
                calls: IdLedger::new(
                    IdDigester::random(),
                    options.max_entries,
                    options.max_entries,
                ),
                pending: HashMap::new(),
                source_subscription: None,
                graveyard: Vec::new(),
            }),
            index: Mutex::new(None),
            confirmations: options.confirmations,
            timer: options.timer,
            held: HeldTable::new(options.max_entries),
        });
        let weak = Arc::downgrade(&inner);
        let listener: Arc<SourceListener> = Arc::new(move |_version| {
            if let Some(inner) = weak.upgrade() {
                inner.on_source_change();
            }
        });
        let subscription = inner.source.subscribe(listener);
        inner.lock().source_subscription = Some(subscription);
        BrowserSurfaceSession { inner }
    }

    /// This tab's identity.
    pub fn identity(&self) -> &BrowserSurfaceIdentity {
        &self.inner.identity
    }

    /// The consumer calls run as.
    pub fn consumer(&self) -> &AgentConsumer {
        &self.inner.consumer
    }

    /// Opens `connection_id` (closing the previous connection, whose pending
    /// calls are aborted as by [`Self::disconnect`]) and returns the
    /// announcement to send on it.
    ///
    /// # Errors
    /// [`SessionError::Expired`], [`SessionError::Disposed`],
    /// [`SessionError::EmptyConnectionId`],
    /// [`SessionError::ConnectionIdReused`] (ids are never reused within a
    /// session), [`SessionError::CapacityExceeded`] when `max_entries`
    /// connection ids were used.
    pub fn connect(
        &self,
        connection_id: impl Into<String>,
    ) -> Result<BrowserSurfaceAnnouncement, SessionError> {
        let connection_id = connection_id.into();
        let guard;
        {
            let mut state = self.inner.lock();
            guard = self.inner.expire_if_due(&mut state);
            state.phase.require_active()?;
            if connection_id.is_empty() {
                return Err(SessionError::EmptyConnectionId);
            }
            if state.used_connections.contains(&connection_id) {
                return Err(SessionError::ConnectionIdReused(connection_id));
            }
            if state.used_connections.len() >= self.inner.max_entries {
                return Err(SessionError::CapacityExceeded {
                    collection: SessionCollection::ConnectionIds,
                    max: self.inner.max_entries,
                });
            }
            abort_pending(&mut state, RejectionReason::Disconnected);
            state.used_connections.insert(connection_id.clone());
            state.connection = Some(connection_id.clone());
        }
        drop(guard);
        confirm::abort_all(&self.inner.held, &*self.inner.source);
        Ok(self.inner.announce(connection_id))
    }

    /// Registers `listener` for the announcements published after every
    /// registry change while connected.
    ///
    /// # Errors
    /// [`SessionError::Expired`], [`SessionError::Disposed`],
    /// [`SessionError::CapacityExceeded`] when `max_entries` listeners are
    /// live.
    pub fn subscribe(
        &self,
        listener: impl Fn(&BrowserSurfaceAnnouncement)
            + crate::sync::MaybeSend
            + crate::sync::MaybeSync
            + 'static,
    ) -> Result<AnnouncementSubscription, SessionError> {
        let guard;
        let id;
        {
            let mut state = self.inner.lock();
            guard = self.inner.expire_if_due(&mut state);
            state.phase.require_active()?;
            if state.listeners.len() >= self.inner.max_entries {
                return Err(SessionError::CapacityExceeded {
                    collection: SessionCollection::Listeners,
                    max: self.inner.max_entries,
                });
            }
            id = state.next_id;
            state.next_id += 1;
            state.listeners.push(ListenerEntry {
                id,
                listener: Arc::new(listener),
            });
        }
        drop(guard);
        Ok(AnnouncementSubscription {
            inner: Arc::downgrade(&self.inner),
            id,
        })
    }

    /// A fresh announcement (a new snapshot) on the current connection;
    /// `None` while disconnected, expired or disposed.
    pub fn announcement(&self) -> Option<BrowserSurfaceAnnouncement> {
        let (connection, guard) = {
            let mut state = self.inner.lock();
            let guard = self.inner.expire_if_due(&mut state);
            let c = match state.phase {
                Phase::Active => state.connection.clone(),
                _ => None,
            };
            (c, guard)
        };
        drop(guard);
        connection.map(|c| self.inner.announce(c))
    }

    /// Closes the current connection: calls pending on it are aborted (their
    /// futures dropped) and answered `disconnected`. An action already
    /// started may have taken effect; reconcile, do not replay. Recorded
    /// results and used connection ids are kept.
    pub fn disconnect(&self) {
        let guard = {
            let mut state = self.inner.lock();
            let guard = self.inner.expire_if_due(&mut state);
            abort_pending(&mut state, RejectionReason::Disconnected);
            state.connection = None;
            guard
        };
        drop(guard);
        confirm::abort_all(&self.inner.held, &*self.inner.source);
    }

    /// Aborts pending calls (answered `disconnected`), clears every retained
    /// call, connection id and listener immediately and unsubscribes from
    /// the registry. Afterwards `announcement()` is `None`, `connect` and
    /// `subscribe` fail with [`SessionError::Disposed`] and `invoke` answers
    /// `disconnected`.
    pub fn dispose(&self) {
        let guard = {
            let mut state = self.inner.lock();
            let mut guard = self.inner.expire_if_due(&mut state);
            if state.phase == Phase::Active {
                state.phase = Phase::Disposed;
                guard = clear(&mut state, RejectionReason::Disconnected);
            } else {
                // Expired (or already disposed): still drop everything now.
                guard = guard.or_else(|| clear(&mut state, RejectionReason::Disconnected));
                state.phase = Phase::Disposed;
            }
            guard
        };
        drop(guard);
        confirm::abort_all(&self.inner.held, &*self.inner.source);
        self.inner.held.clear_listeners();
        *self.inner.index.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// How calls that need local confirmation are answered.
    pub fn confirmation_mode(&self) -> ConfirmationMode {
        self.inner.confirmations
    }

    /// Registers `listener` for the held confirmations
    /// ([`ConfirmationMode::Hold`]): [`ConfirmationEvent::Requested`] when a
    /// call starts waiting (show the dialog with its `summary`),
    /// [`ConfirmationEvent::Settled`] when it stops (take it down). Called
    /// outside the session's locks; a listener may call the session.
    ///
    /// # Errors
    /// [`SessionError::Expired`], [`SessionError::Disposed`],
    /// [`SessionError::CapacityExceeded`] (`SessionCollection::ConfirmationListeners`) at
    /// `max_entries` live listeners.
    pub fn on_confirmation(
        &self,
        listener: impl Fn(&ConfirmationEvent)
            + crate::sync::MaybeSend
            + crate::sync::MaybeSync
            + 'static,
    ) -> Result<SessionEventSubscription, SessionError> {
        self.check_active()?;
        self.inner
            .held
            .add_confirmation_listener(Arc::new(listener))
            .ok_or(SessionError::CapacityExceeded {
                collection: SessionCollection::ConfirmationListeners,
                max: self.inner.max_entries,
            })
    }

    /// Registers `listener` for the [`BrowserSurfaceProgress`] messages to
    /// send to the host (`awaiting-confirmation`, `confirmed`). Called
    /// outside the session's locks.
    ///
    /// # Errors
    /// As [`Self::on_confirmation`] (`SessionCollection::ProgressListeners`).
    pub fn on_progress(
        &self,
        listener: impl Fn(&BrowserSurfaceProgress)
            + crate::sync::MaybeSend
            + crate::sync::MaybeSync
            + 'static,
    ) -> Result<SessionEventSubscription, SessionError> {
        self.check_active()?;
        self.inner
            .held
            .add_progress_listener(Arc::new(listener))
            .ok_or(SessionError::CapacityExceeded {
                collection: SessionCollection::ProgressListeners,
                max: self.inner.max_entries,
            })
    }

    /// The confirmations calls are waiting for, soonest expiry first
    /// (expired ones are answered first and not listed).
    pub fn held_confirmations(&self) -> Vec<HeldConfirmation> {
        self.inner
            .held
            .sweep_expired(&*self.inner.source, self.inner.clock.now_ms());
        self.inner.held.list()
    }

    /// The **user** approves a held confirmation (an application action:
    /// never expose it to the model or the host). The registry issues the
    /// evidence, the waiting call runs again with it under a fresh
    /// invocation id, and its result answers the host's original call.
    ///
    /// # Errors
    /// [`ConfirmationDecisionError::Unknown`] when no call waits for it;
    /// [`ConfirmationDecisionError::Expired`] /
    /// [`ConfirmationDecisionError::NotPending`] when the registry no
    /// longer accepts it (the call is then answered
    /// `CONFIRMATION_INVALID`).
    pub fn approve(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.inner.held.approve(
            &*self.inner.source,
            confirmation_id,
            self.inner.clock.now_ms(),
        )
    }

    /// The **user** rejects a held confirmation: the waiting call is
    /// answered `CONFIRMATION_INVALID` with `details.reason: "rejected"`
    /// and retry `no`; it never runs.
    ///
    /// # Errors
    /// [`ConfirmationDecisionError::Unknown`] when no call waits for it.
    pub fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationDecisionError> {
        self.inner.held.reject(
            &*self.inner.source,
            confirmation_id,
            self.inner.clock.now_ms(),
        )
    }

    fn check_active(&self) -> Result<(), SessionError> {
        let guard;
        let phase;
        {
            let mut state = self.inner.lock();
            guard = self.inner.expire_if_due(&mut state);
            phase = state.phase;
        }
        drop(guard);
        match phase {
            Phase::Active => Ok(()),
            Phase::Expired => Err(SessionError::Expired),
            Phase::Disposed => Err(SessionError::Disposed),
        }
    }

    /// Retained entries per collection.
    pub fn usage(&self) -> SessionUsage {
        let state = self.inner.lock();
        SessionUsage {
            calls: state.calls.len(),
            pending_calls: state.pending.len(),
            connection_ids: state.used_connections.len(),
            listeners: state.listeners.len(),
        }
    }

    /// Parses a call envelope from its JSON text and answers it like
    /// [`Self::invoke`]. The size limit applies to `text` **as received**:
    /// text longer than [`MAX_ENVELOPE_CHARS`](super::MAX_ENVELOPE_CHARS)
    /// UTF-16 code units is `invalid-call`, text within it passes the size
    /// check whatever a re-serialization would add (`1e2` written back as
    /// `100.0`, defaulted fields). Text that is not JSON or not of the
    /// call's shape is `invalid-call`; the answer then echoes whichever ids
    /// could be read (empty strings otherwise). An expired, disposed or
    /// unconnected session answers before reading the call (step 1),
    /// echoing the ids of text within the envelope limit that parses as
    /// JSON (longer text is not parsed: its ids are echoed empty).
    ///
    /// **Lone surrogates.** A TypeScript host's `JSON.stringify` writes a
    /// string cut in the middle of an emoji as a lone UTF-16 surrogate
    /// escape (`"maintenance \ud83d"`), which no Rust string can hold: such
    /// a call is `invalid-call`, never run with altered input. So that the
    /// host can still match the answer to its pending call, the ids are
    /// then read from a copy of the text in which each lone surrogate
    /// escape is `\ufffd` ([`replace_lone_surrogates`](super::replace_lone_surrogates);
    /// an id that itself holds one is echoed with U+FFFD in its place).
    /// The copy serves the echo only; text over the envelope limit is
    /// still not parsed.
    pub async fn invoke_json(&self, text: &str) -> BrowserSurfaceResult {
        let rejected = |value: Option<&Value>, reason| {
            let [connection_id, run_id, tool_call_id, invocation_id] =
                value.map(echo_ids).unwrap_or_default();
            BrowserSurfaceResult {
                protocol_version: PROTOCOL_VERSION,
                message_type: ResultType::Only,
                identity: self.inner.identity.clone(),
                connection_id,
                run_id,
                tool_call_id,
                invocation_id,
                result: BrowserSurfaceOutcome::rejected(reason),
            }
        };
        if let Some(reason) = self.refusal_before_checks() {
            // Read for the echo only: lone surrogates as U+FFFD.
            let value = within_envelope_limit(text)
                .then(|| from_json_lossy::<Value>(text).ok())
                .flatten();
            return rejected(value.as_ref(), reason);
        }
        if !within_envelope_limit(text) {
            return rejected(None, RejectionReason::InvalidCall);
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(strict) => {
                // Not JSON to Rust (a lone surrogate escape, or worse): the
                // call is refused; its ids, if a lossy copy has them, are
                // echoed.
                let copy = from_lossy_copy::<Value>(text, strict).ok();
                return rejected(copy.as_ref(), RejectionReason::InvalidCall);
            }
        };
        match serde_json::from_value::<BrowserSurfaceCall>(value.clone()) {
            Ok(call) => {
                let outcome = self.outcome(&call, Envelope::Received(&value)).await;
                BrowserSurfaceResult::for_call(&self.inner.identity, &call, outcome)
            }
            Err(_) => rejected(Some(&value), RejectionReason::InvalidCall),
        }
    }

    /// Step 1, which precedes every other check: `session-expired` once
    /// expired, `disconnected` when disposed or when no connection is open.
    fn refusal_before_checks(&self) -> Option<RejectionReason> {
        let (reason, guard) = {
            let mut state = self.inner.lock();
            let guard = self.inner.expire_if_due(&mut state);
            let reason = match state.phase {
                Phase::Active if state.connection.is_none() => Some(RejectionReason::Disconnected),
                Phase::Active => None,
                Phase::Expired => Some(RejectionReason::SessionExpired),
                Phase::Disposed => Some(RejectionReason::Disconnected),
            };
            (reason, guard)
        };
        drop(guard);
        reason
    }

    /// Answers one host call; see the module docs for the order
    /// of checks. A call that arrives already parsed has no received text,
    /// so the size limit applies to its compact serialization (prefer
    /// [`Self::invoke_json`], which measures the text received). Never
    /// panics; every refusal is a `rejected` result echoing the call's ids.
    /// Dropping the returned future does not cancel the dispatched call
    /// (other duplicates may be joined to it); `disconnect` and `dispose`
    /// do.
    pub async fn invoke(&self, call: BrowserSurfaceCall) -> BrowserSurfaceResult {
        let outcome = self.outcome(&call, Envelope::Parsed).await;
        BrowserSurfaceResult::for_call(&self.inner.identity, &call, outcome)
    }

    async fn outcome(
        &self,
        call: &BrowserSurfaceCall,
        envelope: Envelope<'_>,
    ) -> BrowserSurfaceOutcome {
        use BrowserSurfaceOutcome as O;
        // 1. expired, disposed, not connected.
        if let Some(reason) = self.refusal_before_checks() {
            return O::rejected(reason);
        }
        // 2. shape and size (outside the lock: serialization is O(size)).
        if !shape_ok(call) {
            return O::rejected(RejectionReason::InvalidCall);
        }
        if self.inner.confirmations == ConfirmationMode::Hold {
            // The page decides confirmations itself: a confirmation id from
            // the host is never legitimate in this mode.
            if call.invocation.confirmation_id.is_some() {
                return O::rejected(RejectionReason::InvalidCall);
            }
            self.inner
                .held
                .sweep_expired(&*self.inner.source, self.inner.clock.now_ms());
        }
        let Some(digest) = envelope_digest(call, envelope) else {
            return O::rejected(RejectionReason::InvalidCall);
        };
        // 3. identity.
        if call.identity != self.inner.identity {
            return O::rejected(RejectionReason::WrongSession);
        }
        // 4–6. connection, replay table, capacity.
        if let Some(answer) = self.connection_and_replay(call, &digest) {
            return answer.await;
        }
        // 7. staleness: version and discoverability — outside the lock:
        // the registry may run availability closures.
        let Some(expected) = call.invocation.surface_version else {
            return O::rejected(RejectionReason::InvalidCall);
        };
        let current = self.inner.source.surface_version();
        if expected != current {
            return O::rejected(RejectionReason::StaleSurface);
        }
        let index = self.inner.index(current);
        if index.version != expected {
            return O::rejected(RejectionReason::StaleSurface);
        }
        let registration = call
            .invocation
            .registration_id
            .as_deref()
            .unwrap_or_default();
        let instance = call.invocation.instance_id.as_deref();
        if !index.discoverable(&call.invocation.capability_id, registration, instance) {
            return O::rejected(RejectionReason::StaleSurface);
        }
        // 8. record and dispatch (re-checking under the lock: the state
        // may have changed while the snapshot was computed).
        self.dispatch(call, digest).await
    }

    /// Steps 4–6 under the lock. `Some` answers the call (a rejection, a
    /// frozen result, or a join of the call in flight).
    fn connection_and_replay(
        &self,
        call: &BrowserSurfaceCall,
        digest: &EnvelopeDigest,
    ) -> Option<BoxFuture<'static, BrowserSurfaceOutcome>> {
        let ready = |o: BrowserSurfaceOutcome| -> BoxFuture<'static, BrowserSurfaceOutcome> {
            Box::pin(std::future::ready(o))
        };
        let state = self.inner.lock();
        if let Some(reason) = connection_refusal(&state, call) {
            return Some(ready(BrowserSurfaceOutcome::rejected(reason)));
        }
        let id = state.calls.digest(&call.invocation.invocation_id);
        match state.calls.lookup(id) {
            Some(known) => Some(self.answer_known(known, digest, id, &state.pending)),
            None if state.calls.len() >= self.inner.max_entries => Some(ready(
                BrowserSurfaceOutcome::rejected(RejectionReason::CapacityExceeded),
            )),
            None => None,
        }
    }

    /// Step 5 for a recorded invocation id: `invocation-conflict` for a
    /// different envelope, else the frozen outcome or a join of the call in
    /// flight.
    fn answer_known(
        &self,
        known: Known<'_, EnvelopeDigest, BrowserSurfaceOutcome>,
        digest: &EnvelopeDigest,
        id: IdDigest,
        pending: &HashMap<IdDigest, PendingCall>,
    ) -> BoxFuture<'static, BrowserSurfaceOutcome> {
        let ready = |o: BrowserSurfaceOutcome| -> BoxFuture<'static, BrowserSurfaceOutcome> {
            Box::pin(std::future::ready(o))
        };
        if known.envelope != digest {
            return ready(BrowserSurfaceOutcome::rejected(
                RejectionReason::InvocationConflict,
            ));
        }
        match (known.status, pending.get(&id)) {
            (Status::Completed(outcome), _) => ready(outcome.clone()),
            (Status::Pending, Some(call)) => Box::pin(self.await_entry(id, call.future.clone())),
            // Not reached: a pending id always has its call, and outcomes
            // are kept for every id the ledger holds (both bounds are
            // `max_entries`). The id is still never dispatched again.
            (Status::Pending, None) | (Status::Forgotten, _) => ready(
                BrowserSurfaceOutcome::rejected(RejectionReason::InvocationConflict),
            ),
        }
    }

    fn dispatch(
        &self,
        call: &BrowserSurfaceCall,
        digest: EnvelopeDigest,
    ) -> BoxFuture<'static, BrowserSurfaceOutcome> {
        let ready = |o: BrowserSurfaceOutcome| -> BoxFuture<'static, BrowserSurfaceOutcome> {
            Box::pin(std::future::ready(o))
        };
        let mut state = self.inner.lock();
        if state.phase != Phase::Active {
            return ready(BrowserSurfaceOutcome::rejected(match state.phase {
                Phase::Expired => RejectionReason::SessionExpired,
                _ => RejectionReason::Disconnected,
            }));
        }
        if let Some(reason) = connection_refusal(&state, call) {
            return ready(BrowserSurfaceOutcome::rejected(reason));
        }
        let id = state.calls.digest(&call.invocation.invocation_id);
        let state = &mut *state;
        match state.calls.admit(id, digest) {
            Admission::Admitted => {}
            // A duplicate raced us between the two locked sections.
            Admission::Known(known) => {
                return self.answer_known(known, &digest, id, &state.pending)
            }
            Admission::Refused => {
                return ready(BrowserSurfaceOutcome::rejected(
                    RejectionReason::CapacityExceeded,
                ))
            }
        }
        let (future, abort, cancellation) = self.start_call(call);
        let pending = PendingCall {
            future: future.clone(),
            abort,
            cancellation,
        };
        state.pending.insert(id, pending);
        Box::pin(self.await_entry(id, future))
    }

    /// Starts the registry's pipeline for `call`: the shared outcome
    /// (`disconnected` when aborted), its abort handle and the cancellation
    /// the executor sees.
    fn start_call(&self, call: &BrowserSurfaceCall) -> (CallFuture, AbortHandle, Cancellation) {
        let (abort, registration) = AbortHandle::new_pair();
        let cancellation = Cancellation::new();
        let mut invoke = self.inner.source.invoke(
            call.invocation.clone(),
            self.inner.consumer.clone(),
            cancellation.clone(),
        );
        if self.inner.confirmations == ConfirmationMode::Hold {
            invoke = confirm::hold(
                HoldContext {
                    table: self.inner.held.clone(),
                    source: self.inner.source.clone(),
                    consumer: self.inner.consumer.clone(),
                    call: call.clone(),
                    cancellation: cancellation.clone(),
                    clock: self.inner.clock.clone(),
                    timer: self.inner.timer.clone(),
                },
                invoke,
            );
        }
        let future: BoxFuture<'static, BrowserSurfaceOutcome> =
            Box::pin(Abortable::new(invoke, registration).map(|r| match r {
                Ok(result) => BrowserSurfaceOutcome::Invocation(result),
                Err(_aborted) => BrowserSurfaceOutcome::rejected(RejectionReason::Disconnected),
            }));
        (future.shared(), abort, cancellation)
    }

    /// Awaits a recorded call and freezes its outcome. If the entry was
    /// settled meanwhile (aborted at disconnect), the frozen outcome wins so
    /// every observer sees the same answer.
    fn await_entry(
        &self,
        id: IdDigest,
        future: CallFuture,
    ) -> impl std::future::Future<Output = BrowserSurfaceOutcome> + 'static {
        let inner = Arc::downgrade(&self.inner);
        async move {
            let outcome = future.await;
            let Some(inner) = inner.upgrade() else {
                return outcome;
            };
            let mut guard = inner.lock();
            let state = &mut *guard;
            match state.calls.lookup(id).map(|known| known.status) {
                Some(Status::Completed(frozen)) => frozen.clone(),
                Some(Status::Pending) => {
                    state.pending.remove(&id);
                    state.calls.complete(id, outcome.clone());
                    outcome
                }
                // Cleared by expiry or dispose while in flight.
                _ => match state.phase {
                    Phase::Expired => {
                        BrowserSurfaceOutcome::rejected(RejectionReason::SessionExpired)
                    }
                    _ if matches!(outcome, BrowserSurfaceOutcome::Rejected(_)) => outcome,
                    _ => BrowserSurfaceOutcome::rejected(RejectionReason::Disconnected),
                },
            }
        }
    }
}

/// Step 4: `None` when `call` travels on the current connection, else
/// `disconnected` (a closed connection and one never opened alike, as the
/// original answers).
fn connection_refusal(state: &State, call: &BrowserSurfaceCall) -> Option<RejectionReason> {
    if state.connection.as_deref() == Some(call.connection_id.as_str()) {
        None
    } else {
        Some(RejectionReason::Disconnected)
    }
}
