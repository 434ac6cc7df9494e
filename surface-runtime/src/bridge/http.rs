//! [`HttpOrpcClient`]: an [`OrpcClient`] over HTTP with reqwest (cargo
//! feature `http`). reqwest is built without default features (plain
//! HTTP/1.1, no TLS, no proxy detection) to keep the tree lean. For
//! `https` enable the cargo feature `rustls`: the same constructors then
//! speak https too, trusting the webpki roots, and
//! `HttpOrpcClient::with_tls` trusts other roots (a private CA, a
//! self-signed backend: `bridge::tls::TlsRoots`).
//! It speaks oRPC's RPC protocol (`docs/bridges.md`), against an
//! unmodified `@orpc/server` `RPCHandler`:
//!
//! * `POST {base}/{segment}/{segment}` with `content-type:
//!   application/json` and the body of [`encode_request_body`];
//! * with [`CallMethod::Get`], `GET …?data=<envelope>`
//!   ([`rpc_get_url`]), falling back to POST above [`MAX_GET_URL_LENGTH`];
//! * the client's own headers (the app's authentication), then the call's
//!   [`CallOptions::headers`], which replace client headers of the same
//!   name;
//! * the response through [`decode_response`];
//! * [`CallOptions::cancellation`] drops the request (the server may still
//!   finish it) and returns [`OrpcCallError::Cancelled`].
//!
//! Every call is bounded by [`ClientLimits`] (defaults: 8 MiB of response
//! body, 10 s to connect, 30 s in total):
//!
//! * redirects are never followed: a 3xx answer is
//!   [`OrpcCallError::Redirect`], its `location` kept for audit only, and
//!   the body is not read;
//! * the body is read chunk by chunk through a [`LimitedBody`]: a
//!   `Content-Length` over the cap is refused before reading, a streamed
//!   body at the chunk that crosses it ([`OrpcCallError::ResponseTooLarge`]);
//! * [`ClientLimits::timeout`] covers connecting, sending, the head and the
//!   whole body, so a silent or trickling server ends in
//!   [`OrpcCallError::Timeout`]; [`ClientLimits::connect_timeout`] ends a
//!   connect that hangs in [`OrpcCallError::Connect`] (nothing sent);
//! * the response head is bounded by hyper's defaults (100 headers,
//!   about 400 KiB); over them the call is [`OrpcCallError::Transport`].
//!
//! Transport errors are split by whether the request could have reached
//! the server: a failed connect is [`OrpcCallError::Connect`] (nothing
//! sent), every later failure [`OrpcCallError::Transport`] or
//! [`OrpcCallError::Timeout`]. Needs a tokio runtime with timers on native
//! targets (reqwest's requirement).

use futures_util::future::{select, Either};
use serde_json::Value;

use crate::bridge::client::{
    decode_response, encode_request_body, error_chain, excerpt, rpc_get_url, rpc_url, CallMethod,
    CallOptions, Headers, OrpcCallError, OrpcClient, MAX_GET_URL_LENGTH,
};
use crate::bridge::limits::{ClientLimits, LimitedBody};
use crate::sync::BoxFuture;

/// An oRPC client over HTTP, bounded by [`ClientLimits`].
///
/// ```no_run
/// # use std::time::Duration;
/// # use surface_runtime::bridge::{http::HttpOrpcClient, ClientLimits};
/// let client = HttpOrpcClient::new("http://127.0.0.1:3000/rpc")
///     .with_header("authorization", "Bearer user-token");
/// let patient = HttpOrpcClient::with_limits(
///     "http://127.0.0.1:3000/rpc",
///     ClientLimits::default().with_timeout(Duration::from_secs(120)),
/// );
/// ```
#[derive(Clone, Debug)]
pub struct HttpOrpcClient {
    http: reqwest::Client,
    base: String,
    headers: Headers,
    limits: ClientLimits,
}

impl HttpOrpcClient {
    /// A client for the RPC handler at `base` (the handler's URL prefix,
    /// e.g. `http://127.0.0.1:3000/rpc`) with the default [`ClientLimits`]
    /// (8 MiB, 10 s connect, 30 s total) and no redirect following.
    ///
    /// With the cargo feature `rustls`, `https://` bases work too and
    /// trust the webpki roots (`TlsRoots::webpki`);
    /// without it an `https://` call fails as
    /// [`OrpcCallError::Connect`].
    ///
    /// # Panics
    /// Like `reqwest::Client::new`, when the TLS backend cannot be
    /// initialized.
    pub fn new(base: impl Into<String>) -> Self {
        Self::with_limits(base, ClientLimits::default())
    }

    /// A client for the RPC handler at `base` with other limits.
    ///
    /// # Panics
    /// As [`Self::new`].
    pub fn with_limits(base: impl Into<String>, limits: ClientLimits) -> Self {
        let http = match Self::client_builder(&limits).build() {
            Ok(http) => http,
            Err(error) => panic!("the HTTP client could not be built: {error}"),
        };
        Self::with_client(http, base, limits)
    }

    /// A client for the RPC handler at `base` (`https://…`) trusting
    /// exactly `roots` (cargo feature `rustls`), with `limits` and the safe
    /// settings of [`Self::new`] (no redirect following).
    ///
    /// ```no_run
    /// # use surface_runtime::bridge::{http::HttpOrpcClient, tls::TlsRoots, ClientLimits};
    /// let pem = std::fs::read("backend-cert.pem")?;
    /// let client = HttpOrpcClient::with_tls(
    ///     "https://127.0.0.1:3443/rpc",
    ///     ClientLimits::default(),
    ///     &TlsRoots::empty().add_pem(&pem)?,
    /// )?
    /// .with_header("authorization", "Bearer user-token");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TlsError::Client`](super::tls::TlsError::Client) when the client
    /// cannot be built (the TLS backend cannot be initialized).
    #[cfg(all(feature = "rustls", not(target_arch = "wasm32")))]
    pub fn with_tls(
        base: impl Into<String>,
        limits: ClientLimits,
        roots: &super::tls::TlsRoots,
    ) -> Result<Self, super::tls::TlsError> {
        let http = roots
            .configure(Self::plain_builder(&limits))
            .build()
            .map_err(|e| super::tls::TlsError::Client {
                message: error_chain(&e),
            })?;
        Ok(Self::with_client(http, base, limits))
    }

    /// A reqwest client builder with the safe settings of [`Self::new`]:
    /// redirects never followed, `limits.connect_timeout`, and
    /// `limits.timeout` as the client's total timeout (and, with the
    /// feature `rustls`, the webpki roots alone). Add cookies or proxies to
    /// it, then pass the client to [`Self::with_client`].
    pub fn client_builder(limits: &ClientLimits) -> reqwest::ClientBuilder {
        let builder = Self::plain_builder(limits);
        #[cfg(all(feature = "rustls", not(target_arch = "wasm32")))]
        let builder = super::tls::TlsRoots::webpki().configure(builder);
        builder
    }

    fn plain_builder(limits: &ClientLimits) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(limits.connect_timeout)
            .timeout(limits.timeout)
    }

    /// A client using a configured reqwest client. `limits.timeout` and
    /// `limits.max_response_bytes` are applied to every request whatever
    /// the client's settings; the connect timeout and the redirect policy
    /// are the client's own, so build it from [`Self::client_builder`]. If
    /// the client follows a redirect anyway, the answer is refused as
    /// [`OrpcCallError::Redirect`] (the request already went to the other
    /// URL).
    pub fn with_client(
        http: reqwest::Client,
        base: impl Into<String>,
        limits: ClientLimits,
    ) -> Self {
        Self {
            http,
            base: base.into(),
            headers: Vec::new(),
            limits,
        }
    }

    /// Adds a header sent with every call (the user's normal authenticated
    /// transport, e.g. `authorization`).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The handler URL prefix.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The limits applied to every call.
    pub fn limits(&self) -> &ClientLimits {
        &self.limits
    }

    async fn send(
        &self,
        path: &str,
        input: Option<Value>,
        options: CallOptions,
    ) -> Result<Value, OrpcCallError> {
        let get_url = match options.method {
            CallMethod::Get => {
                let url = rpc_get_url(&self.base, path, input.as_ref())?;
                (url.len() <= MAX_GET_URL_LENGTH).then_some(url)
            }
            CallMethod::Post => None,
        };
        let mut request = match get_url {
            Some(url) => self.http.get(url),
            None => self
                .http
                .post(rpc_url(&self.base, path)?)
                .header("content-type", "application/json")
                .body(encode_request_body(input.as_ref())),
        };
        // A call header replaces the client's headers of the same name (a
        // fresh `authorization` for a resume, for example).
        let overridden = |name: &str| {
            options
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let client_headers = self.headers.iter().filter(|(n, _)| !overridden(n));
        for (name, value) in client_headers.chain(options.headers.iter()) {
            request = request.header(name.as_str(), value.as_str());
        }
        // Covers connect, send, head and body (reqwest carries the deadline
        // into the body stream); overrides a custom client's own timeout.
        let request = request.timeout(self.limits.timeout).build().map_err(|e| {
            OrpcCallError::InvalidRequest {
                message: e.to_string(),
            }
        })?;
        let exchange = self.exchange(request);
        match options.cancellation {
            None => exchange.await,
            Some(cancellation) => {
                if cancellation.is_cancelled() {
                    return Err(OrpcCallError::Cancelled);
                }
                let exchange = std::pin::pin!(exchange);
                match select(exchange, cancellation.cancelled()).await {
                    Either::Left((result, _)) => result,
                    Either::Right(((), _)) => Err(OrpcCallError::Cancelled),
                }
            }
        }
    }

    /// Sends `request` and reads the answer within the limits.
    async fn exchange(&self, request: reqwest::Request) -> Result<Value, OrpcCallError> {
        let sent_to = request.url().clone();
        let transport = |e| self.transport_error(e);
        let mut response = self.http.execute(request).await.map_err(transport)?;
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .map(|v| excerpt(v.as_bytes()));
            return Err(OrpcCallError::Redirect { status, location });
        }
        if response.url() != &sent_to {
            // A custom client followed a redirect: refuse what came back.
            return Err(OrpcCallError::Redirect {
                status,
                location: Some(excerpt(response.url().as_str().as_bytes())),
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = LimitedBody::new(
            self.limits.max_response_bytes,
            status,
            response.content_length(),
        )?;
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            body.push(&chunk)?;
        }
        decode_response(status, content_type.as_deref(), &body.into_bytes())
    }

    fn transport_error(&self, error: reqwest::Error) -> OrpcCallError {
        let message = error_chain(&error);
        if error.is_connect() {
            OrpcCallError::Connect { message }
        } else if error.is_builder() {
            OrpcCallError::InvalidRequest { message }
        } else if error.is_timeout() {
            OrpcCallError::Timeout {
                timeout: self.limits.timeout,
            }
        } else {
            OrpcCallError::Transport { message }
        }
    }
}

impl OrpcClient for HttpOrpcClient {
    fn call<'a>(
        &'a self,
        path: &'a str,
        input: Option<Value>,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<Value, OrpcCallError>> {
        Box::pin(self.send(path, input, options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancellation::Cancellation;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Accepts one connection, reads one request (head + content-length
    /// body), then answers `response` (or closes the socket when `None`).
    /// Returns the base URL and a handle yielding the raw request text.
    async fn responder(
        response: Option<&'static str>,
    ) -> (String, tokio::task::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/rpc", listener.local_addr().unwrap());
        let handle = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = socket.read(&mut buf).await.unwrap();
                raw.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&raw).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if raw.len() >= end + 4 + length {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            if let Some(response) = response {
                socket.write_all(response.as_bytes()).await.unwrap();
                socket.shutdown().await.unwrap();
            }
            String::from_utf8(raw).unwrap()
        });
        (base, handle)
    }

    fn http_response(status: &str, content_type: &str, body: &str) -> &'static str {
        Box::leak(
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_boxed_str(),
        )
    }

    #[tokio::test]
    async fn wire_post_request_line_headers_and_body() {
        let (base, server) = responder(Some(http_response(
            "200 OK",
            "application/json",
            r#"{"json":{"disabled":["dev-1"]}}"#,
        )))
        .await;
        let client = HttpOrpcClient::new(base).with_header("authorization", "Bearer user-token");
        let out = client
            .call(
                "devices.disable",
                Some(json!({"deviceIds": ["dev-1"]})),
                CallOptions {
                    headers: vec![("x-agent-invocation-id".into(), "inv-1".into())],
                    ..CallOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(out, json!({"disabled": ["dev-1"]}));
        let raw = server.await.unwrap();
        let lower = raw.to_ascii_lowercase();
        assert!(
            raw.starts_with("POST /rpc/devices/disable HTTP/1.1\r\n"),
            "{raw}"
        );
        assert!(
            lower.contains("\r\ncontent-type: application/json\r\n"),
            "{raw}"
        );
        assert!(
            lower.contains("\r\nauthorization: bearer user-token\r\n"),
            "{raw}"
        );
        assert!(
            lower.contains("\r\nx-agent-invocation-id: inv-1\r\n"),
            "{raw}"
        );
        assert!(
            raw.ends_with("\r\n\r\n{\"json\":{\"deviceIds\":[\"dev-1\"]}}"),
            "{raw}"
        );
    }

    #[tokio::test]
    async fn call_headers_replace_client_headers_of_the_same_name() {
        let (base, server) =
            responder(Some(http_response("200 OK", "application/json", "{}"))).await;
        let client = HttpOrpcClient::new(base)
            .with_header("Authorization", "Bearer stale")
            .with_header("x-app", "console");
        client
            .call(
                "resumeApproval",
                Some(json!({"invocationId": "i", "approvalId": "a"})),
                CallOptions {
                    headers: vec![("authorization".into(), "Bearer fresh".into())],
                    ..CallOptions::default()
                },
            )
            .await
            .unwrap();
        let lower = server.await.unwrap().to_ascii_lowercase();
        assert!(
            lower.contains("\r\nauthorization: bearer fresh\r\n"),
            "{lower}"
        );
        assert!(!lower.contains("stale"), "{lower}");
        assert!(lower.contains("\r\nx-app: console\r\n"), "{lower}");
    }

    #[tokio::test]
    async fn wire_get_carries_data_query_and_long_input_falls_back_to_post() {
        let (base, server) =
            responder(Some(http_response("200 OK", "application/json", "{}"))).await;
        let client = HttpOrpcClient::new(base);
        let get = CallOptions {
            method: CallMethod::Get,
            ..CallOptions::default()
        };
        let out = client
            .call("devices.list", Some(json!({"limit": 2})), get.clone())
            .await
            .unwrap();
        assert_eq!(out, Value::Null);
        let raw = server.await.unwrap();
        assert!(
            raw.starts_with(
                "GET /rpc/devices/list?data=%7B%22json%22%3A%7B%22limit%22%3A2%7D%7D HTTP/1.1\r\n"
            ),
            "{raw}"
        );
        let (base, server) =
            responder(Some(http_response("200 OK", "application/json", "{}"))).await;
        let long = "x".repeat(MAX_GET_URL_LENGTH);
        HttpOrpcClient::new(base)
            .call("devices.list", Some(json!({ "q": long })), get)
            .await
            .unwrap();
        assert!(server.await.unwrap().starts_with("POST /rpc/devices/list "));
    }

    #[tokio::test]
    async fn wire_404_text_plain_is_unexpected_response() {
        let (base, _server) = responder(Some(http_response(
            "404 Not Found",
            "text/plain",
            "Not found",
        )))
        .await;
        let err = HttpOrpcClient::new(base)
            .call("nope.nothing", Some(json!({})), CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, OrpcCallError::UnexpectedResponse { status: 404, content_type: Some(ct), body, .. } if ct == "text/plain" && body == "Not found"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn transport_lost_response_and_refused_connection_are_distinguished() {
        let (base, server) = responder(None).await;
        let err = HttpOrpcClient::new(base)
            .call("devices.disable", Some(json!({})), CallOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, OrpcCallError::Transport { .. }), "{err:?}");
        assert!(err.may_have_executed());
        server.await.unwrap();
        // A port nobody listens on.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let err = HttpOrpcClient::new(format!("http://{addr}/rpc"))
            .call("devices.disable", Some(json!({})), CallOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, OrpcCallError::Connect { .. }), "{err:?}");
        assert!(!err.may_have_executed());
    }

    /// The lean default: no TLS backend, so `https` fails before anything
    /// is sent.
    #[cfg(not(feature = "rustls"))]
    #[tokio::test]
    async fn without_the_rustls_feature_https_is_a_connect_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let err = HttpOrpcClient::new(format!("https://{addr}/rpc"))
            .call("devices.list", Some(json!({})), CallOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, OrpcCallError::Connect { .. }), "{err:?}");
        assert!(!err.may_have_executed());
    }

    #[tokio::test]
    async fn cancellation_stops_waiting() {
        // A server that reads the request and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/rpc", listener.local_addr().unwrap());
        let _server = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            drop(socket);
        });
        let cancellation = Cancellation::new();
        let trigger = cancellation.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            trigger.cancel();
        });
        let err = HttpOrpcClient::new(base)
            .call(
                "devices.disable",
                Some(json!({})),
                CallOptions {
                    cancellation: Some(cancellation.clone()),
                    ..CallOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(err, OrpcCallError::Cancelled);
        // Already cancelled: nothing is sent.
        let err = HttpOrpcClient::new("http://127.0.0.1:9/rpc")
            .call(
                "a.b",
                None,
                CallOptions {
                    cancellation: Some(cancellation),
                    ..CallOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(err, OrpcCallError::Cancelled);
    }

    #[test]
    fn new_applies_the_default_limits() {
        assert_eq!(
            HttpOrpcClient::new("http://h/rpc").limits(),
            &ClientLimits::default()
        );
        let limits = ClientLimits::default().with_max_response_bytes(1);
        assert_eq!(
            HttpOrpcClient::with_limits("http://h/rpc", limits).limits(),
            &limits
        );
    }

    #[tokio::test]
    async fn response_cap_is_configurable_and_exact() {
        let limits = ClientLimits::default().with_max_response_bytes(1024);
        // Exactly at the cap: accepted.
        let body = format!(r#"{{"json":"{}"}}"#, "a".repeat(1024 - 11));
        assert_eq!(body.len(), 1024);
        let (base, _server) =
            responder(Some(http_response("200 OK", "application/json", &body))).await;
        let out = HttpOrpcClient::with_limits(base, limits)
            .call("a.b", None, CallOptions::default())
            .await
            .unwrap();
        assert_eq!(out.as_str().map(str::len), Some(1024 - 11));
        // One byte over, declared: refused at the head.
        let body = format!(r#"{{"json":"{}"}}"#, "a".repeat(1024 - 10));
        let (base, _server) =
            responder(Some(http_response("200 OK", "application/json", &body))).await;
        let err = HttpOrpcClient::with_limits(base, limits)
            .call("a.b", None, CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            OrpcCallError::ResponseTooLarge {
                status: 200,
                limit: 1024,
                declared_length: Some(1025)
            }
        );
        // One byte over, chunked (no length): refused while streaming.
        let chunked = Box::leak(
            format!(
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
                body.len()
            )
            .into_boxed_str(),
        );
        let (base, _server) = responder(Some(chunked)).await;
        let err = HttpOrpcClient::with_limits(base, limits)
            .call("a.b", None, CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            OrpcCallError::ResponseTooLarge {
                status: 200,
                limit: 1024,
                declared_length: None
            }
        );
        assert!(err.may_have_executed());
    }

    #[tokio::test]
    async fn total_timeout_is_configurable_and_covers_a_trickling_body() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/rpc", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await.unwrap();
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                .await
                .unwrap();
            let mut sent = 0u32;
            // Every read succeeds; only a total deadline ends this.
            while socket.write_all(b"1\r\n \r\n").await.is_ok() && sent < 2000 {
                sent += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            sent
        });
        let timeout = std::time::Duration::from_millis(500);
        let start = std::time::Instant::now();
        let err = HttpOrpcClient::with_limits(base, ClientLimits::default().with_timeout(timeout))
            .call("a.b", None, CallOptions::default())
            .await
            .unwrap_err();
        assert!(start.elapsed() >= timeout, "{:?}", start.elapsed());
        assert_eq!(err, OrpcCallError::Timeout { timeout });
        assert!(err.may_have_executed());
        let sent = server.await.unwrap();
        assert!(sent > 1 && sent < 2000, "{sent} chunks");
    }

    /// A listener whose accept queue is full: the kernel drops further
    /// SYNs, so a connect hangs (Linux).
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn connect_timeout_ends_a_connect_that_hangs_and_nothing_is_sent() {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut fillers = Vec::new();
        let mut full = false;
        for _ in 0..16 {
            match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(300))
            {
                Ok(stream) => fillers.push(stream),
                Err(_) => {
                    full = true;
                    break;
                }
            }
        }
        assert!(full, "the accept queue never filled");
        let limits = ClientLimits::default()
            .with_connect_timeout(std::time::Duration::from_millis(300))
            .with_timeout(std::time::Duration::from_secs(60));
        let start = std::time::Instant::now();
        let err = HttpOrpcClient::with_limits(format!("http://{addr}/rpc"), limits)
            .call("a.b", None, CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, OrpcCallError::Connect { .. }),
            "{err:?} after {:?}",
            start.elapsed()
        );
        assert!(!err.may_have_executed());
        assert!(start.elapsed() < std::time::Duration::from_secs(30));
        drop(listener);
    }

    #[tokio::test]
    async fn a_custom_client_that_follows_redirects_is_refused() {
        let (elsewhere, _other) = responder(Some(http_response(
            "200 OK",
            "application/json",
            r#"{"json":{"stolen":true}}"#,
        )))
        .await;
        let location = format!("{elsewhere}/x");
        let redirect = Box::leak(
            format!("HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .into_boxed_str(),
        );
        let (base, _server) = responder(Some(redirect)).await;
        // reqwest's default policy follows up to 10 redirects.
        let client =
            HttpOrpcClient::with_client(reqwest::Client::new(), base, ClientLimits::default());
        let err = client
            .call("a.b", Some(json!({})), CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            OrpcCallError::Redirect {
                status: 200,
                location: Some(location)
            }
        );
        // The builder of the safe settings does not follow.
        let (base, _server) = responder(Some(redirect)).await;
        let http = HttpOrpcClient::client_builder(&ClientLimits::default())
            .build()
            .unwrap();
        let err = HttpOrpcClient::with_client(http, base, ClientLimits::default())
            .call("a.b", Some(json!({})), CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, OrpcCallError::Redirect { status: 307, location: Some(l) } if l.ends_with("/x")),
            "{err:?}"
        );
    }
}
