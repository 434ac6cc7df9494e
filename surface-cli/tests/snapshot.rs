//! `agent-surface snapshot` (docs/drift.md, "Snapshot"): the canonical
//! contract from an application's printed contract and/or a manifest.

mod support;

use support::*;

#[test]
fn snapshot_of_the_committed_contract_is_byte_identical() {
    let dir = scratch("snapshot-same");
    let committed = repo_root().join("examples/devices/surface.contract.json");
    let output = run(
        &dir,
        &["snapshot", "--bindings", committed.to_str().expect("UTF-8")],
    );
    let expected = std::fs::read_to_string(&committed).expect("read the contract");
    assert_eq!(stdout(&output), expected, "stderr: {}", stderr(&output));
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn snapshot_sorts_keys_and_entries_and_writes_the_output_file() {
    let dir = scratch("snapshot-sort");
    let mut shuffled = devices_contract();
    shuffled["procedures"]
        .as_array_mut()
        .expect("procedures")
        .reverse();
    shuffled["views"].as_array_mut().expect("views").reverse();
    let input = write(&dir, "in.json", &shuffled);
    let output = run(&dir, &["snapshot", "--bindings", &input, "-o", "out.json"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let written = std::fs::read_to_string(dir.join("out.json")).expect("read out.json");
    let committed =
        std::fs::read_to_string(repo_root().join("examples/devices/surface.contract.json"))
            .expect("read the contract");
    assert_eq!(written, committed);
}

#[test]
fn snapshot_of_a_manifest_alone_has_no_bindings() {
    let dir = scratch("snapshot-manifest");
    let manifest = repo_root().join("tests/fixtures/devices.manifest.json");
    let output = run(
        &dir,
        &["snapshot", "--manifest", manifest.to_str().expect("UTF-8")],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let contract: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let committed = devices_contract();
    assert_eq!(contract["manifest"], committed["manifest"]);
    assert_eq!(contract["procedures"], serde_json::json!([]));
    assert_eq!(contract["views"], serde_json::json!([]));
    assert_eq!(contract["policies"], serde_json::json!([]));
    assert_eq!(contract["contractVersion"], 1);
}

#[test]
fn snapshot_without_input_exits_2() {
    let dir = scratch("snapshot-none");
    let output = run(&dir, &["snapshot"]);
    assert_eq!(
        stderr(&output),
        "agent-surface: error: snapshot needs --bindings FILE|- or --manifest FILE\n"
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn snapshot_of_a_bad_manifest_exits_2_naming_it() {
    let dir = scratch("snapshot-bad-manifest");
    std::fs::write(dir.join("m.json"), r#"{"tools":{"a":{"effect":"nope"}}}"#).expect("write");
    let output = run(&dir, &["snapshot", "--manifest", "m.json"]);
    assert!(
        stderr(&output).starts_with("agent-surface: error: manifest m.json: "),
        "stderr: {}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(2));
}
