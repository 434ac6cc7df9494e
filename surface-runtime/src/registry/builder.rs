//! [`SurfaceRegistryBuilder`]: the registry's settings and bounds, with
//! their defaults.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{
    Inner, Listeners, RegistryBuildError, Settings, State, SurfaceRegistry,
    DEFAULT_CONFIRMATION_TTL, DEFAULT_MAX_INVOCATION_IDS, DEFAULT_MAX_PENDING_CONFIRMATIONS,
    DEFAULT_RECORDED_RESULTS, DEFAULT_TIMEOUT,
};
use crate::admission::InvocationIds;
use crate::authority::Authority;
use crate::budget::SnapshotOptions;
use crate::clock::{Clock, SystemClock, Timer};
use crate::confirmation::{Confirmations, Signer};
use crate::hash::Fingerprint;
use crate::policy::{AgentPolicy, Principal};

/// Configures a [`SurfaceRegistry`].
pub struct SurfaceRegistryBuilder {
    authority: Authority,
    timeout: Option<Duration>,
    clock: Arc<dyn Clock>,
    timer: Option<Arc<dyn Timer>>,
    confirmation_ttl: Duration,
    secret: Option<[u8; 32]>,
    confirm_optional: bool,
    policies: Vec<Arc<dyn AgentPolicy>>,
    environment: Option<String>,
    principal: Option<Principal>,
    snapshot: SnapshotOptions,
    recorded_results: usize,
    max_invocation_ids: usize,
    max_pending_confirmations: usize,
}

impl SurfaceRegistryBuilder {
    /// The defaults: system clock, no timer (so no timeout), a random
    /// secret, [`DEFAULT_CONFIRMATION_TTL`], optional confirmations not
    /// enforced, no registry-wide policy, and the default bounds.
    pub(super) fn new(authority: Authority) -> Self {
        Self {
            authority,
            timeout: None,
            clock: Arc::new(SystemClock),
            timer: None,
            confirmation_ttl: DEFAULT_CONFIRMATION_TTL,
            secret: None,
            confirm_optional: false,
            policies: Vec::new(),
            environment: None,
            principal: None,
            snapshot: SnapshotOptions::default(),
            recorded_results: DEFAULT_RECORDED_RESULTS,
            max_invocation_ids: DEFAULT_MAX_INVOCATION_IDS,
            max_pending_confirmations: DEFAULT_MAX_PENDING_CONFIRMATIONS,
        }
    }

    /// Registry timeout for execution (phase 7). Only effective with a
    /// [`Timer`]: **without a timer there is no timeout**. With a timer and
    /// no explicit timeout, [`DEFAULT_TIMEOUT`] (30 s) applies.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// The clock for confirmation expiry (default [`SystemClock`]).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    /// The timer that enforces the timeout (default: none).
    pub fn timer(mut self, timer: Arc<dyn Timer>) -> Self {
        self.timer = Some(timer);
        self
    }
    /// Sets `timer` unless one was set ([`SurfaceRegistryBuilder::timer`]):
    /// what a convenience constructor calls to supply a platform default.
    pub fn default_timer(mut self, timer: Arc<dyn Timer>) -> Self {
        self.timer.get_or_insert(timer);
        self
    }
    /// Lifetime of a pending confirmation and, from approval, of the
    /// approval (default [`DEFAULT_CONFIRMATION_TTL`], 5 min).
    pub fn confirmation_ttl(mut self, ttl: Duration) -> Self {
        self.confirmation_ttl = ttl;
        self
    }
    /// The registry's secret, keying its unguessable confirmation and
    /// surface ids and its invocation-id ledger (default: 32 bytes from
    /// `getrandom`, fresh per registry).
    pub fn secret(mut self, secret: [u8; 32]) -> Self {
        self.secret = Some(secret);
        self
    }
    /// Treat confirmation level `optional` as `required` (default `false`:
    /// optional calls run unless a policy asks for confirmation).
    pub fn confirm_optional(mut self, yes: bool) -> Self {
        self.confirm_optional = yes;
        self
    }
    /// A policy applied to every call, procedures and view capabilities.
    pub fn policy(mut self, policy: impl AgentPolicy + 'static) -> Self {
        self.policies.push(Arc::new(policy));
        self
    }
    /// The environment the policies see (`"production"`, `"staging"`, …;
    /// [`crate::policy::environment`] reads it). Default: none, which
    /// that built-in denies.
    pub fn environment(mut self, name: impl Into<String>) -> Self {
        self.environment = Some(name.into());
        self
    }
    /// How [`SurfaceRegistry::snapshot`] cuts the surface down (a scope,
    /// a budget; default: everything). Every snapshot a page announces,
    /// exports or registers with WebMCP is taken this way, so they all
    /// show the same cut (`docs/pipeline.md`, "Large surfaces").
    pub fn snapshot_options(mut self, options: SnapshotOptions) -> Self {
        self.snapshot = options;
        self
    }
    /// The principal the registry starts with (default: none; change it
    /// with [`SurfaceRegistry::set_principal`]).
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }
    /// How many completed results are kept to answer replays of an
    /// invocation id (default [`DEFAULT_RECORDED_RESULTS`]). Ids are kept
    /// for the registry's lifetime regardless, so an id never executes
    /// twice.
    pub fn recorded_results(mut self, count: usize) -> Self {
        self.recorded_results = count.max(1);
        self
    }
    /// How many invocation ids the registry remembers for its lifetime
    /// (default [`DEFAULT_MAX_INVOCATION_IDS`], at least 1). Each costs 40
    /// bytes (a keyed 128-bit digest, the envelope hash and a state),
    /// whatever the id's length. At the bound a **new** id is refused with
    /// `PRECONDITION_FAILED`, `details.reason: "invocation-ids-exhausted"`
    /// (and an audit event), while repeats of remembered ids are still
    /// answered: ids are never forgotten, so one never executes twice.
    /// Replace the registry (a new page session) before it fills up.
    pub fn max_invocation_ids(mut self, count: usize) -> Self {
        self.max_invocation_ids = count.max(1);
        self
    }
    /// How many confirmations may wait for the user at once (default
    /// [`DEFAULT_MAX_PENDING_CONFIRMATIONS`], at least 1). At the bound, a
    /// call that needs a **new** confirmation is refused `RATE_LIMITED`
    /// (`details.reason: "queue-full"`, `retryAfterMs` until the oldest
    /// expires), as the original refuses it: none the user may be reading is
    /// dropped. A repeat of a call that already waits gets that confirmation
    /// and takes no place. The registry keeps at most four times this many
    /// records in all (approved, declined and used ones included;
    /// `docs/limits.md`).
    pub fn max_pending_confirmations(mut self, count: usize) -> Self {
        self.max_pending_confirmations = count.max(1);
        self
    }

    /// Builds the registry.
    ///
    /// # Panics
    /// When no secret was given and the platform has no random source
    /// (`getrandom` failed); use [`Self::try_build`] to handle that.
    pub fn build(self) -> SurfaceRegistry {
        match self.try_build() {
            Ok(registry) => registry,
            Err(err) => panic!("{err}"),
        }
    }

    /// Builds the registry.
    ///
    /// # Errors
    /// [`RegistryBuildError::NoRandomSource`] when no secret was given and
    /// the platform's random source (`getrandom`) fails.
    pub fn try_build(self) -> Result<SurfaceRegistry, RegistryBuildError> {
        let secret = match self.secret {
            Some(secret) => secret,
            None => random_secret()?,
        };
        let timeout = match (self.timer.is_some(), self.timeout) {
            (false, _) => None,
            (true, Some(t)) => Some(t),
            (true, None) => Some(DEFAULT_TIMEOUT),
        };
        let discovery_policies = self
            .policies
            .iter()
            .any(|p| p.discovery() != crate::policy::Discovery::NotChecked);
        let signer = Signer::new(secret);
        let surface_id = signer.id("surf", 0);
        let fingerprint = Fingerprint::new(fingerprint_seed(&signer));
        let invocations = InvocationIds::new(
            &signer.derived_key("invocation-ids"),
            self.max_invocation_ids,
            self.recorded_results,
        );
        let confirmations = Confirmations::new(
            signer,
            self.clock,
            self.confirmation_ttl,
            self.confirm_optional,
            self.max_pending_confirmations,
        );
        Ok(SurfaceRegistry {
            inner: Arc::new(Inner {
                authority: self.authority,
                settings: Settings {
                    timeout,
                    timer: self.timer,
                    policies: self.policies,
                    environment: self.environment,
                    snapshot: self.snapshot,
                },
                state: Mutex::new(State {
                    version: 0,
                    next_number: 1,
                    procedures: BTreeMap::new(),
                    components: BTreeMap::new(),
                    index: HashMap::default(),
                    invocations,
                    executor: None,
                    spare_signal: None,
                    principal: self.principal.map(Arc::new),
                    evaluation_scope: None,
                }),
                confirmations,
                surface_id,
                fingerprint,
                groups: Default::default(),
                discovery_policies: std::sync::atomic::AtomicBool::new(discovery_policies),
                audit_listeners: AtomicUsize::new(0),
                listeners: Mutex::new(Listeners::default()),
                #[cfg(feature = "dynamic")]
                validators: Mutex::new(HashMap::new()),
            }),
        })
    }
}

fn random_secret() -> Result<[u8; 32], RegistryBuildError> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| RegistryBuildError::NoRandomSource {
        cause: e.to_string(),
    })?;
    Ok(secret)
}

/// The envelope-fingerprint seed of a registry: derived from its secret
/// (never the secret's own bytes).
fn fingerprint_seed(signer: &Signer) -> u64 {
    let key = signer.derived_key("envelope-fingerprint");
    let mut first = [0u8; 8];
    first.copy_from_slice(&key[..8]);
    u64::from_le_bytes(first)
}
