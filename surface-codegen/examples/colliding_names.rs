//! Times the `manifest!` expansion of one procedure whose input has `n`
//! distinct enum values, or `n` distinct property names, that all map to
//! one Rust identifier (`Empty…` / `field…`).
//!
//! `cargo run --release -p surface-codegen --example colliding_names -- [n]`
//! (default 32768) prints one line per case: `<case> n=<n> <seconds> s`.

use std::time::Instant;

use proc_macro2::Span;
use quote::quote;
use serde_json::{json, Value};
use surface_codegen::manifest_macro::{expand_manifest_text, ExpandOptions};

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

fn manifest(schema: Value) -> String {
    json!({"tools": {"big.one": {"effect": "server-query", "inputSchema": schema}}}).to_string()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("n is a number"))
        .unwrap_or(32_768);
    let options = ExpandOptions {
        crate_path: quote!(::agent_surface),
        include_path: "/bench/big.json".into(),
        display_path: "big.json".into(),
        invocation_site: String::new(),
        validation: surface_codegen::manifest_macro::ValidationMode::Generated,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
    };
    let enum_values = manifest(json!({
        "type": "object",
        "properties": {"status": {"type": "string", "enum": names(n)}}
    }));
    let properties: serde_json::Map<String, Value> = names(n)
        .into_iter()
        .map(|name| (name, json!({"type": "string"})))
        .collect();
    let properties = manifest(json!({"type": "object", "properties": properties}));
    for (case, text) in [
        ("enum_values", &enum_values),
        ("property_names", &properties),
    ] {
        let start = Instant::now();
        let tokens = expand_manifest_text(text, &options, Span::call_site()).expect("expands");
        let elapsed = start.elapsed().as_secs_f64();
        println!(
            "{case} n={n} {elapsed:.3} s ({} tokens)",
            tokens.into_iter().count()
        );
    }
}
