#![forbid(unsafe_code)]
// The README's examples run as doctests of `tests/docs`, a crate that
// depends on this one alone; here it is only the rendered documentation.
#![cfg_attr(not(doctest), doc = include_str!("../README.md"))]

/// The macros: `manifest!` turns the agent manifest into typed
/// references, `#[agent_procedure]` binds the app's own types to
/// procedures (`docs/codegen.md`).
pub use surface_macros::{agent_procedure, manifest};

/// Generates the input types of view capabilities, with the JSON Schemas
/// the agent is shown and validators generated from them, from a JSON file
/// at compile time — by the generator `manifest!` uses for procedure
/// inputs — so a page registers view capabilities without the `dynamic`
/// feature (no jsonschema in the page), and the schema the agent sees and
/// the validator that runs agree by construction (`docs/codegen.md`,
/// "`view_inputs!`", has the compiled example).
///
/// ```ignore
/// // view-inputs.json, next to Cargo.toml:
/// // {"SelectRows": {"type": "object",
/// //   "properties": {"deviceIds": {"type": "array", "items": {"type": "string"}}},
/// //   "required": ["deviceIds"], "additionalProperties": false}}
/// pub mod view {
///     agent_surface::view_inputs!("view-inputs.json");
///     // or, when the facade is re-exported under another path:
///     // agent_surface::view_inputs!("view-inputs.json", crate = ::my_facade);
/// }
/// let select = ViewCapability::new::<view::SelectRows, _, _>("select", "Select rows",
///     |input: view::SelectRows| async move { Ok(json!({"selected": input.device_ids})) });
/// ```
///
/// | argument | type | meaning |
/// |---|---|---|
/// | first | string literal | path of the file, relative to the including crate's root (`CARGO_MANIFEST_DIR`), as for `manifest!`; absolute and empty paths are rejected |
/// | `crate = path` | path, optional | the path generated code names the facade by; default `::agent_surface` |
///
/// The file is one JSON object, `{"SelectRows": <schema>, …}`: each key an
/// UpperCamelCase ASCII type name, each value an object schema
/// (`"type": "object"`). For each key, in the order written, it emits in
/// the invoking module:
///
/// | item | what it is |
/// |---|---|
/// | `pub mod select_rows` | the key in snake_case (keywords as `manifest!` maps path segments: `Type` → `r#type`): the generated `Input` and its helper types, named as `manifest!` names them (`filter_rows::InputStatus`), serde `Deserialize`/`Serialize`, docs from `description` |
/// | `pub use select_rows::Input as SelectRows;` | the type a handler takes |
/// | `impl ViewInput for SelectRows` | [`ViewInput::INPUT_SCHEMA_JSON`] (the schema in canonical JSON, as the agent sees it) and [`ViewInput::VALIDATOR`] (generated from it) |
///
/// and an `include_str!` of the file, so editing it rebuilds the crate.
///
/// Compile errors, on the path literal, all of a file's at once: a file
/// that is missing, over 1 MiB or 256 entries, not JSON or not an object; a
/// key written twice, not an UpperCamelCase type name (with the fix), `Self`,
/// or giving the module of another key; a schema that is not an object
/// schema, or whose type is a map rather than a struct or enum (declare
/// `properties`); every schema part the generated validator does not
/// support, with its keyword and JSON Pointer (at most 32, then a count).
pub use surface_macros::view_inputs;

// The names a page's binding and registration code uses, in one import
// (`use agent_surface::prelude::*;`): documented in the module.
pub mod prelude;

// The types an application names, at the root. Everything else is in the
// modules below; `docs/design.md` maps each concept to its module.

/// The manifest, the authority and typed procedure references.
pub use surface_runtime::{
    AgentEffect, AgentManifest, AgentProcedureRef, Authority, AuthorityError, AuthorityProcedure,
    ManifestError, ManifestIssue, ManifestTool,
};

/// Bindings: what the application registers, and what `#[agent_procedure]`
/// implements (`docs/bindings.md`).
pub use surface_runtime::{AgentProcedureBinding, BoundField, BoundInput, ProcedureInput};

/// The registry, components and view capabilities.
pub use surface_runtime::{
    ChangeReason, ComponentDefinition, Observation, ObservedItem, RegistrationError,
    RegistrationHandle, Subscription, SurfaceChange, SurfaceRegistry, SurfaceRegistryBuilder,
    ViewCapability, ViewEffect, ViewInput,
};

/// The snapshot: the agent's catalog.
pub use surface_runtime::{
    ActionDescriptor, AgentProcedureDescriptor, BindingSource, BoundFieldDescriptor,
    ComponentContext, ComponentDescriptor, ObservationDescriptor, SnapshotOptions, SurfaceRoute,
    SurfaceSnapshot, ViewCapabilityDescriptor,
};

/// Invocations and their results (`docs/pipeline.md`).
pub use surface_runtime::{
    check_invocation_id, AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult,
    ConsumerKind, ErrorCode, InvalidInvocationId, Retry, MAX_INVOCATION_ID_CHARS,
};

/// Local confirmation.
pub use surface_runtime::{
    ConfirmationError, ConfirmationInfo, ConfirmationLevel, ConfirmationState, PendingConfirmation,
};

/// Policies and audit (the built-in policies are in [`policy`]).
pub use surface_runtime::{
    AgentPolicy, AuditEvent, Discovery, Phase, PolicyContext, PolicyDecision, PolicyExt,
    PolicyStage, Principal, RegistrationKind,
};

/// Execution: the executor seam, cancellation and time.
pub use surface_runtime::{
    executor_fn, AgentProcedureExecutor, Cancellation, Clock, ExecuteRequest, ExecutionError,
    FnExecutor, ManualClock, ProcedureCallInfo, SystemClock, Timer,
};

/// A `Timer` backed by `tokio::time::sleep` (feature `tokio`).
#[cfg(feature = "tokio")]
pub use surface_runtime::TokioTimer;

/// Browser transports (feature `browser`, wasm32 only): oRPC over `fetch`,
/// the session over a `WebSocket`, a `setTimeout` timer
/// (`docs/browser.md`).
#[cfg(all(feature = "browser", target_arch = "wasm32"))]
pub use surface_runtime::browser;
/// WebMCP (feature `browser`, wasm32 only): the page's tools registered
/// with the browser's own agent API, `document.modelContext`
/// (`docs/browser.md`, "WebMCP").
#[cfg(all(feature = "browser", target_arch = "wasm32"))]
pub use surface_runtime::webmcp;

/// The agent host's MCP server (feature `mcp`, native only: the
/// `surface-host` crate's `mcp` module; `docs/agents.md`, "The MCP
/// server").
#[cfg(all(feature = "mcp", not(target_arch = "wasm32")))]
pub use surface_host::mcp;

/// The agent host as one component (features `mcp` and `store`, native
/// only; with `sqlite` / `postgres` for those databases): [`Host`] opens
/// the store, the durable host, its replica and the MCP server in one
/// call; [`InProcessTab`] connects a page's session in the same process.
/// The `surface-host` crate's `host` module (docs/host.md, "The Host").
#[cfg(all(feature = "mcp", not(target_arch = "wasm32")))]
pub use surface_host::host::{
    ApprovalDecider, Database, DecideError, Host, HostBuilder, InProcessTab,
};
/// What happened on a page socket a [`Host`] serves
/// (`Host::page_socket`; features `mcp`, `store` and `axum`), and its
/// bounds (`HostBuilder::page_sockets`).
#[cfg(all(feature = "mcp", feature = "axum", not(target_arch = "wasm32")))]
pub use surface_host::host::{
    PageSocketEvent, PageSocketLimits, DEFAULT_PAGE_SOCKETS, DEFAULT_PAGE_SOCKETS_PER_SESSION,
    MAX_PAGE_SOCKET_MESSAGE_BYTES,
};
/// The approvals service a [`Host`] hands out (`Host::approvals`: the
/// guarded approver page and its JSON routes; features `mcp`, `store` and
/// `axum`; docs/host.md, "The approvals service").
#[cfg(all(feature = "mcp", feature = "axum", not(target_arch = "wasm32")))]
pub mod approvals {
    pub use surface_host::host::{
        default_summary, ApprovalsOptions, ApprovalsService, ApproverAuth, ApproverSignIn,
        HttpApprovalDecider, OnResumed, OutcomeSummary, APPROVER_COOKIE, DECIDE_TIMEOUT,
        DEFAULT_APPROVALS_PAGE_SIZE, MAX_APPROVALS_PAGE_SIZE, MAX_APPROVER_REQUEST_BYTES,
        MAX_DECIDE_ANSWER_BYTES, MAX_REPORTED_APPROVALS, MAX_SHOWN_PROBLEM_CHARS,
    };
}

/// Serving a host's routes with a header-read timeout and a header bound
/// (features `mcp` or `axum`, native only: the `surface-host` crate's
/// `server` module; `docs/limits.md`).
#[cfg(all(any(feature = "mcp", feature = "axum"), not(target_arch = "wasm32")))]
pub use surface_host::server;

/// The safe HTTP surface of a page host (feature `axum`, native only: the
/// `surface-host` crate's `web` module; `docs/host.md`, "Threat model").
#[cfg(all(feature = "axum", not(target_arch = "wasm32")))]
pub use surface_host::web;

/// The host store (features `store`, `sqlite`, `postgres`; native only):
/// what a [`Host`] persists, behind [`store::HostStore`] and, for the MCP
/// server's tokens and sessions, [`store::McpStore`] —
/// [`store::MemoryStore`], `SqliteStore` (`sqlite`), `PostgresStore`
/// (`postgres`) — and the wake-ups between host processes. The
/// `surface-store` crate, re-exported (docs/host.md, "The durable store").
#[cfg(all(feature = "store", not(target_arch = "wasm32")))]
pub use surface_store as store;

/// The runtime's modules, for everything not at the root: the oRPC
/// bridges ([`bridge`]), browser sessions and the agent host ([`host`]),
/// tool export for MCP, OpenAI and Anthropic ([`export`]), the format and
/// `pattern` checks ([`format`], [`pattern`]), and the modules of the root
/// types above.
pub use surface_runtime::{
    audit, authority, binding, bridge, cancellation, clock, component, confirmation, executor,
    export, format, invocation, page, pattern, pipeline, policy, procedure, registry, snapshot,
    sync,
};

/// The test kit for an application's own surface (feature `testing`):
/// `TestSurface`, a fake executor and clock, assertions and a stable
/// snapshot serialization for golden files (`docs/testing.md`).
#[cfg(feature = "testing")]
pub use surface_runtime::testing;

/// AG-UI (feature `ag-ui`): the page's live surface as frontend tools of
/// an agent server that speaks AG-UI, its calls run through the pipeline
/// (`docs/agents.md`, "AG-UI").
#[cfg(feature = "ag-ui")]
pub use surface_runtime::agui;

/// Browser sessions and the agent host (docs/host.md): the session
/// protocol's messages, [`host::BrowserSurfaceSession`] (the page side)
/// and the in-memory [`host::AgentHost`] (the `surface-runtime` crate's
/// `host` module), and — features `mcp` and `store`, native only — the
/// layers a [`Host`] is built of: `host::DurableHost` (the store under the
/// in-memory host), `host::replica` (several processes on one store) and
/// the `surface-host` crate's `host` module.
pub mod host {
    #[cfg(all(feature = "mcp", not(target_arch = "wasm32")))]
    pub use surface_host::host::*;
    pub use surface_runtime::host::*;
}

/// The surface contract (docs/drift.md, "The drift gate"): what an
/// application exposes to agents as canonical JSON, for the
/// `agent-surface` command's `snapshot` and `check`.
pub use surface_runtime::contract;

/// The manifest model: parsing, validation, digests and
/// `create_orpc_agent_manifest` (the `manifest!` macro shares the name in
/// the macro namespace).
pub use surface_runtime::manifest;

/// Validators generated at compile time (`docs/validation.md`): the type
/// the generated code returns. The helpers it calls are internal.
pub mod validation {
    pub use surface_runtime::validation::{ValidationError, Validator, MAX_REF_DEPTH};
}

/// The `uuid` crate `format: uuid` is read as with `manifest!(…,
/// typed_formats = [uuid])` (feature `typed-uuid`; docs/codegen.md, "Typed
/// formats"): build and read `Uuid`s without depending on `uuid` yourself.
#[cfg(feature = "typed-uuid")]
pub use uuid;

/// The `chrono` crate `format: date-time` and `date` are read as with
/// `manifest!(…, typed_formats = [chrono])` (feature `typed-chrono`;
/// docs/codegen.md, "Typed formats").
#[cfg(feature = "typed-chrono")]
pub use chrono;

/// The `url` crate `format: uri` and `url` are read as with `manifest!(…,
/// typed_formats = [url])` (feature `typed-url`; docs/codegen.md, "Typed
/// formats").
#[cfg(feature = "typed-url")]
pub use url;

/// serde, as the generated types use it: derive
/// `agent_surface::serde::{Serialize, Deserialize}` on your own types
/// without a serde dependency of your own (`#[agent_procedure]` points the
/// derive at this crate; elsewhere add `#[serde(crate =
/// "agent_surface::serde")]`). README, "Install and features".
pub use serde;

/// serde_json, as the generated types and the runtime use it (`Value`,
/// `json!`, `Map`).
pub use serde_json;

/// Items the generated code names. Not public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    #[cfg(feature = "typed-chrono")]
    pub use chrono;
    pub use serde;
    pub use serde_json;
    pub use surface_runtime::__private::{
        format, pattern, serde_helpers, validation, GeneratedProcedure,
    };
    #[cfg(feature = "typed-url")]
    pub use url;
    #[cfg(feature = "typed-uuid")]
    pub use uuid;
    // What the `#[agent_procedure]` expansion implements, named through
    // `api::__agent_surface_private` so it resolves from any crate.
    pub use surface_runtime::{BoundField, BoundInput, ProcedureInput};

    // The hidden proc macros the `manifest!` lookup macro expands through.
    pub use surface_macros::__agent_procedure_impl as agent_procedure_impl;
    pub use surface_macros::__agent_procedure_unknown as agent_procedure_unknown;
}
