//! [`FetchAgUiTransport`]: an AG-UI transport over the browser's `fetch`
//! (features `ag-ui` and `browser`, wasm32).

use std::time::Duration;

use futures_util::future::{select, Either};
use js_sys::futures::JsFuture;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    AbortController, Headers as JsHeaders, ReadableStreamDefaultReader, Request, RequestCache,
    RequestInit, RequestRedirect, Response, ResponseType,
};

use super::transport::{AgUiResponse, AgUiTransport};
use super::{foreign_text, AgUiError, AgUiLimits};
use crate::browser::{global_fetch, js_error_text, sleep, AbortOnDrop, FetchCredentials};
use crate::sync::BoxFuture;

/// An [`AgUiTransport`] over `fetch` (window or worker): `POST` with
/// `accept: text/event-stream`, `redirect: "manual"` (a redirect is an
/// error), `cache: "no-store"`, credentials per [`FetchCredentials`]
/// (default same-origin; a cross-origin agent must answer CORS). The
/// whole run is raced against [`AgUiLimits::run_timeout`] and every read
/// of the body against [`AgUiLimits::idle_timeout`]; however the run ends
/// — its end, a timeout, a limit, cancellation, the body dropped — the
/// request is aborted through its `AbortController`.
#[derive(Clone, Debug)]
pub struct FetchAgUiTransport {
    url: String,
    headers: Vec<(String, String)>,
    credentials: FetchCredentials,
}

impl FetchAgUiTransport {
    /// A transport to the agent endpoint `url` (absolute, or relative to
    /// the page: `"/agent"`).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
            credentials: FetchCredentials::default(),
        }
    }

    /// Adds a header sent with every run.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets whether cookies travel with the runs.
    #[must_use]
    pub fn with_credentials(mut self, credentials: FetchCredentials) -> Self {
        self.credentials = credentials;
        self
    }

    fn error(&self, message: String) -> AgUiError {
        AgUiError::Transport {
            url: self.url.clone(),
            message: foreign_text(&message),
        }
    }

    fn request(&self, body: &str, controller: &AbortController) -> Result<Request, AgUiError> {
        let fail = |what: &str, e: JsValue| self.error(format!("{what}: {}", js_error_text(&e)));
        let headers = JsHeaders::new().map_err(|e| fail("headers", e))?;
        let fixed = [
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
        ];
        let extra = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        for (name, value) in fixed.into_iter().chain(extra) {
            headers
                .set(name, value)
                .map_err(|e| fail(&format!("header `{name}`"), e))?;
        }
        let init = RequestInit::new();
        init.set_method("POST");
        init.set_redirect(RequestRedirect::Manual);
        init.set_cache(RequestCache::NoStore);
        init.set_credentials(self.credentials.mode());
        init.set_signal(Some(&controller.signal()));
        init.set_headers(&headers);
        init.set_body(&JsValue::from_str(body));
        Request::new_with_str_and_init(&self.url, &init).map_err(|e| fail("request", e))
    }
}

/// The body's reader and what bounds it.
struct Reader {
    reader: ReadableStreamDefaultReader,
    url: String,
    limits: AgUiLimits,
    deadline: f64,
    _abort: AbortOnDrop,
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

impl Reader {
    /// The next chunk, `None` at the end.
    async fn next(&self) -> Option<Result<Vec<u8>, AgUiError>> {
        let left = (self.deadline - now_ms()).max(0.0);
        let (wait, what) = if left < self.limits.idle_timeout.as_millis() as f64 {
            (Duration::from_millis(left as u64), "run")
        } else {
            (self.limits.idle_timeout, "idle")
        };
        let read = std::pin::pin!(JsFuture::from(self.reader.read()));
        let timer = std::pin::pin!(sleep(wait));
        let step = match select(read, timer).await {
            Either::Left((step, _)) => step,
            Either::Right(((), _)) => {
                let timeout = match what {
                    "run" => self.limits.run_timeout,
                    _ => self.limits.idle_timeout,
                };
                return Some(Err(AgUiError::Timeout { what, timeout }));
            }
        };
        let transport = |e: JsValue| AgUiError::Transport {
            url: self.url.clone(),
            message: foreign_text(&js_error_text(&e)),
        };
        let step = match step {
            Ok(step) => step,
            Err(e) => return Some(Err(transport(e))),
        };
        if Reflect::get(&step, &"done".into()).is_ok_and(|d| d.is_truthy()) {
            return None;
        }
        let value = Reflect::get(&step, &"value".into()).map_err(transport);
        let bytes = match value.and_then(|v| v.dyn_into::<Uint8Array>().map_err(transport)) {
            Ok(bytes) => bytes,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(bytes.to_vec()))
    }
}

impl AgUiTransport for FetchAgUiTransport {
    fn url(&self) -> &str {
        &self.url
    }

    fn post(
        &self,
        body: String,
        limits: AgUiLimits,
    ) -> BoxFuture<'static, Result<AgUiResponse, AgUiError>> {
        let this = self.clone();
        Box::pin(async move {
            let controller = AbortController::new()
                .map_err(|e| this.error(format!("AbortController: {}", js_error_text(&e))))?;
            let abort = AbortOnDrop(controller.clone());
            let request = this.request(&body, &controller)?;
            let deadline = now_ms() + limits.run_timeout.as_millis() as f64;
            let Some(promise) = global_fetch(&request) else {
                return Err(this.error("the global object is neither a window nor a worker".into()));
            };
            let answer = std::pin::pin!(JsFuture::from(promise));
            let timer = std::pin::pin!(sleep(limits.run_timeout));
            let answer = match select(answer, timer).await {
                Either::Left((answer, _)) => answer,
                Either::Right(((), _)) => {
                    return Err(AgUiError::Timeout {
                        what: "run",
                        timeout: limits.run_timeout,
                    })
                }
            };
            let response: Response = answer
                .and_then(|a| a.dyn_into())
                .map_err(|e| this.error(js_error_text(&e)))?;
            if response.type_() == ResponseType::Opaqueredirect || response.redirected() {
                return Err(this.error("the agent answered with a redirect".into()));
            }
            let status = response.status();
            let content_type = response.headers().get("content-type").ok().flatten();
            let reader = match response.body() {
                Some(stream) => Some(
                    stream
                        .get_reader()
                        .dyn_into::<ReadableStreamDefaultReader>()
                        .map_err(|e| this.error(js_error_text(&e)))?,
                ),
                None => None,
            };
            let state = reader.map(|reader| Reader {
                reader,
                url: this.url.clone(),
                limits,
                deadline,
                _abort: abort,
            });
            let body = futures_util::stream::unfold(state, |state| async move {
                let reader = state?;
                match reader.next().await {
                    Some(Ok(chunk)) => Some((Ok(chunk), Some(reader))),
                    Some(Err(e)) => Some((Err(e), None)),
                    None => None,
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

/// Ends a turn when an `AbortSignal` aborts ([`cancellation_from_abort_signal`]);
/// dropping it stops listening.
pub struct AbortSignalCancellation {
    signal: web_sys::AbortSignal,
    listener: wasm_bindgen::closure::Closure<dyn FnMut()>,
}

impl std::fmt::Debug for AbortSignalCancellation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AbortSignalCancellation")
            .field("aborted", &self.signal.aborted())
            .finish()
    }
}

impl Drop for AbortSignalCancellation {
    fn drop(&mut self) {
        let _ = self
            .signal
            .remove_event_listener_with_callback("abort", self.listener.as_ref().unchecked_ref());
    }
}

/// A [`crate::Cancellation`] that is cancelled when `signal` aborts — at
/// once if it already has — for [`super::AgUiAgent::send_with`] or
/// [`super::AgUiAgent::run`]: the browser's way of cancelling (a stop
/// button's `AbortController`, a route change's signal). Keep the returned
/// guard while the signal should count.
pub fn cancellation_from_abort_signal(
    signal: &web_sys::AbortSignal,
) -> (crate::Cancellation, AbortSignalCancellation) {
    let cancellation = crate::Cancellation::new();
    if signal.aborted() {
        cancellation.cancel();
    }
    let fired = cancellation.clone();
    let listener = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || fired.cancel());
    let _ = signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
    let guard = AbortSignalCancellation {
        signal: signal.clone(),
        listener,
    };
    (cancellation, guard)
}
