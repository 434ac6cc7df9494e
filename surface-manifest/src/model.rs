//! The manifest's JSON shape: `{"tools": {"<dot.path>": ManifestTool}}`,
//! read in two steps — [`ManifestDraft`] (the JSON as written, duplicate
//! paths recorded) and [`AgentManifest`] (every path rule and every
//! capability-id rule checked).
//!
//! The capability-id rules ([`validate_capability_ids`]): every procedure's
//! canonical capability id ([`canonical_capability_id`]) is its own — two
//! paths never share one — and a `capabilityId` override is neither
//! `domain:<other path>` nor a `view:` id. An agent host composes tools by
//! canonical id, so a shared id would merge different operations under
//! one tool.

use std::collections::{btree_map, BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::digest::{canonical_json, sha256_hex};
use crate::error::{ManifestError, ManifestIssue};
use crate::naming::validate_paths;

/// The effect class of a procedure. It sets the lowest confirmation level
/// a call needs (its *floor*) and whether a call made against an older
/// view of the surface is refused as stale.
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

    /// Whether a surface-version mismatch makes a call stale: destructive
    /// and external-side-effect procedures.
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

/// One procedure of a manifest, `manifest.tools[path]`.
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
    /// explicitly declared one; absent means the output is opaque and never
    /// described to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Effect class.
    pub effect: AgentEffect,
    /// Server hint that the backend will ask for its own approval; it does
    /// not by itself force a local confirmation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_approval: bool,
    /// Canonical capability id override; `None` means `"domain:" + path`
    /// ([`canonical_capability_id`]). It must be unique in the manifest,
    /// must not be another path's `domain:<path>` and must not start with
    /// `view:` ([`validate_capability_ids`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_id: Option<String>,
    /// Digest of the backend's contract, sent back on governed calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

/// A validated agent manifest: `{"tools": {"<dot.path>": ManifestTool}}`.
///
/// Every value of this type has passed [`validate_paths`] and
/// [`validate_capability_ids`]: deserializing it with serde (any format)
/// runs the same checks as [`AgentManifest::from_json_str`], and fails on
/// duplicate paths, prefix conflicts, unsafe segments, identifier
/// collisions and capability-id overrides that clash. Paths are kept in
/// sorted order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ManifestDraft")]
pub struct AgentManifest {
    /// Procedures by dotted router path (`"devices.disable"`).
    pub tools: BTreeMap<String, ManifestTool>,
}

/// A manifest as read, before its paths are validated. Duplicate keys are
/// recorded instead of silently dropped (serde_json keeps the last of two
/// equal keys).
///
/// [`AgentManifest::from_json_str`] is this plus [`ManifestDraft::validate`];
/// the `manifest!` macro uses the two steps so it can report its own rules
/// about the paths (reserved names) in the same build as the path issues.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ManifestDraft {
    /// Procedures by path; for a repeated path, the first entry.
    #[serde(deserialize_with = "deserialize_tools")]
    tools: RawTools,
}

#[derive(Clone, Debug, PartialEq)]
struct RawTools {
    tools: BTreeMap<String, ManifestTool>,
    duplicates: Vec<String>,
}

fn deserialize_tools<'de, D: Deserializer<'de>>(deserializer: D) -> Result<RawTools, D::Error> {
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
                    btree_map::Entry::Occupied(entry) => duplicates.record(entry.key()),
                    btree_map::Entry::Vacant(entry) => {
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

/// The paths seen more than once, each listed once in the order of its
/// first repetition. Membership is a set lookup, so `n` repeated paths cost
/// O(n log n) comparisons, not the O(n²) of scanning the list.
#[derive(Default)]
struct Duplicates {
    in_order: Vec<String>,
    seen: BTreeSet<CountedPath>,
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

impl ManifestDraft {
    /// A draft of `tools` in which each path of `duplicates` was repeated
    /// (reported once per entry, in order).
    pub(crate) fn from_parts(
        tools: BTreeMap<String, ManifestTool>,
        duplicates: Vec<String>,
    ) -> Self {
        ManifestDraft {
            tools: RawTools { tools, duplicates },
        }
    }

    /// Reads a manifest from JSON text without checking its paths.
    ///
    /// # Errors
    /// [`ManifestError::Json`] with a 1-based line and column when the text
    /// is not JSON or not of the manifest's shape (including an unknown
    /// `effect`).
    pub fn from_json_str(text: &str) -> Result<Self, ManifestError> {
        serde_json::from_str(text).map_err(|e| ManifestError::Json {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })
    }

    /// Every distinct path, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.tools.tools.keys().map(String::as_str)
    }

    /// Checks every path rule and every capability-id rule.
    ///
    /// # Errors
    /// [`ManifestError::Invalid`] listing every problem: the repeated paths
    /// first (in the order of their first repetition), then the
    /// [`validate_paths`] issues, then the [`validate_capability_ids`]
    /// issues.
    pub fn validate(self) -> Result<AgentManifest, ManifestError> {
        let mut issues: Vec<ManifestIssue> = self
            .tools
            .duplicates
            .into_iter()
            .map(|path| ManifestIssue::DuplicatePath { path })
            .collect();
        issues.extend(validate_paths(self.tools.tools.keys().map(String::as_str)));
        issues.extend(validate_capability_ids(&self.tools.tools));
        if issues.is_empty() {
            Ok(AgentManifest {
                tools: self.tools.tools,
            })
        } else {
            Err(ManifestError::Invalid(issues))
        }
    }
}

impl TryFrom<ManifestDraft> for AgentManifest {
    type Error = ManifestError;
    fn try_from(draft: ManifestDraft) -> Result<Self, ManifestError> {
        draft.validate()
    }
}

impl AgentManifest {
    /// Parses and validates a manifest from JSON text.
    ///
    /// # Errors
    /// [`ManifestError::Json`] with a 1-based line and column when the text
    /// is not JSON or not of the manifest's shape (including an unknown
    /// `effect`); [`ManifestError::Invalid`] listing every problem
    /// (duplicates, prefix conflicts, unsafe segments, identifier
    /// collisions, clashing capability ids).
    pub fn from_json_str(text: &str) -> Result<Self, ManifestError> {
        ManifestDraft::from_json_str(text)?.validate()
    }

    /// Builds a manifest from already-parsed tools, running the same
    /// validation as parsing.
    ///
    /// # Errors
    /// [`ManifestError::Invalid`] as for [`AgentManifest::from_json_str`].
    pub fn from_tools(tools: BTreeMap<String, ManifestTool>) -> Result<Self, ManifestError> {
        ManifestDraft::from_parts(tools, Vec::new()).validate()
    }

    /// The tool at `path`, if any.
    pub fn tool(&self, path: &str) -> Option<&ManifestTool> {
        self.tools.get(path)
    }

    /// The canonical capability id of the procedure at `path`: the
    /// manifest's `capabilityId` override, else `"domain:" + path`. `None`
    /// when the path is not in the manifest.
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

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(idx) => message[..idx].to_string(),
        None => message.to_string(),
    }
}

/// The canonical capability id of `tool` at `path`: its `capabilityId`
/// override, else `"domain:" + path`.
pub fn canonical_capability_id(path: &str, tool: &ManifestTool) -> String {
    tool.capability_id
        .clone()
        .unwrap_or_else(|| format!("domain:{path}"))
}

/// The capability-id rules (module docs), in path order; empty when they
/// hold: an override starting with `view:` is
/// [`ManifestIssue::ViewCapabilityId`], an override `domain:<other>` naming
/// another path of `tools` is [`ManifestIssue::CapabilityIdOfAnotherPath`]
/// (neither takes part in the next check), and every further path whose
/// canonical id an earlier path already has is
/// [`ManifestIssue::SharedCapabilityId`] naming that first path. One pass:
/// O(n log n) for `n` paths.
pub fn validate_capability_ids(tools: &BTreeMap<String, ManifestTool>) -> Vec<ManifestIssue> {
    let mut issues = Vec::new();
    let mut first_with: BTreeMap<String, &str> = BTreeMap::new();
    for (path, tool) in tools {
        if let Some(id) = &tool.capability_id {
            if id.starts_with("view:") {
                issues.push(ManifestIssue::ViewCapabilityId {
                    path: path.clone(),
                    capability_id: id.clone(),
                });
                continue;
            }
            let named = id
                .strip_prefix("domain:")
                .filter(|other| *other != path && tools.contains_key(*other));
            if let Some(other) = named {
                issues.push(ManifestIssue::CapabilityIdOfAnotherPath {
                    path: path.clone(),
                    other: other.to_string(),
                    capability_id: id.clone(),
                });
                continue;
            }
        }
        match first_with.entry(canonical_capability_id(path, tool)) {
            btree_map::Entry::Occupied(first) => {
                issues.push(ManifestIssue::SharedCapabilityId {
                    path: (*first.get()).to_string(),
                    other: path.clone(),
                    capability_id: first.key().clone(),
                });
            }
            btree_map::Entry::Vacant(slot) => {
                slot.insert(path);
            }
        }
    }
    issues
}

/// Hex SHA-256 of `{"path": path, "tool": tool}` in canonical JSON: the
/// per-procedure digest of the compiler-generated authority.
pub fn procedure_digest(path: &str, tool: &ManifestTool) -> String {
    let value = serde_json::json!({ "path": path, "tool": tool });
    sha256_hex(canonical_json(&value).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn tool(effect: &str) -> Value {
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

    /// A manifest text whose tools are `(path, effect, capabilityId)`.
    fn with_ids(entries: &[(&str, Option<&str>)]) -> String {
        let tools: serde_json::Map<String, Value> = entries
            .iter()
            .map(|(path, id)| {
                let mut t = tool("server-query");
                if let Some(id) = id {
                    t["capabilityId"] = json!(id);
                }
                (path.to_string(), t)
            })
            .collect();
        json!({ "tools": tools }).to_string()
    }

    #[test]
    fn two_paths_never_share_a_canonical_capability_id() {
        let text = with_ids(&[
            ("devices.disable", Some("cap:devices.off")),
            ("devices.list", None),
            ("devices.shutdown", Some("cap:devices.off")),
            ("devices.stop", Some("cap:devices.off")),
        ]);
        let err = AgentManifest::from_json_str(&text).unwrap_err();
        assert_eq!(
            err,
            ManifestError::Invalid(vec![
                ManifestIssue::SharedCapabilityId {
                    path: "devices.disable".into(),
                    other: "devices.shutdown".into(),
                    capability_id: "cap:devices.off".into(),
                },
                ManifestIssue::SharedCapabilityId {
                    path: "devices.disable".into(),
                    other: "devices.stop".into(),
                    capability_id: "cap:devices.off".into(),
                },
            ])
        );
        assert_eq!(
            err.to_string(),
            "invalid manifest: procedure paths `devices.disable` and `devices.shutdown` share the capability id `cap:devices.off`; give `devices.shutdown` a `capabilityId` of its own (or remove the override); procedure paths `devices.disable` and `devices.stop` share the capability id `cap:devices.off`; give `devices.stop` a `capabilityId` of its own (or remove the override)"
        );
        // Plain serde deserialization runs the same rules.
        assert!(serde_json::from_str::<AgentManifest>(&text).is_err());
    }

    #[test]
    fn an_override_may_not_name_another_path_or_a_view_capability() {
        let text = with_ids(&[
            ("devices.list", Some("domain:devices.purge")),
            ("devices.purge", None),
            ("devices.rename", Some("domain:devices.rename")),
            ("devices.select", Some("view:devices.table.select")),
            ("devices.stats", Some("domain:devices.unknown")),
        ]);
        let err = AgentManifest::from_json_str(&text).unwrap_err();
        assert_eq!(
            err,
            ManifestError::Invalid(vec![
                ManifestIssue::CapabilityIdOfAnotherPath {
                    path: "devices.list".into(),
                    other: "devices.purge".into(),
                    capability_id: "domain:devices.purge".into(),
                },
                ManifestIssue::ViewCapabilityId {
                    path: "devices.select".into(),
                    capability_id: "view:devices.table.select".into(),
                },
            ])
        );
        let ManifestError::Invalid(issues) = err else {
            unreachable!()
        };
        assert_eq!(
            issues
                .iter()
                .map(|i| (i.path(), i.to_string()))
                .collect::<Vec<_>>(),
            [
                ("devices.list", "procedure path `devices.list` has the `capabilityId` `domain:devices.purge`, which is the id of procedure `devices.purge`; choose an id that names no other procedure (or remove the override: the default is `domain:devices.list`)".to_string()),
                ("devices.select", "procedure path `devices.select` has the `capabilityId` `view:devices.table.select`, but `view:` ids belong to the view capabilities of components; choose an id without the `view:` prefix (or remove the override: the default is `domain:devices.select`)".to_string()),
            ]
        );
        // Another path's override is named by its override, not its path:
        // two procedures overriding to each other's default ids clash.
        let swapped = with_ids(&[
            ("a.one", Some("domain:a.two")),
            ("a.two", Some("domain:a.one")),
        ]);
        assert_eq!(
            AgentManifest::from_json_str(&swapped).unwrap_err(),
            ManifestError::Invalid(vec![
                ManifestIssue::CapabilityIdOfAnotherPath {
                    path: "a.one".into(),
                    other: "a.two".into(),
                    capability_id: "domain:a.two".into(),
                },
                ManifestIssue::CapabilityIdOfAnotherPath {
                    path: "a.two".into(),
                    other: "a.one".into(),
                    capability_id: "domain:a.one".into(),
                },
            ])
        );
    }

    #[test]
    fn distinct_overrides_and_an_override_of_its_own_default_are_valid() {
        let text = with_ids(&[
            ("devices.disable", Some("cap:devices.disable")),
            ("devices.list", Some("devices.list")),
            ("devices.purge", Some("domain:devices.purge")),
            ("devices.rename", Some("devices.rename@v1")),
            ("devices.stats", None),
        ]);
        let m = AgentManifest::from_json_str(&text).unwrap();
        assert_eq!(
            m.tools
                .keys()
                .map(|p| (p.as_str(), m.capability_id(p).unwrap()))
                .collect::<Vec<_>>(),
            [
                ("devices.disable", "cap:devices.disable".to_string()),
                ("devices.list", "devices.list".to_string()),
                ("devices.purge", "domain:devices.purge".to_string()),
                ("devices.rename", "devices.rename@v1".to_string()),
                ("devices.stats", "domain:devices.stats".to_string()),
            ]
        );
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

    #[test]
    fn draft_keeps_the_paths_of_an_invalid_manifest() {
        let text = format!(
            r#"{{"tools":{{"a.b":{t},"a.b":{t},"a":{t}}}}}"#,
            t = tool("server-query")
        );
        let draft = ManifestDraft::from_json_str(&text).unwrap();
        assert_eq!(draft.paths().collect::<Vec<_>>(), ["a", "a.b"]);
        assert_eq!(
            draft.validate().unwrap_err(),
            ManifestError::Invalid(vec![
                ManifestIssue::DuplicatePath { path: "a.b".into() },
                ManifestIssue::PrefixConflict {
                    path: "a".into(),
                    other: "a.b".into()
                },
            ])
        );
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
        // 80,000 repeated paths once took 13.4 s (a list scan per
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
    fn digests_ignore_formatting_and_key_order() {
        let a = AgentManifest::from_json_str(r#"{"tools":{"a.b":{"description":"d","inputSchema":{"type":"object","properties":{}},"effect":"server-query"}}}"#).unwrap();
        let b = AgentManifest::from_json_str("{ \"tools\": { \"a.b\": { \"effect\": \"server-query\", \"inputSchema\": { \"properties\": {}, \"type\": \"object\" }, \"description\": \"d\" } } }").unwrap();
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 64);
        assert_eq!(a.procedure_digest("a.b"), b.procedure_digest("a.b"));
        assert_ne!(a.procedure_digest("a.b"), Some(a.digest()));
    }
}
