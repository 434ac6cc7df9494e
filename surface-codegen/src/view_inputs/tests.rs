use std::path::PathBuf;

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
    .map(|t| {
        // The expansion is items of a module.
        syn::parse2::<syn::File>(t.clone()).expect("the expansion parses as items");
        t.to_string()
    })
    .map_err(messages)
}

fn messages(e: syn::Error) -> String {
    e.into_iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The devices table's inputs (`examples/devices-api/view-inputs.json`).
const DEVICES: &str = r#"{
  "SelectRows": {"type": "object",
    "properties": {"deviceIds": {"type": "array", "items": {"type": "string"},
        "description": "Ids of visible rows to select; replaces the selection."}},
    "required": ["deviceIds"], "additionalProperties": false},
  "FilterRows": {"type": "object",
    "properties": {"status": {"type": "string", "enum": ["active", "disabled"],
        "description": "Show only devices with this status; omit to show all."}},
    "additionalProperties": false},
  "ShowDetails": {"type": "object",
    "properties": {"deviceId": {"type": "string", "minLength": 1,
        "description": "Id of the device whose details the panel shows."}},
    "required": ["deviceId"], "additionalProperties": false}
}"#;

#[test]
fn each_schema_becomes_a_module_a_reexport_and_the_view_input_impl() {
    let out = expand(DEVICES).unwrap();
    for (module, ty) in [
        ("select_rows", "SelectRows"),
        ("filter_rows", "FilterRows"),
        ("show_details", "ShowDetails"),
    ] {
        assert!(out.contains(&format!("pub mod {module} {{")), "{out}");
        assert!(
            out.contains(&format!("pub use self :: {module} :: Input as {ty} ;")),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "impl :: agent_surface :: ViewInput for {module} :: Input {{"
            )),
            "{out}"
        );
    }
    // The schema text is the file's schema in canonical JSON (keys sorted,
    // compact), as the agent sees it.
    let select = r#"const INPUT_SCHEMA_JSON : & 'static str = "{\"additionalProperties\":false,\"properties\":{\"deviceIds\":{\"description\":\"Ids of visible rows to select; replaces the selection.\",\"items\":{\"type\":\"string\"},\"type\":\"array\"}},\"required\":[\"deviceIds\"],\"type\":\"object\"}" ;"#;
    assert!(out.contains(select), "{out}");
    let details = r#"const INPUT_SCHEMA_JSON : & 'static str = "{\"additionalProperties\":false,\"properties\":{\"deviceId\":{\"description\":\"Id of the device whose details the panel shows.\",\"minLength\":1,\"type\":\"string\"}},\"required\":[\"deviceId\"],\"type\":\"object\"}" ;"#;
    assert!(out.contains(details), "{out}");
    // The validator is generated, typed through the facade.
    assert!(
        out.contains(
            "const VALIDATOR : :: agent_surface :: __private :: validation :: Validator ="
        ),
        "{out}"
    );
    // The types are manifest!'s: fields with their descriptions, the enum
    // named as a nested type is (`InputStatus`), no `Output` alias.
    assert!(out.contains("pub struct Input { # [doc = \" Ids of visible rows to select; replaces the selection.\"] # [serde (rename = \"deviceIds\")] pub device_ids : Vec < String > , }"), "{out}");
    assert!(out.contains("pub enum InputStatus"), "{out}");
    assert!(out.contains("pub status : Option < InputStatus >"), "{out}");
    assert!(!out.contains("Output"), "{out}");
    // In the order written.
    let positions: Vec<usize> = [
        "pub mod select_rows",
        "pub mod filter_rows",
        "pub mod show_details",
    ]
    .iter()
    .map(|m| out.find(m).unwrap())
    .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}

#[test]
fn the_crate_path_names_the_facade_everywhere() {
    let out = expand_view_inputs_text(
        DEVICES,
        "view-inputs.json",
        &quote!(::my_facade),
        Span::call_site(),
    )
    .unwrap()
    .to_string();
    assert!(!out.contains("agent_surface"), "{out}");
    assert!(
        out.contains("impl :: my_facade :: ViewInput for select_rows :: Input"),
        "{out}"
    );
}

#[test]
fn keys_named_like_keywords_get_the_manifest_module_names() {
    // `Type` → `r#type`, `Super` → `super_` (as procedure path segments).
    let out = expand(
        r#"{"Type": {"type": "object", "properties": {}}, "Super": {"type": "object", "properties": {}}}"#,
    )
    .unwrap();
    assert!(out.contains("pub mod r#type {"), "{out}");
    assert!(
        out.contains("pub use self :: r#type :: Input as Type ;"),
        "{out}"
    );
    assert!(out.contains("pub mod super_ {"), "{out}");
}

#[test]
fn a_schema_without_properties_of_its_own_is_a_nominal_type_or_an_error() {
    // No arguments: a struct without fields.
    let out = expand(
        r#"{"ClearSelection": {"type": "object", "properties": {}, "additionalProperties": false}}"#,
    )
    .unwrap();
    assert!(out.contains("pub struct Input { }"), "{out}");
    // A `$ref` root: `Input` is an alias of a struct of the module.
    let out = expand(
        r##"{"Pick": {"type": "object", "$ref": "#/$defs/Row", "$defs": {"Row": {"type": "object", "properties": {"id": {"type": "string"}}}}}}"##,
    )
    .unwrap();
    assert!(out.contains("pub type Input = InputRow ;"), "{out}");
    // A tagged union: an enum.
    let out = expand(
        r#"{"Open": {"type": "object", "oneOf": [
            {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"properties": {"kind": {"const": "b"}}, "required": ["kind"]}]}}"#,
    )
    .unwrap();
    assert!(out.contains("pub enum Input {"), "{out}");
    // A map: nothing the invoking crate can implement `ViewInput` for.
    assert_eq!(
        expand(r#"{"Rows": {"type": "object"}}"#).unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` gives no struct of named arguments (its generated type would be `BTreeMap<String, serde_json::Value>`, which cannot implement `ViewInput`); declare the arguments in `properties` (`\"properties\": {}` for a capability that takes none)"
    );
    assert_eq!(
        expand(r#"{"Tags": {"type": "object", "additionalProperties": {"type": "string"}}}"#)
            .unwrap_err(),
        "`view-inputs.json`: the schema of `Tags` gives no struct of named arguments (its generated type would be `BTreeMap<String, String>`, which cannot implement `ViewInput`); declare the arguments in `properties` (`\"properties\": {}` for a capability that takes none)"
    );
}

#[test]
fn bad_keys_are_errors_that_say_how_to_fix_them() {
    assert_eq!(
        expand(r#"{"select_rows": {"type": "object", "properties": {}}}"#).unwrap_err(),
        "`view-inputs.json`: the key `select_rows` is not an UpperCamelCase Rust type name (ASCII letters and digits, starting with an uppercase letter, e.g. `SelectRows`); write it as `SelectRows`"
    );
    assert_eq!(
        expand(r#"{"show-details": {"type": "object", "properties": {}}}"#).unwrap_err(),
        "`view-inputs.json`: the key `show-details` is not an UpperCamelCase Rust type name (ASCII letters and digits, starting with an uppercase letter, e.g. `SelectRows`); write it as `ShowDetails`"
    );
    // No suggestion when converting does not give a type name either.
    assert_eq!(
        expand(r#"{"1st": {"type": "object", "properties": {}}}"#).unwrap_err(),
        "`view-inputs.json`: the key `1st` is not an UpperCamelCase Rust type name (ASCII letters and digits, starting with an uppercase letter, e.g. `SelectRows`)"
    );
    assert_eq!(
        expand(r#"{"": {"type": "object", "properties": {}}}"#).unwrap_err(),
        "`view-inputs.json`: the key `` is not an UpperCamelCase Rust type name (ASCII letters and digits, starting with an uppercase letter, e.g. `SelectRows`)"
    );
    assert_eq!(
        expand(r#"{"Self": {"type": "object", "properties": {}}}"#).unwrap_err(),
        "`view-inputs.json`: the key `Self` is a Rust keyword; choose another type name"
    );
    assert_eq!(
        expand(r#"{"HttpStatus": {"type": "object", "properties": {}}, "HTTPStatus": {"type": "object", "properties": {}}}"#)
            .unwrap_err(),
        "`view-inputs.json`: the keys `HttpStatus` and `HTTPStatus` both give the module `http_status`; rename one of them"
    );
    // serde_json would keep the last of the two silently.
    assert_eq!(
        expand(r#"{"Rows": {"type": "object", "properties": {}}, "Rows": {"type": "array"}}"#)
            .unwrap_err(),
        "`view-inputs.json`: the key `Rows` is written more than once; keep one (a JSON reader would silently keep only the last)"
    );
}

#[test]
fn bad_files_and_non_object_schemas_are_errors_that_say_which() {
    assert_eq!(
        expand("[1]").unwrap_err(),
        "the view-inputs file `view-inputs.json` must be a JSON object: {\"SelectRows\": { \"type\": \"object\", … }, …}"
    );
    assert_eq!(
        expand("{").unwrap_err(),
        "the view-inputs file `view-inputs.json` is not valid JSON (line 1, column 1): EOF while parsing an object at line 1 column 1"
    );
    assert_eq!(
        expand(r#"{"Rows": {"type": "array"}}"#).unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` must have `\"type\": \"object\"`: a view capability's input is an object of named arguments"
    );
    assert_eq!(
        expand(r#"{"Rows": {"type": ["object", "null"], "properties": {}}}"#).unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` must have `\"type\": \"object\"`: a view capability's input is an object of named arguments"
    );
    assert_eq!(
        expand(r#"{"Rows": true}"#).unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` must be a JSON Schema object, `{\"type\": \"object\", …}`"
    );
    assert_eq!(
        expand(r#"{"Rows": {"type": "object", "properties": [1]}}"#).unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` has a `properties` that is not an object"
    );
    // An empty file declares nothing, which is not an error.
    assert_eq!(expand("{}").unwrap(), "");
}

#[test]
fn unsupported_keywords_are_named_with_their_json_pointer() {
    assert_eq!(
        expand(r##"{"Rows": {"type": "object", "properties": {"a": {"$dynamicRef": "#x"}}}}"##)
            .unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` cannot be checked by a generated validator: `$dynamicRef` at `/properties/a/$dynamicRef`: is not supported by the generated validator; change the schema"
    );
    assert_eq!(
        expand(r#"{"Rows": {"type": "object", "properties": {}, "unevaluatedProperties": false}}"#)
            .unwrap_err(),
        "`view-inputs.json`: the schema of `Rows` cannot be checked by a generated validator: `unevaluatedProperties` at `/unevaluatedProperties`: is not supported by the generated validator; change the schema"
    );
    // Every problem is reported, not only the first, in the order written.
    let all = expand(
        r#"{"bad": {"type": "object"}, "Rows": {"type": "array"},
            "Tags": {"type": "object", "properties": {"t": {"type": "array", "unevaluatedItems": false}}}}"#,
    )
    .unwrap_err();
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 3, "{all}");
    assert!(lines[0].contains("the key `bad`"), "{all}");
    assert!(lines[1].contains("the schema of `Rows` must have"), "{all}");
    assert!(
        lines[2].contains("`unevaluatedItems` at `/properties/t/unevaluatedItems`"),
        "{all}"
    );
}

#[test]
fn unsupported_parts_are_reported_up_to_manifests_limit_then_counted() {
    let entries: Vec<String> = (0..=MAX_REPORTED_UNSUPPORTED)
        .map(|i| {
            format!("\"T{i}\": {{\"type\": \"object\", \"properties\": {{}}, \"unevaluatedProperties\": false}}")
        })
        .collect();
    let all = expand(&format!("{{{}}}", entries.join(","))).unwrap_err();
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), MAX_REPORTED_UNSUPPORTED + 1, "{all}");
    assert_eq!(
        lines[MAX_REPORTED_UNSUPPORTED],
        "`view-inputs.json`: … and 1 more schema parts the generated validator does not support"
    );
}

#[test]
fn too_many_entries_are_refused() {
    let entries: Vec<String> = (0..=MAX_VIEW_INPUTS)
        .map(|i| format!("\"T{i}\": {{\"type\": \"object\", \"properties\": {{}}}}"))
        .collect();
    let text = format!("{{{}}}", entries.join(","));
    assert_eq!(
        expand(&text).unwrap_err(),
        format!(
            "the view-inputs file `view-inputs.json` holds {} entries, over the limit of {MAX_VIEW_INPUTS}; split it into several files",
            MAX_VIEW_INPUTS + 1
        )
    );
    // The limit itself is accepted.
    let text = format!("{{{}}}", entries[..MAX_VIEW_INPUTS].join(","));
    assert!(expand(&text).is_ok());
}

#[test]
fn the_arguments_are_a_path_and_an_optional_crate() {
    let args: ViewInputsArgs = syn::parse2(quote!("a.json", crate = ::my_facade)).unwrap();
    assert_eq!(args.path.value(), "a.json");
    assert!(args.crate_path.is_some());
    let args: ViewInputsArgs = syn::parse2(quote!("a.json",)).unwrap();
    assert!(args.crate_path.is_none());
    let err = syn::parse2::<ViewInputsArgs>(quote!("a.json", validation = runtime))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "unknown `view_inputs!` argument `validation`; the only one is `crate = path`"
    );
    let err = syn::parse2::<ViewInputsArgs>(quote!("a.json", crate = ::a, crate = ::b))
        .err()
        .unwrap();
    assert_eq!(err.to_string(), "`crate = path` is given twice; keep one");
    let err = syn::parse2::<ViewInputsArgs>(quote!(a)).err().unwrap();
    assert_eq!(
        err.to_string(),
        "expected the view-inputs file as a string literal: `view_inputs!(\"view-inputs.json\")`"
    );
}

/// A fresh directory under the system's temporary one.
fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("surface-view-inputs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn expand_file(written: &str, dir: Option<&std::path::Path>) -> Result<String, String> {
    let args: ViewInputsArgs = syn::parse2(quote!(#written)).unwrap();
    expand_view_inputs_args(&args, dir)
        .map(|t| t.to_string())
        .map_err(messages)
}

#[test]
fn the_file_is_found_like_manifests_and_embedded_for_rebuilds() {
    let dir = temp_dir("file");
    std::fs::write(dir.join("view-inputs.json"), DEVICES).unwrap();
    let out = expand_file("view-inputs.json", Some(&dir)).unwrap();
    let canonical = std::fs::canonicalize(dir.join("view-inputs.json")).unwrap();
    assert!(
        out.starts_with(&format!(
            "const _ : & str = :: core :: include_str ! ({:?}) ;",
            canonical.display().to_string()
        )),
        "{out}"
    );
    assert!(out.contains("pub mod select_rows"), "{out}");

    assert_eq!(
        expand_file("/abs/view-inputs.json", Some(&dir)).unwrap_err(),
        "absolute view-inputs paths only work on the machine that wrote them: `/abs/view-inputs.json`; give a path relative to the crate root (CARGO_MANIFEST_DIR)"
    );
    assert_eq!(
        expand_file("", Some(&dir)).unwrap_err(),
        "the view-inputs path is empty; give a path relative to the crate root, e.g. `view_inputs!(\"view-inputs.json\")`"
    );
    assert_eq!(
        expand_file("view-inputs.json", None).unwrap_err(),
        "CARGO_MANIFEST_DIR is not set; `view_inputs!` must be compiled by cargo"
    );
    let missing = expand_file("missing.json", Some(&dir)).unwrap_err();
    let real = std::fs::canonicalize(&dir).unwrap().join("missing.json");
    assert!(
        missing.starts_with(&format!(
            "cannot read the view-inputs file `missing.json` (looked for `{}`): ",
            real.display()
        )),
        "{missing}"
    );
    assert!(
        missing.ends_with(
            "; relative paths are resolved against the including crate's root (CARGO_MANIFEST_DIR)"
        ),
        "{missing}"
    );

    // One byte over the limit is refused without reading the whole file.
    let mut big = vec![b' '; MAX_VIEW_INPUTS_BYTES - 1];
    big.extend_from_slice(b"{}");
    std::fs::write(dir.join("big.json"), &big).unwrap();
    assert_eq!(
        expand_file("big.json", Some(&dir)).unwrap_err(),
        format!("the view-inputs file `big.json` is over the limit of {MAX_VIEW_INPUTS_BYTES} bytes; split it")
    );
    std::fs::write(dir.join("limit.json"), &big[1..]).unwrap();
    assert!(expand_file("limit.json", Some(&dir)).is_ok());

    std::fs::write(dir.join("latin1.json"), b"{\"Caf\xe9\": 1}").unwrap();
    let latin1 = expand_file("latin1.json", Some(&dir)).unwrap_err();
    assert!(
        latin1.contains("stream did not contain valid UTF-8"),
        "{latin1}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
