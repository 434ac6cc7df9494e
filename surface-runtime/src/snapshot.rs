//! The snapshot: the agent's tool catalog at one surface version (SPEC §6,
//! seed 000 `AgentProcedureDescriptor`). Serialized in camelCase.
//!
//! A snapshot is a consistent cut: every descriptor in it belongs to the
//! registration set of `surfaceVersion`, and availability was evaluated
//! against that set. Bound *values* never appear — only binding metadata
//! (`boundFields`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::confirmation::ConfirmationLevel;
use crate::manifest::AgentEffect;

/// The catalog one consumer sees.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceSnapshot {
    /// Increases on every registration change and every availability change.
    pub surface_version: u64,
    /// Live component instances with their view capabilities (empty for
    /// headless consumers).
    pub components: Vec<ComponentDescriptor>,
    /// One descriptor per live procedure reference, top level (never nested
    /// in components).
    pub procedures: Vec<AgentProcedureDescriptor>,
}

impl SurfaceSnapshot {
    /// The procedure descriptor with this registration id.
    pub fn procedure(&self, registration_id: &str) -> Option<&AgentProcedureDescriptor> {
        self.procedures
            .iter()
            .find(|p| p.registration_id == registration_id)
    }

    /// All descriptors of one procedure id (`domain:…`).
    pub fn procedures_for<'a>(
        &'a self,
        procedure_id: &'a str,
    ) -> impl Iterator<Item = &'a AgentProcedureDescriptor> + 'a {
        self.procedures
            .iter()
            .filter(move |p| p.procedure_id == procedure_id)
    }
}

/// The component a registration belongs to: `{"type", "instanceId"}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentContext {
    /// Component type (`"devices.table"`).
    #[serde(rename = "type")]
    pub component_type: String,
    /// Instance id chosen by the app (`"main"`).
    pub instance_id: String,
}

/// A live component instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentDescriptor {
    /// Component type.
    #[serde(rename = "type")]
    pub component_type: String,
    /// Instance id.
    pub instance_id: String,
    /// Registration id of the instance.
    pub registration_id: String,
    /// Optional description of the component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its view capabilities.
    pub capabilities: Vec<ViewCapabilityDescriptor>,
}

/// A view capability (local action of a component).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewCapabilityDescriptor {
    /// `"view:" + type + "." + name`.
    pub capability_id: String,
    /// Capability name (`"select"`).
    pub name: String,
    /// Model-facing description.
    pub description: String,
    /// Input JSON Schema (derived with schemars).
    pub input_schema: Arc<Value>,
    /// Whether `when()` holds.
    pub available: bool,
    /// Why not, when unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
}

/// Where a bound value comes from. Only `"ui-state"` today.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BindingSource {
    /// Live UI state read by `bind()` at execution time.
    UiState,
}

/// Binding metadata of one top-level input field (never its value).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundFieldDescriptor {
    /// Property name in the input schema.
    pub path: String,
    /// Locked fields are absent from the agent schema; agent values for them
    /// are `INVALID_INPUT`.
    pub locked: bool,
    /// Always `ui-state`.
    pub source: BindingSource,
}

/// One live procedure reference (seed 000 `AgentProcedureDescriptor`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProcedureDescriptor {
    /// `"domain:" + path`.
    pub procedure_id: String,
    /// Canonical capability id when the manifest overrides it (SPEC §2);
    /// absent when equal to `procedureId`. Invocations may name either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_id: Option<String>,
    /// Manifest description, then the contextual `describe()` text.
    pub description: String,
    /// Agent-facing input schema: the manifest schema minus locked fields;
    /// overridable fields annotated (SPEC §5 rules 1 and 3).
    pub input_schema: Arc<Value>,
    /// Model-output schema, when the manifest declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// Effect class.
    pub effect: AgentEffect,
    /// max(effect floor, reference, static policy levels).
    pub confirmation: ConfirmationLevel,
    /// Whether `when()` holds.
    pub available: bool,
    /// Why not, when unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Binding metadata.
    pub bound_fields: Vec<BoundFieldDescriptor>,
    /// The registration that contributed this reference (staleness token;
    /// disambiguates two references to one procedure).
    pub registration_id: String,
    /// Owning component, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ComponentContext>,
    /// App metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Arc<Map<String, Value>>>,
}
