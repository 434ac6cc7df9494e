//! The surface contract: the canonical, diff-friendly record of what an
//! application exposes to agents (`docs/drift.md`, "The drift gate").
//!
//! [`SurfaceContract::from_registry`] reads every live registration of a
//! [`SurfaceRegistry`] — whatever its `when()` says now — and the manifest
//! of its authority; [`SurfaceContract::from_manifest`] reads a manifest
//! alone. [`SurfaceContract::to_json`] writes it as canonical JSON (keys
//! sorted, arrays sorted by id, two-space indentation, a final newline), so
//! the same registrations always give the same bytes: no surface id,
//! registration id, surface version or timestamp is part of it.
//!
//! The `agent-surface` command (`surface-cli`) snapshots contracts and
//! compares two of them: a change that widens what an agent may do fails
//! the check.
//!
//! ```
//! use surface_runtime::contract::SurfaceContract;
//! use surface_runtime::*;
//!
//! let authority = Authority::from_manifest(AgentManifest::from_json_str(r#"{"tools":{
//!   "devices.list":{"description":"List devices","inputSchema":{"type":"object"},"effect":"server-query"}}}"#).unwrap());
//! let registry = SurfaceRegistry::new(authority.clone());
//! let list: AgentProcedureRef<serde_json::Value, serde_json::Value> =
//!     AgentProcedureRef::from_authority(&authority, "devices.list").unwrap();
//! let _handle = registry
//!     .register_procedure(AgentProcedureBinding::new(list).when(|| false))
//!     .unwrap();
//! let contract = SurfaceContract::from_registry(&registry);
//! assert_eq!(contract.procedures[0].id, "domain:devices.list");
//! let text = contract.to_json();
//! assert_eq!(SurfaceContract::from_json_str(&text).unwrap(), contract);
//! ```

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::component::ViewEffect;
use crate::component::ViewKind;
use crate::confirmation::ConfirmationLevel;
use crate::manifest::{canonical_json, AgentEffect, AgentManifest};
use crate::policy::{AgentPolicy, Discovery};
use crate::registry::{ComponentEntry, ProcedureEntry, SurfaceRegistry, ViewEntry};

/// The contract format this crate writes and reads (`"contractVersion"`).
pub const CONTRACT_VERSION: u32 = 1;

/// The largest contract text [`SurfaceContract::from_json_str`] accepts:
/// 16 MiB.
pub const MAX_CONTRACT_BYTES: usize = 16 * 1024 * 1024;

/// What an application exposes to agents, in canonical order.
///
/// JSON shape (camelCase): `{"contractVersion": 1, "manifest": {…} | null,
/// "policies": [name…], "procedures": [ProcedureContract…], "views":
/// [ViewContract…]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceContract {
    /// Always [`CONTRACT_VERSION`].
    pub contract_version: u32,
    /// The manifest's procedures (the ceiling), when known.
    #[serde(default)]
    pub manifest: Option<ManifestContract>,
    /// Registry-wide policy names (`AgentPolicy::name`), sorted, unique.
    #[serde(default)]
    pub policies: Vec<String>,
    /// Every live procedure binding, sorted by id.
    #[serde(default)]
    pub procedures: Vec<ProcedureContract>,
    /// Every view capability of every live component, sorted by id.
    #[serde(default)]
    pub views: Vec<ViewContract>,
}

/// The manifest part of a contract.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestContract {
    /// The manifest's digest (`AgentManifest::digest`).
    pub digest: String,
    /// Its procedures, sorted by id.
    pub procedures: Vec<ManifestProcedureContract>,
}

/// One manifest procedure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestProcedureContract {
    /// `"domain:" + path`.
    pub id: String,
    /// Dotted router path.
    pub path: String,
    /// The canonical capability id.
    pub capability_id: String,
    /// The manifest's description.
    #[serde(default)]
    pub description: String,
    /// The effect class.
    pub effect: AgentEffect,
    /// The manifest's `requiresApproval`.
    #[serde(default)]
    pub requires_approval: bool,
    /// The full input schema.
    pub input_schema: Value,
    /// [`schema_hash`] of `input_schema`.
    pub input_schema_hash: String,
    /// The procedure digest (`procedure_digest`).
    pub digest: String,
    /// The backend contract digest the manifest names, if any.
    #[serde(default)]
    pub contract_digest: Option<String>,
}

/// One live procedure binding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcedureContract {
    /// The procedure id (`"domain:" + path`).
    pub id: String,
    /// Dotted router path.
    pub path: String,
    /// The canonical capability id.
    pub capability_id: String,
    /// The owning component's type, if the binding names one.
    #[serde(default)]
    pub component: Option<String>,
    /// The manifest's description.
    #[serde(default)]
    pub description: String,
    /// The effect class.
    pub effect: AgentEffect,
    /// The manifest's `requiresApproval`.
    #[serde(default)]
    pub requires_approval: bool,
    /// The effective static confirmation level (effect floor, the
    /// binding's level and its policies' levels).
    pub confirmation: ConfirmationLevel,
    /// The bound fields, sorted by path.
    #[serde(default)]
    pub bound_fields: Vec<BoundFieldContract>,
    /// The binding's own policy names, sorted, unique.
    #[serde(default)]
    pub policies: Vec<String>,
    /// The agent-facing input schema (bound locked fields removed).
    pub input_schema: Value,
    /// [`schema_hash`] of `input_schema`.
    pub input_schema_hash: String,
}

/// One bound top-level input field.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundFieldContract {
    /// The property name.
    pub path: String,
    /// Whether the agent can neither see nor set it.
    pub locked: bool,
}

/// Whether a view capability reads or acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViewCapabilityKind {
    /// Read-only.
    Observation,
    /// Changes the component's state or the route.
    Action,
}

/// A view capability's effect: `read` for observations, the action's
/// `local-state` or `navigation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViewContractEffect {
    /// An observation.
    Read,
    /// Changes the component's local state.
    LocalState,
    /// Changes the page's route.
    Navigation,
}

/// One view capability of a live component.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewContract {
    /// The capability id (`"view:<componentType>.<name>"`).
    pub id: String,
    /// The component type.
    pub component: String,
    /// Observation or action.
    pub kind: ViewCapabilityKind,
    /// The capability's description.
    #[serde(default)]
    pub description: String,
    /// Its effect.
    pub effect: ViewContractEffect,
    /// Its static confirmation level (`never` for observations), raised
    /// by the static levels of registry-wide policies.
    pub confirmation: ConfirmationLevel,
    /// The agent-facing input schema.
    pub input_schema: Value,
    /// [`schema_hash`] of `input_schema`.
    pub input_schema_hash: String,
}

/// Why a contract text was refused.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// Larger than [`MAX_CONTRACT_BYTES`].
    #[error("the contract is {0} bytes; the limit is {MAX_CONTRACT_BYTES} bytes")]
    TooLarge(usize),
    /// Not JSON, or not the contract's shape.
    #[error("not a surface contract: {0}")]
    Json(#[from] serde_json::Error),
    /// `contractVersion` missing or not [`CONTRACT_VERSION`].
    #[error(
        "unsupported contractVersion {0} (this tool reads contractVersion {CONTRACT_VERSION})"
    )]
    Version(String),
}

/// Lowercase hex SHA-256 of a schema's canonical JSON.
pub fn schema_hash(schema: &Value) -> String {
    surface_manifest::sha256_hex(canonical_json(schema).as_bytes())
}

impl SurfaceContract {
    /// An empty contract (no manifest, no registrations).
    pub fn empty() -> Self {
        Self {
            contract_version: CONTRACT_VERSION,
            manifest: None,
            policies: Vec::new(),
            procedures: Vec::new(),
            views: Vec::new(),
        }
    }

    /// The contract of a manifest alone: its procedures, no bindings.
    pub fn from_manifest(manifest: &AgentManifest) -> Self {
        Self {
            manifest: Some(manifest_contract(manifest)),
            ..Self::empty()
        }
    }

    /// The contract of `registry`: every live registration (available or
    /// not), the registry-wide policies and its authority's manifest.
    pub fn from_registry(registry: &SurfaceRegistry) -> Self {
        let entries = registry.entries();
        let policies = &registry.settings().policies;
        // Registry-wide policies apply to view capabilities too (phase 4).
        let floor = policies
            .iter()
            .map(|p| p.confirmation())
            .fold(ConfirmationLevel::Never, Ord::max);
        let mut contract = Self {
            manifest: Some(manifest_contract(registry.authority().manifest())),
            policies: policies.iter().map(|p| policy_label(&**p)).collect(),
            procedures: entries.procedures.iter().map(|p| procedure(p)).collect(),
            views: entries
                .components
                .iter()
                .flat_map(|c| views(c, floor))
                .collect(),
            ..Self::empty()
        };
        contract.normalize();
        contract
    }

    /// Sorts every list by id (then by content) and drops exact duplicate
    /// bound fields, so equal contracts serialize to equal bytes. Policy
    /// names keep their duplicates: two policies of one name are two
    /// policies, and removing one is a change.
    pub fn normalize(&mut self) {
        self.policies.sort();
        for p in &mut self.procedures {
            p.policies.sort();
            p.bound_fields.sort();
            p.bound_fields.dedup();
        }
        sort_by_id(&mut self.procedures, |p| &p.id);
        sort_by_id(&mut self.views, |v| &v.id);
        if let Some(manifest) = &mut self.manifest {
            sort_by_id(&mut manifest.procedures, |p| &p.id);
        }
    }

    /// The canonical JSON text: keys sorted, two-space indentation, one
    /// final newline.
    pub fn to_json(&self) -> String {
        let mut normalized = self.clone();
        normalized.normalize();
        let value = serde_json::to_value(&normalized).unwrap_or(Value::Null);
        to_sorted_pretty(&value)
    }

    /// Parses and normalizes a contract.
    ///
    /// # Errors
    /// [`ContractError::TooLarge`] over [`MAX_CONTRACT_BYTES`],
    /// [`ContractError::Version`] when `contractVersion` is not
    /// [`CONTRACT_VERSION`], [`ContractError::Json`] (with line and column)
    /// when the text is not JSON or not a contract.
    pub fn from_json_str(text: &str) -> Result<Self, ContractError> {
        if text.len() > MAX_CONTRACT_BYTES {
            return Err(ContractError::TooLarge(text.len()));
        }
        let value: Value = serde_json::from_str(text)?;
        match value.get("contractVersion") {
            Some(v) if v.as_u64() == Some(u64::from(CONTRACT_VERSION)) => {}
            Some(v) => return Err(ContractError::Version(v.to_string())),
            None => return Err(ContractError::Version("(missing)".into())),
        }
        // Parsed again from the text, so a shape error names its line.
        let mut contract: SurfaceContract = serde_json::from_str(text)?;
        contract.normalize();
        Ok(contract)
    }
}

fn sort_by_id<T: Serialize + PartialEq>(items: &mut Vec<T>, id: impl Fn(&T) -> &String) {
    items.sort_by_cached_key(|item| {
        let text =
            serde_json::to_value(item).map_or_else(|_| String::new(), |v| canonical_json(&v));
        (id(item).clone(), text)
    });
    items.dedup();
}

fn manifest_contract(manifest: &AgentManifest) -> ManifestContract {
    let procedures = manifest
        .tools
        .iter()
        .map(|(path, tool)| ManifestProcedureContract {
            id: format!("domain:{path}"),
            path: path.clone(),
            capability_id: manifest.capability_id(path).unwrap_or_default(),
            description: tool.description.clone(),
            effect: tool.effect,
            requires_approval: tool.requires_approval,
            input_schema: tool.input_schema.clone(),
            input_schema_hash: schema_hash(&tool.input_schema),
            digest: manifest.procedure_digest(path).unwrap_or_default(),
            contract_digest: tool.contract_digest.clone(),
        })
        .collect();
    ManifestContract {
        digest: manifest.digest(),
        procedures,
    }
}

fn procedure(entry: &ProcedureEntry) -> ProcedureContract {
    ProcedureContract {
        id: entry.procedure_id.clone(),
        path: entry.path.to_string(),
        capability_id: entry.capability_id.to_string(),
        component: entry.context.as_ref().map(|c| c.component_type.clone()),
        description: entry.manifest_description.clone(),
        effect: entry.effect,
        requires_approval: entry.requires_approval,
        confirmation: entry.confirmation,
        bound_fields: entry
            .bound
            .iter()
            .map(|b| BoundFieldContract {
                path: b.path.clone(),
                locked: b.locked,
            })
            .collect(),
        policies: entry.policies.iter().map(|p| policy_label(&**p)).collect(),
        input_schema: (*entry.agent_schema).clone(),
        input_schema_hash: schema_hash(&entry.agent_schema),
    }
}

fn views(component: &ComponentEntry, floor: ConfirmationLevel) -> Vec<ViewContract> {
    component
        .views
        .iter()
        .map(|v| view(&component.context.component_type, v, floor))
        .collect()
}

/// View capability `entry`; `floor` is the level registry-wide policies
/// declare.
fn view(component_type: &str, entry: &ViewEntry, floor: ConfirmationLevel) -> ViewContract {
    let (kind, effect, confirmation) = match &entry.kind {
        ViewKind::Observation { .. } => (
            ViewCapabilityKind::Observation,
            ViewContractEffect::Read,
            ConfirmationLevel::Never,
        ),
        ViewKind::Action(meta) => (
            ViewCapabilityKind::Action,
            match meta.effect {
                ViewEffect::LocalState => ViewContractEffect::LocalState,
                ViewEffect::Navigation => ViewContractEffect::Navigation,
            },
            meta.confirmation,
        ),
    };
    ViewContract {
        id: entry.capability_id.clone(),
        component: component_type.to_string(),
        kind,
        description: entry.description.clone(),
        effect,
        confirmation: confirmation.max(floor),
        input_schema: (*entry.input_schema).clone(),
        input_schema_hash: schema_hash(&entry.input_schema),
    }
}

/// `value` as pretty JSON with object keys in sorted order (byte order of
/// their UTF-8) whatever order the map kept them in, two-space
/// indentation and a final newline: the contract's text format.
pub fn to_sorted_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(value, 0, &mut out);
    out.push('\n');
    out
}

fn write_pretty(value: &Value, depth: usize, out: &mut String) {
    let indent = |out: &mut String, depth: usize| out.extend(std::iter::repeat_n("  ", depth));
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("{\n");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, depth + 1);
                let _ = write!(out, "{}: ", Value::String(key.clone()));
                write_pretty(&map[key], depth + 1, out);
            }
            out.push('\n');
            indent(out, depth);
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, depth + 1);
                write_pretty(item, depth + 1, out);
            }
            out.push('\n');
            indent(out, depth);
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// How the contract names a policy: its name, with ` [hides]` or
/// ` [discloses]` when it takes part in discovery
/// (`docs/pipeline.md`, "Policies at discovery"). A policy that stops
/// hiding is then one removed and one added: widening.
fn policy_label(policy: &dyn AgentPolicy) -> String {
    match policy.discovery() {
        Discovery::NotChecked => policy.name().to_string(),
        Discovery::Hide => format!("{} [hides]", policy.name()),
        Discovery::Disclose => format!("{} [discloses]", policy.name()),
    }
}
