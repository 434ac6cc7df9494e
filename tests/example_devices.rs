//! Runs the `devices` example binary (`docs/example.md`):
//! the scripted agent on the embedded backend and against the real oRPC
//! peer, asserting the exit status and the key lines of every step.
//!
//! The binary is the one `cargo test` builds next to this test
//! (`target/<profile>/examples/devices`); when it is missing or older than
//! the example's sources (e.g. `cargo test --test example_devices`), it is
//! built with `cargo build --example devices` first.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use support::peer::{repo_root, Peer};

fn newest_source_mtime(dir: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    let sources = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        // The committed contract is the binary's output, not its source.
        .filter(|p| !p.ends_with("surface.contract.json"))
        .chain([repo_root().join("tests/fixtures/devices.manifest.json")]);
    for path in sources {
        if let Ok(modified) = std::fs::metadata(&path).and_then(|m| m.modified()) {
            newest = newest.max(modified);
        }
    }
    newest
}

/// `target/<profile>/examples/devices`, built if missing or stale.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current test executable");
    // target/<profile>/deps/example_devices-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/<profile>/deps");
    let binary = profile_dir
        .join("examples")
        .join(format!("devices{}", std::env::consts::EXE_SUFFIX));
    let sources = newest_source_mtime(&repo_root().join("examples/devices"));
    let fresh = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .is_ok_and(|built| built >= sources);
    if !fresh {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .current_dir(repo_root())
            .args(["build", "--example", "devices"]);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some(profile) => {
                build.args(["--profile", profile]);
            }
        }
        let status = build.status().expect("run `cargo build --example devices`");
        assert!(status.success(), "`cargo build --example devices` failed");
    }
    assert!(
        binary.exists(),
        "the example binary is not at {}; run `cargo build --example devices`",
        binary.display()
    );
    binary
}

fn run_example(args: &[&str]) -> Output {
    let mut args = args.to_vec();
    // The JSON assertions need the full output; `short_mode_*` runs without.
    if args.first() != Some(&"--short") {
        args.push("--verbose");
    } else {
        args.remove(0);
    }
    support::process::output_within(
        Command::new(example_binary()).args(args),
        std::time::Duration::from_secs(60),
        "the devices example",
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The lines every successful scripted run prints, in order.
const STEP_LINES: [&str; 11] = [
    "[ok] step 1: catalog lists 3 procedures + 2 view capabilities",
    "[ok] step 2: INVALID_INPUT with lockedFields [\"deviceIds\"]",
    "[ok] step 3: CONFIRMATION_REQUIRED; the summary shows the selected ids [\"dev-1\",\"dev-2\"]",
    "[ok] step 4: ok: the backend disabled [\"dev-1\",\"dev-2\"]",
    "[ok] step 5: a confirmation approved for [\"dev-locked\"] is CONFIRMATION_INVALID (mismatch, retry no)",
    "[ok] step 6: STALE_CAPABILITY (after-refresh)",
    "[ok] step 7: the local confirmation passed, the server still answered DOMAIN_APPROVAL_REQUIRED (appr-1)",
    "[approver page] getApproval(appr-1): devices.purge pending, types [\"irreversible\"], reasons [\"Approval is required for devices.purge.\"], expires ",
    "[approver] approves appr-1 at the application's decision endpoint (POST /approvals/decide, approver credential; never a model tool)",
    "[ok] step 8: approved by a person, resumed once through the gateway: the run received {\"purged\":[\"dev-1\"]}; a second resume answered the recorded outcome; dev-1 is gone",
    "All 8 steps passed.",
];

/// Asserts a successful run: exit 0, every step line in order, and the
/// JSON the agent saw for each outcome.
fn assert_full_run(output: &Output, backend_line: &str) {
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "the example failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains(backend_line),
        "missing `{backend_line}`:\n{stdout}"
    );
    let mut from = 0;
    for line in STEP_LINES {
        let at = stdout[from..]
            .find(line)
            .unwrap_or_else(|| panic!("missing (or out of order) `{line}`:\n{stdout}"));
        from += at + line.len();
    }
    for key in [
        // The catalog: the reduced schema and binding metadata of disable.
        "\"procedureId\": \"domain:devices.disable\"",
        "\"path\": \"deviceIds\"",
        "\"capabilityId\": \"view:devices.table.select\"",
        // Every outcome, as the agent received it.
        "\"code\": \"INVALID_INPUT\"",
        "\"lockedFields\": [\n        \"deviceIds\"\n      ]",
        "\"code\": \"CONFIRMATION_REQUIRED\"",
        "\"code\": \"CONFIRMATION_INVALID\"",
        "\"reason\": \"mismatch\"",
        "\"code\": \"STALE_CAPABILITY\"",
        "\"code\": \"DOMAIN_APPROVAL_REQUIRED\"",
        "\"approvalId\": \"appr-1\"",
        "\"disabled\": [\n      \"dev-1\",\n      \"dev-2\"\n    ]",
        "[user] approves -> registry.confirm(",
    ] {
        assert!(stdout.contains(key), "missing `{key}` in:\n{stdout}");
    }
    assert!(stderr.is_empty(), "unexpected stderr: {stderr}");
}

#[test]
fn example_devices_embedded_default_runs_every_step_and_exits_0() {
    let output = run_example(&[]);
    assert_full_run(&output, "backend:  embedded in-process devices backend");
}

#[test]
fn example_devices_against_the_real_orpc_peer_exits_0() {
    let Some(peer) = Peer::start("example_devices_against_the_real_orpc_peer_exits_0") else {
        return;
    };
    let url = peer.rpc_url();
    let output = run_example(&["--orpc-url", &url]);
    assert_full_run(
        &output,
        &format!(
            "backend:  real oRPC server at {url} (create_orpc_agent_bridge + HttpOrpcClient; devices.purge through the governed bridge and the gateway at {})",
            peer.gateway_url()
        ),
    );

    // The run changed the peer's state (dev-1 purged, dev-2 disabled): the checks
    // are real, so a second run against the same peer fails at step 1 and
    // says why.
    let again = run_example(&["--orpc-url", &url]);
    let stderr = text(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains(
            "FAILED at step 1 (discovery): devices.list should return the four seed devices with their seed statuses: \
             expected dev-1 active, dev-2 active, dev-3 disabled, dev-locked active; \
             got dev-2 disabled, dev-3 disabled, dev-locked active"
        ) && stderr.contains("start a fresh one for every run"),
        "stderr: {stderr}"
    );
}

#[test]
fn example_devices_short_mode_prints_the_steps_and_one_line_per_call() {
    let output = run_example(&["--short"]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let mut from = 0;
    for line in STEP_LINES {
        let at = stdout[from..]
            .find(line)
            .unwrap_or_else(|| panic!("missing (or out of order) `{line}`:\n{stdout}"));
        from += at + line.len();
    }
    for line in [
        "manifest: tests/fixtures/devices.manifest.json (6 procedures, digest ",
        "this console registers 3 of them (devices.list, devices.disable, devices.purge); the agent sees only registered procedures, so agent.echoInvocation, devices.rename, devices.stats stay out of its catalog",
        "dev-locked is a device the backend refuses to disable or purge (FORBIDDEN)",
        "[agent] sees 3 procedures and 2 view capabilities (--verbose prints the catalog's JSON)",
        "-> agent calls domain:devices.disable with {\"deviceIds\":[\"dev-locked\"],\"reason\":\"cleanup\"}",
        "<- INVALID_INPUT (retry with-changes) {\"lockedFields\":[\"deviceIds\"]}",
        // The first change is explained once, naming what the snapshot
        // observed; later ones say only where the version was.
        "[agent] takes a snapshot: surfaceVersion 6 (was 4 at its last snapshot; this snapshot observed that domain:devices.disable and domain:devices.purge became available; the registry bumps the version on every registration, every change the app reports and every availability change a snapshot observes, so it can move by more than the app's reports)",
        "[agent] takes a snapshot: surfaceVersion 7 (was 6)\n",
        "<- CONFIRMATION_REQUIRED (retry with-confirmation) {\"confirmationId\":\"conf_",
        "\"effect\":\"server-mutation\",\"origin\":\"client\"}",
        "[app] confirmation dialog: domain:devices.disable with {\"deviceIds\":[\"dev-1\",\"dev-2\"],\"reason\":\"maintenance\"}",
        "<- DOMAIN_APPROVAL_REQUIRED (retry no) {\"approvalId\":\"appr-1\",\"executionId\":\"exec-2\",\"invocationId\":\"inv-11\",\"origin\":\"server\"}",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in:\n{stdout}");
    }
    assert!(
        !stdout.contains("\"procedureId\""),
        "the short mode printed the catalog's JSON:\n{stdout}"
    );
    assert!(
        stdout.lines().count() < 120,
        "the short mode printed {} lines",
        stdout.lines().count()
    );
}

#[test]
fn example_devices_unreachable_server_fails_at_setup_with_exit_1() {
    // A bound port that never listens: the connection is refused.
    let refusing = support::net::RefusingPort::new();
    let url = format!("http://{}/rpc", refusing.addr);
    let output = run_example(&["--orpc-url", &url]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    // The first call at setup is the gateway's `describe`.
    let gateway = url.replace("/rpc", "/gateway/describe");
    assert!(
        stderr.contains("FAILED at setup: the gateway's describe failed: could not connect")
            && stderr.contains(&gateway),
        "stderr: {stderr}"
    );
}

#[test]
fn example_devices_rejects_unknown_arguments_with_usage() {
    let output = run_example(&["--orpc"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("error: unknown argument `--orpc`")
            && stderr.contains("usage: devices [--orpc-url URL]"),
        "stderr: {stderr}"
    );
}

/// The first line where `a` and `b` differ (1-based), with both lines.
fn first_difference(a: &str, b: &str) -> String {
    let (mut left, mut right) = (a.lines(), b.lines());
    for number in 1.. {
        match (left.next(), right.next()) {
            (None, None) => break,
            (l, r) if l != r => {
                return format!(
                    "line {number}: printed {:?}, committed {:?}",
                    l.unwrap_or("<end>"),
                    r.unwrap_or("<end>")
                )
            }
            _ => {}
        }
    }
    "the final newline".to_string()
}

/// The drift gate (docs/drift.md): the contract the console prints must
/// be the one committed next to it, so a change to what it exposes to
/// agents shows in review as a change to `surface.contract.json`.
#[test]
fn example_devices_contract_matches_the_committed_surface_contract() {
    let output = run_example(&["--contract"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        text(&output.stderr)
    );
    let printed = text(&output.stdout);
    let path = repo_root().join("examples/devices/surface.contract.json");
    let committed =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        printed == committed,
        "the devices console's surface contract differs from \
         examples/devices/surface.contract.json ({}): what it exposes to agents changed.\n\
         Regenerate it with\n  cargo run --example devices -- --contract \
         | cargo run -p agent-surface-cli -- snapshot --bindings - -o examples/devices/surface.contract.json\n\
         and review the change with\n  cargo run -p agent-surface-cli -- check --base origin/main \
         --path examples/devices/surface.contract.json\n(docs/drift.md, \"The drift gate\")",
        first_difference(&printed, &committed)
    );
    let contract: serde_json::Value = serde_json::from_str(&printed).expect("the contract is JSON");
    let ids = |section: &str| -> Vec<String> {
        contract[section]
            .as_array()
            .expect("an array")
            .iter()
            .map(|e| e["id"].as_str().expect("an id").to_string())
            .collect()
    };
    assert_eq!(
        ids("procedures"),
        [
            "domain:devices.disable",
            "domain:devices.list",
            "domain:devices.purge"
        ]
    );
    assert_eq!(
        ids("views"),
        ["view:devices.table.filter", "view:devices.table.select"]
    );
    assert_eq!(contract["contractVersion"], 1);
}
