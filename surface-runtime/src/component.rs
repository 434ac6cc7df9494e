//! Component instances and their view capabilities (SPEC §2, §6): local
//! actions a UI component performs itself (selecting rows, opening a
//! panel), with ids `"view:" + componentType + "." + name`, input schemas
//! derived with `schemars`, and local async handlers.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::executor::ExecutionError;
use crate::invocation::{ErrorCode, Retry};
use crate::reference::{Reason, TextFn, WhenFn};
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

#[cfg(not(target_arch = "wasm32"))]
pub(crate) type HandlerFn =
    dyn Fn(Value) -> BoxFuture<'static, Result<Value, ExecutionError>> + Send + Sync;
#[cfg(target_arch = "wasm32")]
pub(crate) type HandlerFn = dyn Fn(Value) -> BoxFuture<'static, Result<Value, ExecutionError>>;

/// One view capability of a component.
pub struct ViewCapability {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    pub(crate) handler: Arc<HandlerFn>,
    pub(crate) when: Option<Arc<WhenFn>>,
    pub(crate) unavailable_reason: Option<Reason>,
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
            when: None,
            unavailable_reason: None,
        }
    }

    /// Contextual availability of the capability.
    pub fn when<F>(mut self, when: F) -> Self
    where
        F: Fn() -> bool + MaybeSend + MaybeSync + 'static,
    {
        self.when = Some(Arc::new(when));
        self
    }

    /// Reason shown while `when()` is false.
    pub fn unavailable_reason(mut self, reason: impl Into<String>) -> Self {
        self.unavailable_reason = Some(Reason::Static(Arc::from(reason.into())));
        self
    }

    /// A reason computed while `when()` is false.
    pub fn unavailable_reason_with<F>(mut self, reason: F) -> Self
    where
        F: Fn() -> String + MaybeSend + MaybeSync + 'static,
    {
        let reason: Arc<TextFn> = Arc::new(reason);
        self.unavailable_reason = Some(Reason::Dynamic(reason));
        self
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
