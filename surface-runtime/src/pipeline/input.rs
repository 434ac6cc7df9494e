//! Phase 5 of the pipeline: the effective input (`docs/bindings.md`).
//! Locked fields are rejected before the merge (rule 2), `bind()` runs on
//! live state (rule 4), the agent's value wins for overridable fields
//! (rule 3), and the merged object is validated once against the **full**
//! input schema (rule 5); an error that concerns a value `bind()` produced
//! is the binding's fault (`binding-failed`), not the agent's.

mod issues;

#[cfg(feature = "dynamic")]
use jsonschema::paths::LocationSegment;
use serde_json::{json, Map, Value};

use self::issues::Found;
use super::{fail, Failure};
use crate::audit::Phase;
use crate::invocation::{ErrorCode, Retry};
use crate::registry::{ProcedureEntry, Registered, SchemaCheck};

/// The message of every `INVALID_INPUT` with `details.issues` (the
/// original's, whatever the issues).
const INVALID_INPUT_MESSAGE: &str =
    "The input does not match the capability's schema. Fix the listed issues and retry.";

/// Phase 5: the effective input of a call resolved to `target`, validated.
pub(super) fn effective_input(target: &Registered, agent: Value) -> Result<Value, Failure> {
    match target {
        Registered::View(c, i) => {
            let view = &c.views[*i];
            // As the original parses an action's input: a non-object is
            // checked against the schema too (`expected object, got
            // array`); one the schema admits still breaks the rule that an
            // input is an object.
            let value = match agent {
                Value::Null => Value::Object(Map::new()),
                other => other,
            };
            match validation_errors(&view.validator, &value, &view.input_schema, &|_| false) {
                Some(invalid) => Err(invalid.into_failure(&value, &view.input_schema)),
                None if value.is_object() => Ok(value),
                None => Err(not_an_object()),
            }
        }
        Registered::Procedure(p) => match agent {
            Value::Object(map) => procedure_input(p, map),
            Value::Null => procedure_input(p, Map::new()),
            _ => Err(not_an_object()),
        },
    }
}

/// `INVALID_INPUT` for an input that is not an object (`null` is `{}`), as
/// the original answers a procedure's: one issue at the input itself,
/// `input must be an object`.
fn not_an_object() -> Failure {
    fail(
        Phase::Input,
        ErrorCode::InvalidInput,
        INVALID_INPUT_MESSAGE,
        Retry::WithChanges,
    )
    .detail(
        "issues",
        json!([{"path": "", "message": "input must be an object", "keyword": "type"}]),
    )
}

/// Rules 2–5 for a procedure binding.
fn procedure_input(p: &ProcedureEntry, mut agent: Map<String, Value>) -> Result<Value, Failure> {
    let overridden = reject_locked(p, &agent)?;
    merge_bound(p, &mut agent)?;
    let effective = Value::Object(agent);
    // Attribute each error: to the binding when it concerns a bound field
    // whose value came from bind() (not overridden by the agent), else to
    // the agent.
    let from_binding = |field: &str| {
        p.bound
            .iter()
            .enumerate()
            .any(|(i, f)| f.path == field && !overridden.contains(&i))
    };
    match validation_errors(&p.validator, &effective, &p.agent_schema, &from_binding) {
        None => Ok(effective),
        Some(invalid) if invalid.binding_fault => Err(binding_failed()
            .internal(json!({"errors": invalid.errors, "errorsTruncated": invalid.truncated}))),
        Some(invalid) => Err(invalid.into_failure(&effective, &p.agent_schema)),
    }
}

/// Rule 2, before the merge: agent values for locked fields are
/// `INVALID_INPUT` (`details.lockedFields`). Returns the indexes of the
/// bound fields the agent overrode (overridable ones).
fn reject_locked(p: &ProcedureEntry, agent: &Map<String, Value>) -> Result<Vec<usize>, Failure> {
    let mut sets_locked = false;
    let mut overridden: Vec<usize> = Vec::new();
    for (i, f) in p.bound.iter().enumerate() {
        if agent.contains_key(&f.path) {
            if f.locked {
                sets_locked = true;
            } else {
                overridden.push(i);
            }
        }
    }
    if !sets_locked {
        return Ok(overridden);
    }
    let locked: Vec<&str> = p
        .bound
        .iter()
        .filter(|f| f.locked && agent.contains_key(&f.path))
        .map(|f| f.path.as_str())
        .collect();
    Err(fail(
        Phase::Input,
        ErrorCode::InvalidInput,
        "Some fields are bound to the application's UI state and cannot be supplied by the agent. Omit them and retry.",
        Retry::WithChanges,
    )
    .detail("lockedFields", locked))
}

/// Rules 3 and 4: `bind()` on live state, merged under the agent's values
/// (which only overridable fields can carry by now). A failing `bind()` or
/// a value for an undeclared field is `binding-failed`.
fn merge_bound(p: &ProcedureEntry, agent: &mut Map<String, Value>) -> Result<(), Failure> {
    let Some(bind) = &p.bind else {
        return Ok(());
    };
    let bound =
        bind().map_err(|err| binding_failed().internal(json!({"bindError": err.to_string()})))?;
    for (key, value) in bound {
        if !p.bound.iter().any(|f| f.path == key) {
            return Err(binding_failed().internal(json!({"undeclaredBoundField": key})));
        }
        // The agent's value wins for overridable fields.
        agent.entry(key).or_insert(value);
    }
    Ok(())
}

/// `PRECONDITION_FAILED`, `details.reason: "binding-failed"`, retry
/// `after-refresh` (the view's state must change first).
fn binding_failed() -> Failure {
    fail(
        Phase::Input,
        ErrorCode::PreconditionFailed,
        "The application could not bind this call's inputs from the current view.",
        Retry::AfterRefresh,
    )
    .detail("reason", "binding-failed")
}

/// The most issues one `INVALID_INPUT` lists in `details.issues` (the
/// first ones the validator reports; each property `additionalProperties`
/// rejects is one). Without the cap a 262,144-character array of
/// wrong-typed items would turn into an error list a hundred times its
/// size, recorded for replay.
pub const MAX_REPORTED_VALIDATION_ERRORS: usize = 32;

/// Why an input failed its schema: the first errors, read
/// ([`issues::Found`]), as many as make at most
/// [`MAX_REPORTED_VALIDATION_ERRORS`] issues; the same errors as the
/// validator wrote them (`{"instancePath","keyword","message"}`, for the
/// audit record of a binding's fault); whether more were left out; and
/// whether any error (listed or not) concerns a top-level field for which
/// `from_binding` is true.
struct Invalid {
    found: Vec<Found>,
    errors: Vec<Value>,
    truncated: bool,
    binding_fault: bool,
}

impl Invalid {
    /// `INVALID_INPUT` with `details.issues` (at most
    /// [`MAX_REPORTED_VALIDATION_ERRORS`]; whether some were left out goes
    /// to audit only) for the invalid `instance` of `schema`, in the shape
    /// and words of agent-surface's own validator ([`issues`]).
    fn into_failure(self, instance: &Value, schema: &Value) -> Failure {
        let (issues, cut) = issues::issues(
            &self.found,
            instance,
            schema,
            MAX_REPORTED_VALIDATION_ERRORS,
        );
        fail(
            Phase::Input,
            ErrorCode::InvalidInput,
            INVALID_INPUT_MESSAGE,
            Retry::WithChanges,
        )
        .detail("issues", issues)
        .internal(json!({"errorsTruncated": self.truncated || cut}))
    }
}

/// Validates `instance` (of `schema`, which the validator checks); `None`
/// when valid. Messages are masked: they never echo instance values.
/// Memory stays bounded by the cap whatever the number of errors (they are
/// visited once, lazily).
fn validation_errors(
    check: &SchemaCheck,
    instance: &Value,
    schema: &Value,
    from_binding: &dyn Fn(&str) -> bool,
) -> Option<Invalid> {
    match check {
        SchemaCheck::Generated(validator) => {
            generated_errors(validator, instance, schema, from_binding)
        }
        #[cfg(feature = "dynamic")]
        SchemaCheck::Compiled(validator) => {
            compiled_errors(validator, instance, schema, from_binding)
        }
    }
}

/// [`validation_errors`] with a validator `manifest!` generated.
fn generated_errors(
    validator: &crate::validation::Validator,
    instance: &Value,
    schema: &Value,
    from_binding: &dyn Fn(&str) -> bool,
) -> Option<Invalid> {
    if validator.is_valid(instance) {
        return None;
    }
    let limited = validator.errors_limited(instance, MAX_REPORTED_VALIDATION_ERRORS);
    let binding_fault = limited
        .errors
        .iter()
        .filter_map(|e| e.field.as_deref())
        .chain(limited.unlisted_fields.iter().map(String::as_str))
        .any(from_binding);
    let found = limited
        .errors
        .iter()
        .map(|e| issues::generated(e, instance, schema))
        .collect();
    let errors = limited
        .errors
        .iter()
        .map(|e| {
            let mut json = e.to_json();
            // The missing property of a `required` error at the input
            // itself (nested ones are named by the message).
            if e.keyword == "required" && e.instance_path.is_empty() {
                if let Some(field) = &e.field {
                    json["property"] = json!(field);
                }
            }
            json
        })
        .collect();
    Some(Invalid {
        found,
        errors,
        truncated: limited.truncated,
        binding_fault,
    })
}

/// [`validation_errors`] with a validator compiled at registration.
#[cfg(feature = "dynamic")]
fn compiled_errors(
    validator: &jsonschema::Validator,
    instance: &Value,
    schema: &Value,
    from_binding: &dyn Fn(&str) -> bool,
) -> Option<Invalid> {
    if validator.is_valid(instance) {
        return None;
    }
    let mut invalid = Invalid {
        found: Vec::new(),
        errors: Vec::new(),
        truncated: false,
        binding_fault: false,
    };
    let mut listed_issues = 0;
    for e in validator.iter_errors(instance) {
        if !invalid.binding_fault {
            let field = match e.instance_path().iter().next() {
                Some(LocationSegment::Property(p)) => Some(p.to_string()),
                _ => match e.kind() {
                    jsonschema::error::ValidationErrorKind::Required { property } => {
                        property.as_str().map(str::to_string)
                    }
                    _ => None,
                },
            };
            invalid.binding_fault = field.as_deref().is_some_and(from_binding);
        }
        if listed_issues < MAX_REPORTED_VALIDATION_ERRORS {
            let found = issues::compiled(&e, instance, schema);
            listed_issues += issues::issue_count(&found, instance);
            invalid.found.push(found);
            let mut error = json!({
                "instancePath": e.instance_path().as_str(),
                "keyword": e.kind().keyword(),
                "message": e.masked().to_string(),
            });
            if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind() {
                if let Some(name) = property.as_str() {
                    error["property"] = json!(name);
                }
            }
            invalid.errors.push(error);
        } else {
            invalid.truncated = true;
            if invalid.binding_fault {
                break;
            }
        }
    }
    Some(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "dynamic")]
    #[test]
    fn validation_errors_name_the_field_and_never_echo_values() {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 3}, "id": {}},
            "required": ["id"],
            "additionalProperties": false
        });
        let validator = jsonschema::validator_for(&schema).unwrap();
        let instance = json!({"name": "secret-value", "zz": 1});
        let invalid = compiled_errors(&validator, &instance, &schema, &|_| false).unwrap();
        let mut keywords: Vec<&str> = invalid
            .errors
            .iter()
            .map(|e| e["keyword"].as_str().unwrap())
            .collect();
        keywords.sort_unstable();
        assert_eq!(keywords, ["additionalProperties", "maxLength", "required"]);
        assert!(!invalid.truncated && !invalid.binding_fault);
        let name_error = invalid
            .errors
            .iter()
            .find(|e| e["keyword"] == "maxLength")
            .unwrap();
        assert_eq!(name_error["instancePath"], json!("/name"));
        let failure = invalid.into_failure(&instance, &schema);
        assert!(!Value::Array(
            compiled_errors(&validator, &instance, &schema, &|_| false)
                .unwrap()
                .errors
        )
        .to_string()
        .contains("secret-value"));
        let mut issues = failure.0.error.details["issues"]
            .as_array()
            .unwrap()
            .clone();
        issues.sort_by_key(|i| i["keyword"].to_string());
        assert_eq!(
            issues,
            [
                json!({"path": "zz", "message": "is not an allowed property", "keyword": "additionalProperties"}),
                json!({"path": "name", "message": "must be at most 3 characters", "keyword": "maxLength"}),
                json!({"path": "id", "message": "is required", "keyword": "required"}),
            ]
        );
        // Errors are attributed to their top-level field (`required` to the
        // missing property).
        for field in ["name", "id"] {
            let blamed = compiled_errors(&validator, &instance, &schema, &|f| f == field).unwrap();
            assert!(blamed.binding_fault, "{field}");
        }
        assert!(compiled_errors(&validator, &json!({"id": 1}), &schema, &|_| true).is_none());
    }

    #[cfg(feature = "dynamic")]
    #[test]
    fn validation_errors_list_at_most_the_cap_and_say_so() {
        let schema = json!({
            "type": "object",
            "properties": {"ids": {"type": "array", "items": {"type": "string"}}, "bound": {"type": "string"}}
        });
        let validator = jsonschema::validator_for(&schema).unwrap();
        let many = json!({"ids": vec![1; 10_000], "bound": 7});
        let invalid = compiled_errors(&validator, &many, &schema, &|_| false).unwrap();
        assert_eq!(invalid.errors.len(), MAX_REPORTED_VALIDATION_ERRORS);
        assert!(invalid.truncated);
        assert!(!invalid.binding_fault);
        // An error beyond the cap still counts for attribution.
        let invalid = compiled_errors(&validator, &many, &schema, &|f| f == "bound").unwrap();
        assert!(invalid.binding_fault);
        let exactly = json!({"ids": vec![1; MAX_REPORTED_VALIDATION_ERRORS]});
        let invalid = compiled_errors(&validator, &exactly, &schema, &|_| false).unwrap();
        assert_eq!(invalid.errors.len(), MAX_REPORTED_VALIDATION_ERRORS);
        assert!(!invalid.truncated);
    }

    /// `{"properties": {"ids": {"items": {"type": "string"}}, "bound": {"type": "string"}}}`, by hand.
    fn ids_valid(i: &Value, _: u32) -> bool {
        let ids_ok = i
            .get("ids")
            .and_then(Value::as_array)
            .is_none_or(|ids| ids.iter().all(Value::is_string));
        ids_ok && i.get("bound").is_none_or(Value::is_string)
    }

    fn ids_collect(
        i: &Value,
        p: &crate::validation::Path<'_>,
        e: &mut crate::validation::Errors,
        _: u32,
    ) {
        if let Some(ids) = i.get("ids").and_then(Value::as_array) {
            let at = p.key("ids");
            for (n, id) in ids.iter().enumerate() {
                if !id.is_string() {
                    e.push(&at.index(n), "type", "value is not of type \"string\"");
                }
            }
        }
        if i.get("bound").is_some_and(|b| !b.is_string()) {
            e.push(&p.key("bound"), "type", "value is not of type \"string\"");
        }
    }

    #[test]
    fn issues_name_their_place_as_the_originals_path_string() {
        let instance = json!({"ids": ["a", 7], "a/b": {"0": 1}, "m~n": [[true]]});
        for (pointer, path) in [
            ("", ""),
            ("/ids/1", "ids[1]"),
            ("/a~1b/0", "a/b.0"),
            ("/m~0n/0/0", "m~n[0][0]"),
            ("/missing/3", "missing.3"),
        ] {
            assert_eq!(issues::path_of(&instance, pointer), path, "{pointer}");
        }
        // A missing property is named by its own path.
        let found = Found {
            pointer: "/a~1b".into(),
            keyword: "required".into(),
            problem: issues::Problem::Required("id".into()),
        };
        assert_eq!(
            issues::issues(&[found], &instance, &Value::Null, 32).0,
            [json!({"path": "a/b.id", "message": "is required", "keyword": "required"})]
        );
    }

    #[test]
    fn generated_errors_list_at_most_the_cap_and_attribute_unlisted_ones() {
        let check =
            SchemaCheck::Generated(crate::validation::Validator::new(ids_valid, ids_collect));
        let many = json!({"ids": vec![1; 10_000], "bound": 7});
        let invalid = validation_errors(&check, &many, &Value::Null, &|_| false).unwrap();
        assert_eq!(invalid.errors.len(), MAX_REPORTED_VALIDATION_ERRORS);
        assert_eq!(
            invalid.errors[0],
            json!({"instancePath": "/ids/0", "keyword": "type", "message": "value is not of type \"string\""})
        );
        assert!(invalid.truncated && !invalid.binding_fault);
        // The error of `bound` comes after the cap and still counts.
        let invalid = validation_errors(&check, &many, &Value::Null, &|f| f == "bound").unwrap();
        assert!(invalid.binding_fault);
        let exactly = json!({"ids": vec![1; MAX_REPORTED_VALIDATION_ERRORS]});
        let invalid = validation_errors(&check, &exactly, &Value::Null, &|_| false).unwrap();
        assert_eq!(invalid.errors.len(), MAX_REPORTED_VALIDATION_ERRORS);
        assert!(!invalid.truncated);
        assert!(
            validation_errors(&check, &json!({"ids": ["a"]}), &Value::Null, &|_| true).is_none()
        );
    }
}
