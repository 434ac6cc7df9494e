//! End to end: a library crate whose `manifest!` input carries code fences
//! in every text position (`tests/fixtures/codegen/adversarial/`) passes
//! `cargo test --doc` without running any of them, and `cargo doc` renders
//! it without a warning (no stray HTML, no broken links).
//!
//! The crate is built in trybuild's target directory
//! (`<target>/tests/trybuild`) with exactly trybuild's settings (its
//! `rustflags`, `--target <host>`, no incremental, offline, the workspace's
//! `Cargo.lock`), so it reuses the facade and dependencies that the
//! trybuild cases of `tests/ui.rs` build: only the small crate itself and
//! its doc pass are extra. Whichever of the two runs first builds them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn target_directory() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run `cargo metadata`");
    assert!(output.status.success());
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    metadata["target_directory"].as_str().unwrap().into()
}

/// The host target tuple (`rustc -vV`), which trybuild passes as `--target`.
fn host() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("run `rustc -vV`");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("`rustc -vV` names the host")
        .to_string()
}

/// Runs cargo as trybuild runs it (same flags, so the same artifacts).
fn cargo(dir: &Path, target: &Path, args: &[&str]) -> (bool, String) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let host = host();
    // trybuild 1's flags (`rustflags.rs`, `cargo.rs`).
    let rustflags =
        r#"["--cfg", "trybuild", "--verbose", "-A", "dead_code", "--diagnostic-width=140"]"#;
    let output = Command::new(cargo)
        .args(args)
        .args(["--target", &host, "--offline"])
        .arg(format!("--config=build.rustflags={rustflags}"))
        .arg(format!("--config=target.{host}.rustflags={rustflags}"))
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTDOCFLAGS")
        .output()
        .expect("run cargo");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn manifest_text_cannot_open_code_block_in_docs_cargo_test_doc_runs_nothing() {
    let root = target_directory().join("tests").join("doc-payload");
    let krate = root.join("crate");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    let facade = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let facade = std::fs::canonicalize(facade).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"doc-payload\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\nagent-surface = {{ path = {:?} }}\n\n[workspace]\n",
            facade.display().to_string()
        ),
    )
    .unwrap();
    std::fs::copy(facade.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let fixtures = facade.join("tests/fixtures/codegen/adversarial");
    for name in [
        "doc_injection.manifest.json",
        "colliding_names.manifest.json",
    ] {
        std::fs::copy(fixtures.join(name), krate.join(name)).unwrap();
    }
    // The report's manifest, verbatim.
    std::fs::write(
        krate.join("m.json"),
        r#"{"tools":{"a.b":{"inputSchema":{"type":"object","properties":{"x\n```\nfn main(){std::fs::write(\"PWNED\",\"\").unwrap();}\n```\n":{}}},"effect":"server-query"},"a.c":{"inputSchema":{},"effect":"server-query","capabilityId":"c\n```\nfn main(){std::fs::write(\"PWNED\",\"\").unwrap();}\n```\n"}}}"#,
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        "//! Generated documentation of hostile manifests.\n\
         pub mod api { agent_surface::manifest!(\"m.json\"); }\n\
         pub mod docs { agent_surface::manifest!(\"doc_injection.manifest.json\", validation = runtime); }\n\
         pub mod names { agent_surface::manifest!(\"colliding_names.manifest.json\"); }\n",
    )
    .unwrap();
    let pwned = krate.join("PWNED");
    let _ = std::fs::remove_file(&pwned);
    let target = target_directory().join("tests").join("trybuild");

    let (ok, out) = cargo(&krate, &target, &["test", "--doc"]);
    assert!(ok, "cargo test --doc failed:\n{out}");
    assert!(!pwned.exists(), "a doctest from the manifest ran:\n{out}");
    assert!(
        out.contains("running 0 tests"),
        "doctests were collected:\n{out}"
    );

    let (ok, out) = cargo(&krate, &target, &["doc", "--no-deps"]);
    assert!(ok, "cargo doc failed:\n{out}");
    assert!(!out.contains("warning"), "rustdoc warned:\n{out}");
}
