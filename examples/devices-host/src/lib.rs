//! The devices console's agent host (`docs/browser.md`): the library's
//! `Host` with its page service (`Host::pages`: the Leptos page of
//! `examples/devices-web`, built by [`page::build`], its session cookie,
//! socket, runs, MCP token and the `/rpc` proxy to the oRPC backend) and
//! approvals service (`/approver`), accepting only announcements of the
//! build it knows (`devices_api::known_build()`). The application's own
//! route is a scripted agent turn, `POST /app/turn`: discover the tab's
//! tools, call `devices.disable` (or `devices.purge`) with no ids — the
//! page binds them from its selection — wait while the user confirms in
//! the page, report the outcome. With [`HostConfig::ag_ui`] it also serves
//! the page's chat panel an AG-UI agent at `/app/agent` ([`agent`]).
//!
//! `cargo run -p devices-host` builds the page, starts the oRPC peer and
//! the host, and prints the URL.
#![forbid(unsafe_code)]

pub mod agent;
pub mod page;
pub mod peer;
mod server;

pub use server::{
    serve, Database, HostConfig, PageRecord, Running, COOKIE, INDEX_HTML, MAX_KEPT_REPORTS,
    TURN_WAIT,
};

/// The credential the oRPC peer accepts for the requester.
pub const PEER_USER_TOKEN: &str = "Bearer user-token";

/// The credential the oRPC peer accepts for the approver
/// (the decision endpoint `POST /approvals/decide` only).
pub const PEER_APPROVER_TOKEN: &str = "Bearer approver-token";
