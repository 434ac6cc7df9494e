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
        unsupported(json!({"exclusiveMinimum": "1"})),
        vec![(
            "exclusiveMinimum".to_string(),
            "/exclusiveMinimum".to_string()
        )]
    );
}

/// The draft-mix reading (docs/validation.md): a boolean
/// `exclusiveMinimum`/`exclusiveMaximum` is draft-04's modifier of
/// `minimum`/`maximum` in any draft (OpenAI's
/// `FineTuneDPOHyperparameters.beta`), reported as the modifier.
#[test]
fn boolean_exclusive_bounds_modify_minimum_and_maximum() {
    let code = tokens(
        json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 2, "exclusiveMaximum": false}),
    );
    assert!(code.contains("rt :: gt (n , Limit :: U (0u64))"), "{code}");
    assert!(code.contains("rt :: le (n , Limit :: U (2u64))"), "{code}");
    assert!(
        code.contains("\"value is less than or equal to the minimum of 0\""),
        "{code}"
    );
    assert!(!code.contains("rt :: ge"), "{code}");
    // Without `minimum` the modifier checks nothing.
    let code = tokens(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "exclusiveMaximum": true}),
    );
    assert!(!code.contains("rt :: lt"), "{code}");
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

/// `$recursiveRef` is a 2019-09 keyword the 2020-12 dialect (and the
/// runtime validator) ignores; a 2020-12 document holding a boolean
/// `$recursiveAnchor` (OpenAI's `CompoundFilter`) is read in the draft-mix
/// reading, where both are the 2019-09 keywords (docs/validation.md).
#[test]
fn recursive_ref_is_ignored_in_2020_12_unless_a_boolean_recursive_anchor_is_present() {
    let ignored = tokens(json!({"properties": {"a": {"$recursiveRef": "#"}}}));
    assert!(!ignored.contains("v0 (i , d + 1)"), "{ignored}");
    let read = tokens(json!({
        "$defs": {"f": {"$recursiveAnchor": true, "properties": {"fs": {"items": {"$recursiveRef": "#"}}}}},
        "$ref": "#/$defs/f"
    }));
    assert!(read.contains("v0 (i , d + 1)"), "{read}");
    // 2020-12's anchor string stays a name.
    assert_eq!(
        unsupported(json!({"$defs": {"f": {"$recursiveAnchor": "no name"}}})),
        vec![(
            "$recursiveAnchor".to_string(),
            "/$defs/f/$recursiveAnchor".to_string()
        )]
    );
}

/// 2019-09: `$recursiveRef: "#"` targets the root (with no embedded
/// resource the outermost `$recursiveAnchor: true` resource is the root, or
/// there is none and the initial target, the root, stays).
#[test]
fn recursive_ref_in_2019_09_calls_the_root() {
    for anchor in [json!(true), json!(false)] {
        let code = tokens(json!({
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            "$recursiveAnchor": anchor,
            "properties": {"kids": {"items": {"$recursiveRef": "#"}}}
        }));
        assert!(code.contains("v0 (i , d + 1)"), "{code}");
        assert!(code.contains("e0 (i , p , e , d + 1)"), "{code}");
    }
}

#[test]
fn recursive_refs_the_generator_cannot_follow_say_why() {
    let d2019 = "https://json-schema.org/draft/2019-09/schema";
    let reasons = |schema: Value| -> Vec<UnsupportedReason> {
        validator_tokens(&schema, &ValidatorOptions::default())
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|u| u.reason)
            .collect()
    };
    assert_eq!(
        reasons(
            json!({"$schema": d2019, "$defs": {"a": {}}, "items": {"$recursiveRef": "#/$defs/a"}})
        ),
        [UnsupportedReason::RecursiveRefNotRoot]
    );
    assert_eq!(
        reasons(
            json!({"$schema": d2019, "$defs": {"a": {"$id": "a"}}, "items": {"$recursiveRef": "#"}})
        ),
        [UnsupportedReason::RecursiveRefWithResources]
    );
    assert_eq!(
        reasons(json!({"$schema": d2019, "items": {"$recursiveRef": "other.json"}})),
        [UnsupportedReason::ExternalRef]
    );
    assert_eq!(
        reasons(json!({"$schema": d2019, "items": {"$recursiveRef": 1}})),
        [UnsupportedReason::MustBeString]
    );
    assert_eq!(
        reasons(
            json!({"$schema": d2019, "$recursiveAnchor": true, "allOf": [{"$recursiveRef": "#"}]})
        ),
        [UnsupportedReason::EndlessCycle]
    );
    assert_eq!(
        reasons(json!({"$ref": "#/a~2"})),
        [UnsupportedReason::BadFragment]
    );
}

/// Every input and output schema of the 834 corpus tools gets a generated
/// validator (issue item 7: the draft-mix readings cover the 11 that mixed
/// drafts).
#[test]
fn every_corpus_tool_has_a_generated_validator() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/corpus/all.manifest.json"
    );
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let tools = manifest["tools"].as_object().unwrap();
    assert_eq!(tools.len(), 834);
    let mut refused = Vec::new();
    for (name, tool) in tools {
        for key in ["inputSchema", "outputSchema"] {
            if let Some(schema) = tool.get(key) {
                if let Err(e) = validator_tokens(schema, &ValidatorOptions::default()) {
                    refused.push(format!("{name} {key}: {}", e[0]));
                }
            }
        }
    }
    assert!(
        refused.is_empty(),
        "{} refused: {refused:#?}",
        refused.len()
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
