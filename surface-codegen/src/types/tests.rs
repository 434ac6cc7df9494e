//! Unit tests: one per construct, asserting the exact generated tokens.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{json, Value};

use super::*;

fn options() -> TypeOptions {
    TypeOptions {
        crate_path: quote!(::k),
        typed_formats: Default::default(),
    }
}

fn generate(input: Value, output: Option<Value>) -> ProcedureTypes {
    let types = generate_procedure_types(&input, output.as_ref(), &options());
    // Every expansion must at least be valid Rust items.
    syn::parse2::<syn::File>(types.items.clone()).expect("generated items parse");
    types
}

/// The derive list of non-string enums and newtypes.
fn derive() -> TokenStream {
    quote!(#[derive(Debug, Clone, PartialEq, ::k::__private::serde::Serialize, ::k::__private::serde::Deserialize)])
}

/// The derive list of structs (their `Deserialize` is written out, see
/// [`assert_items`]).
fn struct_derive() -> TokenStream {
    quote!(#[derive(Debug, Clone, PartialEq, ::k::__private::serde::Serialize)])
}

fn serde_crate() -> TokenStream {
    quote!(#[serde(crate = "::k::__private::serde")])
}

fn opaque_output() -> TokenStream {
    quote! {
        /// Procedure output: the manifest declares no `outputSchema`, so it is opaque JSON.
        pub type Output = ::k::__private::serde_json::Value;
    }
}

fn optional_attr() -> TokenStream {
    quote!(#[serde(skip_serializing_if = "Option::is_none")])
}

/// The flattened map that keeps extra properties (`additionalProperties`
/// absent, `true` or `{}`).
fn extras() -> TokenStream {
    quote! {
        /// Properties not listed in `properties` (`additionalProperties`).
        #[serde(flatten)]
        pub additional_properties: ::std::collections::BTreeMap<String, ::k::__private::serde_json::Value>,
    }
}

/// Compares the generated items with `expected`, leaving out the
/// hand-written `Deserialize` impls of structs and string enums (one per
/// type, derived from its fields or variants; `*_reader_*` tests check
/// them).
fn assert_items(types: &ProcedureTypes, expected: TokenStream) {
    let pretty = |t: &TokenStream| prettyplease::unparse(&syn::parse2(t.clone()).expect("parses"));
    let mut file: syn::File = syn::parse2(types.items.clone()).expect("parses");
    file.items.retain(|item| !is_struct_reader(item));
    assert_eq!(prettyplease::unparse(&file), pretty(&expected));
}

/// `impl Deserialize for X { … deserialize_struct(…) }` (or
/// `deserialize_string_enum`), and a string enum's other impls (its
/// `SHAPE`/`as_str`, `Display`, `FromStr`):
/// `string_enum_reader_matches_the_variant_index` checks them.
fn is_struct_reader(item: &syn::Item) -> bool {
    let syn::Item::Impl(i) = item else {
        return false;
    };
    let text = quote!(#i).to_string();
    let last = i
        .trait_
        .as_ref()
        .and_then(|(_, path, _)| path.segments.last())
        .map(|s| s.ident.to_string());
    match last.as_deref() {
        Some("Deserialize") => {
            text.contains("deserialize_struct") || text.contains("deserialize_string_enum")
        }
        Some("Display") => text.contains("self . as_str ()"),
        Some("FromStr") => text.contains("parse_string_enum"),
        None => text.contains("serde_helpers :: EnumShape"),
        _ => false,
    }
}

#[test]
fn object_keeps_optional_and_nullable_distinct() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "note": {"type": "string"},
            "tag": {"type": ["string", "null"]},
            "alias": {"anyOf": [{"type": "string"}, {"type": "null"}]}
        }, "required": ["name", "tag"]}),
        None,
    );
    let (d, c, o, out) = (
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                #o
                pub alias: Option<Option<String>>,
                pub name: String,
                #o
                pub note: Option<String>,
                pub tag: Option<String>,
                #x
            }
            #out
        },
    );
    assert!(types.notes.is_empty());
    let object = types.input_object.expect("object input");
    assert_eq!(object.additional_properties, AdditionalProperties::Allowed);
    let summary: Vec<_> = object
        .fields
        .iter()
        .map(|f| {
            (
                f.json_name.as_str(),
                f.ident.as_str(),
                f.ty.to_string(),
                f.value_ty.to_string(),
                f.required,
                f.nullable,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "alias",
                "alias",
                "Option < Option < String > >".into(),
                "Option < String >".into(),
                false,
                true
            ),
            (
                "name",
                "name",
                "String".into(),
                "String".into(),
                true,
                false
            ),
            (
                "note",
                "note",
                "Option < String >".into(),
                "String".into(),
                false,
                false
            ),
            (
                "tag",
                "tag",
                "Option < String >".into(),
                "Option < String >".into(),
                true,
                true
            ),
        ]
    );
}

#[test]
fn additional_properties_false_denies_unknown_fields() {
    let types = generate(
        json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub id: String,
            }
            #out
        },
    );
    assert_eq!(
        types.input_object.unwrap().additional_properties,
        AdditionalProperties::Forbidden
    );
}

#[test]
fn records_become_maps_and_typed_extras_a_flattened_map() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "counts": {"type": "object", "propertyNames": {"type": "string"}, "additionalProperties": {"type": "integer"}},
            "free": {"type": "object"},
            "mixed": {"type": "object", "properties": {"known": {"type": "boolean"}}, "required": ["known"], "additionalProperties": {"type": "string"}}
        }, "required": ["counts", "free", "mixed"]}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub counts: ::std::collections::BTreeMap<String, i64>,
                pub free: ::std::collections::BTreeMap<String, ::k::__private::serde_json::Value>,
                pub mixed: InputMixed,
                #x
            }
            #d #c
            pub struct InputMixed {
                pub known: bool,
                /// Properties not listed in `properties` (`additionalProperties`).
                #[serde(flatten)]
                pub additional_properties: ::std::collections::BTreeMap<String, String>,
            }
            #out
        },
    );
}

#[test]
fn absent_true_or_empty_additional_properties_keep_extras_in_a_flattened_map() {
    for additional in [None, Some(json!(true)), Some(json!({}))] {
        let mut schema = json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "additional_properties": {"type": "boolean"}
        }, "required": ["name"]});
        if let Some(additional) = additional.clone() {
            schema["additionalProperties"] = additional;
        }
        let types = generate(schema, None);
        let (d, c, o, out) = (
            struct_derive(),
            serde_crate(),
            optional_attr(),
            opaque_output(),
        );
        assert_items(
            &types,
            quote! {
                #d #c
                pub struct Input {
                    #o
                    pub additional_properties: Option<bool>,
                    pub name: String,
                    /// Properties not listed in `properties` (`additionalProperties`).
                    #[serde(flatten)]
                    pub additional_properties_2: ::std::collections::BTreeMap<String, ::k::__private::serde_json::Value>,
                }
                #out
            },
        );
        // The binding facts are the schema's properties and policy only.
        let object = types.input_object.unwrap();
        assert_eq!(
            object.additional_properties,
            AdditionalProperties::Allowed,
            "{additional:?}"
        );
        assert_eq!(
            object
                .fields
                .iter()
                .map(|f| f.json_name.as_str())
                .collect::<Vec<_>>(),
            ["additional_properties", "name"]
        );
    }
}

#[test]
fn required_name_without_a_schema_is_a_required_value_field() {
    let types = generate(
        json!({"type": "object", "properties": {"id": {"type": "string"}},
            "required": ["id", "payload", "payload"], "additionalProperties": false}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub id: String,
                /// Input schema at `#/required`: required property "payload" of `Input` has no schema in `properties`, so any JSON value; represented as `serde_json::Value`.
                pub payload: ::k::__private::serde_json::Value,
            }
            #out
        },
    );
    let fields = types.input_object.unwrap().fields;
    let payload = &fields[1];
    assert_eq!(
        (
            payload.json_name.as_str(),
            payload.required,
            payload.nullable
        ),
        ("payload", true, true)
    );
    assert_eq!(
        types.notes,
        ["Input schema at `#/required`: required property \"payload\" of `Input` has no schema in `properties`, so any JSON value; represented as `serde_json::Value`."]
    );
}

#[test]
fn string_enums_rename_their_variants() {
    let types = generate(
        json!({"type": "string", "enum": ["active", "in-progress", "Done", "1"]}),
        None,
    );
    let out = opaque_output();
    assert_items(
        &types,
        quote! {
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ::k::__private::serde::Serialize)]
            #[serde(crate = "::k::__private::serde")]
            pub enum Input {
                /// `"active"`
                #[serde(rename = "active")]
                Active,
                /// `"in-progress"`
                #[serde(rename = "in-progress")]
                InProgress,
                /// `"Done"`
                Done,
                /// `"1"`
                #[serde(rename = "1")]
                V1,
            }
            #out
        },
    );
    assert!(types.input_object.is_none());
}

#[test]
fn signed_number_enum_values_get_plus_and_minus_names() {
    let types = generate(
        json!({"type": "string", "enum": ["+1", "-1", "laugh", "1"]}),
        None,
    );
    let out = opaque_output();
    assert_items(
        &types,
        quote! {
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ::k::__private::serde::Serialize)]
            #[serde(crate = "::k::__private::serde")]
            pub enum Input {
                /// `"+1"`
                #[serde(rename = "+1")]
                Plus1,
                /// `"-1"`
                #[serde(rename = "-1")]
                Minus1,
                /// `"laugh"`
                #[serde(rename = "laugh")]
                Laugh,
                /// `"1"`
                #[serde(rename = "1")]
                V1,
            }
            #out
        },
    );
}

#[test]
fn open_enum_union_has_known_variants_and_other() {
    let types = generate(
        json!({"anyOf": [{"type": "string"}, {"type": "string", "enum": ["gpt-4o", "Other"]}, {"const": "o3"}],
            "description": "Model"}),
        None,
    );
    let out = opaque_output();
    assert_items(
        &types,
        quote! {
            /// Model
            ///
            /// Open: each known value is a variant, any other string is `Other`.
            #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum Input {
                /// `"gpt-4o"`
                Gpt4o,
                /// `"Other"`
                Other2,
                /// `"o3"`
                O3,
                /// Any other string.
                Other(String),
            }
            impl Input {
                /// The JSON string this value is written as.
                pub fn as_str(&self) -> &str {
                    match self {
                        Self::Gpt4o => "gpt-4o",
                        Self::Other2 => "Other",
                        Self::O3 => "o3",
                        Self::Other(other) => other,
                    }
                }
            }
            impl ::k::__private::serde::Serialize for Input {
                fn serialize<S: ::k::__private::serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                    serializer.serialize_str(self.as_str())
                }
            }
            impl<'de> ::k::__private::serde::Deserialize<'de> for Input {
                fn deserialize<D: ::k::__private::serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                    let text = <String as ::k::__private::serde::Deserialize<'de>>::deserialize(deserializer)?;
                    let known = match text.as_str() {
                        "gpt-4o" => ::core::option::Option::Some(Self::Gpt4o),
                        "Other" => ::core::option::Option::Some(Self::Other2),
                        "o3" => ::core::option::Option::Some(Self::O3),
                        _ => ::core::option::Option::None,
                    };
                    ::core::result::Result::Ok(match known {
                        ::core::option::Option::Some(known) => known,
                        ::core::option::Option::None => Self::Other(text),
                    })
                }
            }
            #out
        },
    );
    // Two plain string arms, or a non-string arm: not an open enum.
    for arms in [
        json!([{"type": "string"}, {"type": "string"}, {"enum": ["a"]}]),
        json!([{"type": "string"}, {"type": "integer"}, {"enum": ["a"]}]),
    ] {
        let types = generate(json!({ "anyOf": arms }), None);
        let text = types.items.to_string();
        assert!(text.contains("untagged"), "{text}");
    }
}

#[test]
fn const_literals_accept_exactly_their_value() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "kind": {"type": "string", "const": "fixed"},
            "version": {"type": "number", "const": 2},
            "on": {"const": true}
        }, "required": ["kind", "version", "on"]}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    let const_impls = |name: TokenStream, value: TokenStream, doc: &str| {
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, PartialEq, Default)]
            pub struct #name;
            impl ::k::__private::serde::Serialize for #name {
                fn serialize<S: ::k::__private::serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                    ::k::__private::serde_helpers::serialize_const(&::k::__private::serde_helpers::ConstValue::#value, serializer)
                }
            }
            impl<'de> ::k::__private::serde::Deserialize<'de> for #name {
                fn deserialize<D: ::k::__private::serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                    ::k::__private::serde_helpers::deserialize_const(deserializer, &::k::__private::serde_helpers::ConstValue::#value).map(|()| #name)
                }
            }
        }
    };
    let on = const_impls(quote!(InputOn), quote!(Bool(true)), " Always `true`.");
    let version = const_impls(quote!(InputVersion), quote!(I64(2)), " Always `2`.");
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub kind: InputKind,
                pub on: InputOn,
                pub version: InputVersion,
                #x
            }
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ::k::__private::serde::Serialize)]
            #[serde(crate = "::k::__private::serde")]
            pub enum InputKind {
                /// `"fixed"`
                #[serde(rename = "fixed")]
                Fixed,
            }
            #on
            #version
            #out
        },
    );
}

#[test]
fn discriminated_union_becomes_an_internally_tagged_enum() {
    let x = extras();
    let types = generate(
        json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"type": "string", "const": "circle"}, "radius": {"type": "number"}}, "required": ["kind", "radius"], "additionalProperties": false},
            {"type": "object", "properties": {"kind": {"enum": ["point"]}}, "required": ["kind"]}
        ]}),
        None,
    );
    let (d, c, out) = (derive(), serde_crate(), opaque_output());
    let s = struct_derive();
    assert_items(
        &types,
        quote! {
            #d
            #[serde(crate = "::k::__private::serde", tag = "kind")]
            pub enum Input {
                /// `kind: "circle"`
                #[serde(rename = "circle")]
                Circle(InputCircle),
                /// `kind: "point"`
                #[serde(rename = "point")]
                Point(InputPoint),
            }
            #s #c
            pub struct InputCircle {
                pub radius: ::k::__private::serde_json::Number,
            }
            #s #c
            pub struct InputPoint { #x }
            #out
        },
    );
}

#[test]
fn other_unions_are_untagged_and_null_arms_make_them_nullable() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "value": {"type": ["string", "number", "boolean", "null"]},
            "either": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"type": "integer"}]},
            "letter": {"anyOf": [{"const": "x"}, {"const": "y"}, {"type": "null"}]}
        }, "required": ["value", "either", "letter"]}),
        None,
    );
    let (d, c, out) = (derive(), serde_crate(), opaque_output());
    let s = struct_derive();
    assert_items(
        &types,
        quote! {
            #s #c
            pub struct Input {
                pub either: InputEither,
                pub letter: Option<InputLetter>,
                pub value: Option<InputValue>,
                #x
            }
            /// Untagged: the first variant that accepts a value wins.
            #d
            #[serde(crate = "::k::__private::serde", untagged)]
            pub enum InputEither {
                Variant0(InputEitherVariant0),
                Integer(#[serde(deserialize_with = "::k::__private::serde_helpers::integer")] i64),
            }
            #s #c
            pub struct InputEitherVariant0 {
                pub a: String,
                #x
            }
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ::k::__private::serde::Serialize)]
            #[serde(crate = "::k::__private::serde")]
            pub enum InputLetter {
                /// `"x"`
                #[serde(rename = "x")]
                X,
                /// `"y"`
                #[serde(rename = "y")]
                Y,
            }
            /// Untagged: the first variant that accepts a value wins.
            #d
            #[serde(crate = "::k::__private::serde", untagged)]
            pub enum InputValue {
                String(String),
                Number(::k::__private::serde_json::Number),
                Boolean(bool),
            }
            #out
        },
    );
}

#[test]
fn tuples_from_prefix_items() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "exact": {"type": "array", "prefixItems": [{"type": "number"}, {"type": ["string", "null"]}], "items": false},
            "open": {"type": "array", "prefixItems": [{"type": "string"}]},
            "rest": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}
        }, "required": ["exact", "open", "rest"]}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub exact: (::k::__private::serde_json::Number, Option<String>),
                pub open: ::k::__private::serde_helpers::TupleWithRest<(String,), ::k::__private::serde_json::Value>,
                pub rest: ::k::__private::serde_helpers::TupleWithRest<(String,), i64>,
                #x
            }
            #out
        },
    );
}

#[test]
fn arrays_scalars_and_nested_names() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": -9007199254740991i64, "maximum": 9007199254740991i64}}, "required": ["sku", "qty"]}},
            "n": {"type": "number"}, "b": {"type": "boolean"}, "z": {"type": "null"}, "any": {},
            "big": {"type": "integer", "minimum": 0, "maximum": 18446744073709551615u64}
        }, "required": ["items", "n", "b", "z", "any", "big"]}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub any: ::k::__private::serde_json::Value,
                pub b: bool,
                pub big: u64,
                pub items: Vec<InputItemsItem>,
                pub n: ::k::__private::serde_json::Number,
                pub z: (),
                #x
            }
            #d #c
            pub struct InputItemsItem {
                pub qty: i64,
                pub sku: String,
                #x
            }
            #out
        },
    );
    let fields = types.input_object.unwrap().fields;
    assert_eq!(
        fields.iter().map(|f| f.nullable).collect::<Vec<_>>(),
        [true, false, false, false, false, true]
    );
}

#[test]
fn defs_recursion_is_boxed_and_input_output_names_do_not_collide() {
    let x = extras();
    let tree = json!({
        "type": "object", "properties": {"root": {"$ref": "#/$defs/__schema0"}}, "required": ["root"],
        "$defs": {"__schema0": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/__schema0"}},
            "parent": {"anyOf": [{"$ref": "#/$defs/__schema0"}, {"type": "null"}]}
        }, "required": ["children", "parent"]}}
    });
    let types = generate(tree.clone(), Some(tree));
    let (d, c) = (struct_derive(), serde_crate());
    let side = |name: TokenStream, def: TokenStream| {
        quote! {
            #d #c
            pub struct #name {
                pub root: #def,
                #x
            }
            #d #c
            pub struct #def {
                pub children: Vec<#def>,
                pub parent: Option<Box<#def>>,
                #x
            }
        }
    };
    // zod's generated `$defs` key `__schema0` names nothing: the type is
    // named from the path where it is first reached (`root`).
    let input = side(quote!(Input), quote!(InputRoot));
    let output = side(quote!(Output), quote!(OutputRoot));
    assert_items(&types, quote!(#input #output));
}

#[test]
fn generated_def_keys_take_the_name_of_the_path_where_first_reached() {
    assert!(convert::is_generated_def_key("__schema0"));
    assert!(convert::is_generated_def_key("__schema12"));
    assert!(!convert::is_generated_def_key("__schema"));
    assert!(!convert::is_generated_def_key("__schemaX"));
    assert!(!convert::is_generated_def_key("Pet"));
    let x = extras();
    // The root is the `$ref`: the type is `Input` itself. An author's key
    // (`Leaf`) and a `title` keep their names.
    let types = generate(
        json!({"$ref": "#/$defs/__schema0", "$defs": {
            "__schema0": {"type": "object", "properties": {
                "next": {"anyOf": [{"$ref": "#/$defs/__schema0"}, {"type": "null"}]},
                "leaf": {"$ref": "#/$defs/Leaf"},
                "tagged": {"$ref": "#/$defs/__schema1"}
            }, "required": ["next", "leaf", "tagged"]},
            "Leaf": {"type": "object", "properties": {}, "additionalProperties": false},
            "__schema1": {"title": "Mark", "type": "object", "properties": {}, "additionalProperties": false}
        }}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub leaf: InputLeaf,
                pub next: Option<Box<Input>>,
                pub tagged: InputMark,
                #x
            }
            #d #c
            pub struct InputLeaf {}
            #d #c
            pub struct InputMark {}
            #out
        },
    );
}

#[test]
fn root_recursion_ref_hash_names_the_input_itself() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {"sub": {"type": "array", "items": {"$ref": "#"}}, "next": {"$ref": "#"}}}),
        None,
    );
    let (d, c, o, out) = (
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                #o
                pub next: Option<Box<Input>>,
                #o
                pub sub: Option<Vec<Input>>,
                #x
            }
            #out
        },
    );
}

#[test]
fn a_ref_through_the_root_id_is_the_same_local_ref() {
    // The validator and the export resolve `<root $id>#/…` locally; the
    // generated type must model the same target (it used to read it as an
    // external reference and emit `serde_json::Value`).
    let schema = |pet: &str, list: &str| {
        json!({"$id": "https://example.com/schemas/pets.json", "type": "object",
        "properties": {"pet": {"$ref": pet}, "all": {"$ref": list}},
        "required": ["pet"],
        "$defs": {
            "Pet": {"type": "object", "properties": {"name": {"type": "string"}},
                    "required": ["name"], "additionalProperties": false},
            "Pets": {"type": "array", "items": {"$ref": "#/$defs/Pet"}}
        }})
    };
    let through_id = generate(
        schema(
            "https://example.com/schemas/pets.json#/$defs/Pet",
            "https://example.com/schemas/pets.json#/%24defs/Pets",
        ),
        None,
    );
    let local = generate(schema("#/$defs/Pet", "#/$defs/Pets"), None);
    assert_eq!(through_id.items.to_string(), local.items.to_string());
    let text = through_id.items.to_string();
    assert!(text.contains("pub pet : InputPet ,"), "{text}");
    assert!(text.contains("pub all : Option < InputPets > ,"), "{text}");
}

#[test]
fn root_ref_aliases_input_and_recursive_alias_becomes_newtype() {
    let types = generate(
        json!({"$ref": "#/$defs/list", "$defs": {"list": {"type": "array", "items": {"$ref": "#/$defs/list"}}}}),
        None,
    );
    let (d, out) = (derive(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d
            #[serde(crate = "::k::__private::serde", transparent)]
            pub struct InputList(pub Vec<InputList>);
            pub type Input = InputList;
            #out
        },
    );
}

#[test]
fn numbers_keep_their_form_and_integers_read_integral_floats() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "ratio": {"type": "number"},
            "count": {"type": "integer"},
            "maybe": {"type": ["integer", "null"]},
            "pages": {"type": "array", "items": {"$ref": "#/$defs/page"}},
            "limit": {"type": "integer"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "exact": {"anyOf": [{"type": "integer"}, {"type": "number"}]}
        }, "required": ["ratio", "count", "maybe", "pages", "either", "exact"],
        "$defs": {"page": {"type": "integer", "minimum": 1}}}),
        None,
    );
    let (d, c, out) = (derive(), serde_crate(), opaque_output());
    let s = struct_derive();
    let int = quote!(#[serde(deserialize_with = "::k::__private::serde_helpers::integer")]);
    assert_items(
        &types,
        quote! {
            #s #c
            pub struct Input {
                pub count: i64,
                pub either: InputEither,
                pub exact: InputExact,
                #[serde(skip_serializing_if = "Option::is_none")]
                pub limit: Option<i64>,
                pub maybe: Option<i64>,
                pub pages: Vec<InputPage>,
                pub ratio: ::k::__private::serde_json::Number,
                #x
            }
            /// Untagged: the first variant that accepts a value wins.
            #d
            #[serde(crate = "::k::__private::serde", untagged)]
            pub enum InputEither {
                Integer(#int i64),
                String(String),
            }
            /// Untagged: the first variant that accepts a value wins.
            #d
            #[serde(crate = "::k::__private::serde", untagged)]
            pub enum InputExact {
                Integer(i64),
                Number(::k::__private::serde_json::Number),
            }
            pub type InputPage = i64;
            #out
        },
    );
    let fields = types.input_object.unwrap().fields;
    let ratio = fields.iter().find(|f| f.json_name == "ratio").unwrap();
    assert_eq!(
        ratio.ty.to_string(),
        quote!(::k::__private::serde_json::Number).to_string()
    );
}

#[test]
fn descriptions_formats_and_defaults_become_escaped_docs() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "description": "Search \"params\"\nsecond line", "properties": {
            "id": {"type": "string", "format": "uuid", "description": "The */ id"},
            "page": {"type": "integer", "default": 1}
        }, "required": ["id"]}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #[doc = " Search \"params\" second line"]
            #d #c
            pub struct Input {
                #[doc = " The \\*/ id"]
                #[doc = ""]
                #[doc = " Format: `uuid` (not checked by this type)."]
                pub id: String,
                #[doc = " Default: `1`."]
                #[serde(skip_serializing_if = "Option::is_none")]
                pub page: Option<i64>,
                #x
            }
            #out
        },
    );
    assert_eq!(
        types.input_object.unwrap().fields[0].description.as_deref(),
        Some("The */ id")
    );
}

#[test]
fn property_names_become_unique_snake_case_idents() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {
            "type": {"type": "string"}, "aB": {"type": "string"}, "a_b": {"type": "string"},
            "self": {"type": "string"}, "1st": {"type": "string"}, "x-y": {"type": "string"}
        }, "required": ["type", "aB", "a_b", "self", "1st", "x-y"]}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                #[serde(rename = "1st")]
                pub field_1st: String,
                #[serde(rename = "aB")]
                pub a_b: String,
                #[serde(rename = "a_b")]
                pub a_b_2: String,
                #[serde(rename = "self")]
                pub self_: String,
                pub r#type: String,
                #[serde(rename = "x-y")]
                pub x_y: String,
                #x
            }
            #out
        },
    );
    let idents: Vec<_> = types
        .input_object
        .unwrap()
        .fields
        .into_iter()
        .map(|f| f.ident)
        .collect();
    assert_eq!(
        idents,
        ["field_1st", "a_b", "a_b_2", "self_", "r#type", "x_y"]
    );
}

#[test]
fn titles_name_types() {
    let x = extras();
    let types = generate(
        json!({"type": "object", "properties": {"addr": {"title": "Postal address", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}, "required": ["addr"]}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub addr: InputPostalAddress,
                #x
            }
            #d #c
            pub struct InputPostalAddress {
                pub city: String,
                #x
            }
            #out
        },
    );
}

#[test]
fn all_of_objects_merge() {
    let x = extras();
    let types = generate(
        json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "boolean"}}}
        ]}),
        None,
    );
    let (d, c, o, out) = (
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub a: String,
                #o
                pub b: Option<bool>,
                #x
            }
            #out
        },
    );
}

#[test]
fn unrepresentable_schemas_fall_back_to_value_with_notes() {
    let types = generate(
        json!({"type": "object", "properties": {
            "never": false,
            "dangling": {"$ref": "#/$defs/missing"},
            "external": {"$ref": "https://example.com/s.json"},
            "weird": {"type": "color"},
            "five": 5,
            "neg": {"not": {"type": "string"}},
            "empty": {"enum": []}
        }, "required": ["never"]}),
        None,
    );
    assert_eq!(
        types.notes,
        [
            "Input schema at `#/properties/dangling`: `$ref` \"#/$defs/missing\" points to nothing; represented as `serde_json::Value`.",
            "Input schema at `#/properties/empty`: an empty `enum` admits no value; represented as `serde_json::Value`.",
            "Input schema at `#/properties/external`: external `$ref` \"https://example.com/s.json\" is not resolved; represented as `serde_json::Value`.",
            "Input schema at `#/properties/five`: 5 is not a schema; represented as `serde_json::Value`.",
            // Not a fallback: any JSON but a string, checked by the validator.
            "Input schema at `#/properties/neg`: a value must not match `{\"type\":\"string\"}` (`not`), which this type does not encode; the validator checks it.",
            "Input schema at `#/properties/never`: schema `false` admits no value; represented as `serde_json::Value`.",
            "Input schema at `#/properties/weird`: unknown `type` \"color\"; represented as `serde_json::Value`.",
        ]
    );
    let fields = types.input_object.unwrap().fields;
    assert!(fields
        .iter()
        .all(|f| f.value_ty.to_string() == ":: k :: __private :: serde_json :: Value"));
    // The note is also the field's doc comment.
    let code = types.items.to_string();
    assert!(code.contains("# [doc = \" Input schema at `#/properties/never`: schema `false` admits no value; represented as `serde_json::Value`.\"] pub never"), "{code}");
}

#[test]
fn hostile_inputs_never_panic() {
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"type": "array", "items": deep});
    }
    let cases = [
        json!(null),
        json!(5),
        json!("object"),
        json!([]),
        json!(false),
        json!({"$ref": "#"}),
        json!({"$ref": 7}),
        json!({"$ref": "#/%zz/%E2%82"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"anyOf": "x"}),
        json!({"anyOf": []}),
        json!({"oneOf": [{"type": "null"}]}),
        json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
        json!({"type": ["null"]}),
        json!({"type": 5}),
        json!({"properties": []}),
        json!({"type": "array", "prefixItems": vec![json!({}); 13], "items": false}),
        json!({"type": "array", "prefixItems": [], "items": false}),
        json!({"type": "array", "items": false}),
        json!({"const": [1]}),
        json!({"enum": [1, "a", null, true]}),
        json!({"enum": "a"}),
        json!({"type": "object", "properties": {"": {}, "_": {}, "__": {}, "ü": {}, "Self": {}, "crate": {}}}),
        deep,
    ];
    for case in cases {
        let types = generate(case.clone(), Some(case));
        let code = types.items.to_string();
        assert!(code.contains("Input") && code.contains("Output"), "{code}");
    }
}

/// Steps of the work budget the conversion of `input`/`output` uses, and
/// the schemas' weight.
fn work_used(input: &Value, output: Option<&Value>) -> (u64, u64) {
    let weight = convert::Converter::weight_of(input)
        .saturating_add(output.map_or(0, convert::Converter::weight_of));
    let mut converter = convert::Converter::new(&quote!(::k), weight, TypedFormats::default());
    let budget = converter.work_left();
    converter.convert_document(input, "Input");
    if let Some(output) = output {
        converter.convert_document(output, "Output");
    }
    (budget - converter.work_left(), weight)
}

#[test]
fn exponential_schema_expansion_real_schemas_use_a_fraction_of_the_budget() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut worst: f64 = 0.0;
    for file in [
        "tests/fixtures/handmade.manifest.json",
        "../tests/fixtures/codegen/orpc.manifest.json",
        "../tests/fixtures/codegen/zod.manifest.json",
        "../tests/fixtures/handwritten.manifest.json",
        "../tests/fixtures/devices.manifest.json",
        "../tests/fixtures/codegen/adversarial/colliding_names.manifest.json",
        "../tests/fixtures/codegen/adversarial/doc_injection.manifest.json",
    ] {
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        for (path, tool) in manifest["tools"].as_object().unwrap() {
            let (used, weight) = work_used(&tool["inputSchema"], tool.get("outputSchema"));
            let ratio = used as f64 / weight as f64;
            assert!(
                ratio <= 4.0,
                "{file} {path}: {used} steps for weight {weight}"
            );
            worst = worst.max(ratio);
        }
    }
    eprintln!("worst ratio of steps to weight: {worst:.2}");
}

/// Schemas of `depth` levels that repeat shared parts at every level, so a
/// converter without a work budget generates about `2^depth` types.
fn exponential_schemas(depth: usize) -> Vec<(&'static str, Value)> {
    let mut dup = json!({"type": "string"});
    for _ in 0..depth {
        dup = json!({"type": ["object", "object"], "properties": {"a": dup}});
    }
    let mut all_of = serde_json::Map::new();
    for k in 0..depth {
        let next = format!("#/$defs/d{}", k + 1);
        all_of.insert(
            format!("d{k}"),
            json!({"type": "object", "properties": {
                "a": {"allOf": [{"$ref": next}, {"type": "object"}]},
                "b": {"allOf": [{"$ref": next}, {"type": "object"}]}}}),
        );
    }
    all_of.insert(
        format!("d{depth}"),
        json!({"type": "object", "properties": {"z": {"type": "string"}}}),
    );
    let mut tagged = serde_json::Map::new();
    for k in 0..=depth {
        for (arm, kind) in [("a", "a"), ("b", "b")] {
            let mut properties = json!({"kind": {"const": kind}});
            if k < depth {
                properties["x"] = json!({"anyOf": [{"$ref": format!("#/$defs/a{}", k + 1)}, {"$ref": format!("#/$defs/b{}", k + 1)}]});
            }
            tagged.insert(
                format!("{arm}{k}"),
                json!({"type": "object", "properties": properties, "required": ["kind"]}),
            );
        }
    }
    vec![
        ("repeated type", dup),
        (
            "allOf of $ref",
            json!({"$ref": "#/$defs/d0", "$defs": all_of}),
        ),
        (
            "$ref'd tagged arms",
            json!({"anyOf": [{"$ref": "#/$defs/a0"}, {"$ref": "#/$defs/b0"}], "$defs": tagged}),
        ),
    ]
}

#[test]
fn exponential_schema_expansion_is_bounded_by_the_work_budget() {
    for (case, schema) in exponential_schemas(14) {
        let weight = convert::Converter::weight_of(&schema);
        let budget = convert::WORK_BASE + convert::WORK_PER_VALUE * weight;
        let types = generate(schema, None);
        let file: syn::File = syn::parse2(types.items.clone()).unwrap();
        // Every generated item costs at least one step.
        assert!(
            (file.items.len() as u64) <= budget,
            "{case}: {} items for a budget of {budget}",
            file.items.len()
        );
        if case != "repeated type" {
            assert!(
                types
                    .notes
                    .iter()
                    .any(|n| n.contains("past the work limit")),
                "{case}: {:?}",
                types.notes
            );
        }
    }
}

/// The doc attribute of one paragraph, as `assert_items` expects it.
fn doc_line(text: &str) -> TokenStream {
    let text = format!(" {text}");
    quote!(#[doc = #text])
}

/// The shape of OpenAI's `createChatCompletion` request body
/// (`tests/fixtures/corpus/openai.manifest.json`, tool
/// `openai.createChatCompletion`: `allOf` of a `$ref` that is itself an
/// `allOf`, and an object), plus a non-object part.
#[test]
fn all_of_merges_nested_object_parts_and_names_non_object_parts_in_the_doc() {
    let x = extras();
    let types = generate(
        json!({
            "$defs": {
                "Base": {"allOf": [{"$ref": "#/$defs/Inner"}, {"type": "object", "properties": {"b": {"type": "boolean"}}}]},
                "Inner": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
            },
            "allOf": [
                {"$ref": "#/$defs/Base"},
                {"type": "object", "properties": {"c": {"type": "integer"}}, "required": ["c"]},
                {"minProperties": 2},
                {"type": "object", "anyOf": [{"required": ["b"]}, {"properties": {"a": {"const": "x"}}}]}
            ]
        }),
        None,
    );
    let (d, c, o, out) = (
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    let n1 = doc_line("Input schema at `#`: a value must also match the `allOf` part at `#/allOf/2` (`minProperties`), which this type does not encode; the validator checks it.");
    let n2 = doc_line("Input schema at `#`: a value must also match the `allOf` part at `#/allOf/3` (`anyOf`), which this type does not encode; the validator checks it.");
    assert_items(
        &types,
        quote! {
            #n1
            #[doc = ""]
            #n2
            #d #c
            pub struct Input {
                pub a: String,
                #o
                pub b: Option<bool>,
                pub c: i64,
                #x
            }
            #out
        },
    );
    assert_eq!(types.notes.len(), 2);
}

/// OpenAI's `createRun` (`tests/fixtures/corpus/openai.manifest.json`):
/// `truncation_strategy` is `allOf: [{$ref}, {nullable: true}]` and
/// `response_format` a `$ref` with a sibling `nullable: true`.
#[test]
fn ref_with_nullable_sibling_or_nullable_all_of_part_is_an_option_of_the_ref() {
    let x = extras();
    let types = generate(
        json!({
            "$defs": {"T": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"], "additionalProperties": false}},
            "type": "object",
            "properties": {
                "direct": {"$ref": "#/$defs/T", "nullable": true},
                "through_all_of": {"allOf": [{"$ref": "#/$defs/T"}, {"nullable": true}]},
                "plain": {"$ref": "#/$defs/T"}
            },
            "required": ["direct", "plain"]
        }),
        None,
    );
    let (d, c, o, out) = (
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                pub direct: Option<InputT>,
                pub plain: InputT,
                #o
                pub through_all_of: Option<Option<InputT>>,
                #x
            }
            #d #c
            pub struct InputT {
                pub n: String,
            }
            #out
        },
    );
    assert!(types.notes.is_empty(), "{:?}", types.notes);
}

/// OpenAI's `ImageRefParam` (`tests/fixtures/corpus/openai.manifest.json`,
/// tool `openai.createImageEdit`, `#/$defs/ImageRefParam`): properties,
/// `anyOf` of `required`-only arms and a `not`.
#[test]
fn properties_with_required_only_arms_keep_the_struct_and_name_the_rule() {
    let types = generate(
        json!({
            "type": "object",
            "properties": {"image_url": {"type": "string"}, "file_id": {"type": "string"}, "n": {"type": "boolean"}},
            "required": ["n"],
            "oneOf": [{"required": ["image_url"]}, {"required": ["file_id"]}],
            "not": {"required": ["image_url", "file_id"]},
            "additionalProperties": false
        }),
        None,
    );
    let (d, c, o, out) = (
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    let not = doc_line("Input schema at `#`: a value must not match `{\"required\":[\"image_url\",\"file_id\"]}` (`not`), which this type does not encode; the validator checks it.");
    let rule = doc_line("Input schema at `#`: exactly one of these sets of properties must be present (`oneOf` of `required` lists): `image_url | file_id`; the fields are `Option`s unless the object itself requires them, and the validator checks the rule.");
    assert_items(
        &types,
        quote! {
            #not
            #[doc = ""]
            #rule
            #d #c
            pub struct Input {
                #o
                pub file_id: Option<String>,
                #o
                pub image_url: Option<String>,
                pub n: bool,
            }
            #out
        },
    );
    let object = types.input_object.expect("the struct's facts are kept");
    assert_eq!(
        object
            .fields
            .iter()
            .map(|f| f.json_name.as_str())
            .collect::<Vec<_>>(),
        ["file_id", "image_url", "n"]
    );
}

#[test]
fn not_keeps_the_type_of_the_rest_of_the_schema() {
    let types = generate(
        json!({"type": "object", "properties": {
            "s": {"type": "string", "not": {"const": ""}}
        }, "required": ["s"], "additionalProperties": false}),
        None,
    );
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    let note = doc_line("Input schema at `#/properties/s`: a value must not match `{\"const\":\"\"}` (`not`), which this type does not encode; the validator checks it.");
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                #note
                pub s: String,
            }
            #out
        },
    );
}

#[test]
fn typed_formats_name_the_format_crates_through_the_facade() {
    let schema = json!({"type": "object", "properties": {
        "id": {"type": "string", "format": "uuid"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "link": {"type": "string", "format": "uri"},
        "site": {"type": "string", "format": "url"},
        "mail": {"type": "string", "format": "email"}
    }, "required": ["id", "at", "day", "link", "site", "mail"], "additionalProperties": false});
    let all = TypeOptions {
        crate_path: quote!(::k),
        typed_formats: TypedFormats {
            uuid: true,
            chrono: true,
            url: true,
        },
    };
    let types = generate_procedure_types(&schema, None, &all);
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    let read_as = |f: &str, t: &str| {
        doc_line(&format!(
            "Format: `{f}`, read as `{t}` (the validator checks the format first)."
        ))
    };
    let (at, day, id, link, site) = (
        read_as("date-time", "chrono::DateTime<chrono::FixedOffset>"),
        read_as("date", "chrono::NaiveDate"),
        read_as("uuid", "uuid::Uuid"),
        read_as("uri", "url::Url"),
        read_as("url", "url::Url"),
    );
    let mail = doc_line("Format: `email` (not checked by this type).");
    assert_items(
        &types,
        quote! {
            #d #c
            pub struct Input {
                #at
                pub at: ::k::__private::chrono::DateTime<::k::__private::chrono::FixedOffset>,
                #day
                pub day: ::k::__private::chrono::NaiveDate,
                #id
                pub id: ::k::__private::uuid::Uuid,
                #link
                pub link: ::k::__private::url::Url,
                #mail
                pub mail: String,
                #site
                pub site: ::k::__private::url::Url,
            }
            #out
        },
    );
    // Off (the default): every format is a `String`.
    let plain = generate(schema, None);
    let fields = plain.input_object.unwrap().fields;
    assert!(fields.iter().all(|f| f.ty.to_string() == "String"));
}

/// OpenAPI's `discriminator` whose arms' tag is a plain string: the values
/// come from `mapping`, else from the `$ref`'s last segment.
#[test]
fn openapi_discriminator_mapping_gives_the_tag_values() {
    let x = extras();
    let types = generate(
        json!({
            "$defs": {
                "Dog": {"type": "object", "properties": {"petType": {"type": "string"}, "bark": {"type": "boolean"}}, "required": ["petType"]},
                "Cat": {"type": "object", "properties": {"petType": {"type": "string"}}, "required": ["petType"], "additionalProperties": false}
            },
            "oneOf": [{"$ref": "#/$defs/Dog"}, {"$ref": "#/$defs/Cat"}],
            "discriminator": {"propertyName": "petType", "mapping": {"dog": "#/$defs/Dog"}}
        }),
        None,
    );
    let (d, s, c, o, out) = (
        derive(),
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    assert_items(
        &types,
        quote! {
            #d
            #[serde(crate = "::k::__private::serde", tag = "petType")]
            pub enum Input {
                /// `petType: "dog"`
                #[serde(rename = "dog")]
                Dog(InputDog),
                /// `petType: "Cat"`
                Cat(InputCat),
            }
            #s #c
            pub struct InputDog {
                #o
                pub bark: Option<bool>,
                #x
            }
            #s #c
            pub struct InputCat {}
            #out
        },
    );
}

#[test]
fn discriminator_that_serde_cannot_round_trip_stays_untagged_with_a_note() {
    // Two mapping keys for one arm (serde would write back only one), and
    // an optional tag (OpenAI's `EasyInputMessage` in `createResponse`'s
    // input items, `tests/fixtures/corpus/openai.manifest.json`).
    for (schema, optional_tag_note) in [
        (
            json!({
                "$defs": {"Dog": {"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"]},
                          "Cat": {"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"]}},
                "oneOf": [{"$ref": "#/$defs/Dog"}, {"$ref": "#/$defs/Cat"}],
                "discriminator": {"propertyName": "t", "mapping": {"dog": "#/$defs/Dog", "puppy": "#/$defs/Dog"}}
            }),
            false,
        ),
        (
            json!({"anyOf": [
            {"type": "object", "properties": {"type": {"enum": ["message"]}, "role": {"type": "string"}}, "required": ["role"]},
            {"type": "object", "properties": {"type": {"const": "item_reference"}, "id": {"type": "string"}}, "required": ["type", "id"]}
        ], "discriminator": {"propertyName": "type"}}),
            true,
        ),
    ] {
        let types = generate(schema, None);
        let code = types.items.to_string();
        assert!(code.contains("untagged"), "{code}");
        let note = code.contains(
            "Not a tagged enum: the tag `type` is optional in (or missing from) some arm",
        );
        assert_eq!(note, optional_tag_note, "{code}");
    }
}

/// oRPC's playground `planet.create` (`tests/fixtures/corpus/
/// orpc_playground.manifest.json` and `orpc_playground_zod.manifest.json`,
/// `#/properties/image`): `z.file().mime([...])` through both converters.
#[test]
fn string_arms_differing_only_in_media_type_are_one_string() {
    let note = doc_line("Input schema at `#/properties/image`: the `anyOf` arms differ only in their media type: `image/png, image/gif`; content keywords are annotations, checked neither by this type nor by the validator (the server checks them).");
    let (d, c, out) = (struct_derive(), serde_crate(), opaque_output());
    for image in [
        // @orpc/zod
        json!({"anyOf": [
            {"type": "string", "contentMediaType": "image/png"},
            {"type": "string", "contentMediaType": "image/gif"}
        ]}),
        // z.toJSONSchema
        json!({"type": "string", "format": "binary", "contentEncoding": "binary", "anyOf": [
            {"contentMediaType": "image/png"}, {"contentMediaType": "image/gif"}
        ]}),
    ] {
        let format = image.get("format").map(|_| {
            let line = doc_line("Format: `binary` (not checked by this type).");
            quote!(#line #[doc = ""])
        });
        let types = generate(
            json!({"type": "object", "properties": {"image": image}, "required": ["image"], "additionalProperties": false}),
            None,
        );
        assert_items(
            &types,
            quote! {
                #d #c
                pub struct Input {
                    #format
                    #note
                    pub image: String,
                }
                #out
            },
        );
    }
    // Arms that differ in more than their media type stay a union.
    let types = generate(
        json!({"anyOf": [
            {"type": "string", "contentMediaType": "image/png"},
            {"type": "string", "contentMediaType": "image/gif", "maxLength": 3}
        ]}),
        None,
    );
    assert!(types.items.to_string().contains("untagged"));
}

#[test]
fn struct_reader_reads_each_field_with_its_mode() {
    let types = generate(
        json!({"type": "object", "properties": {
            "id": {"type": "string"},
            "count": {"type": "integer"},
            "note": {"type": ["string", "null"]},
            "limit": {"type": "integer"},
            "tag": {"type": "string"}
        }, "required": ["id", "count", "note"], "additionalProperties": false}),
        None,
    );
    let file: syn::File = syn::parse2(types.items.clone()).expect("parses");
    let readers: Vec<&syn::Item> = file.items.iter().filter(|i| is_struct_reader(i)).collect();
    let [reader] = readers.as_slice() else {
        panic!("one reader: {readers:?}");
    };
    let expected: syn::Item = syn::parse2(quote! {
        impl<'de> ::k::__private::serde::Deserialize<'de> for Input {
            fn deserialize<D: ::k::__private::serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                use ::k::__private::serde_helpers as H;
                static SHAPE: H::StructShape = H::StructShape {
                    name: "Input",
                    fields: &["count", "id", "limit", "note", "tag"],
                    unknown: H::UnknownProperties::Deny,
                };
                struct Slots {
                    count: Option<i64>,
                    id: Option<String>,
                    limit: Option<i64>,
                    note: Option<Option<String>>,
                    tag: Option<String>,
                }
                fn put<X>(_s: &mut Slots, _i: usize, _v: H::Json) -> ::core::result::Result<(), H::StructError> {
                    match _i {
                        0 => _s.count = ::core::option::Option::Some(H::integer_value(_v)?),
                        1 => _s.id = ::core::option::Option::Some(H::value(_v)?),
                        2 => _s.limit = ::core::option::Option::Some(H::integer_value(_v)?),
                        3 => _s.note = ::core::option::Option::Some(H::value(_v)?),
                        4 => _s.tag = ::core::option::Option::Some(H::value(_v)?),
                        _ => {}
                    }
                    ::core::result::Result::Ok(())
                }
                fn finish<X>(_s: Slots, _f: &mut H::StructFields) -> ::core::result::Result<Input, H::StructError> {
                    ::core::result::Result::Ok(Input {
                        count: _f.present(0, _s.count)?,
                        id: _f.required(1, _s.id)?,
                        limit: _s.limit,
                        note: _f.present(3, _s.note)?,
                        tag: _s.tag,
                    })
                }
                let slots = Slots {
                    count: ::core::option::Option::None,
                    id: ::core::option::Option::None,
                    limit: ::core::option::Option::None,
                    note: ::core::option::Option::None,
                    tag: ::core::option::Option::None,
                };
                H::deserialize_struct(deserializer, &SHAPE, slots, put::<D>, finish::<D>)
            }
        }
    })
    .expect("parses");
    assert_eq!(quote!(#reader).to_string(), quote!(#expected).to_string());
}

#[test]
fn string_enum_reader_matches_the_variant_index() {
    let types = generate(
        json!({"type": "string", "enum": ["in-progress", "done", "+1"]}),
        None,
    );
    let file: syn::File = syn::parse2(types.items.clone()).expect("parses");
    let readers: Vec<&syn::Item> = file.items.iter().filter(|i| is_struct_reader(i)).collect();
    let expected: syn::File = syn::parse2(quote! {
        impl Input {
            const SHAPE: ::k::__private::serde_helpers::EnumShape = ::k::__private::serde_helpers::EnumShape {
                name: "Input",
                variants: &["in-progress", "done", "+1"],
            };
            /// The value's JSON string.
            pub fn as_str(self) -> &'static str {
                Self::SHAPE.variants[self as usize]
            }
            fn from_index(index: usize) -> Self {
                match index {
                    0 => Self::InProgress,
                    1 => Self::Done,
                    _ => Self::Plus1,
                }
            }
        }
        impl ::core::fmt::Display for Input {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl ::core::str::FromStr for Input {
            type Err = ::k::__private::serde_helpers::UnknownEnumValue;
            fn from_str(value: &str) -> ::core::result::Result<Self, Self::Err> {
                ::k::__private::serde_helpers::parse_string_enum(value, &Self::SHAPE).map(Self::from_index)
            }
        }
        impl<'de> ::k::__private::serde::Deserialize<'de> for Input {
            fn deserialize<D: ::k::__private::serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                ::k::__private::serde_helpers::deserialize_string_enum(deserializer, &Self::SHAPE).map(Self::from_index)
            }
        }
    })
    .expect("parses");
    let readers: Vec<String> = readers.iter().map(|r| quote!(#r).to_string()).collect();
    let expected: Vec<String> = expected
        .items
        .iter()
        .map(|e| quote!(#e).to_string())
        .collect();
    assert_eq!(readers, expected);
}

/// A `$ref` prefixed with the root `$id` names a local schema, as the
/// validator and the export read it (`surface_manifest::schema::resolve_ref`):
/// the field is the target's type, not `serde_json::Value`.
#[test]
fn a_root_id_prefixed_ref_types_the_field_with_its_target() {
    let x = extras();
    let types = generate(
        json!({"$id": "https://x.test/s", "properties": {"a": {"$ref": "https://x.test/s#/$defs/Name"}},
               "$defs": {"Name": {"type": "string"}}}),
        None,
    );
    let (s, c, o, out) = (
        struct_derive(),
        serde_crate(),
        optional_attr(),
        opaque_output(),
    );
    assert_items(
        &types,
        quote! {
            #s #c
            pub struct Input {
                #o
                pub a: Option<InputName>,
                #x
            }
            pub type InputName = String;
            #out
        },
    );
    assert!(types.notes.is_empty(), "{:?}", types.notes);
}

/// Union arms are looked at through the same resolver: a `null` arm or a
/// discriminated arm behind `<root $id>#/…` (percent-encoded too) reads as
/// it does behind `#/…`, and a `discriminator` mapping names an arm however
/// its `$ref` is spelled.
#[test]
fn union_arms_behind_root_id_refs_are_seen_through() {
    let schema = |prefix: &str| {
        json!({"$id": "https://x.test/s", "type": "object",
        "properties": {
            "maybe": {"anyOf": [{"$ref": format!("{prefix}#/%24defs/Nothing")}, {"type": "string"}]},
            "pet": {"oneOf": [{"$ref": format!("{prefix}#/$defs/Dog")}, {"$ref": format!("{prefix}#/$defs/Cat")}],
                    "discriminator": {"propertyName": "petType", "mapping": {"dog": "#/$defs/Dog"}}}
        },
        "$defs": {
            "Nothing": {"type": "null"},
            "Dog": {"type": "object", "properties": {"petType": {"type": "string"}}, "required": ["petType"]},
            "Cat": {"type": "object", "properties": {"petType": {"type": "string"}}, "required": ["petType"]}
        }})
    };
    let through_id = generate(schema("https://x.test/s"), None);
    let local = generate(schema(""), None);
    assert_eq!(through_id.items.to_string(), local.items.to_string());
    let text = through_id.items.to_string();
    assert!(
        text.contains("pub maybe : Option < Option < String > >"),
        "{text}"
    );
    assert!(text.contains("tag = \"petType\""), "{text}");
    assert!(text.contains("# [serde (rename = \"dog\")] Dog"), "{text}");
}

/// References that do not resolve say why, and never panic.
#[test]
fn unresolved_refs_are_value_with_a_note_saying_why() {
    let types = generate(
        json!({"type": "object", "properties": {
            "anchor": {"$ref": "#thing"},
            "bad": {"$ref": "#/%FF"},
            "list": {"$ref": "#/$defs/list"}
        }, "$defs": {"list": [1]}}),
        None,
    );
    assert_eq!(
        types.notes,
        [
            "Input schema at `#/properties/anchor`: `$ref` \"#thing\" names an anchor, which is not resolved; represented as `serde_json::Value`.",
            "Input schema at `#/properties/bad`: `$ref` \"#/%FF\" is not a percent-encoded JSON Pointer; represented as `serde_json::Value`.",
            "Input schema at `#/properties/list`: `$ref` \"#/$defs/list\" names a value that is not a schema; represented as `serde_json::Value`.",
        ]
    );
}

/// The keywords this generator skips as annotations come from the shared
/// table; every name of the list it kept before is one there.
#[test]
fn the_shared_annotation_table_covers_the_old_list() {
    for name in [
        "description",
        "title",
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "default",
        "example",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "nullable",
        "discriminator",
        "externalDocs",
        "xml",
        "x-anything",
    ] {
        assert!(surface_manifest::schema::is_annotation(name), "{name}");
    }
    for name in [
        "type",
        "properties",
        "required",
        "$ref",
        "allOf",
        "minLength",
    ] {
        assert!(!surface_manifest::schema::is_annotation(name), "{name}");
    }
}
