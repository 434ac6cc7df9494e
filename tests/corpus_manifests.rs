//! The public tool-schema corpus (`tests/fixtures/corpus/`, see its README)
//! loads with the manifest reader's own rules: every per-source manifest and
//! `all.manifest.json` parse with `AgentManifest::from_json_str`, hold the
//! tool counts the README lists, and have a name sidecar and a samples file
//! covering exactly their paths.

use std::collections::BTreeSet;
use std::path::PathBuf;

use agent_surface::AgentManifest;

/// Sources and tool counts, as in tests/fixtures/corpus/README.md.
const SOURCES: &[(&str, usize)] = &[
    ("filesystem", 14),
    ("github", 26),
    ("gitlab", 9),
    ("memory", 9),
    ("everything", 13),
    ("puppeteer", 7),
    ("slack", 8),
    ("brave_search", 2),
    ("google_maps", 7),
    ("sequential_thinking", 1),
    ("postgres", 1),
    ("redis", 4),
    ("playwright", 45),
    ("notion", 24),
    ("context7", 2),
    ("firecrawl", 29),
    ("kubernetes", 23),
    ("supabase", 31),
    ("azure", 235),
    ("stripe", 22),
    ("desktop_commander", 26),
    ("shopify_dev", 5),
    ("cloudflare", 89),
    ("openai", 100),
    ("github_rest", 86),
    ("orpc_playground", 8),
    ("orpc_playground_zod", 8),
];

const ALL_TOOLS: usize = 834;

fn corpus_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn keys_of(name: &str) -> BTreeSet<String> {
    let value: serde_json::Value = serde_json::from_str(&corpus_file(name)).unwrap();
    value.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn every_corpus_manifest_loads_with_the_listed_tool_count_and_sidecars() {
    let mut union = BTreeSet::new();
    for &(source, count) in SOURCES {
        let manifest =
            AgentManifest::from_json_str(&corpus_file(&format!("{source}.manifest.json")))
                .unwrap_or_else(|e| panic!("{source}.manifest.json: {e}"));
        let paths: BTreeSet<String> = manifest.tools.keys().cloned().collect();
        assert_eq!(paths.len(), count, "{source}: tool count");
        assert!(
            paths.iter().all(|p| p.split('.').next() == Some(source)),
            "{source}: every path starts with the source's namespace"
        );
        assert_eq!(
            keys_of(&format!("{source}.names.json")),
            paths,
            "{source}.names.json keys"
        );
        assert_eq!(
            keys_of(&format!("{source}.samples.json")),
            paths,
            "{source}.samples.json keys"
        );
        union.extend(paths);
    }
    let all =
        AgentManifest::from_json_str(&corpus_file("all.manifest.json")).expect("all.manifest.json");
    assert_eq!(all.tools.len(), ALL_TOOLS);
    assert_eq!(all.tools.keys().cloned().collect::<BTreeSet<_>>(), union);
}
