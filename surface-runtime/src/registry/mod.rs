//! The surface registry: the live component instances and procedure
//! bindings of one page, and the surface version that names them
//! (`docs/design.md` maps the modules around it).
//!
//! The registry owns the registrations and their bookkeeping; the layers
//! above it use a narrow internal API — `admit` and `Live` (admission and
//! lookup under one lock), `record`, `entries`,
//! `bump_availability`, `audit` — never its fields:
//!
//! * [`crate::snapshot`] builds the agent's catalog from the entries;
//! * [`crate::pipeline`] runs `invoke`, phase by phase;
//! * [`crate::confirmation`] issues, approves and consumes confirmations.
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

mod builder;
mod entry;
mod observe;
mod register;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
#[cfg(feature = "dynamic")]
use serde_json::Value;

use crate::admission::{InvocationIds, Refusal};
use crate::audit::AuditEvent;
use crate::authority::Authority;
use crate::budget::SnapshotOptions;
use crate::cancellation::Cancellation;
use crate::clock::Timer;
use crate::concurrency::ConcurrencyGroups;
use crate::confirmation::{ConfirmationError, Confirmations, PendingConfirmation};
use crate::executor::AgentProcedureExecutor;
use crate::hash::{FastHash, Fingerprint, IdDigest};
use crate::invocation::AgentInvocationResult;
use crate::policy::{AgentPolicy, Principal};
use crate::registration::{parse_registration_id, Unregister};
use crate::sync::{lock, MaybeSend, MaybeSync};

pub use crate::registration::RegistrationHandle;
pub use builder::SurfaceRegistryBuilder;
pub(crate) use entry::{
    ComponentEntry, Observed, ProcedureEntry, Registered, SchemaCheck, ViewEntry,
};
pub use observe::{Observation, ObservedItem};

/// Default lifetime of a pending confirmation, and of an approval from the
/// moment it is given.
pub const DEFAULT_CONFIRMATION_TTL: Duration = Duration::from_secs(300);

/// Default registry timeout when a [`Timer`] is installed but no timeout
/// was set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default number of completed invocation results kept for replay.
pub const DEFAULT_RECORDED_RESULTS: usize = 1_000;

/// Default bound of the invocation ids a registry remembers for its
/// lifetime (32 bytes each, ≈ 4.3 MB at the bound with the hash table).
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
/// `component-rejected` audit event is emitted. Each message names what
/// was wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// The binding's procedure is not in the registry's authority, or its
    /// manifest entry differs (built from another manifest).
    #[error("procedure `{path}` is not in the registry's authority, or its manifest entry differs; build the reference from the same manifest as the registry (a frontend can narrow exposure, never widen it)")]
    OutsideAuthority {
        /// The path.
        path: String,
    },
    /// The binding type is for another procedure.
    #[error("the binding of `{path}` uses a type declared for procedure `{binding}`; bind it with the type `#[agent_procedure]` declared for `{path}`")]
    BindingMismatch {
        /// The bound path.
        path: String,
        /// `BoundInput::PROCEDURE`.
        binding: String,
    },
    /// A bound field is not a top-level property of the input schema.
    #[error("procedure `{path}` has no top-level input property `{field}` to bind; only top-level properties of its input schema bind")]
    UnknownBoundField {
        /// The path.
        path: String,
        /// The field.
        field: String,
    },
    /// `overridable` names a field the binding does not bind.
    #[error("`{field}` is declared overridable but the binding of `{path}` does not bind it; bind it or remove it from `overridable`")]
    OverridableNotBound {
        /// The path.
        path: String,
        /// The field.
        field: String,
    },
    /// `context` names a handle that is not a live component.
    #[error("the context registration `{registration_id}` is not a live component; pass the handle `register_component` returned, while it is alive")]
    ContextNotLive {
        /// The handle's registration id.
        registration_id: String,
    },
    /// A schema has no generated validator and this build has no runtime
    /// schema compiler (the `dynamic` feature is off): a procedure of an
    /// authority not generated by `manifest!` (or generated with
    /// `validation = runtime`), or a view capability with a runtime schema
    /// (`ViewCapability::with_schema`).
    #[error("the input schema of `{name}` has no validator generated by `manifest!` or `view_inputs!`, and this build cannot compile schemas at run time; register references of the authority `manifest!` generates and view capabilities of `view_inputs!` types (`ViewCapability::new`), or enable the `dynamic` feature of agent-surface")]
    NoValidator {
        /// Procedure path or view capability id.
        name: String,
    },
    /// A JSON Schema does not compile.
    #[error("the input schema of `{name}` is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// Procedure path or view capability id.
        name: String,
        /// The compiler's message.
        message: String,
    },
    /// A view capability named like a manifest path.
    #[error("view capability `{capability_id}` collides with manifest procedure `{path}`; rename the view capability (a procedure is referenced, never re-declared)")]
    ViewCollision {
        /// The view capability id.
        capability_id: String,
        /// The manifest path.
        path: String,
    },
    /// The same component type and instance id is already live.
    #[error("component `{component_type}` instance `{instance_id}` is already registered; drop its handle first or use another instance id")]
    DuplicateComponent {
        /// Type.
        component_type: String,
        /// Instance id.
        instance_id: String,
    },
    /// Two capabilities of one component share a name.
    #[error("component `{component_type}` declares view capability `{name}` twice; give each capability its own name")]
    DuplicateCapability {
        /// Type.
        component_type: String,
        /// Name.
        name: String,
    },
    /// The component type is empty.
    #[error("a component type is empty (instance `{instance_id}`); name the type, for example `devices.table`")]
    EmptyComponentType {
        /// The instance id.
        instance_id: String,
    },
    /// The instance id is empty.
    #[error("component `{component_type}` has an empty instance id; give each instance a non-empty id, for example `main`")]
    EmptyInstanceId {
        /// The component type.
        component_type: String,
    },
    /// A view capability has an empty name.
    #[error("a view capability of component `{component_type}` has an empty name; name it, for example `select`")]
    EmptyCapabilityName {
        /// The component type.
        component_type: String,
    },
}

/// Why a registry could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryBuildError {
    /// No secret was given and the platform's random source failed.
    #[error("no random source for the confirmation secret ({cause}); pass a secret with `SurfaceRegistryBuilder::secret`")]
    NoRandomSource {
        /// The platform's description of the failure.
        cause: String,
    },
}

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
    /// [`SurfaceRegistry::set_principal`] changed who the user is (what
    /// policies hide at discovery may differ).
    Principal,
}

/// The registrations and their bookkeeping; private to the registry.
struct State {
    version: u64,
    next_number: u64,
    procedures: BTreeMap<u64, Arc<ProcedureEntry>>,
    components: BTreeMap<u64, Arc<ComponentEntry>>,
    /// Live registration numbers by capability id (`procedureId`, the
    /// canonical capability id when it differs, and view capability ids).
    index: HashMap<String, Vec<u64>, FastHash>,
    /// Every admitted invocation id ([`crate::admission`]).
    invocations: InvocationIds,
    /// The executor of procedure calls (read with admission, under the
    /// same lock).
    executor: Option<Arc<dyn AgentProcedureExecutor>>,
    /// A cancellation signal a finished call left unshared, handed to the
    /// next admitted call (one allocation less per call).
    spare_signal: Option<Cancellation>,
    /// The signed-in user the policies see.
    principal: Option<Arc<Principal>>,
    /// Where the closures of later registrations are evaluated
    /// ([`SurfaceRegistry::set_evaluation_scope`]).
    evaluation_scope: Option<Arc<crate::callback::ScopeFn>>,
}

/// What the pipeline reads of the registry's configuration.
pub(crate) struct Settings {
    /// The execution timeout (only with a timer).
    pub(crate) timeout: Option<Duration>,
    pub(crate) timer: Option<Arc<dyn Timer>>,
    /// Registry-wide policies, applied before the binding's own.
    pub(crate) policies: Vec<Arc<dyn AgentPolicy>>,
    /// The environment the policies see.
    pub(crate) environment: Option<String>,
    /// The options of [`SurfaceRegistry::snapshot`].
    pub(crate) snapshot: SnapshotOptions,
}

#[derive(Default)]
struct Listeners {
    next: u64,
    changes: Vec<(u64, Arc<ChangeFn>)>,
    audit: Vec<(u64, Arc<AuditFn>)>,
}

struct Inner {
    authority: Authority,
    settings: Settings,
    state: Mutex<State>,
    confirmations: Confirmations,
    /// The snapshot's `surfaceId`: unguessable, fixed for the registry's
    /// lifetime.
    surface_id: String,
    /// Envelope fingerprints, seeded per registry.
    fingerprint: Fingerprint,
    /// The concurrency groups of calls in flight.
    groups: ConcurrencyGroups,
    /// Whether any policy (registry-wide or of a binding ever registered)
    /// takes part in discovery: calls skip the discovery pre-check while
    /// none does.
    discovery_policies: std::sync::atomic::AtomicBool,
    /// Number of audit listeners (lets `audit` skip the lock when zero).
    audit_listeners: AtomicUsize,
    listeners: Mutex<Listeners>,
    /// Compiled input schemas of manifest procedures, by digest.
    #[cfg(feature = "dynamic")]
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Unregister for Inner {
    fn unregister(&self, number: u64, registration_id: &str) {
        let Some(change) = lock(&self.state).remove(number, registration_id) else {
            return;
        };
        notify(self, change);
    }
}

/// The registry of live bindings and components. Cheap to clone: clones
/// share one registry. Create it with the compiler-generated authority
/// (`manifest!`'s `authority()`), or [`Authority::from_manifest`].
#[derive(Clone)]
pub struct SurfaceRegistry {
    inner: Arc<Inner>,
}

impl fmt::Debug for SurfaceRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SurfaceRegistry")
            .field("surface_version", &self.surface_version())
            .finish_non_exhaustive()
    }
}

/// A listener registration; dropping it unsubscribes.
#[must_use = "dropping the subscription unsubscribes immediately"]
pub struct Subscription {
    inner: std::sync::Weak<Inner>,
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
            inner.audit_listeners.store(l.audit.len(), Ordering::SeqCst);
        }
    }
}

impl State {
    /// The next registration number; bumps the version.
    fn take_number(&mut self) -> u64 {
        let number = self.next_number;
        self.next_number += 1;
        self.version += 1;
        number
    }

    fn index(&mut self, key: String, number: u64) {
        self.index.entry(key).or_default().push(number);
    }

    fn change(&self, reason: ChangeReason) -> SurfaceChange {
        SurfaceChange {
            surface_version: self.version,
            reason,
        }
    }

    /// Removes registration `number`; the change, or `None` when it was
    /// already gone.
    fn remove(&mut self, number: u64, registration_id: &str) -> Option<SurfaceChange> {
        let keys: Vec<String> = if let Some(p) = self.procedures.remove(&number) {
            vec![p.procedure_id.clone(), p.capability_id.to_string()]
        } else if let Some(c) = self.components.remove(&number) {
            c.views.iter().map(|v| v.capability_id.clone()).collect()
        } else {
            return None;
        };
        for key in keys {
            if let Some(numbers) = self.index.get_mut(&key) {
                numbers.retain(|n| *n != number);
                if numbers.is_empty() {
                    self.index.remove(&key);
                }
            }
        }
        self.version += 1;
        Some(self.change(ChangeReason::Unregistered {
            registration_id: registration_id.to_string(),
        }))
    }
}

/// A consistent read of the live registrations, taken under the registry
/// lock (see [`SurfaceRegistry::admit`]).
pub(crate) struct Live<'a> {
    state: &'a State,
}

/// What a registration id names for one capability id.
pub(crate) enum Lookup {
    /// A live registration serving the capability.
    Serving(Registered),
    /// A registration that was issued and is gone.
    Gone,
    /// Never issued, malformed, or a live registration of another
    /// capability.
    Unknown,
}

impl Live<'_> {
    /// The installed procedure executor.
    pub(crate) fn executor(&self) -> Option<Arc<dyn AgentProcedureExecutor>> {
        self.state.executor.clone()
    }

    /// The surface version now.
    pub(crate) fn surface_version(&self) -> u64 {
        self.state.version
    }

    /// Registration `number` as a server of `capability_id`, if it is one.
    fn serving_as(&self, capability_id: &str, number: u64) -> Option<Registered> {
        if capability_id.starts_with("view:") {
            let component = self.state.components.get(&number)?;
            let index = component
                .views
                .iter()
                .position(|v| v.capability_id == capability_id)?;
            Some(Registered::View(component.clone(), index))
        } else {
            let procedure = self.state.procedures.get(&number)?;
            Some(Registered::Procedure(procedure.clone()))
        }
    }

    fn numbers(&self, capability_id: &str) -> &[u64] {
        self.state
            .index
            .get(capability_id)
            .map_or(&[], Vec::as_slice)
    }

    /// Every live registration serving `capability_id`, oldest first.
    pub(crate) fn serving<'s>(
        &'s self,
        capability_id: &'s str,
    ) -> impl Iterator<Item = Registered> + 's {
        self.numbers(capability_id)
            .iter()
            .filter_map(move |n| self.serving_as(capability_id, *n))
    }

    /// What `registration_id` names for `capability_id`.
    pub(crate) fn lookup(&self, capability_id: &str, registration_id: &str) -> Lookup {
        let Some(number) = parse_registration_id(registration_id) else {
            return Lookup::Unknown;
        };
        if self.numbers(capability_id).contains(&number) {
            if let Some(registered) = self.serving_as(capability_id, number) {
                return Lookup::Serving(registered);
            }
        }
        let issued = number < self.state.next_number;
        let live = self.state.procedures.contains_key(&number)
            || self.state.components.contains_key(&number);
        if issued && !live {
            Lookup::Gone
        } else {
            Lookup::Unknown
        }
    }
}

/// The live entries at one surface version.
pub(crate) struct Entries {
    pub(crate) surface_version: u64,
    /// The principal at that version.
    pub(crate) principal: Option<Arc<Principal>>,
    pub(crate) procedures: Vec<Arc<ProcedureEntry>>,
    pub(crate) components: Vec<Arc<ComponentEntry>>,
}

fn notify(inner: &Inner, change: SurfaceChange) {
    let listeners: Vec<Arc<ChangeFn>> = {
        let l = lock(&inner.listeners);
        l.changes.iter().map(|(_, f)| f.clone()).collect()
    };
    for listener in listeners {
        listener(&change);
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
        SurfaceRegistryBuilder::new(authority)
    }

    /// The authority the registry was created with.
    pub fn authority(&self) -> &Authority {
        &self.inner.authority
    }

    /// The registry's surface id (the snapshot's `surfaceId`): fixed for
    /// its lifetime, derived from its secret (`surf_` and 24 hex digits).
    pub fn surface_id(&self) -> &str {
        &self.inner.surface_id
    }

    /// The clock confirmations expire by
    /// ([`SurfaceRegistryBuilder::clock`]).
    pub(crate) fn clock(&self) -> std::sync::Arc<dyn crate::clock::Clock> {
        self.inner.confirmations.clock()
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
        lock(&self.inner.state).executor = Some(executor);
    }

    /// Sets the scope the registry evaluates the `when()`, unavailable
    /// reason and `describe()` closures of *later* registrations in (at
    /// snapshot, at invocation and in [`SurfaceRegistry::observe`]):
    /// `scope` receives one evaluation and must run it exactly once. A UI
    /// framework adapter uses it to read its reactive state untracked when
    /// no reactive effect is running (`docs/frameworks.md`, "How the hooks
    /// track": Leptos debug builds would otherwise log "outside a reactive
    /// tracking context" for every snapshot). Replaces any previous scope;
    /// registrations made before keep theirs.
    pub fn set_evaluation_scope<F>(&self, scope: F)
    where
        F: Fn(&mut dyn FnMut()) + MaybeSend + MaybeSync + 'static,
    {
        lock(&self.inner.state).evaluation_scope = Some(Arc::new(scope));
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
        self.subscription(id)
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
            .store(l.audit.len(), Ordering::SeqCst);
        self.subscription(id)
    }

    fn subscription(&self, id: u64) -> Subscription {
        Subscription {
            inner: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// Bumps `surfaceVersion` unconditionally and notifies subscribers (use
    /// when something the snapshot shows changed outside `when()`, e.g. a
    /// `describe()` text). Returns the new version.
    pub fn notify_changed(&self) -> u64 {
        self.bump(ChangeReason::Notified)
    }

    /// Tells the registry who the signed-in user is (`None`: nobody), for
    /// the policies ([`PolicyContext::principal`]; the built-ins
    /// [`crate::policy::authenticated`], [`crate::policy::has_permission`]
    /// and [`crate::policy::tenant_boundary`] read it). When it differs from
    /// the last one, `surfaceVersion` is bumped (reason `principal`) so
    /// agents re-read what they may see; when it names another user (or
    /// signs in or out) every live confirmation is declined as the user
    /// would decline it (`confirmation-rejected` audit events; a retry
    /// naming one is `CONFIRMATION_INVALID` `denied`). Returns whether the
    /// version was bumped.
    /// Advisory, like every client policy: the server re-checks each call.
    ///
    /// [`PolicyContext::principal`]: crate::policy::PolicyContext::principal
    pub fn set_principal(&self, principal: Option<Principal>) -> bool {
        let (change, other_user) = {
            let mut state = lock(&self.inner.state);
            if state.principal.as_deref() == principal.as_ref() {
                return false;
            }
            let user = |p: Option<&Principal>| p.map(|p| p.user_id.clone());
            let other_user = user(state.principal.as_deref()) != user(principal.as_ref());
            state.principal = principal.map(Arc::new);
            state.version += 1;
            (state.change(ChangeReason::Principal), other_user)
        };
        if other_user {
            // What the previous user was asked (or approved) is not the new
            // user's to decide or to use: every live confirmation is
            // declined.
            for pending in self.inner.confirmations.list() {
                let _ = self.reject(&pending.confirmation_id);
            }
        }
        notify(&self.inner, change);
        true
    }

    /// The principal set by [`Self::set_principal`] (or the builder).
    pub fn principal(&self) -> Option<Arc<Principal>> {
        lock(&self.inner.state).principal.clone()
    }

    /// The environment the policies see
    /// ([`SurfaceRegistryBuilder::environment`]).
    pub fn environment(&self) -> Option<&str> {
        self.inner.settings.environment.as_deref()
    }

    // ----- confirmations ---------------------------------------------------

    /// The application approves a pending confirmation: the agent's retry
    /// with a fresh invocation id and this `confirmationId` may now run,
    /// once, within the confirmation TTL. Returns the approved
    /// confirmation. Never expose this as a model tool.
    ///
    /// # Errors
    /// [`ConfirmationError`] when the id is unknown (never issued, rejected,
    /// used), expired, or already approved.
    pub fn confirm(&self, confirmation_id: &str) -> Result<PendingConfirmation, ConfirmationError> {
        let approved = self.inner.confirmations.approve(confirmation_id)?;
        self.audit(|| AuditEvent::ConfirmationApproved {
            confirmation_id: approved.confirmation_id.clone(),
            capability_id: approved.capability_id.clone(),
            registration_id: approved.registration_id.clone(),
        });
        Ok(approved)
    }

    /// The application rejects a pending (or approved, unused)
    /// confirmation: the user declined. A retry naming it answers
    /// `CONFIRMATION_INVALID` `denied`, retry `no`.
    ///
    /// # Errors
    /// [`ConfirmationError::Unknown`] / [`ConfirmationError::Expired`].
    pub fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationError> {
        let pending = self.inner.confirmations.reject(confirmation_id)?;
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
        self.inner.confirmations.get(confirmation_id)
    }

    /// Every live confirmation, oldest first.
    pub fn pending_confirmations(&self) -> Vec<PendingConfirmation> {
        self.inner.confirmations.list()
    }

    // ----- the internal API of the layers above ------------------------------

    /// Admission of `invocation_id` (with envelope `fingerprint`) and a
    /// consistent `read` of the live registrations, under one lock: the
    /// id's digest and what `read` returned, or why the id was refused
    /// (then `read` did not run).
    pub(crate) fn admit<R>(
        &self,
        invocation_id: &str,
        fingerprint: u64,
        read: impl FnOnce(&Live<'_>) -> R,
    ) -> Result<(IdDigest, R, Cancellation), Refusal> {
        let mut state = lock(&self.inner.state);
        let key = state.invocations.admit(invocation_id, fingerprint)?;
        let read = read(&Live { state: &state });
        let signal = state.spare_signal.take();
        drop(state);
        Ok((key, read, signal.unwrap_or_default()))
    }

    /// Records the result of admitted invocation `key`.
    pub(crate) fn record(&self, key: IdDigest, result: &AgentInvocationResult) {
        lock(&self.inner.state).invocations.complete(key, result);
    }

    /// Records the result of admitted invocation `key` that `make` builds
    /// from the surface version now, and returns it: one lock round trip
    /// for both. The call's cancellation `signal` is kept for the next
    /// call when nothing else holds it. `make` must not call back into the
    /// registry.
    pub(crate) fn record_with(
        &self,
        key: IdDigest,
        signal: Cancellation,
        make: impl FnOnce(u64) -> AgentInvocationResult,
    ) -> AgentInvocationResult {
        let spare = signal.reclaim();
        let mut state = lock(&self.inner.state);
        let result = make(state.version);
        state.invocations.complete(key, &result);
        if spare.is_some() {
            state.spare_signal = spare;
        }
        result
    }

    /// The live procedure binding or component of registration `number`
    /// issued by this registry (`registration`), cloned out of the lock.
    fn entry_of(
        &self,
        registration: &RegistrationHandle,
    ) -> (Option<Arc<ProcedureEntry>>, Option<Arc<ComponentEntry>>) {
        if !registration.issued_by(Arc::as_ptr(&self.inner)) {
            return (None, None);
        }
        let number = registration.number();
        let state = lock(&self.inner.state);
        (
            state.procedures.get(&number).cloned(),
            state.components.get(&number).cloned(),
        )
    }

    /// The live registrations serving `capability_id` (oldest first) and
    /// the principal, in one read of the registry.
    pub(crate) fn serving_now(
        &self,
        capability_id: &str,
    ) -> (Vec<Registered>, Option<Arc<Principal>>) {
        let state = lock(&self.inner.state);
        let serving = Live { state: &state }.serving(capability_id).collect();
        (serving, state.principal.clone())
    }

    /// The live entries and their surface version.
    pub(crate) fn entries(&self) -> Entries {
        let state = lock(&self.inner.state);
        Entries {
            surface_version: state.version,
            principal: state.principal.clone(),
            procedures: state.procedures.values().cloned().collect(),
            components: state.components.values().cloned().collect(),
        }
    }

    /// Bumps the version for an observed availability change and notifies;
    /// the new version.
    pub(crate) fn bump_availability(&self) -> u64 {
        self.bump(ChangeReason::Availability)
    }

    fn bump(&self, reason: ChangeReason) -> u64 {
        let change = {
            let mut state = lock(&self.inner.state);
            state.version += 1;
            state.change(reason)
        };
        let version = change.surface_version;
        notify(&self.inner, change);
        version
    }

    /// Whether any policy takes part in discovery.
    pub(crate) fn has_discovery_policies(&self) -> bool {
        self.inner.discovery_policies.load(Ordering::Relaxed)
    }

    /// Notes that a registered binding has a policy that takes part in
    /// discovery.
    pub(crate) fn note_discovery_policies(&self, policies: &[Arc<dyn AgentPolicy>]) {
        if policies
            .iter()
            .any(|p| p.discovery() != crate::policy::Discovery::NotChecked)
        {
            self.inner.discovery_policies.store(true, Ordering::Relaxed);
        }
    }

    /// The concurrency groups of calls in flight.
    pub(crate) fn concurrency(&self) -> &ConcurrencyGroups {
        &self.inner.groups
    }

    /// The registry's configuration.
    pub(crate) fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The registry's confirmations.
    pub(crate) fn confirmations(&self) -> &Confirmations {
        &self.inner.confirmations
    }

    /// This registry's envelope fingerprints.
    pub(crate) fn fingerprint(&self) -> &Fingerprint {
        &self.inner.fingerprint
    }

    /// Emits an audit event built by `make`, only when someone listens.
    pub(crate) fn audit(&self, make: impl FnOnce() -> AuditEvent) {
        let any = self.inner.audit_listeners.load(Ordering::SeqCst) > 0;
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
        notify(&self.inner, change);
    }
}

/// Helpers of the registration rules in [`register`]: only the registry's
/// own submodules see them.
impl SurfaceRegistry {
    #[cfg(feature = "dynamic")]
    fn compiled_validator(
        &self,
        key: String,
        schema: &Value,
    ) -> Result<Arc<jsonschema::Validator>, jsonschema::ValidationError<'static>> {
        if let Some(v) = lock(&self.inner.validators).get(&key) {
            return Ok(v.clone());
        }
        let compiled = Arc::new(crate::format::validator_for(schema)?);
        lock(&self.inner.validators).insert(key, compiled.clone());
        Ok(compiled)
    }
}
