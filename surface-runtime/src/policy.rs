//! Frontend policies (`docs/pipeline.md`, "Policies"; phases 4 and 6). They are
//! advisory on the client (the server re-checks everything) and can only
//! **tighten**: deny, or raise the confirmation level; nothing a policy
//! returns can lower the effect floor or skip a phase.
//!
//! * Pre-input ([`AgentPolicy::authorize`], phase 4): authn / authz /
//!   tenant / environment checks. They see who calls what, never the agent
//!   input. A denial is `NOT_AUTHORIZED`.
//! * Post-input ([`AgentPolicy::check_input`], phase 6): they see the
//!   validated effective input (bound values included). A denial is
//!   `POLICY_DENIED`; [`PolicyDecision::RequireConfirmation`] raises the
//!   level to `required`.
//!
//! Policies are synchronous: they run on the caller's task, between
//! `bind()` and execution, with no await point in between.

use serde_json::Value;

use crate::component::ComponentContext;
use crate::confirmation::ConfirmationLevel;
use crate::invocation::AgentConsumer;
use crate::manifest::AgentEffect;
use crate::sync::{MaybeSend, MaybeSync};

/// What a policy sees about the call (never the agent input).
#[derive(Clone, Copy, Debug)]
pub struct PolicyContext<'a> {
    /// The invocation id.
    pub invocation_id: &'a str,
    /// The capability id as resolved (`domain:…` / `view:…`).
    pub capability_id: &'a str,
    /// Dotted router path, for procedures.
    pub path: Option<&'a str>,
    /// The resolved registration.
    pub registration_id: &'a str,
    /// Effect, for procedures.
    pub effect: Option<AgentEffect>,
    /// Who invokes.
    pub consumer: &'a AgentConsumer,
    /// Owning component, when the registration has one.
    pub context: Option<&'a ComponentContext>,
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
}

/// A frontend policy on a binding ([`crate::AgentProcedureBinding::policy`])
/// or on the whole registry (`SurfaceRegistryBuilder::policy`).
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
    /// Phase 4 (no agent input). `Deny` ⇒ `NOT_AUTHORIZED`;
    /// `RequireConfirmation` raises the level.
    fn authorize(&self, _ctx: &PolicyContext<'_>) -> PolicyDecision {
        PolicyDecision::Allow
    }
    /// Phase 6, over the validated effective input. `Deny` ⇒
    /// `POLICY_DENIED`; `RequireConfirmation` raises the level.
    fn check_input(&self, _ctx: &PolicyContext<'_>, _input: &Value) -> PolicyDecision {
        PolicyDecision::Allow
    }
}

/// A pre-input policy from a closure ([`authorize_with`]).
pub struct AuthorizeFn<F>(String, F);

/// Builds a pre-input policy named `name` from `f`.
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
