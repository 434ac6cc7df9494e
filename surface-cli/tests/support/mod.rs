//! Running the real `agent-surface` binary over copies of the devices
//! example's committed contract.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("surface-cli lives in the repository root")
        .to_path_buf()
}

/// The devices example's committed contract.
pub fn devices_contract() -> Value {
    let path = repo_root().join("examples/devices/surface.contract.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("the committed contract is JSON")
}

/// A fresh, empty directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join("agent-surface-cli-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// Writes `value` as JSON to `dir/name`; its path.
pub fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).expect("JSON"))
        .expect("write the contract");
    path.to_str().expect("a UTF-8 path").to_string()
}

/// Runs `agent-surface args…` in `dir`.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agent-surface"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run agent-surface")
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 output")
}

/// `check --base base --current current extra…` in a scratch directory:
/// the exit code, standard output and standard error.
pub fn check(name: &str, base: &Value, current: &Value, extra: &[&str]) -> (i32, String, String) {
    let dir = scratch(name);
    let base = write(&dir, "base.json", base);
    let current = write(&dir, "current.json", current);
    let mut args = vec!["check", "--base", &base, "--current", &current];
    args.extend_from_slice(extra);
    let output = run(&dir, &args);
    (
        output.status.code().expect("an exit code"),
        stdout(&output),
        stderr(&output),
    )
}

/// The `(class, key)` pairs of `check --format json`, and its exit code.
pub fn classes(name: &str, base: &Value, current: &Value) -> (i32, Vec<(String, String)>) {
    let (code, out, err) = check(name, base, current, &["--format", "json"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    let pairs = report["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["class"].as_str().expect("class").to_string(),
                c["key"].as_str().expect("key").to_string(),
            )
        })
        .collect();
    (code, pairs)
}

/// The entry of `section` (`procedures`, `views`) with id `id`.
pub fn entry<'a>(contract: &'a mut Value, section: &str, id: &str) -> &'a mut Value {
    contract[section]
        .as_array_mut()
        .expect("a section")
        .iter_mut()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {section}"))
}

/// The manifest procedure with id `id`.
pub fn manifest_entry<'a>(contract: &'a mut Value, id: &str) -> &'a mut Value {
    contract["manifest"]["procedures"]
        .as_array_mut()
        .expect("manifest procedures")
        .iter_mut()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no manifest procedure {id}"))
}

/// Removes the entry of `section` with id `id`.
pub fn remove(contract: &mut Value, section: &str, id: &str) {
    contract[section]
        .as_array_mut()
        .expect("a section")
        .retain(|e| e["id"] != id);
}

/// Asserts that `base` → `current` is exactly one widening change `key`
/// with `reason` (exit 1), and that the reverse is exactly one narrowing
/// change `reverse_key` (exit 0).
pub fn assert_widening(
    name: &str,
    base: &Value,
    current: &Value,
    key: &str,
    reason: &str,
    reverse_key: &str,
) {
    let (code, out, err) = check(name, base, current, &[]);
    assert_eq!(
        out,
        format!(
            "[widening] {key}: {reason}\nagent-surface check: 1 change(s): 1 widening (1 unacknowledged), 0 narrowing, 0 neutral\n"
        ),
        "stderr: {err}"
    );
    assert_eq!(code, 1);
    let (code, pairs) = classes(&format!("{name}-reverse"), current, base);
    assert_eq!(pairs, [("narrowing".to_string(), reverse_key.to_string())]);
    assert_eq!(code, 0);
}
