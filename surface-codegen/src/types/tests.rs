//! Unit tests: one per construct, asserting the exact generated code.

use quote::quote;
use serde_json::{json, Value};

use super::*;

/// The generated items for `input` (and `output`), formatted.
fn render(input: Value, output: Option<Value>) -> (String, ProcedureTypes) {
    let options = TypeOptions { crate_path: quote!(::k) };
    let types = generate_procedure_types(&input, output.as_ref(), &options);
    let file: syn::File = syn::parse2(types.items.clone()).expect("generated items parse");
    (prettyplease::unparse(&file), types)
}

#[test]
fn scratch() {
    let (code, t) = render(json!({
        "type": "object",
        "properties": {
            "deviceIds": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Ids"},
            "reason": {"type": "string"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "maybe": {"type": ["string", "null"]},
            "type": {"enum": ["a", "b"]},
            "kind": {"const": 5},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false},
            "shape": {"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"], "additionalProperties": false},
                {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}
            ]},
            "tree": {"$ref": "#/$defs/__schema0"}
        },
        "required": ["deviceIds", "note", "type"],
        "$defs": {"__schema0": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/__schema0"}}, "next": {"$ref": "#/$defs/__schema0"}}}}
    }), None);
    println!("{code}\n{:#?}", t.notes);
}
