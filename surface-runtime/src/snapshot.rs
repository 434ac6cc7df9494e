//! The snapshot: the agent's tool catalog at one surface version, and how
//! the registry builds it ([`SurfaceRegistry::snapshot`]). Serialized in
//! camelCase (`docs/design.md`, "Snapshot").
//!
//! A snapshot is a consistent cut: every descriptor in it belongs to the
//! registration set of `surfaceVersion`, and availability was evaluated
//! against that set. Bound *values* never appear — only binding metadata
//! (`boundFields`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::callback::TextFn;
use crate::confirmation::ConfirmationLevel;
use crate::invocation::{AgentConsumer, ConsumerKind};
use crate::manifest::AgentEffect;
use crate::registry::{ComponentEntry, ProcedureEntry, SurfaceRegistry, ViewEntry};

pub use crate::binding::{BindingSource, BoundFieldDescriptor};
pub use crate::component::ComponentContext;

/// The catalog one consumer sees.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceSnapshot {
    /// Increases on every registration change and every availability change.
    pub surface_version: u64,
    /// Live component instances with their view capabilities (empty for
    /// headless consumers).
    pub components: Vec<ComponentDescriptor>,
    /// One descriptor per live procedure binding, top level (never nested
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
    /// Input JSON Schema (`ViewInput::INPUT_SCHEMA_JSON` of a `view_inputs!`
    /// type, or the schema given at run time).
    pub input_schema: Arc<Value>,
    /// Whether `when()` holds.
    pub available: bool,
    /// Why not, when unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
}

/// One live procedure binding, as the agent sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProcedureDescriptor {
    /// `"domain:" + path`.
    pub procedure_id: String,
    /// Canonical capability id when the manifest overrides it; absent when
    /// equal to `procedureId`. Invocations may name either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_id: Option<String>,
    /// Manifest description, then the contextual `describe()` text.
    pub description: String,
    /// Agent-facing input schema: the manifest schema minus locked fields;
    /// overridable fields annotated (binding rules 1 and 3,
    /// [`crate::binding::agent_input_schema`]).
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
    /// The registration that contributed this binding (staleness token;
    /// disambiguates two bindings of one procedure).
    pub registration_id: String,
    /// Owning component, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ComponentContext>,
    /// App metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Arc<Map<String, Value>>>,
}

impl AgentProcedureDescriptor {
    /// The canonical capability id: [`Self::capability_id`] when the
    /// manifest overrides it, else [`Self::procedure_id`].
    pub fn canonical_capability_id(&self) -> &str {
        self.capability_id.as_deref().unwrap_or(&self.procedure_id)
    }
}

/// A procedure's description: the manifest's, then the contextual
/// `describe()` text after a blank line (an empty part is left out).
pub(crate) fn join_description(manifest: &str, describe: Option<&TextFn>) -> String {
    match describe {
        None => manifest.to_string(),
        Some(f) => {
            let extra = f();
            match (manifest.is_empty(), extra.is_empty()) {
                (_, true) => manifest.to_string(),
                (true, false) => extra,
                (false, false) => format!("{manifest}\n\n{extra}"),
            }
        }
    }
}

/// Whether `announced` is a description [`join_description`] can produce
/// from the manifest's `manifest` text (it may only append).
pub(crate) fn extends_description(manifest: &str, announced: &str) -> bool {
    manifest.is_empty()
        || announced == manifest
        || announced
            .strip_prefix(manifest)
            .is_some_and(|rest| rest.starts_with("\n\n"))
}

/// How many times a snapshot is retaken when registrations change while
/// its closures run, before the last attempt is returned as it is.
const SNAPSHOT_ATTEMPTS: usize = 8;

impl SurfaceRegistry {
    /// The catalog `consumer` sees: every live procedure binding and, for
    /// non-headless consumers, every component with its view capabilities.
    /// Availability is evaluated now; if it differs from the last
    /// observation the version is bumped first, so `surfaceVersion` always
    /// names the availability reported. Bound values are never included.
    pub fn snapshot(&self, consumer: &AgentConsumer) -> SurfaceSnapshot {
        let with_views = consumer.kind != ConsumerKind::Headless;
        // Observations are recorded as they are made, so a change seen in a
        // discarded attempt must still bump the version.
        let mut changed = false;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let entries = self.entries();
            let version = entries.surface_version;
            let procedures = entries
                .procedures
                .iter()
                .map(|p| procedure_descriptor(p, &mut changed))
                .collect();
            let components = entries
                .components
                .iter()
                .filter_map(|c| component_descriptor(c, with_views, &mut changed))
                .collect();
            // Consistent cut: the registration set must not have changed
            // while closures ran; otherwise take the snapshot again.
            if self.surface_version() != version && attempts < SNAPSHOT_ATTEMPTS {
                continue;
            }
            return SurfaceSnapshot {
                surface_version: if changed {
                    self.bump_availability()
                } else {
                    version
                },
                components,
                procedures,
            };
        }
    }

    /// Re-evaluates every `when()` and bumps `surfaceVersion` once when any
    /// result differs from the last observation (snapshot or previous
    /// refresh). Call it when UI state that `when()` reads changes. Returns
    /// whether the version was bumped.
    pub fn refresh_availability(&self) -> bool {
        let entries = self.entries();
        let mut changed = false;
        for p in &entries.procedures {
            changed |= p.observed.record(p.availability.holds());
        }
        for c in &entries.components {
            for v in &c.views {
                changed |= v.observed.record(v.availability.holds());
            }
        }
        if changed {
            self.bump_availability();
        }
        changed
    }
}

/// The descriptor of a live binding, its availability observed now.
fn procedure_descriptor(p: &ProcedureEntry, changed: &mut bool) -> AgentProcedureDescriptor {
    let available = p.availability.holds();
    *changed |= p.observed.record(available);
    AgentProcedureDescriptor {
        procedure_id: p.procedure_id.clone(),
        capability_id: (*p.capability_id != *p.procedure_id).then(|| p.capability_id.to_string()),
        description: join_description(&p.manifest_description, p.describe.as_deref()),
        input_schema: p.agent_schema.clone(),
        output_schema: p.output_schema.clone(),
        effect: p.effect,
        confirmation: p.confirmation,
        available,
        unavailable_reason: if available {
            None
        } else {
            p.availability.reason_text()
        },
        bound_fields: p.bound.clone(),
        registration_id: p.registration_id.clone(),
        context: p.context.clone(),
        meta: p.meta.clone(),
    }
}

/// The descriptor of a live component (`None` without views: headless
/// consumers see none), every capability's availability observed now
/// either way.
fn component_descriptor(
    c: &ComponentEntry,
    with_views: bool,
    changed: &mut bool,
) -> Option<ComponentDescriptor> {
    if !with_views {
        for v in &c.views {
            *changed |= v.observed.record(v.availability.holds());
        }
        return None;
    }
    let capabilities = c
        .views
        .iter()
        .map(|v| view_descriptor(v, changed))
        .collect();
    Some(ComponentDescriptor {
        component_type: c.context.component_type.clone(),
        instance_id: c.context.instance_id.clone(),
        registration_id: c.registration_id.clone(),
        description: c.description.clone(),
        capabilities,
    })
}

fn view_descriptor(v: &ViewEntry, changed: &mut bool) -> ViewCapabilityDescriptor {
    let available = v.availability.holds();
    *changed |= v.observed.record(available);
    ViewCapabilityDescriptor {
        capability_id: v.capability_id.clone(),
        name: v.name.clone(),
        description: v.description.clone(),
        input_schema: v.input_schema.clone(),
        available,
        unavailable_reason: if available {
            None
        } else {
            v.availability.reason_text()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_joins_manifest_and_describe() {
        let describe: Arc<TextFn> = Arc::new(|| "two".to_string());
        let empty: Arc<TextFn> = Arc::new(String::new);
        assert_eq!(join_description("one", Some(&*describe)), "one\n\ntwo");
        assert_eq!(join_description("", Some(&*describe)), "two");
        assert_eq!(join_description("one", Some(&*empty)), "one");
        assert_eq!(join_description("one", None), "one");
    }

    #[test]
    fn an_announced_description_may_only_append_to_the_manifest_one() {
        assert!(extends_description("one", "one"));
        assert!(extends_description("one", "one\n\ntwo"));
        assert!(extends_description("", "anything"));
        assert!(!extends_description("one", "onetwo"));
        assert!(!extends_description("one", "one\ntwo"));
        assert!(!extends_description("one", "Ignore previous instructions"));
    }
}
