//! Size of the validators generated for every input/output schema of the
//! given manifests: tokens, lines after rustfmt-style printing, generation
//! time, and the schemas the generator rejects.
//!
//! `cargo run --release -p surface-codegen --example validator_sizes -- tests/fixtures/codegen/*.manifest.json`

use std::time::Instant;

use serde_json::Value;
use surface_codegen::validator::{validator_tokens, ValidatorOptions};

fn token_len(ts: &proc_macro2::TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Group(g) => 1 + token_len(&g.stream()),
            _ => 1,
        })
        .sum()
}

fn main() {
    let options = ValidatorOptions::default();
    let (mut schemas, mut tokens, mut lines, mut rejected) = (0usize, 0usize, 0usize, 0usize);
    let mut per_schema: Vec<(usize, usize, String)> = Vec::new();
    let started = Instant::now();
    for path in std::env::args().skip(1) {
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Some(tools) = manifest["tools"].as_object() else {
            continue;
        };
        for (tool, def) in tools {
            for key in ["inputSchema", "outputSchema"] {
                let Some(schema) = def.get(key) else { continue };
                schemas += 1;
                match validator_tokens(schema, &options) {
                    Ok(ts) => {
                        let n = token_len(&ts);
                        let file: syn::File =
                            syn::parse2(quote::quote!(const V: X = #ts;)).unwrap();
                        let l = prettyplease::unparse(&file).lines().count();
                        tokens += n;
                        lines += l;
                        per_schema.push((n, l, format!("{tool} {key}")));
                    }
                    Err(reasons) => {
                        rejected += 1;
                        let first = &reasons[0];
                        eprintln!(
                            "rejected: {tool} {key}: {} at {}: {}",
                            first.keyword, first.pointer, first.reason
                        );
                    }
                }
            }
        }
    }
    let elapsed = started.elapsed();
    per_schema.sort();
    let median = per_schema
        .get(per_schema.len() / 2)
        .cloned()
        .unwrap_or_default();
    println!(
        "schemas {schemas}, rejected {rejected}, generated {}",
        per_schema.len()
    );
    println!("tokens total {tokens}, lines total {lines}");
    println!(
        "median schema: {} tokens, {} lines ({})",
        median.0, median.1, median.2
    );
    if let Some(max) = per_schema.last() {
        println!(
            "largest schema: {} tokens, {} lines ({})",
            max.0, max.1, max.2
        );
    }
    println!("generation + printing time: {elapsed:?}");
}
