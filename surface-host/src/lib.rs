//! What only a server of agent-surface runs (native targets, tokio): the
//! pieces of an agent host that the page's runtime (`surface-runtime`,
//! which builds for wasm32) never needs.
//!
//! One concept per module, each behind the feature that brings its
//! dependencies; a module uses the ones listed after it, never one before:
//!
//! * `host` (feature `mcp`) — `host::Host`, the agent host as one
//!   component: `Host::builder(database)` opens the store (memory, SQLite,
//!   PostgreSQL), the durable host, its replica and the MCP server, and
//!   hands out the services a deployment mounts — the MCP endpoint, the
//!   page socket, the approvals service — with `InProcessTab` for a page
//!   in the same process (docs/host.md, "The Host").
//! * [`mcp`] (feature `mcp`) — the Host's MCP server: a run's tools over
//!   rmcp's streamable HTTP transport, revisions 2026-07-28 and 2025-11-25
//!   on one endpoint, held calls as MCP tasks (docs/agents.md, "The MCP
//!   server").
//! * `replica` (feature `store`) — several host processes on one store:
//!   each call runs on the replica holding its tab (docs/host.md,
//!   "Replicas").
//! * `durable` (feature `store`) — the in-memory `AgentHost` with every
//!   state change written to the host store first: restart recovery,
//!   approvals, reconciliation (docs/host.md, "The durable store").
//! * `web` (feature `axum`) — the safe HTTP surface of a host serving an
//!   application page: the `Host`/`Origin` guard, page session cookies,
//!   the backend `/rpc` proxy, escaped HTML (docs/host.md, "Threat model").
//! * [`server`] — serving a host's routes with connection limits
//!   (header-read timeout, header size) that `axum::serve` lacks.
//!
//! The repository's `docs/design.md` maps every module to the rules it
//! holds; `docs/host.md` is the threat model of the host's HTTP surfaces.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "store")]
pub mod durable;
#[cfg(feature = "mcp")]
pub mod host;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "store")]
pub mod replica;
#[cfg(feature = "store")]
pub mod retention;
pub mod server;
#[cfg(feature = "axum")]
pub mod web;
