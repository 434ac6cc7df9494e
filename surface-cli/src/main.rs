//! `agent-surface`: the drift gate of an agent surface (docs/drift.md).
//!
//! * `agent-surface snapshot [--manifest FILE] [--bindings FILE|-] [-o
//!   FILE]` writes the canonical contract;
//! * `agent-surface check --base FILE|GIT-REF [--current FILE] [--path
//!   CONTRACT_PATH] [--format text|github|json] [--acknowledge KEY …]`
//!   lists every change from the base to the current contract, classified
//!   widening, narrowing or neutral.
//!
//! Exit status: 0 when no widening is left unacknowledged, 1 when one is,
//! 2 on a usage, IO or parse error (the message names what and where).
#![forbid(unsafe_code)]

mod diff;
mod load;
mod report;
mod schema;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use surface_runtime::contract::SurfaceContract;

use load::Failure;

/// The drift gate of an agent surface: snapshot what an application
/// exposes to agents and tell whether a change widens it.
#[derive(Parser)]
#[command(name = "agent-surface", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write the canonical contract (from the app's contract entry point
    /// output and/or a manifest).
    Snapshot {
        /// An agent manifest: its procedures become the contract's
        /// `manifest` section.
        #[arg(long, value_name = "FILE")]
        manifest: Option<String>,
        /// The contract the application printed (`-` for standard input).
        #[arg(long, value_name = "FILE|-")]
        bindings: Option<String>,
        /// Write here instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<String>,
    },
    /// Compare a base contract with the current one; exit 1 on
    /// unacknowledged widening.
    Check {
        /// The base: a contract file, else a git revision whose
        /// `--path` is read with `git show`.
        #[arg(long, value_name = "FILE|GIT-REF")]
        base: String,
        /// The current contract (default: `--path`).
        #[arg(long, value_name = "FILE")]
        current: Option<String>,
        /// The contract's path in the repository.
        #[arg(
            long,
            value_name = "CONTRACT_PATH",
            default_value = "surface.contract.json"
        )]
        path: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// A widening change's key the reviewer accepts (repeatable).
        #[arg(long = "acknowledge", value_name = "KEY", num_args = 1..)]
        acknowledge: Vec<String>,
    },
}

/// `check`'s output format.
#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Github,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Snapshot {
            manifest,
            bindings,
            output,
        } => snapshot(manifest.as_deref(), bindings.as_deref(), output.as_deref()),
        Command::Check {
            base,
            current,
            path,
            format,
            acknowledge,
        } => {
            let current = current.unwrap_or_else(|| path.clone());
            let acknowledged = acknowledge.into_iter().collect();
            check(&base, &current, &path, format, &acknowledged)
        }
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(Failure(message)) => {
            eprintln!("agent-surface: error: {}", report::escape_text(&message));
            ExitCode::from(2)
        }
    }
}

/// `snapshot`: exit 0 once the contract is written.
fn snapshot(
    manifest: Option<&str>,
    bindings: Option<&str>,
    output: Option<&str>,
) -> Result<u8, Failure> {
    let mut contract = match bindings {
        Some(path) => {
            let text = load::read_text(path, "bindings contract")?;
            load::parse_contract(&text, &format!("bindings contract {path}"))?
        }
        None if manifest.is_some() => SurfaceContract::empty(),
        None => {
            return Err(Failure(
                "snapshot needs --bindings FILE|- or --manifest FILE".into(),
            ))
        }
    };
    if let Some(path) = manifest {
        let manifest = load::read_manifest(path)?;
        contract.manifest = SurfaceContract::from_manifest(&manifest).manifest;
    }
    write_output(output, &contract.to_json())?;
    Ok(0)
}

fn write_output(output: Option<&str>, text: &str) -> Result<(), Failure> {
    match output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| Failure(format!("cannot write {path}: {e}")))
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| Failure(format!("cannot write to standard output: {e}"))),
    }
}

/// `check`: 1 when a widening change is not acknowledged, else 0.
fn check(
    base: &str,
    current: &str,
    path: &str,
    format: Format,
    acknowledged: &BTreeSet<String>,
) -> Result<u8, Failure> {
    let base = load::read_base(base, path)?;
    let text = load::read_text(current, "current contract")?;
    let current_contract = load::parse_contract(&text, &format!("current contract {current}"))?;
    let changes = diff::diff(&base, &current_contract);
    let report = report::Report {
        changes: &changes,
        acknowledged,
        file: current,
    };
    let out = match format {
        Format::Text => report.text(),
        Format::Github => report.github(),
        Format::Json => report.json(),
    };
    write_output(None, &out)?;
    warn_unmatched(&changes, acknowledged);
    Ok(u8::from(report.unacknowledged() > 0))
}

/// Warns (standard error) of each `--acknowledge` key that names no
/// widening change: a typo must not pass for an acknowledgement.
fn warn_unmatched(changes: &[diff::Change], acknowledged: &BTreeSet<String>) {
    for key in acknowledged {
        let widening = |c: &diff::Change| c.class == diff::Class::Widening && &c.key == key;
        if !changes.iter().any(widening) {
            eprintln!(
                "agent-surface: warning: --acknowledge {} names no widening change",
                report::escape_text(key)
            );
        }
    }
}
