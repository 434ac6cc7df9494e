//! The devices console page (Leptos 0.8, client-side rendering), built for
//! `wasm32-unknown-unknown` and served by `examples/devices-host`
//! (`cargo run -p devices-host` builds it, starts the oRPC peer and the
//! host, and prints the URL). See `docs/browser.md`.
//!
//! * The devices table is loaded from the real oRPC backend over `fetch`
//!   (`agent_surface::browser::FetchOrpcClient`, same origin: the host
//!   proxies `/rpc`).
//! * Its selection and filter are UI state, bound into `devices.disable`
//!   and `devices.purge` (`devices_api::DisableSelection`,
//!   `PurgeSelection`: locked, the agent never sees the ids).
//! * The agent surface is `agent-surface-leptos`: the table registers its
//!   view capabilities and bindings while it is mounted, the details
//!   panel (one selected device) binds `devices.rename` while it is shown,
//!   and the surface follows the selection with no explicit notify; the
//!   session goes to the agent host over a WebSocket.
//! * The activity panel shows each agent call and its result in words;
//!   the confirmation dialog shows the effective input and approves or
//!   rejects through the session — the model can do neither.
//! * When the host has an AG-UI agent (`devices-host --ag-ui-agent`), the
//!   "Agent chat" panel talks to it (`agent_surface_leptos::use_ag_ui_agent`
//!   over `FetchAgUiTransport`): its tool calls run in this page, through
//!   the same pipeline and confirmation dialog.
#![forbid(unsafe_code)]

#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod backend;
#[cfg(target_arch = "wasm32")]
mod chat;
#[cfg(target_arch = "wasm32")]
mod table;
#[cfg(target_arch = "wasm32")]
mod words;

#[cfg(target_arch = "wasm32")]
fn main() {
    leptos::mount::mount_to_body(app::App);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "devices-web is a wasm32 page: `cargo run -p devices-host` builds it \
         (cargo build --target wasm32-unknown-unknown -p devices-web, then wasm-bindgen) and serves it"
    );
    std::process::exit(2);
}
