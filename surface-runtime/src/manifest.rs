//! The agent manifest (`docs/manifest.md`): which backend procedures an agent may see,
//! with their JSON Schemas and effects, and the one validation shared by the
//! `manifest!` macro (at compile time) and the runtime (for fetched
//! manifests).
//!
//! # Segment → identifier mapping
//!
//! Each dotted segment of a procedure path becomes one Rust module (and the
//! last one also a function) by [`segment_to_ident`]:
//!
//! 1. the segment must match `[A-Za-z_][A-Za-z0-9_-]*` and must not be one of
//!    the JavaScript prototype names `__proto__`, `prototype`, `constructor`;
//! 2. `-` becomes `_`, then the segment is converted to snake_case
//!    (`listAll` → `list_all`, `HTTPStatus` → `http_status`, `v2` → `v2`);
//! 3. a Rust keyword becomes a raw identifier (`type` → `r#type`,
//!    `match` → `r#match`);
//! 4. `self`, `super`, `crate` and `Self` cannot be raw identifiers and get a
//!    trailing underscore (`self` → `self_`);
//! 5. a segment whose mapping is empty or starts with a digit is unsafe.
//!
//! Two paths whose segments map to the same identifiers (`devices.listAll`
//! and `devices.list_all`) are rejected as [`ManifestIssue::IdentCollision`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The effect class of a procedure (`docs/manifest.md`, "Effects"), which sets the confirmation
/// floor (pipeline phase 6) and the staleness rule (pipeline phase 2).
///
/// Serialized as `"server-query"`, `"server-mutation"`,
/// `"external-side-effect"`, `"destructive"`; any other value is rejected
/// when a manifest is parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentEffect {
    /// Reads server state; confirmation floor `never`.
    ServerQuery,
    /// Changes server state; confirmation floor `optional`.
    ServerMutation,
    /// Has an effect outside the server (mail, payment); floor `required`,
    /// and a surface-version mismatch makes the call stale.
    ExternalSideEffect,
    /// Destroys data; floor `required`, and a surface-version mismatch makes
    /// the call stale.
    Destructive,
}

impl AgentEffect {
    /// The wire name (`"server-query"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AgentEffect::ServerQuery => "server-query",
            AgentEffect::ServerMutation => "server-mutation",
            AgentEffect::ExternalSideEffect => "external-side-effect",
            AgentEffect::Destructive => "destructive",
        }
    }

    /// Whether a surface-version mismatch makes a call stale (pipeline
    /// phase 2, `docs/pipeline.md`): destructive and external-side-effect procedures.
    pub fn requires_current_surface(self) -> bool {
        matches!(
            self,
            AgentEffect::Destructive | AgentEffect::ExternalSideEffect
        )
    }
}

impl fmt::Display for AgentEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One procedure of a manifest, `manifest.tools[path]` (`docs/manifest.md`, "Shape").
///
/// Field names on the wire are camelCase: `description`, `inputSchema`,
/// `outputSchema`, `effect`, `requiresApproval`, `capabilityId`,
/// `contractDigest`. Unknown fields are ignored (forward compatibility).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestTool {
    /// Human/model-facing description.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the full procedure input (as the server validates it).
    pub input_schema: Value,
    /// JSON Schema of the model-visible output, only when the backend
    /// explicitly declared one; absent means the output is opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Effect class.
    pub effect: AgentEffect,
    /// Server hint that the backend will ask for its own approval; it does
    /// not by itself force a local confirmation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_approval: bool,
    /// Canonical capability id override (`docs/bindings.md`, "Identity"); `None` means
    /// `"domain:" + path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_id: Option<String>,
    /// Digest of the backend's contract, sent back on governed calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

/// A validated agent manifest: `{"tools": {"<dot.path>": ManifestTool}}`.
///
/// Every value of this type has passed [`validate_paths`]: deserializing it
/// with serde (any format) runs the same checks as
/// [`AgentManifest::from_json_str`], and fails on duplicate paths, prefix
/// conflicts, unsafe segments and identifier collisions. Paths are kept in
/// sorted order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawManifest")]
pub struct AgentManifest {
    /// Procedures by dotted router path (`"devices.disable"`).
    pub tools: BTreeMap<String, ManifestTool>,
}

/// The manifest as read, before validation; duplicate keys are recorded
/// instead of silently dropped (serde_json keeps the last of two equal keys).
#[derive(Deserialize)]
struct RawManifest {
    tools: RawTools,
}

struct RawTools {
    tools: BTreeMap<String, ManifestTool>,
    duplicates: Vec<String>,
}

impl<'de> Deserialize<'de> for RawTools {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ToolsVisitor;
        impl<'de> Visitor<'de> for ToolsVisitor {
            type Value = RawTools;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object mapping procedure paths to tool descriptions")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawTools, A::Error> {
                let mut tools = BTreeMap::new();
                let mut duplicates = Duplicates::default();
                while let Some(key) = map.next_key::<String>()? {
                    let tool: ManifestTool = map.next_value()?;
                    match tools.entry(key) {
                        std::collections::btree_map::Entry::Occupied(entry) => {
                            duplicates.record(entry.key());
                        }
                        std::collections::btree_map::Entry::Vacant(entry) => {
                            entry.insert(tool);
                        }
                    }
                }
                Ok(RawTools {
                    tools,
                    duplicates: duplicates.in_order,
                })
            }
        }
        deserializer.deserialize_map(ToolsVisitor)
    }
}

/// The paths seen more than once, each listed once in the order of its
/// first repetition. Membership is a set lookup, so `n` repeated paths cost
/// O(n log n) comparisons, not the O(n²) of scanning the list.
#[derive(Default)]
struct Duplicates {
    in_order: Vec<String>,
    seen: std::collections::BTreeSet<CountedPath>,
}

impl Duplicates {
    fn record(&mut self, path: &str) {
        if self.seen.insert(CountedPath(path.to_string())) {
            self.in_order.push(path.to_string());
        }
    }
}

/// A path in the duplicate set; its comparisons are counted in tests
/// (`probe`), which is how the linear-time rule is checked without timing.
#[derive(PartialEq, Eq)]
struct CountedPath(String);

impl Ord for CountedPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        #[cfg(test)]
        probe::count_comparison();
        self.0.cmp(&other.0)
    }
}

impl PartialOrd for CountedPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Test-only counter of the comparisons duplicate detection makes.
#[cfg(test)]
pub(crate) mod probe {
    use std::cell::Cell;

    thread_local! {
        static COMPARISONS: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn count_comparison() {
        COMPARISONS.with(|c| c.set(c.get() + 1));
    }

    /// Resets the counter and returns its previous value.
    pub(crate) fn take() -> u64 {
        COMPARISONS.with(|c| c.replace(0))
    }
}

impl TryFrom<RawManifest> for AgentManifest {
    type Error = ManifestError;
    fn try_from(raw: RawManifest) -> Result<Self, ManifestError> {
        let mut issues: Vec<ManifestIssue> = raw
            .tools
            .duplicates
            .into_iter()
            .map(|path| ManifestIssue::DuplicatePath { path })
            .collect();
        issues.extend(validate_paths(raw.tools.tools.keys().map(String::as_str)));
        if issues.is_empty() {
            Ok(AgentManifest {
                tools: raw.tools.tools,
            })
        } else {
            Err(ManifestError::Invalid(issues))
        }
    }
}

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
    /// (`docs/manifest.md`, "Path rules"); every problem is
    /// listed, not only the first.
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

/// One path rule (`docs/manifest.md`, "Path rules") that a manifest path breaks. Each message names the
/// path and says how to fix it.
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
        reason: &'static str,
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
}

impl ManifestIssue {
    /// The path the issue is about.
    pub fn path(&self) -> &str {
        match self {
            ManifestIssue::DuplicatePath { path }
            | ManifestIssue::EmptySegment { path }
            | ManifestIssue::UnsafeSegment { path, .. }
            | ManifestIssue::PrefixConflict { path, .. }
            | ManifestIssue::IdentCollision { path, .. } => path,
        }
    }
}

impl AgentManifest {
    /// Parses and validates a manifest from JSON text (`docs/manifest.md`).
    ///
    /// # Errors
    /// [`ManifestError::Json`] with a 1-based line and column when the text
    /// is not JSON or not of the manifest's shape (including an unknown
    /// `effect`); [`ManifestError::Invalid`] listing every path problem
    /// (duplicates, prefix conflicts, unsafe segments, identifier
    /// collisions).
    pub fn from_json_str(text: &str) -> Result<Self, ManifestError> {
        let raw: RawManifest = serde_json::from_str(text).map_err(|e| ManifestError::Json {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })?;
        AgentManifest::try_from(raw)
    }

    /// Builds a manifest from already-parsed tools, running the same path
    /// validation as parsing.
    ///
    /// # Errors
    /// [`ManifestError::Invalid`] as for [`AgentManifest::from_json_str`].
    pub fn from_tools(tools: BTreeMap<String, ManifestTool>) -> Result<Self, ManifestError> {
        let issues = validate_paths(tools.keys().map(String::as_str));
        if issues.is_empty() {
            Ok(AgentManifest { tools })
        } else {
            Err(ManifestError::Invalid(issues))
        }
    }

    /// The tool at `path`, if any.
    pub fn tool(&self, path: &str) -> Option<&ManifestTool> {
        self.tools.get(path)
    }

    /// The canonical capability id of the procedure at `path`:
    /// the manifest's `capabilityId` override, else `"domain:" + path`.
    /// `None` when the path is not in the manifest.
    pub fn capability_id(&self, path: &str) -> Option<String> {
        self.tools
            .get(path)
            .map(|t| canonical_capability_id(path, t))
    }

    /// Hex SHA-256 of the whole manifest in canonical JSON (sorted keys, no
    /// whitespace). Equal manifests have equal digests whatever their key
    /// order or formatting.
    pub fn digest(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        sha256_hex(canonical_json(&value).as_bytes())
    }

    /// Hex SHA-256 of one procedure's entry (path, schemas, effect and every
    /// other field) in canonical JSON; `None` when the path is absent. This
    /// is the per-procedure digest of the compiler-generated authority.
    pub fn procedure_digest(&self, path: &str) -> Option<String> {
        self.tools
            .get(path)
            .map(|tool| procedure_digest(path, tool))
    }
}

/// The canonical capability id of `tool` at `path` (`docs/bindings.md`, "Identity").
pub fn canonical_capability_id(path: &str, tool: &ManifestTool) -> String {
    tool.capability_id
        .clone()
        .unwrap_or_else(|| format!("domain:{path}"))
}

/// Hex SHA-256 of `{"path": path, "tool": tool}` in canonical JSON.
pub fn procedure_digest(path: &str, tool: &ManifestTool) -> String {
    let value = serde_json::json!({ "path": path, "tool": tool });
    sha256_hex(canonical_json(&value).as_bytes())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Canonical JSON text of `value`: object keys sorted by their UTF-16…
/// (here: byte-wise UTF-8) order, no insignificant whitespace, numbers and
/// strings as serde_json writes them. Used for digests.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(idx) => message[..idx].to_string(),
        None => message.to_string(),
    }
}

/// JavaScript prototype names that are never valid segments.
pub const PROTOTYPE_SEGMENTS: [&str; 3] = ["__proto__", "prototype", "constructor"];

/// Every Rust keyword of any edition (strict, reserved, 2018+ and 2024
/// `gen`): a path segment or schema property equal to one becomes a raw
/// identifier (`type` → `r#type`). Shared by the runtime's segment mapping
/// and the code generator's field names.
pub const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static",
    "struct", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized",
    "virtual", "yield", "try", "gen",
];

/// Keywords that cannot be raw identifiers: they get a trailing `_`
/// (`self` → `self_`).
pub const NON_RAW_KEYWORDS: &[&str] = &["self", "super", "crate", "Self"];

/// Why a segment cannot be mapped, see [`segment_to_ident`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsafeSegment(pub &'static str);

/// Maps one path segment to a Rust identifier, following the mapping in the
/// module docs. Returns the identifier as source text (`r#type`, `self_`,
/// `list_all`).
///
/// # Errors
/// [`UnsafeSegment`] with the reason when the segment is a prototype name,
/// has characters outside `[A-Za-z0-9_-]`, starts with a digit or `-`, or
/// maps to nothing.
pub fn segment_to_ident(segment: &str) -> Result<String, UnsafeSegment> {
    if PROTOTYPE_SEGMENTS.contains(&segment) {
        return Err(UnsafeSegment(
            "`__proto__`, `prototype` and `constructor` are reserved JavaScript prototype names",
        ));
    }
    let mut chars = segment.chars();
    match chars.next() {
        None => return Err(UnsafeSegment("the segment is empty")),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        Some(_) => {
            return Err(UnsafeSegment(
                "a segment must start with an ASCII letter or `_`",
            ))
        }
    }
    if !segment
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(UnsafeSegment(
            "a segment may contain only ASCII letters, digits, `_` and `-`",
        ));
    }
    let snake = heck::ToSnakeCase::to_snake_case(segment.replace('-', "_").as_str());
    match snake.chars().next() {
        None => {
            return Err(UnsafeSegment(
                "the segment maps to an empty Rust identifier",
            ))
        }
        Some(c) if c.is_ascii_digit() => {
            return Err(UnsafeSegment(
                "the segment maps to a Rust identifier that starts with a digit",
            ))
        }
        Some(_) => {}
    }
    if snake == "_" {
        return Err(UnsafeSegment("`_` is not a Rust identifier"));
    }
    if NON_RAW_KEYWORDS.contains(&snake.as_str()) {
        return Ok(format!("{snake}_"));
    }
    if RUST_KEYWORDS.contains(&snake.as_str()) {
        return Ok(format!("r#{snake}"));
    }
    Ok(snake)
}

/// Maps a whole dotted path to its Rust module path (`devices::list_all`).
///
/// # Errors
/// [`ManifestIssue::EmptySegment`] or [`ManifestIssue::UnsafeSegment`].
pub fn path_to_rust(path: &str) -> Result<Vec<String>, ManifestIssue> {
    let mut out = Vec::new();
    for segment in path.split('.') {
        if segment.is_empty() {
            return Err(ManifestIssue::EmptySegment {
                path: path.to_string(),
            });
        }
        match segment_to_ident(segment) {
            Ok(ident) => out.push(ident),
            Err(UnsafeSegment(reason)) => {
                return Err(ManifestIssue::UnsafeSegment {
                    path: path.to_string(),
                    segment: segment.to_string(),
                    reason,
                })
            }
        }
    }
    Ok(out)
}

/// Validates a set of procedure paths against the path rules and returns every
/// problem found (empty when valid): empty or unsafe segments, prefix
/// conflicts, and two paths mapping to the same Rust path. Duplicates cannot
/// be seen here (a map has unique keys); the JSON reader reports them.
pub fn validate_paths<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<ManifestIssue> {
    let mut issues = Vec::new();
    let mut mapped: BTreeMap<Vec<String>, &'a str> = BTreeMap::new();
    for path in paths {
        match path_to_rust(path) {
            Ok(rust) => {
                if let Some(other) = mapped.get(&rust) {
                    issues.push(ManifestIssue::IdentCollision {
                        path: (*other).to_string(),
                        other: path.to_string(),
                        rust_path: rust.join("::"),
                    });
                } else {
                    mapped.insert(rust, path);
                }
            }
            Err(issue) => issues.push(issue),
        }
    }
    // Prefix conflicts, on the mapped Rust paths (so `a.b` vs `a.b.c` and
    // `a.B` vs `a.b.c` are both caught). `mapped` is sorted, so the paths a
    // path prefixes come right after it: comparing each path with its
    // successor alone finds every conflict, in linear time after the sort.
    let entries: Vec<(&Vec<String>, &&str)> = mapped.iter().collect();
    for pair in entries.windows(2) {
        let ((rust, path), (other_rust, other)) = (pair[0], pair[1]);
        if other_rust.len() > rust.len() && other_rust[..rust.len()] == rust[..] {
            issues.push(ManifestIssue::PrefixConflict {
                path: (*path).to_string(),
                other: (*other).to_string(),
            });
        }
    }
    issues
}

/// The paths of `candidates` nearest to `wanted` (Jaro–Winkler similarity on
/// the whole path, at least 0.7), best first, at most `limit`. Used by the
/// "unknown procedure path" diagnostics.
pub fn nearest_paths<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &'a str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(wanted, c), c))
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(limit).map(|(_, c)| c).collect()
}

/// A backend's portable capability descriptor (`docs/manifest.md`): what the
/// capability client's `describe` returns and what
/// [`create_orpc_agent_manifest`] maps into a manifest.
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
    /// The ordinary RPC output schema; read but never exposed.
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

/// Maps the backend's portable descriptors to a manifest
/// (`docs/manifest.md`, "From the backend's portable descriptors"): effects per [`PortableEffect`], schemas copied, `capabilityId` and
/// `contractDigest` kept, `outputSchema` set only from `modelOutputSchema`.
///
/// # Errors
/// [`ManifestError::Invalid`] when two descriptors share a path
/// ([`ManifestIssue::DuplicatePath`]) or the paths break the path rules.
pub fn create_orpc_agent_manifest(
    descriptors: impl IntoIterator<Item = PortableDescriptor>,
) -> Result<AgentManifest, ManifestError> {
    let mut tools = BTreeMap::new();
    let mut issues = Vec::new();
    for d in descriptors {
        if tools.contains_key(&d.path) {
            issues.push(ManifestIssue::DuplicatePath { path: d.path });
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
    issues.extend(validate_paths(tools.keys().map(String::as_str)));
    if issues.is_empty() {
        Ok(AgentManifest { tools })
    } else {
        Err(ManifestError::Invalid(issues))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(effect: &str) -> Value {
        json!({"description": "d", "inputSchema": {"type": "object"}, "effect": effect})
    }

    #[test]
    fn parses_camel_case_fields() {
        let text = r#"{"tools":{"devices.disable":{"description":"Disable","inputSchema":{"type":"object"},"outputSchema":{"type":"null"},"effect":"destructive","requiresApproval":true,"capabilityId":"cap:x","contractDigest":"abc"}}}"#;
        let m = AgentManifest::from_json_str(text).unwrap();
        let t = m.tool("devices.disable").unwrap();
        assert_eq!(t.effect, AgentEffect::Destructive);
        assert!(t.requires_approval);
        assert_eq!(t.capability_id.as_deref(), Some("cap:x"));
        assert_eq!(t.contract_digest.as_deref(), Some("abc"));
        assert_eq!(t.output_schema, Some(json!({"type": "null"})));
        assert_eq!(m.capability_id("devices.disable").unwrap(), "cap:x");
        // Round trip keeps the wire names.
        let back: Value = serde_json::to_value(&m).unwrap();
        let orig: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn duplicate_paths_in_text_are_detected() {
        let text = format!(
            r#"{{"tools":{{"a.b":{t},"a.b":{t}}}}}"#,
            t = tool("server-query")
        );
        let err = AgentManifest::from_json_str(&text).unwrap_err();
        assert_eq!(
            err,
            ManifestError::Invalid(vec![ManifestIssue::DuplicatePath { path: "a.b".into() }])
        );
        // Plain serde deserialization runs the same validation.
        let via_serde = serde_json::from_str::<AgentManifest>(&text).unwrap_err();
        assert!(via_serde
            .to_string()
            .contains("`a.b` appears more than once"));
    }

    /// `n` distinct paths, each written twice.
    fn repeated_paths(n: usize) -> String {
        let t = tool("server-query");
        let entries: Vec<String> = (0..2)
            .flat_map(|_| (0..n).map(|i| format!(r#""p.a{i}":{t}"#)))
            .collect();
        format!(r#"{{"tools":{{{}}}}}"#, entries.join(","))
    }

    #[test]
    fn duplicate_path_detection_is_linear_not_quadratic() {
        // Issue 10: 80,000 repeated paths took 13.4 s (a list scan per
        // repetition, n²/2 = 3.2·10⁹ comparisons). The duplicate set makes
        // O(log n) comparisons per repetition.
        let n = 80_000;
        probe::take();
        let err = AgentManifest::from_json_str(&repeated_paths(n)).unwrap_err();
        let comparisons = probe::take();
        let ManifestError::Invalid(issues) = err else {
            panic!("expected path issues, got {err:?}")
        };
        assert_eq!(issues.len(), n);
        assert_eq!(
            issues[0],
            ManifestIssue::DuplicatePath {
                path: "p.a0".into()
            }
        );
        assert_eq!(
            issues[n - 1],
            ManifestIssue::DuplicatePath {
                path: format!("p.a{}", n - 1)
            }
        );
        // A B-tree lookup compares with at most 11 keys per level and has
        // ⌈log₆ 80,000⌉ + 1 = 8 levels: fewer than 100 per repetition.
        assert!(
            comparisons < 100 * n as u64,
            "{comparisons} comparisons for {n} repeated paths"
        );
        // Doubling the input roughly doubles the work (n log n).
        AgentManifest::from_json_str(&repeated_paths(2 * n)).unwrap_err();
        let doubled = probe::take();
        assert!(
            doubled < 3 * comparisons,
            "{comparisons} comparisons for {n}, {doubled} for {}",
            2 * n
        );
    }

    #[test]
    fn the_same_path_repeated_is_reported_once() {
        let t = tool("server-query");
        let entries = vec![format!(r#""a.b":{t}"#); 1_000].join(",");
        let err =
            AgentManifest::from_json_str(&format!(r#"{{"tools":{{{entries}}}}}"#)).unwrap_err();
        assert_eq!(
            err,
            ManifestError::Invalid(vec![ManifestIssue::DuplicatePath { path: "a.b".into() }])
        );
    }

    #[test]
    fn invalid_json_reports_line_and_column() {
        let err = AgentManifest::from_json_str("{\n  \"tools\": {,}\n}").unwrap_err();
        match err {
            ManifestError::Json { line, column, .. } => assert_eq!((line, column), (2, 13)),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn unknown_effect_is_rejected() {
        let text = format!(r#"{{"tools":{{"a.b":{}}}}}"#, tool("mutation"));
        let err = AgentManifest::from_json_str(&text).unwrap_err();
        match err {
            ManifestError::Json { message, .. } => {
                assert!(message.contains("unknown variant `mutation`"), "{message}")
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn prefix_conflict_unsafe_and_collision() {
        let issues = validate_paths([
            "a.b",
            "a.b.c",
            "x.__proto__",
            "x..y",
            "d.listAll",
            "d.list_all",
            "e.9x",
        ]);
        assert_eq!(
            issues,
            vec![
                ManifestIssue::UnsafeSegment {
                    path: "x.__proto__".into(),
                    segment: "__proto__".into(),
                    reason: "`__proto__`, `prototype` and `constructor` are reserved JavaScript prototype names"
                },
                ManifestIssue::EmptySegment { path: "x..y".into() },
                ManifestIssue::IdentCollision {
                    path: "d.listAll".into(),
                    other: "d.list_all".into(),
                    rust_path: "d::list_all".into()
                },
                ManifestIssue::UnsafeSegment {
                    path: "e.9x".into(),
                    segment: "9x".into(),
                    reason: "a segment must start with an ASCII letter or `_`"
                },
                ManifestIssue::PrefixConflict { path: "a.b".into(), other: "a.b.c".into() },
            ]
        );
    }

    #[test]
    fn prefix_conflict_not_confused_by_siblings() {
        assert!(validate_paths(["a.b", "a.bc", "a.b_c", "ab.c"]).is_empty());
        assert_eq!(
            validate_paths(["a", "a.b"]),
            vec![ManifestIssue::PrefixConflict {
                path: "a".into(),
                other: "a.b".into()
            }]
        );
        assert_eq!(
            validate_paths(["a.b", "a.b-x", "a.b.c"]),
            vec![ManifestIssue::PrefixConflict {
                path: "a.b".into(),
                other: "a.b.c".into()
            }]
        );
    }

    #[test]
    fn segment_mapping() {
        assert_eq!(segment_to_ident("listAll").unwrap(), "list_all");
        assert_eq!(segment_to_ident("HTTPStatus").unwrap(), "http_status");
        assert_eq!(segment_to_ident("get-by-id").unwrap(), "get_by_id");
        assert_eq!(segment_to_ident("type").unwrap(), "r#type");
        assert_eq!(segment_to_ident("match").unwrap(), "r#match");
        assert_eq!(segment_to_ident("self").unwrap(), "self_");
        assert_eq!(segment_to_ident("Self").unwrap(), "self_");
        assert_eq!(segment_to_ident("crate").unwrap(), "crate_");
        assert_eq!(segment_to_ident("v2").unwrap(), "v2");
        assert!(segment_to_ident("prototype").is_err());
        assert!(segment_to_ident("a b").is_err());
        assert!(segment_to_ident("_").is_err());
        assert!(segment_to_ident("-a").is_err());
    }

    #[test]
    fn digests_ignore_formatting_and_key_order() {
        let a = AgentManifest::from_json_str(r#"{"tools":{"a.b":{"description":"d","inputSchema":{"type":"object","properties":{}},"effect":"server-query"}}}"#).unwrap();
        let b = AgentManifest::from_json_str("{ \"tools\": { \"a.b\": { \"effect\": \"server-query\", \"inputSchema\": { \"properties\": {}, \"type\": \"object\" }, \"description\": \"d\" } } }").unwrap();
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 64);
        assert_eq!(a.procedure_digest("a.b"), b.procedure_digest("a.b"));
        assert_ne!(a.procedure_digest("a.b"), Some(a.digest()));
    }

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

    #[test]
    fn nearest_paths_suggests() {
        let paths = [
            "devices.disable",
            "devices.list",
            "devices.rename",
            "users.list",
        ];
        assert_eq!(
            nearest_paths("devices.disabel", paths, 3)[0],
            "devices.disable"
        );
        assert!(nearest_paths("zzz", paths, 3).is_empty());
    }
}
