//! The registration rules: what `register_procedure` and
//! `register_component` check before anything is registered. The rules the
//! agent host applies too are written once, in [`crate::binding`] (bound
//! fields, the agent-facing schema) and [`crate::component`] (view
//! capability ids and collisions).

use std::sync::Arc;

use super::{
    ChangeReason, ComponentEntry, Observed, ProcedureEntry, RegistrationError, RegistrationHandle,
    SchemaCheck, SurfaceRegistry, ViewEntry,
};
use crate::audit::{AuditEvent, RegistrationKind};
use crate::binding::{
    reduced_input_schema, unknown_bound_field, AgentProcedureBinding, BindingSpec,
    BoundFieldDescriptor, ContextLink,
};
use crate::callback::{scoped_text, Availability, TextFn};
use crate::component::{
    colliding_path, view_capability_id, ComponentContext, ComponentDefinition, ViewCapability,
};
use crate::confirmation::ConfirmationLevel;
use crate::manifest::AgentEffect;
use crate::policy::AgentPolicy;
use crate::registration::{registration_id, Unregister};
use crate::sync::lock;

impl SurfaceRegistry {
    /// Registers a procedure binding. The binding must name a procedure of
    /// the registry's authority with the same manifest entry; its binding
    /// type must be for that procedure and bind only top-level input
    /// properties; `overridable` may only name bound fields; a `context`
    /// must be a live component. The full input schema is checked by the
    /// validator `manifest!` generated for the registry's authority; an
    /// authority without one (built at run time) has it compiled once per
    /// manifest procedure and shared (feature `dynamic`; without it,
    /// [`RegistrationError::NoValidator`]).
    ///
    /// # Errors
    /// A [`RegistrationError`]; nothing is registered and a
    /// `component-rejected` audit event is emitted.
    pub fn register_procedure<I>(
        &self,
        binding: AgentProcedureBinding<I>,
    ) -> Result<RegistrationHandle, RegistrationError> {
        let path = binding.procedure.path().to_string();
        let entry = self
            .procedure_entry(binding)
            .map_err(|err| self.reject_registration(RegistrationKind::Procedure, &path, err))?;
        // Before the entry is live, so a call never misses its policies.
        self.note_discovery_policies(&entry.policies);
        let (handle, change) = {
            let mut state = lock(&self.inner.state);
            let number = state.take_number();
            let mut entry = entry;
            entry.registration_id = registration_id(number);
            state.index(entry.procedure_id.clone(), number);
            if *entry.capability_id != *entry.procedure_id {
                state.index(entry.capability_id.to_string(), number);
            }
            state.procedures.insert(number, Arc::new(entry));
            (
                self.handle(number, None),
                state.change(ChangeReason::Registered {
                    registration_id: registration_id(number),
                }),
            )
        };
        self.notify(change);
        Ok(handle)
    }

    /// Registers a component instance with its view capabilities. Each
    /// capability's input schema is compiled once here.
    ///
    /// # Errors
    /// A [`RegistrationError`] (empty names, duplicate instance or
    /// capability, a capability colliding with a manifest path, an invalid
    /// schema); nothing is registered and a `component-rejected` audit event
    /// is emitted.
    pub fn register_component(
        &self,
        definition: ComponentDefinition,
    ) -> Result<RegistrationHandle, RegistrationError> {
        let component_type = definition.component_type.clone();
        let reject =
            |err| self.reject_registration(RegistrationKind::Component, &component_type, err);
        let context = component_context(&definition).map_err(reject)?;
        let views = self
            .view_entries(&component_type, definition.capabilities)
            .map_err(reject)?;
        let (handle, change) = {
            let mut state = lock(&self.inner.state);
            if state.components.values().any(|c| c.context == context) {
                drop(state);
                return Err(reject(RegistrationError::DuplicateComponent {
                    component_type: context.component_type,
                    instance_id: context.instance_id,
                }));
            }
            let number = state.take_number();
            for view in &views {
                state.index(view.capability_id.clone(), number);
            }
            let entry = ComponentEntry {
                registration_id: registration_id(number),
                context: context.clone(),
                description: definition.description,
                views,
                concurrency_group: definition.concurrency_group,
                priority: definition.priority,
            };
            state.components.insert(number, Arc::new(entry));
            (
                self.handle(number, Some(context)),
                state.change(ChangeReason::Registered {
                    registration_id: registration_id(number),
                }),
            )
        };
        self.notify(change);
        Ok(handle)
    }

    fn handle(&self, number: u64, component: Option<ComponentContext>) -> RegistrationHandle {
        let owner: std::sync::Weak<dyn Unregister> = Arc::downgrade(&self.inner) as _;
        RegistrationHandle::new(owner, number, component)
    }

    fn reject_registration(
        &self,
        kind: RegistrationKind,
        name: &str,
        err: RegistrationError,
    ) -> RegistrationError {
        let reason = err.to_string();
        let name = name.to_string();
        self.audit(|| AuditEvent::ComponentRejected { kind, name, reason });
        err
    }

    /// The entry of `binding` (its registration id is set at insertion), or
    /// the first rule it breaks.
    fn procedure_entry<I>(
        &self,
        binding: AgentProcedureBinding<I>,
    ) -> Result<ProcedureEntry, RegistrationError> {
        let procedure = &binding.procedure;
        let path = procedure.path();
        let capability_id = match self.inner.authority.procedure(path) {
            Some(p) if p.digest == procedure.digest() => p.capability_id.clone(),
            _ => {
                return Err(RegistrationError::OutsideAuthority { path: path.into() });
            }
        };
        let tool = procedure.tool();
        let bound = bound_fields(path, &tool.input_schema, binding.binding.as_ref())?;
        let bound = apply_overridable(path, bound, &binding.overridable)?;
        let (context, component_group) = self.live_context(binding.context.as_ref())?;
        // The registry's own authority is the ceiling: its generated
        // validator (same digest, so the same schema) is the one used.
        let validator = match self.inner.authority.input_validator(path) {
            Some(generated) => SchemaCheck::Generated(generated),
            #[cfg(feature = "dynamic")]
            None => SchemaCheck::Compiled(
                self.compiled_validator(
                    format!("procedure:{}", procedure.digest()),
                    &tool.input_schema,
                )
                .map_err(|e| RegistrationError::InvalidSchema {
                    name: path.into(),
                    message: e.to_string(),
                })?,
            ),
            #[cfg(not(feature = "dynamic"))]
            None => return Err(RegistrationError::NoValidator { name: path.into() }),
        };
        Ok(ProcedureEntry {
            registration_id: String::new(),
            path: Arc::from(path),
            procedure_id: format!("domain:{path}"),
            capability_id: capability_id.into(),
            contract_digest: tool.contract_digest.as_deref().map(Arc::from),
            effect: tool.effect,
            requires_approval: tool.requires_approval,
            manifest_description: tool.description.clone(),
            agent_schema: Arc::new(reduced_input_schema(&tool.input_schema, &bound)),
            output_schema: tool.output_schema.clone().map(Arc::new),
            bind: binding.binding.map(|b| b.bind),
            bound,
            validator,
            confirmation: self.confirmation_level(
                tool.effect,
                binding.confirmation,
                &binding.policies,
            ),
            availability: self.scoped(binding.availability),
            describe: binding.describe.map(|text| self.scoped_text(text)),
            meta: binding.meta.map(Arc::new),
            context,
            policies: binding.policies,
            observed: Observed::default(),
            concurrency_group: binding.concurrency_group.or(component_group),
            priority: binding.priority,
        })
    }

    /// `availability` evaluated in the registry's evaluation scope, if set.
    fn scoped(&self, availability: Availability) -> Availability {
        match lock(&self.inner.state).evaluation_scope.clone() {
            Some(scope) => availability.scoped(&scope),
            None => availability,
        }
    }

    /// `text` evaluated in the registry's evaluation scope, if set.
    fn scoped_text(&self, text: Arc<TextFn>) -> Arc<TextFn> {
        match lock(&self.inner.state).evaluation_scope.clone() {
            Some(scope) => scoped_text(text, &scope),
            None => text,
        }
    }

    /// The component a binding's `context` names, when it is live and
    /// still the same component, with its concurrency group.
    #[allow(clippy::type_complexity)]
    fn live_context(
        &self,
        link: Option<&ContextLink>,
    ) -> Result<(Option<ComponentContext>, Option<Arc<str>>), RegistrationError> {
        let Some(link) = link else {
            return Ok((None, None));
        };
        let live = lock(&self.inner.state)
            .components
            .get(&link.registration)
            .map(|c| (c.context.clone(), c.concurrency_group.clone()));
        match live {
            Some((context, group)) if context == link.context => Ok((Some(context), group)),
            _ => Err(RegistrationError::ContextNotLive {
                registration_id: registration_id(link.registration),
            }),
        }
    }

    /// The registered level: max(effect floor, the binding's level, every
    /// static policy level, the binding's and the registry's).
    fn confirmation_level(
        &self,
        effect: AgentEffect,
        requested: ConfirmationLevel,
        policies: &[Arc<dyn AgentPolicy>],
    ) -> ConfirmationLevel {
        policies
            .iter()
            .chain(self.inner.settings.policies.iter())
            .map(|p| p.confirmation())
            .fold(ConfirmationLevel::floor(effect).max(requested), Ord::max)
    }

    /// The view entries of a component's capabilities: names non-empty and
    /// distinct, no collision with a manifest path, schemas that compile.
    fn view_entries(
        &self,
        component_type: &str,
        capabilities: Vec<ViewCapability>,
    ) -> Result<Vec<ViewEntry>, RegistrationError> {
        let mut views: Vec<ViewEntry> = Vec::with_capacity(capabilities.len());
        for capability in capabilities {
            if capability.name.is_empty() {
                return Err(RegistrationError::EmptyCapabilityName {
                    component_type: component_type.into(),
                });
            }
            if views.iter().any(|v| v.name == capability.name) {
                return Err(RegistrationError::DuplicateCapability {
                    component_type: component_type.into(),
                    name: capability.name,
                });
            }
            views.push(self.view_entry(component_type, capability)?);
        }
        Ok(views)
    }

    fn view_entry(
        &self,
        component_type: &str,
        capability: ViewCapability,
    ) -> Result<ViewEntry, RegistrationError> {
        let capability_id = view_capability_id(component_type, &capability.name);
        let manifest = self.inner.authority.manifest();
        if let Some(path) = colliding_path(manifest, component_type, &capability.name) {
            return Err(RegistrationError::ViewCollision {
                capability_id,
                path,
            });
        }
        if let Some(message) = capability.schema_error {
            return Err(RegistrationError::InvalidSchema {
                name: capability_id,
                message,
            });
        }
        let validator = match capability.validator {
            Some(generated) => SchemaCheck::Generated(generated),
            None => view_validator(&capability_id, &capability.input_schema)?,
        };
        Ok(ViewEntry {
            name: capability.name,
            capability_id,
            description: capability.description,
            kind: capability.kind,
            input_schema: Arc::new(capability.input_schema),
            validator,
            handler: capability.handler,
            availability: self.scoped(capability.availability),
            observed: Observed::default(),
        })
    }
}

/// A view capability's validator: its schema compiled at registration.
#[cfg(feature = "dynamic")]
fn view_validator(
    capability_id: &str,
    schema: &serde_json::Value,
) -> Result<SchemaCheck, RegistrationError> {
    match crate::format::validator_for(schema) {
        Ok(validator) => Ok(SchemaCheck::Compiled(Arc::new(validator))),
        Err(e) => Err(RegistrationError::InvalidSchema {
            name: capability_id.into(),
            message: e.to_string(),
        }),
    }
}

/// Without the runtime schema compiler a view capability cannot be
/// validated: [`RegistrationError::NoValidator`].
#[cfg(not(feature = "dynamic"))]
fn view_validator(
    capability_id: &str,
    _schema: &serde_json::Value,
) -> Result<SchemaCheck, RegistrationError> {
    Err(RegistrationError::NoValidator {
        name: capability_id.into(),
    })
}

/// The component's context, when its type and instance id are non-empty.
fn component_context(
    definition: &ComponentDefinition,
) -> Result<ComponentContext, RegistrationError> {
    if definition.component_type.is_empty() {
        return Err(RegistrationError::EmptyComponentType {
            instance_id: definition.instance_id.clone(),
        });
    }
    if definition.instance_id.is_empty() {
        return Err(RegistrationError::EmptyInstanceId {
            component_type: definition.component_type.clone(),
        });
    }
    Ok(ComponentContext {
        component_type: definition.component_type.clone(),
        instance_id: definition.instance_id.clone(),
    })
}

/// The bound fields of `binding`, when its type is for `path` and binds
/// only top-level properties of `input_schema`.
fn bound_fields(
    path: &str,
    input_schema: &serde_json::Value,
    binding: Option<&BindingSpec>,
) -> Result<Vec<BoundFieldDescriptor>, RegistrationError> {
    let Some(binding) = binding else {
        return Ok(Vec::new());
    };
    if binding.procedure != path {
        return Err(RegistrationError::BindingMismatch {
            path: path.into(),
            binding: binding.procedure.into(),
        });
    }
    let names = binding.fields.iter().map(|f| f.path.as_str());
    if let Some(field) = unknown_bound_field(input_schema, names) {
        return Err(RegistrationError::UnknownBoundField {
            path: path.into(),
            field: field.into(),
        });
    }
    Ok(binding.fields.clone())
}

/// `bound` with the `overridable` fields unlocked; each must be bound.
fn apply_overridable(
    path: &str,
    mut bound: Vec<BoundFieldDescriptor>,
    overridable: &[String],
) -> Result<Vec<BoundFieldDescriptor>, RegistrationError> {
    for name in overridable {
        match bound.iter_mut().find(|f| &f.path == name) {
            Some(field) => field.locked = false,
            None => {
                return Err(RegistrationError::OverridableNotBound {
                    path: path.into(),
                    field: name.clone(),
                })
            }
        }
    }
    Ok(bound)
}
