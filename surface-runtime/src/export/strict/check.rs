//! The strict-mode rules on their own: [`check_strict_schema`] walks a
//! schema and reports the first broken rule with its place.

use serde_json::{Map, Value};
use surface_manifest::schema::push_token;

use super::error::{StrictRule, StrictViolation};
use super::{def_target, pattern_is_portable, StrictLimits, MAX_WALK_DEPTH, SUPPORTED_FORMATS};
use crate::export::schema::value_has_type;

const CHECK_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "title",
    "enum",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
];

fn keyword_fits(keyword: &str, ty: &str) -> bool {
    match keyword {
        "type" | "description" | "title" => true,
        "enum" => matches!(ty, "string" | "number" | "integer" | "boolean"),
        "pattern" | "format" => ty == "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            ty == "number" || ty == "integer"
        }
        "properties" | "required" | "additionalProperties" => ty == "object",
        "items" | "minItems" | "maxItems" => ty == "array",
        _ => false,
    }
}

/// Checks a schema against the strict-mode rules listed in the module docs
/// (OpenAI's rules, tightened where OpenAI's are unclear).
///
/// # Errors
/// The first [`StrictViolation`] found, with its JSON pointer.
pub fn check_strict_schema(schema: &Value, limits: &StrictLimits) -> Result<(), StrictViolation> {
    let violation = |rule| StrictViolation {
        path: String::new(),
        rule,
    };
    let Value::Object(root) = schema else {
        return Err(violation(StrictRule::RootNotObject));
    };
    if root.contains_key("anyOf") {
        return Err(violation(StrictRule::RootUnion));
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(violation(StrictRule::RootNotObject));
    }
    let defs = match root.get("$defs") {
        None => None,
        Some(Value::Object(d)) => Some(d),
        Some(_) => return Err(violation(StrictRule::NotAnObjectSchema)),
    };
    let mut c = Checker {
        limits,
        doc: schema,
        path: String::new(),
        properties: 0,
        chars: 0,
        enum_values: 0,
    };
    let mut body = root.clone();
    body.remove("$defs");
    c.check(&Value::Object(body), 0, 0)?;
    if let Some(defs) = defs {
        for (name, def) in defs {
            c.chars += name.chars().count();
            c.path.clear();
            push_token(&mut c.path, "$defs");
            push_token(&mut c.path, name);
            c.check(def, 0, 0)?;
        }
    }
    c.path.clear();
    if c.properties > limits.max_properties {
        return Err(violation(StrictRule::TooManyProperties));
    }
    if c.chars > limits.max_string_chars {
        return Err(violation(StrictRule::TooManyStringChars));
    }
    if c.enum_values > limits.max_enum_values {
        return Err(violation(StrictRule::TooManyEnumValues));
    }
    Ok(())
}

struct Checker<'a> {
    limits: &'a StrictLimits,
    /// The whole schema checked (its `$ref`s resolve against it).
    doc: &'a Value,
    path: String,
    properties: usize,
    chars: usize,
    enum_values: usize,
}

impl Checker<'_> {
    fn fail(&self, rule: StrictRule) -> StrictViolation {
        StrictViolation {
            path: self.path.clone(),
            rule,
        }
    }

    fn child(
        &mut self,
        tokens: &[&str],
        v: &Value,
        depth: usize,
        objects: usize,
    ) -> Result<(), StrictViolation> {
        let len = self.path.len();
        for t in tokens {
            push_token(&mut self.path, t);
        }
        let out = self.check(v, depth + 1, objects);
        self.path.truncate(len);
        out
    }

    fn check(&mut self, v: &Value, depth: usize, objects: usize) -> Result<(), StrictViolation> {
        if depth > MAX_WALK_DEPTH {
            return Err(self.fail(StrictRule::TooDeep));
        }
        let Value::Object(m) = v else {
            return Err(self.fail(StrictRule::NotAnObjectSchema));
        };
        if let Some(r) = m.get("$ref") {
            return self.check_ref(m, r);
        }
        if let Some(any) = m.get("anyOf") {
            return self.check_any_of(m, any, depth, objects);
        }
        if let Some(k) = m.keys().find(|k| !CHECK_KEYWORDS.contains(&k.as_str())) {
            return Err(self.fail(StrictRule::UnsupportedKeyword(k.clone())));
        }
        let ty = match m.get("type") {
            None => return Err(self.fail(StrictRule::MissingType)),
            Some(Value::String(t))
                if matches!(
                    t.as_str(),
                    "string" | "number" | "integer" | "boolean" | "object" | "array" | "null"
                ) =>
            {
                t.as_str()
            }
            Some(_) => return Err(self.fail(StrictRule::UnsupportedType)),
        };
        if let Some(k) = m.keys().find(|k| !keyword_fits(k, ty)) {
            return Err(self.fail(StrictRule::KeywordNotForType(k.clone())));
        }
        self.check_values(m, ty)?;
        match ty {
            "object" => self.check_object(m, depth, objects + 1),
            "array" => match m.get("items") {
                Some(items) => self.child(&["items"], items, depth, objects),
                None => Err(self.fail(StrictRule::MissingItems)),
            },
            _ => Ok(()),
        }
    }

    /// A `$ref` node: alone, and pointing at the root or a `$defs` entry.
    fn check_ref(&mut self, m: &Map<String, Value>, r: &Value) -> Result<(), StrictViolation> {
        if m.len() != 1 {
            return Err(self.fail(StrictRule::RefWithSiblings));
        }
        if r.as_str().and_then(|r| def_target(self.doc, r)).is_some() {
            Ok(())
        } else {
            Err(self.fail(StrictRule::UnresolvedRef))
        }
    }

    /// An `anyOf` node: only annotations beside it, non-empty, every
    /// branch strict.
    fn check_any_of(
        &mut self,
        m: &Map<String, Value>,
        any: &Value,
        depth: usize,
        objects: usize,
    ) -> Result<(), StrictViolation> {
        if m.keys()
            .any(|k| k != "anyOf" && k != "description" && k != "title")
        {
            return Err(self.fail(StrictRule::KeywordBesideAnyOf));
        }
        let Some(branches) = any.as_array().filter(|b| !b.is_empty()) else {
            return Err(self.fail(StrictRule::EmptyAnyOf));
        };
        for (i, b) in branches.iter().enumerate() {
            self.child(&["anyOf", &i.to_string()], b, depth, objects)?;
        }
        Ok(())
    }

    /// The values of a typed node's keywords: string annotations, a
    /// supported `format`, a portable `pattern`, a typed `enum`, numeric
    /// bounds that are numbers.
    fn check_values(&mut self, m: &Map<String, Value>, ty: &str) -> Result<(), StrictViolation> {
        for key in ["description", "title"] {
            if m.get(key).is_some_and(|d| !d.is_string()) {
                return Err(self.fail(StrictRule::UnsupportedKeyword(key.into())));
            }
        }
        if let Some(f) = m.get("format") {
            if !f.as_str().is_some_and(|f| SUPPORTED_FORMATS.contains(&f)) {
                return Err(self.fail(StrictRule::UnsupportedFormat));
            }
        }
        if let Some(p) = m.get("pattern") {
            if !p.as_str().is_some_and(pattern_is_portable) {
                return Err(self.fail(StrictRule::UnsupportedPattern));
            }
        }
        if let Some(e) = m.get("enum") {
            self.check_enum(e, ty)?;
        }
        for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if m.get(key).is_some_and(|n| !n.is_number()) {
                return Err(self.fail(StrictRule::BadNumber(key.into())));
            }
        }
        if m.get("multipleOf")
            .is_some_and(|n| !n.as_f64().is_some_and(|f| f > 0.0))
        {
            return Err(self.fail(StrictRule::BadNumber("multipleOf".into())));
        }
        for key in ["minItems", "maxItems"] {
            if m.get(key).is_some_and(|n| !n.is_u64()) {
                return Err(self.fail(StrictRule::BadNumber(key.into())));
            }
        }
        Ok(())
    }

    fn check_enum(&mut self, e: &Value, ty: &str) -> Result<(), StrictViolation> {
        let Some(values) = e.as_array().filter(|v| !v.is_empty()) else {
            return Err(self.fail(StrictRule::BadEnum));
        };
        if !values.iter().all(|v| value_has_type(v, ty)) {
            return Err(self.fail(StrictRule::BadEnum));
        }
        self.enum_values += values.len();
        let chars: usize = values
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.chars().count())
            .sum();
        self.chars += chars;
        if ty == "string"
            && values.len() > self.limits.large_enum_values
            && chars > self.limits.large_enum_chars
        {
            return Err(self.fail(StrictRule::LargeEnumTooLong));
        }
        Ok(())
    }

    fn check_object(
        &mut self,
        m: &Map<String, Value>,
        depth: usize,
        objects: usize,
    ) -> Result<(), StrictViolation> {
        if objects > self.limits.max_object_depth {
            return Err(self.fail(StrictRule::TooDeep));
        }
        let Some(Value::Object(props)) = m.get("properties") else {
            return Err(self.fail(StrictRule::MissingProperties));
        };
        if m.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Err(self.fail(StrictRule::AdditionalPropertiesNotFalse));
        }
        let required: Vec<&str> = match m.get("required") {
            Some(Value::Array(r)) if r.iter().all(Value::is_string) => {
                r.iter().filter_map(Value::as_str).collect()
            }
            None => Vec::new(),
            Some(_) => return Err(self.fail(StrictRule::BadRequired)),
        };
        if let Some(name) = props.keys().find(|k| !required.contains(&k.as_str())) {
            return Err(self.fail(StrictRule::PropertyNotRequired(name.clone())));
        }
        if required.len() != props.len() {
            return Err(self.fail(StrictRule::BadRequired));
        }
        self.properties += props.len();
        for (name, p) in props {
            self.chars += name.chars().count();
            self.child(&["properties", name], p, depth, objects)?;
        }
        Ok(())
    }
}
