//! How the agent host verifies an announced snapshot against a known build
//! artifact: every procedure descriptor must be what the build's manifest
//! and the binding rules produce, every view capability well-formed and
//! clear of manifest paths. The rules are the registry's own
//! ([`crate::binding`], [`crate::component`], [`crate::snapshot`]), so the
//! host accepts exactly what a registry of that build can announce.

use std::collections::BTreeSet;

use super::error::{ArtifactMismatch, HostError};
use crate::authority::Authority;
use crate::binding::{reduced_input_schema, unknown_bound_field};
use crate::component::{colliding_path, view_capability_id};
use crate::confirmation::ConfirmationLevel;
use crate::manifest::AgentManifest;
use crate::snapshot::{
    AgentProcedureDescriptor, ComponentDescriptor, SurfaceSnapshot, ViewCapabilityDescriptor,
};

/// A build artifact the host trusts (the host compares announcements with
/// known build artifacts): the app and build ids it was published under
/// and the compiler-generated [`Authority`] of that build (its manifest and
/// [`Authority::digest`]). Announcements naming an unknown `(appId,
/// buildId)` are refused, and every announced procedure is checked against
/// this authority's manifest — a browser-supplied build id, schema or hash
/// grants nothing.
#[derive(Clone, Debug)]
pub struct KnownBuild {
    /// Application id.
    pub app_id: String,
    /// Build id.
    pub build_id: String,
    /// The authority the build was compiled with.
    pub authority: Authority,
    /// When `Some`, the only view capability ids this build may announce.
    pub view_capabilities: Option<BTreeSet<String>>,
}

impl KnownBuild {
    /// A known build that may announce any `view:` capability.
    pub fn new(
        app_id: impl Into<String>,
        build_id: impl Into<String>,
        authority: Authority,
    ) -> Self {
        Self {
            app_id: app_id.into(),
            build_id: build_id.into(),
            authority,
            view_capabilities: None,
        }
    }

    /// Restricts the view capabilities the build may announce.
    pub fn with_view_capabilities<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.view_capabilities = Some(ids.into_iter().map(Into::into).collect());
        self
    }

    /// The build artifact identity: the authority's manifest digest.
    pub fn digest(&self) -> &str {
        self.authority.digest()
    }
}

/// Verifies an announced snapshot against a known build artifact; the
/// first failed check.
pub(super) fn verify_snapshot(
    build: &KnownBuild,
    snapshot: &SurfaceSnapshot,
) -> Result<(), HostError> {
    let manifest = build.authority.manifest();
    for p in &snapshot.procedures {
        verify_procedure(manifest, p).map_err(|mismatch| HostError::ArtifactMismatch {
            capability_id: p.procedure_id.clone(),
            mismatch,
        })?;
    }
    for c in &snapshot.components {
        for capability in c.capabilities() {
            verify_view(build, manifest, c, &capability).map_err(|mismatch| {
                HostError::ArtifactMismatch {
                    capability_id: capability.capability_id().to_string(),
                    mismatch,
                }
            })?;
        }
    }
    Ok(())
}

/// A procedure descriptor is the manifest's entry under the binding rules.
fn verify_procedure(
    manifest: &AgentManifest,
    p: &AgentProcedureDescriptor,
) -> Result<(), ArtifactMismatch> {
    let path = p
        .procedure_id
        .strip_prefix("domain:")
        .ok_or(ArtifactMismatch::ProcedureIdShape)?;
    let tool = manifest
        .tools
        .get(path)
        .ok_or_else(|| ArtifactMismatch::NotInManifest { path: path.into() })?;
    if p.effect != tool.effect {
        return Err(ArtifactMismatch::Effect {
            announced: p.effect,
            manifest: tool.effect,
        });
    }
    if p.output_schema.as_deref() != tool.output_schema.as_ref() {
        return Err(ArtifactMismatch::OutputSchema);
    }
    let floor = ConfirmationLevel::floor(tool.effect);
    if p.confirmation < floor {
        return Err(ArtifactMismatch::ConfirmationBelowFloor {
            announced: p.confirmation,
            floor,
            effect: tool.effect,
        });
    }
    if !appends_to_manifest(&p.description, &tool.description) {
        return Err(ArtifactMismatch::Description);
    }
    if p.requires_approval != tool.requires_approval {
        return Err(ArtifactMismatch::RequiresApproval);
    }
    let bound = p.bound_fields.iter().map(|f| f.path.as_str());
    if let Some(field) = unknown_bound_field(&tool.input_schema, bound) {
        return Err(ArtifactMismatch::BoundField {
            field: field.into(),
        });
    }
    if *p.input_schema != reduced_input_schema(&tool.input_schema, &p.bound_fields) {
        return Err(ArtifactMismatch::InputSchema);
    }
    Ok(())
}

/// The separator agent-surface's registry puts between the manifest's
/// description and the contextual note when created with
/// `snapshotMergesContextualNote: true` (`${description} ${note}`, then
/// trimmed).
const MERGED_NOTE_SEPARATOR: char = ' ';

/// Whether an announced procedure description is the manifest's, or the
/// manifest's followed by [`MERGED_NOTE_SEPARATOR`] and any text (a page
/// that merges its contextual note into the description). Only appending:
/// text before, instead of or inside the manifest's is refused. With an
/// empty manifest description any text is an append (the original's trim
/// leaves the note alone then).
fn appends_to_manifest(announced: &str, manifest: &str) -> bool {
    manifest.is_empty()
        || announced
            .strip_prefix(manifest)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(MERGED_NOTE_SEPARATOR))
}

/// `snapshot` with every procedure's description set to its manifest's
/// (what [`verify_snapshot`] accepted may carry a merged contextual note,
/// which `contextualNote` carries anyway): the host shows the manifest's
/// text, so tool definitions stay cacheable and the note appears once.
pub(super) fn with_manifest_descriptions(
    build: &KnownBuild,
    snapshot: &SurfaceSnapshot,
) -> SurfaceSnapshot {
    let manifest = build.authority.manifest();
    let mut snapshot = snapshot.clone();
    for p in &mut snapshot.procedures {
        let tool = p
            .procedure_id
            .strip_prefix("domain:")
            .and_then(|path| manifest.tools.get(path));
        if let Some(tool) = tool {
            if p.description != tool.description {
                p.description.clone_from(&tool.description);
            }
        }
    }
    snapshot
}

/// A view capability has its `view:` id, names no manifest path, and is
/// declared when the build restricts its view capabilities.
fn verify_view(
    build: &KnownBuild,
    manifest: &AgentManifest,
    component: &ComponentDescriptor,
    capability: &ViewCapabilityDescriptor,
) -> Result<(), ArtifactMismatch> {
    let expected = view_capability_id(&component.component_type, capability.name());
    if capability.capability_id() != expected {
        return Err(ArtifactMismatch::ViewIdShape { expected });
    }
    if let Some(path) = colliding_path(manifest, &component.component_type, capability.name()) {
        return Err(ArtifactMismatch::ViewCollision { path });
    }
    if let Some(allowed) = &build.view_capabilities {
        if !allowed.contains(capability.capability_id()) {
            return Err(ArtifactMismatch::ViewNotDeclared);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::appends_to_manifest;

    #[test]
    fn an_announced_description_may_only_append_after_a_space() {
        let manifest = "Disable devices";
        for (announced, accepted) in [
            ("Disable devices", true),
            (
                "Disable devices Currently bound to 2 selected device(s).",
                true,
            ),
            ("Disable devices ", true),
            ("Disable devices\n\nCurrently bound", false),
            ("Disable devicesX", false),
            ("Disable device", false),
            (" Disable devices", false),
            ("Note: Disable devices", false),
            ("", false),
        ] {
            assert_eq!(
                appends_to_manifest(announced, manifest),
                accepted,
                "{announced:?}"
            );
        }
        // An empty manifest description: the original's merge is the note.
        assert!(appends_to_manifest("Currently bound", ""));
        assert!(appends_to_manifest("", ""));
    }
}
