//! The page service's routes.

use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use surface_runtime::invocation::AgentInvocationResult;
use surface_runtime::ConsumerKind;
use surface_store::ApprovalRecord;

use super::{no_session, refused, Inner, PageRecord, PageRunError, MAX_RUN_APPROVALS};
use crate::host::PageSocketEvent;
use crate::web::{app_page_csp, orpc_error, orpc_ok, protect_html, SessionRefusal};

type Service = State<Arc<Inner>>;

/// `GET {page}`: the page and a fresh session cookie (`Cache-Control:
/// no-store`: every load is a new session), with [`app_page_csp`] and
/// `X-Frame-Options: DENY` ([`protect_html`]).
pub(crate) async fn page(State(s): Service, headers: HeaderMap) -> Response {
    let Some(user_id) = s.user.user(&headers) else {
        return (StatusCode::UNAUTHORIZED, "Sign in first.").into_response();
    };
    let record = PageRecord {
        session_id: format!("sess-{}", crate::mcp::random_hex(16)),
        user_id,
        tab_id: None,
        connection_id: None,
    };
    let issued = match s.sessions.issue(record) {
        Ok(issued) => issued,
        Err(full) => return (StatusCode::SERVICE_UNAVAILABLE, full.to_string()).into_response(),
    };
    let mut response = (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        s.html.clone(),
    )
        .into_response();
    // The page guard admitted the Host.
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let origin = format!("{}://{host}", s.origin.scheme());
    protect_html(&mut response, &app_page_csp(&origin, &s.script_hashes));
    response
        .headers_mut()
        .insert(header::SET_COOKIE, issued.set_cookie);
    response
}

/// `POST {api}/session`: the session id, the user and the socket path.
pub(crate) async fn session(State(s): Service, headers: HeaderMap) -> Response {
    match s.sessions.check(&headers) {
        Ok(session) => orpc_ok(&json!({
            "sessionId": session.data.session_id,
            "userId": session.data.user_id,
            "socketPath": s.paths.socket,
        })),
        Err(refusal) => refused(refusal),
    }
}

/// `GET {socket}`: the page's WebSocket; the session learns its tab and
/// connection from the accepted announcements.
pub(crate) async fn socket(
    State(s): Service,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let session = match s.sessions.check(&headers) {
        Ok(session) => session,
        Err(SessionRefusal::Duplicate) => return refused(SessionRefusal::Duplicate),
        Err(_) => {
            let message = "no session cookie: load the page first";
            return (StatusCode::UNAUTHORIZED, message).into_response();
        }
    };
    let (token, record) = (session.token, session.data);
    let service = s.clone();
    s.host.page_socket(
        upgrade,
        &record.session_id,
        &record.user_id,
        move |event| match event {
            PageSocketEvent::Announced {
                tab_id,
                connection_id,
            } => {
                service.sessions.update(&token, |r| {
                    r.tab_id = Some(tab_id);
                    r.connection_id = Some(connection_id);
                });
            }
            PageSocketEvent::Closed { connection_id, .. } => {
                service.sessions.update(&token, |r| {
                    if r.connection_id.is_some() && r.connection_id == connection_id {
                        r.connection_id = None;
                    }
                });
            }
        },
    )
}

/// `POST {api}/run` `{"json":{"runId"}}`: the approvals of a run this
/// page session started, with their outcome once resumed.
pub(crate) async fn run_status(State(s): Service, request: Request) -> Response {
    let (session, input) = match s.read(request).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let Some(run_id) = input["runId"].as_str().map(str::to_string) else {
        return orpc_error(StatusCode::BAD_REQUEST, "BAD_REQUEST", "runId is required");
    };
    if s.run_owner(&run_id).as_deref() != Some(session.data.session_id.as_str()) {
        return orpc_error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "No such run in this session.",
        );
    }
    let store = s.host.store();
    match store.run_approvals(&run_id, MAX_RUN_APPROVALS).await {
        Ok(approvals) => orpc_ok(&json!({
            "runId": run_id,
            "approvals": approvals.iter().map(|a| approval_status(&s, a)).collect::<Vec<_>>(),
        })),
        Err(error) => {
            tracing::warn!(?error, ?run_id, "reading a run's approvals");
            orpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "The host store cannot be read right now.",
            )
        }
    }
}

/// A stored approval as the page sees it.
fn approval_status(s: &Inner, approval: &ApprovalRecord) -> Value {
    let outcome = approval
        .outcome
        .as_deref()
        .and_then(|o| serde_json::from_str::<AgentInvocationResult>(o).ok());
    json!({
        "approvalId": approval.approval_id,
        "state": approval.state.as_str(),
        "outcome": outcome.as_ref().and_then(|o| serde_json::to_value(o).ok()),
        "summary": outcome.as_ref().map(|o| (s.summary)(approval, o)),
    })
}

/// `POST {api}/mcp-run` `{"json":{"tabId"}}`: a run on this page's tab
/// for an MCP client and its bearer token (shown once; only its SHA-256
/// is stored). `tabId` is the tab the calling page announced: a session
/// whose live tab is another (its cookie was replaced by another page of
/// this host, or taken and used to announce a tab elsewhere) is refused,
/// so a token never drives a tab the calling page does not hold.
pub(crate) async fn mcp_run(State(s): Service, request: Request) -> Response {
    let headers = request.headers().clone();
    let (session, input) = match s.read(request).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let Some(tab_id) = input["tabId"].as_str() else {
        return orpc_error(
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
            "tabId is required: the tab this page announced",
        );
    };
    let started = s
        .start_run(&session.token, ConsumerKind::Embedded, Some(tab_id))
        .await;
    let run_id = match started {
        Ok(run_id) => run_id,
        Err(PageRunError::NoSession) => return no_session(),
        Err(PageRunError::OtherTab) => {
            tracing::warn!(session_id = ?session.data.session_id, "an MCP run asked for a tab that is not the session's");
            return orpc_error(
                StatusCode::CONFLICT,
                "CONFLICT",
                "This page's session now belongs to another tab (another page on this host may have replaced its cookie): reload the page.",
            );
        }
        Err(PageRunError::NoLiveTab) => {
            return orpc_error(
                StatusCode::CONFLICT,
                "CONFLICT",
                "This page has no live agent session yet; wait until it is connected.",
            )
        }
        Err(error) => {
            return internal(
                "starting an MCP run",
                &error,
                "The run could not be started.",
            )
        }
    };
    match s.host.issue_token(&run_id).await {
        Ok(token) => {
            // The page guard admitted the Host.
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default();
            let mcp_url = format!("{}://{host}{}", s.origin.scheme(), s.paths.mcp);
            orpc_ok(&json!({"runId": run_id, "token": token, "mcpUrl": mcp_url}))
        }
        Err(error) => internal(
            "recording an MCP token",
            &error,
            "The token could not be recorded.",
        ),
    }
}

fn internal(what: &str, error: &dyn std::fmt::Display, message: &str) -> Response {
    tracing::warn!(error = ?error.to_string(), "{what}");
    orpc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "INTERNAL_SERVER_ERROR",
        message,
    )
}

/// `/rpc/{*path}`: the backend proxy, for pages holding a session.
pub(crate) async fn rpc(State(s): Service, headers: HeaderMap, request: Request) -> Response {
    if let Err(refusal) = s.sessions.check(&headers) {
        return refused(refusal);
    }
    let Some(proxy) = &s.proxy else {
        return no_session();
    };
    let raw = request
        .uri()
        .path()
        .strip_prefix("/rpc/")
        .unwrap_or("")
        .to_string();
    proxy.forward(&raw, request).await
}

/// `GET {files}/{name}`: one of the page's files (`nosniff`; an HTML one
/// with `frame-ancestors 'none'` and `X-Frame-Options: DENY`).
///
/// When `{name}.gz` lies beside the file, is not older than it, and the
/// request's `Accept-Encoding` takes gzip, that copy is sent with
/// `Content-Encoding: gzip` ([`PagesOptions::files`](super::PagesOptions::files)).
pub(crate) async fn file(
    State(s): Service,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(files) = &s.files else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(content_type) = files.names.get(&name) else {
        return (StatusCode::NOT_FOUND, "Not found").into_response();
    };
    let path = files.dir.join(&name);
    let gzipped = if accepts_gzip(&headers) {
        fresh_gzip_copy(&path).await
    } else {
        None
    };
    let read = match &gzipped {
        Some(gz) => tokio::fs::read(gz).await,
        None => tokio::fs::read(&path).await,
    };
    match read {
        Ok(bytes) => {
            let headers = [
                (header::CONTENT_TYPE, content_type.as_str()),
                (header::CACHE_CONTROL, "no-store"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::VARY, "accept-encoding"),
            ];
            let mut response = (headers, bytes).into_response();
            if gzipped.is_some() {
                response.headers_mut().insert(
                    header::CONTENT_ENCODING,
                    header::HeaderValue::from_static("gzip"),
                );
            }
            // An HTML file is framed by nobody either.
            if content_type.starts_with("text/html") {
                protect_html(&mut response, "frame-ancestors 'none'");
            }
            response
        }
        Err(_) => (
            StatusCode::NOT_FOUND,
            format!("{name} is missing: build the page"),
        )
            .into_response(),
    }
}

/// Whether `Accept-Encoding` takes gzip: a `gzip` (or `x-gzip`, or `*`)
/// coding whose `q` is not 0 (RFC 9110 §12.5.3). Absent or unreadable
/// headers take nothing but the identity.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or("");
            let named = ["gzip", "x-gzip", "*"]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n));
            let refused = parts.any(|p| {
                p.split_once('=').is_some_and(|(k, q)| {
                    k.trim().eq_ignore_ascii_case("q")
                        && q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
                })
            });
            named && !refused
        })
}

/// `{path}.gz` when it exists and was written no earlier than `path`
/// (a page rebuilt since is served uncompressed, never stale).
async fn fresh_gzip_copy(path: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut gz = path.as_os_str().to_owned();
    gz.push(".gz");
    let gz = std::path::PathBuf::from(gz);
    let original = tokio::fs::metadata(path).await.ok()?.modified().ok()?;
    let copy = tokio::fs::metadata(&gz).await.ok()?.modified().ok()?;
    (copy >= original).then_some(gz)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, value.parse().unwrap());
        h
    }

    #[test]
    fn gzip_is_taken_unless_its_q_is_zero() {
        assert!(accepts_gzip(&with("gzip, deflate, br, zstd")));
        assert!(accepts_gzip(&with("br;q=1.0, GZIP;q=0.5")));
        assert!(accepts_gzip(&with("*")));
        assert!(!accepts_gzip(&with("gzip;q=0")));
        assert!(!accepts_gzip(&with("br, gzip ; q=0.000")));
        assert!(!accepts_gzip(&with("identity")));
        assert!(!accepts_gzip(&with("gzipx")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
