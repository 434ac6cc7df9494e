//! The invocation pipeline: [`SurfaceRegistry::invoke`]. Every phase, its
//! error codes and `retry` values are in `docs/pipeline.md`; each phase is
//! one function here, in this order, and the first failure ends the call:
//!
//! | phase | function | failure |
//! |---|---|---|
//! | admission | `SurfaceRegistry::admission` | `INVALID_INPUT` (an issue at `["invocationId"]`, nothing recorded); a replay of the recorded result; `INVOCATION_CONFLICT` (`invocation-in-flight`, `id-reused-with-different-request`, `duplicate-invocation`); `PRECONDITION_FAILED` (`invocation-ids-exhausted`) |
//! | 1 resolve | `phases::resolve` | `CAPABILITY_NOT_FOUND`, `STALE_CAPABILITY` (`registration-replaced`, `surface-reloaded`, `details.liveRegistrationId`), `COMPONENT_UNMOUNTED` (`phase: "resolve"`), `AMBIGUOUS_INSTANCE` (`details.instances`) |
//! | 2 staleness | `phases::staleness` | `STALE_CAPABILITY` (`surface-version-mismatch`, `surface-version-required`) |
//! | 3 availability | `phases::availability` | `CAPABILITY_NOT_AVAILABLE` (`details.reason`) |
//! | 4 authorize | `phases::authorize` | `NOT_AUTHORIZED` (`details.origin: "client"`) |
//! | 5 effective input | `input::effective_input` | `INVALID_INPUT` (`details.lockedFields`, `details.issues`, at most [`MAX_REPORTED_VALIDATION_ERRORS`]); `PRECONDITION_FAILED` (`binding-failed`) |
//! | 6 policies + confirmation | `phases::check_input`, `SurfaceRegistry::confirmation` | `NOT_AUTHORIZED`; `CONFIRMATION_REQUIRED` (`details.confirmationId`, `summary`, `expiresAt`, `effect`, `origin`); `CONFIRMATION_INVALID` (`details.reason`) |
//! | 7 execute | `SurfaceRegistry::execute` | executor / handler errors (sanitized), `TIMEOUT`, `CANCELLED`, `EXECUTION_FAILED` when no executor |
//! | 8 result | `SurfaceRegistry::result` | — (audit, then the result is recorded for replay) |
//!
//! Admission and phases 1–2 run under one registry lock (a consistent view
//! of the surface, one lock round trip); phases 3–6 run without it, on the
//! caller's task, with no await point before execution.
//!
//! **A `confirmationId` on a call that needs none** (level `never`, or
//! `optional` not enforced) is ignored: it is neither checked nor
//! consumed, and the executor's `ProcedureCallInfo::confirmation` is
//! `None`.

mod execute;
mod input;
mod phases;

use std::future::Future;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::admission::{envelope_fingerprint, Refusal};
use crate::audit::{AuditEvent, Phase};
use crate::cancellation::Cancellation;
use crate::executor::{AgentProcedureExecutor, ConfirmationInfo};
use crate::hash::IdDigest;
use crate::invocation::{
    check_invocation_id, AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult,
    ErrorCode, InvalidInvocationId, Retry,
};
use crate::policy::{PolicyContext, PolicyStage};
use crate::registry::{Live, Registered, SurfaceRegistry};

pub use input::MAX_REPORTED_VALIDATION_ERRORS;

/// A call that ended before execution: the agent error, the phase, the
/// audit-only detail and the registration it had resolved to. Boxed, so
/// the `Result`s of the phases a successful call passes through stay
/// small.
struct Failure(Box<FailureData>);

struct FailureData {
    phase: Phase,
    error: AgentError,
    internal: Option<Value>,
    registration_id: Option<String>,
}

fn fail(phase: Phase, code: ErrorCode, message: impl Into<String>, retry: Retry) -> Failure {
    Failure(Box::new(FailureData {
        phase,
        error: AgentError::new(code, message, retry),
        internal: None,
        registration_id: None,
    }))
}

impl Failure {
    fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.error.details.insert(key.to_string(), value.into());
        self
    }

    fn internal(mut self, value: impl Into<Value>) -> Self {
        self.0.internal = Some(value.into());
        self
    }

    /// The failure of a call resolved to `target`.
    fn at(mut self, target: &Registered) -> Self {
        self.0.registration_id = Some(target.registration_id().to_string());
        self
    }
}

/// What the synchronous part of `invoke` ends with.
enum Prepared {
    /// Refused at admission: answered, not recorded (again).
    Answered(AgentInvocationResult),
    /// Ended in phases 1–6; recorded under the id's digest.
    Ended(IdDigest, AgentInvocationResult),
    /// Passed phases 1–6; execution follows.
    Ready(Ready),
}

/// A call that passed phases 1–6.
struct Ready {
    /// The admitted invocation id's digest.
    key: IdDigest,
    /// The executor's cancellation signal (a fresh or a reclaimed one).
    signal: Cancellation,
    invocation_id: String,
    /// The capability id the call named (echoed in the result).
    capability_id: String,
    /// The surface version when the call was admitted: a result settled at
    /// another version says `surfaceChanged`.
    admitted_version: u64,
    target: Registered,
    /// The procedure executor installed at admission (`None` for view
    /// capabilities, or when none is installed).
    executor: Option<Arc<dyn AgentProcedureExecutor>>,
    /// The effective input.
    input: Value,
    /// The confirmation the call passed.
    confirmation: Option<ConfirmationInfo>,
}

impl SurfaceRegistry {
    /// Runs one invocation through the pipeline (phases and codes in
    /// `docs/pipeline.md` and the [module docs](crate::pipeline)). Never
    /// panics on bad input; never runs one invocation id twice. Lazy like
    /// any future: nothing runs (and `bind()` is not called) until it is
    /// polled.
    pub fn invoke<'a>(
        &'a self,
        invocation: AgentInvocation,
        consumer: &'a AgentConsumer,
    ) -> impl Future<Output = AgentInvocationResult> + 'a {
        self.run(invocation, consumer, None)
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
        self.run(invocation, consumer, Some(cancellation))
    }

    async fn run(
        &self,
        invocation: AgentInvocation,
        consumer: &AgentConsumer,
        cancellation: Option<&Cancellation>,
    ) -> AgentInvocationResult {
        // Everything up to execution is synchronous, so the future carries
        // only what execution needs.
        match self.prepare(invocation, consumer) {
            Prepared::Answered(result) => result,
            Prepared::Ended(key, result) => {
                self.record(key, &result);
                result
            }
            // Recorded by `result`, under the lock it reads the version in.
            Prepared::Ready(ready) => self.execute(ready, consumer, cancellation).await,
        }
    }

    /// Admission and phases 1–6, in order.
    fn prepare(&self, mut inv: AgentInvocation, consumer: &AgentConsumer) -> Prepared {
        let (key, admitted_version, signal, resolved) = match self.admission(&inv, consumer) {
            Ok(admitted) => admitted,
            Err(answer) => return Prepared::Answered(answer),
        };
        self.audit(|| AuditEvent::InvocationStarted {
            invocation_id: inv.invocation_id.clone(),
            capability_id: inv.capability_id.clone(),
            registration_id: inv.registration_id.clone(),
            consumer: consumer.clone(),
        });
        let agent_input = std::mem::take(&mut inv.input);
        let unwinding = Unwinding {
            registry: self,
            key,
            invocation: &inv,
        };
        let checked = resolved.and_then(|(target, executor)| {
            match self.check(&inv, &target, agent_input, consumer) {
                Ok((input, confirmation)) => Ok((target, executor, input, confirmation)),
                Err(failure) => Err(failure.at(&target)),
            }
        });
        drop(unwinding);
        match checked {
            Ok((target, executor, input, confirmation)) => Prepared::Ready(Ready {
                key,
                signal,
                invocation_id: inv.invocation_id,
                capability_id: inv.capability_id,
                admitted_version,
                target,
                executor,
                input,
                confirmation,
            }),
            Err(failure) => Prepared::Ended(key, self.rejected(inv, failure)),
        }
    }

    /// Admission: the invocation-id rule, then the registry's record of
    /// ids. Phases 1 (resolve) and 2 (staleness) run under the same lock
    /// (which also reads the procedure executor and the surface version
    /// the call is admitted at); the `Ok` is the id's digest, that
    /// version, the call's cancellation signal and their outcome.
    #[allow(clippy::result_large_err, clippy::type_complexity)]
    fn admission(
        &self,
        inv: &AgentInvocation,
        consumer: &AgentConsumer,
    ) -> Result<
        (
            IdDigest,
            u64,
            Cancellation,
            Result<(Registered, Option<Arc<dyn AgentProcedureExecutor>>), Failure>,
        ),
        AgentInvocationResult,
    > {
        if let Err(problem) = check_invocation_id(&inv.invocation_id) {
            return Err(self.refuse_invalid_id(inv, problem));
        }
        let fingerprint = envelope_fingerprint(self.fingerprint(), inv, consumer);
        // Policies run outside the registry lock: which registrations they
        // hide is read first (`check` asks again for the one resolved).
        let hidden = self.hidden_registrations(&inv.capability_id, consumer);
        let resolve = |live: &Live<'_>| {
            let target = phases::resolve(live, inv, consumer, &hidden)?;
            phases::staleness(live, inv, &target)?;
            let executor = match target {
                Registered::Procedure(_) => live.executor(),
                Registered::View(..) => None,
            };
            Ok((target, executor))
        };
        self.admit(&inv.invocation_id, fingerprint, |live| {
            (live.surface_version(), resolve(live))
        })
        .map(|(key, (version, resolved), signal)| (key, version, signal, resolved))
        .map_err(|refusal| self.refuse(inv, refusal))
    }

    /// Phases 3–6 for a resolved registration: the effective input and the
    /// confirmation it passed. A registration that the discovery policies
    /// hide from `consumer` now ends as an unknown one
    /// (`CAPABILITY_NOT_FOUND`) before anything else is checked.
    fn check(
        &self,
        inv: &AgentInvocation,
        target: &Registered,
        agent_input: Value,
        consumer: &AgentConsumer,
    ) -> Result<(Value, Option<ConfirmationInfo>), Failure> {
        let policies = || self.settings().policies.iter().chain(target.policies());
        let any_policy = policies().next().is_some();
        // The principal and the clock are read only when a policy may.
        let (principal, now_ms) = if any_policy {
            (self.principal(), self.confirmations().now_ms())
        } else {
            (None, 0)
        };
        let mut ctx = policy_context(inv, target, consumer);
        ctx.principal = principal.as_deref();
        ctx.environment = self.environment();
        ctx.now_ms = now_ms;
        if any_policy {
            phases::discoverable(policies(), &ctx)?;
        }
        phases::availability(target)?;
        let level = phases::authorize(policies(), &ctx, target.static_level())?;
        let input = input::effective_input(target, agent_input)?;
        let level = phases::check_input(policies(), &ctx, &input, level)?;
        let passed = self.confirmation(inv, target, input, level, consumer)?;
        // The call executes: policies that count calls count it now.
        policies().for_each(|policy| policy.executing(&ctx));
        Ok(passed)
    }

    /// The `INVALID_INPUT` answer to an invocation id that breaks the
    /// invocation-id rule; nothing is recorded. The audit event carries an
    /// escaped prefix of the id, never raw control characters.
    fn refuse_invalid_id(
        &self,
        inv: &AgentInvocation,
        problem: InvalidInvocationId,
    ) -> AgentInvocationResult {
        const MESSAGE: &str = "The invocationId must be 1 to 256 visible ASCII characters (0x21-0x7E, no spaces or control characters); send a fresh id such as a UUID.";
        // The one issue names the invocation's own field, not the input.
        let error = AgentError::new(ErrorCode::InvalidInput, MESSAGE, Retry::WithChanges)
            .with_detail(
                "issues",
                json!([{"path": "invocationId", "message": MESSAGE, "keyword": "invocationId"}]),
            );
        self.audit(|| AuditEvent::InvocationRejected {
            invocation_id: escaped_prefix(&inv.invocation_id),
            capability_id: escaped_prefix(&inv.capability_id),
            registration_id: None,
            phase: Phase::Admission,
            code: ErrorCode::InvalidInput,
            internal: Some(json!({"invocationId": problem.to_string()})),
        });
        AgentInvocationResult::err(
            inv.invocation_id.clone(),
            inv.capability_id.clone(),
            error,
            self.surface_version(),
        )
    }

    /// The answer to a refused repeat of an id (or a new id once the
    /// registry's id table is full): a replay, `INVOCATION_CONFLICT` or
    /// `PRECONDITION_FAILED`.
    fn refuse(&self, inv: &AgentInvocation, refusal: Refusal) -> AgentInvocationResult {
        if let Some(code) = refusal.code() {
            self.audit(|| AuditEvent::InvocationRejected {
                invocation_id: inv.invocation_id.clone(),
                capability_id: inv.capability_id.clone(),
                registration_id: None,
                phase: Phase::Admission,
                code,
                internal: None,
            });
        }
        refusal.into_result(inv, self.surface_version())
    }

    /// The result of a call that ended in phases 1–6, audited (a
    /// `CONFIRMATION_REQUIRED` is audited as a confirmation request).
    fn rejected(&self, inv: AgentInvocation, failure: Failure) -> AgentInvocationResult {
        let failure = *failure.0;
        if failure.error.code != ErrorCode::ConfirmationRequired {
            self.audit(|| AuditEvent::InvocationRejected {
                invocation_id: inv.invocation_id.clone(),
                capability_id: inv.capability_id.clone(),
                registration_id: failure.registration_id.clone(),
                phase: failure.phase,
                code: failure.error.code.clone(),
                internal: failure.internal.clone(),
            });
        }
        AgentInvocationResult::err(
            inv.invocation_id,
            inv.capability_id,
            failure.error,
            self.surface_version(),
        )
    }
}

/// Completes the admitted id of a call that unwinds out of phases 1–6 (a
/// panicking policy, `when()` or `bind()`): its result is recorded as
/// `EXECUTION_FAILED` (retry `no`; nothing ran), so a repeat of the id is
/// answered with it instead of "in flight" for ever.
struct Unwinding<'a> {
    registry: &'a SurfaceRegistry,
    key: IdDigest,
    invocation: &'a AgentInvocation,
}

impl Drop for Unwinding<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let error = AgentError::new(
            ErrorCode::ExecutionFailed,
            "The application failed while checking this call; it did not run.",
            Retry::No,
        );
        let result = AgentInvocationResult::err(
            self.invocation.invocation_id.clone(),
            self.invocation.capability_id.clone(),
            error,
            self.registry.surface_version(),
        );
        self.registry.record(self.key, &result);
    }
}

/// What policies see of a call resolved to `target` (never the input).
fn policy_context<'a>(
    inv: &'a AgentInvocation,
    target: &'a Registered,
    consumer: &'a AgentConsumer,
) -> PolicyContext<'a> {
    PolicyContext {
        invocation_id: &inv.invocation_id,
        capability_id: target.capability_id(),
        path: match target {
            Registered::Procedure(p) => Some(&p.path),
            Registered::View(..) => None,
        },
        registration_id: target.registration_id(),
        effect: target.effect(),
        consumer,
        context: target.context(),
        stage: PolicyStage::Invocation,
        principal: None,
        environment: None,
        now_ms: 0,
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
