//! Phases 1–4 and 6 of the pipeline, one function each, in order (phase 5
//! is [`super::input`], 7 and 8 are [`super::execute`]).

use std::sync::Arc;

use serde_json::{json, Value};

use super::{fail, Failure};
use crate::audit::{AuditEvent, Phase};
use crate::clock::iso_8601;
use crate::confirmation::{
    input_digest, CallIdentity, ConfirmationLevel, ConfirmationRequest, Consumed, Overflow,
    PendingConfirmation,
};
use crate::executor::ConfirmationInfo;
use crate::invocation::{AgentConsumer, AgentInvocation, ConsumerKind, ErrorCode, Retry};
use crate::policy::{discover, AgentPolicy, PolicyContext, PolicyDecision, PolicyStage, Verdict};
use crate::registry::{Live, Lookup, Registered, SurfaceRegistry};

/// Phase 1: the registration a call names, as the original resolves it.
/// The candidates are the live registrations serving the capability (of
/// the `instanceId`, when given). With a `registrationId`: that candidate;
/// else, when candidates remain, `STALE_CAPABILITY` (`reason`
/// `registration-replaced` when the named registration was issued here
/// and is gone, `surface-reloaded` when it was not; `liveRegistrationId`
/// when exactly one candidate serves); else `COMPONENT_UNMOUNTED`
/// (`phase: "resolve"`) for a gone registration and
/// `CAPABILITY_NOT_FOUND` for an unknown one. Without one: exactly one
/// candidate (`CAPABILITY_NOT_FOUND` for none, `AMBIGUOUS_INSTANCE` for
/// several). Headless consumers resolve no view capability. A registration
/// in `hidden` (hidden from this consumer by a discovery policy) is
/// neither a candidate nor served: it is answered as one that does not
/// exist.
pub(super) fn resolve(
    live: &Live<'_>,
    inv: &AgentInvocation,
    consumer: &AgentConsumer,
    hidden: &[(String, String)],
) -> Result<Registered, Failure> {
    resolve_visible(live, inv, consumer, hidden).map_err(|failure| match hidden.first() {
        // The audit record names what hid a registration (never the agent).
        Some((_, policy)) if failure.0.error.code == ErrorCode::CapabilityNotFound => {
            failure.internal(json!({"hiddenBy": policy}))
        }
        _ => failure,
    })
}

fn resolve_visible(
    live: &Live<'_>,
    inv: &AgentInvocation,
    consumer: &AgentConsumer,
    hidden: &[(String, String)],
) -> Result<Registered, Failure> {
    let capability_id = inv.capability_id.as_str();
    if capability_id.starts_with("view:") && consumer.kind == ConsumerKind::Headless {
        return Err(unknown_capability());
    }
    let instance = inv.instance_id.as_deref();
    let of_instance = |target: &Registered| {
        instance.is_none_or(|i| target.context().is_some_and(|c| c.instance_id == i))
            && !hidden.iter().any(|(h, _)| h == target.registration_id())
    };
    let mut candidates = live.serving(capability_id).filter(of_instance);
    if let Some(wanted) = inv.registration_id.as_deref() {
        let gone = match live.lookup(capability_id, wanted) {
            Lookup::Serving(target) if of_instance(&target) => return Ok(target),
            Lookup::Gone => true,
            Lookup::Serving(_) | Lookup::Unknown => false,
        };
        return Err(match (candidates.next(), candidates.next()) {
            (Some(only), None) => {
                stale_registration(gone).detail("liveRegistrationId", only.registration_id())
            }
            (Some(_), Some(_)) => stale_registration(gone),
            (None, _) if gone => fail(
                Phase::Resolve,
                ErrorCode::ComponentUnmounted,
                "The owning view is no longer mounted. Refresh the surface catalog.",
                Retry::AfterRefresh,
            )
            .detail("phase", "resolve"),
            (None, _) => unknown_capability(),
        });
    }
    let Some(first) = candidates.next() else {
        return Err(unknown_capability());
    };
    let Some(second) = candidates.next() else {
        return Ok(first);
    };
    let instances: Vec<Value> = [first, second]
        .into_iter()
        .chain(candidates)
        .map(|target| instance_summary(&target))
        .collect();
    Err(fail(
        Phase::Resolve,
        ErrorCode::AmbiguousInstance,
        "More than one live instance matches this capability. Re-issue the call with an explicit instanceId or registrationId.",
        Retry::WithChanges,
    )
    .detail("instances", instances))
}

/// The original's `STALE_CAPABILITY` message, retry and `details.reason`.
const STALE_MESSAGE: &str =
    "The invocation references a superseded surface snapshot. Refresh the catalog and re-resolve the target.";

/// `STALE_CAPABILITY` for a named registration that does not serve the
/// call while others do: `registration-replaced` when it was issued here
/// and is `gone`, `surface-reloaded` when this registry never issued it.
fn stale_registration(gone: bool) -> Failure {
    let reason = if gone {
        "registration-replaced"
    } else {
        "surface-reloaded"
    };
    fail(
        Phase::Resolve,
        ErrorCode::StaleCapability,
        STALE_MESSAGE,
        Retry::AfterRefresh,
    )
    .detail("reason", reason)
}

fn unknown_capability() -> Failure {
    fail(
        Phase::Resolve,
        ErrorCode::CapabilityNotFound,
        "This capability does not exist in the current surface. Refresh the surface catalog before the next step.",
        Retry::AfterRefresh,
    )
}

/// One entry of `details.instances`, as the original lists them:
/// `{"instanceId"?, "registrationId", "context"?}` for a procedure binding
/// (its component, when it has one), `{"instanceId", "registrationId",
/// "description"?}` for a view capability (the component's description).
fn instance_summary(target: &Registered) -> Value {
    let mut v = json!({});
    if let Some(ctx) = target.context() {
        v["instanceId"] = json!(ctx.instance_id);
    }
    v["registrationId"] = json!(target.registration_id());
    match target {
        Registered::Procedure(p) => {
            if let Some(ctx) = &p.context {
                v["context"] = json!(ctx);
            }
        }
        Registered::View(c, _) => {
            if let Some(description) = &c.description {
                v["description"] = json!(description);
            }
        }
    }
    v
}

/// Phase 2: a destructive or external-side-effect procedure acted on from
/// another `surfaceVersion` is stale (`details.reason:
/// "surface-version-mismatch"`) — and so is such a call that names
/// no `surfaceVersion` at all (`details.reason:
/// "surface-version-required"`): the registry cannot tell which surface
/// the agent saw, so it never asks for confirmation on its behalf.
pub(super) fn staleness(
    live: &Live<'_>,
    inv: &AgentInvocation,
    target: &Registered,
) -> Result<(), Failure> {
    let Registered::Procedure(p) = target else {
        return Ok(());
    };
    if !p.effect.requires_current_surface() {
        return Ok(());
    }
    let current = live.surface_version();
    let failure = match inv.surface_version {
        Some(v) if v == current => return Ok(()),
        Some(_) => fail(
            Phase::Staleness,
            ErrorCode::StaleCapability,
            STALE_MESSAGE,
            Retry::AfterRefresh,
        )
        .detail("reason", "surface-version-mismatch"),
        None => fail(
            Phase::Staleness,
            ErrorCode::StaleCapability,
            "This capability has a destructive or external effect: send the surfaceVersion of the snapshot it was listed in.",
            Retry::AfterRefresh,
        )
        .detail("reason", "surface-version-required"),
    };
    Err(failure.at(target))
}

/// Before phase 3: the discovery verdict of the policies now. A hiding
/// denial ends the call as an unknown capability (`CAPABILITY_NOT_FOUND`,
/// the same answer, so a hidden capability is not revealed); the policy's
/// name goes to audit.
pub(super) fn discoverable<'p>(
    policies: impl Iterator<Item = &'p Arc<dyn AgentPolicy>>,
    ctx: &PolicyContext<'_>,
) -> Result<(), Failure> {
    let at_discovery = PolicyContext {
        stage: PolicyStage::Discovery,
        ..*ctx
    };
    match discover(policies, &at_discovery) {
        Verdict::Hidden(policy) => Err(unknown_capability().internal(json!({"hiddenBy": policy}))),
        Verdict::Shown | Verdict::Disclosed(_) => Ok(()),
    }
}

/// Phase 3: `when()`, evaluated now.
pub(super) fn availability(target: &Registered) -> Result<(), Failure> {
    let availability = target.availability();
    if availability.holds() {
        return Ok(());
    }
    let reason = availability.reason_text();
    // The original's message, with the application's reason in it.
    let because = reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let failure = fail(
        Phase::Availability,
        ErrorCode::CapabilityNotAvailable,
        format!(
            "This capability exists but is currently unavailable{because}. Perform the enabling step first, then refresh."
        ),
        Retry::AfterRefresh,
    );
    Err(match reason {
        Some(reason) => failure.detail("reason", reason),
        None => failure,
    })
}

/// Phase 4: the pre-input policies (registry-wide ones first), which see
/// who calls what but never the input. Returns the confirmation level
/// raised by their static levels and `RequireConfirmation` decisions; a
/// denial is `NOT_AUTHORIZED`.
pub(super) fn authorize<'p>(
    policies: impl Iterator<Item = &'p Arc<dyn AgentPolicy>>,
    ctx: &PolicyContext<'_>,
    level: ConfirmationLevel,
) -> Result<ConfirmationLevel, Failure> {
    let denial = (Phase::Authorize, ErrorCode::NotAuthorized);
    apply_policies(policies, denial, level, |policy, level| {
        *level = (*level).max(policy.confirmation());
        policy.authorize(ctx)
    })
}

/// Phase 6, first half: the post-input policies over the effective input.
/// Returns the level raised by `RequireConfirmation`; a denial is
/// `NOT_AUTHORIZED` (`details.origin: "client"`), as at phase 4.
pub(super) fn check_input<'p>(
    policies: impl Iterator<Item = &'p Arc<dyn AgentPolicy>>,
    ctx: &PolicyContext<'_>,
    input: &Value,
    level: ConfirmationLevel,
) -> Result<ConfirmationLevel, Failure> {
    let denial = (Phase::Confirmation, ErrorCode::NotAuthorized);
    apply_policies(policies, denial, level, |policy, _| {
        policy.check_input(ctx, input)
    })
}

/// Runs `decide` for each policy in order: `RequireConfirmation` raises the
/// level to `required`, the first `Deny` ends the call in `denial`'s phase
/// with its code (the policy's name and internal detail go to audit).
fn apply_policies<'p>(
    policies: impl Iterator<Item = &'p Arc<dyn AgentPolicy>>,
    (phase, code): (Phase, ErrorCode),
    mut level: ConfirmationLevel,
    mut decide: impl FnMut(&dyn AgentPolicy, &mut ConfirmationLevel) -> PolicyDecision,
) -> Result<ConfirmationLevel, Failure> {
    for policy in policies {
        match decide(&**policy, &mut level) {
            PolicyDecision::Allow => {}
            PolicyDecision::RequireConfirmation => level = ConfirmationLevel::Required,
            PolicyDecision::Deny { message, internal } => {
                return Err(fail(phase, code, message, Retry::No)
                    .detail("origin", "client")
                    .internal(json!({"policy": policy.name(), "internal": internal})))
            }
            PolicyDecision::Limit {
                message,
                retry_after_ms,
            } => {
                return Err(
                    fail(phase, ErrorCode::RateLimited, message, Retry::AfterDelay)
                        .detail("origin", "client")
                        .detail("retryAfterMs", retry_after_ms.max(1))
                        .internal(json!({"policy": policy.name()})),
                )
            }
        }
    }
    Ok(level)
}

impl SurfaceRegistry {
    /// Phase 6, second half: the confirmation `level` demands, as the
    /// original decides it. A call that names no `confirmationId` is asked
    /// for one (`CONFIRMATION_REQUIRED`: the pending confirmation already
    /// issued for the same consumer, capability, registration and effective
    /// input, else a new one; `RATE_LIMITED` when the registry's bound of
    /// pending confirmations is reached). A `confirmationId` runs the call
    /// once when it was approved for exactly this call; while still pending
    /// the call is asked for it again; otherwise `CONFIRMATION_INVALID`
    /// (`denied`, `consumed`, `mismatch`: retry `no`; `expired`: retry
    /// `with-confirmation`). Returns the effective input and the
    /// confirmation it passed.
    pub(super) fn confirmation(
        &self,
        inv: &AgentInvocation,
        target: &Registered,
        input: Value,
        level: ConfirmationLevel,
        consumer: &AgentConsumer,
    ) -> Result<(Value, Option<ConfirmationInfo>), Failure> {
        let confirmations = self.confirmations();
        if !confirmations.required(level) {
            return Ok((input, None));
        }
        let digest = input_digest(&input);
        let Some(id) = &inv.confirmation_id else {
            return Err(self.request_confirmation(inv, target, input, digest, consumer));
        };
        let call = CallIdentity {
            capability_id: target.capability_id(),
            registration_id: target.registration_id(),
            consumer,
            digest: &digest,
        };
        match confirmations.consume(id, &call) {
            Consumed::Approved(approved_at_ms) => {
                let info = ConfirmationInfo {
                    id: id.clone(),
                    approved_at_ms,
                };
                Ok((input, Some(info)))
            }
            Consumed::PendingAgain(pending) => Err(confirmation_required(&pending, target)),
            Consumed::Refused(problem) => Err(fail(
                Phase::Confirmation,
                ErrorCode::ConfirmationInvalid,
                problem.message(),
                problem.retry(),
            )
            .detail("reason", problem.as_str())
            .internal(json!({"confirmationId": id}))),
        }
    }

    /// The `CONFIRMATION_REQUIRED` of a call that names no confirmation: the
    /// pending one for the same call, or a new one (`RATE_LIMITED` at the
    /// bound).
    fn request_confirmation(
        &self,
        inv: &AgentInvocation,
        target: &Registered,
        input: Value,
        input_digest: String,
        consumer: &AgentConsumer,
    ) -> Failure {
        let request = ConfirmationRequest {
            invocation_id: inv.invocation_id.clone(),
            capability_id: target.capability_id().to_string(),
            registration_id: target.registration_id().to_string(),
            consumer: consumer.clone(),
            effect: target.effect(),
            description: description(target),
            input,
            input_digest,
        };
        let issued = match self.confirmations().request(request) {
            Ok(issued) => issued,
            Err(full) => return self.confirmations_full(full),
        };
        if let Some(old) = &issued.evicted {
            self.audit(|| AuditEvent::ConfirmationEvicted {
                confirmation_id: old.confirmation_id.clone(),
                capability_id: old.capability_id.clone(),
                registration_id: old.registration_id.clone(),
                approved: old.state == crate::confirmation::ConfirmationState::Approved,
            });
        }
        let pending = &issued.pending;
        if issued.new {
            self.audit(|| AuditEvent::ConfirmationRequested {
                invocation_id: inv.invocation_id.clone(),
                confirmation_id: pending.confirmation_id.clone(),
                capability_id: pending.capability_id.clone(),
                registration_id: pending.registration_id.clone(),
                input_digest: pending.input_digest.clone(),
            });
        }
        confirmation_required(pending, target)
    }

    /// `RATE_LIMITED` when the bound of pending confirmations is reached:
    /// nothing is issued, no pending one is dropped; `retryAfterMs` is the
    /// time until the oldest expires (at least 1).
    fn confirmations_full(&self, full: Overflow) -> Failure {
        let wait = full
            .oldest_expires_at_ms
            .saturating_sub(self.confirmations().now_ms())
            .max(1);
        fail(
            Phase::Confirmation,
            ErrorCode::RateLimited,
            "The queue for this capability is full. Retry shortly.",
            Retry::AfterDelay,
        )
        .detail("reason", "queue-full")
        .detail("retryAfterMs", wait)
    }
}

/// `CONFIRMATION_REQUIRED` for `pending`, as the original writes it.
fn confirmation_required(pending: &PendingConfirmation, target: &Registered) -> Failure {
    let effect = match target {
        Registered::Procedure(p) => json!(p.effect),
        Registered::View(c, i) => json!(c.views[*i].effect_name()),
    };
    fail(
        Phase::Confirmation,
        ErrorCode::ConfirmationRequired,
        "User approval is required for this action. Wait for the user to resolve the confirmation, then retry with the confirmationId.",
        Retry::WithConfirmation,
    )
    .detail("confirmationId", pending.confirmation_id.clone())
    .detail("summary", pending.summary())
    .detail("expiresAt", iso_8601(pending.expires_at_ms))
    .detail("effect", effect)
    .detail("origin", "client")
}

/// The capability's stable description: the manifest's for a procedure
/// (never the contextual note), the capability's for a view.
fn description(target: &Registered) -> String {
    match target {
        Registered::Procedure(p) => p.manifest_description.to_string(),
        Registered::View(c, i) => c.views[*i].description.clone(),
    }
}
