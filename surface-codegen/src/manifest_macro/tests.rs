use super::*;
use surface_manifest::AgentManifest;

fn opts() -> ExpandOptions {
    ExpandOptions {
        crate_path: quote!(::agent_surface),
        include_path: "/fixtures/test.manifest.json".into(),
        display_path: "test.manifest.json".into(),
        invocation_site: "src/lib.rs:1:1".into(),
        validation: ValidationMode::Generated,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
    }
}

fn err_text(text: &str) -> Vec<String> {
    expand_manifest_text(text, &opts(), Span::call_site())
        .unwrap_err()
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn s4_1_invalid_json_names_line_and_column() {
    let errs = err_text("{\n  \"tools\": {,}\n}");
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("invalid agent manifest `test.manifest.json` at line 2, column 13: "),
        "{}",
        errs[0]
    );
}

#[test]
fn s4_1_every_issue_is_reported() {
    let t = r#"{"effect":"server-query","inputSchema":{}}"#;
    let text = format!(r#"{{"tools":{{"a.b":{t},"a.b.c":{t},"x.__proto__":{t},"a.b":{t}}}}}"#);
    let errs = err_text(&text);
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(errs[0].contains("`a.b` appears more than once"));
    assert!(errs[1].contains("unsafe segment `__proto__`"));
    assert!(errs[2].contains("`a.b` is a prefix of `a.b.c`"));
}

#[test]
fn path_issues_and_reserved_names_are_reported_in_one_build() {
    let t = r#"{"effect":"server-query","inputSchema":{}}"#;
    let deep = vec!["s"; MAX_PATH_SEGMENTS + 1].join(".");
    let text = format!(
        r#"{{"tools":{{"a.b":{t},"a.b":{t},"authority":{t},"{deep}":{t},"x.__proto__":{t}}}}}"#
    );
    let errs = err_text(&text);
    assert_eq!(
        errs,
        [
            "invalid agent manifest `test.manifest.json`: procedure path `a.b` appears more than once in `tools`; keep one entry per path".to_string(),
            "invalid agent manifest `test.manifest.json`: procedure path `x.__proto__` has an unsafe segment `__proto__`: `__proto__`, `prototype` and `constructor` are reserved JavaScript prototype names".to_string(),
            "invalid agent manifest `test.manifest.json`: the root-level procedure `authority` would generate `fn authority`, which clashes with the generated `authority()`; nest it under a router namespace (e.g. `admin.authority`)".to_string(),
            format!("invalid agent manifest `test.manifest.json`: the procedure path `{deep}` has 33 segments; `manifest!` generates one nested module per segment and supports at most 32"),
        ]
    );
}

#[test]
fn s3_root_authority_procedure_is_reserved() {
    let errs = err_text(r#"{"tools":{"authority":{"effect":"server-query","inputSchema":{}}}}"#);
    assert_eq!(errs.len(), 1);
    assert!(errs[0].contains("clashes with the generated `authority()`"));
    // Nested `authority` segments are fine (different scope).
    assert!(expand_manifest_text(
        r#"{"tools":{"admin.authority":{"effect":"server-query","inputSchema":{}}}}"#,
        &opts(),
        Span::call_site()
    )
    .is_ok());
}

#[test]
fn s4_1_missing_file_names_the_resolved_path() {
    let args: ManifestArgs = syn::parse2(quote!("nope/missing.json")).unwrap();
    let e = expand_manifest_args(&args, Some(Path::new("/no/such/crate"))).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("cannot read the agent manifest `nope/missing.json` (looked for `/no/such/crate/nope/missing.json`): "),
        "{msg}"
    );
}

#[test]
fn s4_rebuild_include_str_names_the_canonical_absolute_path() {
    let args: ManifestArgs =
        syn::parse2(quote!("../tests/./fixtures/handwritten.manifest.json")).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tokens = expand_manifest_args(&args, Some(dir)).unwrap().to_string();
    let canonical =
        std::fs::canonicalize(dir.join("../tests/fixtures/handwritten.manifest.json")).unwrap();
    assert!(canonical.is_absolute());
    let expected = format!("include_str ! ({:?})", canonical.to_string_lossy());
    assert!(tokens.contains(&expected), "{expected} not in expansion");
    assert!(!canonical.to_string_lossy().contains(".."));
}

#[test]
fn module_tree_mirrors_router_and_authority_digests_match_runtime() {
    let text = r#"{"tools":{
        "devices.disable":{"description":"Disable devices","effect":"server-mutation","inputSchema":{"type":"object"}},
        "devices.listAll":{"effect":"server-query","inputSchema":{"type":"object"}},
        "ping":{"effect":"server-query","inputSchema":{"type":"object"}}
    }}"#;
    let tokens = expand_manifest_text(text, &opts(), Span::call_site()).unwrap();
    let file: syn::File = syn::parse2(tokens).unwrap();
    let names: Vec<String> = file
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m) => Some(format!("mod {}", m.ident)),
            syn::Item::Fn(f) => Some(format!("fn {}", f.sig.ident)),
            syn::Item::Const(c) => Some(format!("const {}", c.ident)),
            syn::Item::Macro(m) => m.ident.as_ref().map(|i| format!("macro {i}")),
            syn::Item::Use(u) => Some(format!("use {}", quote!(#u))),
            _ => None,
        })
        .collect();
    let m = AgentManifest::from_json_str(text).unwrap();
    let unique = &surface_manifest::sha256_hex(
        format!("{}\n:: agent_surface\nsrc/lib.rs:1:1", m.digest()).as_bytes(),
    )[..16];
    assert_eq!(
        names,
        vec![
            "const MANIFEST_JSON".to_string(),
            "const MANIFEST_DIGEST".into(),
            "fn authority".into(),
            "mod devices".into(),
            "mod ping".into(),
            "fn ping".into(),
            format!("macro __agent_surface_procedures_{unique}"),
            format!("use # [doc (hidden)] # [allow (unused_imports)] pub use __agent_surface_procedures_{unique} as __agent_surface_procedures ;"),
            "use # [doc (hidden)] # [allow (unused_imports)] pub use :: agent_surface :: __private as __agent_surface_private ;".into(),
        ]
    );
    let s = quote!(#file).to_string();
    assert!(s.contains(&format!("\"{}\"", m.digest())));
    assert!(s.contains(&format!(
        "\"{}\"",
        m.procedure_digest("devices.listAll").unwrap()
    )));
    assert!(s.contains("pub mod list_all"));
    assert!(s.contains("include_str ! (\"/fixtures/test.manifest.json\")"));
    assert!(s.contains("# [macro_export] macro_rules ! __agent_surface_procedures_"));
}

#[test]
fn lookup_macro_name_differs_by_invocation_site() {
    let text = r#"{"tools":{"a.b":{"effect":"server-query","inputSchema":{}}}}"#;
    let at = |site: &str| {
        let options = ExpandOptions {
            invocation_site: site.into(),
            validation: ValidationMode::Generated,
            typed_formats: Default::default(),
            runtime_validation: Vec::new(),
            ..opts()
        };
        let tokens = expand_manifest_text(text, &options, Span::call_site())
            .unwrap()
            .to_string();
        let start = tokens
            .find("macro_rules ! __agent_surface_procedures_")
            .unwrap();
        tokens[start..start + 60].to_string()
    };
    assert_eq!(at("src/lib.rs:3:5"), at("src/lib.rs:3:5"));
    assert_ne!(at("src/lib.rs:3:5"), at("src/lib.rs:9:5"));
}

#[test]
fn unsupported_schema_keyword_is_a_compile_error_naming_keyword_and_pointer() {
    let text = r##"{"tools":{
        "a.b":{"effect":"server-query","inputSchema":{"properties":{"x":{"unevaluatedProperties":false}}}},
        "a.c":{"effect":"server-query","inputSchema":{},"outputSchema":{"items":{"$dynamicRef":"#n"}}}
    }}"##;
    assert_eq!(
        err_text(text),
        [
            "the input schema of `a.b` cannot be checked by a generated validator: `unevaluatedProperties` at `/properties/x/unevaluatedProperties`: is not supported by the generated validator; change the schema, or validate this procedure at run time with `manifest!(\"…\", runtime_validation = [\"a.b\"])` (or the whole manifest with `validation = runtime`; both need the `dynamic` feature)",
            "the output schema of `a.c` cannot be checked by a generated validator: `$dynamicRef` at `/items/$dynamicRef`: is not supported by the generated validator; change the schema, or validate this procedure at run time with `manifest!(\"…\", runtime_validation = [\"a.c\"])` (or the whole manifest with `validation = runtime`; both need the `dynamic` feature)",
        ]
    );
}

#[test]
fn unsupported_schema_parts_are_reported_up_to_the_cap_then_counted() {
    let tools: Vec<String> = (0..MAX_REPORTED_UNSUPPORTED + 3)
        .map(|n| {
            format!(
                r#""p.t{n}":{{"effect":"server-query","inputSchema":{{"unevaluatedItems":false}}}}"#
            )
        })
        .collect();
    let errs = err_text(&format!(r#"{{"tools":{{{}}}}}"#, tools.join(",")));
    assert_eq!(errs.len(), MAX_REPORTED_UNSUPPORTED + 1);
    assert_eq!(
        errs[MAX_REPORTED_UNSUPPORTED],
        "… and 3 more schema parts the generated validator does not support"
    );
}

#[test]
fn every_input_and_declared_output_gets_a_generated_validator() {
    let text = r#"{"tools":{
        "a.b":{"effect":"server-query","inputSchema":{"type":"object"},"outputSchema":{"type":"string"}},
        "a.c":{"effect":"server-query","inputSchema":{"type":"object"}}
    }}"#;
    let out = expand_manifest_text(text, &opts(), Span::call_site())
        .unwrap()
        .to_string();
    // Three schemas, three validators (each `Validator::new(v0, e0)`).
    assert_eq!(
        out.matches("validation :: Validator :: new").count(),
        3,
        "{out}"
    );
    assert_eq!(
        out.matches("output : :: core :: option :: Option :: None")
            .count(),
        1
    );
}

#[test]
fn runtime_validation_generates_no_validator_and_accepts_any_keyword() {
    let text = r#"{"tools":{"a.b":{"effect":"server-query","inputSchema":{"unevaluatedProperties":false}}}}"#;
    let options = ExpandOptions {
        validation: ValidationMode::Runtime,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
        ..opts()
    };
    let out = expand_manifest_text(text, &options, Span::call_site())
        .unwrap()
        .to_string();
    assert!(!out.contains("Validator :: new"), "{out}");
    assert!(
        out.contains("input : :: core :: option :: Option :: None"),
        "{out}"
    );
}

fn listed(paths: &[&str]) -> Vec<syn::LitStr> {
    paths
        .iter()
        .map(|p| syn::LitStr::new(p, Span::call_site()))
        .collect()
}

#[test]
fn a_procedure_listed_in_runtime_validation_gets_no_validator_and_the_others_keep_theirs() {
    // `a.b` is unsupported (refused without the list), `a.c` is supported.
    let text = r#"{"tools":{
        "a.b":{"effect":"server-query","inputSchema":{"unevaluatedProperties":false},"outputSchema":{"type":"string"}},
        "a.c":{"effect":"server-query","inputSchema":{"type":"object"}}
    }}"#;
    let options = ExpandOptions {
        runtime_validation: listed(&["a.b"]),
        ..opts()
    };
    let out = expand_manifest_text(text, &options, Span::call_site())
        .unwrap()
        .to_string();
    // Only `a.c`'s input: `a.b`'s input and output are left to run time.
    assert_eq!(
        out.matches("validation :: Validator :: new").count(),
        1,
        "{out}"
    );
    assert_eq!(
        out.matches("input : :: core :: option :: Option :: None")
            .count(),
        1,
        "{out}"
    );
}

#[test]
fn runtime_validation_entries_must_name_procedures_once_and_not_repeat_validation_runtime() {
    let text = r#"{"tools":{
        "devices.disable":{"effect":"server-mutation","inputSchema":{}},
        "devices.list":{"effect":"server-query","inputSchema":{}}
    }}"#;
    let errors = |options: ExpandOptions| -> Vec<String> {
        expand_manifest_text(text, &options, Span::call_site())
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    };
    assert_eq!(
        errors(ExpandOptions {
            runtime_validation: listed(&["devices.disabel", "devices.list", "devices.list"]),
            ..opts()
        }),
        [
            "`runtime_validation` lists `devices.disabel`, which is not a procedure of this manifest; did you mean `devices.disable`?",
            "`devices.list` is listed twice in `runtime_validation`",
        ]
    );
    assert_eq!(
        errors(ExpandOptions {
            validation: ValidationMode::Runtime,
            runtime_validation: listed(&["devices.list"]),
            ..opts()
        }),
        ["`devices.list` is listed in `runtime_validation`, but `validation = runtime` already validates every procedure at run time; remove one of them"]
    );
}

/// The item names and `pub use` paths of the procedure module `name`
/// (under namespace `ns`) in an expansion.
fn module_items(file: &syn::File, ns: &str, name: &str) -> Vec<String> {
    let module = |items: &[syn::Item], wanted: &str| -> Option<Vec<syn::Item>> {
        items.iter().find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == wanted => m.content.as_ref().map(|(_, i)| i.clone()),
            _ => None,
        })
    };
    let inner = module(&file.items, ns)
        .and_then(|items| module(&items, name))
        .expect("module");
    inner
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(s) => Some(format!("struct {}", s.ident)),
            syn::Item::Enum(e) => Some(format!("enum {}", e.ident)),
            syn::Item::Use(u) => {
                let tree = &u.tree;
                Some(format!(
                    "use {}",
                    quote!(#tree).to_string().replace(' ', "")
                ))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn identical_helper_types_are_defined_once_and_re_exported() {
    let input = |mode_doc: &str| {
        serde_json::json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["fast", "slow"], "description": mode_doc},
            "retry": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["fast", "slow"], "description": mode_doc}}}
        }, "additionalProperties": false})
    };
    let tool = |doc: &str| serde_json::json!({"effect": "server-query", "inputSchema": input(doc)});
    let text = serde_json::json!({"tools": {
        "ns.a": tool("How"),
        "ns.b": tool("How"),
        "ns.c": tool("Other words"),
    }})
    .to_string();
    let tokens = expand_manifest_text(&text, &opts(), Span::call_site()).unwrap();
    let file: syn::File = syn::parse2(tokens).unwrap();
    assert_eq!(
        module_items(&file, "ns", "a"),
        [
            "struct Input",
            "enum InputMode",
            "struct InputRetry",
            "enum InputRetryMode",
            "enum Field"
        ]
    );
    // The same helper types (and what they name) come from `ns::a`; `Input`
    // stays the procedure's own.
    assert_eq!(
        module_items(&file, "ns", "b"),
        [
            "struct Input",
            "use super::super::ns::a::InputMode",
            "use super::super::ns::a::InputRetry",
            "use super::super::ns::a::InputRetryMode",
            "enum Field"
        ]
    );
    // A description differs: nothing is shared.
    assert_eq!(
        module_items(&file, "ns", "c"),
        module_items(&file, "ns", "a")
    );
}
