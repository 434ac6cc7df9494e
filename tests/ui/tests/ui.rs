//! Compile-time guarantees of SPEC §4, as trybuild cases. Each compile-fail
//! case has a committed `.stderr` whose span points at the offending token.
//!
//! This package (`tests/ui`) exists only so that trybuild, which builds
//! the package's dev-dependencies for its cases, builds the facade and
//! serde — not the root package's heavy test dependencies (tokio, reqwest,
//! tungstenite, criterion).
//!
//! Fixture paths: under trybuild, `CARGO_MANIFEST_DIR` is trybuild's
//! generated project `target/tests/trybuild/agent-surface-ui-tests/`, so the
//! cases name their manifests `../../../../tests/ui/fixtures/…` (four levels
//! up is the workspace root with the default target directory). Regenerate
//! the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p agent-surface-ui-tests` and read every
//! diff.

#[test]
fn s4_compile_time_guarantees() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}
