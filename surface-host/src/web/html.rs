//! Server-rendered HTML a host serves to a person (the approver page):
//! every value another party wrote is escaped with [`escape_html`], and
//! every page goes out with [`html_page`]'s headers — no scripts, no
//! framing, no caching.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The `Content-Security-Policy` of [`html_page`]: nothing loads but the
/// page's own inline styles, forms post only to the page's origin, and no
/// other page may frame it.
pub const HTML_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// `<`, `>`, `&`, `"` and `'` as HTML entities: safe in text and in
/// quoted attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str =
    "body{font:15px system-ui,sans-serif;margin:2rem;max-width:60rem;color:#1b1f24}\
    table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.5rem;\
    text-align:left;vertical-align:top}code{background:#f3f4f6;padding:.1rem .3rem}\
    button{margin-right:.5rem;padding:.3rem .8rem}.ok{color:#116329}.error{color:#a40e26}";

/// A complete HTML document: `title` (escaped here) as its `<title>` and
/// `<h1>`, `body` as it is (the caller escaped what it holds), with
/// `Content-Type: text/html; charset=utf-8`, [`HTML_CSP`],
/// `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff` and
/// `Cache-Control: no-store`.
pub fn html_page(status: StatusCode, title: &str, body: &str) -> Response {
    let title = escape_html(title);
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>{STYLE}</style></head><body><h1>{title}</h1>{body}</body></html>"
    );
    let mut response = (status, page).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, HTML_CSP),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// `303 See Other` to `location` (a path of this host).
pub fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
