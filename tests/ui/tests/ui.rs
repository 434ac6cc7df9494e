//! The compile-time guarantees of `docs/codegen.md`, as trybuild cases. Each compile-fail
//! case has a committed `.stderr` whose span points at the offending token.
//!
//! This package (`tests/ui`) exists only so that trybuild, which builds
//! the package's dev-dependencies for its cases, builds the facade and
//! serde — not the root package's heavy test dependencies (tokio, reqwest,
//! tungstenite, criterion).
//!
//! Fixture paths: under trybuild, `CARGO_MANIFEST_DIR` is trybuild's
//! generated project `<target dir>/tests/trybuild/agent-surface-ui-tests/`,
//! wherever the target directory is (`CARGO_TARGET_DIR`, a shared target
//! directory, …). So the test first links `tests/ui/fixtures/` as
//! `<target dir>/tests/trybuild/fixtures` (copies it where there are no
//! symbolic links), and the cases name their manifests `../fixtures/…`. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p agent-surface-ui-tests` and read every
//! diff.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's target directory, as cargo (and trybuild) see it.
fn target_directory() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run `cargo metadata`");
    assert!(
        output.status.success(),
        "`cargo metadata` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("`cargo metadata` prints JSON");
    metadata["target_directory"]
        .as_str()
        .expect("`cargo metadata` names the target directory")
        .into()
}

/// Makes `tests/ui/fixtures/` visible next to trybuild's generated project,
/// as `<target dir>/tests/trybuild/fixtures`: a symbolic link on Unix (so
/// `manifest!` reports a missing file at its real place in the workspace,
/// which trybuild normalizes to `$DIR`), a copy elsewhere.
fn install_fixtures() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let trybuild = target_directory().join("tests").join("trybuild");
    std::fs::create_dir_all(&trybuild).expect("create trybuild's directory");
    let destination = trybuild.join("fixtures");
    match std::fs::symlink_metadata(&destination) {
        Ok(meta) if meta.is_dir() => {
            std::fs::remove_dir_all(&destination).expect("remove old fixtures")
        }
        Ok(_) => std::fs::remove_file(&destination).expect("remove old fixtures link"),
        Err(_) => {}
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(&source, &destination).expect("link the fixtures");
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(&destination).expect("create the fixture directory");
        for entry in std::fs::read_dir(&source).expect("read tests/ui/fixtures") {
            let entry = entry.expect("read a fixture entry");
            std::fs::copy(entry.path(), destination.join(entry.file_name()))
                .expect("copy a fixture");
        }
    }
}

#[test]
fn compile_time_guarantees_hold_at_the_users_tokens() {
    // trybuild rewrites the `.stderr` files it compares when
    // `TRYBUILD=overwrite`; a CI run that did so would pass on any change.
    let ci = std::env::var("CI").is_ok_and(|ci| ci != "false" && ci != "0");
    assert!(
        !(ci && std::env::var_os("TRYBUILD").is_some_and(|t| t == "overwrite")),
        "TRYBUILD=overwrite is set under CI: CI compares the .stderr files and never rewrites them"
    );
    install_fixtures();
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}
