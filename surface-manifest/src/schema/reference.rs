//! `$ref` resolution inside one schema document: the one place a reference
//! is split into base and fragment, the fragment percent-decoded and the
//! JSON Pointer followed.
//!
//! Rules (docs/codegen.md, "Types from JSON Schema", and docs/validation.md
//! share them):
//!
//! * a reference is local when its base is empty (`#/$defs/A`) or equals
//!   the root's `$id` (a trailing `#` on either ignored):
//!   `https://x.test/s#/$defs/A` in a document whose root `$id` is
//!   `https://x.test/s`; anything else is [`RefError::External`];
//! * the fragment is percent-decoded (RFC 3986, through the
//!   `percent-encoding` crate) and must be valid UTF-8;
//! * an empty fragment is the root; one not starting with `/` names an
//!   anchor ([`RefError::Anchor`]: not resolved here);
//! * the pointer's tokens are unescaped once ([`super::Pointer`]) and
//!   followed; the target must be a schema (an object or a boolean);
//! * [`Resolved::crosses_resource`] says whether the path enters a
//!   subschema carrying its own `$id` (an embedded resource), which some
//!   callers refuse.

use serde_json::Value;

use super::pointer::{step, Pointer};

/// A resolved local reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved<'v> {
    /// The target's canonical (escaped) pointer from the document root.
    pub pointer: Pointer,
    /// The target schema.
    pub target: &'v Value,
    /// Whether the path passes through (or ends at) a non-root subschema
    /// with its own `$id`.
    pub crosses_resource: bool,
}

/// Why a `$ref` does not resolve inside its document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    /// The base names another document.
    #[error("the reference names another document")]
    External,
    /// The fragment is a plain-name anchor (`#thing`).
    #[error("the reference names an anchor")]
    Anchor,
    /// The fragment is not valid percent-encoded UTF-8, or not a JSON
    /// Pointer (a `~` not followed by `0` or `1`).
    #[error("the fragment is not a percent-encoded JSON Pointer")]
    BadFragment,
    /// Nothing at the pointer.
    #[error("nothing at the pointer")]
    Dangling,
    /// The pointer names a value that is not a schema.
    #[error("the pointer names a value that is not a schema")]
    NotASchema,
}

/// The root's `$id` without a trailing `#`, when it has one.
#[must_use]
pub fn root_id(document: &Value) -> Option<&str> {
    document
        .get("$id")
        .and_then(Value::as_str)
        .map(|id| id.trim_end_matches('#'))
}

/// The decoded JSON Pointer a local reference names (`"#/%24defs/a~1b"` →
/// `/$defs/a~1b`), without following it.
///
/// # Errors
/// [`RefError::External`], [`RefError::Anchor`] or
/// [`RefError::BadFragment`].
pub fn local_pointer(document: &Value, reference: &str) -> Result<Pointer, RefError> {
    let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    if !base.is_empty() && Some(base) != root_id(document) {
        return Err(RefError::External);
    }
    let decoded = percent_encoding::percent_decode_str(fragment)
        .decode_utf8()
        .map_err(|_| RefError::BadFragment)?;
    if !decoded.is_empty() && !decoded.starts_with('/') {
        return Err(RefError::Anchor);
    }
    Pointer::parse(&decoded).map_err(|_| RefError::BadFragment)
}

/// Resolves `reference` (a `$ref` value) against the root of `document`.
///
/// ```
/// use serde_json::json;
/// use surface_manifest::schema::{resolve_ref, RefError};
///
/// let doc = json!({"$id": "https://x.test/s", "$defs": {"a/b": {"type": "string"}}});
/// let r = resolve_ref(&doc, "https://x.test/s#/%24defs/a~1b").unwrap();
/// assert_eq!(r.pointer.as_str(), "/$defs/a~1b");
/// assert_eq!(r.target, &json!({"type": "string"}));
/// assert_eq!(resolve_ref(&doc, "other.json#/a"), Err(RefError::External));
/// ```
///
/// # Errors
/// [`RefError`] when the reference is not local or names no schema.
pub fn resolve_ref<'v>(document: &'v Value, reference: &str) -> Result<Resolved<'v>, RefError> {
    let pointer = local_pointer(document, reference)?;
    let mut node = document;
    let mut crosses_resource = false;
    for token in pointer.tokens() {
        node = step(node, &token).ok_or(RefError::Dangling)?;
        crosses_resource |= node.get("$id").is_some();
    }
    if !matches!(node, Value::Object(_) | Value::Bool(_)) {
        return Err(RefError::NotASchema);
    }
    Ok(Resolved {
        pointer,
        target: node,
        crosses_resource,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "$id": "https://x.test/s#",
            "$defs": {"a~b": {"type": "integer"}, "list": [1], "inner": {"$id": "inner", "$defs": {"x": true}}},
            "properties": {"p": {}}
        })
    }

    #[test]
    fn local_forms_resolve_to_one_pointer() {
        let d = doc();
        for r in [
            "#/$defs/a~0b",
            "#/%24defs/a~0b",
            "https://x.test/s#/$defs/a~0b",
        ] {
            let got = resolve_ref(&d, r).unwrap();
            assert_eq!(got.pointer.as_str(), "/$defs/a~0b", "{r}");
            assert_eq!(got.target, &json!({"type": "integer"}));
            assert!(!got.crosses_resource);
        }
        for r in ["#", "", "https://x.test/s", "https://x.test/s#"] {
            assert_eq!(resolve_ref(&d, r).unwrap().target, &d, "{r:?}");
        }
    }

    #[test]
    fn refusals_say_why() {
        let d = doc();
        assert_eq!(
            resolve_ref(&d, "https://y.test/s#/$defs"),
            Err(RefError::External)
        );
        assert_eq!(resolve_ref(&d, "#thing"), Err(RefError::Anchor));
        assert_eq!(resolve_ref(&d, "#/%FF"), Err(RefError::BadFragment));
        assert_eq!(resolve_ref(&d, "#/a~2"), Err(RefError::BadFragment));
        assert_eq!(resolve_ref(&d, "#/$defs/nope"), Err(RefError::Dangling));
        assert_eq!(resolve_ref(&d, "#/$defs/list"), Err(RefError::NotASchema));
        assert_eq!(resolve_ref(&d, "#/$defs/list/0"), Err(RefError::NotASchema));
    }

    #[test]
    fn embedded_resources_are_reported() {
        let d = doc();
        assert!(resolve_ref(&d, "#/$defs/inner").unwrap().crosses_resource);
        assert!(
            resolve_ref(&d, "#/$defs/inner/$defs/x")
                .unwrap()
                .crosses_resource
        );
        let no_id = json!({"$defs": {"a": {}}});
        assert_eq!(
            resolve_ref(&no_id, "https://x.test/s#/$defs/a"),
            Err(RefError::External)
        );
    }
}
