//! The streamable HTTP endpoint: a bearer-token check in front of rmcp's
//! streamable HTTP server transport, and the MCP handler of one session.

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt::Display;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ErrorData, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, ResultType,
    ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use serde_json::Value;

use super::clock::now_ms;
use super::{rmcp_model, Listener, McpProgress, McpServer, Shared, PROTOCOL_VERSIONS};

/// The run a request's bearer token was issued for (an HTTP request
/// extension set by [`McpHttpService`]).
#[derive(Clone, Debug)]
struct AuthenticatedRun(String);

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// The MCP handler of one MCP session: bound to the run of the token that
/// opened it.
#[derive(Clone)]
struct SessionHandler {
    shared: Arc<Shared>,
    run: Arc<OnceLock<String>>,
}

impl SessionHandler {
    /// The run of this request, which must be the session's.
    fn run(&self, context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
        let run = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<AuthenticatedRun>())
            .map(|r| r.0.clone())
            .ok_or_else(|| ErrorData::invalid_request("unauthenticated request", None))?;
        let bound = self.run.get_or_init(|| run.clone());
        if *bound != run {
            return Err(ErrorData::invalid_request(
                "this MCP session belongs to another token's run; open a new session",
                None,
            ));
        }
        Ok(run)
    }
}

/// Whether a request was made on revision 2026-07-28 or later.
fn is_current_revision(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// One open `subscriptions/listen` stream of a run.
struct OpenSubscription {
    shared: Arc<Shared>,
    run: String,
    id: rmcp::model::RequestId,
}

impl Drop for OpenSubscription {
    fn drop(&mut self) {
        self.shared.close_subscription(&self.run, &self.id);
    }
}

fn server_config(shared: &Shared) -> ServerConfig {
    // Tasks: a held call's approval is a row of the host store.
    let capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_tasks()
        .build();
    ServerConfig::new(capabilities)
    .with_server_info(Implementation::new(
        shared.options.server_name.clone(),
        env!("CARGO_PKG_VERSION"),
    ))
    .with_instructions(
        "These tools act in the user's open application page and change with what the page shows. \
         Calls that need the user's confirmation wait until the user decides in the page; \
         you cannot confirm them yourself. \
         If tools/list stays empty and every call answers that no tool is available, the page is gone \
         (closed, or the server holding it restarted and it did not reconnect): listing again will not help; \
         ask the user to reopen the page and connect a new agent.",
    )
}

fn internal(what: &str, error: impl Display) -> ErrorData {
    tracing::error!(error = ?error.to_string(), "{what}");
    ErrorData::internal_error(what.to_string(), None)
}

impl ServerHandler for SessionHandler {
    fn get_info(&self) -> ServerConfig {
        server_config(&self.shared)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(
            PROTOCOL_VERSIONS
                .iter()
                .filter_map(|v| rmcp_model::protocol_version(v))
                .collect(),
        )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let run = self.run(&context)?;
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // The tasks extension is offered on 2026-07-28 only (the legacy
        // lane's experimental tasks are another protocol).
        if let Some(extensions) = result.capabilities.extensions.as_mut() {
            extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
            if extensions.is_empty() {
                result.capabilities.extensions = None;
            }
        }
        self.shared
            .add_listener(&run, Listener::session(context.peer.clone()))
            .await;
        Ok(result)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Only tool-list changes exist here (no prompts, no resources).
        (requested.tools_list_changed == Some(true))
            .then(|| SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let run = self.run(subscription.request_context())?;
        if !self.shared.open_subscription(&run) {
            return Err(ErrorData::internal_error(
                "too many subscriptions are open (on this server, or for this token's run); close one or try later",
                None,
            ));
        }
        // Uncounted and forgotten however `listen` ends (also when its
        // future is dropped with the client's connection).
        let _open = OpenSubscription {
            shared: self.shared.clone(),
            run: run.clone(),
            id: subscription.sink().id().clone(),
        };
        self.shared
            .add_listener(&run, Listener::subscription(subscription.sink().clone()))
            .await;
        subscription.cancelled().await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let run = self.run(&context)?;
        let tools = self
            .shared
            .mcp_tools(&run)
            .await
            .map_err(|e| internal("the run's tools cannot be exported", e))?;
        self.shared.mark_listed(&run, &tools);
        let mut result = rmcp_model::list_tools_result(tools)
            .map_err(|e| internal("a tool definition did not convert", e))?;
        // 2026-07-28 requires `resultType`; rmcp drops a complete one for a
        // legacy peer, and adds `ttlMs: 0` and `cacheScope: "private"`
        // (never cached: a run's tools change with its page and belong to
        // its token).
        result.result_type = Some(ResultType::COMPLETE);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let run = self.run(&context)?;
        let tool_call_id = match serde_json::to_value(&context.id) {
            Ok(Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(_) => "mcp".to_string(),
        };
        let arguments = request.arguments.map(Value::Object);
        let server = McpServer {
            shared: self.shared.clone(),
        };
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let report = move |p: McpProgress| -> surface_runtime::sync::BoxFuture<'static, ()> {
            let peer = peer.clone();
            let token = token.clone();
            Box::pin(async move {
                let Some(token) = token else {
                    return;
                };
                let param = ProgressNotificationParam::new(token, p.progress as f64)
                    .with_message(p.message);
                if let Err(error) = peer.notify_progress(param).await {
                    tracing::debug!(error = ?error, "progress notification not delivered");
                }
            })
        };
        let has_token = context.meta.get_progress_token().is_some();
        // Tasks are the 2026-07-28 extension: a legacy session that
        // declared it in `initialize` is not offered them.
        let tasks = is_current_revision(&context)
            && context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks());
        let call = server.call_tool_answered(
            &run,
            &tool_call_id,
            &request.name,
            arguments,
            if has_token { Some(&report) } else { None },
        );
        let (answer, result) = tokio::select! {
            answered = call => answered,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the client cancelled the call", None));
            }
        };
        if let (true, Some(result)) = (tasks, &result) {
            let replica = self.shared.replica();
            if let Some(task) = super::tasks::task_for_held_call(replica, &run, result).await {
                return Ok(CallToolResponse::Task(task));
            }
        }
        let mut answer = rmcp_model::call_tool_result(answer);
        answer.result_type = Some(ResultType::COMPLETE);
        Ok(CallToolResponse::from(answer))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let run = self.run(&context)?;
        if !is_current_revision(&context) {
            return Err(ErrorData::invalid_params("no such task", None));
        }
        super::tasks::get_task(self.shared.replica(), &run, &request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let run = self.run(&context)?;
        if !is_current_revision(&context) {
            return Err(ErrorData::invalid_params("no such task", None));
        }
        super::tasks::cancel_task(self.shared.replica(), &run, &request.task_id)
            .await
            .map(|_| ())
    }
}

/// The MCP endpoint (streamable HTTP) of an [`McpServer`]: a tower
/// [`Service`](tower_service::Service) that, in this order,
///
/// 1. refuses every request without a valid `Authorization: Bearer
///    <token>` with **401** (and `WWW-Authenticate: Bearer`), before
///    reading its body;
/// 2. refuses a present `Origin` that is neither in `allowed_origins` nor
///    the server's own loopback origin with **403** ([`origin_may_pass`]);
/// 3. reads a POST body up to `max_request_body_bytes` (**413** beyond)
///    and answers **400** with a JSON-RPC error for text that is not JSON
///    (`-32700`), a batch array or anything that is not one JSON-RPC 2.0
///    message (`-32600`);
/// 4. opens legacy sessions one at a time: an `initialize` beyond
///    `max_sessions` live sessions, or beyond `max_sessions_per_run` of
///    the token's run, gets **503**, however many arrive at once (a
///    2026-07-28 request opens no session); sessions idle in the store
///    for twice rmcp's keep-alive are deleted first;
/// 5. hands the request to rmcp's streamable HTTP server transport, which
///    checks `Host` against `allowed_hosts` (**403**), serves a request
///    that names 2026-07-28 (in `_meta` and the `MCP-Protocol-Version`
///    header) statelessly and any other on its session, and checks the
///    revision's headers against the body (**400**).
#[derive(Clone)]
pub struct McpHttpService {
    shared: Arc<Shared>,
    sessions: Arc<LocalSessionManager>,
    /// Held from the session count to the new session's creation.
    opening: Arc<tokio::sync::Mutex<()>>,
    inner: StreamableHttpService<SessionHandler, LocalSessionManager>,
}

impl std::fmt::Debug for McpHttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpService").finish_non_exhaustive()
    }
}

fn plain(status: StatusCode, message: &'static str) -> HttpResponse {
    let body =
        serde_json::json!({"error": status.canonical_reason().unwrap_or(""), "message": message});
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn unauthorized() -> HttpResponse {
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "send the bearer token this server issued: Authorization: Bearer <token>",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"mcp\""),
    );
    response
}

/// Whether a request's `Origin` may pass, checked before its body is read
/// or a session slot counted. It passes when it is
///
/// * absent (a native MCP client; the MCP transport specification asks
///   servers to validate a present `Origin`);
/// * equal to an entry of `allowed` (`scheme://host[:port]`, compared
///   case-insensitively, a missing port being the scheme's default; `:*`
///   matches every port; `null` matches the opaque origin `null`);
/// * the server's own loopback origin: `http://` or `https://` followed by
///   exactly the request's `Host` when that host is `localhost`,
///   `127.0.0.1` or `[::1]` — a page of this server itself, which a
///   DNS-rebinding page (whose origin names the attacker's host) can never
///   present.
///
/// Anything else (a foreign page, a malformed `Origin`) gets 403.
fn origin_may_pass(headers: &http::HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    if origin == "null" {
        return allowed.iter().any(|a| a == "null");
    }
    let Some(parsed) = Origin::parse(origin) else {
        return false;
    };
    if allowed.iter().any(|a| parsed.matches_entry(a)) {
        return true;
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    host.is_some_and(|host| parsed.is_own_loopback(host))
}

/// A serialized origin, `scheme://host[:port]`, lowercased.
#[derive(Debug, PartialEq)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// `None` unless `text` is `http(s)://host[:port]` with no path, query,
    /// user info or fragment.
    fn parse(text: &str) -> Option<Origin> {
        let (scheme, authority) = text.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let (host, port) = split_authority(authority)?;
        let port = match port {
            None => default_port,
            Some(p) => p.parse().ok()?,
        };
        Some(Origin { scheme, host, port })
    }

    /// Whether an `allowed_origins` entry admits this origin.
    fn matches_entry(&self, entry: &str) -> bool {
        if let Some(any_port) = entry.strip_suffix(":*") {
            return Origin::parse(any_port)
                .is_some_and(|e| e.scheme == self.scheme && e.host == self.host);
        }
        Origin::parse(entry).is_some_and(|e| e == *self)
    }

    /// Whether this is the origin of a loopback server reached as `host`
    /// (the request's `Host` header).
    fn is_own_loopback(&self, host: &str) -> bool {
        let Some((name, port)) = split_authority(host) else {
            return false;
        };
        let port = match port {
            None => {
                if self.scheme == "https" {
                    443
                } else {
                    80
                }
            }
            Some(p) => match p.parse() {
                Ok(p) => p,
                Err(_) => return false,
            },
        };
        matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]")
            && name == self.host
            && port == self.port
    }
}

/// `host[:port]` of an authority (IPv6 literals in brackets), the host
/// lowercased; `None` for user info, a path, or an empty host.
fn split_authority(authority: &str) -> Option<(String, Option<&str>)> {
    if authority.is_empty() || authority.contains(['/', '@', '?', '#', ' ']) {
        return None;
    }
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (host, rest) = authority.split_at(close + 1);
        match rest {
            "" => (host, None),
            _ => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty()
        || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
}

/// Whether a JSON-RPC message (already checked to be one) is an
/// `initialize` request.
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .is_ok_and(|m| m.method.as_deref() == Some("initialize"))
}

/// Whether a request's `MCP-Protocol-Version` header names 2026-07-28 or
/// later (the stateless lane).
fn names_current_revision(headers: &http::HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The longest a legacy `initialize` response is read to add the
/// 2025-11-25 `tasks` capability: 10 s (rmcp answers at once).
const INITIALIZE_READ: Duration = Duration::from_secs(10);

/// The largest legacy `initialize` response read whole: 256 KiB (larger
/// ones are passed on with the capability refused as not understood).
const MAX_INITIALIZE_BYTES: usize = 256 * 1024;

/// rmcp's answer to a legacy `initialize` with `capabilities.tasks`
/// (2025-11-25 experimental tasks: task-augmented `tools/call` and
/// `tasks/cancel`, [`super::tasks::legacy::capability`]) added to its
/// result — an `application/json` body or the `data:` line of an SSE
/// stream. A response that cannot be read within [`INITIALIZE_READ`] and
/// [`MAX_INITIALIZE_BYTES`] becomes a **500**.
async fn with_legacy_tasks_capability(response: HttpResponse) -> HttpResponse {
    let (mut parts, body) = response.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_INITIALIZE_BYTES);
    let bytes = match tokio::time::timeout(INITIALIZE_READ, limited.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        _ => {
            tracing::error!("MCP: the initialize response could not be read");
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "initialize failed; try again",
            );
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let edited: Vec<String> = text
        .split('\n')
        .map(|line| {
            let (prefix, json) = match line.strip_prefix("data:") {
                Some(rest) => ("data: ", rest.trim()),
                None => ("", line.trim()),
            };
            match add_tasks_capability(json) {
                Some(message) => format!("{prefix}{message}"),
                None => line.to_string(),
            }
        })
        .collect();
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(Bytes::from(edited.join("\n"))).boxed())
}

/// The initialize response `json` with `result.capabilities.tasks`, or
/// `None` for anything else.
fn add_tasks_capability(json: &str) -> Option<String> {
    if !json.starts_with('{') {
        return None;
    }
    let mut message: Value = serde_json::from_str(json).ok()?;
    let capabilities = message
        .get_mut("result")?
        .get_mut("capabilities")?
        .as_object_mut()?;
    capabilities.insert("tasks".to_string(), super::tasks::legacy::capability());
    serde_json::to_string(&message).ok()
}

/// The token of `Authorization: Bearer <token>`.
fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

impl McpHttpService {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        let options = &shared.options;
        // One session table (and one opening lock) per server, however
        // many services are made: `max_sessions` bounds the server.
        let (sessions, opening) = shared
            .http_sessions
            .get_or_init(|| {
                let mut sessions = LocalSessionManager::default();
                // A session must outlive its longest call: rmcp closes
                // sessions idle for `keep_alive`, and a call waiting for
                // the user sends nothing when the client asked for no
                // progress.
                sessions.session_config.keep_alive = Some(keep_alive(options));
                (Arc::new(sessions), Arc::new(tokio::sync::Mutex::new(())))
            })
            .clone();
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(options.allowed_hosts.clone())
            // `Origin` is checked here, before rmcp ([`origin_may_pass`]),
            // which also admits the server's own loopback origin.
            .disable_allowed_origins()
            .with_max_request_body_bytes(options.max_request_body_bytes);
        // Sessions opened on another replica (or before a restart) are
        // served here too.
        config.session_store = Some(Arc::new(super::session_store::StoreSessions(
            shared.mcp_store().clone(),
        )));
        let factory_shared = shared.clone();
        let inner = StreamableHttpService::new(
            move || {
                Ok(SessionHandler {
                    shared: factory_shared.clone(),
                    run: Arc::new(OnceLock::new()),
                })
            },
            sessions.clone(),
            config,
        );
        Self {
            shared,
            sessions,
            opening,
            inner,
        }
    }

    /// Live MCP sessions.
    pub async fn session_count(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }
}

fn too_many_sessions() -> HttpResponse {
    plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many MCP sessions are open; close one (HTTP DELETE) or try later",
    )
}

/// rmcp's keep-alive of a session: it closes a session idle this long.
/// A session must outlive its longest call (a call waiting for the user
/// sends nothing when the client asked for no progress): `call_timeout`
/// + 30 s.
fn keep_alive(options: &super::McpServerOptions) -> Duration {
    options.call_timeout + Duration::from_secs(30)
}

impl McpHttpService {
    /// Every request naming a session (POST, GET, DELETE) must come from
    /// the run whose token opened it (**404** otherwise, as for an unknown
    /// session). A session this replica does not hold (opened on another
    /// replica, or here before it expired or the process restarted) is restored
    /// by rmcp from the store — only for that run, only when it was used
    /// within twice the keep-alive, and within `max_sessions` and
    /// `max_sessions_per_run` (**503**).
    async fn check_session(&self, headers: &http::HeaderMap, run: &str) -> Option<HttpResponse> {
        let session = headers.get("mcp-session-id")?;
        let not_found = || Some(plain(StatusCode::NOT_FOUND, "Session not found"));
        let Ok(session) = session.to_str() else {
            return not_found();
        };
        let bound = self.shared.lock().session_runs.get(session).cloned();
        match bound {
            Some((bound, _)) if bound != run => return not_found(),
            Some((_, touched)) if self.sessions.sessions.read().await.contains_key(session) => {
                self.touch_session(session, touched).await;
                return None;
            }
            _ => {}
        }
        self.sweep_idle_sessions().await;
        match self.shared.mcp_store().mcp_session_run(session).await {
            Ok(Some(bound)) if bound == run => {}
            Ok(_) => return not_found(),
            Err(error) => {
                tracing::error!(error = ?error, "MCP: the session store cannot be read");
                return Some(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the session cannot be restored now; try again",
                ));
            }
        }
        let _opening = self.opening.lock().await;
        if let Some(refusal) = self.refuse_beyond_bounds(run).await {
            return Some(refusal);
        }
        self.remember_session(session, run).await;
        if let Err(error) = self
            .shared
            .mcp_store()
            .touch_mcp_session(session, now_ms())
            .await
        {
            tracing::warn!(error = ?error, "MCP: a restored session is not marked used");
        }
        None
    }

    /// Marks `session` used in the store when this replica last did so
    /// half a keep-alive ago or earlier (the store deletes sessions idle
    /// past twice the keep-alive; a call lasts less than one).
    async fn touch_session(&self, session: &str, touched: std::time::Instant) {
        if touched.elapsed() < keep_alive(&self.shared.options) / 2 {
            return;
        }
        if let Some(entry) = self.shared.lock().session_runs.get_mut(session) {
            entry.1 = std::time::Instant::now();
        }
        if let Err(error) = self
            .shared
            .mcp_store()
            .touch_mcp_session(session, now_ms())
            .await
        {
            tracing::warn!(error = ?error, "MCP: a session is not marked used");
        }
    }

    /// Deletes from the store the sessions no request used for twice the
    /// keep-alive (on any replica).
    async fn sweep_idle_sessions(&self) {
        let idle = keep_alive(&self.shared.options) * 2;
        let before = now_ms().saturating_sub(i64::try_from(idle.as_millis()).unwrap_or(i64::MAX));
        if let Err(error) = self
            .shared
            .mcp_store()
            .delete_idle_mcp_sessions(before)
            .await
        {
            tracing::warn!(error = ?error, "MCP: idle sessions are not deleted from the store");
        }
    }

    /// **503** when `max_sessions` sessions are live here, or
    /// `max_sessions_per_run` of `run`'s. Called with `opening` held.
    async fn refuse_beyond_bounds(&self, run: &str) -> Option<HttpResponse> {
        let live: std::collections::HashSet<String> = {
            let sessions = self.sessions.sessions.read().await;
            sessions.keys().map(ToString::to_string).collect()
        };
        let options = &self.shared.options;
        if live.len() >= options.max_sessions {
            return Some(too_many_sessions());
        }
        let of_run = self
            .shared
            .lock()
            .session_runs
            .iter()
            .filter(|(session, (bound, _))| bound == run && live.contains(*session))
            .count();
        (of_run >= options.max_sessions_per_run).then(|| {
            plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many MCP sessions are open for this token's run; close one (HTTP DELETE) or try later",
            )
        })
    }

    /// Remembers which run `session` belongs to, forgetting sessions rmcp
    /// no longer holds (the table stays within twice `max_sessions`).
    async fn remember_session(&self, session: &str, run: &str) {
        let live: std::collections::HashSet<String> = {
            let sessions = self.sessions.sessions.read().await;
            sessions.keys().map(ToString::to_string).collect()
        };
        let mut state = self.shared.lock();
        if state.session_runs.len() >= 2 * self.shared.options.max_sessions.max(1) {
            state.session_runs.retain(|s, _| live.contains(s));
        }
        state.session_runs.insert(
            session.to_string(),
            (run.to_string(), std::time::Instant::now()),
        );
    }

    /// Records the run a new session was opened for, here and in the store
    /// (for the other replicas and the next process).
    async fn bind_session(&self, response: &HttpResponse, run: &str) {
        let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        self.remember_session(session, run).await;
        let store = self.shared.mcp_store();
        if let Err(error) = store.bind_mcp_session(session, run, now_ms()).await {
            tracing::error!(error = ?error, "MCP: the session's run is not recorded; other replicas will not serve it");
        }
    }
}

impl<B> tower_service::Service<Request<B>> for McpHttpService
where
    B: http_body::Body + Send + 'static,
    B::Error: Display,
    B::Data: Send + 'static,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = surface_runtime::sync::BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let Some(token) = bearer(request.headers()).map(str::to_string) else {
            return Box::pin(std::future::ready(Ok(unauthorized())));
        };
        let this = self.clone();
        Box::pin(async move {
            let Some(run) = this.shared.run_for_token(&token).await else {
                return Ok(unauthorized());
            };
            request
                .extensions_mut()
                .insert(AuthenticatedRun(run.clone()));
            if !origin_may_pass(request.headers(), &this.shared.options.allowed_origins) {
                return Ok(plain(
                    StatusCode::FORBIDDEN,
                    "Forbidden: Origin header is not allowed",
                ));
            }
            // GET (the event stream) and DELETE name a session too: the
            // same run check as a POST.
            let headers = request.headers().clone();
            if let Some(refusal) = this.check_session(&headers, &run).await {
                return Ok(refusal);
            }
            if request.method() != http::Method::POST {
                return Ok(this.inner.handle(request).await);
            }
            let (parts, body) = request.into_parts();
            let limit = this.shared.options.max_request_body_bytes;
            let body = match super::jsonrpc::read_message(body, limit).await {
                Ok(body) => body,
                Err(refusal) => return Ok(refusal.response()),
            };
            Ok(this.serve_post(parts, body, &run).await)
        })
    }
}

impl McpHttpService {
    /// A POST whose body is one JSON-RPC message: a legacy `initialize`
    /// opens a session; any other request is refused while its id is in
    /// flight (in its session, or for a stateless one with the same body
    /// from the same run: [`super::inflight`]) and handed to rmcp (or to
    /// the legacy tasks lane) otherwise.
    async fn serve_post(
        &self,
        parts: http::request::Parts,
        body: Bytes,
        run: &str,
    ) -> HttpResponse {
        let session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // Only a legacy `initialize` opens a session; a 2026-07-28
        // request carries none and is served statelessly.
        if session.is_none() && is_initialize(&body) {
            return self.open_session(parts, body, run).await;
        }
        let scope = match &session {
            Some(session) => format!("session:{session}"),
            None => format!(
                "run:{run}:{}",
                hex::encode(surface_runtime::hash::sha256(&body))
            ),
        };
        let mark = match self.shared.in_flight.mark(scope.clone(), &body) {
            Ok(mark) => mark,
            Err(id) => return super::inflight::already_in_flight(&id),
        };
        let lasts = self.shared.options.call_timeout + Duration::from_secs(60);
        let claim = match super::inflight::claim_call(
            &self.shared.in_flight,
            self.shared.mcp_store(),
            &scope,
            &body,
            session.is_some(),
            i64::try_from(lasts.as_millis()).unwrap_or(i64::MAX),
        )
        .await
        {
            Ok(claim) => claim,
            Err(duplicate) => return duplicate.response(),
        };
        if session.is_some() && !names_current_revision(&parts.headers) {
            if let Some(answer) = super::tasks::legacy::answer(&self.shared, run, &body).await {
                return super::inflight::held_until_answered(answer, mark, claim);
            }
        }
        let response = self
            .inner
            .handle(Request::from_parts(parts, Full::new(body)))
            .await;
        super::inflight::held_until_answered(response, mark, claim)
    }

    /// A legacy `initialize`: a new session within the bounds.
    async fn open_session(
        &self,
        parts: http::request::Parts,
        body: Bytes,
        run: &str,
    ) -> HttpResponse {
        // One opening at a time: the count and the new session are one
        // step, so concurrent `initialize`s cannot overshoot.
        self.sweep_idle_sessions().await;
        let _opening = self.opening.lock().await;
        if let Some(refusal) = self.refuse_beyond_bounds(run).await {
            return refusal;
        }
        let request = Request::from_parts(parts, Full::new(body));
        let response = self.inner.handle(request).await;
        self.bind_session(&response, run).await;
        with_legacy_tasks_capability(response).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: &str, host: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(header::ORIGIN, origin.parse().unwrap());
        h.insert(header::HOST, host.parse().unwrap());
        h
    }

    #[test]
    fn the_servers_own_loopback_origin_passes_and_foreign_ones_do_not() {
        let none: &[String] = &[];
        for (origin, host) in [
            ("http://localhost:8123", "localhost:8123"),
            ("http://LOCALHOST:8123", "localhost:8123"),
            ("http://127.0.0.1:9000", "127.0.0.1:9000"),
            ("http://[::1]:9000", "[::1]:9000"),
            ("http://localhost", "localhost"),
            ("https://localhost:8443", "localhost:8443"),
        ] {
            assert!(
                origin_may_pass(&headers(origin, host), none),
                "{origin} {host}"
            );
        }
        for (origin, host) in [
            // A DNS-rebinding page names its own host.
            ("http://evil.example.com", "evil.example.com"),
            ("http://evil.example.com:8123", "localhost:8123"),
            // Another local server's page.
            ("http://localhost:3000", "localhost:8123"),
            ("http://127.0.0.1:8123", "localhost:8123"),
            // Not loopback, even when it names the Host.
            ("http://app.example.com", "app.example.com"),
            ("http://localhost:8123/path", "localhost:8123"),
            ("http://user@localhost:8123", "localhost:8123"),
            ("ftp://localhost:8123", "localhost:8123"),
            ("null", "localhost:8123"),
            ("localhost:8123", "localhost:8123"),
            ("http://localhost:", "localhost:"),
        ] {
            assert!(
                !origin_may_pass(&headers(origin, host), none),
                "{origin} {host}"
            );
        }
        let mut no_origin = http::HeaderMap::new();
        no_origin.insert(header::HOST, "localhost:1".parse().unwrap());
        assert!(origin_may_pass(&no_origin, none));
    }

    #[test]
    fn allowed_origins_match_scheme_host_and_port() {
        let allowed: Vec<String> = ["https://app.example.com", "http://tools.example:*", "null"]
            .map(String::from)
            .to_vec();
        let pass = |origin: &str| origin_may_pass(&headers(origin, "mcp.example"), &allowed);
        assert!(pass("https://app.example.com"));
        assert!(pass("https://APP.example.com:443"));
        assert!(!pass("https://app.example.com:8443"));
        assert!(!pass("http://app.example.com"));
        assert!(pass("http://tools.example:1234"));
        assert!(pass("http://tools.example"));
        assert!(!pass("https://tools.example:1234"));
        assert!(pass("null"));
        assert!(!pass("https://other.example"));
    }
}
