//! Runs the validator generator over every schema this crate tests, into
//! `$OUT_DIR/generated.rs`:
//! * every test group of the vendored JSON-Schema-Test-Suite files
//!   (`tests/fixtures/JSON-Schema-Test-Suite/tests/{draft2020-12,draft7}`;
//!   draft-07 groups get the draft-07 `$schema` they leave implicit);
//! * every input and output schema of `tests/fixtures/codegen/*.manifest.json`
//!   and of `tests/fixtures/corpus/*.manifest.json`
//!   (`SCHEMA_SUITE_CORPUS` names another corpus directory);
//! * every view capability input schema of the examples' `view_inputs!`
//!   files (`VIEW_INPUT_FILES`).
//!
//! A schema the generator rejects is recorded with its reasons, so the tests
//! can tell a skipped group from a passing one. `$OUT_DIR/sizes.tsv` holds
//! the generated size of each fixture schema.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;
use surface_codegen::validator::{validator_tokens, ValidatorOptions};

/// `devices.rename`'s input schema in surface-runtime/benches/runtime.rs.
const PLAIN_SCHEMA: &str = r#"{"type": "object",
  "properties": {"deviceId": {"type": "string", "minLength": 1}, "name": {"type": "string", "minLength": 1, "maxLength": 64},
                 "tags": {"type": "array", "items": {"type": "string"}}},
  "required": ["deviceId", "name"], "additionalProperties": false}"#;

/// The `view_inputs!` files of the examples, relative to the workspace root.
const VIEW_INPUT_FILES: [&str; 2] = [
    "examples/devices-api/view-inputs.json",
    "examples/devices/view-inputs.json",
];

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = here.join("../..").canonicalize().unwrap();
    let suite = root.join("tests/fixtures/JSON-Schema-Test-Suite/tests");
    let codegen = root.join("tests/fixtures/codegen");
    let corpus = std::env::var("SCHEMA_SUITE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("tests/fixtures/corpus"));
    println!("cargo:rerun-if-changed={}", suite.display());
    println!("cargo:rerun-if-changed={}", codegen.display());
    println!("cargo:rerun-if-changed={}", corpus.display());
    println!("cargo:rerun-if-env-changed=SCHEMA_SUITE_CORPUS");
    let options = ValidatorOptions::default();

    let mut suite_entries = Vec::new();
    for dir in ["draft2020-12", "draft2020-12/optional", "draft7"] {
        for path in json_files(&suite.join(dir)) {
            println!("cargo:rerun-if-changed={}", path.display());
            let name = format!("{dir}/{}", path.file_name().unwrap().to_string_lossy());
            let groups: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            for (g, group) in groups.as_array().unwrap().iter().enumerate() {
                let mut schema = group["schema"].clone();
                if dir == "draft7" {
                    if let Value::Object(map) = &mut schema {
                        map.entry("$schema")
                            .or_insert_with(|| "http://json-schema.org/draft-07/schema#".into());
                    }
                }
                let validator = generate(&schema, &options).0;
                suite_entries.push(quote! {
                    crate::SuiteGroup { file: #name, group: #g, validator: #validator }
                });
            }
        }
    }

    let mut fixture_entries = Vec::new();
    let mut sizes = String::from("source\ttool\tschema\ttokens\tbytes\n");
    let mut sources = Vec::new();
    for path in json_files(&codegen) {
        sources.push((format!("codegen/{}", file_name(&path)), path));
    }
    for path in json_files(&corpus) {
        let name = file_name(&path);
        // `all.manifest.json` repeats every other manifest.
        if name.ends_with(".manifest.json") && name != "all.manifest.json" {
            sources.push((format!("corpus/{name}"), path));
        }
    }
    // The view capabilities' input schemas of the examples (`view_inputs!`
    // files: `{"TypeName": schema, …}`), checked like a manifest's inputs.
    for file in VIEW_INPUT_FILES {
        let path = root.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        let inputs: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let inputs = inputs
            .as_object()
            .unwrap_or_else(|| panic!("{file}: not an object"));
        assert!(!inputs.is_empty(), "{file}: no view inputs");
        let source = format!("view/{file}");
        for (name, schema) in inputs {
            let (validator, _) = generate(schema, &options);
            fixture_entries.push(quote! {
                crate::Fixture { source: #source, tool: #name, schema: "input", validator: #validator }
            });
        }
    }
    for (source, path) in &sources {
        if !source.ends_with(".manifest.json") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let manifest: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        let Some(tools) = manifest["tools"].as_object() else {
            continue;
        };
        for (tool, def) in tools {
            for (which, key) in [("input", "inputSchema"), ("output", "outputSchema")] {
                let Some(schema) = def.get(key) else { continue };
                let (validator, size) = generate(schema, &options);
                if let Some((tokens, bytes)) = size {
                    let _ = writeln!(sizes, "{source}\t{tool}\t{which}\t{tokens}\t{bytes}");
                }
                fixture_entries.push(quote! {
                    crate::Fixture { source: #source, tool: #tool, schema: #which, validator: #validator }
                });
            }
        }
    }

    // Disagreements with jsonschema found along the way, pinned.
    let regressions_path = here.join("regressions.json");
    println!("cargo:rerun-if-changed={}", regressions_path.display());
    let regressions: Value =
        serde_json::from_str(&fs::read_to_string(&regressions_path).unwrap()).unwrap();
    let regression_entries: Vec<TokenStream> = regressions
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, case)| {
            let validator = generate(&case["schema"], &options).0;
            quote!(crate::Regression { name: #name, validator: #validator })
        })
        .collect();
    let regressions_file = regressions_path.display().to_string();

    // The `plain` schema of surface-runtime's `invoke_overhead` bench.
    let plain: Value = serde_json::from_str(PLAIN_SCHEMA).unwrap();
    let plain = validator_tokens(&plain, &options).expect("the bench schema is supported");

    let corpus_dir = corpus.display().to_string();
    let suite_dir = suite.display().to_string();
    let codegen_dir = codegen.display().to_string();
    let root_dir = root.display().to_string();
    let out = quote! {
        /// The workspace root (view-input fixtures are named relative to it).
        pub const ROOT_DIR: &str = #root_dir;
        /// Directory of the vendored test-suite files.
        pub const SUITE_DIR: &str = #suite_dir;
        /// Directory of the codegen fixtures.
        pub const CODEGEN_DIR: &str = #codegen_dir;
        /// Directory of the public corpus (`tests/fixtures/corpus`, or
        /// `SCHEMA_SUITE_CORPUS` at build time).
        pub const CORPUS_DIR: &str = #corpus_dir;
        /// Every test group, with its generated validator.
        pub static SUITE: &[crate::SuiteGroup] = &[#(#suite_entries),*];
        /// The `plain` bench schema (`devices.rename` of surface-runtime's
        /// `runtime` bench) and its validator.
        pub const PLAIN_SCHEMA: &str = #PLAIN_SCHEMA;
        /// The validator of [`PLAIN_SCHEMA`].
        pub const PLAIN: surface_runtime::validation::Validator = #plain;
        /// `regressions.json`.
        pub const REGRESSIONS_FILE: &str = #regressions_file;
        /// Every regression schema, with its generated validator.
        pub static REGRESSIONS: &[crate::Regression] = &[#(#regression_entries),*];
        /// Every fixture schema, with its generated validator.
        pub static FIXTURES: &[crate::Fixture] = &[#(#fixture_entries),*];
    };
    // One item per line: rustc finds a span's column by scanning its line.
    let mut text = out.to_string();
    for module in MODULES.take() {
        text.push('\n');
        text.push_str(&module.to_string());
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    fs::write(out_dir.join("generated.rs"), text).unwrap();
    fs::write(out_dir.join("sizes.tsv"), sizes).unwrap();
}

thread_local! {
    /// The modules holding the validators (see [`generate`]).
    static MODULES: std::cell::RefCell<Vec<TokenStream>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `Ok(validator)` or `Err(&[reasons])`, and the generated size (tokens,
/// bytes of token text).
///
/// Each validator is a `const` in a module of its own at the crate root,
/// and the tables only name it: rustc splits a crate into codegen units by
/// module, and items nested in one `static`'s initializer all belong to the
/// crate root's unit — 5 MB of validators in one unit is one LLVM thread
/// for ten minutes, in modules they compile in parallel.
fn generate(schema: &Value, options: &ValidatorOptions) -> (TokenStream, Option<(usize, usize)>) {
    match validator_tokens(schema, options) {
        Ok(tokens) => {
            let size = (token_len(&tokens), tokens.to_string().len());
            let name = MODULES.with_borrow_mut(|modules| {
                let name = quote::format_ident!("__v{}", modules.len());
                modules.push(quote! {
                    #[doc(hidden)]
                    mod #name {
                        pub(crate) const V: ::surface_runtime::validation::Validator = #tokens;
                    }
                });
                name
            });
            (quote!(Ok(crate::#name::V)), Some(size))
        }
        Err(unsupported) => {
            let reasons: Vec<String> = unsupported.iter().map(ToString::to_string).collect();
            (quote!(Err(&[#(#reasons),*])), None)
        }
    }
}

fn token_len(ts: &TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Group(g) => 1 + token_len(&g.stream()),
            _ => 1,
        })
        .sum()
}

/// The `.json` files of `dir`, sorted. A missing or empty directory stops
/// the build: the fixtures are vendored with the repository, and a suite
/// built from nothing would pass having checked nothing.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| {
        panic!(
            "schema-suite: cannot read the vendored fixtures in {}: {e}; \
             restore them from the repository (or set SCHEMA_SUITE_CORPUS for the corpus)",
            dir.display()
        )
    });
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "schema-suite: {} holds no .json fixtures; restore them from the repository",
        dir.display()
    );
    files
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}
