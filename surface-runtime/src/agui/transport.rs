//! How a run reaches the agent: [`AgUiTransport`], one `POST` per run
//! whose response body arrives as a stream of byte chunks.
//!
//! The crate has two: `HttpAgUiTransport` (native, feature `http`,
//! reqwest) and `FetchAgUiTransport` (wasm32, feature `browser`, the
//! browser's `fetch`). A transport of your own must keep the same
//! contract:
//!
//! * `POST` the body to the agent's URL with
//!   `content-type: application/json` and `accept: text/event-stream`
//!   (AG-UI servers answer protobuf to `*/*`), never following redirects;
//! * bound the whole run by [`AgUiLimits::run_timeout`] and each wait for
//!   bytes by [`AgUiLimits::idle_timeout`] ([`AgUiError::Timeout`]);
//! * report what it could not do as [`AgUiError::Transport`];
//! * abort the request when the [`AgUiResponse`] (or its body) is dropped
//!   — that is how a cancelled or refused run ends.
//!
//! The client reads the status and content type, caps the body at
//! [`AgUiLimits::max_response_bytes`] and decodes it.

use std::pin::Pin;

pub use futures_util::Stream;

use super::{AgUiError, AgUiLimits};
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// The chunks of a response body, in order; an `Err` ends it.
#[cfg(not(target_arch = "wasm32"))]
pub type AgUiBody = Pin<Box<dyn Stream<Item = Result<Vec<u8>, AgUiError>> + Send>>;
/// The chunks of a response body, in order; an `Err` ends it.
#[cfg(target_arch = "wasm32")]
pub type AgUiBody = Pin<Box<dyn Stream<Item = Result<Vec<u8>, AgUiError>>>>;

/// The head of a run's response and its body.
pub struct AgUiResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `content-type` header, if any.
    pub content_type: Option<String>,
    /// The body, chunk by chunk.
    pub body: AgUiBody,
}

impl AgUiResponse {
    /// A response whose body is already here, in `chunks` (a transport
    /// that buffers, a recording replayed, a test).
    pub fn from_chunks(status: u16, content_type: Option<String>, chunks: Vec<Vec<u8>>) -> Self {
        Self {
            status,
            content_type,
            body: Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok))),
        }
    }
}

impl std::fmt::Debug for AgUiResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgUiResponse")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .finish_non_exhaustive()
    }
}

/// Sends one run's `RunAgentInput` (module docs for the contract).
pub trait AgUiTransport: MaybeSend + MaybeSync {
    /// The agent's URL, for errors.
    fn url(&self) -> &str;

    /// Posts `body` (the `RunAgentInput` JSON) and resolves to the
    /// response's head once it arrives.
    fn post(
        &self,
        body: String,
        limits: AgUiLimits,
    ) -> BoxFuture<'static, Result<AgUiResponse, AgUiError>>;
}

/// Whether `content_type` is `text/event-stream` (parameters ignored).
pub(crate) fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|t| {
        t.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
    })
}

#[cfg(all(feature = "http", not(target_arch = "wasm32")))]
pub use http::HttpAgUiTransport;

#[cfg(all(feature = "http", not(target_arch = "wasm32")))]
mod http {
    use super::*;

    /// An [`AgUiTransport`] over reqwest (native, cargo feature `http`;
    /// `https://` needs `rustls`; needs a tokio runtime with its timer,
    /// like reqwest itself). Redirects are never followed; connecting may
    /// take 10 s; the whole run is bounded by [`AgUiLimits::run_timeout`]
    /// (the request's timeout) and every wait for the next bytes by
    /// [`AgUiLimits::idle_timeout`].
    #[derive(Clone, Debug)]
    pub struct HttpAgUiTransport {
        http: reqwest::Client,
        url: String,
        headers: Vec<(String, String)>,
    }

    /// How long [`HttpAgUiTransport::new`]'s client may take to connect.
    const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

    impl HttpAgUiTransport {
        /// A transport to the agent endpoint `url`
        /// (`http://127.0.0.1:8000/agent`).
        ///
        /// # Panics
        /// Like `reqwest::Client::new`, when the TLS backend cannot be
        /// initialized.
        pub fn new(url: impl Into<String>) -> Self {
            let builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(CONNECT_TIMEOUT);
            #[cfg(feature = "rustls")]
            let builder = crate::bridge::tls::TlsRoots::webpki().configure(builder);
            let http = match builder.build() {
                Ok(http) => http,
                Err(error) => panic!("the HTTP client could not be built: {error}"),
            };
            Self::with_client(http, url)
        }

        /// A transport over a configured reqwest client (build it with no
        /// redirect following; the run and idle timeouts are applied per
        /// run whatever the client's own).
        pub fn with_client(http: reqwest::Client, url: impl Into<String>) -> Self {
            Self {
                http,
                url: url.into(),
                headers: Vec::new(),
            }
        }

        /// Adds a header sent with every run (e.g. `authorization`).
        #[must_use]
        pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.headers.push((name.into(), value.into()));
            self
        }
    }

    fn transport_error(url: &str, error: &reqwest::Error, limits: &AgUiLimits) -> AgUiError {
        if error.is_timeout() && !error.is_connect() {
            // Only the request's own timeout remains: the run's.
            return AgUiError::Timeout {
                what: "run",
                timeout: limits.run_timeout,
            };
        }
        let mut message = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        AgUiError::Transport {
            url: url.to_string(),
            message: super::super::foreign_text(&message),
        }
    }

    /// The next chunk of `response`, within the idle timeout.
    async fn next_chunk(
        response: &mut reqwest::Response,
        url: &str,
        limits: &AgUiLimits,
    ) -> Option<Result<Vec<u8>, AgUiError>> {
        match tokio::time::timeout(limits.idle_timeout, response.chunk()).await {
            Err(_) => Some(Err(AgUiError::Timeout {
                what: "idle",
                timeout: limits.idle_timeout,
            })),
            Ok(Ok(Some(bytes))) => Some(Ok(bytes.to_vec())),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => Some(Err(transport_error(url, &e, limits))),
        }
    }

    impl AgUiTransport for HttpAgUiTransport {
        fn url(&self) -> &str {
            &self.url
        }

        fn post(
            &self,
            body: String,
            limits: AgUiLimits,
        ) -> BoxFuture<'static, Result<AgUiResponse, AgUiError>> {
            let mut request = self
                .http
                .post(&self.url)
                .timeout(limits.run_timeout)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream");
            for (name, value) in &self.headers {
                request = request.header(name, value);
            }
            let request = request.body(body);
            let url = self.url.clone();
            Box::pin(async move {
                let response = request
                    .send()
                    .await
                    .map_err(|e| transport_error(&url, &e, &limits))?;
                let status = response.status().as_u16();
                let content_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let body = futures_util::stream::unfold(Some(response), move |state| {
                    let url = url.clone();
                    async move {
                        let mut response = state?;
                        match next_chunk(&mut response, &url, &limits).await {
                            Some(Ok(chunk)) => Some((Ok(chunk), Some(response))),
                            Some(Err(e)) => Some((Err(e), None)),
                            None => None,
                        }
                    }
                });
                Ok(AgUiResponse {
                    status,
                    content_type,
                    body: Box::pin(body),
                })
            })
        }
    }
}
