//! Component instances and their view capabilities (`docs/design.md`,
//! "Identity"): local actions a UI component performs itself (selecting rows, opening a
//! panel), with input schemas derived with `schemars` and local async
//! handlers.
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

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::callback::{availability_builders, Availability, HandlerFn};
use crate::executor::ExecutionError;
use crate::invocation::{ErrorCode, Retry};
use crate::manifest::AgentManifest;
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

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

/// One view capability of a component.
pub struct ViewCapability {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
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
    /// A capability named `name` whose input type `I` gives the schema
    /// (`schemars::schema_for!(I)`, JSON Schema 2020-12). The agent input is
    /// validated against that schema, then deserialized into `I` and passed
    /// to `handler`, whose output JSON is the call's output.
    ///
    /// ```ignore
    /// ViewCapability::new::<SelectInput, _, _>("select", "Select rows", |input: SelectInput| async move {
    ///     Ok(json!({"selected": input.ids.len()}))
    /// })
    /// ```
    pub fn new<I, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        I: DeserializeOwned + JsonSchema + 'static,
        F: Fn(I) -> Fut + MaybeSend + MaybeSync + 'static,
        Fut: Future<Output = Result<Value, ExecutionError>> + MaybeSend + 'static,
    {
        let schema = schemars::schema_for!(I).to_value();
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
    /// handler (for schemas not derived from a Rust type).
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
            input_schema,
            handler: Arc::new(move |input: Value| -> BoxFuture<'static, _> {
                Box::pin(handler(input))
            }),
            availability: Availability::default(),
        }
    }

    availability_builders!("capability");

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
}

impl ComponentDefinition {
    /// A component of `component_type` with instance id `instance_id`.
    pub fn new(component_type: impl Into<String>, instance_id: impl Into<String>) -> Self {
        Self {
            component_type: component_type.into(),
            instance_id: instance_id.into(),
            description: None,
            capabilities: Vec::new(),
        }
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
