//! Writes `$OUT_DIR/readers.rs`: for every procedure of the manifests of
//! `src/lib.rs`, a reader that deserializes a value into its generated
//! `Input` and serializes it back (`read_input(path, value)`), so the
//! differential test can ask each generated type how it reads a sample.

use std::fmt::Write as _;
use std::path::PathBuf;

/// The manifests of `src/lib.rs`: (module, file relative to this crate).
const MANIFESTS: [(&str, &str); 2] = [
    ("api", "../fixtures/corpus/all.manifest.json"),
    ("root_id", "root-id.manifest.json"),
];

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let mut out = String::from(
        "/// `value` read into the generated `Input` of `path` and written back;\n\
         /// `None` for a path no manifest has.\n\
         pub fn read_input(path: &str, value: &serde_json::Value) -> Option<Result<serde_json::Value, String>> {\n\
         \x20   Some(match path {\n",
    );
    for (module, file) in MANIFESTS {
        let file = here.join(file);
        println!("cargo:rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(&file).unwrap();
        let manifest = surface_manifest::AgentManifest::from_json_str(&text).unwrap();
        for path in manifest.tools.keys() {
            let rust = surface_manifest::path_to_rust(path).unwrap().join("::");
            writeln!(
                out,
                "        {path:?} => through::<crate::{module}::{rust}::Input>(value),"
            )
            .unwrap();
        }
    }
    out.push_str("        _ => return None,\n    })\n}\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("readers.rs");
    std::fs::write(dest, out).unwrap();
}
