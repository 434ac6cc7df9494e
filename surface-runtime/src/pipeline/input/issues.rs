//! `details.issues` of an `INVALID_INPUT` as agent-surface's own validator
//! writes them (the TypeScript original's `validateValueAgainstSchema`), read
//! off the errors of this project's validators: the generated ones
//! (`crate::validation`) and, with feature `dynamic`, `jsonschema`'s.
//!
//! An issue is `{"path", "message", "keyword"}`:
//!
//! * `path`: property names joined by `.`, array items as `[i]`, `""` for
//!   the input itself; a missing required property and a property
//!   `additionalProperties: false` rejects are named by their own path (one
//!   issue per rejected property);
//! * `message`: the original's text for the keyword (`expected string, got
//!   number`, `is required`, `is not an allowed property`, `must be one of
//!   ["a","b"]`, …; numbers and JSON as JavaScript writes them), this
//!   project's text in the same style for the keywords the original does
//!   not check (`oneOf`, `not`, `contains`, …). A message names the
//!   schema's values (limits, `const`, `enum`, `pattern`, `format`) and at
//!   most the JSON type of the instance's value, never the value;
//! * `keyword`: the JSON Schema keyword that failed (this project's
//!   addition).
//!
//! As in the original, a value that fails `const`, `enum`, `anyOf` (or
//! `oneOf`) or `type` has that one issue and none below it (the original
//! stops checking a value at the first of these that fails, in that order),
//! and the issues come in the order of its walk ([`walk_order`]), whichever
//! validator found them.

use serde_json::{Number, Value};
use surface_manifest::canonical_json;
use surface_manifest::digest::js_number;

/// One validator error, read: the JSON Pointer of the value it concerns,
/// the keyword, and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Found {
    pub(super) pointer: String,
    pub(super) keyword: String,
    pub(super) problem: Problem,
}

/// What a validator error says, as far as the issue needs it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Problem {
    /// `type`: the allowed types (the schema's order when it is known).
    Type(Vec<&'static str>),
    /// `required`: the missing property.
    Required(String),
    /// `additionalProperties: false` (or `unevaluatedProperties`): the
    /// rejected properties.
    NotAllowed(Vec<String>),
    /// `additionalProperties: false` with no `properties`: every property.
    NoProperties,
    Const(Value),
    /// `enum`: the options listed (the first ones only when `total` is
    /// larger).
    Enum {
        shown: Vec<Value>,
        total: usize,
    },
    AnyOf,
    OneOfNone,
    OneOfMany,
    MinLength(Number),
    MaxLength(Number),
    Pattern(String),
    Format(String),
    Minimum(Number),
    Maximum(Number),
    ExclusiveMinimum(Number),
    ExclusiveMaximum(Number),
    MultipleOf(Number),
    MinItems(Number),
    MaxItems(Number),
    UniqueItems,
    /// `additionalItems: false`: the number of items allowed.
    AdditionalItems(Number),
    MinProperties(Number),
    MaxProperties(Number),
    PropertyNames,
    Contains,
    Not,
    FalseSchema,
    UnevaluatedItems,
    /// A recursive `$ref` nested past `MAX_REF_DEPTH`.
    TooDeep,
    /// Anything else: the validator's own (masked) message.
    Other(String),
}

/// The JSON types, in the order `jsonschema` and the generated validators
/// list them.
const TYPES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

// ───────────────────────────── reading ─────────────────────────────

/// Reads an error of a validator `manifest!` or `view_inputs!` generated:
/// its keyword and message (the messages `surface-codegen` writes, which
/// carry the schema's values). `schema` (the schema the validator was
/// generated from, as the agent is shown it) completes what a message
/// leaves out (a long `enum`, the order of `type`s).
pub(super) fn generated(
    error: &crate::validation::ValidationError,
    instance: &Value,
    schema: &Value,
) -> Found {
    let pointer = error.instance_path.as_str();
    let message: &str = &error.message;
    let problem = read_generated(error.keyword, message, instance, schema, pointer)
        .unwrap_or_else(|| Problem::Other(message.to_string()));
    Found::new(pointer, error.keyword, problem)
}

impl Found {
    /// A `false` schema standing for `additionalProperties` or
    /// `propertyNames` ([`false_schema`]) is reported under that keyword.
    fn new(pointer: &str, keyword: &str, problem: Problem) -> Found {
        let keyword = match (&problem, keyword) {
            (Problem::NoProperties, "falseSchema") => "additionalProperties",
            (Problem::PropertyNames, "falseSchema") => "propertyNames",
            _ => keyword,
        };
        Found {
            pointer: pointer.to_string(),
            keyword: keyword.to_string(),
            problem,
        }
    }
}

fn read_generated(
    keyword: &str,
    message: &str,
    instance: &Value,
    schema: &Value,
    pointer: &str,
) -> Option<Problem> {
    let number = |prefix: &str| -> Option<Number> {
        let rest = message.strip_prefix(prefix)?;
        rest.split(' ').next()?.parse().ok()
    };
    Some(match keyword {
        "type" => Problem::Type(generated_types(message)?),
        "required" => {
            let mut values = serde_json::Deserializer::from_str(message).into_iter::<String>();
            let name = values.next()?.ok()?;
            (&message[values.byte_offset()..] == " is a required property").then_some(())?;
            Problem::Required(name)
        }
        "additionalProperties" => {
            let names = unexpected_names(message, instance, schema, pointer)?;
            Problem::NotAllowed(names)
        }
        "falseSchema" => false_schema(instance, schema, pointer),
        "const" => {
            Problem::Const(serde_json::from_str(message.strip_suffix(" was expected")?).ok()?)
        }
        "enum" => generated_enum(message, instance, schema, pointer)?,
        "anyOf" => Problem::AnyOf,
        "oneOf" if message.contains("more than one") => Problem::OneOfMany,
        "oneOf" => Problem::OneOfNone,
        "minLength" => Problem::MinLength(number("value is shorter than ")?),
        "maxLength" => Problem::MaxLength(number("value is longer than ")?),
        "pattern" => Problem::Pattern(
            message
                .strip_prefix("value does not match \"")?
                .strip_suffix('"')?
                .to_string(),
        ),
        "format" => Problem::Format(
            message
                .strip_prefix("value is not a \"")?
                .strip_suffix('"')?
                .to_string(),
        ),
        "minimum" => Problem::Minimum(number("value is less than the minimum of ")?),
        "maximum" => Problem::Maximum(number("value is greater than the maximum of ")?),
        "exclusiveMinimum" => {
            Problem::ExclusiveMinimum(number("value is less than or equal to the minimum of ")?)
        }
        "exclusiveMaximum" => {
            Problem::ExclusiveMaximum(number("value is greater than or equal to the maximum of ")?)
        }
        "multipleOf" => Problem::MultipleOf(number("value is not a multiple of ")?),
        "minItems" => Problem::MinItems(number("value has less than ")?),
        "maxItems" => Problem::MaxItems(number("value has more than ")?),
        "minProperties" => Problem::MinProperties(number("value has less than ")?),
        "maxProperties" => Problem::MaxProperties(number("value has more than ")?),
        "uniqueItems" => Problem::UniqueItems,
        "additionalItems" => {
            let extra = number("Additional items are not allowed (")?.as_u64()?;
            let len = value_at(instance, pointer)?.as_array()?.len() as u64;
            Problem::AdditionalItems(len.checked_sub(extra)?.into())
        }
        "contains" => Problem::Contains,
        "not" => Problem::Not,
        "propertyNames" => Problem::PropertyNames,
        "unevaluatedItems" => Problem::UnevaluatedItems,
        "$ref" => Problem::TooDeep,
        _ => return None,
    })
}

/// The types a generated `type` message names (`value is not of type
/// "string"`, `value is not of types "null", "string"`).
fn generated_types(message: &str) -> Option<Vec<&'static str>> {
    let listed = message
        .strip_prefix("value is not of type ")
        .or_else(|| message.strip_prefix("value is not of types "))?;
    // The names quoted, `, ` between.
    let mut types = Vec::new();
    for (n, part) in listed.split('"').enumerate() {
        if n % 2 == 1 {
            types.push(*TYPES.iter().find(|t| **t == part)?);
        } else if !(part.is_empty() || part == ", ") {
            return None;
        }
    }
    (!types.is_empty()).then_some(types)
}

/// The options a generated `enum` message names (`value is not one of
/// "a", "b" or "c"`; past three, `value is not one of "a", "b" or 3 other
/// candidates`, completed from the schema when it can be followed).
fn generated_enum(
    message: &str,
    instance: &Value,
    schema: &Value,
    pointer: &str,
) -> Option<Problem> {
    let listed = message.strip_prefix("value is not one of ")?;
    let (shown, total) = match listed.strip_suffix(" other candidates") {
        Some(listed) => {
            let (first, more) = listed.rsplit_once(" or ")?;
            let shown = json_list(first)?;
            let total = shown.len() + more.parse::<usize>().ok()?;
            (shown, total)
        }
        None => {
            let shown = json_list(listed)?;
            let total = shown.len();
            (shown, total)
        }
    };
    Some(match full_enum(schema, instance, pointer, &shown, total) {
        Some(options) => Problem::Enum {
            total: options.len(),
            shown: options,
        },
        None => Problem::Enum { shown, total },
    })
}

/// Reads an error of `jsonschema` (a schema compiled at registration).
#[cfg(feature = "dynamic")]
pub(super) fn compiled(
    error: &jsonschema::ValidationError<'_>,
    instance: &Value,
    schema: &Value,
) -> Found {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let pointer = error.instance_path().as_str();
    let limit = |v: &Value| v.as_number().cloned();
    let problem = match error.kind() {
        K::Type { kind } => Some(Problem::Type(match kind {
            TypeKind::Single(t) => vec![t.as_str()],
            TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
        })),
        K::Required { property } => property.as_str().map(|p| Problem::Required(p.into())),
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            Some(Problem::NotAllowed(unexpected.clone()))
        }
        K::FalseSchema => Some(false_schema(instance, schema, pointer)),
        K::Constant { expected_value } => Some(Problem::Const((**expected_value).clone())),
        K::Enum { options } => options.as_array().map(|o| Problem::Enum {
            shown: o.clone(),
            total: o.len(),
        }),
        K::AnyOf { .. } => Some(Problem::AnyOf),
        K::OneOfNotValid { .. } => Some(Problem::OneOfNone),
        K::OneOfMultipleValid { .. } => Some(Problem::OneOfMany),
        K::MinLength { limit } => Some(Problem::MinLength((*limit).into())),
        K::MaxLength { limit } => Some(Problem::MaxLength((*limit).into())),
        K::Pattern { pattern } => Some(Problem::Pattern(pattern.clone())),
        K::Format { format } => Some(Problem::Format(format.clone())),
        K::Minimum { limit: l } => limit(l).map(Problem::Minimum),
        K::Maximum { limit: l } => limit(l).map(Problem::Maximum),
        K::ExclusiveMinimum { limit: l } => limit(l).map(Problem::ExclusiveMinimum),
        K::ExclusiveMaximum { limit: l } => limit(l).map(Problem::ExclusiveMaximum),
        K::MultipleOf { multiple_of } => Number::from_f64(*multiple_of).map(Problem::MultipleOf),
        K::MinItems { limit } => Some(Problem::MinItems((*limit).into())),
        K::MaxItems { limit } => Some(Problem::MaxItems((*limit).into())),
        K::UniqueItems => Some(Problem::UniqueItems),
        K::AdditionalItems { limit } => Some(Problem::AdditionalItems((*limit).into())),
        K::MinProperties { limit } => Some(Problem::MinProperties((*limit).into())),
        K::MaxProperties { limit } => Some(Problem::MaxProperties((*limit).into())),
        K::PropertyNames { .. } => Some(Problem::PropertyNames),
        K::Contains => Some(Problem::Contains),
        K::Not { .. } => Some(Problem::Not),
        K::UnevaluatedItems { .. } => Some(Problem::UnevaluatedItems),
        _ => None,
    };
    let problem = problem.unwrap_or_else(|| Problem::Other(error.masked().to_string()));
    Found::new(pointer, error.kind().keyword(), problem)
}

/// A `false` schema failed at `pointer`: `additionalProperties: false`
/// with no `properties` (both validators report it so), a `false`
/// `propertyNames`, or a `false` schema.
fn false_schema(instance: &Value, schema: &Value, pointer: &str) -> Problem {
    let non_empty_object = value_at(instance, pointer)
        .and_then(Value::as_object)
        .is_some_and(|o| !o.is_empty());
    if !non_empty_object {
        return Problem::FalseSchema;
    }
    match schema_at(schema, instance, pointer) {
        Some(node) => {
            let is_false =
                |kw: &str| find(schema, node, &|n| n.get(kw)) == Some(&Value::Bool(false));
            if node == &Value::Bool(false) {
                Problem::FalseSchema
            } else if is_false("additionalProperties") {
                Problem::NoProperties
            } else if is_false("propertyNames") {
                Problem::PropertyNames
            } else {
                Problem::FalseSchema
            }
        }
        // Where the schema cannot be followed: the case the generated
        // validators single out (a lone `additionalProperties: false`).
        None => Problem::NoProperties,
    }
}

/// The properties a generated `additionalProperties` message names
/// (`Additional properties are not allowed ('a', 'b' were unexpected)`),
/// matched against the object's own property names in order (the
/// validator lists them so).
fn unexpected_names(
    message: &str,
    instance: &Value,
    schema: &Value,
    pointer: &str,
) -> Option<Vec<String>> {
    let listed = message.strip_prefix("Additional properties are not allowed (")?;
    let object = value_at(instance, pointer)?.as_object()?;
    // One name: all of it.
    if let Some(one) = listed.strip_suffix(" was unexpected)") {
        let name = one.strip_prefix('\'')?.strip_suffix('\'')?;
        return object.contains_key(name).then(|| vec![name.to_string()]);
    }
    let listed = listed.strip_suffix(" were unexpected)")?;
    // The schema's declared properties are never unexpected; where the
    // schema cannot be followed every name is a candidate.
    let node = schema_at(schema, instance, pointer);
    let declared = |name: &str| {
        node.is_some_and(|node| find(schema, node, &|n| n.get("properties")?.get(name)).is_some())
    };
    let undeclared: Vec<&String> = object.keys().filter(|k| !declared(k)).collect();
    let all: Vec<&String> = object.keys().collect();
    match_names(listed, &undeclared).or_else(|| match_names(listed, &all))
}

/// `listed` (`'a', 'b'`) as a subsequence of `names`; `None` unless it is
/// consumed exactly.
fn match_names(listed: &str, names: &[&String]) -> Option<Vec<String>> {
    let mut rest = listed;
    let mut out = Vec::new();
    for name in names {
        let Some(after) = rest
            .strip_prefix('\'')
            .and_then(|r| r.strip_prefix(name.as_str()))
            .and_then(|r| r.strip_prefix('\''))
        else {
            continue;
        };
        if after.is_empty() {
            out.push(name.to_string());
            return Some(out);
        }
        if let Some(after) = after.strip_prefix(", ") {
            out.push(name.to_string());
            rest = after;
        }
    }
    None
}

/// Compact JSON values separated by `, ` or ` or ` (a generated `enum`
/// message).
fn json_list(mut text: &str) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    loop {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        values.push(stream.next()?.ok()?);
        text = &text[stream.byte_offset()..];
        if text.is_empty() {
            return Some(values);
        }
        text = text
            .strip_prefix(", ")
            .or_else(|| text.strip_prefix(" or "))?;
    }
}

/// The whole `enum` of the schema at `pointer` when it starts with `shown`
/// and has `total` options.
fn full_enum(
    schema: &Value,
    instance: &Value,
    pointer: &str,
    shown: &[Value],
    total: usize,
) -> Option<Vec<Value>> {
    if shown.len() == total {
        return None;
    }
    let node = schema_at(schema, instance, pointer)?;
    let options = find(schema, node, &|n| {
        n.get("enum").filter(|e| {
            e.as_array()
                .is_some_and(|o| o.len() == total && o.starts_with(shown))
        })
    })?;
    options.as_array().cloned()
}

// ───────────────────────── the schema, followed ─────────────────────────

/// How deep [`find`] follows `$ref`s and `allOf`s.
const MAX_SCHEMA_HOPS: u32 = 16;

/// The subschema that applies to the value at `pointer`, followed through
/// `properties`, `additionalProperties`, `items`, `prefixItems`, local
/// `$ref`s and `allOf`; `None` where that is not one schema.
fn schema_at<'s>(root: &'s Value, instance: &Value, pointer: &str) -> Option<&'s Value> {
    let mut node = root;
    let mut at = Some(instance);
    for segment in segments(pointer) {
        let index = match at {
            Some(Value::Array(_)) => segment.parse::<usize>().ok(),
            _ => None,
        };
        node = match index {
            Some(i) => {
                at = at.and_then(|v| v.get(i));
                find(
                    root,
                    node,
                    &|n| match (n.get("prefixItems"), n.get("items")) {
                        (Some(Value::Array(prefix)), _) if i < prefix.len() => Some(&prefix[i]),
                        (_, Some(Value::Array(tuple))) => tuple.get(i),
                        (_, Some(items)) => Some(items),
                        _ => None,
                    },
                )?
            }
            None => {
                at = at.and_then(|v| v.get(&segment));
                find(root, node, &|n| n.get("properties")?.get(&segment)).or_else(|| {
                    find(root, node, &|n| {
                        n.get("additionalProperties").filter(|a| a.is_object())
                    })
                })?
            }
        };
    }
    Some(node).filter(|n| n.is_object() || n.is_boolean())
}

/// The first of `get` on `node`, the target of its local `$ref`, and its
/// `allOf` parts (depth first, at most [`MAX_SCHEMA_HOPS`] deep).
fn find<'s>(
    root: &'s Value,
    node: &'s Value,
    get: &dyn Fn(&'s Value) -> Option<&'s Value>,
) -> Option<&'s Value> {
    fn go<'s>(
        root: &'s Value,
        node: &'s Value,
        get: &dyn Fn(&'s Value) -> Option<&'s Value>,
        hops: u32,
    ) -> Option<&'s Value> {
        if let Some(found) = get(node) {
            return Some(found);
        }
        if hops == MAX_SCHEMA_HOPS {
            return None;
        }
        let target = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p));
        if let Some(found) = target.and_then(|t| go(root, t, get, hops + 1)) {
            return Some(found);
        }
        node.get("allOf")?
            .as_array()?
            .iter()
            .find_map(|part| go(root, part, get, hops + 1))
    }
    go(root, node, get, 0)
}

// ───────────────────────────── writing ─────────────────────────────

/// The segments of a JSON Pointer, unescaped.
fn segments(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer
        .split('/')
        .skip(1)
        .map(|raw| raw.replace("~1", "/").replace("~0", "~"))
}

/// The value at `pointer` (segments read as indexes on arrays).
fn value_at<'v>(instance: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut at = instance;
    for segment in segments(pointer) {
        at = match at {
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            Value::Object(map) => map.get(&segment)?,
            _ => return None,
        };
    }
    Some(at)
}

/// The original's path of the value at `pointer`: property names joined by
/// `.`, array items as `[i]`, `""` for the input itself. Whether a segment
/// is a property or an index is read off `instance`.
pub(super) fn path_of(instance: &Value, pointer: &str) -> String {
    let mut at = Some(instance);
    let mut path = String::new();
    for key in segments(pointer) {
        let index = match at {
            Some(Value::Array(_)) => key.parse::<usize>().ok(),
            _ => None,
        };
        match index {
            Some(i) => {
                at = at.and_then(|v| v.get(i));
                path.push_str(&format!("[{i}]"));
            }
            None => {
                at = at.and_then(|v| v.get(&key));
                path = child(&path, &key);
            }
        }
    }
    path
}

/// The path of property `key` of the value at `path`.
fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Where the original stops checking a value: `const`, then `enum`, then
/// `anyOf`, then `type` (a lower rank first).
fn stop_rank(problem: &Problem) -> Option<u8> {
    match problem {
        Problem::Const(_) => Some(0),
        Problem::Enum { .. } => Some(1),
        Problem::AnyOf | Problem::OneOfNone | Problem::OneOfMany => Some(2),
        Problem::Type(_) => Some(3),
        _ => None,
    }
}

/// Whether `pointer` is `ancestor` or below it.
fn within(ancestor: &str, pointer: &str) -> bool {
    pointer
        .strip_prefix(ancestor)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// One step of [`walk_order`]: a check of the value itself (`phase` 0,
/// `rank` the keyword's place), a value below it (`phase` 1, `child` its
/// index or property name), or the properties `additionalProperties`
/// rejects (`phase` 2).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Step {
    phase: u8,
    child: Option<Child>,
    rank: u8,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Child {
    Index(usize),
    Name(String),
}

/// Where the original reports `found`: it walks the value depth first
/// and, at each value, checks `const`, `enum`, `anyOf`, `type`, the string
/// keywords, the number keywords and the array keywords in that order,
/// then the items one by one, then `required`, the properties (here by
/// name: the schema's own order is not kept) and last the properties
/// `additionalProperties` rejects.
fn walk_order(found: &Found, instance: &Value) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut at = Some(instance);
    for segment in segments(&found.pointer) {
        let child = match at {
            Some(Value::Array(items)) => match segment.parse::<usize>() {
                Ok(i) => {
                    at = items.get(i);
                    Child::Index(i)
                }
                Err(_) => {
                    at = None;
                    Child::Name(segment)
                }
            },
            _ => {
                at = at.and_then(|v| v.get(&segment));
                Child::Name(segment)
            }
        };
        steps.push(Step {
            phase: 1,
            child: Some(child),
            rank: 0,
        });
    }
    let (phase, rank) = match &found.problem {
        Problem::Const(_) => (0, 0),
        Problem::Enum { .. } => (0, 1),
        Problem::AnyOf | Problem::OneOfNone | Problem::OneOfMany => (0, 2),
        Problem::Type(_) => (0, 3),
        Problem::MinLength(_) => (0, 4),
        Problem::MaxLength(_) => (0, 5),
        Problem::Pattern(_) => (0, 6),
        Problem::Format(_) => (0, 7),
        Problem::Minimum(_) => (0, 8),
        Problem::Maximum(_) => (0, 9),
        Problem::ExclusiveMinimum(_) => (0, 10),
        Problem::ExclusiveMaximum(_) => (0, 11),
        Problem::MultipleOf(_) => (0, 12),
        Problem::MinItems(_) => (0, 13),
        Problem::MaxItems(_) => (0, 14),
        Problem::UniqueItems => (0, 15),
        Problem::Required(_) => (0, 18),
        Problem::NotAllowed(_) | Problem::NoProperties => (2, 0),
        // Not the original's keywords: after its own checks of the value.
        _ => (0, 16),
    };
    steps.push(Step {
        phase,
        child: None,
        rank,
    });
    steps
}

/// How many issues `found` becomes.
#[cfg(feature = "dynamic")]
pub(super) fn issue_count(found: &Found, instance: &Value) -> usize {
    match &found.problem {
        Problem::NotAllowed(names) => names.len().max(1),
        Problem::NoProperties => value_at(instance, &found.pointer)
            .and_then(Value::as_object)
            .map_or(1, |o| o.len().max(1)),
        _ => 1,
    }
}

/// The issues of `found` (errors of `instance`), at most `limit`, and
/// whether some were left out: the errors the original would not have
/// reached dropped (see the module doc), one issue per rejected property.
pub(super) fn issues(
    found: &[Found],
    instance: &Value,
    schema: &Value,
    limit: usize,
) -> (Vec<Value>, bool) {
    let reached = |f: &Found| {
        !found.iter().any(|g| {
            let Some(stop) = stop_rank(&g.problem) else {
                return false;
            };
            !std::ptr::eq(f, g)
                && within(&g.pointer, &f.pointer)
                && (g.pointer != f.pointer || stop_rank(&f.problem).is_none_or(|own| stop < own))
        })
    };
    let mut listed: Vec<&Found> = found.iter().filter(|f| reached(f)).collect();
    // Stable: the validator's order where the original's does not decide.
    listed.sort_by_cached_key(|f| walk_order(f, instance));
    let mut out = Vec::new();
    let mut truncated = false;
    for f in listed {
        let at = path_of(instance, &f.pointer);
        let mut push = |path: String, message: String| {
            if out.len() < limit {
                out.push(
                    serde_json::json!({"path": path, "message": message, "keyword": f.keyword}),
                );
            } else {
                truncated = true;
            }
        };
        match &f.problem {
            Problem::Required(name) => push(child(&at, name), "is required".into()),
            Problem::NotAllowed(names) if !names.is_empty() => {
                for name in names {
                    push(child(&at, name), "is not an allowed property".into());
                }
            }
            Problem::NoProperties => {
                match value_at(instance, &f.pointer).and_then(Value::as_object) {
                    Some(object) if !object.is_empty() => {
                        for name in object.keys() {
                            push(child(&at, name), "is not an allowed property".into());
                        }
                    }
                    _ => push(at.clone(), "is not allowed".into()),
                }
            }
            problem => push(at.clone(), message(problem, instance, schema, &f.pointer)),
        }
    }
    (out, truncated)
}

/// The original's message for `problem` (this project's, in its style,
/// for the keywords the original does not check).
fn message(problem: &Problem, instance: &Value, schema: &Value, pointer: &str) -> String {
    let n = js_number;
    match problem {
        Problem::Type(types) => {
            let got = value_at(instance, pointer).map_or("undefined", crate::json::type_name);
            format!(
                "expected {}, got {got}",
                type_order(types, instance, schema, pointer).join(" | ")
            )
        }
        Problem::Required(_) => "is required".into(),
        Problem::NotAllowed(_) | Problem::NoProperties => "is not an allowed property".into(),
        Problem::Const(value) => format!("must equal the constant {}", canonical_json(value)),
        Problem::Enum { shown, total } if shown.len() == *total => {
            format!(
                "must be one of {}",
                canonical_json(&Value::Array(shown.clone()))
            )
        }
        Problem::Enum { shown, total } => {
            let listed: Vec<String> = shown.iter().map(canonical_json).collect();
            format!("must be one of [{},…] ({total} values)", listed.join(","))
        }
        Problem::AnyOf | Problem::OneOfNone => "does not match any allowed variant".into(),
        Problem::OneOfMany => "matches more than one allowed variant".into(),
        Problem::MinLength(x) => format!("must be at least {} characters", n(x)),
        Problem::MaxLength(x) => format!("must be at most {} characters", n(x)),
        Problem::Pattern(source) => format!("must match pattern {source}"),
        Problem::Format(name) => format!("must be a valid {name}"),
        Problem::Minimum(x) => format!("must be >= {}", n(x)),
        Problem::Maximum(x) => format!("must be <= {}", n(x)),
        Problem::ExclusiveMinimum(x) => format!("must be > {}", n(x)),
        Problem::ExclusiveMaximum(x) => format!("must be < {}", n(x)),
        Problem::MultipleOf(x) => format!("must be a multiple of {}", n(x)),
        Problem::MinItems(x) => format!("must have at least {} items", n(x)),
        Problem::MaxItems(x) | Problem::AdditionalItems(x) => {
            format!("must have at most {} items", n(x))
        }
        Problem::UniqueItems => "items must be unique".into(),
        Problem::MinProperties(x) => format!("must have at least {} properties", n(x)),
        Problem::MaxProperties(x) => format!("must have at most {} properties", n(x)),
        Problem::PropertyNames => "has a property name that is not allowed".into(),
        Problem::Contains => "must contain enough items matching the 'contains' schema".into(),
        Problem::Not => "must not match the 'not' schema".into(),
        Problem::FalseSchema => "is not allowed".into(),
        Problem::UnevaluatedItems => "has items that are not allowed".into(),
        Problem::TooDeep => "nests too deeply to validate".into(),
        Problem::Other(message) => message.clone(),
    }
}

/// The allowed types in the schema's order when the schema at `pointer`
/// lists the same ones, else in the validator's order with `null` last
/// (where schema generators put it).
fn type_order(
    types: &[&'static str],
    instance: &Value,
    schema: &Value,
    pointer: &str,
) -> Vec<&'static str> {
    if types.len() > 1 {
        let listed = schema_at(schema, instance, pointer)
            .and_then(|node| find(schema, node, &|n| n.get("type")))
            .and_then(Value::as_array);
        if let Some(listed) = listed {
            let ordered: Vec<&'static str> = listed
                .iter()
                .filter_map(|t| types.iter().find(|own| Some(**own) == t.as_str()).copied())
                .collect();
            if ordered.len() == types.len() && types.iter().all(|t| ordered.contains(t)) {
                return ordered;
            }
        }
    }
    let mut ordered: Vec<&'static str> = types.iter().copied().filter(|t| *t != "null").collect();
    if types.contains(&"null") {
        ordered.push("null");
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_values_are_written_as_javascript_writes_them() {
        let found = |problem: Problem| Found {
            pointer: String::new(),
            keyword: "k".into(),
            problem,
        };
        let number = |text: &str| serde_json::from_str::<Number>(text).unwrap();
        for (problem, message) in [
            (Problem::Maximum(number("1e21")), "must be <= 1e+21"),
            (Problem::Minimum(number("1.0")), "must be >= 1"),
            (
                Problem::ExclusiveMinimum(number("0.0000001")),
                "must be > 1e-7",
            ),
            (
                Problem::MinLength(3.into()),
                "must be at least 3 characters",
            ),
            (
                Problem::Const(json!({"b": [1.0, "x\n\"y\""], "a": null})),
                r#"must equal the constant {"a":null,"b":[1,"x\n\"y\""]}"#,
            ),
            (
                Problem::Enum {
                    shown: vec![json!(2.50), json!("a")],
                    total: 2,
                },
                r#"must be one of [2.5,"a"]"#,
            ),
        ] {
            assert_eq!(
                issues(&[found(problem)], &Value::Null, &Value::Null, 32).0[0]["message"],
                json!(message)
            );
        }
    }

    fn generated(keyword: &'static str, message: &str, instance: &Value) -> Problem {
        let error = crate::validation::ValidationError {
            instance_path: String::new(),
            keyword,
            message: message.to_string().into(),
            field: None,
        };
        super::generated(&error, instance, &Value::Null).problem
    }

    #[test]
    fn generated_messages_are_read_back() {
        let n = |text: &str| serde_json::from_str::<Number>(text).unwrap();
        let object = json!({"a": 1, "a', 'b": 2, "b": 3, "c": 4});
        for (keyword, message, problem) in [
            (
                "type",
                r#"value is not of type "string""#,
                Problem::Type(vec!["string"]),
            ),
            (
                "type",
                r#"value is not of types "null", "string""#,
                Problem::Type(vec!["null", "string"]),
            ),
            (
                "type",
                r#"value is not of type "text""#,
                Problem::Other(r#"value is not of type "text""#.into()),
            ),
            (
                "required",
                r#""a \"b\"" is a required property"#,
                Problem::Required("a \"b\"".into()),
            ),
            (
                "additionalProperties",
                "Additional properties are not allowed ('a', 'c' were unexpected)",
                Problem::NotAllowed(vec!["a".into(), "c".into()]),
            ),
            (
                "additionalProperties",
                "Additional properties are not allowed ('a', 'b' were unexpected)",
                Problem::NotAllowed(vec!["a".into(), "b".into()]),
            ),
            (
                "additionalProperties",
                "Additional properties are not allowed ('a', 'b', 'c' were unexpected)",
                Problem::NotAllowed(vec!["a".into(), "b".into(), "c".into()]),
            ),
            (
                "additionalProperties",
                "Additional properties are not allowed ('a', 'b' was unexpected)",
                Problem::NotAllowed(vec!["a', 'b".into()]),
            ),
            (
                "const",
                r#"{"x":[1.0]} was expected"#,
                Problem::Const(json!({"x": [1.0]})),
            ),
            (
                "enum",
                r#"value is not one of "a, b", 1 or null"#,
                Problem::Enum {
                    shown: vec![json!("a, b"), json!(1), json!(null)],
                    total: 3,
                },
            ),
            (
                "enum",
                r#"value is not one of "x or y", 2 or 3 other candidates"#,
                Problem::Enum {
                    shown: vec![json!("x or y"), json!(2)],
                    total: 5,
                },
            ),
            (
                "minLength",
                "value is shorter than 1 character",
                Problem::MinLength(n("1")),
            ),
            (
                "maxLength",
                "value is longer than 10 characters",
                Problem::MaxLength(n("10")),
            ),
            (
                "pattern",
                r#"value does not match "^a"b$""#,
                Problem::Pattern("^a\"b$".into()),
            ),
            (
                "format",
                r#"value is not a "date-time""#,
                Problem::Format("date-time".into()),
            ),
            (
                "minimum",
                "value is less than the minimum of 1.5",
                Problem::Minimum(n("1.5")),
            ),
            (
                "maximum",
                "value is greater than the maximum of 1e21",
                Problem::Maximum(n("1e21")),
            ),
            (
                "exclusiveMinimum",
                "value is less than or equal to the minimum of 0",
                Problem::ExclusiveMinimum(n("0")),
            ),
            (
                "exclusiveMaximum",
                "value is greater than or equal to the maximum of -1",
                Problem::ExclusiveMaximum(n("-1")),
            ),
            (
                "multipleOf",
                "value is not a multiple of 0.1",
                Problem::MultipleOf(n("0.1")),
            ),
            (
                "minProperties",
                "value has less than 1 property",
                Problem::MinProperties(n("1")),
            ),
            (
                "maxProperties",
                "value has more than 2 properties",
                Problem::MaxProperties(n("2")),
            ),
            (
                "anyOf",
                "value is not valid under any of the schemas listed in the 'anyOf' keyword",
                Problem::AnyOf,
            ),
            (
                "oneOf",
                "value is valid under more than one of the schemas listed in the 'oneOf' keyword",
                Problem::OneOfMany,
            ),
            (
                "oneOf",
                "value is not valid under any of the schemas listed in the 'oneOf' keyword",
                Problem::OneOfNone,
            ),
            (
                "$ref",
                "value nests too deeply to validate",
                Problem::TooDeep,
            ),
            (
                "falseSchema",
                "False schema does not allow value",
                Problem::NoProperties,
            ),
            (
                "x-custom",
                "a message of ours",
                Problem::Other("a message of ours".into()),
            ),
        ] {
            assert_eq!(
                generated(keyword, message, &object),
                problem,
                "{keyword}: {message}"
            );
        }
        let items = json!([1, 2, 3]);
        assert_eq!(
            generated("minItems", "value has less than 4 items", &items),
            Problem::MinItems(n("4"))
        );
        assert_eq!(
            generated("maxItems", "value has more than 1 item", &items),
            Problem::MaxItems(n("1"))
        );
        assert_eq!(
            generated("uniqueItems", "value has non-unique elements", &items),
            Problem::UniqueItems
        );
        assert_eq!(
            generated(
                "additionalItems",
                "Additional items are not allowed (2 items)",
                &items
            ),
            Problem::AdditionalItems(n("1"))
        );
        assert_eq!(
            generated("falseSchema", "False schema does not allow value", &items),
            Problem::FalseSchema
        );
    }

    #[test]
    fn the_schema_completes_a_cut_enum_and_orders_types() {
        let schema = json!({
            "type": "object",
            "$defs": {"level": {"enum": ["low", "mid", "high", "max", "off"]}},
            "properties": {
                "levels": {"type": "array", "items": {"$ref": "#/$defs/level"}},
                "maybe": {"type": ["string", "null", "integer"]},
                "closed": {"type": "object", "additionalProperties": false},
                "never": false
            }
        });
        let instance = json!({"levels": ["none"], "maybe": [1], "closed": {"b": 1, "a": 2}, "never": {"x": 1}});
        let error =
            |path: &str, keyword: &'static str, message: &str| crate::validation::ValidationError {
                instance_path: path.into(),
                keyword,
                message: message.to_string().into(),
                field: None,
            };
        let found: Vec<Found> = [
            error(
                "/levels/0",
                "enum",
                r#"value is not one of "low", "mid" or 3 other candidates"#,
            ),
            error(
                "/maybe",
                "type",
                r#"value is not of types "null", "integer", "string""#,
            ),
            error(
                "/closed",
                "falseSchema",
                "False schema does not allow value",
            ),
            error("/never", "falseSchema", "False schema does not allow value"),
        ]
        .iter()
        .map(|e| super::generated(e, &instance, &schema))
        .collect();
        let (listed, truncated) = issues(&found, &instance, &schema, 32);
        assert!(!truncated);
        assert_eq!(
            listed,
            [
                json!({"path": "closed.a", "message": "is not an allowed property", "keyword": "additionalProperties"}),
                json!({"path": "closed.b", "message": "is not an allowed property", "keyword": "additionalProperties"}),
                json!({"path": "levels[0]", "message": r#"must be one of ["low","mid","high","max","off"]"#, "keyword": "enum"}),
                json!({"path": "maybe", "message": "expected string | null | integer, got array", "keyword": "type"}),
                json!({"path": "never", "message": "is not allowed", "keyword": "falseSchema"}),
            ]
        );
        // Without the schema: the options the message names, and `null`
        // last.
        let found: Vec<Found> = [
            error(
                "/levels/0",
                "enum",
                r#"value is not one of "low", "mid" or 3 other candidates"#,
            ),
            error(
                "/maybe",
                "type",
                r#"value is not of types "null", "integer", "string""#,
            ),
        ]
        .iter()
        .map(|e| super::generated(e, &instance, &Value::Null))
        .collect();
        assert_eq!(
            issues(&found, &instance, &Value::Null, 32).0,
            [
                json!({"path": "levels[0]", "message": r#"must be one of ["low","mid",…] (5 values)"#, "keyword": "enum"}),
                json!({"path": "maybe", "message": "expected integer | string | null, got array", "keyword": "type"}),
            ]
        );
    }

    #[test]
    fn what_the_original_would_not_reach_is_left_out_and_the_rest_in_its_order() {
        let instance = json!({"a": {"b": 5}, "z": "x", "extra": 1});
        let found = |pointer: &str, keyword: &str, problem: Problem| Found {
            pointer: pointer.into(),
            keyword: keyword.into(),
            problem,
        };
        let all = [
            found(
                "",
                "additionalProperties",
                Problem::NotAllowed(vec!["extra".into()]),
            ),
            found("/a/b", "type", Problem::Type(vec!["string"])),
            found(
                "/a",
                "enum",
                Problem::Enum {
                    shown: vec![json!(1)],
                    total: 1,
                },
            ),
            found("/z", "maxLength", Problem::MaxLength(0.into())),
            found("/z", "type", Problem::Type(vec!["integer"])),
            found("/z", "const", Problem::Const(json!(1))),
            found("", "required", Problem::Required("id".into())),
            found("", "type", Problem::Type(vec!["integer"])),
        ];
        // `type` at the input itself: nothing else.
        assert_eq!(
            issues(&all, &instance, &Value::Null, 32).0,
            [json!({"path": "", "message": "expected integer, got object", "keyword": "type"})]
        );
        assert_eq!(
            issues(&all[..7], &instance, &Value::Null, 32).0,
            [
                json!({"path": "id", "message": "is required", "keyword": "required"}),
                json!({"path": "a", "message": "must be one of [1]", "keyword": "enum"}),
                json!({"path": "z", "message": "must equal the constant 1", "keyword": "const"}),
                json!({"path": "extra", "message": "is not an allowed property", "keyword": "additionalProperties"}),
            ]
        );
        // The cap, counted in issues.
        let (listed, truncated) = issues(&all[..7], &instance, &Value::Null, 3);
        assert_eq!(listed.len(), 3);
        assert!(truncated);
    }
}
