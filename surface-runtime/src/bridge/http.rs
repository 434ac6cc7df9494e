//! [`HttpOrpcClient`]: an [`OrpcClient`] over HTTP with reqwest (cargo
//! feature `http`; `http-rustls` adds TLS). It speaks oRPC's RPC protocol
//! as `ORPC-WIRE.md` describes it, against an unmodified `@orpc/server`
//! `RPCHandler`:
//!
//! * `POST {base}/{segment}/{segment}` with `content-type:
//!   application/json` and the body of [`encode_request_body`];
//! * with [`CallMethod::Get`], `GET …?data=<envelope>`
//!   ([`rpc_get_url`]), falling back to POST above [`MAX_GET_URL_LENGTH`];
//! * the client's own headers (the app's authentication), then the call's
//!   [`CallOptions::headers`];
//! * the response through [`decode_response`];
//! * [`CallOptions::cancellation`] drops the request (the server may still
//!   finish it) and returns [`OrpcCallError::Cancelled`].
//!
//! Transport errors are split by whether the request could have reached
//! the server: a failed connect is [`OrpcCallError::Connect`] (nothing
//! sent), every later failure [`OrpcCallError::Transport`]. Needs a tokio
//! runtime on native targets (reqwest's requirement).

use futures_util::future::{select, Either};
use serde_json::Value;

use crate::bridge::client::{
    decode_response, encode_request_body, rpc_get_url, rpc_url, CallMethod, CallOptions, Headers,
    OrpcCallError, OrpcClient, MAX_GET_URL_LENGTH,
};
use crate::sync::BoxFuture;

/// An oRPC client over HTTP.
///
/// ```no_run
/// # use surface_runtime::bridge::http::HttpOrpcClient;
/// let client = HttpOrpcClient::new("http://127.0.0.1:3000/rpc")
///     .with_header("authorization", "Bearer user-token");
/// ```
#[derive(Clone, Debug)]
pub struct HttpOrpcClient {
    http: reqwest::Client,
    base: String,
    headers: Headers,
}

impl HttpOrpcClient {
    /// A client for the RPC handler at `base` (the handler's URL prefix,
    /// e.g. `http://127.0.0.1:3000/rpc`), with a default reqwest client.
    pub fn new(base: impl Into<String>) -> Self {
        Self::with_client(reqwest::Client::new(), base)
    }

    /// A client using a configured reqwest client (timeouts, TLS roots,
    /// cookie store, proxies).
    pub fn with_client(http: reqwest::Client, base: impl Into<String>) -> Self {
        Self {
            http,
            base: base.into(),
            headers: Vec::new(),
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
        for (name, value) in self.headers.iter().chain(options.headers.iter()) {
            request = request.header(name.as_str(), value.as_str());
        }
        let request = request.build().map_err(|e| OrpcCallError::InvalidRequest {
            message: e.to_string(),
        })?;
        let exchange = async {
            let response = self.http.execute(request).await.map_err(transport_error)?;
            let status = response.status().as_u16();
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = response.bytes().await.map_err(transport_error)?;
            decode_response(status, content_type.as_deref(), &body)
        };
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
}

fn transport_error(error: reqwest::Error) -> OrpcCallError {
    let message = error_chain(&error);
    if error.is_connect() {
        OrpcCallError::Connect { message }
    } else if error.is_builder() {
        OrpcCallError::InvalidRequest { message }
    } else {
        OrpcCallError::Transport { message }
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
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
