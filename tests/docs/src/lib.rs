//! The Rust examples of the README and of `docs/`, compiled and run by
//! `cargo test --doc -p agent-surface-docs` (part of `cargo test
//! --workspace`). This crate depends on `agent-surface` alone (feature
//! `http`), so an example that needs `serde` or another crate of its own
//! fails here as it would in an application. The examples' `manifest!`
//! reads `agent.manifest.json`, a link to `docs/example.manifest.json`.
//!
//! A block a reader copies is `rust` (compiled and run) or `rust,compile_fail`
//! (an example of a compile error: the doctest fails if it compiles).
//! Hidden `# ` lines hold the set-up a fragment needs.
#![forbid(unsafe_code)]
#![cfg_attr(doctest, doc = include_str!("../../../README.md"))]

/// `docs/codegen.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/codegen.md")]
pub struct Codegen;

/// `docs/drift.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/drift.md")]
pub struct Drift;

/// `docs/bindings.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/bindings.md")]
pub struct Bindings;

/// `docs/testing.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/testing.md")]
pub struct Testing;

/// `docs/pipeline.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/pipeline.md")]
pub struct Pipeline;

/// `docs/bridges.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/bridges.md")]
pub struct Bridges;
