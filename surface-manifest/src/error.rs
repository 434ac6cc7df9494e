//! Why a manifest is refused: [`ManifestError`] (JSON, path or
//! capability-id rules), [`ManifestIssue`] (one rule broken) and
//! [`UnsafeSegment`] (why a segment cannot become a Rust identifier).

/// Why a manifest was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ManifestError {
    /// The text is not JSON, or not of the manifest's shape (a missing
    /// `inputSchema`, an unknown `effect` value, …). `line` and `column` are
    /// 1-based, as serde_json reports them.
    #[error("invalid manifest JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description, without the position.
        message: String,
    },
    /// The JSON is well-formed but its paths break the path rules
    /// ([`crate::naming`]) or its `capabilityId` overrides the
    /// capability-id rules ([`crate::model`]); every problem is listed, not
    /// only the first.
    #[error("invalid manifest: {}", join_issues(.0))]
    Invalid(Vec<ManifestIssue>),
}

fn join_issues(issues: &[ManifestIssue]) -> String {
    issues
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One rule a manifest path breaks: a path rule ([`crate::naming`]) or a
/// capability-id rule (its `capabilityId` override, [`crate::model`]).
/// Each message names the path and says how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestIssue {
    /// The same path appears twice in `tools`.
    #[error("procedure path `{path}` appears more than once in `tools`; keep one entry per path")]
    DuplicatePath {
        /// The repeated path.
        path: String,
    },
    /// The path is empty or has an empty segment (`a..b`, `.a`, `a.`).
    #[error("procedure path `{path}` has an empty segment; paths are dot-separated non-empty segments like `devices.disable`")]
    EmptySegment {
        /// The offending path.
        path: String,
    },
    /// A segment cannot become a Rust identifier, or is a JavaScript
    /// prototype name.
    #[error("procedure path `{path}` has an unsafe segment `{segment}`: {reason}")]
    UnsafeSegment {
        /// The offending path.
        path: String,
        /// The offending segment.
        segment: String,
        /// Why it is unsafe.
        reason: UnsafeSegment,
    },
    /// `path` is a procedure and also a prefix of `other` (`a.b` and
    /// `a.b.c`): one name would be both a procedure and a namespace.
    #[error("procedure path `{path}` is a prefix of `{other}`: a path cannot be both a procedure and a namespace of procedures")]
    PrefixConflict {
        /// The shorter path.
        path: String,
        /// The longer path it prefixes.
        other: String,
    },
    /// Two different paths map to the same Rust identifiers.
    #[error("procedure paths `{path}` and `{other}` both map to the Rust path `{rust_path}`; rename one of them in the router")]
    IdentCollision {
        /// One path.
        path: String,
        /// The other path.
        other: String,
        /// The shared Rust path (`devices::list_all`).
        rust_path: String,
    },
    /// Two paths have one canonical capability id (two equal
    /// `capabilityId` overrides, or an override equal to another path's
    /// override): an agent host would merge two operations under one tool.
    #[error("procedure paths `{path}` and `{other}` share the capability id `{capability_id}`; give `{other}` a `capabilityId` of its own (or remove the override)")]
    SharedCapabilityId {
        /// The first path (in path order) with the id.
        path: String,
        /// Another path with the same id.
        other: String,
        /// The shared canonical capability id.
        capability_id: String,
    },
    /// `path`'s `capabilityId` override is `domain:<other>`, the default id
    /// of another procedure of the manifest.
    #[error("procedure path `{path}` has the `capabilityId` `{capability_id}`, which is the id of procedure `{other}`; choose an id that names no other procedure (or remove the override: the default is `domain:{path}`)")]
    CapabilityIdOfAnotherPath {
        /// The path whose override it is.
        path: String,
        /// The path the override names.
        other: String,
        /// The override.
        capability_id: String,
    },
    /// `path`'s `capabilityId` override starts with `view:`, the prefix of
    /// the view capabilities of components.
    #[error("procedure path `{path}` has the `capabilityId` `{capability_id}`, but `view:` ids belong to the view capabilities of components; choose an id without the `view:` prefix (or remove the override: the default is `domain:{path}`)")]
    ViewCapabilityId {
        /// The path whose override it is.
        path: String,
        /// The override.
        capability_id: String,
    },
}

impl ManifestIssue {
    /// The path the issue is about.
    pub fn path(&self) -> &str {
        match self {
            ManifestIssue::DuplicatePath { path }
            | ManifestIssue::EmptySegment { path }
            | ManifestIssue::UnsafeSegment { path, .. }
            | ManifestIssue::PrefixConflict { path, .. }
            | ManifestIssue::IdentCollision { path, .. }
            | ManifestIssue::SharedCapabilityId { path, .. }
            | ManifestIssue::CapabilityIdOfAnotherPath { path, .. }
            | ManifestIssue::ViewCapabilityId { path, .. } => path,
        }
    }
}

/// Why a path segment cannot be mapped to a Rust identifier
/// ([`crate::segment_to_ident`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum UnsafeSegment {
    /// `__proto__`, `prototype` or `constructor`.
    #[error("`__proto__`, `prototype` and `constructor` are reserved JavaScript prototype names")]
    PrototypeName,
    /// The segment is empty.
    #[error("the segment is empty")]
    Empty,
    /// The first character is not an ASCII letter or `_`.
    #[error("a segment must start with an ASCII letter or `_`")]
    BadStart,
    /// A character outside `[A-Za-z0-9_-]`.
    #[error("a segment may contain only ASCII letters, digits, `_` and `-`")]
    BadCharacter,
    /// The snake_case mapping is empty.
    #[error("the segment maps to an empty Rust identifier")]
    MapsToEmpty,
    /// The snake_case mapping starts with a digit.
    #[error("the segment maps to a Rust identifier that starts with a digit")]
    MapsToDigit,
    /// The mapping is `_`, which is not an identifier.
    #[error("`_` is not a Rust identifier")]
    Underscore,
}
