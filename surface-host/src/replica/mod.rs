//! [`Replica`]: one of several agent-host processes sharing one store
//! (`docs/host.md`, "Replicas").
//!
//! A browser tab's socket is pinned to the replica it reached; an agent's
//! requests land on any replica. Each replica:
//!
//! * holds a **lease** on every tab connected to it (`host_surfaces`: the
//!   verified announcement and the replica's name, renewed every
//!   [`ReplicaOptions::renew_interval`], expiring after
//!   [`ReplicaOptions::lease`] without renewal);
//! * composes a run's tools from the store: a tab held elsewhere is
//!   verified again here from its stored announcement (a *mirror*: it is
//!   listed, never dispatched to); the run and lease read for a listing
//!   decide where a call made within 250 ms after it goes (an MCP
//!   `tools/call` lists, then calls: one read of each, not two);
//! * runs a call for a tab it holds itself ([`DurableHost::dispatch`]: the
//!   call's row is the id's one dispatch), and **routes** a call for a tab
//!   held elsewhere: a `host_routes` row, a wake-up to the holder, which
//!   takes the row (one conditional statement), dispatches it to its tab,
//!   answers the row and wakes the requester back ([`surface_store::wake`]: ids
//!   only; both sides re-read their rows on a rescan and the requester
//!   re-checks every [`ReplicaOptions::check_interval`]).
//!
//! Failure rules: a call is never moved to another tab or replica; a
//! holder that stops renewing loses its leases after
//! [`ReplicaOptions::lease`] and the calls routed to it are answered by
//! the requester's next check — [`CallEnd::Interrupted`] (ambiguous: they
//! may have taken effect) when it had taken them, refused
//! [`Refusal::HolderUnavailable`] (withdrawn, never run) when not; a
//! holder that restarts interrupts every routed call it had taken
//! ([`Replica::start`]) and so never completes one another replica already
//! answered; an invocation id is dispatched at most once across replicas
//! (the primary keys of `host_calls` and `host_routes`); no lease outlives
//! the socket it names (each renewal compares the leases it extended with
//! the sockets it has).

mod route;
mod tab;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use surface_runtime::host::{
    BrowserSurfaceAnnouncement, BrowserSurfaceCall, BrowserSurfaceOutcome, BrowserSurfaceProgress,
    HostError, HostTool, ToolCallRequest,
};
use tokio::sync::{mpsc, oneshot, watch, Notify, Semaphore};

pub use tab::{Received, ReplicaTab, TabCalls};

use crate::durable::{agent_run, DurableError, DurableHost};
use surface_store::store::{HostStore, RouteRecord, RunRecord, StoreError};
use surface_store::wake::{WakeError, Wakeups};

/// Default lease of a tab's surface: 10 seconds without renewal.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);
/// Default interval of lease renewal: 3 seconds (three renewals per lease).
pub const DEFAULT_RENEW_INTERVAL: Duration = Duration::from_secs(3);
/// Default interval at which a requester re-reads a routed call and its
/// holder's lease: 1 second.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Default bound of one call, from dispatch (or routing) to result: 6
/// minutes (above the registry's 5-minute confirmation lifetime).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(6 * 60);
/// Default bound of the routed calls a replica waits for, and of those it
/// runs for others, at once: 1,024 each.
pub const DEFAULT_MAX_ROUTED_CALLS: usize = 1_024;
/// Longest replica name: 60 characters of `A–Z a–z 0–9 . _ -` (it names
/// wake-up targets).
pub const MAX_REPLICA_NAME_CHARS: usize = 60;
/// The wake-up target every replica listens on for changed surfaces.
pub const SURFACES_TARGET: &str = "surfaces";

/// Configuration of [`Replica::start`].
#[derive(Clone, Debug)]
pub struct ReplicaOptions {
    /// How long a tab's lease holds without renewal (default
    /// [`DEFAULT_LEASE`]): the bound after which the calls routed to a
    /// stopped replica are answered interrupted. Keep it at least three
    /// `renew_interval`s.
    pub lease: Duration,
    /// How often the leases are renewed (default [`DEFAULT_RENEW_INTERVAL`]).
    pub renew_interval: Duration,
    /// How often a requester re-reads a routed call it waits for (default
    /// [`DEFAULT_CHECK_INTERVAL`]).
    pub check_interval: Duration,
    /// Bound of one call (default [`DEFAULT_CALL_TIMEOUT`]).
    pub call_timeout: Duration,
    /// Routed calls waited for, and run for others, at once (default
    /// [`DEFAULT_MAX_ROUTED_CALLS`] each). Past it a call is refused
    /// [`Refusal::Capacity`], and a routed call is left for later.
    pub max_routed_calls: usize,
}

impl Default for ReplicaOptions {
    fn default() -> Self {
        Self {
            lease: DEFAULT_LEASE,
            renew_interval: DEFAULT_RENEW_INTERVAL,
            check_interval: DEFAULT_CHECK_INTERVAL,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_routed_calls: DEFAULT_MAX_ROUTED_CALLS,
        }
    }
}

/// Why a call was not dispatched (it never ran).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Refusal {
    /// The run's tab is not connected to any replica.
    NoLivePage,
    /// The run is unknown or ended, or its tab does not offer the tool.
    UnknownTool,
    /// Too many calls are outstanding or routed.
    Capacity,
    /// The invocation id was dispatched or routed before.
    Conflict,
    /// The store could not be written (fail closed).
    StoreUnavailable,
    /// The request broke a rule of the host (an invalid id, input or
    /// reference).
    Invalid,
    /// The replica holding the tab did not take the routed call before
    /// the requester stopped waiting (its lease ended, or the call
    /// timeout passed): the call was withdrawn and never ran.
    HolderUnavailable,
}

impl Refusal {
    /// The refusal of a failed [`DurableHost::dispatch`].
    pub fn of(error: &DurableError) -> Self {
        match error {
            DurableError::Host(HostError::NoLiveSession(_)) => Refusal::NoLivePage,
            DurableError::Host(HostError::NotOffered { .. } | HostError::UnknownRun(_)) => {
                Refusal::UnknownTool
            }
            DurableError::Host(
                HostError::CapacityExceeded(_) | HostError::InvocationIdsExhausted(_),
            ) => Refusal::Capacity,
            DurableError::Host(HostError::InvocationConflict(_))
            | DurableError::NotInState { .. } => Refusal::Conflict,
            DurableError::Store(_) | DurableError::MissingRow(_) => Refusal::StoreUnavailable,
            _ => Refusal::Invalid,
        }
    }
}

/// How a call ended ([`Replica::call`]); the JSON a holder answers a
/// routed call with (`{"end":"outcome","outcome":…}`, `{"end":"interrupted"}`,
/// `{"end":"timed-out"}`, `{"end":"refused","reason":…}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "kebab-case")]
pub enum CallEnd {
    /// The page answered (a registry result, or its refusal).
    Outcome {
        /// What the page sent.
        outcome: BrowserSurfaceOutcome,
    },
    /// The tab's connection closed, or the replica holding it stopped,
    /// while the call was out: it may have taken effect (reconcile; never
    /// retry blindly).
    Interrupted,
    /// No answer within [`ReplicaOptions::call_timeout`]: it may have
    /// taken effect.
    TimedOut,
    /// Not dispatched: it never ran.
    Refused {
        /// Why.
        reason: Refusal,
    },
}

/// Why a [`Replica`] could not start or open a connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicaError {
    /// The host's owner name cannot name a replica.
    #[error(
        "a replica name must be 1 to {MAX_REPLICA_NAME_CHARS} characters of A-Z a-z 0-9 . _ - (got {0:?})"
    )]
    InvalidName(String),
    /// A connection with this id is open on this replica.
    #[error("connection `{0}` is already open; every page connection needs a fresh id")]
    ConnectionOpen(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The wake-up bus failed.
    #[error(transparent)]
    Wake(#[from] WakeError),
}

/// A live page connection on this replica.
struct Connection {
    sender: mpsc::UnboundedSender<BrowserSurfaceCall>,
    session_id: String,
    /// The tab it announced, and the announcement's JSON for its lease.
    tab: Option<(String, String)>,
}

/// A call dispatched to a tab on this replica, waiting for its end.
struct Waiter {
    done: oneshot::Sender<CallEnd>,
    progress: Option<mpsc::UnboundedSender<BrowserSurfaceProgress>>,
}

/// A tab held elsewhere, verified here from its stored announcement.
struct Mirror {
    connection_id: String,
    digest: [u8; 32],
}

/// What [`Replica::tools_for_run`] read for a run, reused by the
/// [`Replica::call`] that follows within [`DECISION_REUSE`].
struct Decision {
    at: std::time::Instant,
    run: RunRecord,
    /// The tab's lease, when it was read (the tab is not connected here).
    lease: Option<Option<surface_store::store::SurfaceLease>>,
}

/// How long a run and lease read for listing a run's tools serve the call
/// that follows (an MCP `tools/call` lists, then calls): 250 ms.
const DECISION_REUSE: Duration = Duration::from_millis(250);
/// Decisions kept at most (past it they are all dropped).
const MAX_DECISIONS: usize = 4_096;

#[derive(Default)]
struct State {
    connections: HashMap<String, Connection>,
    /// Tabs connected here → their connection.
    local_tabs: HashMap<String, String>,
    /// Connections whose tab's lease another replica still holds.
    unclaimed: HashSet<String>,
    waiters: HashMap<String, Waiter>,
    /// Routed calls this replica waits for → their wake-up.
    answers: HashMap<String, Arc<Notify>>,
    mirrors: HashMap<String, Mirror>,
    decisions: HashMap<String, Decision>,
    /// Leases to drop: their socket closed and the release failed, or a
    /// claim that raced the close committed after it — (tab, connection),
    /// retried at every renewal.
    to_release: HashSet<(String, String)>,
    /// Runs another replica started, tracked here, oldest first (at most
    /// [`MAX_FOREIGN_RUNS`]; the oldest is untracked past it).
    foreign_runs: std::collections::VecDeque<String>,
}

/// Runs started by other replicas that one replica tracks in memory at
/// most: 10,000 (a run untracked here is read from the store again when a
/// call of it arrives).
pub const MAX_FOREIGN_RUNS: usize = 10_000;

pub(crate) struct Inner {
    durable: Arc<DurableHost>,
    wake: Arc<dyn Wakeups>,
    options: ReplicaOptions,
    state: Mutex<State>,
    changes: watch::Sender<u64>,
    /// Routed calls this replica waits for.
    waiting: Arc<Semaphore>,
    /// Routed calls this replica runs for others.
    running: Arc<Semaphore>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self.tasks.get_mut().unwrap_or_else(|p| p.into_inner()) {
            task.abort();
        }
    }
}

/// One replica (module docs). Cheap to clone; the background tasks
/// (wake-ups, lease renewal) stop when the last clone is dropped.
#[derive(Clone)]
pub struct Replica {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("name", &self.name())
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

fn check_name(name: &str) -> Result<(), ReplicaError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_REPLICA_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ReplicaError::InvalidName(
            name.chars().take(MAX_REPLICA_NAME_CHARS).collect(),
        ))
    }
}

/// The wake-up target of the routed calls `replica` holds.
pub(crate) fn calls_target(replica: &str) -> String {
    format!("c.{replica}")
}

/// The wake-up target of the answers `replica` waits for.
pub(crate) fn answers_target(replica: &str) -> String {
    format!("a.{replica}")
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn name(&self) -> &str {
        self.durable.owner()
    }

    fn store(&self) -> &Arc<dyn HostStore> {
        self.durable.store()
    }

    fn now(&self) -> i64 {
        self.durable.now()
    }

    fn lease_ms(&self) -> i64 {
        i64::try_from(self.options.lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// Tells this replica's MCP front (and every other replica) that tool
    /// lists may have changed.
    async fn surfaces_changed(&self, tab_id: &str) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        if let Err(error) = self.wake.notify(SURFACES_TARGET, tab_id).await {
            tracing::warn!(?error, "replica: surface change not announced");
        }
    }

    /// The run as the store has it, tracked in the in-memory host when
    /// active (another replica may have started it); `None` when unknown
    /// or ended.
    async fn ensure_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        match self.store().run(run_id).await? {
            Some(run) if run.active => {
                let host = self.durable.host();
                match host.run(run_id) {
                    None => match host.start_run(agent_run(&run)) {
                        Ok(()) => {
                            let evicted = {
                                let mut state = self.lock();
                                state.foreign_runs.push_back(run_id.to_string());
                                (state.foreign_runs.len() > MAX_FOREIGN_RUNS)
                                    .then(|| state.foreign_runs.pop_front())
                                    .flatten()
                            };
                            if let Some(old) = evicted {
                                host.end_run(&old);
                            }
                        }
                        Err(error) => tracing::warn!(?run_id, ?error, "replica: run not tracked"),
                    },
                    // Attached to another tab by another replica.
                    Some(known) if known.tab_id != run.tab_id => {
                        if let Err(error) = host.attach_run_to_tab(run_id, run.tab_id.clone()) {
                            tracing::warn!(?run_id, ?error, "replica: run's tab not updated");
                        }
                    }
                    Some(_) => {}
                }
                Ok(Some(run))
            }
            Some(_) => {
                self.durable.host().end_run(run_id);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// Verifies again here the announcement of a tab another replica
    /// holds (or drops the mirror once no replica holds it).
    /// Returns the lease it read.
    async fn refresh_mirror(
        &self,
        tab_id: &str,
    ) -> Result<Option<surface_store::store::SurfaceLease>, StoreError> {
        let read = self.store().surface(tab_id).await?;
        let now = self.now();
        let held_elsewhere = read
            .as_ref()
            .filter(|l| l.replica != self.name() && l.lease_expires_at_ms >= now);
        let Some(lease) = held_elsewhere.cloned() else {
            let gone = self.lock().mirrors.remove(tab_id);
            if let Some(mirror) = gone {
                self.durable.host().connection_closed(&mirror.connection_id);
            }
            return Ok(read);
        };
        let digest = surface_runtime::hash::sha256(lease.announcement.as_bytes());
        if self.lock().mirrors.get(tab_id).map(|m| m.digest) == Some(digest) {
            return Ok(read);
        }
        let announcement: BrowserSurfaceAnnouncement =
            match serde_json::from_str(&lease.announcement) {
                Ok(a) => a,
                Err(error) => {
                    tracing::warn!(
                        ?tab_id,
                        ?error,
                        "replica: a stored announcement does not parse"
                    );
                    return Ok(read);
                }
            };
        let connection = surface_runtime::host::AuthenticatedConnection::new(
            lease.connection_id.clone(),
            lease.session_id.clone(),
            format!("replica:{}", lease.replica),
        );
        // Under the state lock (then the host's: the one order of the
        // two), so a tab connected here meanwhile is never replaced by its
        // mirror.
        let mut state = self.lock();
        if state.local_tabs.contains_key(tab_id) {
            return Ok(read);
        }
        match self
            .durable
            .host()
            .accept_announcement(&connection, &announcement)
        {
            Ok(_) => {
                state.mirrors.insert(
                    tab_id.to_string(),
                    Mirror {
                        connection_id: lease.connection_id,
                        digest,
                    },
                );
            }
            Err(error) => {
                tracing::warn!(
                    ?tab_id,
                    ?error,
                    "replica: a stored announcement is refused here"
                )
            }
        }
        Ok(read)
    }

    fn remember(&self, run: RunRecord, lease: Option<Option<surface_store::store::SurfaceLease>>) {
        let mut state = self.lock();
        if state.decisions.len() >= MAX_DECISIONS {
            state.decisions.clear();
        }
        let decision = Decision {
            at: std::time::Instant::now(),
            run,
            lease,
        };
        state
            .decisions
            .insert(decision.run.run_id.clone(), decision);
    }

    /// The decision [`Replica::tools_for_run`] just made for `run_id`, if
    /// recent.
    fn recent(&self, run_id: &str) -> Option<Decision> {
        self.lock()
            .decisions
            .remove(run_id)
            .filter(|d| d.at.elapsed() < DECISION_REUSE)
    }

    /// Renews this replica's leases, compares them with the sockets it
    /// has, and claims those it could not take before (a tab that
    /// reconnected here while its old replica's lease still held).
    async fn renew(&self) {
        let now = self.now();
        let until = now.saturating_add(self.lease_ms());
        match self.store().renew_leases(self.name(), until, now).await {
            Ok(renewed) => self.reconcile_leases(&renewed),
            Err(error) => tracing::warn!(?error, "replica: leases not renewed"),
        }
        let to_release: Vec<(String, String)> = {
            let mut state = self.lock();
            let leases: Vec<_> = state.to_release.drain().collect();
            leases
                .into_iter()
                // A tab connected here again is claimed for its new
                // connection instead (the claim overwrites the lease).
                .filter(|(tab, _)| !state.local_tabs.contains_key(tab))
                .collect()
        };
        for (tab, connection) in to_release {
            self.release(&tab, &connection).await;
        }
        let unclaimed: Vec<String> = self.lock().unclaimed.iter().cloned().collect();
        for connection_id in unclaimed {
            if let Some(tab_id) = self.claim(&connection_id).await {
                self.surfaces_changed(&tab_id).await;
            }
        }
    }

    /// Compares the leases just renewed with the sockets this replica has:
    /// a socket whose lease is missing or names an older connection (it
    /// expired meanwhile — a stalled process or database — or another
    /// replica took it) is claimed again like a new one; a lease for a
    /// socket this replica no longer has is released.
    fn reconcile_leases(&self, renewed: &[surface_store::store::RenewedLease]) {
        let mut state = self.lock();
        let leased: HashSet<(&str, &str)> = renewed
            .iter()
            .map(|l| (l.tab_id.as_str(), l.connection_id.as_str()))
            .collect();
        let lost: Vec<String> = state
            .local_tabs
            .iter()
            .filter(|(tab, connection)| !leased.contains(&(tab.as_str(), connection.as_str())))
            .map(|(_, connection)| connection.clone())
            .collect();
        state.unclaimed.extend(lost);
        let stale: Vec<(String, String)> = renewed
            .iter()
            .filter(|l| !state.local_tabs.contains_key(&l.tab_id))
            .map(|l| (l.tab_id.clone(), l.connection_id.clone()))
            .collect();
        state.to_release.extend(stale);
    }

    /// Drops the lease of `tab` claimed for `connection` (kept for the
    /// next renewal when the store fails).
    async fn release(&self, tab: &str, connection: &str) {
        if let Err(error) = self
            .store()
            .release_surface(tab, self.name(), connection)
            .await
        {
            tracing::warn!(
                ?error,
                "replica: lease not released; retried at the next renewal"
            );
            self.lock()
                .to_release
                .insert((tab.to_string(), connection.to_string()));
        }
    }

    /// Claims the lease of `connection_id`'s tab; the tab id once held.
    async fn claim(&self, connection_id: &str) -> Option<String> {
        let (session_id, (tab_id, announcement)) = {
            let state = self.lock();
            let c = state.connections.get(connection_id)?;
            (c.session_id.clone(), c.tab.clone()?)
        };
        let now = self.now();
        let lease = surface_store::store::SurfaceLease {
            tab_id: tab_id.clone(),
            session_id,
            replica: self.name().to_string(),
            connection_id: connection_id.to_string(),
            announcement,
            lease_expires_at_ms: now.saturating_add(self.lease_ms()),
            updated_at_ms: now,
        };
        let held = match self.store().claim_surface(&lease, now).await {
            Ok(surface_store::store::LeaseClaim::Held) => true,
            Ok(surface_store::store::LeaseClaim::HeldElsewhere(_)) => false,
            Err(error) => {
                tracing::warn!(?error, ?tab_id, "replica: lease not claimed");
                false
            }
        };
        let release = {
            let mut state = self.lock();
            match state.local_tabs.get(&tab_id).cloned() {
                Some(current) if current == connection_id => {
                    if held {
                        state.unclaimed.remove(connection_id);
                        return Some(tab_id);
                    }
                    state.unclaimed.insert(current);
                    false
                }
                // The tab moved to a newer connection here while the claim
                // was in flight: that one claims it again (overwriting).
                Some(newer) => {
                    state.unclaimed.insert(newer);
                    false
                }
                // The socket closed while the claim was in flight: a lease
                // for it would be renewed with nobody behind it.
                None => held,
            }
        };
        if release {
            self.release(&tab_id, connection_id).await;
        }
        None
    }
}

impl Replica {
    /// Starts a replica over `durable` (whose owner name is the replica's
    /// name, stable across restarts) and the wake-up bus shared by every
    /// replica of the store ([`surface_store::wake::LocalWakeups`] in one process,
    /// [`surface_store::wake::PostgresWakeups`] across processes). What this
    /// replica left before it stopped is settled first: its surface leases
    /// are dropped, the calls it had routed and nobody took are cancelled,
    /// and every routed call it had taken is interrupted (and its requester
    /// woken); those are returned. Needs a tokio runtime
    /// (the background tasks).
    ///
    /// # Errors
    /// [`ReplicaError::InvalidName`], [`ReplicaError::Store`],
    /// [`ReplicaError::Wake`].
    pub async fn start(
        durable: Arc<DurableHost>,
        wake: Arc<dyn Wakeups>,
        options: ReplicaOptions,
    ) -> Result<(Self, Vec<RouteRecord>), ReplicaError> {
        check_name(durable.owner())?;
        let name = durable.owner().to_string();
        let store = durable.store();
        // A replica starting holds no socket: its old leases go, so no call
        // is routed to it for a tab it lost …
        store.release_replica_surfaces(&name).await?;
        // … nobody waits for the calls it had routed …
        store.cancel_requester_routes(&name, durable.now()).await?;
        // … and the calls it had taken end (their requesters are woken).
        let interrupted = store.interrupt_holder_routes(&name, durable.now()).await?;
        for route in &interrupted {
            let _ = wake
                .notify(&answers_target(&route.requester), &route.invocation_id)
                .await;
        }
        let calls = wake.subscribe(&calls_target(&name)).await?;
        let answers = wake.subscribe(&answers_target(&name)).await?;
        let surfaces = wake.subscribe(SURFACES_TARGET).await?;
        let max = options.max_routed_calls;
        let inner = Arc::new(Inner {
            durable,
            wake,
            options,
            state: Mutex::default(),
            changes: watch::channel(0).0,
            waiting: Arc::new(Semaphore::new(max)),
            running: Arc::new(Semaphore::new(max)),
            tasks: Mutex::default(),
        });
        let weak = Arc::downgrade(&inner);
        let tasks = vec![
            tokio::spawn(route::serve_calls(weak.clone(), calls)),
            tokio::spawn(route::serve_answers(weak.clone(), answers)),
            tokio::spawn(serve_surfaces(weak.clone(), surfaces)),
            tokio::spawn(renew_leases(weak)),
        ];
        *inner.tasks.lock().unwrap_or_else(|p| p.into_inner()) = tasks;
        Ok((Self { inner }, interrupted))
    }

    /// This replica's name (its durable host's owner).
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The durable host.
    pub fn durable(&self) -> &Arc<DurableHost> {
        &self.inner.durable
    }

    /// The options.
    pub fn options(&self) -> &ReplicaOptions {
        &self.inner.options
    }

    /// Bumped whenever a run's tools may have changed: a tab announced,
    /// closed or moved here or on another replica.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Opens the host side of an authenticated page connection (as
    /// `McpServer::open_connection`): the page's messages go to
    /// [`ReplicaTab::receive`], the calls to send it come out of
    /// [`TabCalls::next`].
    ///
    /// # Errors
    /// [`ReplicaError::ConnectionOpen`].
    pub fn open_connection(
        &self,
        connection: surface_runtime::host::AuthenticatedConnection,
    ) -> Result<(ReplicaTab, TabCalls), ReplicaError> {
        tab::open(self.inner.clone(), connection)
    }

    /// The run's composed tools, wherever its tab is connected: a tab
    /// held by another replica is verified here from its stored
    /// announcement. Empty for an unknown or ended run.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    pub async fn tools_for_run(&self, run_id: &str) -> Result<Vec<HostTool>, StoreError> {
        let inner = &*self.inner;
        let Some(run) = inner.ensure_run(run_id).await? else {
            return Ok(Vec::new());
        };
        let mut lease = None;
        if let Some(tab_id) = &run.tab_id {
            if !inner.lock().local_tabs.contains_key(tab_id) {
                lease = Some(inner.refresh_mirror(tab_id).await?);
            }
        }
        inner.remember(run, lease);
        Ok(inner.durable.host().tools_for_run(run_id))
    }

    /// Whether `run_id`'s page is gone: the run is active, has a tab and
    /// started more than one lease ago, and no replica holds its tab
    /// (not connected here, no unexpired lease in the store) — the page
    /// was closed or reloaded (a load is a new tab), or the replica that
    /// held it stopped. Its tools are gone for good; nothing the run's
    /// agent calls can run.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    pub async fn run_page_gone(&self, run_id: &str) -> Result<bool, StoreError> {
        let inner = &*self.inner;
        let Some(run) = inner.store().run(run_id).await? else {
            return Ok(false);
        };
        let Some(tab_id) = run.tab_id.as_deref().filter(|_| run.active) else {
            return Ok(false);
        };
        let now = inner.now();
        if run.started_at_ms.saturating_add(inner.lease_ms()) > now
            || inner.lock().local_tabs.contains_key(tab_id)
        {
            return Ok(false);
        }
        let lease = inner.store().surface(tab_id).await?;
        Ok(lease.is_none_or(|l| l.lease_expires_at_ms < now))
    }

    /// Runs one call on the run's tab, wherever it is connected: on this
    /// replica through [`DurableHost::dispatch`], on another by routing
    /// (module docs). `progress` receives the page's progress messages
    /// (of a routed call: as the holder relays them, once per stage).
    pub async fn call(
        &self,
        request: ToolCallRequest,
        progress: Option<mpsc::UnboundedSender<BrowserSurfaceProgress>>,
    ) -> CallEnd {
        let inner = &*self.inner;
        let recent = inner.recent(&request.run_id);
        let (run, lease) = match recent {
            Some(decision) => (decision.run, decision.lease),
            None => match inner.ensure_run(&request.run_id).await {
                Ok(Some(run)) => (run, None),
                Ok(None) => return refused(Refusal::UnknownTool),
                Err(error) => {
                    tracing::error!(?error, "replica: the run cannot be read");
                    return refused(Refusal::StoreUnavailable);
                }
            },
        };
        let Some(tab_id) = run.tab_id else {
            return refused(Refusal::UnknownTool);
        };
        if inner.lock().local_tabs.contains_key(&tab_id) {
            return route::local_call(inner, request, progress, None).await;
        }
        let lease = match lease {
            Some(read) => Ok(read),
            None => inner.store().surface(&tab_id).await,
        };
        match lease {
            Ok(Some(lease))
                if lease.replica != inner.name() && lease.lease_expires_at_ms >= inner.now() =>
            {
                route::routed_call(&self.inner, request, lease, progress).await
            }
            Ok(_) => route::local_call(inner, request, progress, None).await,
            Err(error) => {
                tracing::error!(?error, "replica: the tab's lease cannot be read");
                refused(Refusal::StoreUnavailable)
            }
        }
    }
}

fn refused(reason: Refusal) -> CallEnd {
    CallEnd::Refused { reason }
}

/// Any surface change anywhere: the mirrors it concerns are verified
/// again (or dropped), then the local change counter moves.
async fn serve_surfaces(inner: Weak<Inner>, mut surfaces: surface_store::wake::Subscription) {
    while let Some(delivery) = surfaces.next().await {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let tabs: Vec<String> = {
            let state = inner.lock();
            match &delivery {
                surface_store::wake::Delivery::Wake(tab) if state.mirrors.contains_key(tab) => {
                    vec![tab.clone()]
                }
                surface_store::wake::Delivery::Wake(_) => Vec::new(),
                surface_store::wake::Delivery::Rescan => state.mirrors.keys().cloned().collect(),
            }
        };
        for tab in tabs {
            if let Err(error) = inner.refresh_mirror(&tab).await {
                tracing::warn!(?error, tab_id = ?tab, "replica: mirror not refreshed");
            }
        }
        inner.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}

async fn renew_leases(inner: Weak<Inner>) {
    let interval = match inner.upgrade() {
        Some(i) => i.options.renew_interval,
        None => return,
    };
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        inner.renew().await;
        // Routed calls whose wake-up was lost without a rescan (a
        // listening connection that died silently) wait one interval.
        route::take_requested(&inner).await;
    }
}
