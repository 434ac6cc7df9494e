//! Shared by the generated-code snapshot test and the round-trip test.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// A fixture: a manifest (`{"tools": {…}}`) and its sample instances
/// (`{ "<path>": { "input": [..], "output": [..] } }`).
pub struct Fixture {
    /// Name of the generated file (`tests/generated/<name>.rs`).
    pub name: &'static str,
    pub manifest: PathBuf,
    pub samples: PathBuf,
    /// The tools used, when not all of the manifest's.
    pub only: &'static [&'static str],
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every fixture the round-trip suite covers.
pub fn fixtures() -> Vec<Fixture> {
    let here = crate_dir().join("tests/fixtures");
    let shared = crate_dir().join("../tests/fixtures/codegen");
    vec![Fixture {
        name: "handmade",
        manifest: here.join("handmade.manifest.json"),
        samples: here.join("handmade.samples.json"),
        only: &[],
    }]
    .into_iter()
    .chain(
        [("orpc", "orpc.manifest.json"), ("zod", "zod.manifest.json")].map(|(name, file)| {
            Fixture {
                name,
                manifest: shared.join(file),
                samples: shared.join("samples.json"),
                only: &[],
            }
        }),
    )
    .chain(
        CORPUS
            .iter()
            .chain(CORPUS_SELECTIONS)
            .map(|&(name, source, only)| {
                let dir = crate_dir().join("../tests/fixtures/corpus");
                Fixture {
                    name,
                    manifest: dir.join(format!("{source}.manifest.json")),
                    samples: dir.join(format!("{source}.samples.json")),
                    only,
                }
            }),
    )
    .collect()
}

/// Sources of the public corpus (`tests/fixtures/corpus/`) whose generated
/// types are committed and round-tripped: `(fixture name, source)`. Their
/// samples file has the corpus shape (`{"input": {"valid": [..]}, "output":
/// {"valid": [..]}}`).
pub const CORPUS: &[(&str, &str, &[&str])] = &[
    ("corpus_github", "github", &[]),
    ("corpus_notion", "notion", &[]),
    ("corpus_filesystem", "filesystem", &[]),
    ("corpus_memory", "memory", &[]),
    ("corpus_playwright", "playwright", &[]),
    ("corpus_firecrawl", "firecrawl", &[]),
    ("corpus_orpc_playground", "orpc_playground", &[]),
    ("corpus_orpc_playground_zod", "orpc_playground_zod", &[]),
];

/// Tools of a corpus source picked for a schema construct, round-tripped
/// like [`CORPUS`]: OpenAI's request bodies with `allOf` of a nested
/// `allOf` (`createChatCompletion`, `createResponse`), `allOf: [$ref,
/// {nullable: true}]` and `$ref` + `nullable` (`createRun`,
/// `modifyVectorStore`), `properties` + `anyOf`/`oneOf` of `required`
/// lists and `not` (`createImageEdit`, `createAssistant`).
pub const CORPUS_SELECTIONS: &[(&str, &str, &[&str])] = &[(
    "corpus_openai_selected",
    "openai",
    &[
        "openai.createAssistant",
        "openai.createChatCompletion",
        "openai.createImageEdit",
        "openai.createResponse",
        "openai.createRun",
        "openai.modifyVectorStore",
    ],
)];

pub fn read_json(path: &PathBuf) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// `(path, inputSchema, outputSchema)` of every tool of `fixture`
/// (those of [`Fixture::only`] when set), sorted by path.
pub fn tools(fixture: &Fixture, manifest: &Value) -> Vec<(String, Value, Option<Value>)> {
    let tools = manifest["tools"].as_object().expect("manifest has `tools`");
    tools
        .iter()
        .filter(|(path, _)| fixture.only.is_empty() || fixture.only.contains(&path.as_str()))
        .map(|(path, tool)| {
            (
                path.clone(),
                tool["inputSchema"].clone(),
                tool.get("outputSchema").cloned(),
            )
        })
        .collect()
}

/// The Rust module name of a procedure path in the generated file.
pub fn module_name(path: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in path.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            out.push('_');
            prev_lower = false;
        }
    }
    format!("p_{out}")
}
