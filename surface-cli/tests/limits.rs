//! The documented limits of `agent-surface` (docs/drift.md, "Limits"),
//! standard input, and acknowledged changes in the GitHub format.

mod support;

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use support::*;

#[test]
fn at_most_200_changes_are_printed_and_every_one_counts() {
    let base = devices_contract();
    let mut current = base.clone();
    let template = entry(&mut current, "views", "view:devices.table.filter").clone();
    for i in 0..250 {
        let mut view = template.clone();
        view["id"] = json!(format!("view:bulk.v{i:03}"));
        current["views"].as_array_mut().expect("views").push(view);
    }
    let (code, out, _) = check("many", &base, &current, &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 201);
    assert_eq!(
        lines[0],
        "[widening] view-action-added:view:bulk.v000: view:bulk.v000: view action added; an agent can now call it"
    );
    assert_eq!(
        lines[200],
        "agent-surface check: 250 change(s): 250 widening (250 unacknowledged), 0 narrowing, 0 neutral; 50 not printed (limit 200)"
    );
    assert_eq!(code, 1);
}

/// `{"properties": {"a": {"properties": {"a": … leaf …}}}}`, `depth` deep.
fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(
        leaf,
        |inner, _| json!({"type": "object", "properties": {"a": inner}}),
    )
}

#[test]
fn schema_differences_deeper_than_32_levels_are_schema_changed() {
    let mut base = devices_contract();
    let mut current = base.clone();
    entry(&mut base, "views", "view:devices.table.filter")["inputSchema"] =
        nested(40, json!({"type": "string", "maxLength": 5}));
    entry(&mut current, "views", "view:devices.table.filter")["inputSchema"] =
        nested(40, json!({"type": "string", "maxLength": 4}));
    let (code, out, _) = check("deep", &base, &current, &[]);
    let below = "/properties/a".repeat(33);
    assert_eq!(
        out,
        format!(
            "[widening] input-schema-changed:view:devices.table.filter: view:devices.table.filter: schema changed: schema changed below {below} (nesting deeper than 32)\n\
             agent-surface check: 1 change(s): 1 widening (1 unacknowledged), 0 narrowing, 0 neutral\n"
        )
    );
    assert_eq!(code, 1);
}

#[test]
fn a_contract_over_16_mib_exits_2() {
    let dir = scratch("too-large");
    let base = write(&dir, "base.json", &devices_contract());
    let mut big = serde_json::to_string(&devices_contract()).expect("JSON");
    big.push_str(&" ".repeat(16 * 1024 * 1024));
    std::fs::write(dir.join("big.json"), big).expect("write");
    let output = run(&dir, &["check", "--base", &base, "--current", "big.json"]);
    assert_eq!(
        stderr(&output),
        "agent-surface: error: current contract big.json: larger than the limit of 16777216 bytes\n"
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn snapshot_reads_standard_input() {
    let dir = scratch("stdin");
    let committed =
        std::fs::read_to_string(repo_root().join("examples/devices/surface.contract.json"))
            .expect("read the contract");
    let compact = serde_json::to_string(&devices_contract()).expect("JSON");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-surface"))
        .current_dir(&dir)
        .args(["snapshot", "--bindings", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run agent-surface");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(compact.as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(String::from_utf8(output.stdout).expect("UTF-8"), committed);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn github_format_shows_acknowledged_and_narrowing_changes_as_notices() {
    let current = devices_contract();
    let mut base = current.clone();
    remove(&mut base, "procedures", "domain:devices.list");
    entry(&mut base, "procedures", "domain:devices.purge")["confirmation"] = json!("optional");
    let dir = scratch("github-ack");
    let base = write(&dir, "base.json", &base);
    write(&dir, "surface.contract.json", &current);
    let output = run(
        &dir,
        &[
            "check",
            "--base",
            &base,
            "--format",
            "github",
            "--acknowledge",
            "procedure-added:domain:devices.list",
        ],
    );
    assert_eq!(
        stdout(&output),
        "::notice file=surface.contract.json,title=widening%2C acknowledged%3A procedure-added%3Adomain%3Adevices.list::domain:devices.list: procedure binding added; an agent can now call it\n\
         ::notice file=surface.contract.json,title=narrowing%3A confirmation-raised%3Adomain%3Adevices.purge::domain:devices.purge: confirmation optional -> required\n\
         ::notice title=agent-surface check::2 change(s): 1 widening (0 unacknowledged), 1 narrowing, 0 neutral\n"
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn a_reason_lists_at_most_10_schema_findings() {
    let base = devices_contract();
    let mut current = base.clone();
    let properties =
        &mut entry(&mut current, "views", "view:devices.table.select")["inputSchema"]["properties"];
    for i in 0..12 {
        properties[format!("p{i:02}")] = json!({});
    }
    let (code, out, _) = check("findings", &base, &current, &[]);
    let listed: Vec<String> = (0..10)
        .map(|i| format!("property /properties/p{i:02} added"))
        .collect();
    assert_eq!(
        out,
        format!(
            "[widening] input-schema-looser:view:devices.table.select: view:devices.table.select: input schema accepts more: {}; and 2 more\n\
             agent-surface check: 1 change(s): 1 widening (1 unacknowledged), 0 narrowing, 0 neutral\n",
            listed.join("; ")
        )
    );
    assert_eq!(code, 1);
}
