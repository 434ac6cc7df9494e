//! One naming rule for nested types whatever the converter (docs/codegen.md,
//! "Names of nested types"): the same zod contract through oRPC's
//! `@orpc/zod` converter and through zod's own `z.toJSONSchema` gives the
//! same public type names.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use surface_codegen::types::{generate_procedure_types, TypeOptions};

/// The type names generated for every tool of `manifest`, by path without
/// the first `prefix_len` characters.
fn names(manifest: &str, prefix_len: usize) -> BTreeMap<String, BTreeSet<String>> {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(manifest))
            .unwrap(),
    )
    .unwrap();
    let mut out = BTreeMap::new();
    for (path, tool) in manifest["tools"].as_object().unwrap() {
        let types = generate_procedure_types(
            &tool["inputSchema"],
            tool.get("outputSchema"),
            &TypeOptions::default(),
        );
        let file: syn::File = syn::parse2(types.items).unwrap();
        let set = file
            .items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Struct(s) => Some(s.ident.to_string()),
                syn::Item::Enum(e) => Some(e.ident.to_string()),
                syn::Item::Type(t) => Some(t.ident.to_string()),
                _ => None,
            })
            .collect();
        out.insert(path[prefix_len..].to_string(), set);
    }
    out
}

#[test]
fn orpc_and_zod_converters_of_the_playground_give_the_same_type_names() {
    let orpc = names(
        "../tests/fixtures/corpus/orpc_playground.manifest.json",
        "orpc_playground.".len(),
    );
    let zod = names(
        "../tests/fixtures/corpus/orpc_playground_zod.manifest.json",
        "orpc_playground_zod.".len(),
    );
    assert_eq!(orpc.len(), 8);
    assert_eq!(orpc, zod);
}

#[test]
fn recursive_types_get_the_name_of_their_property_path_from_both_converters() {
    let orpc = names("../tests/fixtures/codegen/orpc.manifest.json", 0);
    let zod = names("../tests/fixtures/codegen/zod.manifest.json", 0);
    assert_eq!(
        orpc.keys().collect::<Vec<_>>(),
        zod.keys().collect::<Vec<_>>()
    );
    for (path, zod_names) in &zod {
        let orpc_names = &orpc[path];
        // zod's recursive `$defs/__schema0` is named from the path where it
        // is first reached, as oRPC's inlined copy is.
        assert!(
            zod_names.is_subset(orpc_names),
            "{path}: zod {zod_names:?}, orpc {orpc_names:?}"
        );
        // oRPC unrolls a recursion a few levels deep (the last level admits
        // any JSON): each level is a type of its own, named by its path
        // below the recursive type.
        let extra: Vec<&str> = orpc_names
            .difference(zod_names)
            .map(String::as_str)
            .collect();
        let expected: &[&str] = match path.as_str() {
            "constructs.recursiveGetter" => &[
                "InputRootChildrenItem",
                "InputRootChildrenItemChildrenItem",
                "InputRootChildrenItemChildrenItemChildrenItem",
                "InputRootChildrenItemChildrenItemChildrenItemChildrenItem",
                "OutputRootChildrenItem",
                "OutputRootChildrenItemChildrenItem",
                "OutputRootChildrenItemChildrenItemChildrenItem",
                "OutputRootChildrenItemChildrenItemChildrenItemChildrenItem",
            ],
            "constructs.recursiveLazy" => &["InputCategoryParent", "OutputCategoryParent"],
            _ => &[],
        };
        assert_eq!(extra, expected, "{path}");
    }
    assert!(zod["constructs.recursiveGetter"].contains("InputRoot"));
    assert!(zod["constructs.recursiveLazy"].contains("InputCategory"));
}
