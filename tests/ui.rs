//! Compile-time guarantees of SPEC §4, as trybuild cases. Each compile-fail
//! case has a committed `.stderr` whose span points at the offending token.
//!
//! Fixture paths: under trybuild, `CARGO_MANIFEST_DIR` is trybuild's
//! generated project `target/tests/trybuild/agent-surface/`, so the cases
//! name their manifests `../../../../tests/ui/fixtures/…` (four levels up is
//! this crate's root with the default target directory). Regenerate the
//! `.stderr` files with `TRYBUILD=overwrite cargo test --test ui` and read
//! every diff.

#[test]
fn s4_compile_time_guarantees() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
