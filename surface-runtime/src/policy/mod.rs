//! Frontend policies (`docs/pipeline.md`, "Policies"; phases 4 and 6, and
//! discovery). They are advisory on the client (the server re-checks
//! everything) and can only **tighten**: deny, or raise the confirmation
//! level; nothing a policy returns can lower the effect floor or skip a
//! phase.
//!
//! * Pre-input ([`AgentPolicy::authorize`], phase 4): authn / authz /
//!   tenant / environment checks. They see who calls what, never the agent
//!   input. A denial is `NOT_AUTHORIZED`; [`PolicyDecision::Limit`] is
//!   `RATE_LIMITED`.
//! * Post-input ([`AgentPolicy::check_input`], phase 6): they see the
//!   validated effective input (bound values included). A denial is
//!   `NOT_AUTHORIZED`; [`PolicyDecision::RequireConfirmation`] raises the
//!   level to `required`.
//! * At discovery ([`AgentPolicy::discovery`]): authority **hides**, state
//!   **discloses**. A [`Discovery::Hide`] policy whose `authorize` denies
//!   removes the capability from the snapshot and every export built from
//!   it, and a call that names it anyway is `CAPABILITY_NOT_FOUND`, never
//!   run. A [`Discovery::Disclose`] policy's denial lists the capability
//!   unavailable, with the denial's message as its reason (as `when()`
//!   does). The default, [`Discovery::NotChecked`], runs at calls only.
//!
//! Policies are synchronous: they run on the caller's task, between
//! `bind()` and execution (or while a snapshot is taken), with no await
//! point in between. They must not call back into the registry.
//!
//! The built-ins ([`authenticated`], [`has_permission`],
//! [`tenant_boundary`], [`environment`], [`rate_limit`]) read the
//! registry's [`Principal`] and environment.

mod builtin;
mod principal;

use serde_json::Value;

use crate::component::ComponentContext;
use crate::confirmation::ConfirmationLevel;
use crate::invocation::AgentConsumer;
use crate::manifest::AgentEffect;
use crate::sync::{MaybeSend, MaybeSync};

pub use builtin::{
    authenticated, environment, has_permission, rate_limit, tenant_boundary, Authenticated,
    Environment, HasPermission, RateLimit, TenantBoundary, RATE_LIMIT_MAX_KEYS,
};
pub use principal::Principal;

/// Where a policy is evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyStage {
    /// While a snapshot is taken: no call, `invocation_id` is `""`. A
    /// policy must not count anything here (a snapshot is not a call).
    Discovery,
    /// A call, at phase 4 (`authorize`) or 6 (`check_input`).
    Invocation,
}

/// How a policy takes part in discovery (`docs/pipeline.md`, "Policies at
/// discovery").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Discovery {
    /// Not evaluated at discovery: the capability is listed, the policy
    /// runs when a call arrives (the default).
    #[default]
    NotChecked,
    /// Authority: when `authorize` denies at discovery the capability is
    /// left out of the snapshot, and a call naming it is
    /// `CAPABILITY_NOT_FOUND` (the denial's message is never shown).
    Hide,
    /// State: when `authorize` denies at discovery the capability is
    /// listed unavailable with the denial's message as
    /// `unavailableReason`; a call is refused as phase 4 refuses it.
    Disclose,
}

/// What a policy sees about the call (never the agent input).
#[derive(Clone, Copy, Debug)]
pub struct PolicyContext<'a> {
    /// The invocation id (`""` at [`PolicyStage::Discovery`]).
    pub invocation_id: &'a str,
    /// The capability id as resolved (`domain:…` / `view:…`).
    pub capability_id: &'a str,
    /// Dotted router path, for procedures.
    pub path: Option<&'a str>,
    /// The resolved registration.
    pub registration_id: &'a str,
    /// Effect, for procedures.
    pub effect: Option<AgentEffect>,
    /// Who invokes (at discovery: who the snapshot is for).
    pub consumer: &'a AgentConsumer,
    /// Owning component, when the registration has one.
    pub context: Option<&'a ComponentContext>,
    /// Discovery or a call.
    pub stage: PolicyStage,
    /// The signed-in user, as the application last told the registry
    /// ([`crate::SurfaceRegistry::set_principal`]); `None` when nobody is.
    pub principal: Option<&'a Principal>,
    /// The registry's environment
    /// ([`crate::registry::SurfaceRegistryBuilder::environment`]).
    pub environment: Option<&'a str>,
    /// The registry clock's time, milliseconds since the Unix epoch.
    pub now_ms: u64,
}

/// A policy's verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyDecision {
    /// No objection.
    Allow,
    /// Refuse the call. `message` reaches the agent and must be safe;
    /// `internal` goes to audit/tracing only.
    Deny {
        /// Agent-facing reason.
        message: String,
        /// Audit-only detail.
        internal: Option<Value>,
    },
    /// Refuse the call for now: `RATE_LIMITED` (retry `after-delay`,
    /// `details.retryAfterMs`). At discovery it discloses or hides as a
    /// `Deny` does.
    Limit {
        /// Agent-facing reason.
        message: String,
        /// How long until a call may pass, in milliseconds (at least 1).
        retry_after_ms: u64,
    },
    /// Raise the confirmation level to `required` for this call.
    RequireConfirmation,
}

impl PolicyDecision {
    /// A denial with a safe message.
    pub fn deny(message: impl Into<String>) -> Self {
        PolicyDecision::Deny {
            message: message.into(),
            internal: None,
        }
    }

    /// The agent-facing message of a `Deny` or `Limit`; `None` otherwise.
    pub fn denial_message(&self) -> Option<&str> {
        match self {
            PolicyDecision::Deny { message, .. } | PolicyDecision::Limit { message, .. } => {
                Some(message)
            }
            PolicyDecision::Allow | PolicyDecision::RequireConfirmation => None,
        }
    }
}

/// A frontend policy on a binding ([`crate::AgentProcedureBinding::policy`])
/// or on the whole registry (`SurfaceRegistryBuilder::policy`; those apply
/// to view capabilities too).
pub trait AgentPolicy: MaybeSend + MaybeSync {
    /// Name for audit records.
    fn name(&self) -> &str {
        "policy"
    }
    /// Static confirmation level this policy declares; raises the level the
    /// snapshot reports and the pipeline enforces. Default `Never`.
    fn confirmation(&self) -> ConfirmationLevel {
        ConfirmationLevel::Never
    }
    /// Whether `authorize` also runs at discovery, and what its denial does
    /// there. Default [`Discovery::NotChecked`].
    fn discovery(&self) -> Discovery {
        Discovery::NotChecked
    }
    /// Phase 4 (no agent input), and discovery when [`Self::discovery`]
    /// says so (`ctx.stage` tells which). `Deny` ⇒ `NOT_AUTHORIZED`,
    /// `Limit` ⇒ `RATE_LIMITED`; `RequireConfirmation` raises the level.
    fn authorize(&self, _ctx: &PolicyContext<'_>) -> PolicyDecision {
        PolicyDecision::Allow
    }
    /// Phase 6, over the validated effective input. `Deny` ⇒
    /// `NOT_AUTHORIZED`; `RequireConfirmation` raises the level.
    fn check_input(&self, _ctx: &PolicyContext<'_>, _input: &Value) -> PolicyDecision {
        PolicyDecision::Allow
    }
    /// Called once for a call that passed every phase up to execution (its
    /// confirmation included), right before it executes: what a policy
    /// that counts calls counts. A call refused earlier, or only asked for
    /// a confirmation, is never reported.
    fn executing(&self, _ctx: &PolicyContext<'_>) {}
}

/// Adapters every policy has ([`PolicyExt::at_discovery`]).
pub trait PolicyExt: AgentPolicy + Sized {
    /// This policy, taking part in discovery as `mode` says (for example a
    /// permission that should be listed unavailable rather than hidden:
    /// `has_permission("devices:write").at_discovery(Discovery::Disclose)`).
    fn at_discovery(self, mode: Discovery) -> AtDiscovery<Self> {
        AtDiscovery { policy: self, mode }
    }
}

impl<P: AgentPolicy + Sized> PolicyExt for P {}

/// A policy with its discovery mode replaced ([`PolicyExt::at_discovery`]).
pub struct AtDiscovery<P> {
    policy: P,
    mode: Discovery,
}

impl<P: AgentPolicy> AgentPolicy for AtDiscovery<P> {
    fn name(&self) -> &str {
        self.policy.name()
    }
    fn confirmation(&self) -> ConfirmationLevel {
        self.policy.confirmation()
    }
    fn discovery(&self) -> Discovery {
        self.mode
    }
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        self.policy.authorize(ctx)
    }
    fn check_input(&self, ctx: &PolicyContext<'_>, input: &Value) -> PolicyDecision {
        self.policy.check_input(ctx, input)
    }
    fn executing(&self, ctx: &PolicyContext<'_>) {
        self.policy.executing(ctx);
    }
}

/// A pre-input policy from a closure ([`authorize_with`]).
pub struct AuthorizeFn<F>(String, F);

/// Builds a pre-input policy named `name` from `f` (not checked at
/// discovery; [`PolicyExt::at_discovery`] changes that).
pub fn authorize_with<F>(name: impl Into<String>, f: F) -> AuthorizeFn<F>
where
    F: Fn(&PolicyContext<'_>) -> PolicyDecision + MaybeSend + MaybeSync,
{
    AuthorizeFn(name.into(), f)
}

impl<F> AgentPolicy for AuthorizeFn<F>
where
    F: Fn(&PolicyContext<'_>) -> PolicyDecision + MaybeSend + MaybeSync,
{
    fn name(&self) -> &str {
        &self.0
    }
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        (self.1)(ctx)
    }
}

/// A post-input policy from a closure ([`check_input_with`]).
pub struct CheckInputFn<F>(String, F);

/// Builds a post-input policy named `name` from `f`.
pub fn check_input_with<F>(name: impl Into<String>, f: F) -> CheckInputFn<F>
where
    F: Fn(&PolicyContext<'_>, &Value) -> PolicyDecision + MaybeSend + MaybeSync,
{
    CheckInputFn(name.into(), f)
}

impl<F> AgentPolicy for CheckInputFn<F>
where
    F: Fn(&PolicyContext<'_>, &Value) -> PolicyDecision + MaybeSend + MaybeSync,
{
    fn name(&self) -> &str {
        &self.0
    }
    fn check_input(&self, ctx: &PolicyContext<'_>, input: &Value) -> PolicyDecision {
        (self.1)(ctx, input)
    }
}

/// A policy that only declares a static confirmation level.
#[derive(Clone, Copy, Debug)]
pub struct RequireConfirmation(pub ConfirmationLevel);

impl AgentPolicy for RequireConfirmation {
    fn name(&self) -> &str {
        "require-confirmation"
    }
    fn confirmation(&self) -> ConfirmationLevel {
        self.0
    }
}

/// What discovery makes of one capability under `policies`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Listed as `when()` says.
    Shown,
    /// Listed unavailable with this reason.
    Disclosed(String),
    /// Left out, by the policy of this name.
    Hidden(String),
}

/// The discovery verdict of `policies` over `ctx` (at
/// [`PolicyStage::Discovery`]): the first hiding denial hides, whatever
/// comes after; otherwise the first disclosed denial's message.
pub(crate) fn discover<'p>(
    policies: impl Iterator<Item = &'p std::sync::Arc<dyn AgentPolicy>>,
    ctx: &PolicyContext<'_>,
) -> Verdict {
    let mut verdict = Verdict::Shown;
    for policy in policies {
        let mode = policy.discovery();
        if mode == Discovery::NotChecked {
            continue;
        }
        let decision = policy.authorize(ctx);
        let Some(message) = decision.denial_message() else {
            continue;
        };
        match mode {
            Discovery::Hide => return Verdict::Hidden(policy.name().to_string()),
            Discovery::Disclose if verdict == Verdict::Shown => {
                verdict = Verdict::Disclosed(message.to_string());
            }
            Discovery::Disclose | Discovery::NotChecked => {}
        }
    }
    verdict
}
