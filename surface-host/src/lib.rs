//! What only a server of agent-surface runs (native targets, tokio): the
//! pieces of an agent host that the page's runtime (`surface-runtime`,
//! which builds for wasm32) never needs.
//!
//! One concept per module, each behind the feature that brings its
//! dependencies:
//!
//! * [`mcp`] (feature `mcp`) — the agent host's MCP server: an
//!   [`AgentHost`](surface_runtime::host::AgentHost)'s runs as MCP tools
//!   over rmcp's streamable HTTP transport (docs/agents.md, "The MCP
//!   server"); with feature `store` also the MCP server of one replica of
//!   a shared `surface-store` (`McpServer::for_replica`; docs/host.md,
//!   "Replicas").
//! * `host` (features `mcp` and `store`) — the agent host as one
//!   component: `Host::builder(database)` opens the store (memory, SQLite,
//!   PostgreSQL), the durable host, its replica and the MCP server, and
//!   `InProcessTab` connects a page's session in the same process
//!   (docs/host.md, "The Host").
//! * `web` (feature `axum`) — the safe HTTP surface of a host serving an
//!   application page: the `Host`/`Origin` guard, page session cookies,
//!   the backend `/rpc` proxy (docs/host.md, "Threat model").
//! * [`server`] — serving a host's routes with connection limits
//!   (header-read timeout, header size) that `axum::serve` lacks.
//!
//! The repository's `docs/design.md` maps every module to the rules it
//! holds; `docs/host.md` is the threat model of the host's HTTP surfaces.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "mcp")]
pub mod host;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod server;
#[cfg(feature = "axum")]
pub mod web;
