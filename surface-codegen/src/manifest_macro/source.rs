//! Where the manifest file is and reading it: the path written in
//! `manifest!` is relative to the including crate's root
//! (`CARGO_MANIFEST_DIR`); absolute paths are refused because they only
//! work on the machine that wrote them.

use std::path::{Component, Path, PathBuf};

use proc_macro2::Span;

/// Resolves the path written in `manifest!` against the crate root.
///
/// # Errors
/// An absolute path (it would only work on the machine that wrote it), an
/// empty path, or a missing `CARGO_MANIFEST_DIR`.
pub fn resolve_manifest_path(
    written: &str,
    manifest_dir: Option<&Path>,
    span: Span,
) -> syn::Result<PathBuf> {
    if written.is_empty() {
        return Err(syn::Error::new(
            span,
            "the manifest path is empty; give a path relative to the crate root, e.g. `manifest!(\"agent.manifest.json\")`",
        ));
    }
    let p = Path::new(written);
    if p.is_absolute() || written.starts_with('/') || written.starts_with('\\') {
        return Err(syn::Error::new(
            span,
            format!("absolute manifest paths only work on the machine that wrote them: `{written}`; give a path relative to the crate root (CARGO_MANIFEST_DIR)"),
        ));
    }
    let Some(dir) = manifest_dir else {
        return Err(syn::Error::new(
            span,
            "CARGO_MANIFEST_DIR is not set; `manifest!` must be compiled by cargo",
        ));
    };
    Ok(normalize_lexically(&dir.join(p)))
}

/// The text of the manifest at `file` (as resolved from `written`), and
/// the canonical path to embed with `include_str!`.
///
/// # Errors
/// The file cannot be read; the message names where it was looked for.
pub(crate) fn read_manifest_file(
    file: PathBuf,
    written: &str,
    span: Span,
) -> syn::Result<(String, PathBuf)> {
    let text = std::fs::read_to_string(&file).map_err(|e| {
        syn::Error::new(
            span,
            format!(
                "cannot read the agent manifest `{written}` (looked for `{}`): {e}; relative paths are resolved against the including crate's root (CARGO_MANIFEST_DIR)",
                real_location(&file).display()
            ),
        )
    })?;
    let canonical = std::fs::canonicalize(&file).unwrap_or(file);
    Ok((text, canonical))
}

/// Where `file` really is: its directory with symbolic links resolved when
/// that directory exists (the file itself may be missing), else `file`.
fn real_location(file: &Path) -> PathBuf {
    match (file.parent(), file.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|dir| dir.join(name))
            .unwrap_or_else(|_| file.to_path_buf()),
        _ => file.to_path_buf(),
    }
}

/// Removes `.` and resolves `..` components without touching the file
/// system (for readable messages about files that do not exist).
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s4_1_absolute_paths_are_rejected() {
        let e = resolve_manifest_path(
            "/etc/agent.json",
            Some(Path::new("/crate")),
            Span::call_site(),
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("absolute manifest paths only work"));
        assert_eq!(
            resolve_manifest_path("../x/./a.json", Some(Path::new("/c/d")), Span::call_site())
                .unwrap(),
            PathBuf::from("/c/x/a.json")
        );
    }

    #[cfg(unix)]
    #[test]
    fn s4_1_missing_file_is_reported_at_its_real_location() {
        let root =
            std::env::temp_dir().join(format!("surface-real-location-{}", std::process::id()));
        let real = root.join("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = root.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let expected = std::fs::canonicalize(&real).unwrap().join("missing.json");
        assert_eq!(real_location(&link.join("missing.json")), expected);
        // A directory that does not exist: the path as resolved.
        assert_eq!(
            real_location(Path::new("/no/such/dir/missing.json")),
            PathBuf::from("/no/such/dir/missing.json")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
