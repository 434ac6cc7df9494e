use serde_json::json;

use super::*;

fn unsupported(schema: Value) -> Vec<(String, String)> {
    validator_tokens(&schema, &ValidatorOptions::default())
        .err()
        .unwrap_or_default()
        .into_iter()
        .map(|u| (u.keyword, u.pointer))
        .collect()
}

fn tokens(schema: Value) -> String {
    validator_tokens(&schema, &ValidatorOptions::default())
        .unwrap()
        .to_string()
}

#[test]
fn unsupported_keyword_names_keyword_and_pointer() {
    assert_eq!(
        unsupported(json!({"properties": {"a": {"unevaluatedProperties": false}}})),
        vec![(
            "unevaluatedProperties".to_string(),
            "/properties/a/unevaluatedProperties".to_string()
        )]
    );
    assert_eq!(
        unsupported(json!({"items": {"$dynamicRef": "#x"}})),
        vec![("$dynamicRef".to_string(), "/items/$dynamicRef".to_string())]
    );
}

#[test]
fn every_unsupported_part_is_reported_at_once() {
    let mut found = unsupported(json!({
        "properties": {"a": {"pattern": "("}, "b": {"minLength": -1}},
        "patternProperties": {"[": {}},
        "unevaluatedItems": false
    }));
    found.sort();
    assert_eq!(
        found,
        vec![
            (
                "minLength".to_string(),
                "/properties/b/minLength".to_string()
            ),
            ("pattern".to_string(), "/properties/a/pattern".to_string()),
            (
                "patternProperties".to_string(),
                "/patternProperties/[".to_string()
            ),
            (
                "unevaluatedItems".to_string(),
                "/unevaluatedItems".to_string()
            ),
        ]
    );
}

#[test]
fn invalid_pattern_reason_names_the_regex_error() {
    let errors =
        validator_tokens(&json!({"pattern": "a{2,1}"}), &ValidatorOptions::default()).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(errors[0]
        .to_string()
        .starts_with("`pattern` at `/pattern`: is not a valid ECMA-262 regular expression"));
}

#[test]
fn refs_outside_the_document_and_to_anchors_are_unsupported() {
    assert_eq!(
        unsupported(json!({"$ref": "https://example.com/other.json"})),
        vec![("$ref".to_string(), "/$ref".to_string())]
    );
    assert_eq!(
        unsupported(json!({"$defs": {"a": {"$anchor": "a"}}, "$ref": "#a"})),
        vec![("$ref".to_string(), "/$ref".to_string())]
    );
    assert_eq!(
        unsupported(json!({"$ref": "#/$defs/missing"})),
        vec![("$ref".to_string(), "/$ref".to_string())]
    );
}

#[test]
fn ref_with_root_id_base_and_escaped_pointer_resolves() {
    let schema = json!({
        "$id": "https://example.com/root.json",
        "$defs": {"a/b": {"type": "string"}, "c%d": {"type": "integer"}},
        "properties": {
            "x": {"$ref": "https://example.com/root.json#/$defs/a~1b"},
            "y": {"$ref": "#/$defs/c%25d"}
        }
    });
    assert!(validator_tokens(&schema, &ValidatorOptions::default()).is_ok());
}

#[test]
fn ref_cycle_on_the_same_instance_is_rejected() {
    assert_eq!(
        unsupported(
            json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})
        ),
        vec![("$ref".to_string(), "/$defs/a/allOf/0/$ref".to_string())]
    );
    // Recursion that moves into the instance terminates: accepted.
    assert!(validator_tokens(
        &json!({"properties": {"child": {"$ref": "#"}}}),
        &ValidatorOptions::default()
    )
    .is_ok());
}

#[test]
fn draft_04_and_unknown_dialects_are_unsupported() {
    assert_eq!(
        unsupported(json!({"$schema": "http://json-schema.org/draft-04/schema#"})),
        vec![("$schema".to_string(), "/$schema".to_string())]
    );
    assert_eq!(
        unsupported(json!({"exclusiveMinimum": true})),
        vec![(
            "exclusiveMinimum".to_string(),
            "/exclusiveMinimum".to_string()
        )]
    );
}

#[test]
fn annotations_and_unknown_keywords_check_nothing() {
    let code = tokens(json!({
        "title": "t", "description": "d", "default": 1, "examples": [1],
        "deprecated": true, "readOnly": true, "nullable": true, "x-kind": {"a": 1},
        "$comment": "c", "contentMediaType": "text/plain"
    }));
    // The root function just returns `true`.
    assert!(code.contains("return false ; } true"), "{code}");
}

/// Found on OpenAI's 2020-12 schemas: `$recursiveRef` is a 2019-09
/// keyword the 2020-12 dialect (and the runtime validator) ignores, while a
/// `$recursiveAnchor: true` makes the runtime validator reject the schema
/// (the 2020-12 meta-schema wants an anchor name), so the generator does.
#[test]
fn recursive_ref_is_ignored_in_2020_12_and_recursive_anchor_must_be_a_name() {
    assert!(validator_tokens(
        &json!({"properties": {"a": {"$recursiveRef": "#"}}}),
        &ValidatorOptions::default()
    )
    .is_ok());
    assert_eq!(
        unsupported(json!({"$defs": {"f": {"$recursiveAnchor": true}}})),
        vec![(
            "$recursiveAnchor".to_string(),
            "/$defs/f/$recursiveAnchor".to_string()
        )]
    );
    assert_eq!(
        unsupported(json!({
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            "items": {"$recursiveRef": "#"}
        })),
        vec![(
            "$recursiveRef".to_string(),
            "/items/$recursiveRef".to_string()
        )]
    );
}

#[test]
fn shared_and_recursive_targets_become_functions_single_use_ones_are_inlined() {
    let code = tokens(json!({
        "$defs": {
            "once": {"type": "string"},
            "twice": {"type": "integer"},
            "tree": {"properties": {"kids": {"items": {"$ref": "#/$defs/tree"}}}}
        },
        "properties": {
            "a": {"$ref": "#/$defs/once"},
            "b": {"$ref": "#/$defs/twice"},
            "c": {"$ref": "#/$defs/twice"},
            "d": {"$ref": "#/$defs/tree"}
        }
    }));
    let functions = code.matches("pub (super) fn v").count();
    // Root, `twice` (shared) and `tree` (recursive); `once` is inlined.
    assert_eq!(functions, 3, "{code}");
}

#[test]
fn patterns_are_compiled_once_per_source() {
    let code = tokens(json!({
        "properties": {"a": {"pattern": "^x"}, "b": {"pattern": "^x"}, "c": {"pattern": "^y"}}
    }));
    assert_eq!(code.matches("Pattern :: new").count(), 2, "{code}");
}

#[test]
fn deep_schemas_generate_shallow_code() {
    // 120 nested `items` (near serde_json's nesting limit): the generated
    // code splits into functions instead of nesting 120 blocks, so syn (and
    // rustc) parse it on an ordinary stack.
    let mut schema = json!({"type": "string"});
    for _ in 0..120 {
        schema = json!({"type": "array", "items": schema});
    }
    let tokens = validator_tokens(&schema, &ValidatorOptions::default()).unwrap();
    let text = tokens.to_string();
    assert!(text.matches("fn s").count() >= 120 / 8, "{text}");
    let parsed = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || syn::parse_str::<syn::Expr>(&text).is_ok())
        .unwrap()
        .join()
        .unwrap();
    assert!(parsed);
}
