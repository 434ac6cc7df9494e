//! Snapshots of the `manifest!` expansion (prettyplease-formatted) for the
//! fixture manifests, so every codegen change is a visible diff in review.
//! Update with `INSTA_UPDATE=always cargo test -p surface-codegen --test
//! expand_snapshots` (or `cargo insta review`) and read the diff.

use proc_macro2::Span;
use quote::quote;
use surface_codegen::manifest_macro::{expand_manifest_text, ExpandOptions};

fn expand_fixture(relative: &str) -> String {
    let path = format!(
        "{}/../tests/fixtures/{relative}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let options = ExpandOptions {
        crate_path: quote!(::agent_surface),
        // A stable stand-in for the canonical absolute path.
        include_path: format!("/fixtures/{relative}"),
        display_path: format!("tests/fixtures/{relative}"),
        invocation_site: String::new(),
        validation: surface_codegen::manifest_macro::ValidationMode::Generated,
        typed_formats: Default::default(),
        runtime_validation: Vec::new(),
    };
    let tokens = expand_manifest_text(&text, &options, Span::call_site()).unwrap();
    let file: syn::File = syn::parse2(tokens).expect("the expansion parses as a Rust file");
    prettyplease::unparse(&file)
}

#[test]
fn snapshot_handwritten_manifest() {
    insta::assert_snapshot!("handwritten", expand_fixture("handwritten.manifest.json"));
}

#[test]
fn snapshot_devices_manifest() {
    insta::assert_snapshot!("devices", expand_fixture("devices.manifest.json"));
}

#[test]
fn snapshot_codegen_orpc_manifest() {
    insta::assert_snapshot!("codegen_orpc", expand_fixture("codegen/orpc.manifest.json"));
}

#[test]
fn snapshot_codegen_zod_manifest() {
    insta::assert_snapshot!("codegen_zod", expand_fixture("codegen/zod.manifest.json"));
}
