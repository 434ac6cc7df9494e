//! Is the manifest usable by `manifest!`? Its JSON and path rules
//! (`surface_manifest`), plus the rules of the generated module tree: no
//! root-level procedure named like a generated item
//! ([`super::RESERVED_ROOT_NAMES`]) and at most
//! [`super::MAX_PATH_SEGMENTS`] segments per path. Every problem is
//! reported in one build, spanned on the path literal.

use proc_macro2::Span;
use surface_manifest::{path_to_rust, AgentManifest, ManifestDraft, ManifestError};

use super::{MAX_PATH_SEGMENTS, RESERVED_ROOT_NAMES};
use crate::diagnostics::Errors;

/// Reads and validates the manifest text `shown` names.
///
/// # Errors
/// One combined [`syn::Error`] spanned at `span`: invalid JSON (with line
/// and column), or every path issue followed by every reserved-name and
/// segment-count problem.
pub(crate) fn read_manifest(text: &str, shown: &str, span: Span) -> syn::Result<AgentManifest> {
    let draft = ManifestDraft::from_json_str(text).map_err(|e| manifest_error(e, shown, span))?;
    let mut tree_errors = Errors::default();
    for path in draft.paths() {
        check_tree_rules(path, shown, span, &mut tree_errors);
    }
    let mut errors = Errors::default();
    let manifest = errors.take(draft.validate().map_err(|e| manifest_error(e, shown, span)));
    errors.extend(tree_errors);
    match (manifest, errors.finish()) {
        (Some(manifest), Ok(())) => Ok(manifest),
        (_, Err(e)) => Err(e),
        (None, Ok(())) => Err(syn::Error::new(
            span,
            format!("invalid agent manifest `{shown}`"),
        )),
    }
}

/// The compile error of a [`ManifestError`]: one error per issue.
fn manifest_error(error: ManifestError, shown: &str, span: Span) -> syn::Error {
    match error {
        ManifestError::Json {
            line,
            column,
            message,
        } => syn::Error::new(
            span,
            format!("invalid agent manifest `{shown}` at line {line}, column {column}: {message}; the file must be a JSON object `{{\"tools\": {{\"<dot.path>\": {{\"inputSchema\": …, \"effect\": …}}}}}}`"),
        ),
        ManifestError::Invalid(issues) => {
            let mut errors = Errors::default();
            for issue in &issues {
                errors.add(span, format!("invalid agent manifest `{shown}`: {issue}"));
            }
            errors
                .finish()
                .err()
                .unwrap_or_else(|| syn::Error::new(span, format!("invalid agent manifest `{shown}`")))
        }
    }
}

/// The module-tree rules for one path (paths that break the manifest's own
/// rules are reported by those).
fn check_tree_rules(path: &str, shown: &str, span: Span, errors: &mut Errors) {
    let Ok(rust) = path_to_rust(path) else {
        return;
    };
    if rust.len() > MAX_PATH_SEGMENTS {
        let shown_path: String = path.chars().take(120).collect();
        errors.add(
            span,
            format!(
                "invalid agent manifest `{shown}`: the procedure path `{shown_path}{}` has {} segments; `manifest!` generates one nested module per segment and supports at most {MAX_PATH_SEGMENTS}",
                if shown_path.len() < path.len() { "…" } else { "" },
                rust.len()
            ),
        );
    } else if rust.len() == 1 && RESERVED_ROOT_NAMES.contains(&rust[0].as_str()) {
        errors.add(
            span,
            format!(
                "invalid agent manifest `{shown}`: the root-level procedure `{path}` would generate `fn {}`, which clashes with the generated `authority()`; nest it under a router namespace (e.g. `admin.{path}`)",
                rust[0]
            ),
        );
    }
}
