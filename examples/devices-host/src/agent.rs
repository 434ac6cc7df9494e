//! The AG-UI agent of the page's chat panel, behind the page's origin:
//! `POST /app/agent` forwards a run (the page's `RunAgentInput`) to the
//! agent's endpoint ([`HostConfig::ag_ui`](crate::HostConfig)) and streams
//! its event stream back; `POST /app/config` tells the page whether there
//! is one (`{"json":{"agUi":"/app/agent"}}`, else `{"agUi":null}`).
//!
//! Same origin, not the agent's own: the page's `Content-Security-Policy`
//! lets it `fetch` its origin only (`connect-src 'self'`), and the host
//! admits a run like every other page request — the page guard (Host,
//! Origin) and the page's session cookie before any byte is read or
//! forwarded — so the agent itself can stay on loopback.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The page's path for AG-UI runs.
pub const AGENT_PATH: &str = "/app/agent";

/// Largest run request forwarded: 4 MiB (the client's thread is bounded
/// by `AgUiLimits::max_thread_bytes`, 2 MiB, plus the tools' schemas);
/// HTTP 413 past it.
pub const MAX_RUN_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// Longest wait for the agent's next bytes before the run is cut (the
/// page's own idle timeout is shorter: `AgUiLimits::idle_timeout`, 60 s).
const IDLE: Duration = Duration::from_secs(120);

/// Forwards runs to one AG-UI endpoint.
#[derive(Clone, Debug)]
pub(crate) struct AgentProxy {
    url: String,
    http: reqwest::Client,
}

impl AgentProxy {
    /// A proxy to the agent endpoint `url` (never following redirects).
    pub(crate) fn new(url: &str) -> std::io::Result<Self> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(IDLE)
            .build()
            .map_err(std::io::Error::other)?;
        Ok(Self {
            url: url.to_string(),
            http,
        })
    }

    /// Posts `body` to the agent and answers with its status, content type
    /// and body, streamed chunk by chunk as they arrive (`Cache-Control:
    /// no-store`). The page dropping the answer drops the agent's
    /// request. 502 when the agent cannot be reached.
    pub(crate) async fn forward(&self, body: Bytes) -> Response {
        let sent = self
            .http
            .post(&self.url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "text/event-stream")
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(url = ?self.url, ?error, "the AG-UI agent could not be reached");
                let message = "The agent could not be reached.";
                return (StatusCode::BAD_GATEWAY, message).into_response();
            }
        };
        let status = response.status();
        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
        let chunks = futures_util::stream::unfold(Some(response), |state| async move {
            let mut response = state?;
            match response.chunk().await {
                Ok(Some(bytes)) => Some((Ok(bytes), Some(response))),
                Ok(None) => None,
                Err(error) => Some((Err(error), None)),
            }
        });
        let mut answer = Response::new(Body::from_stream(chunks));
        *answer.status_mut() = status;
        let headers = answer.headers_mut();
        if let Some(content_type) = content_type {
            headers.insert(header::CONTENT_TYPE, content_type);
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        answer
    }
}
