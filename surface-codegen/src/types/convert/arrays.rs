//! Arrays: `items` as a `Vec`, `prefixItems` (or draft-04's array
//! `items`) as a tuple, with the rest of the items when admitted.

use serde_json::{Map, Value};

use crate::doc::DocText;
use crate::types::model::Ty;

use super::{Converter, Hint, MAX_TUPLE};

impl Converter {
    pub(super) fn array(
        &mut self,
        root: &Value,
        s: &Map<String, Value>,
        hint: &Hint,
        ptr: &str,
    ) -> Ty {
        let (prefix, rest, prefix_kw, rest_kw) = match (s.get("prefixItems"), s.get("items")) {
            (Some(prefix), rest) => (Some(prefix), rest, "prefixItems", "items"),
            (None, Some(Value::Array(_))) => (
                s.get("items"),
                s.get("additionalItems"),
                "items",
                "additionalItems",
            ),
            (None, _) => (None, None, "", ""),
        };
        if let Some(prefix) = prefix {
            let Some(prefix) = prefix.as_array() else {
                self.note(
                    ptr,
                    DocText::new()
                        .ours("`")
                        .ours(prefix_kw)
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
                        &format!("{ptr}/{prefix_kw}/{i}"),
                    )
                })
                .collect();
            if rest != Some(&Value::Bool(false)) {
                // Further items allowed: all of the `rest` schema (any JSON
                // when absent).
                let rest = match rest {
                    None | Some(Value::Bool(true)) => Ty::Value,
                    Some(rest) => {
                        let rest = self.convert(
                            root,
                            rest,
                            &hint.child("Rest"),
                            &format!("{ptr}/{rest_kw}"),
                        );
                        rest.unboxed()
                    }
                };
                return Ty::TupleWithRest(items, Box::new(rest));
            }
            return Ty::Tuple(items);
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
}
