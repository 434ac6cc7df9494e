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
    text-align:left;vertical-align:top;overflow-wrap:anywhere}\
    code{background:#f3f4f6;padding:.1rem .3rem;overflow-wrap:anywhere}\
    th,button{overflow-wrap:normal;white-space:nowrap}\
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
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    protect_html(&mut response, HTML_CSP);
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

/// The `Content-Security-Policy` of an application page served from
/// `origin` (`http://HOST` or `https://HOST`, the request's own origin):
/// scripts from the origin and the inline scripts of `script_hashes`
/// ([`inline_script_hashes`]), WebAssembly compiled (`'wasm-unsafe-eval'`:
/// a wasm page), styles from the origin or inline, images from the origin
/// or `data:`, fetches and the WebSocket only to the origin, no plug-ins,
/// forms only to the origin, no `<base>`, and no other page may frame it
/// (`frame-ancestors 'none'`).
pub fn app_page_csp(origin: &str, script_hashes: &[String]) -> String {
    let ws = origin
        .strip_prefix("https://")
        .map(|host| format!("wss://{host}"))
        .or_else(|| origin.strip_prefix("http://").map(|h| format!("ws://{h}")))
        .unwrap_or_default();
    let mut scripts = String::new();
    for hash in script_hashes {
        scripts.push_str(&format!(" '{hash}'"));
    }
    format!(
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'{scripts}; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
         connect-src 'self' {ws}; object-src 'none'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'"
    )
}

/// The CSP source (`sha256-BASE64`) of each inline `<script>` of `html`
/// (one without `src`), as [`app_page_csp`] allows them.
pub fn inline_script_hashes(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut hashes = Vec::new();
    let mut at = 0;
    while let Some(start) = lower[at..].find("<script").map(|i| at + i) {
        let Some(open_end) = lower[start..].find('>').map(|i| start + i + 1) else {
            break;
        };
        let Some(close) = lower[open_end..].find("</script").map(|i| open_end + i) else {
            break;
        };
        if !lower[start..open_end].contains(" src=") {
            let digest = surface_runtime::hash::sha256(&html.as_bytes()[open_end..close]);
            hashes.push(format!("sha256-{}", base64(&digest)));
        }
        at = close;
    }
    hashes
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The framing and sniffing headers of every HTML answer:
/// `Content-Security-Policy: csp`, `X-Frame-Options: DENY`,
/// `X-Content-Type-Options: nosniff`, `Cache-Control: no-store`.
pub fn protect_html(response: &mut Response, csp: &str) {
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    for (name, value) in [
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_known_values() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"foob"), "Zm9vYg==");
    }
}
