//! [`AgentProcedureBinding`]: what the application registers to say "this
//! procedure is relevant here, with these inputs bound from UI state".

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{BindingSource, BindsProcedure, BoundFieldDescriptor, BoundInput};
use crate::callback::{availability_builders, Availability, BindFailure, BindFn, TextFn};
use crate::component::ComponentContext;
use crate::confirmation::ConfirmationLevel;
use crate::policy::AgentPolicy;
use crate::procedure::AgentProcedureRef;
use crate::registration::RegistrationHandle;
use crate::sync::{MaybeSend, MaybeSync};

/// The bound fields of a binding and the closure producing their values.
#[derive(Clone)]
pub(crate) struct BindingSpec {
    /// `BoundInput::PROCEDURE`: the procedure the binding type is for.
    pub(crate) procedure: &'static str,
    pub(crate) fields: Vec<BoundFieldDescriptor>,
    pub(crate) bind: Arc<BindFn>,
}

/// The owning component a binding names: the handle's registration number
/// and the component it stood for when the binding was built.
#[derive(Clone)]
pub(crate) struct ContextLink {
    pub(crate) registration: u64,
    pub(crate) context: ComponentContext,
}

/// A procedure binding under construction (`bindAgentProcedure` in the
/// TypeScript library): the typed [`AgentProcedureRef`] plus what only the
/// frontend knows — availability, inputs bound from UI state, confirmation,
/// policies, a contextual description, metadata and the owning component.
/// Register it with `SurfaceRegistry::register_procedure`; the snapshot
/// then lists one `AgentProcedureDescriptor` for it.
///
/// Closures are evaluated live: `when`/`describe`/`unavailable_reason` at
/// snapshot and invocation time, `bind` only at invocation (the
/// effective-input phase), never cached from discovery (`docs/bindings.md`,
/// rule 4).
///
/// ```ignore
/// registry.register_procedure(
///     AgentProcedureBinding::new(refs::devices::disable())
///         .bind(move || DisableBinding { device_ids: sel.get() })
///         .when(move || !sel2.get().is_empty())
///         .unavailable_reason("Select at least one device first")
///         .confirmation(ConfirmationLevel::Required),
/// )?;
/// ```
pub struct AgentProcedureBinding<I = Value> {
    pub(crate) procedure: AgentProcedureRef<I, Value>,
    pub(crate) binding: Option<BindingSpec>,
    pub(crate) availability: Availability,
    pub(crate) confirmation: ConfirmationLevel,
    pub(crate) policies: Vec<Arc<dyn AgentPolicy>>,
    pub(crate) describe: Option<Arc<TextFn>>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) context: Option<ContextLink>,
    pub(crate) overridable: Vec<String>,
    pub(crate) concurrency_group: Option<Arc<str>>,
    pub(crate) priority: i32,
}

impl<I> fmt::Debug for AgentProcedureBinding<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentProcedureBinding")
            .field("path", &self.procedure.path())
            .field(
                "bound_fields",
                &self.binding.as_ref().map(|b| b.fields.clone()),
            )
            .field("confirmation", &self.confirmation)
            .finish_non_exhaustive()
    }
}

impl<I> AgentProcedureBinding<I> {
    /// A binding of `procedure` with no bound inputs, always available, at
    /// the effect's confirmation floor.
    pub fn new<O>(procedure: AgentProcedureRef<I, O>) -> Self {
        Self {
            procedure: procedure.retype(),
            binding: None,
            availability: Availability::default(),
            confirmation: ConfirmationLevel::Never,
            policies: Vec::new(),
            describe: None,
            meta: None,
            context: None,
            overridable: Vec::new(),
            concurrency_group: None,
            priority: 0,
        }
    }

    /// Binds UI state: `bind` runs at execution time and its fields are
    /// merged into the agent's input (locked unless the binding type marks
    /// them overridable). The binding type must be for this procedure: a
    /// binding declared for another one is a compile error naming both
    /// ([`BindsProcedure`]), and `B::PROCEDURE` is checked again at
    /// registration.
    pub fn bind<B, F>(self, bind: F) -> Self
    where
        B: BoundInput,
        B::Input: BindsProcedure<I, B>,
        F: Fn() -> B + MaybeSend + MaybeSync + 'static,
    {
        self.try_bind(move || Ok::<B, std::convert::Infallible>(bind()))
    }

    /// Like [`Self::bind`], for bindings that can fail (for example, no
    /// row is selected). An `Err` fails the call with
    /// `PRECONDITION_FAILED` (`details.reason = "binding-failed"`); its text
    /// goes to audit only.
    pub fn try_bind<B, E, F>(mut self, bind: F) -> Self
    where
        B: BoundInput,
        B::Input: BindsProcedure<I, B>,
        E: fmt::Display,
        F: Fn() -> Result<B, E> + MaybeSend + MaybeSync + 'static,
    {
        let fields = B::bound_fields()
            .iter()
            .map(|f| BoundFieldDescriptor {
                path: f.name.to_string(),
                locked: f.locked,
                source: BindingSource::UiState,
            })
            .collect();
        self.binding = Some(BindingSpec {
            procedure: B::PROCEDURE,
            fields,
            bind: Arc::new(move || match bind() {
                Ok(b) => b.to_bound_json().map_err(BindFailure::Serialize),
                Err(e) => Err(BindFailure::Application(e.to_string())),
            }),
        });
        self
    }

    /// Marks bound fields overridable in addition to those the binding type
    /// declares: they stay in the agent schema and an agent value wins over
    /// the bound one. Naming a field that is not bound is a registration
    /// error. Use sparingly: the server authorizes whatever values arrive.
    pub fn overridable<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.overridable.extend(fields.into_iter().map(Into::into));
        self
    }

    availability_builders!("binding");

    /// Escalates the confirmation level; it can never go below the effect
    /// floor (`ConfirmationLevel::floor`).
    pub fn confirmation(mut self, level: ConfirmationLevel) -> Self {
        self.confirmation = level;
        self
    }

    /// Adds a policy (pre- and/or post-input). Policies only tighten.
    pub fn policy(mut self, policy: impl AgentPolicy + 'static) -> Self {
        self.policies.push(Arc::new(policy));
        self
    }

    /// Adds a shared policy.
    pub fn policy_arc(mut self, policy: Arc<dyn AgentPolicy>) -> Self {
        self.policies.push(policy);
        self
    }

    /// Contextual description appended to the manifest's.
    pub fn describe<F>(mut self, describe: F) -> Self
    where
        F: Fn() -> String + MaybeSend + MaybeSync + 'static,
    {
        self.describe = Some(Arc::new(describe));
        self
    }

    /// App metadata reported in the snapshot. A non-object value is stored
    /// under `"value"`.
    pub fn meta(mut self, meta: Value) -> Self {
        self.meta = Some(match meta {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert("value".into(), other);
                map
            }
        });
        self
    }

    /// Records the owning component (the handle `register_component`
    /// returned). The component must be live when the binding registers.
    pub fn context(mut self, component: &RegistrationHandle) -> Self {
        // A procedure handle is not a component: an empty context makes
        // registration fail with `ContextNotLive`.
        let context = component
            .component_context()
            .cloned()
            .unwrap_or(ComponentContext {
                component_type: String::new(),
                instance_id: String::new(),
            });
        self.context = Some(ContextLink {
            registration: component.number(),
            context,
        });
        self
    }

    /// Runs this binding's calls one at a time with every other call in
    /// concurrency group `name` (`docs/pipeline.md`, "Concurrency groups"):
    /// phase 7 waits until the group's running call has settled. Without
    /// one, a binding with a [`context`](Self::context) joins its
    /// component's group (`ComponentDefinition::concurrency_group`), if it
    /// has one; otherwise calls run concurrently.
    pub fn concurrency_group(mut self, name: impl Into<String>) -> Self {
        self.concurrency_group = Some(Arc::from(name.into()));
        self
    }

    /// Where this binding ranks when a snapshot's budget cannot list every
    /// capability (`SnapshotOptions::budget`; `docs/pipeline.md`, "Large
    /// surfaces"): higher first, default 0; ties keep registration order.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Whether [`AgentProcedureBinding::context`] was set (a framework
    /// adapter gives a binding without one the enclosing component's).
    pub fn has_context(&self) -> bool {
        self.context.is_some()
    }

    /// The bound procedure.
    pub fn procedure(&self) -> &AgentProcedureRef<I, Value> {
        &self.procedure
    }
}
