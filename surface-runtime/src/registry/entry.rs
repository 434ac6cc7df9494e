//! What the registry keeps of one live registration: immutable entries,
//! built once at registration and shared (`Arc`) with the snapshot and the
//! pipeline, which read them but never the registry's state.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::binding::BoundFieldDescriptor;
use crate::callback::{Availability, BindFn, HandlerFn, TextFn};
use crate::component::{ComponentContext, ViewKind};
use crate::confirmation::ConfirmationLevel;
use crate::manifest::AgentEffect;
use crate::policy::AgentPolicy;
use crate::validation::Validator;

/// A live procedure binding.
pub(crate) struct ProcedureEntry {
    pub(crate) registration_id: String,
    /// Dotted router path.
    pub(crate) path: Arc<str>,
    /// `"domain:" + path`.
    pub(crate) procedure_id: String,
    /// The canonical capability id (the manifest's override, else the
    /// procedure id).
    pub(crate) capability_id: Arc<str>,
    /// The manifest's contract digest, shared with every `ExecuteRequest`.
    pub(crate) contract_digest: Option<Arc<str>>,
    pub(crate) effect: AgentEffect,
    /// The manifest's `requiresApproval` hint.
    pub(crate) requires_approval: bool,
    /// The manifest's description (the snapshot's `description`; the
    /// `describe()` text is its `contextualNote`).
    pub(crate) manifest_description: String,
    /// The agent-facing input schema (binding rule 1).
    pub(crate) agent_schema: Arc<Value>,
    pub(crate) output_schema: Option<Arc<Value>>,
    /// The bound fields, as the snapshot reports them.
    pub(crate) bound: Vec<BoundFieldDescriptor>,
    pub(crate) bind: Option<Arc<BindFn>>,
    /// The full input schema's validator: the one `manifest!` generated,
    /// else compiled once per manifest procedure.
    pub(crate) validator: SchemaCheck,
    pub(crate) availability: Availability,
    pub(crate) describe: Option<Arc<TextFn>>,
    pub(crate) meta: Option<Arc<Map<String, Value>>>,
    pub(crate) context: Option<ComponentContext>,
    /// max(effect floor, the binding's level, static policy levels).
    pub(crate) confirmation: ConfirmationLevel,
    /// The binding's own policies (registry-wide ones are in the settings).
    pub(crate) policies: Vec<Arc<dyn AgentPolicy>>,
    /// The last observed `when()`.
    pub(crate) observed: Observed,
    /// The concurrency group calls run in (the binding's, else its
    /// component's).
    pub(crate) concurrency_group: Option<Arc<str>>,
    /// The rank under a snapshot budget (higher first).
    pub(crate) priority: i32,
}

/// How an input schema is checked (docs/validation.md).
#[derive(Clone)]
pub(crate) enum SchemaCheck {
    /// The validator `manifest!` generated at compile time.
    Generated(Validator),
    /// A validator compiled from the schema at registration (feature
    /// `dynamic`).
    #[cfg(feature = "dynamic")]
    Compiled(Arc<jsonschema::Validator>),
}

/// A live component instance.
pub(crate) struct ComponentEntry {
    pub(crate) registration_id: String,
    pub(crate) context: ComponentContext,
    pub(crate) description: Option<String>,
    pub(crate) views: Vec<ViewEntry>,
    /// The concurrency group its view capabilities' calls run in.
    pub(crate) concurrency_group: Option<Arc<str>>,
    /// The rank of its capabilities under a snapshot budget.
    pub(crate) priority: i32,
}

/// One view capability of a live component.
pub(crate) struct ViewEntry {
    pub(crate) name: String,
    pub(crate) capability_id: String,
    pub(crate) description: String,
    /// Observation or action (with the action's metadata).
    pub(crate) kind: ViewKind,
    pub(crate) input_schema: Arc<Value>,
    pub(crate) validator: SchemaCheck,
    pub(crate) handler: Arc<HandlerFn>,
    pub(crate) availability: Availability,
    /// The last observed `when()`.
    pub(crate) observed: Observed,
}

impl ViewEntry {
    /// The effect a confirmation's `details.effect` names: the action's
    /// (`local-state`, `navigation`), `read` for an observation.
    pub(crate) fn effect_name(&self) -> &'static str {
        match &self.kind {
            ViewKind::Observation { .. } => "read",
            ViewKind::Action(meta) => meta.effect.as_str(),
        }
    }
}

/// The last observed availability of one capability: unknown until the
/// first snapshot / refresh, then available or not. Lock-free so a
/// snapshot of many bindings does not take the registry lock per entry.
#[derive(Default)]
pub(crate) struct Observed(AtomicU8);

impl Observed {
    /// Records `available`; `true` when a previous observation differed.
    pub(crate) fn record(&self, available: bool) -> bool {
        let new = if available { 1 } else { 2 };
        let previous = self.0.swap(new, Ordering::SeqCst);
        previous != 0 && previous != new
    }
}

/// The registration a call resolved to: a procedure binding, or view
/// capability `index` of a component.
#[derive(Clone)]
pub(crate) enum Registered {
    Procedure(Arc<ProcedureEntry>),
    View(Arc<ComponentEntry>, usize),
}

impl Registered {
    pub(crate) fn registration_id(&self) -> &str {
        match self {
            Registered::Procedure(p) => &p.registration_id,
            Registered::View(c, _) => &c.registration_id,
        }
    }

    pub(crate) fn capability_id(&self) -> &str {
        match self {
            Registered::Procedure(p) => &p.capability_id,
            Registered::View(c, i) => &c.views[*i].capability_id,
        }
    }

    /// The procedure's effect; `None` for view capabilities (they act
    /// locally).
    pub(crate) fn effect(&self) -> Option<AgentEffect> {
        match self {
            Registered::Procedure(p) => Some(p.effect),
            Registered::View(..) => None,
        }
    }

    /// Whether repeating the call is harmless, as the original counts it:
    /// a procedure when its effect is `server-query`, an observation
    /// always, an action when it was registered `idempotent`.
    pub(crate) fn idempotent(&self) -> bool {
        match self {
            Registered::Procedure(p) => p.effect == AgentEffect::ServerQuery,
            Registered::View(c, i) => match &c.views[*i].kind {
                ViewKind::Observation { .. } => true,
                ViewKind::Action(meta) => meta.idempotent,
            },
        }
    }

    /// The owning component.
    pub(crate) fn context(&self) -> Option<&ComponentContext> {
        match self {
            Registered::Procedure(p) => p.context.as_ref(),
            Registered::View(c, _) => Some(&c.context),
        }
    }

    pub(crate) fn availability(&self) -> &Availability {
        match self {
            Registered::Procedure(p) => &p.availability,
            Registered::View(c, i) => &c.views[*i].availability,
        }
    }

    /// The concurrency group the call runs in, if any.
    pub(crate) fn concurrency_group(&self) -> Option<&Arc<str>> {
        match self {
            Registered::Procedure(p) => p.concurrency_group.as_ref(),
            Registered::View(c, _) => c.concurrency_group.as_ref(),
        }
    }

    /// The binding's own policies (view capabilities have none).
    pub(crate) fn policies(&self) -> &[Arc<dyn AgentPolicy>] {
        match self {
            Registered::Procedure(p) => &p.policies,
            Registered::View(..) => &[],
        }
    }

    /// The confirmation level fixed at registration.
    pub(crate) fn static_level(&self) -> ConfirmationLevel {
        match self {
            Registered::Procedure(p) => p.confirmation,
            Registered::View(c, i) => match &c.views[*i].kind {
                ViewKind::Action(meta) => meta.confirmation,
                ViewKind::Observation { .. } => ConfirmationLevel::Never,
            },
        }
    }
}
