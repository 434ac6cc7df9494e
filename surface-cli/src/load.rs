//! Reading contracts and manifests: from a file, standard input or a git
//! revision, each bounded by `MAX_CONTRACT_BYTES` (docs/drift.md,
//! "Limits"). Every error names what was read and where.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use surface_runtime::contract::{SurfaceContract, MAX_CONTRACT_BYTES};
use surface_runtime::AgentManifest;

/// A failure the command reports with exit status 2.
#[derive(Debug)]
pub struct Failure(pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads at most `MAX_CONTRACT_BYTES` from `reader`, as UTF-8.
fn read_bounded(reader: impl Read, what: &str) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_CONTRACT_BYTES).unwrap_or(u64::MAX) + 1;
    reader
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure(format!("{what}: cannot read: {e}")))?;
    if bytes.len() > MAX_CONTRACT_BYTES {
        return Err(Failure(format!(
            "{what}: larger than the limit of {MAX_CONTRACT_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|e| Failure(format!("{what}: not UTF-8: {e}")))
}

/// The text of file `path`, or of standard input for `-`.
pub fn read_text(path: &str, what: &str) -> Result<String, Failure> {
    if path == "-" {
        return read_bounded(std::io::stdin().lock(), &format!("{what} (standard input)"));
    }
    let what = format!("{what} {path}");
    let file = std::fs::File::open(path).map_err(|e| Failure(format!("{what}: {e}")))?;
    read_bounded(file, &what)
}

/// Parses a contract; `what` names where it came from.
pub fn parse_contract(text: &str, what: &str) -> Result<SurfaceContract, Failure> {
    SurfaceContract::from_json_str(text).map_err(|e| Failure(format!("{what}: {e}")))
}

/// Parses an agent manifest.
pub fn read_manifest(path: &str) -> Result<AgentManifest, Failure> {
    let what = format!("manifest {path}");
    let text = read_text(path, "manifest")?;
    AgentManifest::from_json_str(&text).map_err(|e| Failure(format!("{what}: {e}")))
}

/// The base contract: file `base` when one exists, else `git show
/// <base>:<path>` (git run directly, no shell).
pub fn read_base(base: &str, path: &str) -> Result<SurfaceContract, Failure> {
    if Path::new(base).is_file() {
        let text = read_text(base, "base contract")?;
        return parse_contract(&text, &format!("base contract {base}"));
    }
    if base.starts_with('-') || base.is_empty() {
        return Err(Failure(format!(
            "--base {base:?} is neither a file nor a git revision"
        )));
    }
    let spec = if Path::new(path).is_absolute() || path.starts_with("./") {
        format!("{base}:{path}")
    } else {
        format!("{base}:./{path}")
    };
    let what = format!("base contract {spec} (git show)");
    let text = git_show(&spec, &what)?;
    parse_contract(&text, &what)
}

fn git_show(spec: &str, what: &str) -> Result<String, Failure> {
    let mut child = Command::new("git")
        .args(["show", spec])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure(format!("{what}: cannot run git: {e}")))?;
    let stdout = child.stdout.take();
    let text = stdout.map(|out| read_bounded(out, what)).transpose();
    let output = child
        .wait_with_output()
        .map_err(|e| Failure(format!("{what}: git failed: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr = stderr.trim();
        return Err(Failure(format!(
            "{what}: not a file, and git could not read it: {stderr}"
        )));
    }
    Ok(text?.unwrap_or_default())
}
