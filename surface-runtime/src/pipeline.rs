//! The invocation pipeline (SPEC §7): `SurfaceRegistry::invoke`.
//!
//! Phases, in order; the first failure ends the call:
//!
//! | phase | failure | `retry` |
//! |---|---|---|
//! | admission: invocation id already seen | replay of the recorded result, or `PRECONDITION_FAILED` (`details.reason`: `invocation-in-flight`, `invocation-id-reused`, `duplicate-invocation`) | `no` |
//! | 1 resolve | `UNKNOWN_CAPABILITY` (no live registration, registration of another capability, view capability for a headless consumer); `STALE_CAPABILITY` (registration id issued but gone); `AMBIGUOUS_INSTANCE` (>1 live, no `registrationId`; `details.instances`) | `after-refresh`, `after-refresh`, `with-changes` |
//! | 2 staleness | `STALE_CAPABILITY` (destructive / external-side-effect and `surfaceVersion` ≠ current; `details.currentSurfaceVersion`) | `after-refresh` |
//! | 3 availability | `UNAVAILABLE` (`when()` false; `details.unavailableReason`) | `after-refresh` |
//! | 4 authorize | `NOT_AUTHORIZED` (pre-input policy) | `no` |
//! | 5 effective input | `INVALID_INPUT` (not an object; `details.lockedFields`; `details.errors` with `instancePath`); `PRECONDITION_FAILED` `binding-failed` | `with-changes`, `no` |
//! | 6 policies + confirmation | `POLICY_DENIED`; `CONFIRMATION_REQUIRED` (`details.confirmationId`, `details.summary`, `details.expiresAtMs`); `CONFIRMATION_INVALID` (`details.reason`) | `no`, `after-confirmation`, `yes` |
//! | 7 execute | executor / handler errors (sanitized), `TIMEOUT`, `CANCELLED`, `EXECUTION_FAILED` when no executor | per error; `TIMEOUT`: `yes` for queries and view capabilities, else `no` |
//!
//! **Invocation ids.** The registry remembers every invocation id it has
//! admitted for its whole lifetime and never runs one twice. A repeat with
//! the identical envelope (same invocation and consumer) returns the
//! recorded result (the last `SurfaceRegistryBuilder::recorded_results`
//! results are kept; older ones answer `PRECONDITION_FAILED`
//! `duplicate-invocation`); a repeat while the first is running answers
//! `invocation-in-flight`; a repeat with a different envelope answers
//! `invocation-id-reused`. Every outcome is recorded, including
//! `CONFIRMATION_REQUIRED`: the confirmed retry must use a fresh id.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use jsonschema::paths::LocationSegment;
use serde_json::{json, Map, Value};

use crate::audit::{AuditEvent, Phase};
use crate::cancellation::Cancellation;
use crate::component::HandlerFn;
use crate::confirmation::{
    input_digest, ConfirmationLevel, ConfirmationState, PendingConfirmation,
};
use crate::executor::{ConfirmationInfo, ExecuteRequest, ExecutionError, ProcedureCallInfo};
use crate::invocation::{
    AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult, ConsumerKind, ErrorCode,
    Retry,
};
use crate::manifest::AgentEffect;
use crate::policy::{AgentPolicy, PolicyContext, PolicyDecision};
use crate::registry::{
    lock, parse_registration_id, ComponentEntry, InvocationRecord, ProcEntry, RecordState,
    SurfaceRegistry,
};
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

impl SurfaceRegistry {
    /// Runs one invocation through the pipeline (SPEC §7; phases and codes
    /// in the [module docs](crate::pipeline)). Never panics on bad input;
    /// never runs one invocation id twice.
    pub async fn invoke(
        &self,
        invocation: AgentInvocation,
        consumer: &AgentConsumer,
    ) -> AgentInvocationResult {
        self.invoke_with_cancellation(invocation, consumer, &Cancellation::new())
            .await
    }

    /// [`Self::invoke`] with a caller cancellation signal: cancelling it
    /// before or during execution ends the call with `CANCELLED` and fires
    /// the executor's `ProcedureCallInfo::cancellation`.
    pub async fn invoke_with_cancellation(
        &self,
        invocation: AgentInvocation,
        consumer: &AgentConsumer,
        cancellation: &Cancellation,
    ) -> AgentInvocationResult {
        let envelope = Arc::new((invocation, consumer.clone()));
        let invocation_id = envelope.0.invocation_id.clone();
        if let Some(result) = self.admit(&envelope) {
            return result;
        }
        let result = self.run(&envelope.0, consumer, cancellation).await;
        self.record(&invocation_id, &result);
        result
    }

    /// Admission: `None` when the id is new (now recorded as in flight),
    /// else the answer for the repeat.
    fn admit(
        &self,
        envelope: &Arc<(AgentInvocation, AgentConsumer)>,
    ) -> Option<AgentInvocationResult> {
        let id = &envelope.0.invocation_id;
        let answer = {
            let mut state = lock(&self.inner.state);
            match state.invocations.get(id) {
                None => {
                    state.invocations.insert(
                        id.clone(),
                        InvocationRecord {
                            envelope: Some(envelope.clone()),
                            state: RecordState::InFlight,
                        },
                    );
                    return None;
                }
                Some(record) => {
                    let same = record
                        .envelope
                        .as_ref()
                        .is_some_and(|e| e.as_ref() == envelope.as_ref());
                    match (&record.state, same) {
                        (RecordState::Done(result), true) => return Some(result.clone()),
                        (RecordState::InFlight, true) => "invocation-in-flight",
                        (RecordState::Evicted, _) => "duplicate-invocation",
                        (_, false) => "invocation-id-reused",
                    }
                }
            }
        };
        let message = match answer {
            "invocation-in-flight" => "This invocation id is already running; wait for its result.",
            "invocation-id-reused" => {
                "This invocation id was already used for a different call; use a fresh invocation id."
            }
            _ => "This invocation id was already used; use a fresh invocation id.",
        };
        let error = AgentError::new(ErrorCode::PreconditionFailed, message, Retry::No)
            .with_detail("reason", answer);
        self.audit(|| AuditEvent::InvocationRejected {
            invocation_id: id.clone(),
            capability_id: envelope.0.capability_id.clone(),
            registration_id: None,
            phase: Phase::Admission,
            code: ErrorCode::PreconditionFailed,
            internal: None,
        });
        Some(AgentInvocationResult::Error {
            invocation_id: id.clone(),
            error,
        })
    }

    fn record(&self, invocation_id: &str, result: &AgentInvocationResult) {
        let mut state = lock(&self.inner.state);
        if let Some(record) = state.invocations.get_mut(invocation_id) {
            record.state = RecordState::Done(result.clone());
        }
        state.completed.push_back(invocation_id.to_string());
        while state.completed.len() > self.inner.config.recorded_results {
            if let Some(old) = state.completed.pop_front() {
                if let Some(record) = state.invocations.get_mut(&old) {
                    record.state = RecordState::Evicted;
                    record.envelope = None;
                }
            }
        }
    }

    async fn run(
        &self,
        inv: &AgentInvocation,
        consumer: &AgentConsumer,
        cancellation: &Cancellation,
    ) -> AgentInvocationResult {
        self.audit(|| AuditEvent::InvocationStarted {
            invocation_id: inv.invocation_id.clone(),
            capability_id: inv.capability_id.clone(),
            registration_id: inv.registration_id.clone(),
            consumer: consumer.clone(),
        });
        let prepared = self.prepare(inv, consumer);
        let (target, input, confirmation) = match prepared {
            Ok(ok) => ok,
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
                return AgentInvocationResult::Error {
                    invocation_id: inv.invocation_id.clone(),
                    error: failure.error,
                };
            }
        };
        self.execute(inv, consumer, cancellation, target, input, confirmation)
            .await
    }

    /// Phases 1–6. On failure returns the failure and the resolved
    /// registration id (when resolution succeeded).
    #[allow(clippy::type_complexity)]
    fn prepare(
        &self,
        inv: &AgentInvocation,
        consumer: &AgentConsumer,
    ) -> Result<(Target, Value, Option<ConfirmationInfo>), (Failure, Option<String>)> {
        // Phases 1 and 2 under one lock: a consistent view of the surface.
        let target = {
            let state = lock(&self.inner.state);
            let target = self.resolve(&state, inv, consumer).map_err(|f| (f, None))?;
            if let Target::Procedure(p) = &target {
                if p.tool.effect.requires_current_surface() {
                    if let Some(v) = inv.surface_version {
                        if v != state.version {
                            return Err((
                                fail(
                                    Phase::Staleness,
                                    ErrorCode::StaleCapability,
                                    "The surface changed since this capability was listed; take a fresh snapshot.",
                                    Retry::AfterRefresh,
                                )
                                .detail("currentSurfaceVersion", state.version),
                                Some(p.registration_id.clone()),
                            ));
                        }
                    }
                }
            }
            target
        };
        let rid = Some(target.registration_id().to_string());
        let with_rid = |f: Failure| (f, rid.clone());

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
            return Err(with_rid(f));
        }

        // Phase 4: pre-input policies.
        let (path, effect) = match &target {
            Target::Procedure(p) => (Some(p.path.as_str()), Some(p.tool.effect)),
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
        let policies: Vec<&Arc<dyn AgentPolicy>> = self
            .inner
            .config
            .policies
            .iter()
            .chain(target.policies().iter())
            .collect();
        let mut level = target.static_level();
        for p in &policies {
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
                    return Err(with_rid(f));
                }
            }
        }

        // Phase 5: effective input.
        let input = self
            .effective_input(&target, &inv.input)
            .map_err(with_rid)?;

        // Phase 6: post-input policies, then confirmation.
        for p in &policies {
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
                    return Err(with_rid(f));
                }
            }
        }
        let needs = level == ConfirmationLevel::Required
            || (level == ConfirmationLevel::Optional && self.inner.config.confirm_optional);
        if !needs {
            return Ok((target, input, None));
        }
        let digest = input_digest(&input);
        let now = self.now_ms();
        match &inv.confirmation {
            None => {
                let ttl = u64::try_from(self.inner.config.confirmation_ttl.as_millis())
                    .unwrap_or(u64::MAX);
                let pending = {
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
                    state.confirmations.insert(pending.clone(), now);
                    pending
                };
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
                Err(with_rid(f))
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
                        target,
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
                        Err(with_rid(f))
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
        let mut candidates: Vec<Target> = Vec::new();
        if cap.starts_with("view:") {
            if consumer.kind == ConsumerKind::Headless {
                return Err(unknown());
            }
            for c in state.components.values() {
                if let Some(i) = c.views.iter().position(|v| v.capability_id == cap) {
                    candidates.push(Target::View(c.clone(), i));
                }
            }
        } else {
            for p in state.procedures.values() {
                if p.procedure_id == cap || p.capability_id == cap {
                    candidates.push(Target::Procedure(p.clone()));
                }
            }
        }
        if let Some(wanted) = wanted {
            if let Some(t) = candidates
                .into_iter()
                .find(|t| t.registration_id() == wanted)
            {
                return Ok(t);
            }
            let issued = parse_registration_id(wanted).is_some_and(|n| n < state.next_number);
            let live = parse_registration_id(wanted).is_some_and(|n| {
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
    fn effective_input(&self, target: &Target, agent: &Value) -> Result<Value, Failure> {
        let agent = match agent {
            Value::Object(map) => map,
            Value::Null => &Map::new(),
            _ => {
                return Err(fail(
                    Phase::Input,
                    ErrorCode::InvalidInput,
                    "The input must be a JSON object.",
                    Retry::WithChanges,
                )
                .detail(
                    "errors",
                    json!([{"instancePath": "", "message": "input must be a JSON object"}]),
                ))
            }
        };
        match target {
            Target::View(c, i) => {
                let value = Value::Object(agent.clone());
                let errors = validation_errors(&c.views[*i].validator, &value);
                if errors.is_empty() {
                    Ok(value)
                } else {
                    Err(invalid_input(errors.into_iter().map(|e| e.1).collect()))
                }
            }
            Target::Procedure(p) => {
                let locked: Vec<&str> = p
                    .bound
                    .iter()
                    .filter(|f| f.locked && agent.contains_key(&f.name))
                    .map(|f| f.name.as_str())
                    .collect();
                if !locked.is_empty() {
                    return Err(fail(
                        Phase::Input,
                        ErrorCode::InvalidInput,
                        "The input sets fields the application binds from the UI; omit them.",
                        Retry::WithChanges,
                    )
                    .detail("lockedFields", locked));
                }
                let mut effective = match &p.bind {
                    None => Map::new(),
                    Some(bind) => match bind() {
                        Ok(map) => map,
                        Err(err) => {
                            return Err(binding_failed().internal(json!({"bindError": err})));
                        }
                    },
                };
                if let Some(extra) = effective
                    .keys()
                    .find(|k| !p.bound.iter().any(|f| &f.name == *k))
                {
                    return Err(binding_failed().internal(json!({"undeclaredBoundField": extra})));
                }
                let bound_keys: Vec<String> = effective.keys().cloned().collect();
                for (k, v) in agent {
                    effective.insert(k.clone(), v.clone());
                }
                let effective = Value::Object(effective);
                let errors = validation_errors(&p.validator, &effective);
                if errors.is_empty() {
                    return Ok(effective);
                }
                // Attribute each error: to the binding when it concerns a
                // field whose value came from bind() (not overridden by the
                // agent), else to the agent.
                let from_binding = |field: &str| {
                    bound_keys.iter().any(|k| k == field) && !agent.contains_key(field)
                        || p.bound.iter().any(|f| f.name == field) && !agent.contains_key(field)
                };
                let binding_fault = errors
                    .iter()
                    .any(|(field, _)| field.as_deref().is_some_and(from_binding));
                if binding_fault {
                    let paths: Vec<Value> = errors.into_iter().map(|e| e.1).collect();
                    Err(binding_failed().internal(json!({"errors": paths})))
                } else {
                    Err(invalid_input(errors.into_iter().map(|e| e.1).collect()))
                }
            }
        }
    }

    /// Phase 7 and 8.
    async fn execute(
        &self,
        inv: &AgentInvocation,
        consumer: &AgentConsumer,
        caller: &Cancellation,
        target: Target,
        input: Value,
        confirmation: Option<ConfirmationInfo>,
    ) -> AgentInvocationResult {
        let exec_cancel = Cancellation::new();
        let confirmation_id = confirmation.as_ref().map(|c| c.id.clone());
        let future: BoxFuture<'_, Result<Value, ExecutionError>> = match &target {
            Target::Procedure(p) => {
                let executor = lock(&self.inner.executor).clone();
                match executor {
                    None => Box::pin(std::future::ready(Err(ExecutionError::new(
                        ErrorCode::ExecutionFailed,
                        "The application cannot run procedures right now.",
                        Retry::No,
                    )
                    .with_internal("no procedure executor installed")))),
                    Some(executor) => {
                        let request = ExecuteRequest {
                            path: p.path.clone(),
                            capability_id: p.capability_id.clone(),
                            contract_digest: p.tool.contract_digest.clone(),
                            input,
                            info: ProcedureCallInfo {
                                invocation_id: inv.invocation_id.clone(),
                                consumer: consumer.clone(),
                                cancellation: exec_cancel.clone(),
                                confirmation,
                            },
                        };
                        Box::pin(async move { executor.execute(request).await })
                    }
                }
            }
            Target::View(c, i) => {
                let handler: Arc<HandlerFn> = c.views[*i].handler.clone();
                handler(input)
            }
        };
        let timeout = match (&self.inner.config.timer, self.inner.config.timeout) {
            (Some(timer), Some(t)) => Some(timer.sleep(t)),
            _ => None,
        };
        let raced = race(future, timeout, caller).await;
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
                    .map_or(0, |t| t.as_millis() as u64);
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
                    invocation_id: inv.invocation_id.clone(),
                    capability_id: target.capability_id().to_string(),
                    registration_id: target.registration_id().to_string(),
                    confirmation_id,
                });
                AgentInvocationResult::Success {
                    invocation_id: inv.invocation_id.clone(),
                    output,
                }
            }
            Err(err) => {
                self.audit(|| AuditEvent::ExecutionFailed {
                    invocation_id: inv.invocation_id.clone(),
                    capability_id: target.capability_id().to_string(),
                    registration_id: target.registration_id().to_string(),
                    code: err.code,
                    internal: err.internal.clone(),
                });
                AgentInvocationResult::Error {
                    invocation_id: inv.invocation_id.clone(),
                    error: err.to_agent_error(),
                }
            }
        }
    }
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

/// Validation errors as (top-level field, `{"instancePath","keyword","message"}`).
/// Messages are masked: they never echo instance values.
fn validation_errors(
    validator: &jsonschema::Validator,
    instance: &Value,
) -> Vec<(Option<String>, Value)> {
    if validator.is_valid(instance) {
        return Vec::new();
    }
    validator
        .iter_errors(instance)
        .map(|e| {
            let field = match e.instance_path().iter().next() {
                Some(LocationSegment::Property(p)) => Some(p.to_string()),
                _ => match e.kind() {
                    jsonschema::error::ValidationErrorKind::Required { property } => {
                        property.as_str().map(str::to_string)
                    }
                    _ => None,
                },
            };
            let detail = json!({
                "instancePath": e.instance_path().as_str(),
                "keyword": e.kind().keyword(),
                "message": e.masked().to_string(),
            });
            (field, detail)
        })
        .collect()
}

/// Races the execution against the timeout and the caller's cancellation,
/// with no async runtime.
async fn race(
    mut work: BoxFuture<'_, Result<Value, ExecutionError>>,
    mut timeout: Option<BoxFuture<'static, ()>>,
    caller: &Cancellation,
) -> Raced {
    if caller.is_cancelled() {
        return Raced::Cancelled;
    }
    let mut cancelled = caller.cancelled();
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(result) = work.as_mut().poll(cx) {
            return Poll::Ready(Raced::Done(result));
        }
        if let Some(t) = timeout.as_mut() {
            if t.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Raced::Timeout);
            }
        }
        if Pin::new(&mut cancelled).poll(cx).is_ready() {
            return Poll::Ready(Raced::Cancelled);
        }
        Poll::Pending
    })
    .await
}
