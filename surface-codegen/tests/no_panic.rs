//! `generate_procedure_types` never panics and always yields parseable
//! items defining `Input` and `Output`, whatever JSON it is given (bad
//! input never panics).

use proptest::prelude::*;
use quote::quote;
use serde_json::{json, Map, Value};
use surface_codegen::types::{generate_procedure_types, TypeOptions};

const KEYS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "anyOf",
    "oneOf",
    "allOf",
    "const",
    "enum",
    "$ref",
    "$defs",
    "nullable",
    "not",
    "title",
    "description",
    "default",
    "format",
    "aB",
    "a_b",
    "type ",
    "self",
    "",
    "kind",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just("object"),
            Just("array"),
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("boolean"),
            Just("null"),
            Just("#"),
            Just("#/$defs/a"),
            Just("#/$defs/b"),
            Just("#/properties/x"),
            Just("kind"),
            Just("x"),
            Just("__schema0"),
            Just("ü")
        ]
        .prop_map(|s| Value::String(s.into())),
    ]
}

fn schema_like() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|entries| {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k.to_string(), v);
                }
                // Give `$defs` entries so refs sometimes resolve.
                if map.contains_key("$ref") {
                    map.entry("$defs").or_insert_with(|| json!({"a": {"$ref": "#/$defs/b"}, "b": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}}}));
                }
                Value::Object(map)
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_schemas_never_panic_and_yield_input_and_output(input in schema_like(), output in prop::option::of(schema_like())) {
        let types = generate_procedure_types(&input, output.as_ref(), &TypeOptions { crate_path: quote!(::k), typed_formats: Default::default() });
        let file: syn::File = syn::parse2(types.items).expect("generated items parse");
        let names: Vec<String> = file.items.iter().filter_map(|item| match item {
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Enum(e) => Some(e.ident.to_string()),
            syn::Item::Type(t) => Some(t.ident.to_string()),
            _ => None,
        }).collect();
        prop_assert!(names.iter().any(|n| n == "Input"), "{names:?}");
        prop_assert!(names.iter().any(|n| n == "Output"), "{names:?}");
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), names.len(), "type names are unique: {:?}", names);
    }
}
