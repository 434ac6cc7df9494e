//! The devices console's agent host (`docs/browser.md`): an axum server
//! that
//!
//! * serves the Leptos page (`examples/devices-web`, built by
//!   [`page::build`]) and issues each page load a session cookie
//!   (`HttpOnly`, `SameSite=Strict`);
//! * proxies `/rpc/*` to the oRPC backend for pages holding a session
//!   cookie, adding the backend credential (same origin: the page needs no
//!   CORS and never holds the backend token);
//! * accepts the page's session WebSocket (`/agent/ws`) only with that
//!   cookie and from the same origin, and only announcements of the build
//!   it knows — `devices_api::known_build()`, the authority generated from
//!   the shared API crate;
//! * runs a scripted agent turn on `POST /app/turn`: discover the tab's
//!   tools, call `devices.disable` (or `devices.purge`) with no ids — the
//!   page binds them from its selection — wait while the user confirms in
//!   the page, report the outcome.
//!
//! `cargo run -p devices-host` builds the page, starts the oRPC peer and
//! the host, and prints the URL.
#![forbid(unsafe_code)]

pub mod page;
pub mod peer;
mod server;

pub use server::{serve, Database, HostConfig, PageRecord, Running, COOKIE, INDEX_HTML, TURN_WAIT};

/// The credential the oRPC peer accepts for the requester.
pub const PEER_USER_TOKEN: &str = "Bearer user-token";

/// The credential the oRPC peer accepts for the approver
/// (the decision endpoint `POST /approvals/decide` only).
pub const PEER_APPROVER_TOKEN: &str = "Bearer approver-token";
