use proc_macro2::Span;
use quote::quote;

use super::*;

fn expand(text: &str) -> Result<String, String> {
    expand_view_inputs_text(
        text,
        "view-inputs.json",
        &quote!(::agent_surface),
        Span::call_site(),
    )
    .map(|t| t.to_string())
    .map_err(|e| {
        e.into_iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

const SELECT: &str = r#"{"SelectRows": {"type": "object",
    "properties": {"deviceIds": {"type": "array", "items": {"type": "string"},
        "description": "Ids of visible rows to select."}},
    "required": ["deviceIds"], "additionalProperties": false}}"#;

#[test]
fn a_schema_becomes_a_module_a_reexport_and_the_view_input_impl() {
    let out = expand(SELECT).unwrap();
    assert!(out.contains("pub mod select_rows"), "{out}");
    assert!(
        out.contains("pub use self :: select_rows :: Input as SelectRows"),
        "{out}"
    );
    assert!(
        out.contains("impl :: agent_surface :: ViewInput for select_rows :: Input"),
        "{out}"
    );
    // The schema text is the file's schema, compact.
    let text = r#"{\"additionalProperties\":false,\"properties\":{\"deviceIds\":{\"description\":\"Ids of visible rows to select.\",\"items\":{\"type\":\"string\"},\"type\":\"array\"}},\"required\":[\"deviceIds\"],\"type\":\"object\"}"#;
    assert!(out.contains(text), "{out}");
    assert!(out.contains("pub device_ids"), "{out}");
}

#[test]
fn bad_files_keys_and_schemas_are_errors_that_say_which() {
    assert_eq!(
        expand("[1]").unwrap_err(),
        "the view-inputs file `view-inputs.json` must be a JSON object: {\"SelectRows\": { \"type\": \"object\", … }, …}"
    );
    assert_eq!(
        expand("{").unwrap_err(),
        "the view-inputs file `view-inputs.json` is not valid JSON (line 1, column 1): EOF while parsing an object at line 1 column 1"
    );
    assert_eq!(
        expand(r#"{"select_rows": {"type": "object"}}"#).unwrap_err(),
        "`view-inputs.json`: the key `select_rows` is not an UpperCamelCase Rust type name (ASCII letters and digits, starting with an uppercase letter, e.g. `SelectRows`)"
    );
    assert_eq!(
        expand(r#"{"Self": {"type": "object"}}"#).unwrap_err(),
        "`view-inputs.json`: the key `Self` is a Rust keyword; choose another type name"
    );
    assert_eq!(
        expand(r#"{"Rows": {"type": "array"}}"#).unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` must have `\"type\": \"object\"`: a view capability's input is an object of named arguments"
    );
    assert_eq!(
        expand(r#"{"Rows": true}"#).unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` must be a JSON Schema object, `{\"type\": \"object\", …}`"
    );
    assert_eq!(
        expand(r##"{"Rows": {"type": "object", "properties": {"a": {"$dynamicRef": "#x"}}}}"##)
            .unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` cannot be checked by a generated validator: `$dynamicRef` at `/properties/a/$dynamicRef`: is not supported by the generated validator; change the schema"
    );
    // Every problem is reported, not only the first.
    let both = expand(r#"{"bad": {"type": "object"}, "Rows": {"type": "array"}}"#).unwrap_err();
    assert_eq!(both.lines().count(), 2, "{both}");
}

#[test]
fn too_many_entries_are_refused() {
    let entries: Vec<String> = (0..=MAX_VIEW_INPUTS)
        .map(|i| format!("\"T{i}\": {{\"type\": \"object\"}}"))
        .collect();
    let text = format!("{{{}}}", entries.join(","));
    assert_eq!(
        expand(&text).unwrap_err(),
        format!(
            "the view-inputs file `view-inputs.json` holds {} entries, over the limit of {MAX_VIEW_INPUTS}",
            MAX_VIEW_INPUTS + 1
        )
    );
}

#[test]
fn the_arguments_are_a_path_and_an_optional_crate() {
    let args: ViewInputsArgs = syn::parse2(quote!("a.json", crate = ::my_facade)).unwrap();
    assert_eq!(args.path.value(), "a.json");
    assert!(args.crate_path.is_some());
    let err = syn::parse2::<ViewInputsArgs>(quote!("a.json", validation = runtime))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "unknown `view_inputs!` argument `validation`; the only one is `crate = path`"
    );
    let err = syn::parse2::<ViewInputsArgs>(quote!(a)).err().unwrap();
    assert_eq!(
        err.to_string(),
        "expected the view-inputs file as a string literal: `view_inputs!(\"view-inputs.json\")`"
    );
}
