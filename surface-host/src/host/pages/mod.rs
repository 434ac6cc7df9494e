//! The page service a [`Host`] hands out (feature `axum`; docs/host.md,
//! "The page service"): what every deployment serving a page to its users
//! writes — a session cookie on each page load, the page's socket, the
//! runs started for the page and their approvals, a run and bearer token
//! for an MCP client acting in the page, and the backend `/rpc` proxy.
//!
//! ```text
//! GET  {page}                    the page's HTML and a fresh session cookie
//! POST {api}/session             → {"json":{"sessionId","userId","socketPath"}}
//! GET  {socket}                  the page's session WebSocket (Host::page_socket)
//! POST {api}/run {"json":{"runId"}}
//!                                → {"json":{"runId","approvals":[{"approvalId","state","outcome","summary"}]}}
//! POST {api}/mcp-run             → {"json":{"runId","token","mcpUrl"}}
//! ANY  /rpc/{*path}              the backend proxy (PagesOptions::rpc_proxy)
//! GET  {files}/{name}            the page's files (PagesOptions::files)
//! ```
//!
//! Every route is behind [`page_guard`] (the `Host` allow-list; `Origin`
//! or `Referer` of the page's own origin on every POST and on the socket's
//! upgrade). Every route but the page itself needs the session cookie
//! ([`PAGE_COOKIE`]: `HttpOnly; SameSite=Strict`; bounded by
//! [`PagesOptions::limits`]), checked before any body is read; without
//! it the answer is 401 (`UNAUTHORIZED`, `No session: reload the page.`).

mod handlers;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{any, get, post};
use axum::Router;
use surface_runtime::host::AgentRun;
use surface_runtime::ConsumerKind;

use super::approver::{default_summary, OutcomeSummary};
use super::{DurableError, Host};
use crate::web::{
    orpc_error, page_guard, PageOrigin, PageSession, PageSessions, RpcProxy, SessionLimits,
    SessionRefusal, SessionToken,
};

/// The page session cookie's name: `agent_session` (`__Host-agent_session`
/// when the page origin is https; [`PageSessions::secure`]). A request
/// carrying it twice is refused (401).
pub const PAGE_COOKIE: &str = "agent_session";
/// Largest body of `POST {api}/run` and `{api}/mcp-run`: 4 KiB (HTTP 413
/// past it).
pub const MAX_PAGE_REQUEST_BYTES: usize = 4 * 1024;
/// Runs whose page session the service remembers (who may read
/// `{api}/run`): 10,000; past it the oldest is forgotten (its page gets
/// 404; its approvals stay in the store).
pub const MAX_TRACKED_PAGE_RUNS: usize = 10_000;
/// Runs one page session may have active at once: 8. Starting one more
/// (`{api}/mcp-run`, [`PagesService::start_run`]) ends the session's
/// oldest active run and its tokens.
pub const MAX_RUNS_PER_PAGE_SESSION: usize = 8;
/// Approvals `{api}/run` lists for a run: the oldest 100.
pub const MAX_RUN_APPROVALS: u32 = 100;

/// Who the person loading the page is: the application's authentication
/// (its SSO session, its own cookie) of the page request. Implemented for
/// closures `Fn(&HeaderMap) -> Option<String>`.
pub trait PageUser: Send + Sync + 'static {
    /// The user id of the person loading the page, or `None`: the page is
    /// answered 401 and no session is issued.
    fn user(&self, headers: &HeaderMap) -> Option<String>;
}

impl<F: Fn(&HeaderMap) -> Option<String> + Send + Sync + 'static> PageUser for F {
    fn user(&self, headers: &HeaderMap) -> Option<String> {
        self(headers)
    }
}

/// A page session the service issued a cookie for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRecord {
    /// The session id (`sess-` and 32 hex digits) every announcement of
    /// the page must carry.
    pub session_id: String,
    /// The user [`PageUser`] named at the page load.
    pub user_id: String,
    /// The tab of the latest announcement the host accepted.
    pub tab_id: Option<String>,
    /// The socket's connection id while it is open.
    pub connection_id: Option<String>,
}

impl PageRecord {
    /// The tab, while its socket is open (a run can act in it).
    pub fn live_tab(&self) -> Option<&str> {
        self.tab_id
            .as_deref()
            .filter(|_| self.connection_id.is_some())
    }
}

/// Why [`PagesService::start_run`] started no run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PageRunError {
    /// The session expired (or was never issued).
    #[error("the page session is gone")]
    NoSession,
    /// The page has no open socket with an accepted announcement.
    #[error("this page has no live agent session yet; wait until it is connected")]
    NoLiveTab,
    /// The session's live tab is not the one the calling page named
    /// (another page of this host replaced or used its cookie).
    #[error("this page's session now belongs to another tab; reload the page")]
    OtherTab,
    /// The store refused the run.
    #[error("the run could not be started: {0}")]
    Host(#[from] DurableError),
}

/// The configuration of [`Host::pages`].
pub struct PagesOptions {
    origin: PageOrigin,
    html: String,
    user: Arc<dyn PageUser>,
    limits: SessionLimits,
    page_path: String,
    api_path: String,
    socket_path: String,
    mcp_path: String,
    summary: OutcomeSummary,
    proxy: Option<RpcProxy>,
    files: Option<Files>,
}

/// The page's files ([`PagesOptions::files`]).
pub(crate) struct Files {
    pub(crate) path: String,
    pub(crate) dir: PathBuf,
    /// Name → `Content-Type`.
    pub(crate) names: HashMap<String, String>,
}

impl PagesOptions {
    /// The service for the page origin `origin` (its guard), serving
    /// `html` as the page to people `user` signs in. Paths: the page `/`,
    /// the API `/app`, the socket `/agent/ws`, the MCP endpoint named in
    /// `mcpUrl` `/mcp`; sessions bounded by [`SessionLimits::default`];
    /// approval summaries by [`default_summary`]; no `/rpc` proxy.
    pub fn new(origin: PageOrigin, html: impl Into<String>, user: impl PageUser) -> Self {
        Self {
            origin,
            html: html.into(),
            user: Arc::new(user),
            limits: SessionLimits::default(),
            page_path: "/".into(),
            api_path: "/app".into(),
            socket_path: "/agent/ws".into(),
            mcp_path: "/mcp".into(),
            summary: Arc::new(default_summary),
            proxy: None,
            files: None,
        }
    }

    /// Bounds the page sessions (count, expiry; docs/limits.md).
    pub fn limits(mut self, limits: SessionLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Serves the page at `page`, the API under `api`, the socket at
    /// `socket` (each `/` prepended when missing, a trailing `/` dropped).
    pub fn paths(mut self, page: &str, api: &str, socket: &str) -> Self {
        let clean = |p: &str| format!("/{}", p.trim_matches('/'));
        (self.page_path, self.api_path, self.socket_path) =
            (clean(page), clean(api), clean(socket));
        self
    }

    /// The path the application mounts [`Host::mcp_service`] at, as
    /// `{api}/mcp-run` names it in `mcpUrl` (default `/mcp`).
    pub fn mcp_path(mut self, path: &str) -> Self {
        self.mcp_path = format!("/{}", path.trim_matches('/'));
        self
    }

    /// How a resumed outcome reads for a person in `{api}/run`'s
    /// `summary` (default [`default_summary`]).
    pub fn summary(
        mut self,
        summary: impl Fn(&surface_store::ApprovalRecord, &surface_runtime::AgentInvocationResult) -> String
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.summary = Arc::new(summary);
        self
    }

    /// Serves `/rpc/{*path}` to pages holding a session cookie through
    /// `proxy` (the backend credential added, the paths confined;
    /// [`RpcProxy`]).
    pub fn rpc_proxy(mut self, proxy: RpcProxy) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// Serves the files `names` (name, `Content-Type`) of `dir` at
    /// `{path}/{name}` (GET, `Cache-Control: no-store`), read from disk on
    /// each request (a rebuilt page is served without a restart); any
    /// other name, and a listed one missing from `dir`, is 404. Nothing
    /// else of `dir` is reachable. A `{name}.gz` beside a listed file,
    /// written no earlier than it, is sent instead (`Content-Encoding:
    /// gzip`, `Vary: Accept-Encoding`) to a request whose
    /// `Accept-Encoding` takes gzip: precompress the page's `.wasm` and
    /// `.js` at build time and browsers download a third of the bytes.
    pub fn files(mut self, path: &str, dir: impl Into<PathBuf>, names: &[(&str, &str)]) -> Self {
        self.files = Some(Files {
            path: format!("/{}", path.trim_matches('/')),
            dir: dir.into(),
            names: names
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
        });
        self
    }
}

/// The page service of a [`Host`] ([`Host::pages`]): its
/// [`router`](Self::router), and the sessions and runs behind it for the
/// application's own page routes. Cheap to clone.
#[derive(Clone)]
pub struct PagesService {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) host: Host,
    pub(crate) origin: Arc<PageOrigin>,
    pub(crate) html: String,
    /// The CSP hashes of the page's inline scripts.
    pub(crate) script_hashes: Vec<String>,
    pub(crate) user: Arc<dyn PageUser>,
    pub(crate) sessions: PageSessions<PageRecord>,
    runs: Mutex<RunOwners>,
    pub(crate) paths: Paths,
    pub(crate) summary: OutcomeSummary,
    pub(crate) proxy: Option<RpcProxy>,
    pub(crate) files: Option<Files>,
}

pub(crate) struct Paths {
    pub(crate) page: String,
    pub(crate) api: String,
    pub(crate) socket: String,
    pub(crate) mcp: String,
}

/// Which page session started each run, the oldest forgotten first.
#[derive(Default)]
struct RunOwners {
    owner: HashMap<String, String>,
    order: VecDeque<String>,
}

impl std::fmt::Debug for PagesService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagesService")
            .field("page", &self.inner.paths.page)
            .field("api", &self.inner.paths.api)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// The page service on this host (see [`PagesOptions`]).
    pub fn pages(&self, options: PagesOptions) -> PagesService {
        let mut sessions = PageSessions::new(PAGE_COOKIE, options.limits);
        if options.origin.scheme() == "https" {
            sessions = sessions.secure();
        }
        PagesService {
            inner: Arc::new(Inner {
                host: self.clone(),
                origin: Arc::new(options.origin),
                script_hashes: crate::web::inline_script_hashes(&options.html),
                html: options.html,
                user: options.user,
                sessions,
                runs: Mutex::default(),
                paths: Paths {
                    page: options.page_path,
                    api: options.api_path,
                    socket: options.socket_path,
                    mcp: options.mcp_path,
                },
                summary: options.summary,
                proxy: options.proxy,
                files: options.files,
            }),
        }
    }
}

/// Deletes the session cookies another page of this host planted with a
/// longer `Path` (a request carrying the name twice is refused; this lets
/// the reload it asks for work): `Set-Cookie` clears appended to the
/// answer ([`crate::web::PageSessions::planted_cookie_clears`]).
async fn clear_planted_cookies(
    axum::extract::State(inner): axum::extract::State<Arc<Inner>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let clears = inner
        .sessions
        .planted_cookie_clears(request.headers(), request.uri().path());
    let mut response = next.run(request).await;
    for clear in clears {
        response
            .headers_mut()
            .append(axum::http::header::SET_COOKIE, clear);
    }
    response
}

/// 401 for a request without a live page session.
pub(crate) fn no_session() -> Response {
    refused(SessionRefusal::Missing)
}

/// 401 for a refused session cookie: `No session: reload the page.`, or
/// for the cookie's name sent twice `Two session cookies (another page on
/// this host set one): reload the page.`
pub(crate) fn refused(refusal: SessionRefusal) -> Response {
    let message = match refusal {
        SessionRefusal::Duplicate => {
            "Two session cookies (another page on this host set one): reload the page."
        }
        _ => "No session: reload the page.",
    };
    orpc_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
}

impl PagesService {
    /// The routes (module documentation), guarded, to merge into the
    /// application's router (`app.merge(pages.router())`).
    pub fn router(&self) -> Router {
        let p = &self.inner.paths;
        let mut router = Router::new()
            .route(&p.page, get(handlers::page))
            .route(&format!("{}/session", p.api), post(handlers::session))
            .route(&format!("{}/run", p.api), post(handlers::run_status))
            .route(&format!("{}/mcp-run", p.api), post(handlers::mcp_run))
            .route(&p.socket, get(handlers::socket));
        if self.inner.proxy.is_some() {
            router = router.route("/rpc/{*path}", any(handlers::rpc));
        }
        if let Some(files) = &self.inner.files {
            router = router.route(&format!("{}/{{file}}", files.path), get(handlers::file));
        }
        router
            .with_state(self.inner.clone())
            .layer(axum::middleware::from_fn_with_state(
                self.inner.clone(),
                clear_planted_cookies,
            ))
            .layer(axum::middleware::from_fn_with_state(
                self.inner.origin.clone(),
                page_guard,
            ))
    }

    /// The page session of the request's cookie (marked used), or the
    /// 401 answer (`UNAUTHORIZED`, `No session: reload the page.`; a
    /// request carrying the cookie's name twice is refused too). Call
    /// it before reading the request's body.
    #[allow(clippy::result_large_err)]
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<PageSession<PageRecord>, Response> {
        self.inner.sessions.check(headers).map_err(refused)
    }

    /// An application's own page request: the session of its cookie
    /// (checked first), then its body, at most [`MAX_PAGE_REQUEST_BYTES`],
    /// as oRPC input — the body's `json` member (`null` when the body is
    /// not JSON or has none).
    ///
    /// # Errors
    /// The answer to send instead: 401 without a live session, 413
    /// (`PAYLOAD_TOO_LARGE`) for a larger body.
    #[allow(clippy::result_large_err)]
    pub async fn read(
        &self,
        request: axum::extract::Request,
    ) -> Result<(PageSession<PageRecord>, serde_json::Value), Response> {
        self.inner.read(request).await
    }

    /// The live session of `token`, as of now (its tab may have changed
    /// since the request authenticated).
    pub fn session(&self, token: &SessionToken) -> Option<PageRecord> {
        self.inner.sessions.get(token)
    }

    /// Every session issued (expired ones not yet dropped included).
    pub fn sessions(&self) -> Vec<PageRecord> {
        self.inner.sessions.all()
    }

    /// Starts a run of `kind` in the live tab of the session `token`
    /// under a fresh id (`run-` and 32 hex digits), remembered as that
    /// session's (its page may read `{api}/run`); returns the run id.
    ///
    /// # Errors
    /// [`PageRunError`]: no session, no live tab, the store.
    pub async fn start_run(
        &self,
        token: &SessionToken,
        kind: ConsumerKind,
    ) -> Result<String, PageRunError> {
        self.inner.start_run(token, kind, None).await
    }

    /// The session id that started `run_id` (through this service), if
    /// remembered.
    pub fn run_owner(&self, run_id: &str) -> Option<String> {
        self.inner.run_owner(run_id)
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.inner.host
    }
}

impl Inner {
    #[allow(clippy::result_large_err)]
    pub(crate) async fn read(
        &self,
        request: axum::extract::Request,
    ) -> Result<(PageSession<PageRecord>, serde_json::Value), Response> {
        let session = self.sessions.check(request.headers()).map_err(refused)?;
        let body = axum::body::to_bytes(request.into_body(), MAX_PAGE_REQUEST_BYTES)
            .await
            .map_err(|_| {
                let message = "the request is too large";
                orpc_error(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", message)
            })?;
        let mut body = serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default();
        Ok((session, body["json"].take()))
    }

    /// Starts a run of `kind` on the session's live tab — which must be
    /// `expected_tab` when given — under a fresh id.
    pub(crate) async fn start_run(
        &self,
        token: &SessionToken,
        kind: ConsumerKind,
        expected_tab: Option<&str>,
    ) -> Result<String, PageRunError> {
        let record = self.sessions.get(token).ok_or(PageRunError::NoSession)?;
        let tab_id = record.live_tab().ok_or(PageRunError::NoLiveTab)?;
        if expected_tab.is_some_and(|expected| expected != tab_id) {
            return Err(PageRunError::OtherTab);
        }
        self.end_oldest_runs_beyond_bound(&record.session_id).await;
        let run_id = format!("run-{}", crate::mcp::random_hex(16));
        self.host
            .start_run(AgentRun {
                run_id: run_id.clone(),
                session_id: record.session_id.clone(),
                tab_id: Some(tab_id.to_string()),
                kind,
            })
            .await?;
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs.order.len() >= MAX_TRACKED_PAGE_RUNS {
            if let Some(oldest) = runs.order.pop_front() {
                runs.owner.remove(&oldest);
            }
        }
        runs.order.push_back(run_id.clone());
        runs.owner.insert(run_id.clone(), record.session_id);
        Ok(run_id)
    }

    /// Ends the oldest active runs of `session_id` until one more fits
    /// [`MAX_RUNS_PER_PAGE_SESSION`] (their tokens too).
    async fn end_oldest_runs_beyond_bound(&self, session_id: &str) {
        let active: Vec<String> = {
            let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
            let agent_host = self.host.durable().host();
            runs.order
                .iter()
                .filter(|id| runs.owner.get(*id).is_some_and(|s| s == session_id))
                .filter(|id| agent_host.run(id).is_some())
                .cloned()
                .collect()
        };
        let beyond = (active.len() + 1).saturating_sub(MAX_RUNS_PER_PAGE_SESSION);
        for oldest in active.iter().take(beyond) {
            if let Err(error) = self.host.end_run(oldest).await {
                tracing::warn!(run_id = ?oldest, error = ?error, "a page session's oldest run could not be ended");
            }
        }
    }

    pub(crate) fn run_owner(&self, run_id: &str) -> Option<String> {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.owner.get(run_id).cloned()
    }
}
