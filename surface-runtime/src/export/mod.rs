//! The snapshot as tool definitions for agents (docs/agents.md).
//!
//! A [`ToolCatalog`] is built from one [`SurfaceSnapshot`]
//! ([`ToolCatalog::new`]), or from a list of tools directly
//! ([`ToolCatalog::from_tools`]: each a [`ToolSource`] — descriptor, route,
//! surface version — as an agent host hands over a run's tools). It names
//! every live capability once ([`naming`]), holds the exported definitions
//! for MCP ([`mcp`]), OpenAI ([`openai`], plain and strict) and Anthropic
//! ([`anthropic`]), and maps the model's tool calls back to
//! [`AgentInvocation`]s carrying the capability id, registration id and
//! surface version each tool was described with — so the registry detects
//! a stale call whatever the agent host did with the tool list — and keeps
//! each tool's [`ToolRoute`] for whoever dispatches the call.
//!
//! ```
//! use serde_json::json;
//! use surface_runtime::export::{ToolCall, ToolCatalog};
//! use surface_runtime::*;
//!
//! let authority = Authority::from_manifest(AgentManifest::from_json_str(r#"{"tools":{
//!   "devices.list":{"description":"List devices","inputSchema":{"type":"object",
//!     "properties":{"status":{"enum":["active","disabled"]}}},"effect":"server-query"}}}"#).unwrap());
//! let registry = SurfaceRegistry::new(authority.clone());
//! let list: AgentProcedureRef<serde_json::Value, serde_json::Value> =
//!     AgentProcedureRef::from_authority(&authority, "devices.list").unwrap();
//! let _handle = registry.register_procedure(AgentProcedureBinding::new(list)).unwrap();
//!
//! let catalog = ToolCatalog::new(&registry.snapshot(&AgentConsumer::headless("u1"))).unwrap();
//! let tools = catalog.mcp_tools();
//! assert_eq!(tools[0].name, "devices__list");
//! assert_eq!(tools[0].annotations.as_ref().unwrap().read_only_hint, Some(true));
//!
//! let call = ToolCall::new("devices__list", "call-1", Some(json!({"status": "active"})));
//! let invocation = catalog.invocation(call).unwrap();
//! assert_eq!(invocation.capability_id, "domain:devices.list");
//! assert_eq!(invocation.invocation_id, "call-1");
//! assert_eq!(invocation.surface_version, Some(catalog.surface_version()));
//! ```
//!
//! Only *available* capabilities are exported by default: a model cannot
//! see availability, and calling an unavailable tool only returns
//! `UNAVAILABLE`. Unavailable ones keep their name in the catalog (names do
//! not move when availability changes) and a call naming one still maps to
//! an invocation, which the pipeline answers with `UNAVAILABLE` and the
//! reason. [`ExportOptions::include_unavailable`] exports them too, with the
//! reason in the description.
//!
//! Pure `serde_json`; builds for `wasm32-unknown-unknown`.

pub mod anthropic;
pub mod mcp;
pub mod meta;
pub mod naming;
pub mod openai;
pub mod result;
pub mod schema;
pub mod source;
pub mod strict;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::confirmation::ConfirmationLevel;
use crate::invocation::{AgentError, AgentInvocation, AgentInvocationResult, ErrorCode, Retry};
use crate::manifest::AgentEffect;
use crate::snapshot::{BoundFieldDescriptor, ComponentContext, SurfaceSnapshot};

pub use anthropic::AnthropicTool;
pub use mcp::{McpCallToolResult, McpContent, McpTool, McpToolAnnotations};
pub use meta::{ResolvedCall, ToolMode, ACT_TOOL, DISCOVER_TOOL};
pub use openai::{OpenAiChatTool, OpenAiFunction, OpenAiMode, OpenAiResponsesTool};
pub use result::ToolResultText;
pub use schema::{Loosening, LooseningReason, NormalizeOptions, RefMode};
pub use source::{ToolDescriptor, ToolRoute, ToolSource};
pub use strict::{
    NotStrict, NotStrictReason, StrictLimits, StrictRule, StrictSchema, StrictViolation,
};

/// The property a non-object output is wrapped in (`{"result": …}`).
pub const OUTPUT_WRAPPER: &str = "result";
/// Longest accepted `arguments` text of [`ToolCall::from_json_arguments`],
/// in bytes: 245,760 — a browser-session envelope (262,144 characters,
/// `host::wire::MAX_ENVELOPE_CHARS`) less 16 KiB for the call's ids and
/// identity, so arguments the host accepts always fit the envelope the
/// page accepts.
pub const MAX_ARGUMENTS_BYTES: usize = 245_760;
/// Longest accepted call id, in bytes.
pub const MAX_CALL_ID_BYTES: usize = 256;
/// Characters of a model-supplied tool name kept in error messages.
const NAME_IN_ERRORS: usize = 128;

/// Options of [`ToolCatalog::with_options`] and [`ToolCatalog::from_tools`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// Export unavailable capabilities too (with "Currently unavailable: …"
    /// in the description). Default false.
    pub include_unavailable: bool,
    /// Normalization of the schemas sent to MCP, Anthropic and OpenAI's
    /// plain mode; default [`NormalizeOptions::default`] (recursive
    /// references kept under `$defs`). Strict schemas always keep recursive
    /// references (OpenAI supports them).
    pub schema: NormalizeOptions,
    /// Limits of strict schemas; default [`StrictLimits::default`].
    pub strict_limits: StrictLimits,
    /// One tool per capability, or the two meta tools in front of them
    /// ([`ToolMode::Meta`]; `docs/agents.md`, "Meta mode"). Default
    /// [`ToolMode::Direct`].
    pub mode: ToolMode,
}

/// Errors of [`ToolCatalog::new`] and [`ToolCatalog::from_tools`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Two capabilities map to one tool name.
    #[error(
        "tool name `{name}` would name both `{first}` and `{second}`; change one of the ids \
         (or the component type or instance id) so their names differ (docs/agents.md, \"Tool names\")"
    )]
    NameCollision {
        /// The shared name.
        name: String,
        /// Capability id of the first registration (catalog order).
        first: String,
        /// Capability id of the second.
        second: String,
    },
}

/// What kind of capability a tool is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// A domain procedure reference (`domain:…`).
    Procedure,
    /// A view capability of a component (`view:…`).
    View,
}

/// A normalized output schema as MCP needs it: `"type": "object"` at the
/// root.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSchema {
    /// The schema to declare as `outputSchema`.
    pub schema: Value,
    /// The declared schema's root is not an object, so it is wrapped as
    /// `{"type":"object","properties":{"result": …},"required":["result"]}`
    /// and results carry `{"result": output}` as `structuredContent`.
    pub wrapped: bool,
}

/// One live capability of the catalog.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogTool {
    name: String,
    title: String,
    description: String,
    kind: ToolKind,
    capability_id: String,
    registration_id: String,
    context: Option<ComponentContext>,
    effect: Option<AgentEffect>,
    /// A view observation (read-only, no input).
    observation: bool,
    confirmation: ConfirmationLevel,
    available: bool,
    unavailable_reason: Option<String>,
    callable: bool,
    exported: bool,
    input_schema: Value,
    input_loosened: Vec<Loosening>,
    output: Option<OutputSchema>,
    strict: Result<StrictSchema, NotStrict>,
    route: ToolRoute,
    surface_version: u64,
}

impl CatalogTool {
    /// The tool name (`^[a-zA-Z0-9_-]{1,64}$`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Human title: the dotted key, with the qualifier in parentheses when
    /// several registrations share it (`devices.disable (main)`).
    pub fn title(&self) -> &str {
        &self.title
    }
    /// Model-facing description: the snapshot's description, then (each as
    /// its own paragraph) the component a procedure acts on, the fields the
    /// application sets from the view, whether the user confirms each call,
    /// and — when exported although unavailable — why it is unavailable.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// Procedure or view capability.
    pub fn kind(&self) -> ToolKind {
        self.kind
    }
    /// The capability id the invocation names (a procedure's `domain:…`
    /// id, a view capability's `view:…` id).
    pub fn capability_id(&self) -> &str {
        &self.capability_id
    }
    /// The registration (procedure binding or component instance).
    pub fn registration_id(&self) -> &str {
        &self.registration_id
    }
    /// The component the capability belongs to, if any.
    pub fn context(&self) -> Option<&ComponentContext> {
        self.context.as_ref()
    }
    /// Effect class (procedures only).
    pub fn effect(&self) -> Option<AgentEffect> {
        self.effect
    }
    /// Confirmation level (`never` for view capabilities).
    pub fn confirmation(&self) -> ConfirmationLevel {
        self.confirmation
    }
    /// Whether `when()` held in the snapshot.
    pub fn available(&self) -> bool {
        self.available
    }
    /// Why not, when unavailable.
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.unavailable_reason.as_deref()
    }
    /// Whether the input schema admits a JSON object (a tool whose schema
    /// admits none can never be called successfully and is not exported).
    pub fn is_callable(&self) -> bool {
        self.callable
    }
    /// Whether the tool is in the exported lists (available, or
    /// [`ExportOptions::include_unavailable`], and its input schema admits
    /// a JSON object).
    pub fn is_exported(&self) -> bool {
        self.exported
    }
    /// The normalized input schema (`"type": "object"` at the root) sent to
    /// MCP, Anthropic and OpenAI's plain mode.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }
    /// Where normalization loosened the input schema (empty: exact).
    pub fn input_loosened(&self) -> &[Loosening] {
        &self.input_loosened
    }
    /// The declared output schema (procedures whose manifest declares one).
    pub fn output_schema(&self) -> Option<&OutputSchema> {
        self.output.as_ref()
    }
    /// The OpenAI strict schema, or why there is none.
    pub fn strict(&self) -> Result<&StrictSchema, &NotStrict> {
        self.strict.as_ref()
    }
    /// Where its calls go ([`ToolRoute::Registry`] for a snapshot's tools).
    pub fn route(&self) -> &ToolRoute {
        &self.route
    }
    /// The surface version it was described at; its invocations carry it.
    pub fn surface_version(&self) -> u64 {
        self.surface_version
    }

    /// The MCP `Tool`. Annotations from the effect class: server-query →
    /// `readOnlyHint: true`; server-mutation → `readOnlyHint: false,
    /// destructiveHint: false`; destructive → `readOnlyHint: false,
    /// destructiveHint: true`; external-side-effect → `readOnlyHint: false,
    /// openWorldHint: true` (`destructiveHint` left to MCP's default,
    /// true); view capabilities → `readOnlyHint: false, destructiveHint:
    /// false`. Every other tool gets `openWorldHint: false` (it acts on the
    /// application's own domain); `idempotentHint` is never set (the
    /// manifest does not declare idempotency).
    pub fn mcp_tool(&self) -> McpTool {
        McpTool {
            name: self.name.clone(),
            title: Some(self.title.clone()),
            description: Some(self.description.clone()),
            input_schema: self.input_schema.clone(),
            output_schema: self.output.as_ref().map(|o| o.schema.clone()),
            annotations: Some(annotations(self.effect, self.observation)),
        }
    }

    /// The OpenAI function (`name`, `description`, `parameters`, `strict`).
    pub fn openai_function(&self, mode: OpenAiMode) -> OpenAiFunction {
        let (parameters, strict) = match (mode, &self.strict) {
            (OpenAiMode::Strict, Ok(s)) => (s.parameters().clone(), true),
            _ => (self.input_schema.clone(), false),
        };
        OpenAiFunction {
            name: self.name.clone(),
            description: Some(self.description.clone()),
            parameters,
            strict,
        }
    }

    /// The Anthropic tool.
    pub fn anthropic_tool(&self) -> AnthropicTool {
        AnthropicTool {
            name: self.name.clone(),
            description: Some(self.description.clone()),
            input_schema: self.input_schema.clone(),
        }
    }

    /// The MCP `CallToolResult` of one of this tool's results.
    ///
    /// Success: one text block with the output as JSON; `structuredContent`
    /// is `{"result": output}` when the output schema is wrapped, else the
    /// output when it is a JSON object (a tool with an object output schema
    /// whose backend returns a non-object gets no `structuredContent`; MCP
    /// clients then report the mismatch).
    ///
    /// Error (`isError: true`): a text block [`result::error_text`]
    /// (`CODE: message` + what to do next for its `retry`), a text block
    /// with the error as JSON (`{"code","message","retry","details"}`), and
    /// the same object as `structuredContent` **only when the tool declares
    /// no output schema** — MCP clients validate `structuredContent`
    /// against a declared output schema even on errors.
    pub fn mcp_result(&self, result: &AgentInvocationResult) -> McpCallToolResult {
        result::mcp_result(result, self.output.as_ref())
    }
}

fn annotations(effect: Option<AgentEffect>, observation: bool) -> McpToolAnnotations {
    let hints = |read_only, destructive: Option<bool>, open_world| McpToolAnnotations {
        read_only_hint: Some(read_only),
        destructive_hint: destructive,
        idempotent_hint: None,
        open_world_hint: Some(open_world),
    };
    match effect {
        _ if observation => hints(true, Some(false), false),
        Some(AgentEffect::ServerQuery) => hints(true, Some(false), false),
        Some(AgentEffect::ServerMutation) | None => hints(false, Some(false), false),
        Some(AgentEffect::Destructive) => hints(false, Some(true), false),
        Some(AgentEffect::ExternalSideEffect) => hints(false, None, true),
    }
}

/// The tool catalog of one snapshot (or one list of tools): exported
/// definitions per target, and name → (capability id, registration id,
/// surface version, route).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCatalog {
    surface_version: u64,
    tools: Vec<CatalogTool>,
    by_name: HashMap<String, usize>,
    mode: ToolMode,
}

/// One tool, before naming.
struct Entry<'a> {
    kind: ToolKind,
    key: String,
    capability_id: &'a str,
    registration_id: &'a str,
    context: Option<&'a ComponentContext>,
    /// The model-facing description (a procedure's manifest text and its
    /// contextual note).
    description: String,
    /// A view observation: read-only, no input.
    observation: bool,
    input: Arc<Value>,
    output: Option<&'a Value>,
    effect: Option<AgentEffect>,
    confirmation: ConfirmationLevel,
    available: bool,
    unavailable_reason: Option<&'a str>,
    bound: &'a [BoundFieldDescriptor],
    route: &'a ToolRoute,
    surface_version: u64,
}

fn entry(tool: &ToolSource) -> Entry<'_> {
    let (route, surface_version) = (&tool.route, tool.surface_version);
    match &tool.descriptor {
        ToolDescriptor::Procedure(p) => Entry {
            kind: ToolKind::Procedure,
            key: naming::base_key(&p.procedure_id),
            capability_id: &p.procedure_id,
            registration_id: &p.registration_id,
            context: p.context.as_ref(),
            description: p.model_description(),
            observation: false,
            input: p.input_schema.clone(),
            output: p.output_schema.as_deref(),
            effect: Some(p.effect),
            confirmation: p.confirmation,
            available: p.available,
            unavailable_reason: p.unavailable_reason.as_deref(),
            bound: &p.bound_fields,
            route,
            surface_version,
        },
        ToolDescriptor::View {
            registration_id,
            component,
            capability: v,
        } => Entry {
            kind: ToolKind::View,
            key: naming::base_key(v.capability_id()),
            capability_id: v.capability_id(),
            registration_id,
            context: Some(component),
            description: v.description().to_string(),
            observation: v.is_observation(),
            input: v.input_schema(),
            output: v.output_schema().map(|o| &**o),
            effect: None,
            confirmation: v.confirmation(),
            available: v.available(),
            unavailable_reason: v.unavailable_reason(),
            bound: &[],
            route,
            surface_version,
        },
    }
}

/// The name and qualifier of each entry: registrations of one capability
/// share a key and are qualified; two capabilities with one key are a
/// collision (found by the caller).
fn names(entries: &[Entry<'_>]) -> Vec<(String, Option<String>)> {
    let mut groups: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        groups
            .entry((e.key.as_str(), e.capability_id))
            .or_default()
            .push(i);
    }
    let mut names: Vec<(String, Option<String>)> = vec![(String::new(), None); entries.len()];
    for ((key, _), members) in &groups {
        let described: Vec<naming::Member<'_>> = members
            .iter()
            .map(|&i| naming::Member {
                component: entries[i]
                    .context
                    .map(|c| (c.component_type.as_str(), c.instance_id.as_str())),
                registration_id: entries[i].registration_id,
            })
            .collect();
        for (&i, named) in members.iter().zip(naming::group_names(key, &described)) {
            names[i] = named;
        }
    }
    names
}

impl ToolCatalog {
    /// The catalog of a snapshot with [`ExportOptions::default`].
    ///
    /// # Errors
    /// [`ExportError::NameCollision`] when two capabilities get one name.
    pub fn new(snapshot: &SurfaceSnapshot) -> Result<Self, ExportError> {
        Self::with_options(snapshot, &ExportOptions::default())
    }

    /// The catalog of a snapshot: [`ToolCatalog::from_tools`] of its
    /// [`ToolSource::from_snapshot`] (every tool routed
    /// [`ToolRoute::Registry`] at the snapshot's surface version), in
    /// snapshot order, with the snapshot's surface version as the catalog's
    /// (also when it has no tools). Work is linear in the snapshot's size
    /// (schemas included) plus the normalization node budget per schema.
    ///
    /// # Errors
    /// [`ExportError::NameCollision`] when two capabilities get one name.
    pub fn with_options(
        snapshot: &SurfaceSnapshot,
        options: &ExportOptions,
    ) -> Result<Self, ExportError> {
        Self::build(
            snapshot.surface_version,
            &ToolSource::from_snapshot(snapshot),
            options,
        )
    }

    /// The catalog of a list of tools, each with its descriptor, route and
    /// surface version — what an agent host hands over for a run (the
    /// browser tools of its tab, its server tools) without a snapshot.
    ///
    /// Naming, descriptions and schemas are those of a snapshot holding the
    /// same descriptors: a snapshot's [`ToolSource::from_snapshot`] gives a
    /// catalog equal to [`ToolCatalog::with_options`] of the snapshot. The
    /// order (of [`tools`](Self::tools) and the lists exported) is
    /// procedures first, in the given order, then view capabilities grouped
    /// by component registration, components in order of first appearance.
    /// Each invocation carries its own tool's registration id and surface
    /// version ([`CatalogTool::surface_version`]); the catalog's
    /// [`surface_version`](Self::surface_version) is the highest of its
    /// tools' (0 without tools).
    ///
    /// # Errors
    /// [`ExportError::NameCollision`] when two tools get one name: two
    /// capabilities with one key, or one capability given twice with the
    /// same registration id.
    pub fn from_tools(
        tools: impl IntoIterator<Item = ToolSource>,
        options: &ExportOptions,
    ) -> Result<Self, ExportError> {
        let tools = source::catalog_order(tools.into_iter().collect());
        let surface_version = tools.iter().map(|t| t.surface_version).max().unwrap_or(0);
        Self::build(surface_version, &tools, options)
    }

    fn build(
        surface_version: u64,
        tools: &[ToolSource],
        options: &ExportOptions,
    ) -> Result<Self, ExportError> {
        let entries: Vec<Entry<'_>> = tools.iter().map(entry).collect();
        let names = names(&entries);
        let mut by_name: HashMap<String, usize> = HashMap::with_capacity(entries.len());
        for (i, (name, _)) in names.iter().enumerate() {
            if let Some(&first) = by_name.get(name) {
                return Err(ExportError::NameCollision {
                    name: name.clone(),
                    first: entries[first].capability_id.to_string(),
                    second: entries[i].capability_id.to_string(),
                });
            }
            by_name.insert(name.clone(), i);
        }
        let tools = entries
            .into_iter()
            .zip(names)
            .map(|(e, (name, qualifier))| build_tool(e, name, qualifier, options))
            .collect();
        Ok(Self {
            surface_version,
            tools,
            by_name,
            mode: options.mode,
        })
    }

    /// The catalog's surface version: the snapshot's, or for a catalog of
    /// [`from_tools`](Self::from_tools) the highest of its tools'. Every
    /// invocation carries its own tool's ([`CatalogTool::surface_version`];
    /// the snapshot's, for a snapshot's catalog).
    pub fn surface_version(&self) -> u64 {
        self.surface_version
    }

    /// The exported tools, procedures first, in snapshot order (catalog
    /// order: [`from_tools`](Self::from_tools)).
    pub fn tools(&self) -> impl Iterator<Item = &CatalogTool> + '_ {
        self.tools.iter().filter(|t| t.exported)
    }

    /// Every live capability of the snapshot (every tool given), exported
    /// or not.
    pub fn all_tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// The tool with this name (exported or not).
    pub fn tool(&self, name: &str) -> Option<&CatalogTool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The tool of a registration and capability id.
    pub fn tool_for(&self, capability_id: &str, registration_id: &str) -> Option<&CatalogTool> {
        self.tools
            .iter()
            .find(|t| t.capability_id == capability_id && t.registration_id == registration_id)
    }

    /// MCP `tools/list` entries.
    pub fn mcp_tools(&self) -> Vec<McpTool> {
        if self.mode == ToolMode::Meta {
            return Self::meta_mcp_tools();
        }
        self.tools().map(CatalogTool::mcp_tool).collect()
    }

    /// How the catalog is exported ([`ExportOptions::mode`]).
    pub fn mode(&self) -> ToolMode {
        self.mode
    }

    /// The OpenAI functions exported: one per tool, or the meta tools.
    fn openai_functions(&self, mode: OpenAiMode) -> Vec<OpenAiFunction> {
        if self.mode == ToolMode::Meta {
            return Self::meta_openai_functions();
        }
        self.tools().map(|t| t.openai_function(mode)).collect()
    }

    /// OpenAI Responses API function tools.
    pub fn openai_responses_tools(&self, mode: OpenAiMode) -> Vec<OpenAiResponsesTool> {
        self.openai_functions(mode)
            .into_iter()
            .map(|f| OpenAiResponsesTool {
                kind: openai::FunctionType::Function,
                name: f.name,
                description: f.description,
                parameters: f.parameters,
                strict: f.strict,
            })
            .collect()
    }

    /// OpenAI Chat Completions function tools.
    pub fn openai_chat_tools(&self, mode: OpenAiMode) -> Vec<OpenAiChatTool> {
        self.openai_functions(mode)
            .into_iter()
            .map(|function| OpenAiChatTool {
                kind: openai::FunctionType::Function,
                function,
            })
            .collect()
    }

    /// Anthropic Messages API tools.
    pub fn anthropic_tools(&self) -> Vec<AnthropicTool> {
        if self.mode == ToolMode::Meta {
            return Self::meta_anthropic_tools();
        }
        self.tools().map(CatalogTool::anthropic_tool).collect()
    }

    /// The invocation of a tool call whose arguments follow the exported
    /// schema as sent (MCP, Anthropic, OpenAI plain mode): invocation id =
    /// call id; capability id, registration id and surface version from the
    /// catalog; input = the arguments (absent → `{}`).
    ///
    /// # Errors
    /// [`ToolCallError`]: unknown name, arguments not a JSON object, empty
    /// or over-long call id.
    pub fn invocation(&self, call: ToolCall) -> Result<AgentInvocation, ToolCallError> {
        self.decode(call, false)
    }

    /// [`invocation`](Self::invocation) for calls of tools exported with
    /// [`OpenAiMode::Strict`]: for a tool exported strict, every `null` that
    /// stands for an absent optional property is removed first
    /// ([`StrictSchema::strip_absent_nulls`]).
    ///
    /// # Errors
    /// As [`invocation`](Self::invocation).
    pub fn strict_invocation(&self, call: ToolCall) -> Result<AgentInvocation, ToolCallError> {
        self.decode(call, true)
    }

    fn decode(&self, call: ToolCall, strict: bool) -> Result<AgentInvocation, ToolCallError> {
        if call.call_id.is_empty() {
            return Err(ToolCallError::EmptyCallId);
        }
        if call.call_id.len() > MAX_CALL_ID_BYTES {
            return Err(ToolCallError::CallIdTooLong {
                size: call.call_id.len(),
                limit: MAX_CALL_ID_BYTES,
            });
        }
        let Some(tool) = self.tool(&call.name) else {
            return Err(ToolCallError::UnknownTool {
                name: clip(&call.name),
                surface_version: self.surface_version,
            });
        };
        let mut input = match call.arguments {
            None => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v,
            Some(other) => {
                return Err(ToolCallError::ArgumentsNotObject {
                    name: tool.name.clone(),
                    found: crate::json::type_phrase(&other),
                })
            }
        };
        if strict {
            if let Ok(s) = &tool.strict {
                s.strip_absent_nulls(&mut input);
            }
        }
        Ok(AgentInvocation {
            invocation_id: call.call_id,
            capability_id: tool.capability_id.clone(),
            registration_id: Some(tool.registration_id.clone()),
            surface_version: Some(tool.surface_version),
            input,
            instance_id: None,
            confirmation_id: None,
        })
    }

    /// The MCP result of a call of `name` ([`CatalogTool::mcp_result`]; an
    /// unknown name is treated as a tool without output schema).
    pub fn mcp_result(&self, name: &str, result: &AgentInvocationResult) -> McpCallToolResult {
        match self.tool(name) {
            Some(t) => t.mcp_result(result),
            None => result::mcp_result(result, None),
        }
    }
}

fn clip(name: &str) -> String {
    name.chars().take(NAME_IN_ERRORS).collect()
}

fn build_tool(
    e: Entry<'_>,
    name: String,
    qualifier: Option<String>,
    options: &ExportOptions,
) -> CatalogTool {
    let normalized = schema::normalize(&e.input, &options.schema);
    let rooted = schema::object_root(normalized.schema.clone());
    let callable = rooted.is_some();
    let strict_options = strict::StrictOptions {
        null_is_absent: e.kind == ToolKind::View,
        limits: options.strict_limits.clone(),
    };
    let strict = if options.schema.refs == RefMode::InlineKeepRecursive {
        rooted.clone()
    } else {
        let keep = NormalizeOptions {
            refs: RefMode::InlineKeepRecursive,
            ..options.schema.clone()
        };
        schema::object_root(schema::normalize(&e.input, &keep).schema)
    }
    .map_or_else(
        || {
            Err(NotStrict {
                path: String::new(),
                reason: NotStrictReason::RootNotObject,
            })
        },
        |s| strict::strict_schema(&s, &strict_options),
    );
    let output = e
        .output
        .map(|o| output_schema(schema::normalize(o, &options.schema).schema));
    let description = describe(&e, qualifier.is_some(), options.include_unavailable);
    CatalogTool {
        title: naming::title(&e.key, qualifier.as_deref()),
        name,
        description,
        kind: e.kind,
        capability_id: e.capability_id.to_string(),
        registration_id: e.registration_id.to_string(),
        context: e.context.cloned(),
        effect: e.effect,
        observation: e.observation,
        confirmation: e.confirmation,
        available: e.available,
        unavailable_reason: e.unavailable_reason.map(str::to_string),
        callable,
        exported: callable && (e.available || options.include_unavailable),
        input_schema: rooted.unwrap_or(normalized.schema),
        input_loosened: normalized.loosened,
        output,
        strict,
        route: e.route.clone(),
        surface_version: e.surface_version,
    }
}

fn output_schema(schema: Value) -> OutputSchema {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return OutputSchema {
            schema,
            wrapped: false,
        };
    }
    let mut inner = schema;
    let defs = inner.as_object_mut().and_then(|m| m.remove("$defs"));
    let mut properties = Map::new();
    properties.insert(OUTPUT_WRAPPER.into(), inner);
    let mut wrapper = Map::new();
    wrapper.insert("type".into(), Value::String("object".into()));
    wrapper.insert("properties".into(), Value::Object(properties));
    wrapper.insert(
        "required".into(),
        Value::Array(vec![Value::String(OUTPUT_WRAPPER.into())]),
    );
    if let Some(defs) = defs {
        wrapper.insert("$defs".into(), defs);
    }
    OutputSchema {
        schema: Value::Object(wrapper),
        wrapped: true,
    }
}

fn describe(e: &Entry<'_>, qualified: bool, include_unavailable: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !e.description.trim().is_empty() {
        parts.push(e.description.clone());
    }
    if let Some(c) = e.context {
        if e.kind == ToolKind::Procedure || qualified {
            parts.push(format!(
                "Acts on the {} component \"{}\".",
                c.component_type, c.instance_id
            ));
        }
    }
    let locked: Vec<&str> = e
        .bound
        .iter()
        .filter(|b| b.locked)
        .map(|b| b.path.as_str())
        .collect();
    if !locked.is_empty() {
        parts.push(format!(
            "The application sets {} from the current view; they are not arguments.",
            locked.join(", ")
        ));
    }
    if e.confirmation == ConfirmationLevel::Required {
        parts.push("The user confirms each call in the application before it runs.".into());
    }
    if include_unavailable && !e.available {
        parts.push(match e.unavailable_reason {
            Some(r) => format!("Currently unavailable: {r}"),
            None => "Currently unavailable.".into(),
        });
    }
    parts.join("\n\n")
}

// ----- tool calls ------------------------------------------------------------------------

/// A model's tool call: the tool name, the provider's call id (becomes the
/// invocation id) and the arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The tool name the model used.
    pub name: String,
    /// The provider's call id (OpenAI `call_id`, Anthropic `tool_use` id,
    /// or an id the MCP server makes per `tools/call`): becomes the
    /// invocation id, so it must be unique per call.
    pub call_id: String,
    /// The arguments; `None` (MCP without `arguments`) means `{}`.
    pub arguments: Option<Value>,
}

impl ToolCall {
    /// A call with parsed arguments.
    pub fn new(
        name: impl Into<String>,
        call_id: impl Into<String>,
        arguments: Option<Value>,
    ) -> Self {
        Self {
            name: name.into(),
            call_id: call_id.into(),
            arguments,
        }
    }

    /// A call whose arguments are JSON text (OpenAI sends `arguments` as a
    /// string). Empty or whitespace-only text means `{}`.
    ///
    /// # Errors
    /// [`ToolCallError::ArgumentsTooLarge`] over [`MAX_ARGUMENTS_BYTES`];
    /// [`ToolCallError::ArgumentsNotJson`] with line and column.
    pub fn from_json_arguments(
        name: impl Into<String>,
        call_id: impl Into<String>,
        arguments: &str,
    ) -> Result<Self, ToolCallError> {
        let name = name.into();
        if arguments.len() > MAX_ARGUMENTS_BYTES {
            return Err(ToolCallError::ArgumentsTooLarge {
                name: clip(&name),
                size: arguments.len(),
                limit: MAX_ARGUMENTS_BYTES,
            });
        }
        let arguments = if arguments.trim().is_empty() {
            None
        } else {
            match serde_json::from_str::<Value>(arguments) {
                Ok(v) => Some(v),
                Err(err) => {
                    return Err(ToolCallError::ArgumentsNotJson {
                        name: clip(&name),
                        line: err.line(),
                        column: err.column(),
                    })
                }
            }
        };
        Ok(Self {
            name,
            call_id: call_id.into(),
            arguments,
        })
    }
}

/// Why a tool call could not become an invocation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolCallError {
    /// No tool of this name in the catalog (never exported, or from an
    /// older tool list).
    #[error("no tool named `{name}` in the catalog of surface version {surface_version}; the model must list the tools again")]
    UnknownTool {
        /// The name (first 128 characters).
        name: String,
        /// The catalog's surface version.
        surface_version: u64,
    },
    /// The arguments are JSON but not an object.
    #[error("the arguments of tool `{name}` must be a JSON object, not {found}")]
    ArgumentsNotObject {
        /// The tool name.
        name: String,
        /// What they are (`"an array"`, `"null"`, …).
        found: &'static str,
    },
    /// The arguments text is not JSON.
    #[error("the arguments of tool `{name}` are not valid JSON (line {line}, column {column})")]
    ArgumentsNotJson {
        /// The tool name (first 128 characters).
        name: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// The arguments text is over [`MAX_ARGUMENTS_BYTES`].
    #[error("the arguments of tool `{name}` are {size} bytes; the limit is {limit}")]
    ArgumentsTooLarge {
        /// The tool name (first 128 characters).
        name: String,
        /// Their size in bytes.
        size: usize,
        /// [`MAX_ARGUMENTS_BYTES`].
        limit: usize,
    },
    /// A meta tool's arguments do not follow its schema (an unexpected
    /// key, `surface_act` without a string `tool`, a `query` that is not a
    /// string, a `limit` that is not a positive integer).
    #[error("the arguments of `{tool}` do not follow its schema")]
    MetaArguments {
        /// `surface_discover` or `surface_act`.
        tool: &'static str,
    },
    /// The call id is empty.
    #[error("the tool call has an empty call id")]
    EmptyCallId,
    /// The call id is over [`MAX_CALL_ID_BYTES`].
    #[error("the tool call id is {size} bytes; the limit is {limit}")]
    CallIdTooLong {
        /// Its size in bytes.
        size: usize,
        /// [`MAX_CALL_ID_BYTES`].
        limit: usize,
    },
}

impl ToolCallError {
    /// The error to give the model (safe text, no echo of its input):
    /// unknown tool → `CAPABILITY_NOT_FOUND`, retry `after-refresh`; bad
    /// arguments → `INVALID_INPUT`, retry `with-changes`, one issue at the
    /// root (`details.issues: [{"path": "", "message"}]`, the message
    /// saying what is wrong; for a meta tool, what its arguments are); bad
    /// call id (the host's fault) →
    /// `EXECUTION_FAILED`, retry `no`.
    pub fn agent_error(&self) -> AgentError {
        let invalid = |message: &str| {
            AgentError::new(ErrorCode::InvalidInput, message, Retry::WithChanges).with_detail(
                "issues",
                serde_json::json!([{"path": "", "message": message}]),
            )
        };
        match self {
            ToolCallError::UnknownTool { .. } => AgentError::new(
                ErrorCode::CapabilityNotFound,
                "No tool with this name is available.",
                Retry::AfterRefresh,
            ),
            ToolCallError::ArgumentsNotObject { .. } => {
                invalid("The arguments must be one JSON object.")
            }
            ToolCallError::ArgumentsNotJson { .. } => invalid("The arguments are not valid JSON."),
            ToolCallError::ArgumentsTooLarge { limit, .. } => {
                invalid(&format!("The arguments are larger than {limit} bytes."))
            }
            ToolCallError::MetaArguments { tool } => invalid(meta::arguments_message(tool)),
            ToolCallError::EmptyCallId | ToolCallError::CallIdTooLong { .. } => AgentError::new(
                ErrorCode::ExecutionFailed,
                "The tool call could not be dispatched.",
                Retry::No,
            ),
        }
    }

    /// [`agent_error`](Self::agent_error) as an invocation result with this
    /// invocation id, the capability id the call meant (the tool's, or
    /// `""` for an unknown tool) and the catalog's surface version (e.g. for
    /// [`ToolCatalog::mcp_result`]).
    pub fn to_result(
        &self,
        invocation_id: impl Into<String>,
        capability_id: impl Into<String>,
        surface_version: u64,
    ) -> AgentInvocationResult {
        AgentInvocationResult::err(
            invocation_id,
            capability_id,
            self.agent_error(),
            surface_version,
        )
    }
}
