//! Arrays: `items` as a `Vec`, `prefixItems` (or draft-04's array
//! `items`) as a tuple, with the rest of the items when admitted.

use serde_json::{Map, Value};

use crate::doc::DocText;
use crate::types::model::Ty;

use super::{Converter, Hint, MAX_TUPLE};

/// The keywords of a tuple: the one listing its elements and the one
/// holding the schema of the further items (`prefixItems`/`items` from
/// 2020-12, `items`/`additionalItems` before).
struct TupleKeywords {
    prefix: &'static str,
    rest: &'static str,
}

impl Converter {
    /// An array schema: a tuple when it lists its elements, else a `Vec` of
    /// its `items`.
    pub(super) fn array(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let keywords = match (s.get("prefixItems"), s.get("items")) {
            (Some(_), _) => Some(TupleKeywords {
                prefix: "prefixItems",
                rest: "items",
            }),
            (None, Some(Value::Array(_))) => Some(TupleKeywords {
                prefix: "items",
                rest: "additionalItems",
            }),
            (None, _) => None,
        };
        if let Some(keywords) = keywords {
            return self.tuple(root, s, &keywords, hint, ptr);
        }
        match s.get("items") {
            None | Some(Value::Bool(true)) => Ty::vec(Ty::Value),
            Some(Value::Bool(false)) => {
                self.note(ptr, "`items: false` admits only the empty array");
                Ty::Value
            }
            Some(items) => {
                let item = self.convert(root, items, &hint.child("Item"), &format!("{ptr}/items"));
                Ty::vec(item)
            }
        }
    }

    /// A tuple: one type per listed element (at most [`MAX_TUPLE`]), and
    /// the type of the further items unless they are refused (`false`).
    fn tuple(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        keywords: &TupleKeywords,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let Some(prefix) = s.get(keywords.prefix).and_then(Value::as_array) else {
            self.note(
                ptr,
                DocText::new()
                    .ours("`")
                    .ours(keywords.prefix)
                    .ours("` is not an array"),
            );
            return Ty::Value;
        };
        if prefix.is_empty() || prefix.len() > MAX_TUPLE {
            self.note(
                ptr,
                DocText::new()
                    .ours("a tuple of ")
                    .number(prefix.len())
                    .ours(" elements"),
            );
            return Ty::Value;
        }
        let items = prefix
            .iter()
            .enumerate()
            .map(|(i, item)| {
                self.convert(
                    root,
                    item,
                    &hint.child(&format!("{i}")),
                    &format!("{ptr}/{}/{i}", keywords.prefix),
                )
            })
            .collect();
        // Further items allowed: all of the `rest` schema (any JSON when
        // absent).
        let rest = match s.get(keywords.rest) {
            Some(Value::Bool(false)) => return Ty::Tuple(items),
            None | Some(Value::Bool(true)) => Ty::Value,
            Some(rest) => self
                .convert(
                    root,
                    rest,
                    &hint.child("Rest"),
                    &format!("{ptr}/{}", keywords.rest),
                )
                .unboxed(),
        };
        Ty::TupleWithRest(items, Box::new(rest))
    }
}
