//! Hostile manifests against the `manifest!` expansion: the fixtures under
//! `tests/fixtures/codegen/adversarial/` (code fences, HTML and link
//! definitions in every text position; names that collide after mapping)
//! and generated ones (32,768 colliding names, deep nesting, long paths).
//!
//! Each expansion is parsed with syn. Every doc comment it holds is parsed
//! as rustdoc parses it (pulldown-cmark with rustdoc's options) and must be
//! plain paragraphs of text and inline code: no code block (a doctest that
//! `cargo test --doc` would run), no HTML, no link. The facade's
//! `tests/codegen.rs` compiles the fixtures.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use quote::quote;
use serde_json::{json, Value};
use surface_codegen::manifest_macro::{expand_manifest_text, ExpandOptions};

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../tests/fixtures/codegen/adversarial/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

fn options(display_path: &str) -> ExpandOptions {
    ExpandOptions {
        crate_path: quote!(::agent_surface),
        include_path: "/fixtures/adversarial.manifest.json".into(),
        display_path: display_path.into(),
        invocation_site: String::new(),
        validation: surface_codegen::manifest_macro::ValidationMode::Generated,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
    }
}

/// Expands `text`; the expansion must parse as a Rust file.
fn expand(text: &str, display_path: &str) -> TokenStream {
    expand_with(text, &options(display_path))
}

/// [`expand`] with `validation = runtime`: for manifests whose schemas are
/// deliberately broken (no validator can be generated for them).
fn expand_runtime(text: &str, display_path: &str) -> TokenStream {
    let options = ExpandOptions {
        validation: surface_codegen::manifest_macro::ValidationMode::Runtime,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
        ..options(display_path)
    };
    expand_with(text, &options)
}

fn expand_with(text: &str, options: &ExpandOptions) -> TokenStream {
    let tokens = expand_manifest_text(text, options, Span::call_site())
        .unwrap_or_else(|e| panic!("expansion failed: {e}"));
    syn::parse2::<syn::File>(tokens.clone()).expect("the expansion parses as a Rust file");
    tokens
}

/// The doc comment of every item, field and variant in `tokens`: the
/// `#[doc = "…"]` lines of one attribute list joined with `\n`, as rustdoc
/// joins them.
fn doc_comments(tokens: TokenStream) -> Vec<String> {
    fn walk(tokens: TokenStream, out: &mut Vec<String>) {
        let mut current: Vec<String> = Vec::new();
        let mut iter = tokens.into_iter().peekable();
        while let Some(tree) = iter.next() {
            if let TokenTree::Punct(p) = &tree {
                if p.as_char() == '#' {
                    if let Some(TokenTree::Group(g)) = iter.peek() {
                        if g.delimiter() == Delimiter::Bracket {
                            let attr = g.stream();
                            iter.next();
                            if let Some(line) = doc_line(attr) {
                                current.push(line);
                            }
                            continue;
                        }
                    }
                }
            }
            if !current.is_empty() {
                out.push(current.join("\n"));
                current.clear();
            }
            if let TokenTree::Group(g) = tree {
                walk(g.stream(), out);
            }
        }
        if !current.is_empty() {
            out.push(current.join("\n"));
        }
    }
    let mut out = Vec::new();
    walk(tokens, &mut out);
    out
}

/// The text of `doc = "…"`.
fn doc_line(attr: TokenStream) -> Option<String> {
    let mut iter = attr.into_iter();
    match (iter.next(), iter.next(), iter.next(), iter.next()) {
        (
            Some(TokenTree::Ident(i)),
            Some(TokenTree::Punct(eq)),
            Some(TokenTree::Literal(lit)),
            None,
        ) if i == "doc" && eq.as_char() == '=' => {
            let lit: syn::LitStr =
                syn::parse2(TokenTree::Literal(lit).into()).expect("doc is a string");
            Some(lit.value())
        }
        _ => None,
    }
}

/// rustdoc's markdown options (`main_body_opts` in `html/markdown.rs`).
fn rustdoc_options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_SMART_PUNCTUATION
}

/// Checks one doc comment the way rustdoc reads it and returns its text
/// and code content. Allowed: paragraphs of text, inline code and line
/// breaks, and the `# Panics` heading the expansion writes itself.
fn rendered(doc: &str) -> Result<String, String> {
    let mut content = String::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(doc, rustdoc_options()) {
        match event {
            Event::Start(Tag::Paragraph) => {}
            Event::End(TagEnd::Paragraph) => content.push('\n'),
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => match heading.take().as_deref() {
                Some("Panics") => {}
                other => return Err(format!("heading {other:?} in {doc:?}")),
            },
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = &mut heading {
                    h.push_str(&t);
                }
                content.push_str(&t);
            }
            Event::SoftBreak => content.push(' '),
            other => return Err(format!("{other:?} in doc comment {doc:?}")),
        }
    }
    Ok(content)
}

/// Every doc comment of `tokens` is inert; returns their rendered content.
fn assert_docs_inert(tokens: &TokenStream) -> String {
    let docs = doc_comments(tokens.clone());
    assert!(!docs.is_empty());
    let mut all = String::new();
    let mut problems = Vec::new();
    for doc in &docs {
        match rendered(doc) {
            Ok(text) => all.push_str(&text),
            Err(e) => problems.push(e),
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} doc comments are not plain text:\n{}",
        problems.len(),
        docs.len(),
        problems.join("\n")
    );
    all
}

/// Every identifier of `tokens` is an ASCII Rust identifier (raw for
/// keywords): manifest text only ever reaches string literals.
fn assert_idents_ascii(tokens: TokenStream) {
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                let text = ident.to_string();
                let bare = text.strip_prefix("r#").unwrap_or(&text);
                assert!(
                    bare.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "identifier {text:?}"
                );
            }
            TokenTree::Group(g) => assert_idents_ascii(g.stream()),
            TokenTree::Literal(lit) => {
                let text = lit.to_string();
                if text.starts_with('"') {
                    syn::parse2::<syn::LitStr>(TokenTree::Literal(lit).into())
                        .expect("string literals are whole literals");
                }
            }
            TokenTree::Punct(_) => {}
        }
    }
}

/// The text positions of `doc_injection.manifest.json` whose payload is
/// documented (the others become identifiers or are not emitted).
const DOCUMENTED_POSITIONS: &[&str] = &[
    "tool_description",
    "capability_id",
    "input_description",
    "property_name",
    "property_description",
    "format",
    "default_string",
    "default_key",
    "enum_value_1",
    "enum_value_2",
    "const_value",
    "nested_description",
    "nested_property",
    "missing_required",
    "items_description",
    "tag_name",
    "tag_value_1",
    "tag_value_2",
    "union_description",
    "dangling_ref",
    "external_ref",
    "unknown_type",
    "not_a_schema",
    "const_array",
    "additional_description",
    "unknown_type_in_array",
    "nullable_enum_value",
    "missing_top_required",
    "def_description",
    "def_property_description",
    "def_name_description",
    "output_description",
    "output_property",
    "output_property_description",
    "display_path",
];

#[test]
fn manifest_text_cannot_open_code_block_in_docs_of_any_text_position() {
    let display = "M_display_path\n```\nfn main(){}\n```\n<script>x</script>";
    let tokens = expand_runtime(&fixture("doc_injection.manifest.json"), display);
    let rendered = assert_docs_inert(&tokens);
    // The payloads did reach the docs, as text.
    let missing: Vec<&&str> = DOCUMENTED_POSITIONS
        .iter()
        .filter(|pos| !rendered.contains(&format!("M_{pos}")))
        .collect();
    assert!(
        missing.is_empty(),
        "positions not in any doc comment: {missing:?}"
    );
    // (rustdoc's smart punctuation curls the quotes.)
    assert!(rendered.contains("``` fn main(){std::fs::write(“PWNED”,“”).unwrap();} ```"));
    assert!(rendered.contains("<script>alert(1)</script>"));
    assert_idents_ascii(tokens);
}

#[test]
fn manifest_text_cannot_open_code_block_in_docs_of_the_issue_example() {
    // The manifest of the report: a fenced property name and capability id.
    let fence = "x\n```\nfn main(){std::fs::write(\"PWNED\",\"\").unwrap();}\n```\n";
    let text = json!({"tools": {
        "a.b": {"inputSchema": {"type": "object", "properties": {fence: {}}}, "effect": "server-query"},
        "a.c": {"inputSchema": {}, "effect": "server-query", "capabilityId": fence}
    }})
    .to_string();
    let tokens = expand(&text, "m.json");
    let rendered = assert_docs_inert(&tokens);
    // Once in the `Field` variant's doc, once in the module doc.
    assert_eq!(rendered.matches("PWNED").count(), 2, "{rendered}");
}

#[test]
fn colliding_names_get_distinct_identifiers_and_keep_their_json_names() {
    let text = fixture("colliding_names.manifest.json");
    let tokens = expand(&text, "colliding_names.manifest.json");
    assert_docs_inert(&tokens);
    assert_idents_ascii(tokens.clone());
    let file: syn::File = syn::parse2(tokens).unwrap();
    let module = find_module(&file.items, &["names", "collide"]).expect("names::collide");
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let schema = &manifest["tools"]["names.collide"]["inputSchema"];
    let properties: BTreeSet<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();

    let input = find_struct(module, "Input").expect("struct Input");
    let mut idents = BTreeSet::new();
    let mut json_names = BTreeSet::new();
    for field in &input.fields {
        let ident = field.ident.as_ref().unwrap().to_string();
        let ident = ident.trim_start_matches("r#").to_string();
        let json = serde_rename(&field.attrs).unwrap_or_else(|| ident.clone());
        assert!(idents.insert(ident.clone()), "field {ident} twice");
        if ident != "additional_properties_2" {
            assert!(json_names.insert(json.clone()), "JSON name {json:?} twice");
        }
    }
    // Every property is a field under its own JSON name; the extra field
    // for `additionalProperties` did not take the property's name.
    json_names.remove("additional_properties_2");
    assert_eq!(json_names, properties);
    assert!(idents.contains("additional_properties"));
    assert!(idents.contains("additional_properties_2"));
    for expected in [
        "a_b", "a_b_2", "a_b_3", "r#type", "type_2", "self_", "self_2", "field", "field_2", "i64",
        "bool",
    ] {
        assert!(
            idents.contains(expected.trim_start_matches("r#")),
            "{expected} in {idents:?}"
        );
    }

    // Enum variants: unique, each renamed to its JSON value.
    let status = find_enum(module, "InputStatus").expect("enum InputStatus");
    let values: Vec<String> = schema["properties"]["status"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let mut variants = BTreeMap::new();
    for variant in &status.variants {
        let name = variant.ident.to_string();
        let json = serde_rename(&variant.attrs).unwrap_or_else(|| name.clone());
        assert!(
            variants.insert(name.clone(), json).is_none(),
            "variant {name} twice"
        );
    }
    let mut seen: Vec<String> = variants.values().cloned().collect();
    seen.sort();
    let mut expected = values.clone();
    expected.sort();
    expected.dedup();
    assert_eq!(seen, expected);
    assert_eq!(variants["Self_"], "Self");
    assert_eq!(variants["Self2"], "self");
    assert_eq!(variants["Empty"], "");

    // The `Field` enum: one variant per property, distinct.
    let field = find_enum(module, "Field").expect("enum Field");
    let names: BTreeSet<String> = field.variants.iter().map(|v| v.ident.to_string()).collect();
    assert_eq!(names.len(), properties.len());
}

fn find_module<'a>(items: &'a [syn::Item], path: &[&str]) -> Option<&'a [syn::Item]> {
    let (first, rest) = path.split_first()?;
    items.iter().find_map(|item| match item {
        syn::Item::Mod(m) if m.ident == first => {
            let inner = &m.content.as_ref()?.1;
            if rest.is_empty() {
                Some(inner.as_slice())
            } else {
                find_module(inner, rest)
            }
        }
        _ => None,
    })
}

fn find_struct<'a>(items: &'a [syn::Item], name: &str) -> Option<&'a syn::ItemStruct> {
    items.iter().find_map(|i| match i {
        syn::Item::Struct(s) if s.ident == name => Some(s),
        _ => None,
    })
}

fn find_enum<'a>(items: &'a [syn::Item], name: &str) -> Option<&'a syn::ItemEnum> {
    items.iter().find_map(|i| match i {
        syn::Item::Enum(e) if e.ident == name => Some(e),
        _ => None,
    })
}

/// The `rename = "…"` of a `#[serde(…)]` attribute.
fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
    let mut out = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let lit: syn::LitStr = meta.value()?.parse()?;
                out = Some(lit.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    out
}

/// `n` distinct names of at most five characters (`i` in base 16, written
/// with punctuation) that all map to the same identifier.
fn names(n: usize) -> Vec<String> {
    const DIGITS: [char; 16] = [
        '-', '!', '@', '#', '$', '%', '^', '&', '*', '(', ')', '+', '=', '~', '.', ',',
    ];
    (0..n)
        .map(|mut i| {
            let mut name = String::new();
            loop {
                name.push(DIGITS[i % 16]);
                i /= 16;
                if i == 0 {
                    break name;
                }
            }
        })
        .collect()
}

/// A manifest whose one procedure has 32,768 distinct properties (or enum
/// values) that all map to the identifier `field` (or `Empty`).
fn colliding_manifest(n: usize, enum_values: bool) -> String {
    let names = names(n);
    let schema = if enum_values {
        json!({"type": "object", "properties": {"status": {"type": "string", "enum": names}}})
    } else {
        let properties: serde_json::Map<String, Value> = names
            .into_iter()
            .map(|n| (n, json!({"type": "string"})))
            .collect();
        json!({"type": "object", "properties": properties})
    };
    json!({"tools": {"big.one": {"effect": "server-query", "inputSchema": schema}}}).to_string()
}

#[test]
fn quadratic_name_allocation_32k_colliding_names_expand_to_distinct_names() {
    const N: usize = 32_768;
    let tokens = expand(&colliding_manifest(N, true), "big.json");
    let file: syn::File = syn::parse2(tokens).unwrap();
    let module = find_module(&file.items, &["big", "one"]).unwrap();
    let status = find_enum(module, "InputStatus").unwrap();
    assert_eq!(status.variants.len(), N);
    let names: BTreeSet<String> = status
        .variants
        .iter()
        .map(|v| v.ident.to_string())
        .collect();
    assert_eq!(names.len(), N);
    assert!(names.contains("Empty") && names.contains(&format!("Empty{N}")));

    let tokens = expand(&colliding_manifest(N, false), "big.json");
    let file: syn::File = syn::parse2(tokens).unwrap();
    let module = find_module(&file.items, &["big", "one"]).unwrap();
    let input = find_struct(module, "Input").unwrap();
    let fields: BTreeSet<String> = input
        .fields
        .iter()
        .map(|f| f.ident.as_ref().unwrap().to_string())
        .collect();
    // The properties, and the flattened map keeping extra properties.
    assert_eq!(fields.len(), N + 1);
    assert!(fields.contains("field") && fields.contains(&format!("field_{N}")));
    assert!(fields.contains("additional_properties"));
    let field = find_enum(module, "Field").unwrap();
    let variants: BTreeSet<String> = field.variants.iter().map(|v| v.ident.to_string()).collect();
    assert_eq!(variants.len(), N);
    assert!(variants.contains("Field") && variants.contains(&format!("Field{N}")));
}

#[test]
fn deep_paths_are_a_clear_compile_error_not_a_stack_overflow() {
    let tool = json!({"effect": "server-query", "inputSchema": {}});
    let limit = surface_codegen::manifest_macro::MAX_PATH_SEGMENTS;
    let at_limit = vec!["a"; limit].join(".");
    expand(&json!({"tools": {at_limit: tool}}).to_string(), "deep.json");
    for segments in [limit + 1, 10_000] {
        let path = vec!["a"; segments].join(".");
        let text = json!({"tools": {path.clone(): tool}}).to_string();
        let error = expand_manifest_text(&text, &options("deep.json"), Span::call_site())
            .unwrap_err()
            .to_string();
        // The message quotes at most 120 characters of the path.
        let shown: String = path.chars().take(120).collect();
        let ellipsis = if path.len() > 120 { "…" } else { "" };
        assert_eq!(
            error,
            format!(
                "invalid agent manifest `deep.json`: the procedure path `{shown}{ellipsis}` has {segments} segments; `manifest!` generates one nested module per segment and supports at most {limit}"
            )
        );
    }
}

#[test]
fn deep_schemas_are_a_clear_compile_error_or_value_not_a_stack_overflow() {
    // 10,000 nested arrays: serde_json's parser refuses nesting past 128.
    let mut text = String::from(r#"{"tools":{"a.b":{"effect":"server-query","inputSchema":"#);
    for _ in 0..10_000 {
        text.push_str(r#"{"type":"array","items":"#);
    }
    text.push_str(r#"{"type":"string"}"#);
    text.push_str(&"}".repeat(10_000 + 3));
    let error = expand_manifest_text(&text, &options("deep.json"), Span::call_site())
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("invalid agent manifest `deep.json` at line 1, column ")
            && error.contains(": recursion limit exceeded;"),
        "{error}"
    );
    // The deepest schema the parser accepts converts 32 levels and keeps
    // the rest as JSON, with a note.
    let mut schema = json!({"type": "string"});
    for _ in 0..120 {
        schema = json!({"type": "array", "items": schema});
    }
    let tokens = expand(
        &json!({"tools": {"a.b": {"effect": "server-query", "inputSchema": schema}}}).to_string(),
        "deep.json",
    );
    assert!(assert_docs_inert(&tokens).contains("nesting deeper than 32 levels"));
}
