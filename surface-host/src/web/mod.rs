//! The safe HTTP surface of a host serving an application page (feature
//! `axum`; docs/host.md, "Threat model"; defaults in docs/limits.md):
//!
//! * [`guard`] — the `Host` allow-list on every request and the
//!   same-origin check (`Origin`, else `Referer`) on every
//!   state-changing request and WebSocket upgrade, as an axum middleware;
//! * [`sessions`] — page session cookies: issue, expiry, a bounded table
//!   that evicts never-used sessions first, so a flood of page loads does
//!   not lock out real users;
//! * [`proxy`] — the backend `/rpc` proxy: POST only, `Content-Type:
//!   application/json` required, paths confined to the known procedure
//!   paths, bounded bodies both ways, no redirects;
//! * [`html`] — server-rendered pages for a person (the approver page):
//!   [`escape_html`], and [`html_page`]'s headers (a `Content-Security-Policy`
//!   without scripts, `frame-ancestors 'none'`, `X-Frame-Options: DENY`),
//!   and [`app_page_csp`]/[`protect_html`] for an application's own
//!   (scripted, wasm) page.
//!
//! An application mounts the guard on its router, authenticates each
//! request with [`PageSessions::authenticate`] before reading its body,
//! and hands `/rpc/*` to [`RpcProxy::forward`].

pub mod guard;
pub mod html;
pub mod proxy;
pub mod sessions;

pub use guard::{page_guard, GuardError, PageOrigin};
pub use html::{
    app_page_csp, escape_html, html_page, inline_script_hashes, protect_html, see_other, HTML_CSP,
};
pub use proxy::{ProxyError, ProxyLimits, RpcProxy};
pub use sessions::{
    IssuedSession, PageSession, PageSessions, SessionLimits, SessionRefusal, SessionToken,
    SessionsFull,
};

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// An oRPC-shaped error answer (`{"json":{"defined":false,"code",…}}`), so
/// a page's oRPC client decodes every refusal of this module.
pub fn orpc_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = serde_json::json!({"json": {"defined": false, "code": code,
        "status": status.as_u16(), "message": message}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// An oRPC-shaped success answer (`{"json": value}`, `Content-Type:
/// application/json`), as a page's oRPC client decodes it.
pub fn orpc_ok(value: &impl serde::Serialize) -> Response {
    let body = serde_json::json!({ "json": value });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
