//! The agent manifest: which backend procedures an agent may see, with
//! their JSON Schemas and effects.
//!
//! The model, its validation and its digests live in the `surface-manifest`
//! crate, which the `manifest!` macro builds without the runtime; this
//! module re-exports what the runtime's users need, so
//! `surface_runtime::manifest::AgentManifest` and
//! `surface_manifest::AgentManifest` are the same type.
//! [`create_orpc_agent_manifest`] maps a capability gateway's `describe`
//! ([`CapabilityDescriptor`], version 1) to a manifest (`docs/bridges.md`,
//! "Governed bridge"). The identifier
//! mapping and keyword tables the code generator uses stay in
//! `surface-manifest` (`surface_manifest::naming`). The format and its rules
//! are described in `docs/manifest.md`.

pub use surface_manifest::{
    canonical_capability_id, canonical_json, create_orpc_agent_manifest, procedure_digest,
    validate_paths, AgentEffect, AgentManifest, CapabilityDescriptor, DescriptorVersion,
    ManifestDraft, ManifestError, ManifestIssue, ManifestTool, SideEffect, ToolNames,
    UnsafeSegment, CAPABILITY_DESCRIPTOR_VERSION,
};
