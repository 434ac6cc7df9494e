//! The capability descriptors of orpc-agent's capability gateway (what its
//! `describe` returns, descriptor version 1) and their mapping to a
//! manifest ([`create_orpc_agent_manifest`]; `docs/bridges.md`, "Governed
//! bridge").

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::{ManifestError, ManifestIssue, UnsafeSegment};
use crate::model::{AgentEffect, AgentManifest, ManifestDraft, ManifestTool};

/// The only descriptor version this crate reads (`"version": 1`).
pub const CAPABILITY_DESCRIPTOR_VERSION: u64 = 1;

/// One capability as the gateway's `describe` returns it (descriptor
/// version 1), field by field as recorded from orpc-agent's gateway:
///
/// ```json
/// {"version": 1, "id": "devices.purge", "path": ["devices", "purge"],
///  "description": "Permanently purge the given devices",
///  "inputSchema": {"type": "object", …}, "sideEffect": "destructive",
///  "risk": "critical", "tags": ["devices"], "discovery": "discoverable",
///  "requiresApproval": true,
///  "toolNames": {"aiSdk": "devices_purge", "mcp": "devices_purge"},
///  "contractDigest": "f34196f5…"}
/// ```
///
/// A descriptor carries no output schema. `requiresApproval` is omitted
/// when false. Unknown fields are ignored; a `version` other than 1, a
/// missing field or a `sideEffect` outside the five values fails
/// deserialization with serde's message naming the field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityDescriptor {
    /// Always [`CAPABILITY_DESCRIPTOR_VERSION`].
    pub version: DescriptorVersion,
    /// The capability id the gateway's `invoke` takes (the dotted path by
    /// default, never `domain:`-prefixed).
    pub id: String,
    /// The router path, one segment per element (`["devices", "purge"]`).
    pub path: Vec<String>,
    /// Model-facing description.
    pub description: String,
    /// JSON Schema of the input, as the gateway validates it.
    pub input_schema: Value,
    /// What calling it does.
    pub side_effect: SideEffect,
    /// The gateway's risk level (`low`, `medium`, `high`, `critical`; kept
    /// as text).
    pub risk: String,
    /// The gateway's tags.
    pub tags: Vec<String>,
    /// How the capability is discovered (`discoverable`; kept as text).
    pub discovery: String,
    /// Whether the gateway asks for an approval before running it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_approval: bool,
    /// The tool names the gateway's adapters use.
    pub tool_names: ToolNames,
    /// Lowercase hex SHA-256 of the capability's contract, opaque: sent
    /// back unchanged on `invoke` and `resumeApproval` (never prefixed).
    pub contract_digest: String,
}

impl CapabilityDescriptor {
    /// The manifest key: the path's segments joined with `.`.
    pub fn dotted_path(&self) -> String {
        self.path.join(".")
    }
}

/// The descriptor version, which must be 1 (a `u64` on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DescriptorVersion;

impl Serialize for DescriptorVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(CAPABILITY_DESCRIPTOR_VERSION)
    }
}

impl<'de> Deserialize<'de> for DescriptorVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let version = u64::deserialize(deserializer)?;
        if version == CAPABILITY_DESCRIPTOR_VERSION {
            Ok(DescriptorVersion)
        } else {
            Err(serde::de::Error::custom(format_args!(
                "capability descriptor version {version} is not supported; this reader knows version {CAPABILITY_DESCRIPTOR_VERSION}"
            )))
        }
    }
}

/// `toolNames` of a descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolNames {
    /// The AI SDK adapter's tool name (`devices_purge`).
    #[serde(rename = "aiSdk")]
    pub ai_sdk: String,
    /// The MCP adapter's tool name.
    pub mcp: String,
}

/// The gateway's side-effect vocabulary (`sideEffect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SideEffect {
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

impl SideEffect {
    /// The wire name (`"write"`).
    pub fn as_str(self) -> &'static str {
        match self {
            SideEffect::None => "none",
            SideEffect::Read => "read",
            SideEffect::Write => "write",
            SideEffect::External => "external",
            SideEffect::Destructive => "destructive",
        }
    }
}

impl fmt::Display for SideEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<SideEffect> for AgentEffect {
    fn from(effect: SideEffect) -> Self {
        match effect {
            SideEffect::None | SideEffect::Read => AgentEffect::ServerQuery,
            SideEffect::Write => AgentEffect::ServerMutation,
            SideEffect::External => AgentEffect::ExternalSideEffect,
            SideEffect::Destructive => AgentEffect::Destructive,
        }
    }
}

/// Maps the gateway's descriptors to a manifest: the tool key is the
/// dotted `path`; `description` and `inputSchema` are copied; `effect`
/// from `sideEffect` (`none`/`read` → `server-query`, `write` →
/// `server-mutation`, `external` → `external-side-effect`, `destructive`
/// → `destructive`); `requiresApproval` kept (written only when true);
/// `capabilityId` is the descriptor's `id`; `contractDigest` exactly as
/// given. No output schema: descriptors have none.
///
/// # Errors
/// [`ManifestError::Invalid`] when two descriptors share a path
/// ([`ManifestIssue::DuplicatePath`], once per repetition), a path segment
/// contains a `.` ([`ManifestIssue::UnsafeSegment`] with
/// [`UnsafeSegment::BadCharacter`]: the dotted key would name another
/// path), the paths break the path rules ([`crate::naming`]) or the
/// descriptors' ids break the capability-id rules
/// ([`crate::model::validate_capability_ids`]: two descriptors with one
/// `id` are [`ManifestIssue::SharedCapabilityId`]).
pub fn create_orpc_agent_manifest(
    descriptors: impl IntoIterator<Item = CapabilityDescriptor>,
) -> Result<AgentManifest, ManifestError> {
    let mut tools = BTreeMap::new();
    let mut duplicates = Vec::new();
    let mut dotted_segments = Vec::new();
    for d in descriptors {
        let path = d.dotted_path();
        for segment in d.path.iter().filter(|s| s.contains('.')) {
            dotted_segments.push(ManifestIssue::UnsafeSegment {
                path: path.clone(),
                segment: segment.clone(),
                reason: UnsafeSegment::BadCharacter,
            });
        }
        if tools.contains_key(&path) {
            duplicates.push(path);
            continue;
        }
        tools.insert(
            path,
            ManifestTool {
                description: d.description,
                input_schema: d.input_schema,
                output_schema: None,
                effect: d.side_effect.into(),
                requires_approval: d.requires_approval,
                capability_id: Some(d.id),
                contract_digest: Some(d.contract_digest),
            },
        );
    }
    if !dotted_segments.is_empty() {
        return Err(ManifestError::Invalid(dotted_segments));
    }
    ManifestDraft::from_parts(tools, duplicates).validate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ManifestIssue;
    use serde_json::json;

    const DESCRIBE: &str =
        include_str!("../../tests/fixtures/originals/session-governed/governed.describe.json");
    const MANIFEST: &str =
        include_str!("../../tests/fixtures/originals/session-governed/governed.manifest.json");

    fn descriptor(path: &[&str], side_effect: &str) -> Value {
        json!({
            "version": 1, "id": path.join("."), "path": path, "description": "d",
            "inputSchema": {"type": "object"}, "sideEffect": side_effect, "risk": "low",
            "tags": [], "discovery": "discoverable",
            "toolNames": {"aiSdk": path.join("_"), "mcp": path.join("_")},
            "contractDigest": "ab12"
        })
    }

    #[test]
    fn recorded_describe_maps_to_the_recorded_manifest() {
        let descriptors: Vec<CapabilityDescriptor> = serde_json::from_str(DESCRIBE).unwrap();
        let manifest = create_orpc_agent_manifest(descriptors.clone()).unwrap();
        let expected: Value = serde_json::from_str(MANIFEST).unwrap();
        assert_eq!(serde_json::to_value(&manifest).unwrap(), expected);
        // And the descriptors read back to the recorded JSON, field by field.
        let written = serde_json::to_value(&descriptors).unwrap();
        assert_eq!(written, serde_json::from_str::<Value>(DESCRIBE).unwrap());
    }

    #[test]
    fn every_side_effect_maps_to_its_effect() {
        let cases = [
            ("none", AgentEffect::ServerQuery),
            ("read", AgentEffect::ServerQuery),
            ("write", AgentEffect::ServerMutation),
            ("external", AgentEffect::ExternalSideEffect),
            ("destructive", AgentEffect::Destructive),
        ];
        for (side_effect, effect) in cases {
            let d: CapabilityDescriptor =
                serde_json::from_value(descriptor(&["a", side_effect], side_effect)).unwrap();
            assert_eq!(d.side_effect.as_str(), side_effect);
            let m = create_orpc_agent_manifest([d]).unwrap();
            let tool = &m.tools[&format!("a.{side_effect}")];
            assert_eq!(tool.effect, effect, "{side_effect}");
            assert!(!tool.requires_approval);
            assert_eq!(tool.contract_digest.as_deref(), Some("ab12"));
        }
    }

    #[test]
    fn version_other_than_one_and_unknown_side_effects_are_refused_by_name() {
        let mut v2 = descriptor(&["a", "b"], "read");
        v2["version"] = json!(2);
        let err = serde_json::from_value::<CapabilityDescriptor>(v2)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "capability descriptor version 2 is not supported; this reader knows version 1"
        );
        let err = serde_json::from_value::<CapabilityDescriptor>(descriptor(&["a"], "delete"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("unknown variant `delete`"), "{err}");
        let mut missing = descriptor(&["a"], "read");
        missing.as_object_mut().unwrap().remove("contractDigest");
        let err = serde_json::from_value::<CapabilityDescriptor>(missing)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "missing field `contractDigest`");
    }

    #[test]
    fn duplicates_and_dotted_segments_are_refused() {
        let d: CapabilityDescriptor =
            serde_json::from_value(descriptor(&["a", "b"], "read")).unwrap();
        let err = create_orpc_agent_manifest([d.clone(), d]).unwrap_err();
        assert_eq!(
            err,
            ManifestError::Invalid(vec![ManifestIssue::DuplicatePath { path: "a.b".into() }])
        );
        let dotted: CapabilityDescriptor =
            serde_json::from_value(descriptor(&["a.b", "c"], "read")).unwrap();
        assert_eq!(
            create_orpc_agent_manifest([dotted]).unwrap_err(),
            ManifestError::Invalid(vec![ManifestIssue::UnsafeSegment {
                path: "a.b.c".into(),
                segment: "a.b".into(),
                reason: UnsafeSegment::BadCharacter,
            }])
        );
    }

    #[test]
    fn two_descriptors_with_one_id_are_refused() {
        let list: CapabilityDescriptor =
            serde_json::from_value(descriptor(&["devices", "list"], "read")).unwrap();
        let mut again = serde_json::to_value(&list).unwrap();
        again["path"] = json!(["devices", "listAll"]);
        let again: CapabilityDescriptor = serde_json::from_value(again).unwrap();
        assert_eq!(
            create_orpc_agent_manifest([list, again]).unwrap_err(),
            ManifestError::Invalid(vec![ManifestIssue::SharedCapabilityId {
                path: "devices.list".into(),
                other: "devices.listAll".into(),
                capability_id: "devices.list".into(),
            }])
        );
    }
}
