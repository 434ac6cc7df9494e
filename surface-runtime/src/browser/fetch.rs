//! [`FetchOrpcClient`]: an [`OrpcClient`] over the browser's `fetch`.

use futures_util::future::{select, Either};
use js_sys::futures::JsFuture;
use js_sys::{Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    AbortController, Headers as JsHeaders, ReadableStreamDefaultReader, Request, RequestCache,
    RequestCredentials, RequestInit, RequestRedirect, Response, ResponseType,
};

use super::js_error_text;
use super::timer::sleep;
use crate::bridge::client::{
    decode_response, encode_request_body, excerpt, rpc_get_url, rpc_url, CallMethod, CallOptions,
    Headers, OrpcCallError, OrpcClient, MAX_GET_URL_LENGTH,
};
use crate::bridge::limits::{ClientLimits, LimitedBody};
use crate::sync::BoxFuture;

/// Whether `fetch` sends cookies and HTTP authentication
/// (`RequestInit.credentials`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FetchCredentials {
    /// Never.
    Omit,
    /// Only to the page's own origin (the browser's default).
    #[default]
    SameOrigin,
    /// Also cross-origin (the server must answer CORS with
    /// `Access-Control-Allow-Credentials: true`).
    Include,
}

impl FetchCredentials {
    /// As `RequestInit.credentials`.
    pub(crate) fn mode(self) -> RequestCredentials {
        match self {
            FetchCredentials::Omit => RequestCredentials::Omit,
            FetchCredentials::SameOrigin => RequestCredentials::SameOrigin,
            FetchCredentials::Include => RequestCredentials::Include,
        }
    }
}

/// An oRPC client over the browser's `fetch` (window or worker), with the
/// wire codec of `bridge::HttpOrpcClient` (`docs/bridges.md`,
/// `docs/browser.md`):
///
/// * `POST {base}/{segments}`, `content-type: application/json`, body
///   `{"json": input}`; [`CallMethod::Get`] as `GET …?data=`, POST above
///   [`MAX_GET_URL_LENGTH`] bytes. `base` may be relative to the page
///   (`"/rpc"`).
/// * The client's headers, then the call's headers, which replace client
///   headers of the same name. A header the browser refuses to send
///   (`cookie`, `host`, …) is dropped by the browser; a name or value that
///   is not valid HTTP is [`OrpcCallError::InvalidRequest`], nothing sent.
/// * [`ClientLimits`] (defaults 8 MiB, 30 s): redirects are never followed
///   (`redirect: "manual"`; the browser hides the status and location of
///   such an answer, so it is [`OrpcCallError::Redirect`] with `status: 0`
///   and no location); a `Content-Length` over
///   [`ClientLimits::max_response_bytes`] is refused before reading and
///   the body is read chunk by chunk through a [`LimitedBody`]; the whole
///   call — request, head and body — is raced against
///   [`ClientLimits::timeout`] ([`OrpcCallError::Timeout`]).
///   [`ClientLimits::connect_timeout`] does not apply: `fetch` does not
///   report connecting apart from the rest.
/// * Every way the call ends early — timeout, cancellation
///   ([`CallOptions::cancellation`] → [`OrpcCallError::Cancelled`]), a
///   body over the cap, the future dropped — aborts the request through
///   its `AbortController`.
/// * A rejected `fetch` (network error, CORS refusal, connection refused)
///   is [`OrpcCallError::Transport`]: the browser does not tell a refused
///   connection from a lost response, so the call counts as possibly
///   executed (agent: `EXECUTION_FAILED`, retry `no`).
/// * `cache: "no-store"`; credentials per [`FetchCredentials`] (default
///   same-origin).
#[derive(Clone, Debug)]
pub struct FetchOrpcClient {
    base: String,
    headers: Headers,
    limits: ClientLimits,
    credentials: FetchCredentials,
}

impl FetchOrpcClient {
    /// A client for the RPC handler at `base` (e.g. `"/rpc"` or
    /// `"https://api.example/rpc"`) with the default [`ClientLimits`].
    pub fn new(base: impl Into<String>) -> Self {
        Self::with_limits(base, ClientLimits::default())
    }

    /// A client for the RPC handler at `base` with other limits.
    pub fn with_limits(base: impl Into<String>, limits: ClientLimits) -> Self {
        Self {
            base: base.into(),
            headers: Vec::new(),
            limits,
            credentials: FetchCredentials::default(),
        }
    }

    /// Adds a header sent with every call (e.g. `authorization`).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets whether cookies travel with the calls.
    #[must_use]
    pub fn with_credentials(mut self, credentials: FetchCredentials) -> Self {
        self.credentials = credentials;
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

    fn request(
        &self,
        path: &str,
        input: Option<&Value>,
        options: &CallOptions,
        controller: &AbortController,
    ) -> Result<Request, OrpcCallError> {
        let get_url = match options.method {
            CallMethod::Get => {
                let url = rpc_get_url(&self.base, path, input)?;
                (url.len() <= MAX_GET_URL_LENGTH).then_some(url)
            }
            CallMethod::Post => None,
        };
        let invalid = |what: &str, e: JsValue| OrpcCallError::InvalidRequest {
            message: format!("{what}: {}", js_error_text(&e)),
        };
        let headers = JsHeaders::new().map_err(|e| invalid("headers", e))?;
        let init = RequestInit::new();
        init.set_redirect(RequestRedirect::Manual);
        init.set_cache(RequestCache::NoStore);
        init.set_credentials(self.credentials.mode());
        init.set_signal(Some(&controller.signal()));
        let url = match get_url {
            Some(url) => {
                init.set_method("GET");
                url
            }
            None => {
                init.set_method("POST");
                headers
                    .set("content-type", "application/json")
                    .map_err(|e| invalid("header `content-type`", e))?;
                init.set_body(&JsValue::from_str(&encode_request_body(input)));
                rpc_url(&self.base, path)?
            }
        };
        let overridden = |name: &str| {
            options
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let client_headers = self.headers.iter().filter(|(n, _)| !overridden(n));
        for (name, value) in client_headers.chain(options.headers.iter()) {
            headers
                .set(name, value)
                .map_err(|e| invalid(&format!("header `{name}`"), e))?;
        }
        init.set_headers(&headers);
        Request::new_with_str_and_init(&url, &init).map_err(|e| invalid("request", e))
    }

    async fn send(
        &self,
        path: &str,
        input: Option<Value>,
        options: CallOptions,
    ) -> Result<Value, OrpcCallError> {
        if options
            .cancellation
            .as_ref()
            .is_some_and(|c| c.is_cancelled())
        {
            return Err(OrpcCallError::Cancelled);
        }
        let controller = AbortController::new().map_err(|e| OrpcCallError::InvalidRequest {
            message: format!("AbortController: {}", js_error_text(&e)),
        })?;
        // Aborts the request however this call ends (answer, timeout,
        // cancellation, cap, the future dropped); a no-op once the body was
        // read completely.
        let _abort = AbortOnDrop(controller.clone());
        let request = self.request(path, input.as_ref(), &options, &controller)?;
        let exchange = std::pin::pin!(exchange(request, self.limits));
        let deadline = std::pin::pin!(sleep(self.limits.timeout));
        let bounded = async {
            match select(exchange, deadline).await {
                Either::Left((result, _)) => result,
                Either::Right(((), _)) => Err(OrpcCallError::Timeout {
                    timeout: self.limits.timeout,
                }),
            }
        };
        match options.cancellation {
            None => bounded.await,
            Some(cancellation) => {
                let bounded = std::pin::pin!(bounded);
                let cancelled = std::pin::pin!(cancellation.cancelled());
                match select(bounded, cancelled).await {
                    Either::Left((result, _)) => result,
                    Either::Right(((), _)) => Err(OrpcCallError::Cancelled),
                }
            }
        }
    }
}

impl OrpcClient for FetchOrpcClient {
    fn call<'a>(
        &'a self,
        path: &'a str,
        input: Option<Value>,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<Value, OrpcCallError>> {
        Box::pin(self.send(path, input, options))
    }
}

/// Aborts its request when dropped (a no-op once the body was read).
pub(crate) struct AbortOnDrop(pub(crate) AbortController);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn transport(error: &JsValue) -> OrpcCallError {
    OrpcCallError::Transport {
        message: js_error_text(error),
    }
}

/// `fetch(request)` on the global object (window or worker); `None` when
/// the global object is neither.
pub(crate) fn global_fetch(request: &Request) -> Option<js_sys::Promise> {
    let global = js_sys::global();
    if let Some(window) = global.dyn_ref::<web_sys::Window>() {
        return Some(window.fetch_with_request(request));
    }
    global
        .dyn_ref::<web_sys::WorkerGlobalScope>()
        .map(|worker| worker.fetch_with_request(request))
}

/// Sends `request` and reads the answer within `limits`' size cap.
async fn exchange(request: Request, limits: ClientLimits) -> Result<Value, OrpcCallError> {
    let fetched = global_fetch(&request).ok_or_else(|| OrpcCallError::InvalidRequest {
        message: "the global object is neither a window nor a worker: no fetch".into(),
    })?;
    let answer = JsFuture::from(fetched).await.map_err(|e| transport(&e))?;
    let response: Response = answer.dyn_into().map_err(|e| transport(&e))?;
    if response.type_() == ResponseType::Opaqueredirect {
        return Err(OrpcCallError::Redirect {
            status: 0,
            location: None,
        });
    }
    let status = response.status();
    let headers = response.headers();
    let header = |name: &str| headers.get(name).ok().flatten();
    if (300..400).contains(&status) {
        return Err(OrpcCallError::Redirect {
            status,
            location: header("location").map(|l| excerpt(l.as_bytes())),
        });
    }
    if response.redirected() {
        return Err(OrpcCallError::Redirect {
            status,
            location: Some(excerpt(response.url().as_bytes())),
        });
    }
    let content_type = header("content-type");
    let declared = header("content-length").and_then(|l| l.trim().parse::<u64>().ok());
    let mut body = LimitedBody::new(limits.max_response_bytes, status, declared)?;
    if let Some(stream) = response.body() {
        let reader: ReadableStreamDefaultReader =
            stream.get_reader().dyn_into().map_err(|e| transport(&e))?;
        let mut chunk = Vec::new();
        loop {
            let step = JsFuture::from(reader.read())
                .await
                .map_err(|e| transport(&e))?;
            let done = Reflect::get(&step, &JsValue::from_str("done"))
                .map_err(|e| transport(&e))?
                .is_truthy();
            if done {
                break;
            }
            let value =
                Reflect::get(&step, &JsValue::from_str("value")).map_err(|e| transport(&e))?;
            let bytes: Uint8Array = value.dyn_into().map_err(|e| transport(&e))?;
            let length = bytes.length() as usize;
            if body.len().saturating_add(length) > limits.max_response_bytes {
                // Refused before the chunk is copied out of JavaScript; the
                // request is aborted when `send` returns.
                return Err(OrpcCallError::ResponseTooLarge {
                    status,
                    limit: limits.max_response_bytes,
                    declared_length: declared,
                });
            }
            chunk.resize(length, 0);
            bytes.copy_to(&mut chunk);
            body.push(&chunk)?;
        }
    }
    decode_response(status, content_type.as_deref(), &body.into_bytes())
}
