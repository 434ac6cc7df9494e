//! The work budget of one procedure's conversion (see [`WORK_BASE`]): the
//! weight of JSON, the cost of a schema object, and spending.

use serde_json::{Map, Value};

use crate::doc::DocText;

use super::{Converter, WORK_BASE, WORK_PER_VALUE};

/// Steps per byte of text: one per 64 bytes.
fn text_steps(bytes: usize) -> u64 {
    (bytes / 64) as u64
}

/// The weight of `v` (see [`WORK_BASE`]), counting only until it passes
/// `limit`. Iterative, so any nesting is fine.
fn weight(v: &Value, limit: u64) -> u64 {
    let mut total: u64 = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(1);
        match v {
            Value::String(s) => total = total.saturating_add(text_steps(s.len())),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (k, child) in map {
                    total = total.saturating_add(text_steps(k.len()));
                    stack.push(child);
                }
            }
            _ => {}
        }
        if total > limit {
            break;
        }
    }
    total
}

/// The cost of converting the schema object `s` itself: one step plus its
/// own text (keys, string values, strings in arrays, keys of objects such
/// as `properties`), not its sub-schemas.
pub(super) fn local_steps(s: &Map<String, Value>) -> u64 {
    let mut bytes = 0usize;
    for (k, v) in s {
        bytes = bytes.saturating_add(k.len());
        match v {
            Value::String(t) => bytes = bytes.saturating_add(t.len()),
            Value::Array(items) => {
                for item in items {
                    if let Value::String(t) = item {
                        bytes = bytes.saturating_add(t.len());
                    }
                }
            }
            Value::Object(map) => {
                for key in map.keys() {
                    bytes = bytes.saturating_add(key.len());
                }
            }
            _ => {}
        }
    }
    1 + text_steps(bytes)
}

impl Converter {
    /// The weight of `v`, for sizing the budget of [`Converter::new`].
    pub(crate) fn weight_of(v: &Value) -> u64 {
        weight(v, u64::MAX)
    }

    /// Steps of the budget not used yet.
    #[cfg(test)]
    pub(crate) fn work_left(&self) -> u64 {
        self.work_left
    }

    /// Takes `steps` from the budget; false (and a note, the first time)
    /// when not enough is left.
    pub(super) fn spend(&mut self, steps: u64, ptr: &str) -> bool {
        if self.work_left >= steps {
            self.work_left -= steps;
            return true;
        }
        self.work_left = 0;
        if !self.exhausted {
            self.exhausted = true;
            self.note(
                ptr,
                DocText::new()
                    .ours("conversion stopped here, past the work limit for this procedure (")
                    .number(WORK_BASE)
                    .ours(" + ")
                    .number(WORK_PER_VALUE)
                    .ours(" × the size of its schemas; repeated `allOf`/`$ref` expansions count each time), so this and the sub-schemas not yet converted are"),
            );
        }
        false
    }

    /// A copy of `s`, paid for from the budget (its weight).
    pub(super) fn copy_map(
        &mut self,
        s: &Map<String, Value>,
        ptr: &str,
    ) -> Option<Map<String, Value>> {
        let limit = self.work_left;
        let mut cost = 1u64;
        for (k, v) in s {
            cost = cost
                .saturating_add(text_steps(k.len()))
                .saturating_add(weight(v, limit));
            if cost > limit {
                break;
            }
        }
        self.spend(cost, ptr).then(|| s.clone())
    }

    /// A copy of `v`, paid for from the budget (its weight).
    pub(super) fn copy_value(&mut self, v: &Value, ptr: &str) -> Option<Value> {
        let cost = weight(v, self.work_left);
        self.spend(cost, ptr).then(|| v.clone())
    }
}
