//! Component instances and their view capabilities (`docs/design.md`,
//! "Identity"): **observations**, read-only views of a component's state
//! that take no input — whatever object a call carries is ignored, as the
//! original ignores it ([`ViewCapability::observation`]) — and
//! **actions**, local changes a UI component performs itself (selecting
//! rows, opening a panel) with input types and validators generated at
//! compile time (`view_inputs!`, [`ViewInput`]), an effect
//! ([`ViewEffect`]), `idempotent`, `reversible` and a confirmation level.
//! Both run local async handlers.
//!
//! The view-capability rules live here, once, for the registry (at
//! registration) and the agent host (when it verifies an announcement):
//!
//! * a view capability's id is `"view:" + componentType + "." + name`
//!   ([`view_capability_id`]);
//! * it must not be named like a manifest procedure: neither its `name`
//!   nor `componentType.name` may be a manifest path ([`colliding_path`]) —
//!   a procedure is referenced, never re-declared.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::callback::{availability_builders, Availability, HandlerFn};
use crate::confirmation::ConfirmationLevel;
use crate::executor::ExecutionError;
use crate::invocation::{ErrorCode, Retry};
use crate::manifest::AgentManifest;
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};
use crate::validation::{Errors, Path, Validator};

/// A view capability's input type with its JSON Schema and the validator
/// generated from that schema at compile time. `view_inputs!` implements
/// it for the types it generates (docs/codegen.md, "`view_inputs!`");
/// never implement it by hand — the schema the agent sees and the
/// validator that runs must come from one generator.
pub trait ViewInput: DeserializeOwned + 'static {
    /// The input JSON Schema, as the agent sees it (JSON text).
    const INPUT_SCHEMA_JSON: &'static str;
    /// The validator generated from [`ViewInput::INPUT_SCHEMA_JSON`].
    const VALIDATOR: Validator;
}

/// The component a registration belongs to: `{"type", "instanceId"}` in
/// the snapshot (re-exported as `snapshot::ComponentContext`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentContext {
    /// Component type (`"devices.table"`).
    #[serde(rename = "type")]
    pub component_type: String,
    /// Instance id chosen by the app (`"main"`).
    pub instance_id: String,
}

/// The id of view capability `name` of components of `component_type`:
/// `"view:" + componentType + "." + name`.
pub fn view_capability_id(component_type: &str, name: &str) -> String {
    format!("view:{component_type}.{name}")
}

/// The manifest path a view capability named `name` on a component of
/// `component_type` collides with — `name` itself or
/// `componentType.name` — or `None`. A colliding capability is refused by
/// the registry ([`crate::RegistrationError::ViewCollision`]) and by the
/// agent host.
pub fn colliding_path(
    manifest: &AgentManifest,
    component_type: &str,
    name: &str,
) -> Option<String> {
    if manifest.tools.contains_key(name) {
        return Some(name.to_string());
    }
    let qualified = format!("{component_type}.{name}");
    manifest.tools.contains_key(&qualified).then_some(qualified)
}

/// What a view action changes: `"local-state"` (the component's own state:
/// a selection, an open panel) or `"navigation"` (the page's route). The
/// original's plane rule: a view action never has a server effect — that
/// is a procedure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViewEffect {
    /// Changes the component's local state (the default).
    #[default]
    LocalState,
    /// Changes the page's route.
    Navigation,
}

impl ViewEffect {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ViewEffect::LocalState => "local-state",
            ViewEffect::Navigation => "navigation",
        }
    }
}

/// An action's metadata as the snapshot reports it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ActionMeta {
    pub(crate) effect: ViewEffect,
    pub(crate) idempotent: bool,
    pub(crate) reversible: bool,
    pub(crate) confirmation: ConfirmationLevel,
    pub(crate) output_schema: Option<Arc<Value>>,
}

impl Default for ActionMeta {
    fn default() -> Self {
        Self {
            effect: ViewEffect::LocalState,
            idempotent: false,
            reversible: true,
            confirmation: ConfirmationLevel::Never,
            output_schema: None,
        }
    }
}

/// Whether a view capability is an observation or an action.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ViewKind {
    /// Read-only, its input ignored; what it returns.
    Observation { output_schema: Arc<Value> },
    /// A local action.
    Action(ActionMeta),
}

/// The input schema of an observation as tools show it: no input (what a
/// call carries anyway is ignored, see [`ViewCapability::observation`]).
const NO_INPUT_SCHEMA: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

/// An observation's validator: any object passes (its content is ignored),
/// as in the original, which never reads an observation's input. The
/// pipeline refuses a non-object before any validator runs ("input must be
/// a JSON object"); were one to reach it, it fails as not an object.
fn any_object_is_valid(instance: &Value, _: u32) -> bool {
    instance.is_object()
}

fn any_object_collect(instance: &Value, path: &Path<'_>, errors: &mut Errors, _: u32) {
    if !instance.is_object() {
        errors.push(path, "type", "value is not of type \"object\"");
    }
}

/// One view capability of a component: an observation or an action.
pub struct ViewCapability {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) kind: ViewKind,
    pub(crate) input_schema: Value,
    /// The generated validator (`ViewCapability::new`); `None`: the schema
    /// is compiled at registration (feature `dynamic`).
    pub(crate) validator: Option<Validator>,
    /// Why the generated schema text did not parse (never for text
    /// `view_inputs!` wrote); registration refuses the capability.
    pub(crate) schema_error: Option<String>,
    pub(crate) handler: Arc<HandlerFn>,
    pub(crate) availability: Availability,
}

impl fmt::Debug for ViewCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViewCapability")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("input_schema", &self.input_schema)
            .finish_non_exhaustive()
    }
}

impl ViewCapability {
    /// A capability named `name` whose input type `I` (generated by
    /// `view_inputs!`) gives the schema and the compile-time validator: no
    /// runtime schema compiler (feature `dynamic`) is needed. The agent
    /// input is validated with `I::VALIDATOR` (errors as for procedure
    /// inputs: `INVALID_INPUT` with `details.errors`), then deserialized into
    /// `I` and passed to `handler`, whose output JSON is the call's output.
    ///
    /// ```ignore
    /// mod view { agent_surface::view_inputs!("view-inputs.json"); }
    /// ViewCapability::new::<view::SelectRows, _, _>("select", "Select rows", |input: view::SelectRows| async move {
    ///     Ok(json!({"selected": input.device_ids.len()}))
    /// })
    /// ```
    pub fn new<I, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        I: ViewInput,
        F: Fn(I) -> Fut + MaybeSend + MaybeSync + 'static,
        Fut: Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
    {
        let (schema, schema_error) = match serde_json::from_str(I::INPUT_SCHEMA_JSON) {
            Ok(schema) => (schema, None),
            Err(e) => (
                Value::Null,
                Some(format!(
                    "`ViewInput::INPUT_SCHEMA_JSON` of `{}` is not JSON ({e}); implement `ViewInput` only through `view_inputs!`",
                    std::any::type_name::<I>()
                )),
            ),
        };
        let mut capability = Self::typed::<I, F, Fut>(name, description, schema, handler);
        capability.validator = Some(I::VALIDATOR);
        capability.schema_error = schema_error;
        capability
    }

    /// A capability whose input schema is derived from `I` with `schemars`
    /// (`schemars::schema_for!(I)`, JSON Schema 2020-12) and compiled at
    /// registration: needs the `dynamic` feature (jsonschema). Prefer
    /// [`ViewCapability::new`] with a `view_inputs!` type, which needs
    /// neither.
    #[cfg(feature = "dynamic")]
    pub fn from_json_schema<I, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        I: DeserializeOwned + schemars::JsonSchema + 'static,
        F: Fn(I) -> Fut + MaybeSend + MaybeSync + 'static,
        Fut: Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
    {
        let schema = schemars::schema_for!(I).to_value();
        Self::typed::<I, F, Fut>(name, description, schema, handler)
    }

    fn typed<I, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        handler: F,
    ) -> Self
    where
        I: DeserializeOwned + 'static,
        F: Fn(I) -> Fut + MaybeSend + MaybeSync + 'static,
        Fut: Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
    {
        let handler = Arc::new(handler);
        Self::with_schema(name, description, schema, move |input: Value| {
            // Deserialize before the async block so `I` is never held across
            // an await (it need not be `Send`).
            let call = serde_json::from_value::<I>(input).map(|typed| handler(typed));
            async move {
                match call {
                    Ok(fut) => fut.await,
                    Err(err) => Err(ExecutionError::new(
                        ErrorCode::InvalidInput,
                        "The input does not match the capability's input type.",
                        Retry::WithChanges,
                    )
                    .with_internal(err.to_string())),
                }
            }
        })
    }

    /// A capability with an explicit input JSON Schema and an untyped
    /// handler (for schemas not derived from a Rust type), compiled at
    /// registration: needs the `dynamic` feature.
    pub fn with_schema<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Value) -> Fut + MaybeSend + MaybeSync + 'static,
        Fut: Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
    {
        Self {
            name: name.into(),
            description: description.into(),
            kind: ViewKind::Action(ActionMeta::default()),
            input_schema,
            validator: None,
            schema_error: None,
            handler: Arc::new(move |input: Value| -> BoxFuture<'static, _> {
                Box::pin(handler(input))
            }),
            availability: Availability::default(),
        }
    }

    /// An observation named `name`: a read-only view of the component's
    /// state that takes no input, returning JSON described by
    /// `output_schema` (the snapshot shows it; the registry does not
    /// validate outputs). Tools show it with an empty input schema; a call's
    /// input, any JSON object (or `null`), is accepted and ignored — never
    /// passed to `handler` — as the original ignores it, while a non-object
    /// input is `INVALID_INPUT` like any capability's. Needs no runtime
    /// schema compiler.
    ///
    /// ```ignore
    /// ViewCapability::observation("readState", "Visible rows and the selection",
    ///     json!({"type": "object"}), move || async move { Ok(json!({"selectedIds": ids()})) })
    /// ```
    pub fn observation<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        output_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn() -> Fut + MaybeSend + MaybeSync + 'static,
        Fut: Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
    {
        let input_schema = serde_json::from_str(NO_INPUT_SCHEMA).unwrap_or(Value::Null);
        let mut capability =
            Self::with_schema(name, description, input_schema, move |_input: Value| {
                handler()
            });
        capability.kind = ViewKind::Observation {
            output_schema: Arc::new(output_schema),
        };
        capability.validator = Some(Validator::new(any_object_is_valid, any_object_collect));
        capability
    }

    /// An action's effect (default [`ViewEffect::LocalState`]); ignored on
    /// an observation.
    pub fn effect(mut self, effect: ViewEffect) -> Self {
        if let ViewKind::Action(meta) = &mut self.kind {
            meta.effect = effect;
        }
        self
    }

    /// Whether repeating the action changes nothing more (default `false`);
    /// ignored on an observation.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        if let ViewKind::Action(meta) = &mut self.kind {
            meta.idempotent = idempotent;
        }
        self
    }

    /// Whether the user can undo the action (default `true`); ignored on an
    /// observation.
    pub fn reversible(mut self, reversible: bool) -> Self {
        if let ViewKind::Action(meta) = &mut self.kind {
            meta.reversible = reversible;
        }
        self
    }

    /// The action's local confirmation level (default `never`): `required`
    /// makes every call wait for the user's approval (`docs/pipeline.md`,
    /// "Local confirmation"); ignored on an observation.
    pub fn confirmation(mut self, level: ConfirmationLevel) -> Self {
        if let ViewKind::Action(meta) = &mut self.kind {
            meta.confirmation = level;
        }
        self
    }

    /// The JSON Schema of the action's output, shown in the snapshot
    /// (`outputSchema`); ignored on an observation (whose schema is given
    /// at construction).
    pub fn output_schema(mut self, schema: Value) -> Self {
        if let ViewKind::Action(meta) = &mut self.kind {
            meta.output_schema = Some(Arc::new(schema));
        }
        self
    }

    availability_builders!("capability");

    /// Whether this is an observation (else an action).
    pub fn is_observation(&self) -> bool {
        matches!(self.kind, ViewKind::Observation { .. })
    }

    /// The capability name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input JSON Schema.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }
}

/// A component instance to register: type (`"devices.table"`), instance id
/// (`"main"`) and its view capabilities.
#[derive(Debug)]
pub struct ComponentDefinition {
    pub(crate) component_type: String,
    pub(crate) instance_id: String,
    pub(crate) description: Option<String>,
    pub(crate) capabilities: Vec<ViewCapability>,
    pub(crate) concurrency_group: Option<std::sync::Arc<str>>,
    pub(crate) priority: i32,
}

impl ComponentDefinition {
    /// A component of `component_type` with instance id `instance_id`.
    pub fn new(component_type: impl Into<String>, instance_id: impl Into<String>) -> Self {
        Self {
            component_type: component_type.into(),
            instance_id: instance_id.into(),
            description: None,
            capabilities: Vec::new(),
            concurrency_group: None,
            priority: 0,
        }
    }

    /// Runs the calls of this instance's view capabilities — and of the
    /// bindings registered with `.context(&this)` that name no group of
    /// their own — one at a time within concurrency group `name`
    /// (`docs/pipeline.md`, "Concurrency groups"). Give each instance its
    /// own name (for example `"devices.table/main"`) to serialize calls
    /// per instance, or one name to several to serialize them together.
    pub fn concurrency_group(mut self, name: impl Into<String>) -> Self {
        self.concurrency_group = Some(std::sync::Arc::from(name.into()));
        self
    }

    /// Where this component's view capabilities rank when a snapshot's
    /// budget cannot list every capability (higher first, default 0).
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Adds a view capability.
    pub fn capability(mut self, capability: ViewCapability) -> Self {
        self.capabilities.push(capability);
        self
    }

    /// A description of the component for the snapshot.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}
