//! Browser transports (cargo feature `browser`, `wasm32-unknown-unknown`
//! only; `docs/browser.md`): what a page needs to put a registry in front
//! of an agent without writing its own glue.
//!
//! * [`FetchOrpcClient`] — an [`OrpcClient`](crate::bridge::OrpcClient)
//!   over the browser's `fetch`, speaking the same oRPC wire codec as
//!   `bridge::HttpOrpcClient` and bounded by the same
//!   [`ClientLimits`](crate::bridge::ClientLimits): redirects never
//!   followed (`redirect: "manual"`), the body read chunk by chunk through
//!   [`LimitedBody`](crate::bridge::LimitedBody), the total timeout raced
//!   against the call, cancellation through an `AbortController`.
//! * [`SessionSocket`] — runs a
//!   [`BrowserSurfaceSession`](crate::host::BrowserSurfaceSession) over a
//!   browser `WebSocket`: the announcement on every connect and after every
//!   registry change, every incoming call answered, pending calls aborted
//!   when the socket drops, reconnects under a fresh connection id with a
//!   bounded exponential [`Backoff`].
//! * [`same_origin_socket_url`], [`new_tab_id`] — the session socket's
//!   URL on the page's origin and a fresh tab identity.
//! * [`BrowserTimer`] / [`sleep`] — a registry [`Timer`](crate::Timer) over
//!   `setTimeout` (the timeout is cleared when the future is dropped).
//!
//! * `agui::FetchAgUiTransport` (with feature `ag-ui`) — an AG-UI run
//!   over `fetch`, its event stream read chunk by chunk, built on this
//!   module's pieces.
//!
//! The WebMCP bridge (the page's tools for the browser's own agent) is
//! [`crate::webmcp`], under the same feature.
//!
//! On other targets the feature adds nothing, so `--all-features` builds of
//! a workspace keep compiling natively.
//!
//! Only `web-sys` is added (`js-sys`, `wasm-bindgen` and `getrandom` are
//! already the runtime's wasm32 dependencies; futures are awaited with
//! `js_sys::futures`).

mod fetch;
mod location;
mod socket;
mod timer;

pub(crate) use fetch::{global_fetch, AbortOnDrop};
pub use fetch::{FetchCredentials, FetchOrpcClient};
pub use location::{new_tab_id, same_origin_socket_url};
pub use socket::{
    Backoff, SessionSocket, SessionSocketOptions, SocketError, SocketEvent, StopReason,
    DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MAX, DEFAULT_MAX_RECONNECT_ATTEMPTS,
};
pub use timer::{sleep, BrowserTimer, Sleep, MAX_TIMER_DELAY};

use wasm_bindgen::{JsCast, JsValue};

/// A readable text for a JavaScript exception or rejection value (for
/// audit and logs).
pub(crate) fn js_error_text(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        let name = String::from(error.name());
        let message = String::from(error.message());
        if message.is_empty() {
            name
        } else {
            format!("{name}: {message}")
        }
    } else if let Some(text) = value.as_string() {
        text
    } else {
        "unknown JavaScript error".to_string()
    }
}
