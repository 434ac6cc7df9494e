//! The ordinary oRPC bridge (`docs/bridges.md`, "Ordinary bridge"): procedure references for the manifest's paths and an executor
//! that forwards the registry's validated effective input to the app's own
//! oRPC client.
//!
//! ```text
//! oRPC error (by body code)        surface error              retry
//! UNAUTHORIZED, FORBIDDEN          NOT_AUTHORIZED             no
//! APPROVAL_REQUIRED                DOMAIN_APPROVAL_REQUIRED   no   details.approvalId = data.approvalId
//! any other oRPC error             EXECUTION_FAILED           no   details.reason = the code of a defined error
//! non-oRPC response (404 text…)    EXECUTION_FAILED           no
//! redirect (3xx, never followed)   EXECUTION_FAILED           no   (the call may have taken effect)
//! body over the size limit         EXECUTION_FAILED           no   (the call may have taken effect)
//! client timeout elapsed           TIMEOUT                    yes for server-query, else no; details.timeoutMs
//! connection refused (not sent)    EXECUTION_FAILED           after-delay
//! response lost after sending      EXECUTION_FAILED           no   (the call may have taken effect)
//! cancelled                        CANCELLED                  no
//! ```
//!
//! Messages are fixed, safe texts; the full server or transport error is
//! kept in [`ExecutionError::internal`] for audit only. `approvalId` and
//! `reason` come from the server and reach `details` only if they pass
//! [`safe_identifier`](crate::bridge::safe_identifier).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::authority::Authority;
use crate::bridge::client::{
    duration_ms, CallMethod, CallOptions, Headers, OrpcCallError, OrpcClient, OrpcError,
};
use crate::bridge::sanitize::with_server_identifier;
use crate::executor::{AgentProcedureExecutor, ExecuteRequest, ExecutionError, ProcedureCallInfo};
use crate::invocation::{ErrorCode, Retry};
use crate::manifest::{AgentEffect, AgentManifest};
use crate::procedure::AgentProcedureRef;
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// The header the bridges' [`invocation_id_header`] sets.
pub const INVOCATION_ID_HEADER: &str = "x-agent-invocation-id";

/// Builds per-call request headers from the call context: a closure `Fn(&ProcedureCallInfo) -> Headers`.
/// Implemented for every such closure that is `Send + Sync` on native
/// targets.
pub trait CallContext: MaybeSend + MaybeSync {
    /// Headers for one call.
    fn headers(&self, info: &ProcedureCallInfo) -> Headers;
}

impl<F> CallContext for F
where
    F: Fn(&ProcedureCallInfo) -> Headers + MaybeSend + MaybeSync,
{
    fn headers(&self, info: &ProcedureCallInfo) -> Headers {
        self(info)
    }
}

/// A ready-made [`CallContext`]: `x-agent-invocation-id: <invocationId>`.
pub fn invocation_id_header(info: &ProcedureCallInfo) -> Headers {
    vec![(
        INVOCATION_ID_HEADER.to_string(),
        info.invocation_id.to_string(),
    )]
}

/// The procedure references a bridge offers: one untyped
/// `AgentProcedureRef<Value, Value>` per manifest path, never more (a
/// frontend can narrow exposure, never widen it). Typed code uses the
/// refs `manifest!` generates; these are for runtime manifests.
#[derive(Clone, Debug)]
pub struct BridgeRefs {
    authority: Authority,
    refs: BTreeMap<String, AgentProcedureRef<Value, Value>>,
}

impl BridgeRefs {
    pub(crate) fn new(manifest: &AgentManifest) -> Self {
        let authority = Authority::from_manifest(manifest.clone());
        let refs = manifest
            .tools
            .keys()
            .filter_map(|path| {
                AgentProcedureRef::from_authority(&authority, path).map(|r| (path.clone(), r))
            })
            .collect();
        BridgeRefs { authority, refs }
    }

    /// The reference for a dotted path, `None` when the manifest lacks it.
    pub fn get(&self, path: &str) -> Option<&AgentProcedureRef<Value, Value>> {
        self.refs.get(path)
    }

    /// All references, by path (sorted).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AgentProcedureRef<Value, Value>)> {
        self.refs.iter().map(|(p, r)| (p.as_str(), r))
    }

    /// The manifest's paths (sorted).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.refs.keys().map(String::as_str)
    }

    /// Number of references.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// Whether the manifest is empty.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// The bridge's manifest as an [`Authority`] (the refs are built from it).
    pub fn authority(&self) -> &Authority {
        &self.authority
    }
}

/// Options of [`create_orpc_agent_bridge`].
#[derive(Clone)]
pub struct OrpcAgentBridgeOptions {
    /// The app's oRPC client, with the user's normal authenticated
    /// transport (its own headers, cookies, …).
    pub client: Arc<dyn OrpcClient>,
    /// Which procedures the backend exposes to agents.
    pub manifest: AgentManifest,
    /// Per-call headers (e.g. [`invocation_id_header`]); none when `None`.
    pub call_context: Option<Arc<dyn CallContext>>,
    /// Paths of procedures the backend declared `route({ method: 'GET' })`,
    /// called with GET (the manifest has no method field). Everything else,
    /// and paths not in the manifest, use POST.
    pub get_paths: BTreeSet<String>,
}

impl OrpcAgentBridgeOptions {
    /// Options with no call context and POST for every procedure.
    pub fn new(client: Arc<dyn OrpcClient>, manifest: AgentManifest) -> Self {
        Self {
            client,
            manifest,
            call_context: None,
            get_paths: BTreeSet::new(),
        }
    }

    /// Sets the call context (a closure or fn `(&ProcedureCallInfo) ->
    /// Headers`, e.g. [`invocation_id_header`]).
    pub fn call_context<F>(mut self, call_context: F) -> Self
    where
        F: Fn(&ProcedureCallInfo) -> Headers + MaybeSend + MaybeSync + 'static,
    {
        self.call_context = Some(Arc::new(call_context));
        self
    }

    /// Calls `path` with GET.
    pub fn get(mut self, path: impl Into<String>) -> Self {
        self.get_paths.insert(path.into());
        self
    }
}

/// What [`create_orpc_agent_bridge`] returns: the references and the
/// executor to install with `registry.set_procedure_executor(bridge.executor)`.
#[derive(Clone)]
pub struct OrpcAgentBridge {
    /// One reference per manifest path.
    pub refs: BridgeRefs,
    /// Forwards calls to the oRPC client.
    pub executor: Arc<dyn AgentProcedureExecutor>,
}

/// Creates the ordinary bridge (`docs/bridges.md`, "Ordinary bridge").
///
/// The executor calls `client` at the request's path with the effective
/// input, the headers of `call_context(info)`, the method from
/// `get_paths`, and `info.cancellation`; errors are mapped by
/// [`map_orpc_error`]. A request for a path outside the manifest fails with
/// `EXECUTION_FAILED` without calling the client.
pub fn create_orpc_agent_bridge(options: OrpcAgentBridgeOptions) -> OrpcAgentBridge {
    let refs = BridgeRefs::new(&options.manifest);
    let executor = OrdinaryExecutor {
        client: options.client,
        manifest: options.manifest,
        call_context: options.call_context,
        get_paths: options.get_paths,
    };
    OrpcAgentBridge {
        refs,
        executor: Arc::new(executor),
    }
}

struct OrdinaryExecutor {
    client: Arc<dyn OrpcClient>,
    manifest: AgentManifest,
    call_context: Option<Arc<dyn CallContext>>,
    get_paths: BTreeSet<String>,
}

impl AgentProcedureExecutor for OrdinaryExecutor {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(async move {
            let Some(tool) = self.manifest.tool(&request.path) else {
                return Err(not_in_manifest(&request.path));
            };
            if request.info.cancellation.is_cancelled() {
                return Err(cancelled());
            }
            let headers = self
                .call_context
                .as_ref()
                .map(|c| c.headers(&request.info))
                .unwrap_or_default();
            let method = if self.get_paths.contains(&*request.path) {
                CallMethod::Get
            } else {
                CallMethod::Post
            };
            let options = CallOptions {
                headers,
                method,
                cancellation: Some(request.info.cancellation.clone()),
            };
            let query = tool.effect == AgentEffect::ServerQuery;
            self.client
                .call(&request.path, Some(request.input), options)
                .await
                .map_err(|e| {
                    let mut err = map_orpc_error(&e);
                    // Like the registry's own timeout: a query may be retried.
                    if err.code == ErrorCode::Timeout && query {
                        err.retry = Retry::Yes;
                    }
                    err
                })
        })
    }
}

pub(crate) fn not_in_manifest(path: &str) -> ExecutionError {
    ExecutionError::new(
        ErrorCode::ExecutionFailed,
        "This procedure is not served by the installed bridge.",
        Retry::No,
    )
    .with_internal(serde_json::json!({"kind": "not-in-manifest", "path": path}))
}

pub(crate) fn cancelled() -> ExecutionError {
    ExecutionError::new(ErrorCode::Cancelled, "The call was cancelled.", Retry::No)
}

/// The row of an oRPC error body: authorization, the server's own approval
/// (`approvalId` in details), or any other error (`reason` for declared
/// ones).
fn map_server_error(e: &OrpcError, internal: Value) -> ExecutionError {
    let mapped = |code, message: &str| {
        ExecutionError::new(code, message, Retry::No).with_internal(internal.clone())
    };
    if is_authorization_code(&e.code) {
        return mapped(
            ErrorCode::NotAuthorized,
            "The server refused to authorize this call.",
        );
    }
    if e.code == "APPROVAL_REQUIRED" {
        let err = mapped(
            ErrorCode::DomainApprovalRequired,
            "The server requires its own approval before this call can run; it is decided in the application, not by the agent.",
        );
        let approval_id = e
            .data
            .as_ref()
            .and_then(|d| d.get("approvalId"))
            .and_then(Value::as_str);
        return match approval_id {
            Some(id) => with_server_identifier(err, "approvalId", id),
            None => err,
        };
    }
    let message = if e.status >= 500 {
        "The server failed to execute the call."
    } else {
        "The server rejected the call."
    };
    let err = mapped(ErrorCode::ExecutionFailed, message);
    if e.defined {
        with_server_identifier(err, "reason", &e.code)
    } else {
        err
    }
}

/// Whether an oRPC error code is an authorization refusal
/// (`UNAUTHORIZED`/`FORBIDDEN`).
pub fn is_authorization_code(code: &str) -> bool {
    matches!(code, "UNAUTHORIZED" | "FORBIDDEN")
}

/// Maps a failed oRPC call to the surface error (the table in the module
/// docs). The message is a fixed safe text; `internal` holds
/// [`OrpcCallError::to_internal`]. The server-supplied `approvalId` and
/// `reason` reach `details` only through
/// [`safe_identifier`](crate::bridge::safe_identifier); a value that fails
/// it is withheld (named in `internal.withheldDetails`).
pub fn map_orpc_error(error: &OrpcCallError) -> ExecutionError {
    let internal = error.to_internal();
    let mapped = |code, message: &str, retry| {
        ExecutionError::new(code, message, retry).with_internal(internal.clone())
    };
    match error {
        OrpcCallError::Orpc(e) => map_server_error(e, internal),
        OrpcCallError::UnexpectedResponse { .. } => mapped(
            ErrorCode::ExecutionFailed,
            "The server did not answer as an oRPC server.",
            Retry::No,
        ),
        OrpcCallError::Redirect { .. } => mapped(
            ErrorCode::ExecutionFailed,
            "The server answered with a redirect, which is not followed; the call may have taken effect.",
            Retry::No,
        ),
        OrpcCallError::ResponseTooLarge { .. } => mapped(
            ErrorCode::ExecutionFailed,
            "The server's answer exceeded the response size limit; the call may have taken effect.",
            Retry::No,
        ),
        OrpcCallError::Timeout { timeout } => mapped(
            ErrorCode::Timeout,
            "The server did not answer within the client's time limit; the call may have taken effect.",
            Retry::No,
        )
        .with_detail("timeoutMs", duration_ms(*timeout)),
        OrpcCallError::Connect { .. } => mapped(
            ErrorCode::ExecutionFailed,
            "The server could not be reached; the call was not sent.",
            Retry::AfterDelay,
        ),
        OrpcCallError::Transport { .. } => mapped(
            ErrorCode::ExecutionFailed,
            "The connection failed before the server answered; the call may have taken effect.",
            Retry::No,
        ),
        OrpcCallError::Cancelled => cancelled().with_internal(internal),
        OrpcCallError::InvalidRequest { .. } => mapped(
            ErrorCode::ExecutionFailed,
            "The call could not be sent.",
            Retry::No,
        ),
    }
}
