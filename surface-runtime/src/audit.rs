//! Typed audit events. Every event goes to the
//! subscribers installed with `SurfaceRegistry::on_audit` and to `tracing`
//! (target `agent_surface::audit`). Audit is the only place where internal
//! error text (executor `internal`, bind errors) is recorded; agent-facing
//! results never carry it. Bound values are never in audit events either:
//! confirmation events carry the input digest, not the input.

use serde::Serialize;
use serde_json::Value;

use crate::invocation::{AgentConsumer, ErrorCode};

/// The pipeline phase a call ended in (`docs/pipeline.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Before the pipeline: duplicate invocation ids.
    Admission,
    /// 1. Resolve the registration.
    Resolve,
    /// 2. Surface-version staleness.
    Staleness,
    /// 3. `when()`.
    Availability,
    /// 4. Pre-input policies.
    Authorize,
    /// 5. Locked fields, `bind()`, validation.
    Input,
    /// 6. Post-input policies and confirmation.
    Confirmation,
    /// 7. Executor or local handler.
    Execute,
}

/// Kind of registration an audit event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegistrationKind {
    /// A procedure binding.
    Procedure,
    /// A component instance with view capabilities.
    Component,
}

/// One audit record. Serialized with a `"type"` tag in kebab-case
/// (`"invocation-started"`, …) and camelCase fields.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum AuditEvent {
    /// A call entered the pipeline.
    #[serde(rename_all = "camelCase")]
    InvocationStarted {
        /// Invocation id.
        invocation_id: String,
        /// Capability id as sent.
        capability_id: String,
        /// Registration id as sent.
        registration_id: Option<String>,
        /// Caller.
        consumer: AgentConsumer,
    },
    /// A call ended before execution with `code`.
    #[serde(rename_all = "camelCase")]
    InvocationRejected {
        /// Invocation id.
        invocation_id: String,
        /// Capability id as sent.
        capability_id: String,
        /// The resolved registration, when resolution got that far.
        registration_id: Option<String>,
        /// Phase that ended the call.
        phase: Phase,
        /// Agent-facing code.
        code: ErrorCode,
        /// Audit-only detail (bind error text, policy internals, the
        /// confirmation id that did not apply).
        internal: Option<Value>,
    },
    /// `CONFIRMATION_REQUIRED` was returned and a confirmation recorded.
    #[serde(rename_all = "camelCase")]
    ConfirmationRequested {
        /// Invocation that asked.
        invocation_id: String,
        /// New confirmation id.
        confirmation_id: String,
        /// Capability.
        capability_id: String,
        /// Registration.
        registration_id: String,
        /// Digest of the effective input shown in the summary.
        input_digest: String,
    },
    /// The application approved a confirmation.
    #[serde(rename_all = "camelCase")]
    ConfirmationApproved {
        /// Confirmation id.
        confirmation_id: String,
        /// Capability.
        capability_id: String,
        /// Registration.
        registration_id: String,
    },
    /// The application rejected a confirmation.
    #[serde(rename_all = "camelCase")]
    ConfirmationRejected {
        /// Confirmation id.
        confirmation_id: String,
        /// Capability.
        capability_id: String,
        /// Registration.
        registration_id: String,
    },
    /// A live confirmation was expired early because a newer one was
    /// requested while `max_pending_confirmations` were live
    /// (`SurfaceRegistryBuilder::max_pending_confirmations`).
    #[serde(rename_all = "camelCase")]
    ConfirmationEvicted {
        /// The expired confirmation.
        confirmation_id: String,
        /// Capability.
        capability_id: String,
        /// Registration.
        registration_id: String,
        /// Whether it had been approved (a retry naming it no longer runs).
        approved: bool,
    },
    /// The executor or handler returned output.
    #[serde(rename_all = "camelCase")]
    Executed {
        /// Invocation id.
        invocation_id: String,
        /// Capability.
        capability_id: String,
        /// Registration.
        registration_id: String,
        /// The confirmation the call passed, if any.
        confirmation_id: Option<String>,
    },
    /// Execution failed, timed out or was cancelled.
    #[serde(rename_all = "camelCase")]
    ExecutionFailed {
        /// Invocation id.
        invocation_id: String,
        /// Capability.
        capability_id: String,
        /// Registration.
        registration_id: String,
        /// Agent-facing code.
        code: ErrorCode,
        /// The executor's internal record (server text, transport error).
        internal: Option<Value>,
    },
    /// A registration was refused (outside the authority/manifest, view
    /// capability colliding with a manifest path, …); nothing registered.
    #[serde(rename_all = "camelCase")]
    ComponentRejected {
        /// Procedure reference or component.
        kind: RegistrationKind,
        /// Path (procedures) or component type (components).
        name: String,
        /// Why.
        reason: String,
    },
}

impl AuditEvent {
    /// Emits the event to `tracing`.
    pub(crate) fn trace(&self) {
        match self {
            AuditEvent::ComponentRejected { kind, name, reason } => {
                tracing::error!(target: "agent_surface::audit", ?kind, %name, %reason, "component-rejected");
            }
            AuditEvent::ExecutionFailed {
                invocation_id,
                capability_id,
                code,
                internal,
                ..
            } => {
                tracing::warn!(target: "agent_surface::audit", %invocation_id, %capability_id, %code, ?internal, "execution-failed");
            }
            AuditEvent::InvocationRejected {
                invocation_id,
                capability_id,
                phase,
                code,
                internal,
                ..
            } => {
                tracing::info!(target: "agent_surface::audit", %invocation_id, %capability_id, ?phase, %code, ?internal, "invocation-rejected");
            }
            other => {
                tracing::info!(target: "agent_surface::audit", event = ?other, "audit");
            }
        }
    }
}
