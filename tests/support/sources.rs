//! The library crates' sources, for the checks that read them as text
//! (`tests/module_cycles.rs`, `tests/function_length.rs`).

use std::fs;
use std::path::{Path, PathBuf};

/// The source directory of every library crate, relative to the workspace
/// root: the facade, the runtime, host, codegen, macros, manifest and store
/// crates, the two framework adapters and the `agent-surface` command.
pub const LIBRARY_CRATES: [&str; 10] = [
    "src",
    "surface-manifest/src",
    "surface-runtime/src",
    "surface-host/src",
    "surface-macros/src",
    "surface-codegen/src",
    "surface-store/src",
    "surface-leptos/src",
    "surface-dioxus/src",
    "surface-cli/src",
];

/// Every `.rs` file below `dir`, in sorted order (directories depth first).
///
/// # Panics
/// When `dir` cannot be read: a check that read nothing would pass.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
