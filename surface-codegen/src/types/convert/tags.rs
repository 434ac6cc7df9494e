//! The tag of a union: a property every arm pins to a distinct string
//! (serde's internally tagged enum), OpenAPI's `discriminator`, or a tag
//! that is optional somewhere (then the union stays untagged).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::keywords::{required_set, string_const};
use super::refs::{ref_name, same_ref};

/// The property that discriminates every arm, and each arm's value: each
/// arm is an object that requires it with a distinct string `const` (or
/// one-value `enum`).
pub(super) fn discriminator(arms: &[&Value]) -> Option<(String, Vec<String>)> {
    let first = arms.first()?.get("properties")?.as_object()?;
    // Each arm's `properties` and `required`, looked at once (not once per
    // candidate: linear in the arms' size).
    let mut shapes = Vec::with_capacity(arms.len());
    for arm in arms {
        let arm = arm.as_object()?;
        if arm.contains_key("anyOf") || arm.contains_key("oneOf") || arm.contains_key("allOf") {
            return None;
        }
        let required: HashSet<&str> = arm
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        shapes.push((arm.get("properties"), required));
    }
    'candidates: for candidate in first.keys() {
        let mut seen = HashSet::new();
        let mut values = Vec::with_capacity(shapes.len());
        for (properties, required) in &shapes {
            let value = properties
                .and_then(|p| p.get(candidate))
                .and_then(string_const);
            match value {
                Some(value) if required.contains(candidate.as_str()) => {
                    if !seen.insert(value) {
                        continue 'candidates;
                    }
                    values.push(value.to_string());
                }
                _ => continue 'candidates,
            }
        }
        return Some((candidate.clone(), values));
    }
    None
}

/// OpenAPI's `discriminator: {propertyName, mapping?}` when the arms'
/// tag property is not a `const` (a plain `type: string`): each arm must
/// be an object that requires the property, and its value is the arm's
/// `const` if it has one, else the one `mapping` key naming the arm's
/// `$ref`, else (no key names it) the last segment of the `$ref`, as
/// OpenAPI defines. `None` (untagged) when an arm is not a `$ref` without
/// a `const`, two keys name one arm (serde would write only one of them
/// back), or two arms get the same value.
pub(super) fn openapi_discriminator(
    root: &Value,
    s: &Map<String, Value>,
    raw_arms: &[(usize, &Value)],
    arms: &[&Value],
) -> Option<(String, Vec<String>)> {
    let discriminator = s.get("discriminator")?.as_object()?;
    let tag = discriminator.get("propertyName")?.as_str()?;
    let mapping = discriminator.get("mapping").and_then(Value::as_object);
    let mut seen = HashSet::new();
    let mut values = Vec::with_capacity(arms.len());
    for ((_, raw), arm) in raw_arms.iter().zip(arms) {
        let arm = arm.as_object()?;
        if ["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|k| arm.contains_key(*k))
            || !required_set(arm).iter().any(|r| r == tag)
        {
            return None;
        }
        let property = arm.get("properties").and_then(|p| p.get(tag));
        if property.is_some_and(|p| {
            p.get("type").is_some_and(|t| t != "string")
                || p.get("enum").is_some() && string_const(p).is_none()
        }) {
            return None;
        }
        let value = match property.and_then(string_const) {
            Some(value) => value.to_string(),
            None => {
                let reference = raw.get("$ref")?.as_str()?;
                let keys: Vec<&String> = mapping
                    .into_iter()
                    .flatten()
                    .filter(|(_, target)| {
                        target
                            .as_str()
                            .is_some_and(|target| same_ref(root, target, reference))
                    })
                    .map(|(key, _)| key)
                    .collect();
                match keys.as_slice() {
                    [key] => (*key).clone(),
                    [] => ref_name(root, reference)?,
                    _ => return None,
                }
            }
        };
        if !seen.insert(value.clone()) {
            return None;
        }
        values.push(value);
    }
    Some((tag.to_string(), values))
}

/// A property that looks like a tag but is optional in (or missing from)
/// some arm: every arm that has it pins it to a string, the values are
/// distinct, and at least two arms have it.
pub(super) fn optional_tag(arms: &[&Value]) -> Option<String> {
    let first = arms
        .iter()
        .find_map(|arm| arm.get("properties").and_then(Value::as_object))?;
    'candidates: for candidate in first.keys() {
        let mut seen = HashSet::new();
        let mut optional = false;
        for arm in arms {
            let Some(arm) = arm.as_object() else {
                continue 'candidates;
            };
            match arm.get("properties").and_then(|p| p.get(candidate)) {
                None => optional = true,
                Some(property) => match string_const(property) {
                    Some(value) if seen.insert(value) => {
                        optional |= !required_set(arm).iter().any(|r| r == candidate);
                    }
                    _ => continue 'candidates,
                },
            }
        }
        if optional && seen.len() >= 2 {
            return Some(candidate.clone());
        }
    }
    None
}
