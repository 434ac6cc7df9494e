//! The agent manifest: which backend procedures an agent may see, with their
//! JSON Schemas and effects — and the one validation, naming and digest
//! code shared by the `manifest!` macro (at compile time) and the runtime
//! (for fetched manifests).
//!
//! ```
//! use surface_manifest::{AgentEffect, AgentManifest};
//!
//! let manifest = AgentManifest::from_json_str(
//!     r#"{"tools":{"devices.listAll":{"inputSchema":{"type":"object"},"effect":"server-query"}}}"#,
//! )
//! .unwrap();
//! assert_eq!(manifest.tools["devices.listAll"].effect, AgentEffect::ServerQuery);
//! assert_eq!(surface_manifest::path_to_rust("devices.listAll").unwrap(), ["devices", "list_all"]);
//! assert_eq!(manifest.digest().len(), 64);
//! ```
//!
//! | module | rules |
//! |---|---|
//! | [`model`] | the manifest's JSON shape ([`AgentManifest`], [`ManifestTool`], [`AgentEffect`]); duplicate paths found in the text; the manifest and per-procedure digests, canonical capability ids and their rules ([`validate_capability_ids`]) |
//! | [`naming`] | path segment → Rust identifier, the path rules (prefix conflicts, collisions), nearest-path suggestions, the keyword tables |
//! | [`digest`] | canonical JSON and its SHA-256 digest |
//! | [`portable`] | the capability gateway's descriptors (version 1) → a manifest |
//! | [`schema`] | the typed view of JSON Schema: [`schema::Pointer`], the one `$ref` resolver, the keyword table, the subschema visitor |
//! | [`error`] | [`ManifestError`], [`ManifestIssue`], [`UnsafeSegment`] |
//!
//! The user-facing description of the format and its rules is the "The
//! agent manifest" section of `docs/codegen.md`.
//!
//! This crate depends only on serde, serde_json, sha2, hex, heck, strsim,
//! percent-encoding and thiserror, because the proc-macro crate builds it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod digest;
pub mod error;
pub mod model;
pub mod naming;
pub mod portable;
pub mod schema;

pub use digest::{canonical_json, sha256_hex};
pub use error::{ManifestError, ManifestIssue, UnsafeSegment};
pub use model::{
    canonical_capability_id, procedure_digest, validate_capability_ids, AgentEffect, AgentManifest,
    ManifestDraft, ManifestTool,
};
pub use naming::{
    nearest_paths, path_to_rust, segment_to_ident, validate_paths, NON_RAW_KEYWORDS,
    PROTOTYPE_SEGMENTS, RUST_KEYWORDS,
};
pub use portable::{
    create_orpc_agent_manifest, CapabilityDescriptor, DescriptorVersion, SideEffect, ToolNames,
    CAPABILITY_DESCRIPTOR_VERSION,
};
