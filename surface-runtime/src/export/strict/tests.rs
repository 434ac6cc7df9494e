use super::*;
use serde_json::json;

fn strict(schema: Value) -> Result<StrictSchema, NotStrict> {
    strict_schema(&schema, &StrictOptions::default())
}

fn reason(schema: Value) -> (String, NotStrictReason) {
    let e = strict(schema).unwrap_err();
    (e.path, e.reason)
}

#[test]
fn optional_properties_become_required_and_nullable() {
    let s = strict(json!({"type": "object", "required": ["id"], "properties": {
        "id": {"type": "string", "minLength": 1, "description": "Id"},
        "note": {"type": "string", "description": "A note", "default": "x"},
        "tags": {"type": "array", "items": {"type": "string"}}}}))
    .unwrap();
    assert_eq!(
        s.parameters(),
        &json!({"type": "object", "additionalProperties": false, "required": ["id", "note", "tags"],
            "properties": {
                "id": {"type": "string", "description": "Id"},
                "note": {"description": "A note", "anyOf": [{"type": "string"}, {"type": "null"}]},
                "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}}})
    );
    assert!(s.has_absent_nulls());
    let mut call = json!({"id": "a", "note": null, "tags": null});
    assert_eq!(s.strip_absent_nulls(&mut call), 2);
    assert_eq!(call, json!({"id": "a"}));
}

#[test]
fn a_required_nullable_property_keeps_its_null() {
    let s = strict(json!({"type": "object", "required": ["v"], "properties": {
        "v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}))
    .unwrap();
    assert!(!s.has_absent_nulls());
    let mut call = json!({"v": null});
    assert_eq!(s.strip_absent_nulls(&mut call), 0);
    assert_eq!(call, json!({"v": null}));
}

#[test]
fn nulls_are_stripped_recursively_through_arrays_and_definitions() {
    let s = strict(
        json!({"type": "object", "required": ["root"], "properties": {
        "root": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}),
    )
    .unwrap();
    let mut call = json!({"root": {"name": "a", "children": [
        {"name": "b", "children": null},
        {"name": "c", "children": [{"name": "d", "children": null}]}]}});
    assert_eq!(s.strip_absent_nulls(&mut call), 2);
    assert_eq!(
        call,
        json!({"root": {"name": "a", "children": [{"name": "b"}, {"name": "c", "children": [{"name": "d"}]}]}})
    );
}

#[test]
fn in_a_union_only_the_matching_branch_strips_and_ambiguity_strips_nothing() {
    let s = strict(json!({"type": "object", "required": ["shape"], "properties": {"shape": {"oneOf": [
        {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}},
        {"type": "object", "required": ["kind", "r"], "properties": {"kind": {"const": "disc"},
            "r": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}]}}}))
    .unwrap();
    let mut circle = json!({"shape": {"kind": "circle", "r": null}});
    s.strip_absent_nulls(&mut circle);
    assert_eq!(circle, json!({"shape": {"kind": "circle"}}));
    // `r` is required-nullable in "disc": its null stays.
    let mut disc = json!({"shape": {"kind": "disc", "r": null}});
    s.strip_absent_nulls(&mut disc);
    assert_eq!(disc, json!({"shape": {"kind": "disc", "r": null}}));
    // Two branches of one shape and different plans: nothing is guessed.
    let twin = strict(json!({"type": "object", "required": ["v"], "properties": {"v": {"anyOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"type": "object", "required": ["a"], "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}]}}}))
    .unwrap();
    let mut call = json!({"v": {"a": null}});
    assert_eq!(twin.strip_absent_nulls(&mut call), 0);
    assert_eq!(call, json!({"v": {"a": null}}));
}

#[test]
fn optional_nullable_properties_are_strict_only_when_null_means_absent() {
    let schema = json!({"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
    assert_eq!(
        reason(schema.clone()),
        (
            "/properties/v".to_string(),
            NotStrictReason::OptionalNullable
        )
    );
    let views = StrictOptions {
        null_is_absent: true,
        ..StrictOptions::default()
    };
    let s = strict_schema(&schema, &views).unwrap();
    let mut call = json!({"v": null});
    assert_eq!(s.strip_absent_nulls(&mut call), 1);
    assert_eq!(call, json!({}));
    let defaulted = json!({"type": "object", "properties": {"v": {"default": null,
        "anyOf": [{"type": "string"}, {"type": "null"}]}}});
    let s = strict(defaulted).unwrap();
    let mut call = json!({"v": null});
    assert_eq!(s.strip_absent_nulls(&mut call), 0);
    assert_eq!(call, json!({"v": null}));
}

#[test]
fn unsupported_keywords_are_dropped_and_enums_typed() {
    let s = strict(json!({"type": "object", "required": ["a", "b", "c", "d", "e"], "properties": {
        "a": {"type": "string", "format": "uri", "pattern": "^(?=x)", "maxLength": 3, "examples": ["x"]},
        "b": {"type": "string", "format": "date", "pattern": "^\\d{4}$"},
        "c": {"enum": ["x", 1, 2, null]},
        "d": {"const": 2.5},
        "e": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5, "not": {"const": 1}}}}))
    .unwrap();
    assert_eq!(
        s.parameters()["properties"],
        json!({
            "a": {"type": "string"},
            "b": {"type": "string", "format": "date", "pattern": "^\\d{4}$"},
            "c": {"anyOf": [{"type": "string", "enum": ["x"]}, {"type": "integer", "enum": [1, 2]}, {"type": "null"}]},
            "d": {"type": "number", "enum": [2.5]},
            "e": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5}})
    );
}

#[test]
fn an_empty_root_is_an_object_without_properties() {
    assert_eq!(
        strict(json!({"type": "object"})).unwrap().parameters(),
        &json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
}

#[test]
fn what_strict_mode_cannot_express_is_refused_with_its_place() {
    use NotStrictReason as R;
    let cases = [
        (
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}}}),
            "/properties/m",
            R::OpenObject,
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {}}, "additionalProperties": true}}}),
            "/properties/m",
            R::OpenObject,
        ),
        (
            json!({"type": "object", "patternProperties": {"^x": {}}}),
            "",
            R::PatternProperties,
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "object"}}}),
            "/properties/m",
            R::FreeFormObject,
        ),
        (
            json!({"type": "object", "properties": {"m": {"description": "anything"}}}),
            "/properties/m",
            R::Unconstrained,
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "array"}}}),
            "/properties/m",
            R::UnconstrainedItems,
        ),
        (
            json!({"type": "object", "properties": {"m": {"allOf": [{"type": "string"}, {"minLength": 1}]}}}),
            "/properties/m",
            R::AllOf,
        ),
        (
            json!({"type": "object", "properties": {"m": {"enum": [{"a": 1}]}}}),
            "/properties/m",
            R::CompoundEnum,
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "string", "enum": [1]}}}),
            "/properties/m",
            R::NeverValid,
        ),
        (
            json!({"type": "object", "required": ["x"]}),
            "",
            R::RequiredNotAProperty,
        ),
        (
            json!({"type": "object", "anyOf": [{"type": "object"}]}),
            "",
            R::RootUnion,
        ),
        (json!({"type": "array"}), "", R::RootNotObject),
        (
            json!({"type": "object", "properties": {"r": {"$ref": "#/$defs/Missing"}}}),
            "/properties/r",
            R::UnresolvedRef,
        ),
        (
            json!({"type": "object", "properties": {"u": {"type": "object", "properties": {"a": {"type": "string"}},
            "anyOf": [{"type": "object", "properties": {"b": {}}, "additionalProperties": false}, {"type": "string"}]}}}),
            "/properties/u",
            R::UnionWithSiblings,
        ),
    ];
    for (schema, path, expected) in cases {
        assert_eq!(
            reason(schema.clone()),
            (path.to_string(), expected),
            "{schema}"
        );
    }
}

#[test]
fn a_union_beside_a_type_gets_the_type_in_every_branch() {
    let s = strict(
        json!({"type": "object", "required": ["u"], "properties": {"u": {
        "type": "object", "description": "U", "oneOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]}}}),
    )
    .unwrap();
    assert_eq!(
        s.parameters()["properties"]["u"],
        json!({"description": "U", "anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false},
            {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"], "additionalProperties": false}]})
    );
}

#[test]
fn a_constraint_only_union_beside_a_typed_schema_is_dropped() {
    let s = strict(
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
    )
    .unwrap();
    assert_eq!(s.parameters()["required"], json!(["a", "b"]));
}

#[test]
fn limits_refuse_too_deep_or_too_large_schemas() {
    let mut deep = json!({"type": "string"});
    for _ in 0..10 {
        deep = json!({"type": "object", "required": ["x"], "properties": {"x": deep}});
    }
    // Ten levels of objects are allowed, eleven are not.
    assert!(strict(deep.clone()).is_ok());
    let deep = json!({"type": "object", "required": ["x"], "properties": {"x": deep}});
    let e = strict(deep).unwrap_err();
    assert_eq!(e.reason, NotStrictReason::Rule(StrictRule::TooDeep));
    assert_eq!(e.reason.code(), "rule:too-deep");
    let small = StrictOptions {
        limits: StrictLimits {
            max_properties: 2,
            ..StrictLimits::default()
        },
        ..StrictOptions::default()
    };
    let three = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}}});
    assert_eq!(
        strict_schema(&three, &small).unwrap_err().reason,
        NotStrictReason::Rule(StrictRule::TooManyProperties)
    );
    let values: Vec<String> = (0..251).map(|i| format!("{i:0>60}")).collect();
    let big_enum = json!({"type": "object", "required": ["e"], "properties": {"e": {"type": "string", "enum": values}}});
    assert_eq!(
        strict(big_enum).unwrap_err().reason,
        NotStrictReason::Rule(StrictRule::LargeEnumTooLong)
    );
    let many: Vec<i64> = (0..1001).collect();
    let many_enum = json!({"type": "object", "required": ["e"], "properties": {"e": {"type": "integer", "enum": many}}});
    assert_eq!(
        strict(many_enum).unwrap_err().reason,
        NotStrictReason::Rule(StrictRule::TooManyEnumValues)
    );
}

#[test]
fn the_checker_reports_each_broken_rule_with_its_place() {
    let limits = StrictLimits::default();
    let check = |v: Value| check_strict_schema(&v, &limits).map_err(|e| (e.path, e.rule));
    let obj = |props: Value| {
        let keys: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
        json!({"type": "object", "properties": props, "required": keys, "additionalProperties": false})
    };
    assert_eq!(check(obj(json!({"a": {"type": "string"}}))), Ok(()));
    assert_eq!(
        check(json!({"type": "object", "properties": {}})),
        Err((String::new(), StrictRule::AdditionalPropertiesNotFalse))
    );
    assert_eq!(
        check(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": [], "additionalProperties": false})
        ),
        Err((String::new(), StrictRule::PropertyNotRequired("a".into())))
    );
    assert_eq!(
        check(obj(json!({"a": {"type": "string", "minLength": 1}}))),
        Err((
            "/properties/a".into(),
            StrictRule::UnsupportedKeyword("minLength".into())
        ))
    );
    assert_eq!(
        check(obj(json!({"a": {"type": "string", "minimum": 1}}))),
        Err((
            "/properties/a".into(),
            StrictRule::KeywordNotForType("minimum".into())
        ))
    );
    assert_eq!(
        check(obj(json!({"a": {"$ref": "#/$defs/X", "description": "d"}}))),
        Err(("/properties/a".into(), StrictRule::RefWithSiblings))
    );
    assert_eq!(
        check(obj(json!({"a": {"type": "string", "format": "uri"}}))),
        Err(("/properties/a".into(), StrictRule::UnsupportedFormat))
    );
    assert_eq!(
        check(obj(json!({"a": {"type": ["string", "null"]}}))),
        Err(("/properties/a".into(), StrictRule::UnsupportedType))
    );
    assert_eq!(
        check(obj(
            json!({"a": {"anyOf": [{"type": "string"}], "default": "x"}})
        )),
        Err(("/properties/a".into(), StrictRule::KeywordBesideAnyOf))
    );
    assert_eq!(
        check(obj(json!({"a": {"type": "array"}}))),
        Err(("/properties/a".into(), StrictRule::MissingItems))
    );
    assert_eq!(
        check(json!({"anyOf": [{"type": "object"}]})),
        Err((String::new(), StrictRule::RootUnion))
    );
}

#[test]
fn portable_patterns() {
    assert!(pattern_is_portable("^[a-z]+(?:-[a-z]+)*$"));
    assert!(pattern_is_portable("^\\d{4}-\\d{2}$"));
    assert!(!pattern_is_portable("^(?=.*[A-Z]).+$"));
    assert!(!pattern_is_portable("(a)\\1"));
    assert!(!pattern_is_portable("(?<year>\\d+)"));
    assert!(!pattern_is_portable("\\p{L}+"));
    assert!(!pattern_is_portable("trailing\\"));
}

#[test]
fn stripping_stops_at_its_step_budget() {
    let s = strict(json!({"type": "object", "required": ["items"], "properties": {"items": {"type": "array",
        "items": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "string"}]}}}}))
    .unwrap();
    let items: Vec<Value> = (0..60_000).map(|_| json!({"a": null})).collect();
    let mut call = json!({"items": items});
    let removed = s.strip_absent_nulls(&mut call);
    assert!(removed > 10_000 && removed < 60_000, "{removed}");
    let kept = call["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i.get("a").is_some())
        .count();
    assert_eq!(removed + kept, 60_000);
}

#[test]
fn the_plan_is_a_tree_beside_the_schema_and_never_inside_it() {
    let s = strict(json!({"type": "object", "properties": {
        "top": {"type": "string"},
        "list": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "either": {"type": "object", "required": ["u"], "properties": {
            "u": {"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "string"}}}]}}}},
        "required": ["list", "either"],
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}}}))
    .unwrap();
    assert!(!s.parameters().to_string().contains("x-agent-surface"));
    let plan = s.plan().expect("optional properties were made nullable");
    assert_eq!(plan.root().absent_if_null(), ["top"]);
    assert!(
        plan.root().property("list").is_empty(),
        "the items are a $ref"
    );
    assert_eq!(plan.def("Item").absent_if_null(), ["n"]);
    let union = plan.root().property("either").property("u");
    assert!(union.branch(0).is_empty());
    assert_eq!(union.branch(1).absent_if_null(), ["x"]);
    let mut call = json!({"top": null, "list": [{"n": null}, {"n": 2}],
        "either": {"u": {"x": null}}});
    assert_eq!(s.strip_absent_nulls(&mut call), 3);
    assert_eq!(call, json!({"list": [{}, {"n": 2}], "either": {"u": {}}}));
    let none = strict(
        json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}),
    )
    .unwrap();
    assert!(none.plan().is_none() && !none.has_absent_nulls());
}

#[test]
fn strict_refs_resolve_through_the_shared_resolver_in_their_plain_form_only() {
    let doc =
        json!({"type": "object", "$defs": {"A": {"type": "string"}, "a/b": {"type": "integer"}}});
    assert!(matches!(def_target(&doc, "#"), Some(DefRef::Root(_))));
    assert!(matches!(def_target(&doc, "#/$defs/A"), Some(DefRef::Def { name, .. }) if name == "A"));
    assert!(
        matches!(def_target(&doc, "#/$defs/a~1b"), Some(DefRef::Def { name, .. }) if name == "a/b")
    );
    for r in [
        "#/%24defs/A",
        "#/$defs/B",
        "#/$defs",
        "#/type",
        "other#/$defs/A",
        "#A",
    ] {
        assert!(def_target(&doc, r).is_none(), "{r}");
    }
}
