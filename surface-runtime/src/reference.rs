//! Procedure references (seed 000 "Declaring a reference"): what the app
//! registers to say "this procedure is relevant here, with these inputs
//! bound from UI state".

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::binding::BoundInput;
use crate::confirmation::ConfirmationLevel;
use crate::policy::AgentPolicy;
use crate::procedure::AgentProcedureRef;
use crate::registry::RegistrationHandle;
use crate::snapshot::ComponentContext;
use crate::sync::{MaybeSend, MaybeSync};

// Stored closures are `Send + Sync` on native targets and plain on wasm32
// (browser closures capture `Rc` signals), matching `crate::sync`.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type BindFn = dyn Fn() -> Result<Map<String, Value>, String> + Send + Sync;
#[cfg(target_arch = "wasm32")]
pub(crate) type BindFn = dyn Fn() -> Result<Map<String, Value>, String>;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type WhenFn = dyn Fn() -> bool + Send + Sync;
#[cfg(target_arch = "wasm32")]
pub(crate) type WhenFn = dyn Fn() -> bool;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type TextFn = dyn Fn() -> String + Send + Sync;
#[cfg(target_arch = "wasm32")]
pub(crate) type TextFn = dyn Fn() -> String;

/// A bound field as the registry keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BoundFieldSpec {
    pub(crate) name: String,
    pub(crate) locked: bool,
}

#[derive(Clone)]
pub(crate) struct BindingSpec {
    pub(crate) procedure: &'static str,
    pub(crate) fields: Vec<BoundFieldSpec>,
    pub(crate) bind: Arc<BindFn>,
}

/// A reason string or a closure producing one.
#[derive(Clone)]
pub(crate) enum Reason {
    Static(Arc<str>),
    Dynamic(Arc<TextFn>),
}

impl Reason {
    pub(crate) fn text(&self) -> String {
        match self {
            Reason::Static(s) => s.to_string(),
            Reason::Dynamic(f) => f(),
        }
    }
}

/// A procedure reference under construction: the typed
/// [`AgentProcedureRef`] plus the frontend-only knowledge (availability,
/// bindings, confirmation, policies, description, metadata, owning
/// component). Register it with `SurfaceRegistry::register_procedure`.
///
/// Closures are evaluated live: `when`/`describe`/`unavailable_reason` at
/// snapshot and invocation time, `bind` only at invocation (phase 5), never
/// cached from discovery (SPEC §5 rule 4).
///
/// ```ignore
/// registry.register_procedure(
///     ProcedureReference::new(refs::devices::disable())
///         .bind(move || DisableBinding { device_ids: sel.get() })
///         .when(move || !sel2.get().is_empty())
///         .unavailable_reason("Select at least one device first")
///         .confirmation(ConfirmationLevel::Required),
/// )?;
/// ```
pub struct ProcedureReference<I = Value> {
    pub(crate) procedure: AgentProcedureRef<I, Value>,
    pub(crate) binding: Option<BindingSpec>,
    pub(crate) when: Option<Arc<WhenFn>>,
    pub(crate) unavailable_reason: Option<Reason>,
    pub(crate) confirmation: ConfirmationLevel,
    pub(crate) policies: Vec<Arc<dyn AgentPolicy>>,
    pub(crate) describe: Option<Arc<TextFn>>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) context: Option<ContextLink>,
    pub(crate) overridable: Vec<String>,
}

#[derive(Clone)]
pub(crate) struct ContextLink {
    pub(crate) registration: u64,
    pub(crate) context: ComponentContext,
}

impl<I> fmt::Debug for ProcedureReference<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcedureReference")
            .field("path", &self.procedure.path())
            .field(
                "bound_fields",
                &self.binding.as_ref().map(|b| b.fields.clone()),
            )
            .field("confirmation", &self.confirmation)
            .finish_non_exhaustive()
    }
}

impl<I> ProcedureReference<I> {
    /// A reference to `procedure` with no binding, always available, at the
    /// effect's confirmation floor.
    pub fn new<O>(procedure: AgentProcedureRef<I, O>) -> Self {
        Self {
            procedure: procedure.retype(),
            binding: None,
            when: None,
            unavailable_reason: None,
            confirmation: ConfirmationLevel::Never,
            policies: Vec::new(),
            describe: None,
            meta: None,
            context: None,
            overridable: Vec::new(),
        }
    }

    /// Binds UI state: `bind` runs at execution time and its fields are
    /// merged into the agent's input (locked unless the binding type marks
    /// them overridable). The binding type must be for this procedure
    /// (`B::PROCEDURE` is checked at registration).
    pub fn bind<B, F>(self, bind: F) -> Self
    where
        B: BoundInput<Input = I>,
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
        B: BoundInput<Input = I>,
        E: fmt::Display,
        F: Fn() -> Result<B, E> + MaybeSend + MaybeSync + 'static,
    {
        let fields = B::bound_fields()
            .iter()
            .map(|f| BoundFieldSpec {
                name: f.name.to_string(),
                locked: f.locked,
            })
            .collect();
        self.binding = Some(BindingSpec {
            procedure: B::PROCEDURE,
            fields,
            bind: Arc::new(move || match bind() {
                Ok(b) => b.to_bound_json().map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }),
        });
        self
    }

    /// Marks bound fields overridable in addition to those the binding type
    /// declares: they stay in the agent schema and an agent value wins over
    /// the bound one. Naming a field that is not bound is a registration
    /// error. Use sparingly (seed 000 D8).
    pub fn overridable<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.overridable.extend(fields.into_iter().map(Into::into));
        self
    }

    /// Contextual availability; evaluated at snapshot and invocation time.
    pub fn when<F>(mut self, when: F) -> Self
    where
        F: Fn() -> bool + MaybeSend + MaybeSync + 'static,
    {
        self.when = Some(Arc::new(when));
        self
    }

    /// A fixed reason shown when `when()` is false.
    pub fn unavailable_reason(mut self, reason: impl Into<String>) -> Self {
        self.unavailable_reason = Some(Reason::Static(Arc::from(reason.into())));
        self
    }

    /// A reason computed when `when()` is false.
    pub fn unavailable_reason_with<F>(mut self, reason: F) -> Self
    where
        F: Fn() -> String + MaybeSend + MaybeSync + 'static,
    {
        self.unavailable_reason = Some(Reason::Dynamic(Arc::new(reason)));
        self
    }

    /// Escalates the confirmation level; it can never go below the effect
    /// floor (SPEC §5 rule 6).
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
    /// returned). The component must be live when the reference registers.
    pub fn context(mut self, component: &RegistrationHandle) -> Self {
        self.context = component.component_context().map(|context| ContextLink {
            registration: component.number(),
            context: context.clone(),
        });
        if self.context.is_none() {
            // A procedure handle is not a component: remember it so
            // registration fails with a clear error.
            self.context = Some(ContextLink {
                registration: component.number(),
                context: ComponentContext {
                    component_type: String::new(),
                    instance_id: String::new(),
                },
            });
        }
        self
    }

    /// The referenced procedure.
    pub fn procedure(&self) -> &AgentProcedureRef<I, Value> {
        &self.procedure
    }
}
