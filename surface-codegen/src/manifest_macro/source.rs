//! Where the manifest file is and reading it: the path written in
//! `manifest!` is relative to the including crate's root
//! (`CARGO_MANIFEST_DIR`); absolute paths are refused because they only
//! work on the machine that wrote them.

use std::path::{Component, Path, PathBuf};

use proc_macro2::Span;

/// What a macro reads from a file, for the messages of
/// [`resolve_source_path`] and [`read_source_file`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SourceKind {
    /// What the file is, for "cannot read the agent manifest `…`".
    pub(crate) what: &'static str,
    /// The path's name in messages: "the manifest path is empty".
    pub(crate) path_name: &'static str,
    /// The macro, with backticks: "`manifest!`".
    pub(crate) macro_name: &'static str,
    /// An invocation with a typical relative path.
    pub(crate) example: &'static str,
}

/// `manifest!`'s file.
pub(crate) const MANIFEST: SourceKind = SourceKind {
    what: "agent manifest",
    path_name: "manifest",
    macro_name: "`manifest!`",
    example: "`manifest!(\"agent.manifest.json\")`",
};

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
    resolve_source_path(written, manifest_dir, span, MANIFEST)
}

/// Resolves the path written in a macro reading a file of `kind`
/// (`manifest!`, `view_inputs!`) against the crate root.
///
/// # Errors
/// As [`resolve_manifest_path`], worded for `kind`.
pub(crate) fn resolve_source_path(
    written: &str,
    manifest_dir: Option<&Path>,
    span: Span,
    kind: SourceKind,
) -> syn::Result<PathBuf> {
    let SourceKind {
        path_name,
        macro_name,
        example,
        ..
    } = kind;
    if written.is_empty() {
        return Err(syn::Error::new(
            span,
            format!("the {path_name} path is empty; give a path relative to the crate root, e.g. {example}"),
        ));
    }
    let p = Path::new(written);
    if p.is_absolute() || written.starts_with('/') || written.starts_with('\\') {
        return Err(syn::Error::new(
            span,
            format!("absolute {path_name} paths only work on the machine that wrote them: `{written}`; give a path relative to the crate root (CARGO_MANIFEST_DIR)"),
        ));
    }
    let Some(dir) = manifest_dir else {
        return Err(syn::Error::new(
            span,
            format!("CARGO_MANIFEST_DIR is not set; {macro_name} must be compiled by cargo"),
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
    read_source_file(file, written, span, MANIFEST, None)
}

/// The text of the file of `kind` at `file` (as resolved from `written`),
/// and the canonical path to embed with `include_str!`; with `max_bytes`,
/// a longer file is refused without being read whole.
///
/// # Errors
/// The file cannot be read or is not UTF-8 (the message names where it was
/// looked for), or it is longer than `max_bytes`.
pub(crate) fn read_source_file(
    file: PathBuf,
    written: &str,
    span: Span,
    kind: SourceKind,
    max_bytes: Option<usize>,
) -> syn::Result<(String, PathBuf)> {
    let what = kind.what;
    let unreadable = |e: std::io::Error| {
        syn::Error::new(
            span,
            format!(
                "cannot read the {what} `{written}` (looked for `{}`): {e}; relative paths are resolved against the including crate's root (CARGO_MANIFEST_DIR)",
                real_location(&file).display()
            ),
        )
    };
    let text = match max_bytes {
        None => std::fs::read_to_string(&file).map_err(unreadable)?,
        Some(max) => {
            use std::io::Read as _;
            let mut bytes = Vec::new();
            std::fs::File::open(&file)
                .and_then(|f| f.take(max as u64 + 1).read_to_end(&mut bytes))
                .map_err(unreadable)?;
            if bytes.len() > max {
                return Err(syn::Error::new(
                    span,
                    format!("the {what} `{written}` is over the limit of {max} bytes; split it"),
                ));
            }
            String::from_utf8(bytes).map_err(|_| {
                unreadable(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "stream did not contain valid UTF-8",
                ))
            })?
        }
    };
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
