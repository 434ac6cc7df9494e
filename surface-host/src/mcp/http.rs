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
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use serde_json::Value;

use super::{rmcp_model, McpProgress, McpServer, Shared, PROTOCOL_VERSIONS};

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

fn server_config(shared: &Shared) -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build(),
    )
    .with_server_info(Implementation::new(
        shared.options.server_name.clone(),
        env!("CARGO_PKG_VERSION"),
    ))
    .with_instructions(
        "These tools act in the user's open application page and change with what the page shows. \
         Calls that need the user's confirmation wait until the user decides in the page; \
         you cannot confirm them yourself.",
    )
}

fn internal(what: &str, error: impl Display) -> ErrorData {
    tracing::error!(%error, "{what}");
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
        let result = self.negotiate_initialize(&request)?;
        self.shared.register_peer(&run, context.peer.clone()).await;
        Ok(result)
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
        rmcp_model::list_tools_result(tools)
            .map_err(|e| internal("a tool definition did not convert", e))
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
                    tracing::debug!(%error, "progress notification not delivered");
                }
            })
        };
        let has_token = context.meta.get_progress_token().is_some();
        let call = server.call_tool_with_progress(
            &run,
            &tool_call_id,
            &request.name,
            arguments,
            if has_token { Some(&report) } else { None },
        );
        let result = tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the client cancelled the call", None));
            }
        };
        Ok(CallToolResponse::from(rmcp_model::call_tool_result(result)))
    }
}

/// The MCP endpoint (streamable HTTP) of an [`McpServer`]: a tower
/// [`Service`](tower_service::Service) that, in this order,
///
/// 1. refuses every request without a valid `Authorization: Bearer
///    <token>` with **401** (and `WWW-Authenticate: Bearer`), before
///    reading its body;
/// 2. reads a POST body up to `max_request_body_bytes` (**413** beyond)
///    and answers **400** with a JSON-RPC error for text that is not JSON
///    (`-32700`), a batch array or anything that is not one JSON-RPC 2.0
///    message (`-32600`);
/// 3. opens sessions one at a time: an `initialize` (a POST without
///    `Mcp-Session-Id`) beyond `max_sessions` live sessions gets **503**,
///    however many arrive at once;
/// 4. hands the request to rmcp's streamable HTTP server transport, which
///    checks `Host` against `allowed_hosts` and a present `Origin` against
///    `allowed_origins` (**403**; an empty list refuses every `Origin`).
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

/// Whether a request's `Origin` can pass, checked before its body is read
/// or a session slot counted: absent, or equal (case-insensitively) to an
/// allowed entry; entries with a `:*` port are left to rmcp's own check,
/// which runs on every request after this one.
fn origin_may_pass(headers: &http::HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    allowed
        .iter()
        .any(|a| a.ends_with(":*") || a.eq_ignore_ascii_case(origin))
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
        let mut sessions = LocalSessionManager::default();
        // A session must outlive its longest call: rmcp closes sessions
        // idle for `keep_alive`, and a call waiting for the user sends
        // nothing when the client asked for no progress.
        sessions.session_config.keep_alive = Some(options.call_timeout + Duration::from_secs(30));
        let sessions = Arc::new(sessions);
        #[allow(unused_mut)]
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(options.allowed_hosts.clone())
            .with_allowed_origins(options.allowed_origins.clone())
            .enforce_origin_validation()
            .with_max_request_body_bytes(options.max_request_body_bytes);
        #[cfg(feature = "store")]
        if let super::Backend::Replica(replica) = &shared.backend {
            // Sessions opened on another replica are served here too.
            config.session_store = Some(Arc::new(super::replica::StoreSessions(replica.clone())));
        }
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
            opening: Arc::new(tokio::sync::Mutex::new(())),
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

impl McpHttpService {
    /// In replica mode, a request for a session this replica does not hold
    /// (opened on another replica, or here before it expired) is restored
    /// by rmcp from the store — only for the run whose token opened it
    /// (**404** otherwise, as for an unknown session) and within
    /// `max_sessions` (**503**).
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    async fn check_restore<B>(&self, request: &Request<B>) -> Option<HttpResponse> {
        #[cfg(feature = "store")]
        if let super::Backend::Replica(replica) = &self.shared.backend {
            let session = request.headers().get("mcp-session-id")?.to_str().ok()?;
            if self.sessions.sessions.read().await.contains_key(session) {
                return None;
            }
            let run = request.extensions().get::<AuthenticatedRun>()?;
            let bound = replica.durable().store().mcp_session_run(session).await;
            match bound {
                Ok(Some(bound)) if bound == run.0 => {}
                Ok(_) => return Some(plain(StatusCode::NOT_FOUND, "Session not found")),
                Err(error) => {
                    tracing::error!(%error, "MCP: the session store cannot be read");
                    return Some(plain(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the session cannot be restored now; try again",
                    ));
                }
            }
            let _opening = self.opening.lock().await;
            if self.session_count().await >= self.shared.options.max_sessions {
                return Some(too_many_sessions());
            }
        }
        let _ = request;
        None
    }

    /// In replica mode, records the run a new session was opened for.
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    async fn bind_session(&self, response: &HttpResponse, run: &str) {
        #[cfg(feature = "store")]
        if let super::Backend::Replica(replica) = &self.shared.backend {
            let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            else {
                return;
            };
            let at = i64::try_from(surface_runtime::Clock::now_ms(
                &surface_runtime::SystemClock,
            ))
            .unwrap_or(i64::MAX);
            let store = replica.durable().store();
            if let Err(error) = store.bind_mcp_session(session, run, at).await {
                tracing::error!(%error, "MCP: the session's run is not recorded; other replicas will not serve it");
            }
        }
        let _ = (response, run);
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
            if request.method() != http::Method::POST {
                return Ok(this.inner.handle(request).await);
            }
            let opens_session = !request.headers().contains_key("mcp-session-id");
            let (parts, body) = request.into_parts();
            let limit = this.shared.options.max_request_body_bytes;
            let body = match super::jsonrpc::read_message(body, limit).await {
                Ok(body) => body,
                Err(refusal) => return Ok(refusal.response()),
            };
            let request = Request::from_parts(parts, Full::new(body));
            if !opens_session {
                if let Some(refusal) = this.check_restore(&request).await {
                    return Ok(refusal);
                }
                return Ok(this.inner.handle(request).await);
            }
            // One opening at a time: the count and the new session are
            // one step, so concurrent `initialize`s cannot overshoot.
            let _opening = this.opening.lock().await;
            if this.session_count().await >= this.shared.options.max_sessions {
                return Ok(too_many_sessions());
            }
            let response = this.inner.handle(request).await;
            this.bind_session(&response, &run).await;
            Ok(response)
        })
    }
}
