//! The backend's portable capability descriptors (what a capability
//! client's `describe` returns) and their mapping to a manifest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ManifestError;
use crate::model::{AgentEffect, AgentManifest, ManifestDraft, ManifestTool};

/// A backend's portable capability descriptor: what the capability
/// client's `describe` returns and what [`create_orpc_agent_manifest`]
/// maps into a manifest.
///
/// Wire fields (camelCase): `path`, `description`, `inputSchema`,
/// `modelOutputSchema` (optional, the only output schema ever exposed),
/// `outputSchema` (optional, the ordinary RPC output, never exposed),
/// `effect` (`none`/`read`/`write`/`external`/`destructive`),
/// `requiresApproval`, `capabilityId`, `contractDigest`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PortableDescriptor {
    /// Dotted router path.
    pub path: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Full input JSON Schema.
    pub input_schema: Value,
    /// Explicitly declared model-output schema, the only output schema that
    /// reaches the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_output_schema: Option<Value>,
    /// The ordinary RPC output schema; read but never exposed to
    /// the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Portable effect.
    pub effect: PortableEffect,
    /// Server approval hint.
    #[serde(default)]
    pub requires_approval: bool,
    /// Canonical capability id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_id: Option<String>,
    /// Contract digest, sent back on governed calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

/// The backend's portable effect vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortableEffect {
    /// No effect → `server-query`.
    None,
    /// Read → `server-query`.
    Read,
    /// Write → `server-mutation`.
    Write,
    /// External → `external-side-effect`.
    External,
    /// Destructive → `destructive`.
    Destructive,
}

impl From<PortableEffect> for AgentEffect {
    fn from(effect: PortableEffect) -> Self {
        match effect {
            PortableEffect::None | PortableEffect::Read => AgentEffect::ServerQuery,
            PortableEffect::Write => AgentEffect::ServerMutation,
            PortableEffect::External => AgentEffect::ExternalSideEffect,
            PortableEffect::Destructive => AgentEffect::Destructive,
        }
    }
}

/// Maps the backend's portable descriptors to a manifest: effects per
/// [`PortableEffect`], schemas copied, `capabilityId` and `contractDigest`
/// kept, `outputSchema` set only from `modelOutputSchema`.
///
/// # Errors
/// [`ManifestError::Invalid`] when two descriptors share a path
/// ([`crate::ManifestIssue::DuplicatePath`], once per repetition) or the
/// paths break the path rules ([`crate::naming`]).
pub fn create_orpc_agent_manifest(
    descriptors: impl IntoIterator<Item = PortableDescriptor>,
) -> Result<AgentManifest, ManifestError> {
    let mut tools = BTreeMap::new();
    let mut duplicates = Vec::new();
    for d in descriptors {
        if tools.contains_key(&d.path) {
            duplicates.push(d.path);
            continue;
        }
        tools.insert(
            d.path,
            ManifestTool {
                description: d.description,
                input_schema: d.input_schema,
                output_schema: d.model_output_schema,
                effect: d.effect.into(),
                requires_approval: d.requires_approval,
                capability_id: d.capability_id,
                contract_digest: d.contract_digest,
            },
        );
    }
    ManifestDraft::from_parts(tools, duplicates).validate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ManifestIssue;
    use serde_json::json;

    #[test]
    fn portable_descriptors_map_to_manifest() {
        let descriptors: Vec<PortableDescriptor> = serde_json::from_value(json!([
            {"path": "devices.list", "description": "List", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}, "effect": "read"},
            {"path": "devices.ping", "inputSchema": {}, "effect": "none"},
            {"path": "devices.disable", "inputSchema": {}, "effect": "write", "requiresApproval": true, "capabilityId": "devices.disable@v1", "contractDigest": "sha256:1"},
            {"path": "mail.send", "inputSchema": {}, "effect": "external", "modelOutputSchema": {"type": "string"}},
            {"path": "devices.purge", "inputSchema": {}, "effect": "destructive"}
        ])).unwrap();
        let m = create_orpc_agent_manifest(descriptors).unwrap();
        assert_eq!(m.tools["devices.list"].effect, AgentEffect::ServerQuery);
        assert_eq!(m.tools["devices.list"].output_schema, None);
        assert_eq!(m.tools["devices.ping"].effect, AgentEffect::ServerQuery);
        assert_eq!(
            m.tools["devices.disable"].effect,
            AgentEffect::ServerMutation
        );
        assert!(m.tools["devices.disable"].requires_approval);
        assert_eq!(
            m.tools["devices.disable"].capability_id.as_deref(),
            Some("devices.disable@v1")
        );
        assert_eq!(
            m.tools["devices.disable"].contract_digest.as_deref(),
            Some("sha256:1")
        );
        assert_eq!(m.tools["mail.send"].effect, AgentEffect::ExternalSideEffect);
        assert_eq!(
            m.tools["mail.send"].output_schema,
            Some(json!({"type": "string"}))
        );
        assert_eq!(m.tools["devices.purge"].effect, AgentEffect::Destructive);
    }

    #[test]
    fn portable_duplicates_rejected() {
        let d: PortableDescriptor =
            serde_json::from_value(json!({"path": "a.b", "inputSchema": {}, "effect": "read"}))
                .unwrap();
        let err = create_orpc_agent_manifest([d.clone(), d]).unwrap_err();
        assert_eq!(
            err,
            ManifestError::Invalid(vec![ManifestIssue::DuplicatePath { path: "a.b".into() }])
        );
    }
}
