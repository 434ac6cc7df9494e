//! The snapshot: the agent's tool catalog at one surface version, and how
//! the registry builds it ([`SurfaceRegistry::snapshot`]). Serialized in
//! camelCase exactly as agent-surface's TypeScript registry writes it
//! (`docs/design.md`, "Snapshot"; `docs/host.md`, "Messages"):
//!
//! ```json
//! {"surfaceId":"surf_…","surfaceVersion":"2","capturedAt":"2026-09-13T00:00:00.000Z",
//!  "components":[{"type":"devices.table","instanceId":"default","registrationId":"reg_1",
//!                 "description":"…","observations":[…],"actions":[…]}],
//!  "procedures":[{"procedureId":"domain:devices.disable","description":"…",
//!                 "contextualNote":"Currently bound to 2 selected device(s)",
//!                 "inputSchema":{…},"effect":"server-mutation","confirmation":"optional",
//!                 "available":true,"boundFields":[…],"registrationId":"reg_1"}]}
//! ```
//!
//! A snapshot is a consistent cut: every descriptor in it belongs to the
//! registration set of `surfaceVersion`, and availability was evaluated
//! against that set. Bound *values* never appear — only binding metadata
//! (`boundFields`). A procedure's `description` is the manifest's, stable
//! across snapshots; the contextual `describe()` text is `contextualNote`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::budget::SnapshotOptions;
use crate::budget::{within_budget, Rank};
use crate::callback::Availability;
use crate::clock::iso_8601;
use crate::component::{ViewEffect, ViewKind};
use crate::confirmation::ConfirmationLevel;
use crate::invocation::{AgentConsumer, ConsumerKind};
use crate::manifest::AgentEffect;
use crate::policy::{discover, AgentPolicy, PolicyContext, PolicyStage, Principal, Verdict};
use crate::registry::{ComponentEntry, Observed, ProcedureEntry, Registered, SurfaceRegistry};

pub use crate::binding::{BindingSource, BoundFieldDescriptor};
pub use crate::component::ComponentContext;

/// `surfaceVersion` on the wire: the registry's `u64` counter written as a
/// decimal string (`"4"`), as the original writes `String(version)`.
/// Reading accepts only the canonical form — ASCII digits, no sign, no
/// leading zero (but `"0"`), at most 20 digits, within `u64` — anything else
/// (a JSON number included) is an error naming the value's problem.
/// `#[serde(with = "surface_version")]` on a `u64`;
/// [`surface_version::option`] on an `Option<u64>`.
pub mod surface_version {
    use serde::{de, Deserialize, Deserializer, Serializer};

    /// Writes `version` as a decimal string.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(version: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(version)
    }

    /// Reads a canonical decimal string.
    ///
    /// # Errors
    /// Not a string, or not a canonical decimal `u64`.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        parse(&text).map_err(de::Error::custom)
    }

    /// `text` as a surface version.
    ///
    /// # Errors
    /// A message saying what is wrong (never echoing more than 20
    /// characters of `text`).
    pub fn parse(text: &str) -> Result<u64, String> {
        let canonical = !text.is_empty()
            && text.len() <= 20
            && text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'));
        match text.parse::<u64>() {
            Ok(version) if canonical => Ok(version),
            _ => {
                let shown: String = text
                    .chars()
                    .take(20)
                    .flat_map(char::escape_default)
                    .collect();
                Err(format!(
                    "surfaceVersion must be a decimal string such as \"4\" (digits, no sign or leading zero, at most 18446744073709551615), got \"{shown}\""
                ))
            }
        }
    }

    /// The same for `Option<u64>` (use with `default` and
    /// `skip_serializing_if = "Option::is_none"`).
    pub mod option {
        use serde::{Deserializer, Serializer};

        /// Writes `Some(version)` as a decimal string, `None` as `null`.
        ///
        /// # Errors
        /// The serializer's.
        pub fn serialize<S: Serializer>(
            version: &Option<u64>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            match version {
                Some(v) => super::serialize(v, serializer),
                None => serializer.serialize_none(),
            }
        }

        /// Reads a canonical decimal string (a present field).
        ///
        /// # Errors
        /// As [`super::deserialize`].
        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<u64>, D::Error> {
            super::deserialize(deserializer).map(Some)
        }
    }
}

/// The catalog one consumer sees (the original's `AgentSurfaceSnapshot`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceSnapshot {
    /// The registry's id ([`SurfaceRegistry::surface_id`]).
    pub surface_id: String,
    /// Increases on every registration change and every availability change
    /// (a decimal string on the wire).
    #[serde(with = "surface_version")]
    pub surface_version: u64,
    /// When the snapshot was taken: ISO 8601, UTC, milliseconds
    /// (`"2026-09-13T00:00:00.000Z"`).
    pub captured_at: String,
    /// The page's route, when the application reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<SurfaceRoute>,
    /// Live component instances with their observations and actions (empty
    /// for headless consumers).
    pub components: Vec<ComponentDescriptor>,
    /// One descriptor per live procedure binding, top level (never nested
    /// in components).
    pub procedures: Vec<AgentProcedureDescriptor>,
    /// Present when a budget left capabilities out:
    /// `{"droppedComponents": n, "droppedProcedures": m, "budget": b}`
    /// ([`SnapshotOptions::budget`]; a TypeScript page writes
    /// `droppedComponents` alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Map<String, Value>>,
    /// Present when a scope floor refused part of a requested scope
    /// (`{"prefixes": […]}`); set by the original's adapters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_rejected: Option<Map<String, Value>>,
}

/// The page's route: `{"path", "params"?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SurfaceRoute {
    /// The route path (`"/devices"`).
    pub path: String,
    /// Route parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<std::collections::BTreeMap<String, String>>,
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

    /// Whether `capability_id` is served by `registration_id` in this
    /// snapshot: a procedure's `procedureId`, or a component's observation
    /// or action.
    pub fn serves(&self, capability_id: &str, registration_id: &str) -> bool {
        self.procedures
            .iter()
            .any(|p| p.procedure_id == capability_id && p.registration_id == registration_id)
            || self.components.iter().any(|c| {
                c.registration_id == registration_id
                    && (c
                        .observations
                        .iter()
                        .any(|o| o.capability_id == capability_id)
                        || c.actions.iter().any(|a| a.capability_id == capability_id))
            })
    }
}

/// A live component instance: `{"type", "instanceId", "registrationId",
/// "description", "observations", "actions", "parent"?, "meta"?}`.
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
    /// Description of the component (`""` when the application gave none).
    #[serde(default)]
    pub description: String,
    /// Its read-only views of state (no input).
    pub observations: Vec<ObservationDescriptor>,
    /// Its local actions.
    pub actions: Vec<ActionDescriptor>,
    /// The enclosing component, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ComponentContext>,
    /// App metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ComponentDescriptor {
    /// Every observation, then every action, as one
    /// [`ViewCapabilityDescriptor`] each (cloned).
    pub fn capabilities(&self) -> impl Iterator<Item = ViewCapabilityDescriptor> + '_ {
        let observations = self
            .observations
            .iter()
            .cloned()
            .map(ViewCapabilityDescriptor::Observation);
        let actions = self
            .actions
            .iter()
            .cloned()
            .map(ViewCapabilityDescriptor::Action);
        observations.chain(actions)
    }

    /// The observation or action with this capability id.
    pub fn capability(&self, capability_id: &str) -> Option<ViewCapabilityDescriptor> {
        self.capabilities()
            .find(|c| c.capability_id() == capability_id)
    }
}

/// One view capability of a component, observation or action, for code
/// that treats both alike (tool catalogs, the agent host).
#[derive(Clone, Debug, PartialEq)]
pub enum ViewCapabilityDescriptor {
    /// A read-only observation (no input).
    Observation(ObservationDescriptor),
    /// A local action.
    Action(ActionDescriptor),
}

/// The input schema of an observation as a tool shows it: no input.
pub fn no_input_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
}

impl ViewCapabilityDescriptor {
    /// `"view:" + type + "." + name`.
    pub fn capability_id(&self) -> &str {
        match self {
            ViewCapabilityDescriptor::Observation(o) => &o.capability_id,
            ViewCapabilityDescriptor::Action(a) => &a.capability_id,
        }
    }

    /// The capability's name.
    pub fn name(&self) -> &str {
        match self {
            ViewCapabilityDescriptor::Observation(o) => &o.name,
            ViewCapabilityDescriptor::Action(a) => &a.name,
        }
    }

    /// Model-facing description.
    pub fn description(&self) -> &str {
        match self {
            ViewCapabilityDescriptor::Observation(o) => &o.description,
            ViewCapabilityDescriptor::Action(a) => &a.description,
        }
    }

    /// The input schema: an action's, [`no_input_schema`] for an
    /// observation.
    pub fn input_schema(&self) -> Arc<Value> {
        match self {
            ViewCapabilityDescriptor::Observation(_) => Arc::new(no_input_schema()),
            ViewCapabilityDescriptor::Action(a) => a.input_schema.clone(),
        }
    }

    /// The output schema: an observation's, an action's when declared.
    pub fn output_schema(&self) -> Option<&Arc<Value>> {
        match self {
            ViewCapabilityDescriptor::Observation(o) => Some(&o.output_schema),
            ViewCapabilityDescriptor::Action(a) => a.output_schema.as_ref(),
        }
    }

    /// Whether `when()` holds.
    pub fn available(&self) -> bool {
        match self {
            ViewCapabilityDescriptor::Observation(o) => o.available,
            ViewCapabilityDescriptor::Action(a) => a.available,
        }
    }

    /// Why not, when unavailable.
    pub fn unavailable_reason(&self) -> Option<&str> {
        match self {
            ViewCapabilityDescriptor::Observation(o) => o.unavailable_reason.as_deref(),
            ViewCapabilityDescriptor::Action(a) => a.unavailable_reason.as_deref(),
        }
    }

    /// The local confirmation level (`never` for an observation).
    pub fn confirmation(&self) -> ConfirmationLevel {
        match self {
            ViewCapabilityDescriptor::Observation(_) => ConfirmationLevel::Never,
            ViewCapabilityDescriptor::Action(a) => a.confirmation,
        }
    }

    /// Whether it is an observation (read-only).
    pub fn is_observation(&self) -> bool {
        matches!(self, ViewCapabilityDescriptor::Observation(_))
    }
}

/// An observation: a read-only view of a component's state, called with no
/// input. `{"capabilityId", "name", "description", "outputSchema",
/// "available", "unavailableReason"?, "meta"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservationDescriptor {
    /// `"view:" + type + "." + name`.
    pub capability_id: String,
    /// Observation name (`"readState"`).
    pub name: String,
    /// Model-facing description.
    pub description: String,
    /// JSON Schema of what it returns.
    pub output_schema: Arc<Value>,
    /// Whether `when()` holds.
    pub available: bool,
    /// Why not, when unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// App metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A local action of a component: `{"capabilityId", "name", "description",
/// "inputSchema", "outputSchema"?, "effect", "idempotent", "reversible",
/// "confirmation", "available", "unavailableReason"?, "meta"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionDescriptor {
    /// `"view:" + type + "." + name`.
    pub capability_id: String,
    /// Action name (`"selectRows"`).
    pub name: String,
    /// Model-facing description.
    pub description: String,
    /// Input JSON Schema (`ViewInput::INPUT_SCHEMA_JSON` of a `view_inputs!`
    /// type, or the schema given at run time).
    pub input_schema: Arc<Value>,
    /// JSON Schema of its output, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// `local-state` or `navigation`.
    pub effect: ViewEffect,
    /// Whether repeating it changes nothing more.
    pub idempotent: bool,
    /// Whether the user can undo it.
    pub reversible: bool,
    /// Local confirmation level.
    pub confirmation: ConfirmationLevel,
    /// Whether `when()` holds.
    pub available: bool,
    /// Why not, when unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// App metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One live procedure binding, as the agent sees it (the original's
/// `AgentProcedureDescriptor`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProcedureDescriptor {
    /// `"domain:" + path`: the id calls name.
    pub procedure_id: String,
    /// The manifest's description: stable across snapshots, so tool
    /// definitions built from it stay cacheable.
    pub description: String,
    /// This snapshot's contextual `describe()` text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contextual_note: Option<String>,
    /// Agent-facing input schema: the manifest schema minus locked fields;
    /// overridable fields annotated (binding rules 1 and 3,
    /// [`crate::binding::agent_input_schema`]).
    pub input_schema: Arc<Value>,
    /// Model-output schema, when the manifest declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// Effect class.
    pub effect: AgentEffect,
    /// `true` when the manifest says the server holds calls for its own
    /// approval (absent otherwise). A hint: it never forces a local
    /// confirmation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_approval: bool,
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
    /// The description a tool list shows the model: the manifest's, then
    /// the contextual note after a blank line (an empty part is left out).
    pub fn model_description(&self) -> String {
        join_description(&self.description, self.contextual_note.as_deref())
    }
}

/// The manifest's description, then the contextual text after a blank line
/// (an empty part is left out).
pub(crate) fn join_description(manifest: &str, note: Option<&str>) -> String {
    match note {
        None | Some("") => manifest.to_string(),
        Some(extra) if manifest.is_empty() => extra.to_string(),
        Some(extra) => format!("{manifest}\n\n{extra}"),
    }
}

/// How many times a snapshot is retaken when registrations change while
/// its closures run, before the last attempt is returned as it is.
const SNAPSHOT_ATTEMPTS: usize = 8;

impl SurfaceRegistry {
    /// The catalog `consumer` sees: every live procedure binding and, for
    /// non-headless consumers, every component with its observations and
    /// actions. Availability is evaluated now; if it differs from the last
    /// observation the version is bumped first, so `surfaceVersion` always
    /// names the availability reported. Bound values are never included.
    pub fn snapshot(&self, consumer: &AgentConsumer) -> SurfaceSnapshot {
        self.snapshot_with(consumer, &self.settings().snapshot)
    }

    /// [`Self::snapshot`], cut down as `options` say (a scope, a budget;
    /// `docs/pipeline.md`, "Large surfaces") instead of the registry's
    /// default options (`SurfaceRegistryBuilder::snapshot_options`).
    pub fn snapshot_with(
        &self,
        consumer: &AgentConsumer,
        options: &SnapshotOptions,
    ) -> SurfaceSnapshot {
        let with_views = consumer.kind != ConsumerKind::Headless;
        // Observations are recorded as they are made, so a change seen in a
        // discarded attempt must still bump the version.
        let mut changed = false;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let entries = self.entries();
            let version = entries.surface_version;
            let facts = Facts {
                consumer,
                principal: entries.principal.as_deref(),
                environment: self.environment(),
                now_ms: self.confirmations().now_ms(),
                policies: &self.settings().policies,
            };
            let procedures = entries
                .procedures
                .iter()
                .filter_map(|p| Some((p.priority, procedure_descriptor(p, &facts, &mut changed)?)))
                .collect();
            let components = entries
                .components
                .iter()
                .filter_map(|c| {
                    Some((
                        c.priority,
                        component_descriptor(c, with_views, &facts, &mut changed)?,
                    ))
                })
                .collect();
            let (procedures, components, truncated) = cut(procedures, components, options);
            // Consistent cut: the registration set must not have changed
            // while closures ran; otherwise take the snapshot again.
            if self.surface_version() != version && attempts < SNAPSHOT_ATTEMPTS {
                continue;
            }
            return SurfaceSnapshot {
                surface_id: self.surface_id().to_string(),
                surface_version: if changed {
                    self.bump_availability()
                } else {
                    version
                },
                captured_at: iso_8601(facts.now_ms),
                route: None,
                components,
                procedures,
                truncated,
                scope_rejected: None,
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

type Ranked<T> = Vec<(i32, T)>;

/// The descriptors, cut down by `options`, and the `truncated` marker
/// when the budget dropped any.
type Cut = (
    Vec<AgentProcedureDescriptor>,
    Vec<ComponentDescriptor>,
    Option<Map<String, Value>>,
);

/// The scope, then the budget, applied to the descriptors (with their
/// priorities).
fn cut(
    procedures: Ranked<AgentProcedureDescriptor>,
    components: Ranked<ComponentDescriptor>,
    options: &SnapshotOptions,
) -> Cut {
    let (procedures, components) = scoped(procedures, components, &options.scope);
    let Some(budget) = options.budget else {
        return (unranked(procedures), unranked(components), None);
    };
    let ranks: Vec<Rank> = procedures
        .iter()
        .map(|(priority, p)| Rank {
            priority: *priority,
            available: p.available,
            cost: 1,
        })
        .chain(components.iter().map(|(priority, c)| Rank {
            priority: *priority,
            available: c.actions.iter().any(|a| a.available)
                || c.observations.iter().any(|o| o.available),
            cost: c.observations.len() + c.actions.len(),
        }))
        .collect();
    let keep = within_budget(&ranks, budget);
    let (keep_procedures, keep_components) = keep.split_at(procedures.len());
    let (procedures, dropped_procedures) = kept(procedures, keep_procedures);
    let (components, dropped_components) = kept(components, keep_components);
    let truncated = (dropped_procedures + dropped_components > 0).then(|| {
        let mut marker = Map::new();
        marker.insert("droppedComponents".into(), Value::from(dropped_components));
        marker.insert("droppedProcedures".into(), Value::from(dropped_procedures));
        marker.insert("budget".into(), Value::from(budget));
        marker
    });
    (procedures, components, truncated)
}

/// The descriptors whose capability ids start with one of `scope`'s
/// prefixes (all when it is empty); a component keeps its capabilities in
/// scope and is left out when none is (a component without capabilities
/// is in no scope).
fn scoped(
    procedures: Ranked<AgentProcedureDescriptor>,
    components: Ranked<ComponentDescriptor>,
    scope: &[String],
) -> (
    Ranked<AgentProcedureDescriptor>,
    Ranked<ComponentDescriptor>,
) {
    if scope.is_empty() {
        return (procedures, components);
    }
    let in_scope = |id: &str| scope.iter().any(|prefix| id.starts_with(prefix.as_str()));
    let procedures = procedures
        .into_iter()
        .filter(|(_, p)| in_scope(&p.procedure_id))
        .collect();
    let components = components
        .into_iter()
        .filter_map(|(priority, mut c)| {
            c.observations.retain(|o| in_scope(&o.capability_id));
            c.actions.retain(|a| in_scope(&a.capability_id));
            let left = c.observations.len() + c.actions.len();
            (left > 0).then_some((priority, c))
        })
        .collect();
    (procedures, components)
}

fn unranked<T>(ranked: Ranked<T>) -> Vec<T> {
    ranked.into_iter().map(|(_, item)| item).collect()
}

/// The items `keep` marks, and how many were dropped.
fn kept<T>(ranked: Ranked<T>, keep: &[bool]) -> (Vec<T>, usize) {
    let total = ranked.len();
    let kept: Vec<T> = ranked
        .into_iter()
        .zip(keep)
        .filter(|(_, keep)| **keep)
        .map(|((_, item), _)| item)
        .collect();
    let dropped = total - kept.len();
    (kept, dropped)
}

/// What the discovery policies of one snapshot see.
struct Facts<'a> {
    consumer: &'a AgentConsumer,
    principal: Option<&'a Principal>,
    environment: Option<&'a str>,
    now_ms: u64,
    /// The registry-wide policies.
    policies: &'a [Arc<dyn AgentPolicy>],
}

impl Facts<'_> {
    /// The discovery verdict on one capability, registry-wide policies
    /// first, then `own`.
    fn verdict(
        &self,
        own: &[Arc<dyn AgentPolicy>],
        capability_id: &str,
        registration_id: &str,
        target: (Option<&str>, Option<AgentEffect>, Option<&ComponentContext>),
    ) -> Verdict {
        if self.policies.is_empty() && own.is_empty() {
            return Verdict::Shown;
        }
        let (path, effect, context) = target;
        let ctx = PolicyContext {
            invocation_id: "",
            capability_id,
            path,
            registration_id,
            effect,
            consumer: self.consumer,
            context,
            stage: PolicyStage::Discovery,
            principal: self.principal,
            environment: self.environment,
            now_ms: self.now_ms,
        };
        discover(self.policies.iter().chain(own), &ctx)
    }
}

/// `when()`'s availability and reason, then a disclosing policy's.
fn availability_with(
    availability: &Availability,
    verdict: Verdict,
    changed: &mut bool,
    observed: &Observed,
) -> (bool, Option<String>) {
    let holds = availability.holds();
    *changed |= observed.record(holds);
    match (holds, verdict) {
        (false, _) => (false, availability.reason_text()),
        (true, Verdict::Disclosed(reason)) => (false, Some(reason)),
        (true, _) => (true, None),
    }
}

impl SurfaceRegistry {
    /// The registrations serving `capability_id` that the discovery
    /// policies hide from `consumer` now, each with the name of the policy
    /// that hides it (none, without a lock or a policy call, while no
    /// policy takes part in discovery).
    pub(crate) fn hidden_registrations(
        &self,
        capability_id: &str,
        consumer: &AgentConsumer,
    ) -> Vec<(String, String)> {
        if !self.has_discovery_policies() {
            return Vec::new();
        }
        // Only the registrations serving the capability, read under the
        // lock; their policies run after it is released.
        let (serving, principal) = self.serving_now(capability_id);
        let facts = Facts {
            consumer,
            principal: principal.as_deref(),
            environment: self.environment(),
            now_ms: self.confirmations().now_ms(),
            policies: &self.settings().policies,
        };
        serving
            .iter()
            .filter_map(|target| {
                let path = match target {
                    Registered::Procedure(p) => Some(&*p.path),
                    Registered::View(..) => None,
                };
                let verdict = facts.verdict(
                    target.policies(),
                    target.capability_id(),
                    target.registration_id(),
                    (path, target.effect(), target.context()),
                );
                match verdict {
                    Verdict::Hidden(policy) => Some((target.registration_id().to_string(), policy)),
                    Verdict::Shown | Verdict::Disclosed(_) => None,
                }
            })
            .collect()
    }
}

/// The descriptor of a live binding, its availability observed now
/// (`None` when a policy hides it from this consumer).
fn procedure_descriptor(
    p: &ProcedureEntry,
    facts: &Facts<'_>,
    changed: &mut bool,
) -> Option<AgentProcedureDescriptor> {
    let verdict = facts.verdict(
        &p.policies,
        &p.capability_id,
        &p.registration_id,
        (Some(&p.path), Some(p.effect), p.context.as_ref()),
    );
    if matches!(verdict, Verdict::Hidden(_)) {
        *changed |= p.observed.record(p.availability.holds());
        return None;
    }
    let (available, unavailable_reason) =
        availability_with(&p.availability, verdict, changed, &p.observed);
    Some(AgentProcedureDescriptor {
        procedure_id: p.procedure_id.clone(),
        description: p.manifest_description.to_string(),
        contextual_note: p.describe.as_ref().map(|f| f()).filter(|t| !t.is_empty()),
        input_schema: p.agent_schema.clone(),
        output_schema: p.output_schema.clone(),
        effect: p.effect,
        requires_approval: p.requires_approval,
        confirmation: p.confirmation,
        available,
        unavailable_reason,
        bound_fields: p.bound.clone(),
        registration_id: p.registration_id.clone(),
        context: p.context.clone(),
        meta: p.meta.clone(),
    })
}

/// The descriptor of a live component (`None` without views: headless
/// consumers see none; `None` too when policies hide every capability it
/// has), every capability's availability observed now either way.
fn component_descriptor(
    c: &ComponentEntry,
    with_views: bool,
    facts: &Facts<'_>,
    changed: &mut bool,
) -> Option<ComponentDescriptor> {
    if !with_views {
        for v in &c.views {
            *changed |= v.observed.record(v.availability.holds());
        }
        return None;
    }
    let mut observations = Vec::new();
    let mut actions = Vec::new();
    for v in &c.views {
        let verdict = facts.verdict(
            &[],
            &v.capability_id,
            &c.registration_id,
            (None, None, Some(&c.context)),
        );
        if matches!(verdict, Verdict::Hidden(_)) {
            *changed |= v.observed.record(v.availability.holds());
            continue;
        }
        let (available, unavailable_reason) =
            availability_with(&v.availability, verdict, changed, &v.observed);
        match &v.kind {
            ViewKind::Observation { output_schema } => observations.push(ObservationDescriptor {
                capability_id: v.capability_id.clone(),
                name: v.name.clone(),
                description: v.description.clone(),
                output_schema: output_schema.clone(),
                available,
                unavailable_reason,
                meta: None,
            }),
            ViewKind::Action(action) => actions.push(ActionDescriptor {
                capability_id: v.capability_id.clone(),
                name: v.name.clone(),
                description: v.description.clone(),
                input_schema: v.input_schema.clone(),
                output_schema: action.output_schema.clone(),
                effect: action.effect,
                idempotent: action.idempotent,
                reversible: action.reversible,
                confirmation: action.confirmation,
                available,
                unavailable_reason,
                meta: None,
            }),
        }
    }
    if !c.views.is_empty() && observations.is_empty() && actions.is_empty() {
        return None;
    }
    Some(ComponentDescriptor {
        component_type: c.context.component_type.clone(),
        instance_id: c.context.instance_id.clone(),
        registration_id: c.registration_id.clone(),
        description: c.description.clone().unwrap_or_default(),
        observations,
        actions,
        parent: None,
        meta: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_joins_manifest_and_note() {
        assert_eq!(join_description("one", Some("two")), "one\n\ntwo");
        assert_eq!(join_description("", Some("two")), "two");
        assert_eq!(join_description("one", Some("")), "one");
        assert_eq!(join_description("one", None), "one");
    }

    #[test]
    fn surface_versions_are_canonical_decimal_strings() {
        for (text, version) in [("0", 0), ("2", 2), ("18446744073709551615", u64::MAX)] {
            assert_eq!(surface_version::parse(text), Ok(version), "{text}");
        }
        for text in [
            "",
            "02",
            "-1",
            "+1",
            " 1",
            "1.0",
            "1e3",
            "18446744073709551616",
            "٣",
        ] {
            let err = surface_version::parse(text).unwrap_err();
            assert!(
                err.starts_with("surfaceVersion must be a decimal string"),
                "{text}: {err}"
            );
        }
        let long = "9".repeat(1_000);
        let err = surface_version::parse(&long).unwrap_err();
        assert!(
            err.len() < 200,
            "the message quotes at most 20 characters: {err}"
        );
    }
}
