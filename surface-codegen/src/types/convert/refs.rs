//! `$ref`s: every reference goes through
//! [`surface_manifest::schema::resolve_ref`] (local `#/…` and
//! `<root $id>#/…`, percent-decoded, the validator's and the export's
//! rules); a target is converted once, into an item named after it.

use std::borrow::Cow;

use serde_json::Value;
use surface_manifest::schema::{resolve_ref, RefError};

use crate::doc::DocText;
use crate::types::model::{ItemDef, Ty};
use crate::types::names::pascal;

use super::{Converter, DefState, Hint};

impl Converter {
    /// Converts a `$ref` target (or the root, pointer `""`) into an item
    /// named `name`, emitting an alias or newtype when the schema itself
    /// produced no item of that name.
    pub(super) fn convert_def_body(
        &mut self,
        root: &Value,
        target: &Value,
        name: String,
        pointer: String,
        ptr: &str,
    ) {
        let notes_before = self.notes.len();
        let mut ty = self.convert(root, target, &Hint::Exact(name.clone()), ptr);
        if matches!(&ty, Ty::Boxed(inner) if matches!(**inner, Ty::Named(_))) {
            // `A = B`, `B = A`: a cycle of plain references admits no finite
            // value; a newtype chain would be uninhabitable.
            self.note(ptr, "a `$ref` cycle without any structure");
            ty = Ty::Value;
        }
        let recursive = ty != Ty::Value
            && matches!(
                self.defs.get(&pointer),
                Some(DefState::InProgress {
                    recursive: true,
                    ..
                })
            );
        if !self.item_index.contains_key(&name) {
            let mut doc = self.schema_doc(target);
            doc.extend(self.notes[notes_before..].iter().cloned());
            let admits_null = self.admits_null(&ty);
            if recursive || matches!(ty, Ty::Boxed(_)) {
                // `type A = Vec<A>` is a cycle rustc rejects; a newtype is not.
                let integers = self.is_integers(&ty);
                self.push_item(ItemDef::Newtype {
                    name: name.clone(),
                    doc,
                    ty,
                    integers,
                });
            } else {
                self.aliases.insert(name.clone(), ty.clone());
                self.push_item(ItemDef::Alias {
                    name: name.clone(),
                    doc,
                    ty,
                });
            }
            if admits_null {
                self.null_admitting.insert(name.clone());
            }
        }
        self.defs.insert(pointer, DefState::Done(Ty::Named(name)));
    }

    /// A `$ref`: the target's item, converted the first time it is
    /// reached. Its name is the target's `title`, else its key (`#/$defs/
    /// Pet` → `InputPet`), except for keys a converter generated (zod's
    /// `__schema0`, see [`is_generated_def_key`]): those are named from
    /// `hint`, the path where the reference is first reached, as an inline
    /// schema there would be (so the same contract gets the same names from
    /// a converter that inlines its recursion).
    pub(super) fn convert_ref(
        &mut self,
        root: &Value,
        reference: &str,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        // Local references (`#/…`, or `<root $id>#/…`) resolve through the
        // one resolver the validator and the export use.
        let resolved = match resolve_ref(root, reference) {
            Ok(resolved) => resolved,
            Err(error) => {
                self.note(ptr, ref_error_note(reference, &error));
                return Ty::Value;
            }
        };
        let target = resolved.target;
        let segment = resolved.pointer.last().map(Cow::into_owned);
        let segment = segment.as_deref().unwrap_or_default();
        let pointer = resolved.pointer.into_string();
        match self.defs.get_mut(&pointer) {
            Some(DefState::InProgress { name, recursive }) => {
                *recursive = true;
                return Ty::Boxed(Box::new(Ty::Named(name.clone())));
            }
            Some(DefState::Done(ty)) => return ty.clone(),
            None => {}
        }
        let title = target.get("title").and_then(Value::as_str);
        let name = match (title, hint) {
            (None, Hint::Exact(name)) if is_generated_def_key(segment) => name.clone(),
            (None, Hint::Fresh(base)) if is_generated_def_key(segment) => {
                self.names.unique(base, false)
            }
            _ => {
                let base = self.role_prefixed(&pascal(title.unwrap_or(segment)));
                self.names.unique(&base, false)
            }
        };
        self.defs.insert(
            pointer.clone(),
            DefState::InProgress {
                name: name.clone(),
                recursive: false,
            },
        );
        self.convert_def_body(root, target, name.clone(), pointer, reference);
        Ty::Named(name)
    }

    /// Resolves a local `$ref` chain to the schema it names (for looking at
    /// a union arm's shape without converting it).
    pub(super) fn peek<'v>(&self, root: &'v Value, mut schema: &'v Value) -> &'v Value {
        for _ in 0..16 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return schema;
            };
            match resolve_ref(root, reference) {
                Ok(resolved) => schema = resolved.target,
                Err(_) => return schema,
            }
        }
        schema
    }
}

/// The note for a `$ref` that does not resolve inside its document.
fn ref_error_note(reference: &str, error: &RefError) -> DocText {
    let quoted = format!("{reference:?}");
    match error {
        RefError::External => DocText::new()
            .ours("external `$ref` ")
            .text(quoted)
            .ours(" is not resolved"),
        RefError::Dangling => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" points to nothing"),
        RefError::Anchor => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" names an anchor, which is not resolved"),
        RefError::BadFragment => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" is not a percent-encoded JSON Pointer"),
        RefError::NotASchema => DocText::new()
            .ours("`$ref` ")
            .text(quoted)
            .ours(" names a value that is not a schema"),
    }
}

/// Whether two `$ref` texts name the same schema: the same text, or the
/// same target once resolved (`#/$defs/A` and `<root $id>#/%24defs/A`).
pub(super) fn same_ref(root: &Value, a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (resolve_ref(root, a), resolve_ref(root, b)),
            (Ok(a), Ok(b)) if a.pointer == b.pointer
        )
}

/// The schema name OpenAPI reads from a `$ref`: the last token of its
/// pointer (decoded and unescaped when it resolves, else the text after
/// the last `/`).
pub(super) fn ref_name(root: &Value, reference: &str) -> Option<String> {
    match resolve_ref(root, reference) {
        Ok(resolved) => resolved.pointer.last().map(Cow::into_owned),
        Err(_) => reference.rsplit('/').next().map(str::to_string),
    }
}

/// A `$defs` key a converter made up rather than a name the author gave:
/// zod 4's `z.toJSONSchema` calls the schemas it extracts (recursive ones,
/// those used twice) `__schema0`, `__schema1`, …
pub(crate) fn is_generated_def_key(key: &str) -> bool {
    key.strip_prefix("__schema")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
