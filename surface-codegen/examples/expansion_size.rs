//! Where the size of a `manifest!` expansion goes: lines (after
//! prettyplease) and tokens of the whole expansion, of the generated types
//! (by item kind), of the validators, and of the rest (modules, `Field`
//! enums, references, authority, lookup macro); plus how many generated
//! items are exact duplicates of another procedure's, and the expansion
//! time. Used by `scripts/compile-at-scale` (docs/codegen.md, "Compile time
//! at scale").
//!
//! `cargo run --release -p surface-codegen --example expansion_size -- m.json [DIR]`
//!
//! With `DIR`, also writes the parts as crate roots of their own, each to
//! be compiled against the `agent-surface` facade: `DIR/full.rs` (the whole
//! expansion), `DIR/types.rs` (each procedure's types in a module of its
//! own, nothing else) and `DIR/validators.rs` (one `const` per validator).

use std::collections::HashMap;
use std::time::Instant;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::quote;
use surface_codegen::manifest_macro::{expand_manifest_text, ExpandOptions, ValidationMode};
use surface_codegen::types::{generate_procedure_types, TypeOptions};
use surface_codegen::validator::{validator_tokens, ValidatorOptions};
use surface_manifest::AgentManifest;

fn token_len(ts: &TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => 1 + token_len(&g.stream()),
            _ => 1,
        })
        .sum()
}

fn lines(file: &syn::File) -> usize {
    prettyplease::unparse(file).lines().count()
}

#[derive(Default)]
struct Tally {
    items: usize,
    tokens: usize,
    lines: usize,
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: expansion_size MANIFEST.json");
    let text = std::fs::read_to_string(&path).expect("read the manifest");
    let options = ExpandOptions {
        crate_path: quote!(::agent_surface),
        include_path: "/m.json".into(),
        display_path: "m.json".into(),
        invocation_site: String::new(),
        validation: ValidationMode::Generated,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
    };
    let started = Instant::now();
    let expansion = match expand_manifest_text(&text, &options, Span::call_site()) {
        Ok(tokens) => tokens,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let expand_time = started.elapsed();
    let file: syn::File = syn::parse2(expansion.clone()).expect("the expansion parses");
    let total_lines = lines(&file);
    let total_tokens = token_len(&expansion);

    let manifest = AgentManifest::from_json_str(&text).expect("valid manifest");
    let type_options = TypeOptions::default();
    let validator_options = ValidatorOptions {
        crate_path: quote!(::agent_surface),
    };
    let mut kinds: HashMap<&'static str, Tally> = HashMap::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let (mut types_time, mut validators_time) =
        (std::time::Duration::ZERO, std::time::Duration::ZERO);
    let mut validators = Tally::default();
    let dump = std::env::args().nth(2).map(std::path::PathBuf::from);
    let (mut types_crate, mut validators_crate) = (TokenStream::new(), TokenStream::new());
    for (n, tool) in manifest.tools.values().enumerate() {
        let module = quote::format_ident!("p{}", n);
        let t = Instant::now();
        let types = generate_procedure_types(
            &tool.input_schema,
            tool.output_schema.as_ref(),
            &type_options,
        );
        types_time += t.elapsed();
        let items = types.items;
        types_crate.extend(quote!(pub mod #module { #items }));
        let types: syn::File = syn::parse2(items).expect("types parse");
        for item in types.items {
            let kind = match &item {
                syn::Item::Struct(s) if s.attrs.iter().any(|a| a.path().is_ident("derive")) => {
                    "struct (derive)"
                }
                syn::Item::Struct(_) => "struct (const)",
                syn::Item::Enum(e) if e.attrs.iter().any(|a| a.path().is_ident("derive")) => {
                    "enum (derive)"
                }
                syn::Item::Enum(_) => "enum (open)",
                syn::Item::Type(_) => "type alias",
                syn::Item::Impl(_) => "impl",
                _ => "other",
            };
            let tokens = quote!(#item);
            let tally = kinds.entry(kind).or_default();
            tally.items += 1;
            tally.tokens += token_len(&tokens);
            tally.lines += lines(&syn::File {
                shebang: None,
                attrs: Vec::new(),
                items: vec![item],
            });
            *seen.entry(tokens.to_string()).or_default() += 1;
        }
        for (k, schema) in std::iter::once(&tool.input_schema)
            .chain(tool.output_schema.as_ref())
            .enumerate()
        {
            let t = Instant::now();
            let Ok(ts) = validator_tokens(schema, &validator_options) else {
                continue;
            };
            let name = quote::format_ident!("V{}_{}", n, k);
            validators_crate.extend(quote!(
                pub const #name: ::agent_surface::__private::validation::Validator = #ts;
            ));
            validators_time += t.elapsed();
            validators.items += 1;
            validators.tokens += token_len(&ts);
            let file: syn::File = syn::parse2(quote!(const V: X = #ts;)).expect("parses");
            validators.lines += lines(&file);
        }
    }
    if let Some(dir) = dump {
        std::fs::create_dir_all(&dir).expect("create DIR");
        for (name, tokens) in [
            ("full.rs", expansion),
            ("types.rs", types_crate),
            ("validators.rs", validators_crate),
        ] {
            let file: syn::File = syn::parse2(tokens).expect("parses");
            std::fs::write(dir.join(name), prettyplease::unparse(&file)).expect("write");
        }
    }
    let type_lines: usize = kinds.values().map(|t| t.lines).sum();
    let type_tokens: usize = kinds.values().map(|t| t.tokens).sum();
    println!("manifest {path}: {} procedures", manifest.tools.len());
    println!(
        "expansion: {total_lines} lines, {total_tokens} tokens, expanded in {:.2} s (types {:.2} s, validators {:.2} s, measured apart)",
        expand_time.as_secs_f64(),
        types_time.as_secs_f64(),
        validators_time.as_secs_f64(),
    );
    println!("| part | items | lines | tokens |");
    println!("|---|---:|---:|---:|");
    let mut rows: Vec<_> = kinds.iter().collect();
    rows.sort_by_key(|(k, _)| *k);
    for (kind, t) in rows {
        println!(
            "| types: {kind} | {} | {} | {} |",
            t.items, t.lines, t.tokens
        );
    }
    println!(
        "| validators | {} | {} | {} |",
        validators.items, validators.lines, validators.tokens
    );
    println!(
        "| the rest (modules, Field, refs, authority, lookup macro) | | {} | {} |",
        total_lines.saturating_sub(type_lines + validators.lines),
        total_tokens.saturating_sub(type_tokens + validators.tokens)
    );
    let items: usize = seen.values().sum();
    let distinct = seen.len();
    println!(
        "type items: {items}, distinct token texts: {distinct} ({} exact repeats across procedures)",
        items - distinct
    );
}
