//! `INVALID_INPUT`'s `details.issues` in the words of agent-surface's own
//! validator (the TypeScript original's `packages/core/src/schema.ts`):
//! every keyword it checks, with its message and path rule, through both
//! validators — the one `view_inputs!` generated and the one the registry
//! compiles from the same schema (`jsonschema`) — which must agree; plus
//! this project's messages for the keywords the original does not check,
//! and the answer to an input that is not an object.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use serde_json::{json, Value};
use surface_runtime::{
    AgentProcedureBinding, ComponentDefinition, Retry, ViewCapability, ViewInput,
};

mod view {
    surface_macros::view_inputs!(
        "tests/common/issue-keywords.json",
        crate = ::surface_runtime
    );
}

const MESSAGE: &str =
    "The input does not match the capability's schema. Fix the listed issues and retry.";

/// A registry with each fixture schema twice: generated (`view_inputs!`)
/// and compiled at registration.
fn forms() -> (Fixture, surface_runtime::RegistrationHandle) {
    fn schema<I: ViewInput>() -> Value {
        serde_json::from_str(I::INPUT_SCHEMA_JSON).unwrap()
    }
    let f = fixture();
    let echo = |v: Value| async move { Ok(v) };
    let handle = f
        .registry
        .register_component(
            ComponentDefinition::new("forms", "main")
                .capability(ViewCapability::new::<view::Keywords, _, _>(
                    "keywordsGenerated",
                    "Keywords, generated validator",
                    |_: view::Keywords| async { Ok(json!({})) },
                ))
                .capability(ViewCapability::with_schema(
                    "keywordsCompiled",
                    "Keywords, compiled validator",
                    schema::<view::Keywords>(),
                    echo,
                ))
                .capability(ViewCapability::new::<view::Extras, _, _>(
                    "extrasGenerated",
                    "Extras, generated validator",
                    |_: view::Extras| async { Ok(json!({})) },
                ))
                .capability(ViewCapability::with_schema(
                    "extrasCompiled",
                    "Extras, compiled validator",
                    schema::<view::Extras>(),
                    echo,
                )),
        )
        .unwrap();
    (f, handle)
}

/// The issues of calling `capability` with `input` (which must fail with
/// the original's `INVALID_INPUT`).
fn issues_of(f: &Fixture, capability: &str, input: &Value) -> Value {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let id = format!("i{}", CALLS.fetch_add(1, Ordering::Relaxed));
    let r = call(&f.registry, &id, capability, input.clone());
    let e = r
        .error()
        .unwrap_or_else(|| panic!("{capability} accepted {input}"));
    assert_eq!(
        (e.code.as_str(), e.message.as_str(), e.retry),
        ("INVALID_INPUT", MESSAGE, Retry::WithChanges),
        "{capability} {input}"
    );
    Value::Object(e.details.clone())["issues"].clone()
}

/// Both validators of `schema` ("keywords" or "extras") answer `input`
/// with exactly `expected`.
fn assert_issues(schema: &str, input: Value, expected: Value) {
    let (f, _h) = forms();
    for validator in ["Generated", "Compiled"] {
        let capability = format!("view:forms.{schema}{validator}");
        assert_eq!(
            issues_of(&f, &capability, &input),
            expected,
            "{capability} {input}"
        );
    }
}

fn one(path: &str, message: &str, keyword: &str) -> Value {
    json!([{"path": path, "message": message, "keyword": keyword}])
}

#[test]
fn type_is_expected_got() {
    assert_issues(
        "keywords",
        json!({"name": "ab", "count": "3"}),
        one("count", "expected integer, got string", "type"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "count": 2.5}),
        one("count", "expected integer, got number", "type"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "tags": ["a", 1]}),
        one("tags[1]", "expected string, got number", "type"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "item": null}),
        one("item", "expected object, got null", "type"),
    );
    // Several types: in the schema's order.
    assert_issues(
        "keywords",
        json!({"name": "ab", "maybe": 5}),
        one("maybe", "expected string | null, got number", "type"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "maybe": [true]}),
        one("maybe", "expected string | null, got array", "type"),
    );
}

#[test]
fn required_is_named_by_its_own_path() {
    assert_issues(
        "keywords",
        json!({}),
        one("name", "is required", "required"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "rows": [{"id": "a"}, {}]}),
        one("rows[1].id", "is required", "required"),
    );
}

#[test]
fn additional_properties_is_one_issue_per_property() {
    assert_issues(
        "keywords",
        json!({"name": "ab", "zzz": {"a": 1}, "aaa": 1}),
        json!([
            {"path": "aaa", "message": "is not an allowed property", "keyword": "additionalProperties"},
            {"path": "zzz", "message": "is not an allowed property", "keyword": "additionalProperties"}
        ]),
    );
    // Nested (a name with a `.` is written as it is, as the original
    // writes it).
    assert_issues(
        "keywords",
        json!({"name": "ab", "item": {"id": "a", "x.y": 1}}),
        one(
            "item.x.y",
            "is not an allowed property",
            "additionalProperties",
        ),
    );
    // Beside a missing property of the same object.
    assert_issues(
        "keywords",
        json!({"name": "ab", "item": {"x": 1}}),
        json!([
            {"path": "item.id", "message": "is required", "keyword": "required"},
            {"path": "item.x", "message": "is not an allowed property", "keyword": "additionalProperties"}
        ]),
    );
    // `additionalProperties: false` with no `properties`: every property.
    assert_issues(
        "keywords",
        json!({"name": "ab", "closed": {"b": 1, "a": 2}}),
        json!([
            {"path": "closed.a", "message": "is not an allowed property", "keyword": "additionalProperties"},
            {"path": "closed.b", "message": "is not an allowed property", "keyword": "additionalProperties"}
        ]),
    );
}

#[test]
fn enum_and_const_list_the_schemas_values_as_json() {
    // All five options, although the generated validator's message
    // names two.
    assert_issues(
        "keywords",
        json!({"name": "ab", "level": "none"}),
        one(
            "level",
            r#"must be one of ["low","mid","high","max","off"]"#,
            "enum",
        ),
    );
    // `enum` is checked before `type`: the one issue.
    assert_issues(
        "keywords",
        json!({"name": "ab", "kind": 5}),
        one("kind", r#"must be one of ["x","y"]"#, "enum"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "mode": "off"}),
        one("mode", r#"must equal the constant "on""#, "const"),
    );
    // Numbers as JavaScript writes them (`1.0` is `1`); keys sorted.
    assert_issues(
        "keywords",
        json!({"name": "ab", "limits": {"max": 2}}),
        one(
            "limits",
            r#"must equal the constant {"ids":[1,2.5],"max":1}"#,
            "const",
        ),
    );
}

#[test]
fn any_of_does_not_match_any_allowed_variant() {
    assert_issues(
        "keywords",
        json!({"name": "ab", "either": 1.5}),
        one("either", "does not match any allowed variant", "anyOf"),
    );
}

#[test]
fn string_keywords() {
    assert_issues(
        "keywords",
        json!({"name": "a"}),
        one("name", "must be at least 2 characters", "minLength"),
    );
    assert_issues(
        "keywords",
        json!({"name": "abcde"}),
        one("name", "must be at most 4 characters", "maxLength"),
    );
    assert_issues(
        "keywords",
        json!({"name": "AB"}),
        one("name", "must match pattern ^[a-z]+$", "pattern"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "day": "tomorrow"}),
        one("day", "must be a valid date", "format"),
    );
    // Several at one value: each.
    assert_issues(
        "keywords",
        json!({"name": "ABCDE"}),
        json!([
            {"path": "name", "message": "must be at most 4 characters", "keyword": "maxLength"},
            {"path": "name", "message": "must match pattern ^[a-z]+$", "keyword": "pattern"}
        ]),
    );
}

#[test]
fn number_keywords() {
    for (input, message, keyword) in [
        (json!({"count": 0}), "must be >= 1", "minimum"),
        (json!({"count": 11}), "must be <= 10", "maximum"),
        (json!({"ratio": 0}), "must be > 0", "exclusiveMinimum"),
        (json!({"ratio": 1}), "must be < 1", "exclusiveMaximum"),
        (
            json!({"ratio": 0.3}),
            "must be a multiple of 0.25",
            "multipleOf",
        ),
        (json!({"big": 2e21}), "must be <= 1e+21", "maximum"),
        (json!({"big": 1e-8}), "must be >= 1e-7", "minimum"),
    ] {
        let mut input = input;
        input["name"] = json!("ab");
        let path = input
            .as_object()
            .unwrap()
            .keys()
            .find(|k| *k != "name")
            .unwrap()
            .clone();
        assert_issues("keywords", input, one(&path, message, keyword));
    }
}

#[test]
fn array_keywords() {
    assert_issues(
        "keywords",
        json!({"name": "ab", "tags": []}),
        one("tags", "must have at least 1 items", "minItems"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "tags": ["a", "b", "c"]}),
        one("tags", "must have at most 2 items", "maxItems"),
    );
    assert_issues(
        "keywords",
        json!({"name": "ab", "tags": ["a", "a"]}),
        one("tags", "items must be unique", "uniqueItems"),
    );
}

#[test]
fn keywords_the_original_does_not_check_have_messages_in_its_style() {
    for (input, path, message, keyword) in [
        (
            json!({"one": 5}),
            "one",
            "does not match any allowed variant",
            "oneOf",
        ),
        (
            json!({"one": "abc"}),
            "one",
            "matches more than one allowed variant",
            "oneOf",
        ),
        (
            json!({"notText": "a"}),
            "notText",
            "must not match the 'not' schema",
            "not",
        ),
        (
            json!({"some": [1]}),
            "some",
            "must contain enough items matching the 'contains' schema",
            "contains",
        ),
        (
            json!({"few": {}}),
            "few",
            "must have at least 1 properties",
            "minProperties",
        ),
        (
            json!({"few": {"a": 1, "b": 2, "c": 3}}),
            "few",
            "must have at most 2 properties",
            "maxProperties",
        ),
        (
            json!({"short": {"secret-name": 1}}),
            "short",
            "has a property name that is not allowed",
            "propertyNames",
        ),
    ] {
        assert_issues("extras", input, one(path, message, keyword));
    }
}

#[test]
fn messages_never_echo_the_agents_values() {
    let (f, _h) = forms();
    for capability in [
        "view:forms.keywordsGenerated",
        "view:forms.keywordsCompiled",
    ] {
        let input =
            json!({"name": "SECRET-VALUE", "count": "SECRET-COUNT", "level": "SECRET-LEVEL"});
        let issues = issues_of(&f, capability, &input);
        assert_eq!(issues.as_array().unwrap().len(), 4, "{issues}");
        assert!(!issues.to_string().contains("SECRET"), "{issues}");
    }
}

#[test]
fn one_issue_per_extra_property_counts_toward_the_cap() {
    let mut input = json!({"name": "ab"});
    for i in 0..40 {
        input[format!("x{i:02}")] = json!(i);
    }
    let (f, _h) = forms();
    for capability in [
        "view:forms.keywordsGenerated",
        "view:forms.keywordsCompiled",
    ] {
        let issues = issues_of(&f, capability, &input);
        let issues = issues.as_array().unwrap();
        assert_eq!(
            issues.len(),
            surface_runtime::pipeline::MAX_REPORTED_VALIDATION_ERRORS,
            "{capability}"
        );
        for (i, issue) in issues.iter().enumerate() {
            assert_eq!(
                issue,
                &json!({"path": format!("x{i:02}"), "message": "is not an allowed property", "keyword": "additionalProperties"}),
                "{capability}"
            );
        }
    }
}

#[test]
fn an_input_that_is_not_an_object() {
    // A view capability's input is checked against its schema, as the
    // original parses an action's.
    let (f, _h) = forms();
    for (input, got) in [
        (json!([1]), "array"),
        (json!("x"), "string"),
        (json!(3), "number"),
    ] {
        for capability in [
            "view:forms.keywordsGenerated",
            "view:forms.keywordsCompiled",
        ] {
            assert_eq!(
                issues_of(&f, capability, &input),
                one("", &format!("expected object, got {got}"), "type"),
                "{capability} {input}"
            );
        }
    }
    // A procedure's: the original's one issue, `input must be an object`.
    for f in [fixture(), runtime_fixture()] {
        let _h = register_plain(&f.registry, "devices.list");
        for input in [json!([1]), json!("x"), json!(true)] {
            assert_eq!(
                issues_of(&f, "domain:devices.list", &input),
                one("", "input must be an object", "type"),
                "{input}"
            );
        }
        // `null` is `{}`.
        let r = call(&f.registry, "n", "domain:devices.list", Value::Null);
        assert!(r.error().is_none(), "{r:?}");
    }
}

#[test]
fn a_procedure_input_has_the_same_issues_with_either_validator() {
    for f in [fixture(), runtime_fixture()] {
        let _h = f
            .registry
            .register_procedure(AgentProcedureBinding::new(procedure(
                f.registry.authority(),
                "devices.rename",
            )))
            .unwrap();
        assert_eq!(
            issues_of(
                &f,
                "domain:devices.rename",
                &json!({"ids": ["a"], "zzz": {"a": 1}, "name": ""})
            ),
            json!([
                {"path": "deviceId", "message": "is required", "keyword": "required"},
                {"path": "name", "message": "must be at least 1 characters", "keyword": "minLength"},
                {"path": "ids", "message": "is not an allowed property", "keyword": "additionalProperties"},
                {"path": "zzz", "message": "is not an allowed property", "keyword": "additionalProperties"}
            ])
        );
    }
}
