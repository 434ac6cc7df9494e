//! Doc text of the generated items: notes (fallbacks to
//! `serde_json::Value`), remarks (what a type does not encode) and the
//! paragraphs of a schema's `description`, `format` and `default`.

use serde_json::{Map, Value};

use crate::doc::{description_paragraphs, DocText};
use crate::types::model::Ty;

use super::items::item_doc_mut;
use super::keywords::{json_short, type_name};
use super::Converter;

impl Converter {
    /// Records that the schema at `ptr` became `serde_json::Value`, and
    /// why (`msg`: our text, quoting manifest text through [`DocText`]).
    pub(super) fn note(&mut self, ptr: &str, msg: impl Into<DocText>) {
        let text = DocText::new()
            .ours(self.role)
            .ours(" schema at ")
            .code(ptr)
            .ours(": ")
            .append(msg.into())
            .ours("; represented as `serde_json::Value`.");
        self.notes.push(text);
    }

    /// Records a remark about the schema at `ptr` that is not a fallback:
    /// something the type does not encode and the validator checks. Like a
    /// note it reaches the docs of the field being converted and of the
    /// procedure's module; [`Self::attach_doc`] puts it on a type too.
    pub(super) fn remark(&mut self, ptr: &str, msg: DocText) -> DocText {
        let text = DocText::new()
            .ours(self.role)
            .ours(" schema at ")
            .code(ptr)
            .ours(": ")
            .append(msg);
        self.notes.push(text.clone());
        text
    }

    /// Adds `text` to the doc of the item `ty` names (through an
    /// `Option`), if it names one already created.
    pub(super) fn attach_doc(&mut self, ty: &Ty, text: DocText) {
        let name = match ty {
            Ty::Named(name) => name,
            Ty::Option(inner) => match &**inner {
                Ty::Named(name) => name,
                _ => return,
            },
            _ => return,
        };
        if let Some(Some(item)) = self
            .item_index
            .get(name)
            .copied()
            .and_then(|i| self.items.get_mut(i))
        {
            let doc = item_doc_mut(item);
            if !doc.contains(&text) {
                doc.push(text);
            }
        }
    }

    /// Doc paragraphs for a schema used as a type or property.
    pub(super) fn schema_doc(&self, s: &Value) -> Vec<DocText> {
        s.as_object().map(|s| self.map_doc(s)).unwrap_or_default()
    }

    /// Doc paragraphs for a schema object.
    pub(super) fn map_doc(&self, s: &Map<String, Value>) -> Vec<DocText> {
        let mut doc = Vec::new();
        if let Some(d) = s.get("description").and_then(Value::as_str) {
            doc.extend(description_paragraphs(d));
        }
        if let Some(f) = s.get("format").and_then(Value::as_str) {
            let typed = (type_name(s) == Some("string"))
                .then(|| self.typed_format(s))
                .flatten();
            doc.push(match typed {
                Some(typed) => DocText::new()
                    .ours("Format: ")
                    .code(f)
                    .ours(", read as `")
                    .ours(typed.rust_name())
                    .ours("` (the validator checks the format first)."),
                None => DocText::new()
                    .ours("Format: ")
                    .code(f)
                    .ours(" (not checked by this type)."),
            });
        }
        if let Some(d) = s.get("default") {
            doc.push(
                DocText::new()
                    .ours("Default: ")
                    .code(json_short(d))
                    .ours("."),
            );
        }
        doc
    }
}
