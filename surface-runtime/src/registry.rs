//! The surface registry (SPEC §6): live component instances and procedure
//! references, the snapshot the agent sees, and the entry point of the
//! invocation pipeline (`invoke`, in [`crate::pipeline`]).
//!
//! # Surface version
//! `surface_version()` starts at 0 and increases by one on every
//! registration, every unregistration (dropping a [`RegistrationHandle`])
//! and every observed availability change. Availability is observed when a
//! snapshot is taken or [`SurfaceRegistry::refresh_availability`] runs: each
//! `when()` result is compared with the one recorded at the last
//! observation, and any difference bumps the version once (before the
//! snapshot is returned, so its `surfaceVersion` names the availability it
//! reports). [`SurfaceRegistry::notify_changed`] bumps unconditionally (for
//! example after a `describe()` text changed). Subscribers
//! ([`SurfaceRegistry::subscribe`]) are told about every bump.
//!
//! # Closures and locking
//! `when`, `describe`, `unavailable_reason` and `bind` run without the
//! registry's lock held, so they may read anything (including the
//! registry); registering or dropping handles from inside them is allowed
//! but the snapshot under construction then retries to stay a consistent
//! cut.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::admission::InvocationIds;
use crate::audit::{AuditEvent, RegistrationKind};
use crate::authority::Authority;
use crate::clock::{Clock, SystemClock, Timer};
use crate::component::{ComponentDefinition, HandlerFn};
use crate::confirmation::{
    ConfirmationError, ConfirmationLevel, ConfirmationStore, PendingConfirmation, Signer,
};
use crate::executor::AgentProcedureExecutor;
use crate::invocation::{AgentConsumer, ConfirmationEvidence, ConsumerKind};
use crate::manifest::ManifestTool;
use crate::policy::AgentPolicy;
use crate::reference::{BindFn, BoundFieldSpec, ProcedureReference, Reason, TextFn, WhenFn};
use crate::snapshot::{
    AgentProcedureDescriptor, BindingSource, BoundFieldDescriptor, ComponentContext,
    ComponentDescriptor, SurfaceSnapshot, ViewCapabilityDescriptor,
};
use crate::sync::{MaybeSend, MaybeSync};

/// Suffix appended to the description of an overridable bound field in the
/// agent-facing schema (SPEC §5 rule 3).
pub const OVERRIDABLE_NOTE: &str =
    "Optional: defaults to the current UI value at execution when omitted.";

/// Default lifetime of a pending confirmation and of issued evidence.
pub const DEFAULT_CONFIRMATION_TTL: Duration = Duration::from_secs(300);

/// Default registry timeout when a [`Timer`] is installed but no timeout
/// was set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default number of completed invocation results kept for replay.
pub const DEFAULT_RECORDED_RESULTS: usize = 1_000;

/// Default bound of the invocation ids a registry remembers for its
/// lifetime (40 bytes each, ≈ 5.4 MB at the bound with the hash table).
/// At the bound new ids are refused (`PRECONDITION_FAILED`,
/// `details.reason: "invocation-ids-exhausted"`); see
/// [`SurfaceRegistryBuilder::max_invocation_ids`].
pub const DEFAULT_MAX_INVOCATION_IDS: usize = 100_000;

/// Default bound of live confirmations (pending, or approved and not yet
/// used). At the bound a new `CONFIRMATION_REQUIRED` expires the oldest
/// pending one; see [`SurfaceRegistryBuilder::max_pending_confirmations`].
pub const DEFAULT_MAX_PENDING_CONFIRMATIONS: usize = 100;

#[cfg(not(target_arch = "wasm32"))]
type ChangeFn = dyn Fn(&SurfaceChange) + Send + Sync;
#[cfg(target_arch = "wasm32")]
type ChangeFn = dyn Fn(&SurfaceChange);
#[cfg(not(target_arch = "wasm32"))]
type AuditFn = dyn Fn(&AuditEvent) + Send + Sync;
#[cfg(target_arch = "wasm32")]
type AuditFn = dyn Fn(&AuditEvent);

/// Why a registration was refused. Nothing is registered and a
/// `component-rejected` audit event is emitted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// The reference's procedure is not in the registry's authority, or its
    /// manifest entry differs (built from another manifest).
    #[error("procedure `{path}` is not in the registry's authority (a frontend can narrow exposure, never widen it)")]
    OutsideAuthority {
        /// The path.
        path: String,
    },
    /// The binding type is for another procedure.
    #[error("the binding of `{path}` is declared for procedure `{binding}`")]
    BindingMismatch {
        /// The referenced path.
        path: String,
        /// `BoundInput::PROCEDURE`.
        binding: String,
    },
    /// A bound field is not a top-level property of the input schema.
    #[error("procedure `{path}` has no top-level input property `{field}` to bind")]
    UnknownBoundField {
        /// The path.
        path: String,
        /// The field.
        field: String,
    },
    /// `overridable` names a field the reference does not bind.
    #[error("`{field}` is declared overridable but `{path}` does not bind it")]
    OverridableNotBound {
        /// The path.
        path: String,
        /// The field.
        field: String,
    },
    /// `context` names a handle that is not a live component.
    #[error("the context registration `{registration_id}` is not a live component")]
    ContextNotLive {
        /// The handle's registration id.
        registration_id: String,
    },
    /// A JSON Schema does not compile.
    #[error("the input schema of `{name}` is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// Procedure path or view capability id.
        name: String,
        /// The compiler's message.
        message: String,
    },
    /// A view capability named like a manifest path (SPEC §2).
    #[error("view capability `{capability_id}` collides with manifest procedure `{path}`; rename the view capability (a procedure is referenced, never re-declared)")]
    ViewCollision {
        /// The view capability id.
        capability_id: String,
        /// The manifest path.
        path: String,
    },
    /// The same component type and instance id is already live.
    #[error("component `{component_type}` instance `{instance_id}` is already registered")]
    DuplicateComponent {
        /// Type.
        component_type: String,
        /// Instance id.
        instance_id: String,
    },
    /// Two capabilities of one component share a name.
    #[error("component `{component_type}` declares view capability `{name}` twice")]
    DuplicateCapability {
        /// Type.
        component_type: String,
        /// Name.
        name: String,
    },
    /// Empty component type, instance id or capability name.
    #[error("invalid component: {reason}")]
    InvalidComponent {
        /// What is wrong.
        reason: String,
    },
}

/// Why a registry could not be built.
#[derive(Debug, thiserror::Error)]
#[error("no random source for the confirmation secret: {0}; pass one with `SurfaceRegistryBuilder::secret`")]
pub struct RegistryBuildError(String);

/// A change of the surface, delivered to [`SurfaceRegistry::subscribe`]
/// listeners after every `surfaceVersion` bump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceChange {
    /// The new version.
    pub surface_version: u64,
    /// What changed.
    pub reason: ChangeReason,
}

/// What bumped the version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ChangeReason {
    /// A registration was added.
    #[serde(rename_all = "camelCase")]
    Registered {
        /// Its id.
        registration_id: String,
    },
    /// A registration was removed.
    #[serde(rename_all = "camelCase")]
    Unregistered {
        /// Its id.
        registration_id: String,
    },
    /// Some `when()` result differs from the last observation.
    Availability,
    /// [`SurfaceRegistry::notify_changed`].
    Notified,
}

pub(crate) struct ProcEntry {
    pub(crate) registration_id: String,
    pub(crate) path: Arc<str>,
    pub(crate) procedure_id: String,
    pub(crate) capability_id: Arc<str>,
    /// `tool.contract_digest`, shared with every `ExecuteRequest`.
    pub(crate) contract_digest: Option<Arc<str>>,
    pub(crate) tool: ManifestTool,
    pub(crate) agent_schema: Arc<Value>,
    pub(crate) output_schema: Option<Arc<Value>>,
    pub(crate) bound: Vec<BoundFieldSpec>,
    pub(crate) bound_descriptors: Vec<BoundFieldDescriptor>,
    pub(crate) bind: Option<Arc<BindFn>>,
    pub(crate) validator: Arc<jsonschema::Validator>,
    pub(crate) when: Option<Arc<WhenFn>>,
    pub(crate) unavailable_reason: Option<Reason>,
    pub(crate) describe: Option<Arc<TextFn>>,
    pub(crate) meta: Option<Arc<Map<String, Value>>>,
    pub(crate) context: Option<ComponentContext>,
    pub(crate) confirmation: ConfirmationLevel,
    pub(crate) policies: Vec<Arc<dyn AgentPolicy>>,
    /// Last observed `when()` ([`Observed`]).
    pub(crate) observed: Observed,
}

impl ProcEntry {
    pub(crate) fn description(&self) -> String {
        join_description(&self.tool.description, self.describe.as_deref())
    }
}

pub(crate) struct ViewEntry {
    pub(crate) name: String,
    pub(crate) capability_id: String,
    pub(crate) description: String,
    pub(crate) input_schema: Arc<Value>,
    pub(crate) validator: Arc<jsonschema::Validator>,
    pub(crate) handler: Arc<HandlerFn>,
    pub(crate) when: Option<Arc<WhenFn>>,
    pub(crate) unavailable_reason: Option<Reason>,
    /// Last observed `when()`.
    pub(crate) observed: Observed,
}

/// The last observed availability of one capability: unknown until the
/// first snapshot / refresh, then available or not. Lock-free so a
/// snapshot of many references does not take the registry lock per entry.
#[derive(Default)]
pub(crate) struct Observed(std::sync::atomic::AtomicU8);

impl Observed {
    /// Records `available`; `true` when a previous observation differed.
    pub(crate) fn record(&self, available: bool) -> bool {
        let new = if available { 1 } else { 2 };
        let previous = self.0.swap(new, std::sync::atomic::Ordering::SeqCst);
        previous != 0 && previous != new
    }
}

pub(crate) struct ComponentEntry {
    pub(crate) registration_id: String,
    pub(crate) context: ComponentContext,
    pub(crate) description: Option<String>,
    pub(crate) views: Vec<ViewEntry>,
}

pub(crate) struct State {
    pub(crate) version: u64,
    pub(crate) next_number: u64,
    pub(crate) procedures: BTreeMap<u64, Arc<ProcEntry>>,
    pub(crate) components: BTreeMap<u64, Arc<ComponentEntry>>,
    /// Live registration numbers by capability id (`procedureId`, the
    /// canonical capability id when it differs, and view capability ids).
    pub(crate) index: HashMap<String, Vec<u64>, FastHash>,
    /// Every admitted invocation id ([`crate::admission`]).
    pub(crate) invocations: InvocationIds,
    pub(crate) confirmations: ConfirmationStore,
}

pub(crate) struct Config {
    pub(crate) timeout: Option<Duration>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) timer: Option<Arc<dyn Timer>>,
    pub(crate) confirmation_ttl: Duration,
    pub(crate) confirm_optional: bool,
    pub(crate) policies: Vec<Arc<dyn AgentPolicy>>,
    pub(crate) recorded_results: usize,
}

#[derive(Default)]
struct Listeners {
    next: u64,
    changes: Vec<(u64, Arc<ChangeFn>)>,
    audit: Vec<(u64, Arc<AuditFn>)>,
}

pub(crate) struct Inner {
    pub(crate) authority: Authority,
    pub(crate) config: Config,
    pub(crate) signer: Signer,
    pub(crate) state: Mutex<State>,
    pub(crate) executor: Mutex<Option<Arc<dyn AgentProcedureExecutor>>>,
    /// Per-registry seed of envelope fingerprints.
    pub(crate) fingerprint_seed: u64,
    /// Number of audit listeners (lets `audit` skip the lock when zero).
    audit_listeners: std::sync::atomic::AtomicUsize,
    listeners: Mutex<Listeners>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

/// The hasher of the registry's hot maps (capability index, invocation
/// ids): foldhash with a per-map random seed (an index lookup went from
/// 208 to 26 instructions under callgrind, against std's SipHash).
pub(crate) type FastHash = foldhash::fast::RandomState;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The registry of live references (SPEC §6). Cheap to clone: clones share
/// one registry. Create it with the compiler-generated authority
/// (`manifest!`'s `authority()`), or [`Authority::from_manifest`].
#[derive(Clone)]
pub struct SurfaceRegistry {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for SurfaceRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SurfaceRegistry")
            .field("surface_version", &self.surface_version())
            .finish_non_exhaustive()
    }
}

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
    recorded_results: usize,
    max_invocation_ids: usize,
    max_pending_confirmations: usize,
}

impl SurfaceRegistryBuilder {
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
    /// Lifetime of a pending confirmation and, from approval, of its
    /// evidence (default [`DEFAULT_CONFIRMATION_TTL`], 5 min).
    pub fn confirmation_ttl(mut self, ttl: Duration) -> Self {
        self.confirmation_ttl = ttl;
        self
    }
    /// The HMAC secret for confirmation evidence (default: 32 bytes from
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
    /// How many confirmations may be live at once — pending, or approved
    /// and not yet used (default [`DEFAULT_MAX_PENDING_CONFIRMATIONS`], at
    /// least 1). At the bound, a call that needs a new confirmation expires
    /// the **oldest pending** one first (the oldest approved one when none
    /// is pending): the newest request, the one the user is looking at,
    /// always gets its confirmation id. An expired id then fails `confirm`
    /// with [`ConfirmationError::Unknown`] and its evidence with
    /// `CONFIRMATION_INVALID`; a `confirmation-expired` audit event names it.
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
    /// [`RegistryBuildError`] when no secret was given and `getrandom` fails.
    pub fn try_build(self) -> Result<SurfaceRegistry, RegistryBuildError> {
        let secret = match self.secret {
            Some(secret) => secret,
            None => {
                let mut secret = [0u8; 32];
                getrandom::fill(&mut secret).map_err(|e| RegistryBuildError(e.to_string()))?;
                secret
            }
        };
        let timeout = match (self.timer.is_some(), self.timeout) {
            (false, _) => None,
            (true, Some(t)) => Some(t),
            (true, None) => Some(DEFAULT_TIMEOUT),
        };
        Ok(SurfaceRegistry {
            inner: Arc::new(Inner {
                authority: self.authority,
                config: Config {
                    timeout,
                    clock: self.clock,
                    timer: self.timer,
                    confirmation_ttl: self.confirmation_ttl,
                    confirm_optional: self.confirm_optional,
                    policies: self.policies,
                    recorded_results: self.recorded_results,
                },
                signer: Signer::new(secret),
                state: Mutex::new(State {
                    version: 0,
                    next_number: 1,
                    procedures: BTreeMap::new(),
                    components: BTreeMap::new(),
                    index: HashMap::default(),
                    invocations: InvocationIds::new(
                        &Signer::new(secret).derived_key("invocation-ids"),
                        self.max_invocation_ids,
                    ),
                    confirmations: ConfirmationStore::new(self.max_pending_confirmations),
                }),
                executor: Mutex::new(None),
                fingerprint_seed: u64::from_le_bytes([
                    secret[0], secret[1], secret[2], secret[3], secret[4], secret[5], secret[6],
                    secret[7],
                ]) ^ 0x9e37_79b9_7f4a_7c15,
                audit_listeners: std::sync::atomic::AtomicUsize::new(0),
                listeners: Mutex::new(Listeners::default()),
                validators: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// Keeps a registration alive; dropping it unregisters (and bumps
/// `surfaceVersion`). For a component it is also what
/// [`ProcedureReference::context`] takes.
#[must_use = "dropping the handle unregisters immediately"]
pub struct RegistrationHandle {
    inner: Weak<Inner>,
    number: u64,
    registration_id: String,
    component: Option<ComponentContext>,
}

impl fmt::Debug for RegistrationHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrationHandle")
            .field("registration_id", &self.registration_id)
            .field("component", &self.component)
            .finish()
    }
}

impl RegistrationHandle {
    /// The registration id (as in the snapshot).
    pub fn registration_id(&self) -> &str {
        &self.registration_id
    }
    /// The component type and instance id, for component registrations.
    pub fn component_context(&self) -> Option<&ComponentContext> {
        self.component.as_ref()
    }
    pub(crate) fn number(&self) -> u64 {
        self.number
    }
    /// Unregisters now (same as dropping).
    pub fn unregister(self) {}
}

impl Drop for RegistrationHandle {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            SurfaceRegistry { inner }.unregister(self.number, &self.registration_id);
        }
    }
}

/// A listener registration; dropping it unsubscribes.
#[must_use = "dropping the subscription unsubscribes immediately"]
pub struct Subscription {
    inner: Weak<Inner>,
    id: u64,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            let mut l = lock(&inner.listeners);
            l.changes.retain(|(id, _)| *id != self.id);
            l.audit.retain(|(id, _)| *id != self.id);
            inner
                .audit_listeners
                .store(l.audit.len(), std::sync::atomic::Ordering::SeqCst);
        }
    }
}

fn registration_id(number: u64) -> String {
    format!("r{number}")
}

/// The number of a registration id, accepting only the canonical spelling
/// `registration_id` produces: `r` and the decimal number without sign or
/// leading zeros (`r4`, never `r04`, `r+4`, `r00004`).
pub(crate) fn parse_registration_id(id: &str) -> Option<u64> {
    let digits = id.strip_prefix('r')?;
    let canonical =
        digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    digits.parse().ok()
}

pub(crate) fn join_description(base: &str, describe: Option<&TextFn>) -> String {
    match describe {
        None => base.to_string(),
        Some(f) => {
            let extra = f();
            match (base.is_empty(), extra.is_empty()) {
                (_, true) => base.to_string(),
                (true, false) => extra,
                (false, false) => format!("{base}\n\n{extra}"),
            }
        }
    }
}

/// The agent-facing input schema of SPEC §5 rule 1: `full` minus the
/// `locked` top-level fields (removed from `properties` and `required`);
/// `overridable` fields stay, leave `required` (the bound value is the
/// default) and get [`OVERRIDABLE_NOTE`] appended to their `description`.
/// When every property is locked the result is
/// `{"type":"object","properties":{},"additionalProperties":false}`.
pub fn agent_input_schema(full: &Value, locked: &[&str], overridable: &[&str]) -> Value {
    if locked.is_empty() && overridable.is_empty() {
        return full.clone();
    }
    let mut schema = full.clone();
    let Some(obj) = schema.as_object_mut() else {
        return schema;
    };
    let mut all_locked = false;
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for name in locked {
            props.remove(*name);
        }
        for name in overridable {
            if let Some(prop) = props.get_mut(*name) {
                annotate_overridable(prop);
            }
        }
        all_locked = props.is_empty() && !locked.is_empty();
    }
    if all_locked {
        return json!({"type": "object", "properties": {}, "additionalProperties": false});
    }
    if let Some(Value::Array(required)) = obj.get_mut("required") {
        required.retain(|r| {
            r.as_str()
                .is_none_or(|r| !locked.contains(&r) && !overridable.contains(&r))
        });
        if required.is_empty() {
            obj.remove("required");
        }
    }
    schema
}

fn annotate_overridable(prop: &mut Value) {
    match prop {
        Value::Object(map) => {
            let description = match map.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} ({OVERRIDABLE_NOTE})"),
                _ => OVERRIDABLE_NOTE.to_string(),
            };
            map.insert("description".into(), Value::String(description));
        }
        Value::Bool(true) => *prop = json!({ "description": OVERRIDABLE_NOTE }),
        _ => {}
    }
}

impl SurfaceRegistry {
    /// A registry with default settings (system clock, no timer ⇒ no
    /// timeout, random secret, 5 min confirmation TTL).
    pub fn new(authority: Authority) -> Self {
        Self::builder(authority).build()
    }

    /// A builder.
    pub fn builder(authority: Authority) -> SurfaceRegistryBuilder {
        SurfaceRegistryBuilder {
            authority,
            timeout: None,
            clock: Arc::new(SystemClock),
            timer: None,
            confirmation_ttl: DEFAULT_CONFIRMATION_TTL,
            secret: None,
            confirm_optional: false,
            policies: Vec::new(),
            recorded_results: DEFAULT_RECORDED_RESULTS,
            max_invocation_ids: DEFAULT_MAX_INVOCATION_IDS,
            max_pending_confirmations: DEFAULT_MAX_PENDING_CONFIRMATIONS,
        }
    }

    /// The authority the registry was created with.
    pub fn authority(&self) -> &Authority {
        &self.inner.authority
    }

    /// The current surface version.
    pub fn surface_version(&self) -> u64 {
        lock(&self.inner.state).version
    }

    /// How many invocation ids the registry remembers (every id it admitted
    /// so far); new ids are refused once this reaches
    /// [`SurfaceRegistryBuilder::max_invocation_ids`]. Replace the registry
    /// before that.
    pub fn remembered_invocation_ids(&self) -> usize {
        lock(&self.inner.state).invocations.len()
    }

    /// Installs the executor for procedure calls (replaces any previous).
    pub fn set_procedure_executor(&self, executor: Arc<dyn AgentProcedureExecutor>) {
        *lock(&self.inner.executor) = Some(executor);
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.inner.config.clock.now_ms()
    }

    // ----- listeners -------------------------------------------------------

    /// Calls `listener` after every `surfaceVersion` bump, outside the
    /// registry lock. Dropping the returned [`Subscription`] unsubscribes.
    pub fn subscribe<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&SurfaceChange) + MaybeSend + MaybeSync + 'static,
    {
        let mut l = lock(&self.inner.listeners);
        l.next += 1;
        let id = l.next;
        l.changes.push((id, Arc::new(listener)));
        Subscription {
            inner: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// Calls `listener` with every audit event (also sent to `tracing`).
    pub fn on_audit<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&AuditEvent) + MaybeSend + MaybeSync + 'static,
    {
        let mut l = lock(&self.inner.listeners);
        l.next += 1;
        let id = l.next;
        l.audit.push((id, Arc::new(listener)));
        self.inner
            .audit_listeners
            .store(l.audit.len(), std::sync::atomic::Ordering::SeqCst);
        Subscription {
            inner: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// Emits an audit event built by `make`, only when someone listens.
    pub(crate) fn audit(&self, make: impl FnOnce() -> AuditEvent) {
        let any = self
            .inner
            .audit_listeners
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0;
        let listeners: Vec<Arc<AuditFn>> = if any {
            let l = lock(&self.inner.listeners);
            l.audit.iter().map(|(_, f)| f.clone()).collect()
        } else {
            Vec::new()
        };
        let traced = tracing::enabled!(target: "agent_surface::audit", tracing::Level::ERROR);
        if listeners.is_empty() && !traced {
            return;
        }
        let event = make();
        event.trace();
        for listener in listeners {
            listener(&event);
        }
    }

    fn notify(&self, change: SurfaceChange) {
        let listeners: Vec<Arc<ChangeFn>> = {
            let l = lock(&self.inner.listeners);
            l.changes.iter().map(|(_, f)| f.clone()).collect()
        };
        for listener in listeners {
            listener(&change);
        }
    }

    // ----- registration ----------------------------------------------------

    fn reject_registration(
        &self,
        kind: RegistrationKind,
        name: &str,
        err: RegistrationError,
    ) -> RegistrationError {
        let reason = err.to_string();
        let name = name.to_string();
        self.audit(|| AuditEvent::ComponentRejected { kind, name, reason });
        err
    }

    fn validator(&self, key: String, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        if let Some(v) = lock(&self.inner.validators).get(&key) {
            return Ok(v.clone());
        }
        let compiled = Arc::new(crate::format::validator_for(schema).map_err(|e| e.to_string())?);
        lock(&self.inner.validators).insert(key, compiled.clone());
        Ok(compiled)
    }

    /// Registers a procedure reference (SPEC §6, seed 000). The reference
    /// must name a procedure of the registry's authority with the same
    /// manifest entry; its binding must be for that procedure and bind only
    /// top-level input properties; `overridable` may only name bound fields;
    /// a `context` must be a live component. The full input schema's
    /// validator is compiled once per manifest procedure and shared.
    ///
    /// # Errors
    /// A [`RegistrationError`]; nothing is registered and a
    /// `component-rejected` audit event is emitted.
    pub fn register_procedure<I>(
        &self,
        reference: ProcedureReference<I>,
    ) -> Result<RegistrationHandle, RegistrationError> {
        let path = reference.procedure.path().to_string();
        let reject = |err| self.reject_registration(RegistrationKind::Procedure, &path, err);

        let in_authority = self
            .inner
            .authority
            .procedure(&path)
            .is_some_and(|p| p.digest == reference.procedure.digest());
        if !in_authority {
            return Err(reject(RegistrationError::OutsideAuthority {
                path: path.clone(),
            }));
        }
        let tool = reference.procedure.tool().clone();

        let mut bound: Vec<BoundFieldSpec> = Vec::new();
        let mut bind = None;
        if let Some(binding) = &reference.binding {
            if binding.procedure != path {
                return Err(reject(RegistrationError::BindingMismatch {
                    path: path.clone(),
                    binding: binding.procedure.to_string(),
                }));
            }
            let props = tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object);
            for field in &binding.fields {
                if !props.is_some_and(|p| p.contains_key(&field.name)) {
                    return Err(reject(RegistrationError::UnknownBoundField {
                        path: path.clone(),
                        field: field.name.clone(),
                    }));
                }
            }
            bound = binding.fields.clone();
            bind = Some(binding.bind.clone());
        }
        for name in &reference.overridable {
            match bound.iter_mut().find(|f| &f.name == name) {
                Some(field) => field.locked = false,
                None => {
                    return Err(reject(RegistrationError::OverridableNotBound {
                        path: path.clone(),
                        field: name.clone(),
                    }))
                }
            }
        }

        let context = match &reference.context {
            None => None,
            Some(link) => {
                let live = lock(&self.inner.state)
                    .components
                    .get(&link.registration)
                    .map(|c| c.context.clone());
                match live {
                    Some(ctx) if ctx == link.context => Some(ctx),
                    _ => {
                        return Err(reject(RegistrationError::ContextNotLive {
                            registration_id: registration_id(link.registration),
                        }))
                    }
                }
            }
        };

        let digest = reference.procedure.digest().to_string();
        let validator = self
            .validator(format!("procedure:{digest}"), &tool.input_schema)
            .map_err(|message| {
                reject(RegistrationError::InvalidSchema {
                    name: path.clone(),
                    message,
                })
            })?;

        let locked: Vec<&str> = bound
            .iter()
            .filter(|f| f.locked)
            .map(|f| f.name.as_str())
            .collect();
        let overridable: Vec<&str> = bound
            .iter()
            .filter(|f| !f.locked)
            .map(|f| f.name.as_str())
            .collect();
        let agent_schema = Arc::new(agent_input_schema(
            &tool.input_schema,
            &locked,
            &overridable,
        ));
        let bound_descriptors = bound
            .iter()
            .map(|f| BoundFieldDescriptor {
                path: f.name.clone(),
                locked: f.locked,
                source: BindingSource::UiState,
            })
            .collect();

        let mut confirmation = ConfirmationLevel::floor(tool.effect).max(reference.confirmation);
        for p in reference
            .policies
            .iter()
            .chain(self.inner.config.policies.iter())
        {
            confirmation = confirmation.max(p.confirmation());
        }

        let capability_id = self
            .inner
            .authority
            .procedure(&path)
            .map(|p| p.capability_id.clone())
            .unwrap_or_else(|| format!("domain:{path}"));

        let (handle, change) = {
            let mut state = lock(&self.inner.state);
            let number = state.next_number;
            state.next_number += 1;
            state.version += 1;
            let entry = ProcEntry {
                registration_id: registration_id(number),
                procedure_id: format!("domain:{path}"),
                capability_id: capability_id.into(),
                path: path.as_str().into(),
                contract_digest: tool.contract_digest.as_deref().map(Arc::from),
                output_schema: tool.output_schema.clone().map(Arc::new),
                tool,
                agent_schema,
                bound,
                bound_descriptors,
                bind,
                validator,
                when: reference.when.clone(),
                unavailable_reason: reference.unavailable_reason.clone(),
                describe: reference.describe.clone(),
                meta: reference.meta.clone().map(Arc::new),
                context,
                confirmation,
                policies: reference.policies.clone(),
                observed: Observed::default(),
            };
            state
                .index
                .entry(entry.procedure_id.clone())
                .or_default()
                .push(number);
            if *entry.capability_id != *entry.procedure_id {
                state
                    .index
                    .entry(entry.capability_id.to_string())
                    .or_default()
                    .push(number);
            }
            state.procedures.insert(number, Arc::new(entry));
            let handle = RegistrationHandle {
                inner: Arc::downgrade(&self.inner),
                number,
                registration_id: registration_id(number),
                component: None,
            };
            let change = SurfaceChange {
                surface_version: state.version,
                reason: ChangeReason::Registered {
                    registration_id: registration_id(number),
                },
            };
            (handle, change)
        };
        self.notify(change);
        Ok(handle)
    }

    /// Registers a component instance with its view capabilities. Each
    /// capability's input schema is compiled once here.
    ///
    /// # Errors
    /// A [`RegistrationError`] (empty names, duplicate instance or
    /// capability, a capability colliding with a manifest path, an invalid
    /// schema); nothing is registered and a `component-rejected` audit event
    /// is emitted.
    pub fn register_component(
        &self,
        definition: ComponentDefinition,
    ) -> Result<RegistrationHandle, RegistrationError> {
        let ctype = definition.component_type.clone();
        let reject = |err| self.reject_registration(RegistrationKind::Component, &ctype, err);
        if ctype.is_empty() || definition.instance_id.is_empty() {
            return Err(reject(RegistrationError::InvalidComponent {
                reason: "component type and instance id must be non-empty".into(),
            }));
        }
        let mut views = Vec::with_capacity(definition.capabilities.len());
        for cap in definition.capabilities {
            if cap.name.is_empty() {
                return Err(reject(RegistrationError::InvalidComponent {
                    reason: format!("a view capability of `{ctype}` has an empty name"),
                }));
            }
            if views.iter().any(|v: &ViewEntry| v.name == cap.name) {
                return Err(reject(RegistrationError::DuplicateCapability {
                    component_type: ctype.clone(),
                    name: cap.name.clone(),
                }));
            }
            let capability_id = format!("view:{ctype}.{}", cap.name);
            let qualified = format!("{ctype}.{}", cap.name);
            for candidate in [cap.name.as_str(), qualified.as_str()] {
                if self.inner.authority.procedure(candidate).is_some() {
                    return Err(reject(RegistrationError::ViewCollision {
                        capability_id,
                        path: candidate.to_string(),
                    }));
                }
            }
            let validator = crate::format::validator_for(&cap.input_schema).map_err(|e| {
                reject(RegistrationError::InvalidSchema {
                    name: capability_id.clone(),
                    message: e.to_string(),
                })
            })?;
            views.push(ViewEntry {
                name: cap.name,
                capability_id,
                description: cap.description,
                input_schema: Arc::new(cap.input_schema),
                validator: Arc::new(validator),
                handler: cap.handler,
                when: cap.when,
                unavailable_reason: cap.unavailable_reason,
                observed: Observed::default(),
            });
        }
        let context = ComponentContext {
            component_type: ctype.clone(),
            instance_id: definition.instance_id.clone(),
        };
        let result = {
            let mut state = lock(&self.inner.state);
            if state.components.values().any(|c| c.context == context) {
                Err(RegistrationError::DuplicateComponent {
                    component_type: ctype.clone(),
                    instance_id: definition.instance_id.clone(),
                })
            } else {
                let number = state.next_number;
                state.next_number += 1;
                state.version += 1;
                for view in &views {
                    state
                        .index
                        .entry(view.capability_id.clone())
                        .or_default()
                        .push(number);
                }
                state.components.insert(
                    number,
                    Arc::new(ComponentEntry {
                        registration_id: registration_id(number),
                        context: context.clone(),
                        description: definition.description,
                        views,
                    }),
                );
                Ok((
                    RegistrationHandle {
                        inner: Arc::downgrade(&self.inner),
                        number,
                        registration_id: registration_id(number),
                        component: Some(context),
                    },
                    SurfaceChange {
                        surface_version: state.version,
                        reason: ChangeReason::Registered {
                            registration_id: registration_id(number),
                        },
                    },
                ))
            }
        };
        match result {
            Ok((handle, change)) => {
                self.notify(change);
                Ok(handle)
            }
            Err(err) => Err(reject(err)),
        }
    }

    fn unregister(&self, number: u64, registration_id: &str) {
        let change = {
            let mut state = lock(&self.inner.state);
            let keys: Vec<String> = if let Some(p) = state.procedures.remove(&number) {
                vec![p.procedure_id.clone(), p.capability_id.to_string()]
            } else if let Some(c) = state.components.remove(&number) {
                c.views.iter().map(|v| v.capability_id.clone()).collect()
            } else {
                return;
            };
            for key in keys {
                if let Some(numbers) = state.index.get_mut(&key) {
                    numbers.retain(|n| *n != number);
                    if numbers.is_empty() {
                        state.index.remove(&key);
                    }
                }
            }
            state.version += 1;
            SurfaceChange {
                surface_version: state.version,
                reason: ChangeReason::Unregistered {
                    registration_id: registration_id.to_string(),
                },
            }
        };
        self.notify(change);
    }

    // ----- availability ----------------------------------------------------

    /// Bumps `surfaceVersion` unconditionally and notifies subscribers (use
    /// when something the snapshot shows changed outside `when()`, e.g. a
    /// `describe()` text). Returns the new version.
    pub fn notify_changed(&self) -> u64 {
        let change = {
            let mut state = lock(&self.inner.state);
            state.version += 1;
            SurfaceChange {
                surface_version: state.version,
                reason: ChangeReason::Notified,
            }
        };
        let version = change.surface_version;
        self.notify(change);
        version
    }

    /// Re-evaluates every `when()` and bumps `surfaceVersion` once when any
    /// result differs from the last observation (snapshot or previous
    /// refresh). Call it when UI state that `when()` reads changes. Returns
    /// whether the version was bumped.
    pub fn refresh_availability(&self) -> bool {
        let (procs, comps) = self.live_entries();
        let mut changed = false;
        for p in &procs {
            changed |= p.observed.record(p.when.as_ref().is_none_or(|w| w()));
        }
        for c in &comps {
            for v in &c.views {
                changed |= v.observed.record(v.when.as_ref().is_none_or(|w| w()));
            }
        }
        changed && self.bump_availability().is_some()
    }

    fn live_entries(&self) -> (Vec<Arc<ProcEntry>>, Vec<Arc<ComponentEntry>>) {
        let state = lock(&self.inner.state);
        (
            state.procedures.values().cloned().collect(),
            state.components.values().cloned().collect(),
        )
    }

    /// Bumps the version for an observed availability change and notifies.
    fn bump_availability(&self) -> Option<u64> {
        let change = {
            let mut state = lock(&self.inner.state);
            state.version += 1;
            SurfaceChange {
                surface_version: state.version,
                reason: ChangeReason::Availability,
            }
        };
        let version = change.surface_version;
        self.notify(change);
        Some(version)
    }

    // ----- snapshot --------------------------------------------------------

    /// The catalog `consumer` sees (SPEC §6): every live reference and, for
    /// non-headless consumers, every component with its view capabilities.
    /// Availability is evaluated now; if it differs from the last
    /// observation the version is bumped first, so `surfaceVersion` always
    /// names the availability reported. Bound values are never included.
    pub fn snapshot(&self, consumer: &AgentConsumer) -> SurfaceSnapshot {
        let with_views = consumer.kind != ConsumerKind::Headless;
        let mut attempts = 0;
        // Observations are recorded as they are made, so a change seen in a
        // discarded attempt must still bump the version.
        let mut changed = false;
        loop {
            attempts += 1;
            let (version, procs, comps) = {
                let state = lock(&self.inner.state);
                (
                    state.version,
                    state.procedures.values().cloned().collect::<Vec<_>>(),
                    state.components.values().cloned().collect::<Vec<_>>(),
                )
            };
            let procedures: Vec<AgentProcedureDescriptor> = procs
                .iter()
                .map(|p| {
                    let available = p.when.as_ref().is_none_or(|w| w());
                    changed |= p.observed.record(available);
                    AgentProcedureDescriptor {
                        procedure_id: p.procedure_id.clone(),
                        capability_id: (*p.capability_id != *p.procedure_id)
                            .then(|| p.capability_id.to_string()),
                        description: p.description(),
                        input_schema: p.agent_schema.clone(),
                        output_schema: p.output_schema.clone(),
                        effect: p.tool.effect,
                        confirmation: p.confirmation,
                        available,
                        unavailable_reason: (!available)
                            .then(|| p.unavailable_reason.as_ref().map(Reason::text))
                            .flatten(),
                        bound_fields: p.bound_descriptors.clone(),
                        registration_id: p.registration_id.clone(),
                        context: p.context.clone(),
                        meta: p.meta.clone(),
                    }
                })
                .collect();
            let mut components = Vec::new();
            for c in &comps {
                let mut capabilities = Vec::with_capacity(c.views.len());
                for v in &c.views {
                    let available = v.when.as_ref().is_none_or(|w| w());
                    changed |= v.observed.record(available);
                    if with_views {
                        capabilities.push(ViewCapabilityDescriptor {
                            capability_id: v.capability_id.clone(),
                            name: v.name.clone(),
                            description: v.description.clone(),
                            input_schema: v.input_schema.clone(),
                            available,
                            unavailable_reason: (!available)
                                .then(|| v.unavailable_reason.as_ref().map(Reason::text))
                                .flatten(),
                        });
                    }
                }
                if with_views {
                    components.push(ComponentDescriptor {
                        component_type: c.context.component_type.clone(),
                        instance_id: c.context.instance_id.clone(),
                        registration_id: c.registration_id.clone(),
                        description: c.description.clone(),
                        capabilities,
                    });
                }
            }
            // Consistent cut: the registration set must not have changed
            // while closures ran; otherwise take the snapshot again.
            if self.surface_version() != version && attempts < 8 {
                continue;
            }
            let surface_version = if changed {
                self.bump_availability().unwrap_or(version)
            } else {
                version
            };
            return SurfaceSnapshot {
                surface_version,
                components,
                procedures,
            };
        }
    }

    // ----- confirmations ---------------------------------------------------

    /// The application approves a pending confirmation and receives the
    /// signed evidence to hand back to the agent. Never expose this as a
    /// model tool.
    ///
    /// # Errors
    /// [`ConfirmationError`] when the id is unknown (never issued, rejected,
    /// used), expired, or already approved.
    pub fn confirm(
        &self,
        confirmation_id: &str,
    ) -> Result<ConfirmationEvidence, ConfirmationError> {
        let now = self.now_ms();
        let ttl = u64::try_from(self.inner.config.confirmation_ttl.as_millis()).unwrap_or(u64::MAX);
        let evidence = lock(&self.inner.state).confirmations.approve(
            confirmation_id,
            now,
            ttl,
            &self.inner.signer,
        )?;
        self.audit(|| AuditEvent::ConfirmationApproved {
            confirmation_id: evidence.confirmation_id.clone(),
            capability_id: evidence.capability_id.clone(),
            registration_id: evidence.registration_id.clone(),
        });
        Ok(evidence)
    }

    /// The application rejects a pending (or approved, unused)
    /// confirmation; evidence for it no longer applies.
    ///
    /// # Errors
    /// [`ConfirmationError::Unknown`] / [`ConfirmationError::Expired`].
    pub fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationError> {
        let now = self.now_ms();
        let pending = lock(&self.inner.state)
            .confirmations
            .reject(confirmation_id, now)?;
        self.audit(|| AuditEvent::ConfirmationRejected {
            confirmation_id: pending.confirmation_id.clone(),
            capability_id: pending.capability_id.clone(),
            registration_id: pending.registration_id.clone(),
        });
        Ok(())
    }

    /// The summary the application shows for a confirmation (effective
    /// input included), while it is pending or approved-but-unused and not
    /// expired.
    pub fn pending_confirmation(&self, confirmation_id: &str) -> Option<PendingConfirmation> {
        let now = self.now_ms();
        lock(&self.inner.state)
            .confirmations
            .get(confirmation_id, now)
    }

    /// Every live confirmation, oldest first.
    pub fn pending_confirmations(&self) -> Vec<PendingConfirmation> {
        let now = self.now_ms();
        lock(&self.inner.state).confirmations.list(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d7_reduction_removes_locked_fields_from_properties_and_required() {
        let full = json!({"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": true},
            "required": ["a", "b", "c"], "$defs": {"x": {}}});
        assert_eq!(
            agent_input_schema(&full, &["a"], &[]),
            json!({"type": "object",
                "properties": {"b": {"type": "integer"}, "c": true},
                "required": ["b", "c"], "$defs": {"x": {}}})
        );
        // Overridable: stays, leaves `required`, annotated.
        assert_eq!(
            agent_input_schema(&full, &["a"], &["b", "c"]),
            json!({"type": "object",
                "properties": {"b": {"type": "integer", "description": OVERRIDABLE_NOTE},
                               "c": {"description": OVERRIDABLE_NOTE}},
                "$defs": {"x": {}}})
        );
        // All locked.
        assert_eq!(
            agent_input_schema(&full, &["a", "b", "c"], &[]),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
        // Nothing bound: unchanged.
        assert_eq!(agent_input_schema(&full, &[], &[]), full);
        // Not an object schema: unchanged.
        assert_eq!(agent_input_schema(&json!(true), &["a"], &[]), json!(true));
    }

    #[test]
    fn registration_ids_round_trip() {
        assert_eq!(parse_registration_id(&registration_id(17)), Some(17));
        assert_eq!(parse_registration_id("x17"), None);
        assert_eq!(parse_registration_id("r"), None);
        assert_eq!(parse_registration_id("r0"), Some(0));
        for alias in [
            "r017", "r+17", "r00017", "r 17", "r17 ", "r-0", "R17", "r١٧",
        ] {
            assert_eq!(parse_registration_id(alias), None, "{alias}");
        }
        assert_eq!(parse_registration_id("r99999999999999999999999"), None);
    }

    #[test]
    fn description_joins_manifest_and_describe() {
        let describe: Arc<TextFn> = Arc::new(|| "two".to_string());
        let empty: Arc<TextFn> = Arc::new(String::new);
        assert_eq!(join_description("one", Some(&*describe)), "one\n\ntwo");
        assert_eq!(join_description("", Some(&*describe)), "two");
        assert_eq!(join_description("one", Some(&*empty)), "one");
        assert_eq!(join_description("one", None), "one");
    }
}
