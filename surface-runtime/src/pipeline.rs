//! The invocation pipeline (SPEC §7): `SurfaceRegistry::invoke`.
//!
//! Phases, in order; the first failure ends the call:
//!
//! | phase | failure | `retry` |
//! |---|---|---|
//! | admission: invocation id breaks the id rule ([`check_invocation_id`]: 1–256 visible ASCII characters) | `INVALID_INPUT` (`details.reason: "invalid-invocation-id"`; nothing recorded) | `with-changes` |
//! | admission: invocation id already seen | replay of the recorded result, or `PRECONDITION_FAILED` (`details.reason`: `invocation-in-flight`, `invocation-id-reused`, `duplicate-invocation`) | `no` |
//! | admission: a new id while `max_invocation_ids` are remembered | `PRECONDITION_FAILED` (`details.reason: "invocation-ids-exhausted"`) | `no` |
//! | 1 resolve | `UNKNOWN_CAPABILITY` (no live registration, registration of another capability, view capability for a headless consumer); `STALE_CAPABILITY` (registration id issued but gone); `AMBIGUOUS_INSTANCE` (>1 live, no `registrationId`; `details.instances`) | `after-refresh`, `after-refresh`, `with-changes` |
//! | 2 staleness | `STALE_CAPABILITY` (destructive / external-side-effect and `surfaceVersion` ≠ current, or absent with `details.reason: "surface-version-required"`; `details.currentSurfaceVersion`) | `after-refresh` |
//! | 3 availability | `UNAVAILABLE` (`when()` false; `details.unavailableReason`) | `after-refresh` |
//! | 4 authorize | `NOT_AUTHORIZED` (pre-input policy) | `no` |
//! | 5 effective input | `INVALID_INPUT` (not an object; `details.lockedFields`; `details.errors` with `instancePath`, at most [`MAX_REPORTED_VALIDATION_ERRORS`], `details.errorsTruncated: true` when more); `PRECONDITION_FAILED` `binding-failed` | `with-changes`, `no` |
//! | 6 policies + confirmation | `POLICY_DENIED`; `CONFIRMATION_REQUIRED` (`details.confirmationId`, `details.summary`, `details.expiresAtMs`); `CONFIRMATION_INVALID` (`details.reason`) | `no`, `after-confirmation`, `yes` |
//! | 7 execute | executor / handler errors (sanitized), `TIMEOUT`, `CANCELLED`, `EXECUTION_FAILED` when no executor | per error; `TIMEOUT`: `yes` for queries and view capabilities, else `no` |
//!
//! **Invocation ids.** An id must follow the one invocation-id rule
//! ([`check_invocation_id`]); the registry remembers every invocation id it
//! has admitted for its whole lifetime (as a keyed 128-bit digest, see
//! `crate::admission`) and never runs one twice. A repeat with
//! the identical envelope (same invocation and consumer) returns the
//! recorded result (the last `SurfaceRegistryBuilder::recorded_results`
//! results are kept; older ones answer `PRECONDITION_FAILED`
//! `duplicate-invocation`); a repeat while the first is running answers
//! `invocation-in-flight`; a repeat with a different envelope answers
//! `invocation-id-reused`. Every outcome is recorded, including
//! `CONFIRMATION_REQUIRED`: the confirmed retry must use a fresh id. Each
//! remembered id costs 40 bytes whatever its length, and at most
//! `SurfaceRegistryBuilder::max_invocation_ids` (default 100,000) are
//! remembered: beyond that new ids are refused (`invocation-ids-exhausted`),
//! never forgotten.
//!
//! **Evidence on calls that need none** (level `never`, or `optional` not
//! enforced) is ignored: it is neither checked nor consumed, and the
//! executor's `ProcedureCallInfo::confirmation` is `None`.

use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use jsonschema::paths::LocationSegment;
use serde_json::{json, Map, Value};

use crate::admission::{IdDigest, Refusal};
use crate::audit::{AuditEvent, Phase};
use crate::cancellation::Cancellation;
use crate::component::HandlerFn;
use crate::confirmation::{
    input_digest, ConfirmationLevel, ConfirmationState, PendingConfirmation,
};
use crate::executor::{ConfirmationInfo, ExecuteRequest, ExecutionError, ProcedureCallInfo};
use crate::invocation::{
    check_invocation_id, AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult,
    ConsumerKind, ErrorCode, InvalidInvocationId, Retry,
};
use crate::manifest::AgentEffect;
use crate::policy::{AgentPolicy, PolicyContext, PolicyDecision};
use crate::registry::{lock, parse_registration_id, ComponentEntry, ProcEntry, SurfaceRegistry};
use crate::snapshot::ComponentContext;
use crate::sync::BoxFuture;

/// The resolved registration of a call.
enum Target {
    Procedure(Arc<ProcEntry>),
    View(Arc<ComponentEntry>, usize),
}

impl Target {
    fn registration_id(&self) -> &str {
        match self {
            Target::Procedure(p) => &p.registration_id,
            Target::View(c, _) => &c.registration_id,
        }
    }
    fn capability_id(&self) -> &str {
        match self {
            Target::Procedure(p) => &p.capability_id,
            Target::View(c, i) => &c.views[*i].capability_id,
        }
    }
    fn effect(&self) -> Option<AgentEffect> {
        match self {
            Target::Procedure(p) => Some(p.tool.effect),
            Target::View(..) => None,
        }
    }
    fn context(&self) -> Option<&ComponentContext> {
        match self {
            Target::Procedure(p) => p.context.as_ref(),
            Target::View(c, _) => Some(&c.context),
        }
    }
    fn available(&self) -> Result<(), Option<String>> {
        let (when, reason) = match self {
            Target::Procedure(p) => (&p.when, &p.unavailable_reason),
            Target::View(c, i) => (&c.views[*i].when, &c.views[*i].unavailable_reason),
        };
        if when.as_ref().is_none_or(|w| w()) {
            Ok(())
        } else {
            Err(reason.as_ref().map(|r| r.text()))
        }
    }
    fn policies(&self) -> &[Arc<dyn AgentPolicy>] {
        match self {
            Target::Procedure(p) => &p.policies,
            Target::View(..) => &[],
        }
    }
    fn static_level(&self) -> ConfirmationLevel {
        match self {
            Target::Procedure(p) => p.confirmation,
            Target::View(..) => ConfirmationLevel::Never,
        }
    }
    fn description(&self) -> String {
        match self {
            Target::Procedure(p) => p.description(),
            Target::View(c, i) => c.views[*i].description.clone(),
        }
    }
    fn instance_summary(&self) -> Value {
        let mut v = json!({ "registrationId": self.registration_id() });
        if let Some(ctx) = self.context() {
            v["context"] = json!(ctx);
        }
        v
    }
}

/// One early-phase failure: the agent error plus audit data.
struct Failure {
    phase: Phase,
    error: AgentError,
    internal: Option<Value>,
}

fn fail(phase: Phase, code: ErrorCode, message: impl Into<String>, retry: Retry) -> Failure {
    Failure {
        phase,
        error: AgentError::new(code, message, retry),
        internal: None,
    }
}

impl Failure {
    fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.error.details.insert(key.to_string(), value.into());
        self
    }
    fn internal(mut self, value: impl Into<Value>) -> Self {
        self.internal = Some(value.into());
        self
    }
}

const EXECUTOR_CODES: [ErrorCode; 7] = [
    ErrorCode::NotAuthorized,
    ErrorCode::DomainApprovalRequired,
    ErrorCode::DomainOutcomeUnknown,
    ErrorCode::ExecutionFailed,
    ErrorCode::Timeout,
    ErrorCode::Cancelled,
    ErrorCode::PreconditionFailed,
];

enum Raced {
    Done(Result<Value, ExecutionError>),
    Timeout,
    Cancelled,
}

/// What the synchronous part of `invoke` ends with.
enum Start {
    /// A repeat of a known invocation id: answered, not recorded again.
    Answered(AgentInvocationResult),
    /// Ended in phases 1–6; recorded under the id's digest.
    Finished(IdDigest, AgentInvocationResult),
    /// Passed phases 1–6; execution follows.
    Ready(Ready),
}

/// A call that passed phases 1–6.
struct Ready {
    /// The admitted invocation id's digest.
    key: IdDigest,
    invocation_id: String,
    target: Target,
    input: Value,
    confirmation: Option<ConfirmationInfo>,
}

/// Phase 2 (SPEC §7): a destructive or external-side-effect procedure
/// acted on from an older `surfaceVersion` is stale — and so is such a call
/// that names no `surfaceVersion` at all (`details.reason:
/// "surface-version-required"`): the registry cannot tell which surface the
/// agent saw, so it never asks for confirmation on its behalf.
#[allow(clippy::result_large_err)]
fn check_staleness(
    state: &crate::registry::State,
    inv: &AgentInvocation,
    target: Target,
) -> Result<Target, (Failure, Option<String>)> {
    let Target::Procedure(p) = &target else {
        return Ok(target);
    };
    if !p.tool.effect.requires_current_surface() {
        return Ok(target);
    }
    let failure = match inv.surface_version {
        Some(v) if v == state.version => return Ok(target),
        Some(_) => fail(
            Phase::Staleness,
            ErrorCode::StaleCapability,
            "The surface changed since this capability was listed; take a fresh snapshot.",
            Retry::AfterRefresh,
        ),
        None => fail(
            Phase::Staleness,
            ErrorCode::StaleCapability,
            "This capability has a destructive or external effect: send the surfaceVersion of the snapshot it was listed in.",
            Retry::AfterRefresh,
        )
        .detail("reason", "surface-version-required"),
    };
    Err((
        failure.detail("currentSurfaceVersion", state.version),
        Some(p.registration_id.clone()),
    ))
}

impl SurfaceRegistry {
    /// Runs one invocation through the pipeline (SPEC §7; phases and codes
    /// in the [module docs](crate::pipeline)). Never panics on bad input;
    /// never runs one invocation id twice. Lazy like any future: nothing
    /// runs (and `bind()` is not called) until it is polled.
    pub fn invoke<'a>(
        &'a self,
        invocation: AgentInvocation,
        consumer: &'a AgentConsumer,
    ) -> impl Future<Output = AgentInvocationResult> + 'a {
        self.invoke_inner(invocation, consumer, None)
    }

    /// [`Self::invoke`] with a caller cancellation signal: cancelling it
    /// before or during execution ends the call with `CANCELLED` and fires
    /// the executor's `ProcedureCallInfo::cancellation`.
    pub fn invoke_with_cancellation<'a>(
        &'a self,
        invocation: AgentInvocation,
        consumer: &'a AgentConsumer,
        cancellation: &'a Cancellation,
    ) -> impl Future<Output = AgentInvocationResult> + 'a {
        self.invoke_inner(invocation, consumer, Some(cancellation))
    }

    async fn invoke_inner(
        &self,
        invocation: AgentInvocation,
        consumer: &AgentConsumer,
        cancellation: Option<&Cancellation>,
    ) -> AgentInvocationResult {
        // Everything up to execution is synchronous, so the future carries
        // only what execution needs.
        match self.start(invocation, consumer) {
            Start::Answered(result) => result,
            Start::Finished(key, result) => {
                self.record(key, &result);
                result
            }
            Start::Ready(ready) => {
                let key = ready.key;
                let result = self.execute(ready, consumer, cancellation).await;
                self.record(key, &result);
                result
            }
        }
    }

    /// Admission and phases 1–6.
    fn start(&self, mut inv: AgentInvocation, consumer: &AgentConsumer) -> Start {
        if let Err(problem) = check_invocation_id(&inv.invocation_id) {
            return Start::Answered(self.refuse_invalid_id(inv, problem));
        }
        let fingerprint = self.fingerprint(&inv, consumer);
        // Admission and phases 1–2 under one lock: a consistent view of the
        // surface, and one lock round trip.
        let (key, resolved) = {
            let mut state = lock(&self.inner.state);
            let key = match state.invocations.admit(&inv.invocation_id, fingerprint) {
                Ok(key) => key,
                Err(Refusal::Replay(result)) => return Start::Answered(result),
                Err(Refusal::Reason(reason)) => {
                    drop(state);
                    return Start::Answered(self.refuse(inv, reason));
                }
            };
            let resolved = self
                .resolve(&state, &inv, consumer)
                .map_err(|f| (f, None))
                .and_then(|target| check_staleness(&state, &inv, target));
            (key, resolved)
        };
        self.audit(|| AuditEvent::InvocationStarted {
            invocation_id: inv.invocation_id.clone(),
            capability_id: inv.capability_id.clone(),
            registration_id: inv.registration_id.clone(),
            consumer: consumer.clone(),
        });
        let input = std::mem::take(&mut inv.input);
        let prepared =
            resolved.and_then(
                |target| match self.prepare(&inv, &target, input, consumer) {
                    Ok((input, confirmation)) => Ok((target, input, confirmation)),
                    Err(failure) => Err((failure, Some(target.registration_id().to_string()))),
                },
            );
        match prepared {
            Ok((target, input, confirmation)) => Start::Ready(Ready {
                key,
                invocation_id: inv.invocation_id,
                target,
                input,
                confirmation,
            }),
            Err((failure, registration_id)) => {
                if failure.error.code != ErrorCode::ConfirmationRequired {
                    let Failure {
                        phase, internal, ..
                    } = &failure;
                    self.audit(|| AuditEvent::InvocationRejected {
                        invocation_id: inv.invocation_id.clone(),
                        capability_id: inv.capability_id.clone(),
                        registration_id,
                        phase: *phase,
                        code: failure.error.code,
                        internal: internal.clone(),
                    });
                }
                Start::Finished(
                    key,
                    AgentInvocationResult::Error {
                        invocation_id: inv.invocation_id,
                        error: failure.error,
                    },
                )
            }
        }
    }

    /// A keyed 64-bit hash of the whole envelope (invocation and consumer),
    /// compared when an invocation id repeats.
    fn fingerprint(&self, inv: &AgentInvocation, consumer: &AgentConsumer) -> u64 {
        let mut h = FoldHasher(self.inner.fingerprint_seed);
        inv.invocation_id.hash(&mut h);
        inv.capability_id.hash(&mut h);
        inv.registration_id.hash(&mut h);
        inv.surface_version.hash(&mut h);
        inv.input.hash(&mut h);
        inv.instance.hash(&mut h);
        inv.confirmation
            .as_ref()
            .map(|c| {
                (
                    &c.confirmation_id,
                    &c.capability_id,
                    &c.registration_id,
                    &c.input_digest,
                    c.approved_at_ms,
                    c.expires_at_ms,
                    &c.signature,
                )
            })
            .hash(&mut h);
        consumer.hash(&mut h);
        h.finish()
    }

    /// The `INVALID_INPUT` answer to an invocation id that breaks the
    /// invocation-id rule; nothing is recorded. The audit event carries an
    /// escaped prefix of the id, never raw control characters.
    fn refuse_invalid_id(
        &self,
        inv: AgentInvocation,
        problem: InvalidInvocationId,
    ) -> AgentInvocationResult {
        let error = AgentError::new(
            ErrorCode::InvalidInput,
            "The invocationId must be 1 to 256 visible ASCII characters (0x21-0x7E, no spaces or control characters); send a fresh id such as a UUID.",
            Retry::WithChanges,
        )
        .with_detail("reason", "invalid-invocation-id");
        self.audit(|| AuditEvent::InvocationRejected {
            invocation_id: escaped_prefix(&inv.invocation_id),
            capability_id: escaped_prefix(&inv.capability_id),
            registration_id: None,
            phase: Phase::Admission,
            code: ErrorCode::InvalidInput,
            internal: Some(json!({"invocationId": problem.to_string()})),
        });
        AgentInvocationResult::Error {
            invocation_id: inv.invocation_id,
            error,
        }
    }

    /// The `PRECONDITION_FAILED` answer to a refused repeat of an id (or a
    /// new id once the registry's id table is full).
    fn refuse(&self, inv: AgentInvocation, reason: &'static str) -> AgentInvocationResult {
        let message = match reason {
            "invocation-in-flight" => "This invocation id is already running; wait for its result.",
            "invocation-id-reused" => {
                "This invocation id was already used for a different call; use a fresh invocation id."
            }
            "invocation-ids-exhausted" => {
                "This application session has reached its limit of invocations; the application must start a new session."
            }
            _ => "This invocation id was already used; use a fresh invocation id.",
        };
        let error = AgentError::new(ErrorCode::PreconditionFailed, message, Retry::No)
            .with_detail("reason", reason);
        self.audit(|| AuditEvent::InvocationRejected {
            invocation_id: inv.invocation_id.clone(),
            capability_id: inv.capability_id.clone(),
            registration_id: None,
            phase: Phase::Admission,
            code: ErrorCode::PreconditionFailed,
            internal: None,
        });
        AgentInvocationResult::Error {
            invocation_id: inv.invocation_id,
            error,
        }
    }

    fn record(&self, key: IdDigest, result: &AgentInvocationResult) {
        let keep = self.inner.config.recorded_results;
        lock(&self.inner.state)
            .invocations
            .complete(key, result, keep);
    }

    /// Phases 3–6 for a resolved target: `Ok((effective input,
    /// confirmation))` or the failure.
    fn prepare(
        &self,
        inv: &AgentInvocation,
        target: &Target,
        agent_input: Value,
        consumer: &AgentConsumer,
    ) -> Result<(Value, Option<ConfirmationInfo>), Failure> {
        // Phase 3: availability.
        if let Err(reason) = target.available() {
            let mut f = fail(
                Phase::Availability,
                ErrorCode::Unavailable,
                reason
                    .clone()
                    .unwrap_or_else(|| "This capability is not available right now.".into()),
                Retry::AfterRefresh,
            );
            if let Some(reason) = reason {
                f = f.detail("unavailableReason", reason);
            }
            return Err(f);
        }

        // Phase 4: pre-input policies.
        let (path, effect) = match target {
            Target::Procedure(p) => (Some(&*p.path), Some(p.tool.effect)),
            Target::View(..) => (None, None),
        };
        let ctx = PolicyContext {
            invocation_id: &inv.invocation_id,
            capability_id: target.capability_id(),
            path,
            registration_id: target.registration_id(),
            effect,
            consumer,
            context: target.context(),
        };
        let policies = || {
            self.inner
                .config
                .policies
                .iter()
                .chain(target.policies().iter())
        };
        let mut level = target.static_level();
        for p in policies() {
            level = level.max(p.confirmation());
            match p.authorize(&ctx) {
                PolicyDecision::Allow => {}
                PolicyDecision::RequireConfirmation => level = ConfirmationLevel::Required,
                PolicyDecision::Deny { message, internal } => {
                    let mut f = fail(
                        Phase::Authorize,
                        ErrorCode::NotAuthorized,
                        message,
                        Retry::No,
                    );
                    f = f.internal(json!({"policy": p.name(), "internal": internal}));
                    return Err(f);
                }
            }
        }

        // Phase 5: effective input.
        let input = self.effective_input(target, agent_input)?;

        // Phase 6: post-input policies, then confirmation.
        for p in policies() {
            match p.check_input(&ctx, &input) {
                PolicyDecision::Allow => {}
                PolicyDecision::RequireConfirmation => level = ConfirmationLevel::Required,
                PolicyDecision::Deny { message, internal } => {
                    let f = fail(
                        Phase::Confirmation,
                        ErrorCode::PolicyDenied,
                        message,
                        Retry::No,
                    )
                    .internal(json!({"policy": p.name(), "internal": internal}));
                    return Err(f);
                }
            }
        }
        let needs = level == ConfirmationLevel::Required
            || (level == ConfirmationLevel::Optional && self.inner.config.confirm_optional);
        if !needs {
            return Ok((input, None));
        }
        let digest = input_digest(&input);
        let now = self.now_ms();
        match &inv.confirmation {
            None => {
                let ttl = u64::try_from(self.inner.config.confirmation_ttl.as_millis())
                    .unwrap_or(u64::MAX);
                let (pending, evicted) = {
                    let mut state = lock(&self.inner.state);
                    let counter = state.confirmations.next_counter();
                    let pending = PendingConfirmation {
                        confirmation_id: self.inner.signer.id("conf", counter),
                        invocation_id: inv.invocation_id.clone(),
                        capability_id: target.capability_id().to_string(),
                        registration_id: target.registration_id().to_string(),
                        effect: target.effect(),
                        description: target.description(),
                        input,
                        input_digest: digest,
                        requested_at_ms: now,
                        expires_at_ms: now.saturating_add(ttl),
                        state: ConfirmationState::Pending,
                    };
                    let evicted = state.confirmations.insert(pending.clone(), now);
                    (pending, evicted)
                };
                if let Some(old) = evicted {
                    self.audit(|| AuditEvent::ConfirmationEvicted {
                        confirmation_id: old.confirmation_id.clone(),
                        capability_id: old.capability_id.clone(),
                        registration_id: old.registration_id.clone(),
                        approved: old.state == ConfirmationState::Approved,
                    });
                }
                self.audit(|| AuditEvent::ConfirmationRequested {
                    invocation_id: inv.invocation_id.clone(),
                    confirmation_id: pending.confirmation_id.clone(),
                    capability_id: pending.capability_id.clone(),
                    registration_id: pending.registration_id.clone(),
                    input_digest: pending.input_digest.clone(),
                });
                let f = fail(
                    Phase::Confirmation,
                    ErrorCode::ConfirmationRequired,
                    "The user must confirm this call. Retry with a fresh invocationId and the confirmation evidence once the application approves it.",
                    Retry::AfterConfirmation,
                )
                .detail("confirmationId", pending.confirmation_id.clone())
                .detail("summary", pending.summary())
                .detail("expiresAtMs", pending.expires_at_ms);
                Err(f)
            }
            Some(evidence) => {
                let consumed = lock(&self.inner.state).confirmations.consume(
                    evidence,
                    target.capability_id(),
                    target.registration_id(),
                    &digest,
                    now,
                    &self.inner.signer,
                );
                match consumed {
                    Ok(()) => Ok((
                        input,
                        Some(ConfirmationInfo {
                            id: evidence.confirmation_id.clone(),
                            approved_at_ms: evidence.approved_at_ms,
                        }),
                    )),
                    Err(problem) => {
                        let f = fail(
                            Phase::Confirmation,
                            ErrorCode::ConfirmationInvalid,
                            "The confirmation evidence does not apply to this call; call again without evidence to request a new confirmation.",
                            Retry::Yes,
                        )
                        .detail("reason", problem.as_str())
                        .internal(json!({"confirmationId": evidence.confirmation_id}));
                        Err(f)
                    }
                }
            }
        }
    }

    /// Phase 1.
    fn resolve(
        &self,
        state: &crate::registry::State,
        inv: &AgentInvocation,
        consumer: &AgentConsumer,
    ) -> Result<Target, Failure> {
        let cap = inv.capability_id.as_str();
        let unknown = || {
            fail(
                Phase::Resolve,
                ErrorCode::UnknownCapability,
                "No capability with this id is available; take a fresh snapshot.",
                Retry::AfterRefresh,
            )
        };
        let wanted = inv.registration_id.as_deref();
        let is_view = cap.starts_with("view:");
        if is_view && consumer.kind == ConsumerKind::Headless {
            return Err(unknown());
        }
        let numbers: &[u64] = state.index.get(cap).map_or(&[], Vec::as_slice);
        let target_of = |n: u64| -> Option<Target> {
            if is_view {
                let c = state.components.get(&n)?;
                let i = c.views.iter().position(|v| v.capability_id == cap)?;
                Some(Target::View(c.clone(), i))
            } else {
                state.procedures.get(&n).cloned().map(Target::Procedure)
            }
        };
        if let Some(wanted) = wanted {
            let number = parse_registration_id(wanted);
            if let Some(t) = number.filter(|n| numbers.contains(n)).and_then(target_of) {
                return Ok(t);
            }
            let issued = number.is_some_and(|n| n < state.next_number);
            let live = number.is_some_and(|n| {
                state.procedures.contains_key(&n) || state.components.contains_key(&n)
            });
            if issued && !live {
                return Err(fail(
                    Phase::Resolve,
                    ErrorCode::StaleCapability,
                    "This registration is no longer live; take a fresh snapshot.",
                    Retry::AfterRefresh,
                ));
            }
            return Err(unknown());
        }
        if numbers.len() == 1 && inv.instance.is_none() {
            return target_of(numbers[0]).ok_or_else(unknown);
        }
        let mut candidates: Vec<Target> = numbers.iter().filter_map(|n| target_of(*n)).collect();
        if let Some(instance) = inv.instance.as_deref() {
            candidates.retain(|t| t.context().is_some_and(|c| c.instance_id == instance));
        }
        match candidates.len() {
            0 => Err(unknown()),
            1 => Ok(candidates.remove(0)),
            _ => {
                let instances: Vec<Value> =
                    candidates.iter().map(Target::instance_summary).collect();
                Err(fail(
                    Phase::Resolve,
                    ErrorCode::AmbiguousInstance,
                    "Several live references match; call again with the registrationId of the intended one.",
                    Retry::WithChanges,
                )
                .detail("instances", instances))
            }
        }
    }

    /// Phase 5 (SPEC §5): locked fields rejected before merge, `bind()` on
    /// live state, merge (agent wins for overridable fields), one
    /// validation of the effective input against the full schema.
    fn effective_input(&self, target: &Target, agent: Value) -> Result<Value, Failure> {
        let mut agent = match agent {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => {
                return Err(fail(
                    Phase::Input,
                    ErrorCode::InvalidInput,
                    "The input must be a JSON object.",
                    Retry::WithChanges,
                )
                .detail(
                    "errors",
                    json!([{"instancePath": "", "keyword": "type", "message": "input must be a JSON object"}]),
                ))
            }
        };
        match target {
            Target::View(c, i) => {
                let value = Value::Object(agent);
                match validation_errors(&c.views[*i].validator, &value, &|_| false) {
                    None => Ok(value),
                    Some(invalid) => Err(invalid.into_failure()),
                }
            }
            Target::Procedure(p) => {
                // One pass: locked fields the agent set (an error), and bound
                // fields the agent overrode (overridable ones).
                let mut sets_locked = false;
                let mut overridden: Vec<usize> = Vec::new();
                for (i, f) in p.bound.iter().enumerate() {
                    if agent.contains_key(&f.name) {
                        if f.locked {
                            sets_locked = true;
                        } else {
                            overridden.push(i);
                        }
                    }
                }
                if sets_locked {
                    let locked: Vec<&str> = p
                        .bound
                        .iter()
                        .filter(|f| f.locked && agent.contains_key(&f.name))
                        .map(|f| f.name.as_str())
                        .collect();
                    return Err(fail(
                        Phase::Input,
                        ErrorCode::InvalidInput,
                        "The input sets fields the application binds from the UI; omit them.",
                        Retry::WithChanges,
                    )
                    .detail("lockedFields", locked));
                }
                if let Some(bind) = &p.bind {
                    let bound = bind()
                        .map_err(|err| binding_failed().internal(json!({"bindError": err})))?;
                    for (key, value) in bound {
                        if !p.bound.iter().any(|f| f.name == key) {
                            return Err(
                                binding_failed().internal(json!({"undeclaredBoundField": key}))
                            );
                        }
                        // The agent's value wins for overridable fields.
                        agent.entry(key).or_insert(value);
                    }
                }
                let effective = Value::Object(agent);
                // Attribute each error: to the binding when it concerns a
                // bound field whose value came from bind() (not overridden
                // by the agent), else to the agent.
                let from_binding = |field: &str| {
                    p.bound
                        .iter()
                        .enumerate()
                        .any(|(i, f)| f.name == field && !overridden.contains(&i))
                };
                match validation_errors(&p.validator, &effective, &from_binding) {
                    None => Ok(effective),
                    Some(invalid) if invalid.binding_fault => Err(binding_failed().internal(
                        json!({"errors": invalid.errors, "errorsTruncated": invalid.truncated}),
                    )),
                    Some(invalid) => Err(invalid.into_failure()),
                }
            }
        }
    }

    /// Phase 7 and 8.
    async fn execute(
        &self,
        ready: Ready,
        consumer: &AgentConsumer,
        caller: Option<&Cancellation>,
    ) -> AgentInvocationResult {
        let Ready {
            key: _,
            invocation_id,
            target,
            input,
            confirmation,
        } = ready;
        let exec_cancel = Cancellation::new();
        // Fires the executor's signal when this future is dropped mid-call
        // (a browser session aborting a call at disconnect drops it).
        let abandoned = CancelOnDrop(Some(exec_cancel.clone()));
        let confirmation_id = confirmation.as_ref().map(|c| c.id.clone());
        let timeout = match (&self.inner.config.timer, self.inner.config.timeout) {
            (Some(timer), Some(t)) => Some(timer.sleep(t)),
            _ => None,
        };
        let executor = match &target {
            Target::Procedure(_) => lock(&self.inner.executor).clone(),
            Target::View(..) => None,
        };
        let raced = match (&target, &executor) {
            (Target::Procedure(_), None) => Raced::Done(Err(ExecutionError::new(
                ErrorCode::ExecutionFailed,
                "The application cannot run procedures right now.",
                Retry::No,
            )
            .with_internal("no procedure executor installed"))),
            (Target::Procedure(p), Some(executor)) => {
                let request = ExecuteRequest {
                    path: p.path.clone(),
                    capability_id: p.capability_id.clone(),
                    contract_digest: p.contract_digest.clone(),
                    input,
                    info: ProcedureCallInfo {
                        invocation_id: Arc::from(invocation_id.as_str()),
                        consumer: consumer.clone(),
                        cancellation: exec_cancel.clone(),
                        confirmation,
                    },
                };
                race(executor.execute(request), timeout, caller).await
            }
            (Target::View(c, i), _) => {
                let handler: Arc<HandlerFn> = c.views[*i].handler.clone();
                race(handler(input), timeout, caller).await
            }
        };
        abandoned.disarm();
        let is_view = matches!(target, Target::View(..));
        let outcome: Result<Value, ExecutionError> = match raced {
            Raced::Done(Ok(v)) => Ok(v),
            Raced::Done(Err(e)) => {
                let allowed = EXECUTOR_CODES.contains(&e.code)
                    || (is_view && e.code == ErrorCode::InvalidInput);
                if allowed {
                    Err(e)
                } else {
                    let internal =
                        json!({"code": e.code, "message": e.message, "internal": e.internal});
                    Err(ExecutionError::new(
                        ErrorCode::ExecutionFailed,
                        "The call failed.",
                        Retry::No,
                    )
                    .with_internal(internal))
                }
            }
            Raced::Timeout => {
                exec_cancel.cancel();
                let retry = match target.effect() {
                    None | Some(AgentEffect::ServerQuery) => Retry::Yes,
                    Some(_) => Retry::No,
                };
                let ms = self
                    .inner
                    .config
                    .timeout
                    .map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
                Err(ExecutionError::new(
                    ErrorCode::Timeout,
                    "The call timed out; it may still have taken effect.",
                    retry,
                )
                .with_detail("timeoutMs", ms))
            }
            Raced::Cancelled => {
                exec_cancel.cancel();
                Err(ExecutionError::new(
                    ErrorCode::Cancelled,
                    "The call was cancelled; it may still have taken effect.",
                    Retry::No,
                ))
            }
        };
        match outcome {
            Ok(output) => {
                self.audit(|| AuditEvent::Executed {
                    invocation_id: invocation_id.clone(),
                    capability_id: target.capability_id().to_string(),
                    registration_id: target.registration_id().to_string(),
                    confirmation_id,
                });
                AgentInvocationResult::Success {
                    invocation_id,
                    output,
                }
            }
            Err(err) => {
                self.audit(|| AuditEvent::ExecutionFailed {
                    invocation_id: invocation_id.clone(),
                    capability_id: target.capability_id().to_string(),
                    registration_id: target.registration_id().to_string(),
                    code: err.code,
                    internal: err.internal.clone(),
                });
                AgentInvocationResult::Error {
                    invocation_id,
                    error: err.to_agent_error(),
                }
            }
        }
    }
}

/// At most 64 characters of agent-supplied `text`, with control and
/// non-ASCII characters escaped, and the full length when it was cut: safe
/// for any log line.
fn escaped_prefix(text: &str) -> String {
    const KEEP: usize = 64;
    let mut out: String = text
        .chars()
        .take(KEEP)
        .flat_map(char::escape_default)
        .collect();
    let total = text.chars().count();
    if total > KEEP {
        out.push_str(&format!("… ({total} characters)"));
    }
    out
}

fn binding_failed() -> Failure {
    fail(
        Phase::Input,
        ErrorCode::PreconditionFailed,
        "The application could not bind this call's inputs from the current view.",
        Retry::No,
    )
    .detail("reason", "binding-failed")
}

fn invalid_input(errors: Vec<Value>) -> Failure {
    fail(
        Phase::Input,
        ErrorCode::InvalidInput,
        "The input does not match the input schema.",
        Retry::WithChanges,
    )
    .detail("errors", errors)
}

/// The most validation errors one `INVALID_INPUT` lists in
/// `details.errors` (the first ones the validator reports); when there are
/// more, `details.errorsTruncated` is `true`. Without the cap a 262,144-
/// character array of wrong-typed items would turn into an error list a
/// hundred times its size, recorded for replay.
pub const MAX_REPORTED_VALIDATION_ERRORS: usize = 32;

/// Why an input failed its schema: the first
/// [`MAX_REPORTED_VALIDATION_ERRORS`] errors as
/// `{"instancePath","keyword","message"}`, whether more were left out, and
/// whether any error (listed or not) concerns a top-level field for which
/// `from_binding` is true.
struct Invalid {
    errors: Vec<Value>,
    truncated: bool,
    binding_fault: bool,
}

impl Invalid {
    fn into_failure(self) -> Failure {
        let truncated = self.truncated;
        let failure = invalid_input(self.errors);
        if truncated {
            failure.detail("errorsTruncated", true)
        } else {
            failure
        }
    }
}

/// Validates `instance`; `None` when valid. Messages are masked: they never
/// echo instance values. Memory stays bounded by the cap whatever the
/// number of errors (they are visited once, lazily).
fn validation_errors(
    validator: &jsonschema::Validator,
    instance: &Value,
    from_binding: &dyn Fn(&str) -> bool,
) -> Option<Invalid> {
    if validator.is_valid(instance) {
        return None;
    }
    let mut invalid = Invalid {
        errors: Vec::new(),
        truncated: false,
        binding_fault: false,
    };
    for e in validator.iter_errors(instance) {
        if !invalid.binding_fault {
            let field = match e.instance_path().iter().next() {
                Some(LocationSegment::Property(p)) => Some(p.to_string()),
                _ => match e.kind() {
                    jsonschema::error::ValidationErrorKind::Required { property } => {
                        property.as_str().map(str::to_string)
                    }
                    _ => None,
                },
            };
            invalid.binding_fault = field.as_deref().is_some_and(from_binding);
        }
        if invalid.errors.len() < MAX_REPORTED_VALIDATION_ERRORS {
            invalid.errors.push(json!({
                "instancePath": e.instance_path().as_str(),
                "keyword": e.kind().keyword(),
                "message": e.masked().to_string(),
            }));
        } else {
            invalid.truncated = true;
            if invalid.binding_fault {
                break;
            }
        }
    }
    Some(invalid)
}

/// A fast multiply-rotate hasher (FxHash-style) seeded per registry, for
/// envelope fingerprints. It is not collision-resistant against an
/// adversary; a collision could only make a *reused* invocation id replay
/// its own earlier result instead of answering `invocation-id-reused` — it
/// can never make an id execute twice.
struct FoldHasher(u64);

impl Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        // Final avalanche (splitmix64).
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

/// Races the execution against the timeout and the caller's cancellation,
/// with no async runtime.
async fn race(
    mut work: BoxFuture<'_, Result<Value, ExecutionError>>,
    mut timeout: Option<BoxFuture<'static, ()>>,
    caller: Option<&Cancellation>,
) -> Raced {
    if caller.is_some_and(Cancellation::is_cancelled) {
        return Raced::Cancelled;
    }
    if timeout.is_none() && caller.is_none() {
        return Raced::Done(work.await);
    }
    let mut cancelled = caller.map(Cancellation::cancelled);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(result) = work.as_mut().poll(cx) {
            return Poll::Ready(Raced::Done(result));
        }
        if let Some(t) = timeout.as_mut() {
            if t.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Raced::Timeout);
            }
        }
        if let Some(c) = cancelled.as_mut() {
            if Pin::new(c).poll(cx).is_ready() {
                return Poll::Ready(Raced::Cancelled);
            }
        }
        Poll::Pending
    })
    .await
}

/// Cancels the executor's signal if the call's future is dropped before
/// the executor finished; [`CancelOnDrop::disarm`] once it did.
struct CancelOnDrop(Option<Cancellation>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancellation) = self.0.take() {
            cancellation.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_errors_name_the_field_and_never_echo_values() {
        let validator = jsonschema::validator_for(&json!({
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 3}, "id": {}},
            "required": ["id"],
            "additionalProperties": false
        }))
        .unwrap();
        let instance = json!({"name": "secret-value", "zz": 1});
        let invalid = validation_errors(&validator, &instance, &|_| false).unwrap();
        let mut keywords: Vec<&str> = invalid
            .errors
            .iter()
            .map(|e| e["keyword"].as_str().unwrap())
            .collect();
        keywords.sort_unstable();
        assert_eq!(keywords, ["additionalProperties", "maxLength", "required"]);
        assert!(!invalid.truncated && !invalid.binding_fault);
        let name_error = invalid
            .errors
            .iter()
            .find(|e| e["keyword"] == "maxLength")
            .unwrap();
        assert_eq!(name_error["instancePath"], json!("/name"));
        assert!(!Value::Array(invalid.errors)
            .to_string()
            .contains("secret-value"));
        // Errors are attributed to their top-level field (`required` to the
        // missing property).
        for field in ["name", "id"] {
            let blamed = validation_errors(&validator, &instance, &|f| f == field).unwrap();
            assert!(blamed.binding_fault, "{field}");
        }
        assert!(validation_errors(&validator, &json!({"id": 1}), &|_| true).is_none());
    }

    #[test]
    fn validation_errors_list_at_most_the_cap_and_say_so() {
        let validator = jsonschema::validator_for(&json!({
            "type": "object",
            "properties": {"ids": {"type": "array", "items": {"type": "string"}}, "bound": {"type": "string"}}
        }))
        .unwrap();
        let many = json!({"ids": vec![1; 10_000], "bound": 7});
        let invalid = validation_errors(&validator, &many, &|_| false).unwrap();
        assert_eq!(invalid.errors.len(), MAX_REPORTED_VALIDATION_ERRORS);
        assert!(invalid.truncated);
        assert!(!invalid.binding_fault);
        // An error beyond the cap still counts for attribution.
        let invalid = validation_errors(&validator, &many, &|f| f == "bound").unwrap();
        assert!(invalid.binding_fault);
        let exactly = json!({"ids": vec![1; MAX_REPORTED_VALIDATION_ERRORS]});
        let invalid = validation_errors(&validator, &exactly, &|_| false).unwrap();
        assert_eq!(invalid.errors.len(), MAX_REPORTED_VALIDATION_ERRORS);
        assert!(!invalid.truncated);
    }

    #[test]
    fn fold_hasher_distinguishes_inputs_and_seeds() {
        let hash = |seed: u64, v: &Value| {
            let mut h = FoldHasher(seed);
            v.hash(&mut h);
            h.finish()
        };
        let a = json!({"ids": ["a", "b"]});
        let b = json!({"ids": ["b", "a"]});
        assert_ne!(hash(1, &a), hash(1, &b));
        assert_ne!(hash(1, &a), hash(2, &a));
        assert_eq!(hash(1, &a), hash(1, &a.clone()));
    }
}
