//! The backend proxy: the page's oRPC calls, forwarded with the host's
//! backend credential. Only what the page needs passes: POST, `Content-Type:
//! application/json`, a path that decodes to one of the known procedure
//! paths (the upstream URL is built from the known path, never from the
//! request), bodies bounded both ways, no redirects.

use std::collections::HashSet;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use percent_encoding::percent_decode_str;
use surface_runtime::bridge::INVOCATION_ID_HEADER;

use super::orpc_error;

/// Default [`ProxyLimits::max_request_bytes`]: 1 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;
/// Default [`ProxyLimits::max_response_bytes`]: 8 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 << 20;
/// Default [`ProxyLimits::timeout`]: 30 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Bounds of [`RpcProxy`].
#[derive(Clone, Debug)]
pub struct ProxyLimits {
    /// Largest request body (default [`DEFAULT_MAX_REQUEST_BYTES`]);
    /// larger: HTTP 413.
    pub max_request_bytes: usize,
    /// Largest backend answer (default [`DEFAULT_MAX_RESPONSE_BYTES`]);
    /// larger: HTTP 502.
    pub max_response_bytes: usize,
    /// The whole backend exchange (default [`DEFAULT_TIMEOUT`]); then 502.
    pub timeout: Duration,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        Self {
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Why a proxy could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The backend credential is not a valid header value.
    #[error("the backend credential is not a valid HTTP header value")]
    Credential,
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
}

/// Forwards `/rpc/<procedure path>` to the backend's RPC handler.
#[derive(Clone, Debug)]
pub struct RpcProxy {
    backend: String,
    authorization: HeaderValue,
    /// Known procedure paths, `/`-separated (`devices/disable`).
    paths: HashSet<String>,
    limits: ProxyLimits,
    http: reqwest::Client,
}

impl RpcProxy {
    /// A proxy to `backend_rpc` (e.g. `http://127.0.0.1:4000/rpc`) adding
    /// `Authorization: <authorization>`, for the dotted procedure paths
    /// `procedures` (`devices.disable`; e.g. an authority's
    /// `procedures()`).
    ///
    /// With the cargo feature `rustls`, an `https://` backend works too,
    /// trusting the webpki roots; [`Self::with_tls`] trusts other roots.
    ///
    /// # Errors
    /// [`ProxyError`].
    pub fn new<I, S>(
        backend_rpc: &str,
        authorization: &str,
        procedures: I,
        limits: ProxyLimits,
    ) -> Result<Self, ProxyError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let builder = Self::client_builder(&limits);
        #[cfg(feature = "rustls")]
        let builder = surface_runtime::bridge::TlsRoots::webpki().configure(builder);
        Self::with_builder(backend_rpc, authorization, procedures, limits, builder)
    }

    /// [`Self::new`] for an `https://` backend whose certificate chains to
    /// one of `roots` (cargo feature `rustls`): e.g.
    /// `TlsRoots::empty().add_pem(&pem)?` for a backend with its own CA.
    /// The same bounds, no redirects.
    ///
    /// # Errors
    /// [`ProxyError`] ([`ProxyError::Client`] when the client cannot be
    /// built with these roots).
    #[cfg(feature = "rustls")]
    pub fn with_tls<I, S>(
        backend_rpc: &str,
        authorization: &str,
        procedures: I,
        limits: ProxyLimits,
        roots: &surface_runtime::bridge::TlsRoots,
    ) -> Result<Self, ProxyError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let builder = roots.configure(Self::client_builder(&limits));
        Self::with_builder(backend_rpc, authorization, procedures, limits, builder)
    }

    fn client_builder(limits: &ProxyLimits) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(limits.timeout)
    }

    fn with_builder<I, S>(
        backend_rpc: &str,
        authorization: &str,
        procedures: I,
        limits: ProxyLimits,
        builder: reqwest::ClientBuilder,
    ) -> Result<Self, ProxyError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let authorization =
            HeaderValue::from_str(authorization).map_err(|_| ProxyError::Credential)?;
        let http = builder
            .build()
            .map_err(|e| ProxyError::Client(e.to_string()))?;
        Ok(Self {
            backend: backend_rpc.trim_end_matches('/').to_string(),
            authorization,
            paths: procedures
                .into_iter()
                .map(|p| p.as_ref().replace('.', "/"))
                .collect(),
            limits,
            http,
        })
    }

    /// The known procedure path `raw` decodes to (`raw` is the request
    /// path after the proxy's prefix, still percent-encoded); else the
    /// status, oRPC code and message of the refusal.
    fn known_path(&self, raw: &str) -> Result<&str, (StatusCode, &'static str, &'static str)> {
        let bad = |why| (StatusCode::BAD_REQUEST, "BAD_REQUEST", why);
        let decoded = percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| bad("the procedure path is not UTF-8"))?;
        if decoded.contains('\\')
            || decoded
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(bad("the procedure path has an empty, `.` or `..` segment"));
        }
        self.paths.get(decoded.as_ref()).map(String::as_str).ok_or((
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "no such procedure",
        ))
    }

    /// Forwards one request whose path after the proxy's prefix is `raw`
    /// (authenticate the page's session first). Refusals, all oRPC error
    /// bodies: 405 (not POST), 415 (no `Content-Type: application/json`),
    /// 400 (a `.`/`..`/empty segment, a bad invocation id), 404 (not a
    /// known procedure), 413 (body over the bound), 502 (backend
    /// unreachable, answer over the bound or cut).
    pub async fn forward(&self, raw: &str, request: Request) -> Response {
        if request.method() != Method::POST {
            return orpc_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_SUPPORTED",
                "POST only",
            );
        }
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim())
            .is_some_and(|v| v.eq_ignore_ascii_case("application/json"));
        if !json {
            let why = "Content-Type must be application/json";
            return orpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UNSUPPORTED_MEDIA_TYPE",
                why,
            );
        }
        let path = match self.known_path(raw) {
            Ok(path) => path.to_string(),
            Err((status, code, why)) => return orpc_error(status, code, why),
        };
        let invocation_id = request.headers().get(INVOCATION_ID_HEADER).cloned();
        if let Some(id) = &invocation_id {
            let valid = id.to_str().ok().map(surface_runtime::check_invocation_id);
            if !matches!(valid, Some(Ok(()))) {
                let why = "the invocation id header breaks the id rule";
                return orpc_error(StatusCode::BAD_REQUEST, "BAD_REQUEST", why);
            }
        }
        let limit = self.limits.max_request_bytes;
        let body = match axum::body::to_bytes(request.into_body(), limit).await {
            Ok(body) => body,
            Err(_) => {
                let why = format!("the request body is over {limit} bytes");
                return orpc_error(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", &why);
            }
        };
        let mut upstream = self
            .http
            .post(format!("{}/{path}", self.backend))
            .header(header::AUTHORIZATION, self.authorization.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(id) = invocation_id {
            upstream = upstream.header(INVOCATION_ID_HEADER, id);
        }
        self.relay(upstream).await
    }

    /// Sends `upstream` and relays status, content type and a bounded body.
    async fn relay(&self, upstream: reqwest::RequestBuilder) -> Response {
        let gateway = |why: &str| orpc_error(StatusCode::BAD_GATEWAY, "BAD_GATEWAY", why);
        let mut answer = match upstream.send().await {
            Ok(answer) => answer,
            Err(error) => {
                tracing::warn!(?error, "the backend is unreachable");
                return gateway("the backend is unreachable");
            }
        };
        let status = answer.status();
        let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
        let mut bytes = Vec::new();
        loop {
            match answer.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > self.limits.max_response_bytes {
                        return gateway("the backend's answer is too large");
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(_) => return gateway("the backend's answer was cut"),
            }
        }
        let mut response = Response::new(Body::from(bytes));
        *response.status_mut() = status;
        if let Some(ct) = content_type {
            response.headers_mut().insert(header::CONTENT_TYPE, ct);
        }
        response
    }
}
