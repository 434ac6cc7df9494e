//! OpenAI strict function schemas (docs/agents.md, "OpenAI strict mode").
//!
//! [`strict_schema`] turns a [normalized](super::schema::normalize) input
//! schema into one that OpenAI accepts with `"strict": true` (Structured
//! Outputs for function calling), or says why it cannot ([`NotStrict`]).
//! [`check_strict_schema`] checks a schema against the rules on its own; the
//! transform runs it on its own output, so a schema that fails the rules is
//! never returned as strict.
//!
//! The rules enforced (OpenAI's documented rules, some of them tightened):
//!
//! * the root is `{"type": "object", …}`, never a union;
//! * every schema node is a `$ref` alone (`#/$defs/<name>`), an `anyOf`
//!   (with only `description`/`title` beside it), or has one `type` among
//!   `string`, `number`, `integer`, `boolean`, `object`, `array`, `null`;
//! * every object has `properties`, `additionalProperties: false`, and
//!   lists every property in `required`;
//! * every array has `items`;
//! * only these keywords: `type`, `description`, `title`, `enum`
//!   (scalars of the node's type), `pattern` and `format` (`date-time`,
//!   `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`,
//!   `uuid`) on strings, `minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`, `multipleOf` on numbers, `minItems`, `maxItems` on
//!   arrays, `$defs` at the root;
//! * limits ([`StrictLimits`]): 5,000 object properties in total, 10 levels
//!   of object nesting, 120,000 characters of property names, definition
//!   names and enum values, 1,000 enum values, and 15,000 characters for one
//!   string enum of more than 250 values.
//!
//! What the transform does: optional properties become required and accept
//! `null` (an `anyOf` with `{"type": "null"}`); objects get
//! `additionalProperties: false`; `oneOf` becomes `anyOf`; `const` becomes a
//! one-value `enum`; a tuple's items become the `anyOf` of its item schemas;
//! unsupported constraint keywords are dropped (a loosening: the pipeline
//! still validates). It refuses (→ exported with `strict: false`) what
//! strict mode cannot express without changing the meaning: open objects
//! and records, free-form values, `allOf` that does not merge, and optional
//! properties that already accept `null` (absent and `null` may mean
//! different things to the procedure, e.g. "keep" and "clear").
//!
//! A strict model sends `null` for an optional property it leaves out;
//! [`StrictSchema::strip_absent_nulls`] turns those back into absent
//! properties before the call reaches the pipeline, following the
//! [`NullPlan`] the transform returns beside the schema.
//!
//! Modules: `transform` (the rewrite), `check` (the rules on their own),
//! `strip` (the plan and the null stripping), `error` (why not).

use std::sync::Arc;

use serde_json::Value;
use surface_manifest::schema::resolve_ref;

mod check;
mod error;
mod strip;
mod transform;

pub use check::check_strict_schema;
pub use error::{NotStrict, NotStrictReason, StrictRule, StrictViolation};
pub use strip::{NullPlan, PlanNode};
pub use transform::strict_schema;

/// String formats OpenAI strict mode supports.
pub const SUPPORTED_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Deepest schema nesting the transform and the checker walk.
const MAX_WALK_DEPTH: usize = 128;
/// Work budget of one [`StrictSchema::strip_absent_nulls`] call (schema
/// checks); beyond it no further `null` is removed.
pub const MAX_STRIP_STEPS: usize = 100_000;

/// OpenAI's documented size limits of a strict schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictLimits {
    /// Object properties in the whole schema; default 5,000.
    pub max_properties: usize,
    /// Levels of object nesting (the root object is level 1); default 10.
    pub max_object_depth: usize,
    /// Characters of all property names, definition names and string enum
    /// values; default 120,000.
    pub max_string_chars: usize,
    /// Enum values in the whole schema; default 1,000.
    pub max_enum_values: usize,
    /// A string enum with more values than this…; default 250.
    pub large_enum_values: usize,
    /// …may total at most this many characters; default 15,000.
    pub large_enum_chars: usize,
}

impl Default for StrictLimits {
    fn default() -> Self {
        Self {
            max_properties: 5_000,
            max_object_depth: 10,
            max_string_chars: 120_000,
            max_enum_values: 1_000,
            large_enum_values: 250,
            large_enum_chars: 15_000,
        }
    }
}

/// Options of [`strict_schema`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrictOptions {
    /// The callee treats `null` and an absent property alike (true for view
    /// capabilities, whose input is deserialized with serde, where an
    /// `Option` field is `None` either way). Then an optional property that
    /// accepts `null` stays strict-exportable and its `null` is removed
    /// too. Default false (procedures: `null` is passed on as `null`, and
    /// such a property makes the schema non-strict unless its `default` is
    /// `null`).
    pub null_is_absent: bool,
    /// Size limits; default [`StrictLimits::default`].
    pub limits: StrictLimits,
}

/// A strict schema and the plan to map the strict model's calls back.
#[derive(Clone, Debug, PartialEq)]
pub struct StrictSchema {
    parameters: Arc<Value>,
    /// `None` when no optional property was made nullable.
    plan: Option<Arc<NullPlan>>,
}

impl StrictSchema {
    pub(crate) fn new(parameters: Value, plan: NullPlan) -> Self {
        StrictSchema {
            parameters: Arc::new(parameters),
            plan: (!plan.is_empty()).then(|| Arc::new(plan)),
        }
    }

    /// The schema to send as the function's `parameters` with
    /// `"strict": true`.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// Whether some optional property was made nullable (so calls may carry
    /// `null`s to remove).
    pub fn has_absent_nulls(&self) -> bool {
        self.plan.is_some()
    }

    /// Where optional properties were made required and nullable (`None`
    /// when none was).
    pub fn plan(&self) -> Option<&NullPlan> {
        self.plan.as_deref()
    }

    /// Removes, in the arguments of a strict call, every `null` that stands
    /// for an absent optional property (recursively, following the schema
    /// through objects, arrays, unions and `$defs`). A `null` the original
    /// schema allows for that property is kept. In a union, nulls are
    /// removed only below the one branch the value matches; when several
    /// branches match, that part is left alone (the pipeline then reports
    /// `INVALID_INPUT` rather than a guess changing the call). Returns the
    /// number of properties removed. Bounded by [`MAX_STRIP_STEPS`] schema
    /// checks and 128 levels of nesting.
    pub fn strip_absent_nulls(&self, arguments: &mut Value) -> usize {
        match &self.plan {
            Some(plan) => strip::strip(&self.parameters, plan, arguments),
            None => 0,
        }
    }
}

// ----- helpers ---------------------------------------------------------------------

/// Whether a `pattern` uses only widely supported regex syntax: no
/// lookaround, named groups or inline flags (`(?` other than `(?:`), no
/// backreferences or exotic escapes, at most 1,000 characters.
pub(crate) fn pattern_is_portable(pattern: &str) -> bool {
    if pattern.chars().count() > 1_000 {
        return false;
    }
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                match bytes.get(i + 1) {
                    Some(
                        b'1'..=b'9'
                        | b'k'
                        | b'p'
                        | b'P'
                        | b'X'
                        | b'G'
                        | b'A'
                        | b'Z'
                        | b'z'
                        | b'Q'
                        | b'E',
                    )
                    | None => return false,
                    _ => {}
                }
                i += 2;
            }
            b'(' if bytes.get(i + 1) == Some(&b'?') => {
                if bytes.get(i + 2) != Some(&b':') {
                    return false;
                }
                i += 3;
            }
            _ => i += 1,
        }
    }
    true
}

/// What a `$ref` of a strict schema names.
pub(crate) enum DefRef<'v> {
    /// `#`: the root.
    Root(&'v Value),
    /// `#/$defs/<name>`.
    Def {
        /// The entry's name.
        name: String,
        /// The entry.
        schema: &'v Value,
    },
}

/// The root or `$defs` entry `reference` names in `doc`, resolved through
/// [`resolve_ref`]; `None` for anything else (another pointer, a
/// reference into an embedded resource, or one not written in the plain
/// `#` / `#/$defs/<name>` form strict mode accepts).
pub(crate) fn def_target<'v>(doc: &'v Value, reference: &str) -> Option<DefRef<'v>> {
    let resolved = resolve_ref(doc, reference).ok()?;
    let plain = reference.strip_prefix('#') == Some(resolved.pointer.as_str());
    if resolved.crosses_resource || !plain {
        return None;
    }
    let mut tokens = resolved.pointer.tokens();
    match (tokens.next(), tokens.next(), tokens.next()) {
        (None, _, _) => Some(DefRef::Root(resolved.target)),
        (Some(defs), Some(name), None) if defs == "$defs" => Some(DefRef::Def {
            name: name.into_owned(),
            schema: resolved.target,
        }),
        _ => None,
    }
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;
