//! Who may talk to the page's routes: the `Host` allow-list (DNS
//! rebinding) and the same-origin rule for state-changing requests and
//! WebSocket upgrades (cross-site requests, including from another port of
//! the same machine, which `SameSite` cookies do not separate).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The page's own origin: its scheme and the `Host` values it answers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageOrigin {
    scheme: String,
    hosts: Vec<String>,
}

/// Why [`PageOrigin::check`] refused a request (each answered HTTP 403).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// No `Host` header (or not text).
    #[error("the request has no Host header")]
    MissingHost,
    /// A `Host` this page does not answer to (first 100 characters).
    #[error("the Host `{0}` is not one this host serves")]
    HostNotAllowed(String),
    /// A state-changing request or upgrade with neither `Origin` nor
    /// `Referer`.
    #[error("a state-changing request must carry Origin (or Referer)")]
    MissingOrigin,
    /// `Origin` (or `Referer`) is another origin (first 100 characters).
    #[error("the request comes from another origin (`{0}`)")]
    CrossOrigin(String),
}

fn clip(text: &str) -> String {
    text.chars().take(100).collect()
}

impl PageOrigin {
    /// `http://` and the address the host binds: for a loopback or
    /// unspecified address `127.0.0.1:PORT`, `localhost:PORT` and
    /// `[::1]:PORT`; otherwise `IP:PORT`. Add public names with
    /// [`with_host`](Self::with_host).
    pub fn for_bind(addr: SocketAddr) -> Self {
        let port = addr.port();
        let ip = addr.ip();
        let hosts = if ip.is_loopback() || ip.is_unspecified() {
            vec![
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ]
        } else {
            vec![addr.to_string()]
        };
        Self {
            scheme: "http".into(),
            hosts,
        }
    }

    /// Also answers to `authority` (`name` or `name:port`, as browsers
    /// send it in `Host`; compared case-insensitively and exactly).
    pub fn with_host(mut self, authority: &str) -> Self {
        self.hosts.push(authority.to_ascii_lowercase());
        self
    }

    /// The page is served over TLS (by a proxy in front): origins must be
    /// `https://`.
    pub fn https(mut self) -> Self {
        self.scheme = "https".into();
        self
    }

    /// `http` or `https` ([`https`](Self::https)).
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The accepted `Host` values.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Checks one request: `Host` always; `Origin` (else `Referer`) equal
    /// to `scheme://Host` for every method but GET, HEAD and OPTIONS and
    /// for any request carrying `Upgrade`.
    ///
    /// # Errors
    /// Each [`GuardError`].
    pub fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), GuardError> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .ok_or(GuardError::MissingHost)?
            .to_ascii_lowercase();
        if !self.hosts.contains(&host) {
            return Err(GuardError::HostNotAllowed(clip(&host)));
        }
        let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        if safe && !headers.contains_key(header::UPGRADE) {
            return Ok(());
        }
        let expected = format!("{}://{host}", self.scheme);
        let text = |name| {
            headers
                .get(name)
                .and_then(|v: &header::HeaderValue| v.to_str().ok())
        };
        if let Some(origin) = text(header::ORIGIN) {
            return match origin.eq_ignore_ascii_case(&expected) {
                true => Ok(()),
                false => Err(GuardError::CrossOrigin(clip(origin))),
            };
        }
        let referer = text(header::REFERER).ok_or(GuardError::MissingOrigin)?;
        let same = referer
            .get(..expected.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(&expected))
            && referer.as_bytes().get(expected.len()) == Some(&b'/');
        match same {
            true => Ok(()),
            false => Err(GuardError::CrossOrigin(clip(referer))),
        }
    }
}

/// The axum middleware of [`PageOrigin::check`]: a refused request gets
/// HTTP 403 with an oRPC error body (`FORBIDDEN`) naming the reason and
/// never reaches a handler. Mount it on the whole router:
/// `router.layer(axum::middleware::from_fn_with_state(origin, page_guard))`.
pub async fn page_guard(
    State(origin): State<Arc<PageOrigin>>,
    request: Request,
    next: Next,
) -> Response {
    match origin.check(request.method(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => super::orpc_error(StatusCode::FORBIDDEN, "FORBIDDEN", &error.to_string()),
    }
}
