//! `agent-surface check` over the devices example's committed contract
//! (docs/drift.md): one test per widening kind (each also checks that the
//! reverse change is narrowing), neutral changes, acknowledgement, the
//! GitHub format's escaping, a git revision as the base, and errors.

mod support;

use serde_json::json;
use support::*;

#[test]
fn procedure_binding_added_is_widening() {
    let current = devices_contract();
    let mut base = current.clone();
    remove(&mut base, "procedures", "domain:devices.list");
    assert_widening(
        "procedure-added",
        &base,
        &current,
        "procedure-added:domain:devices.list",
        "domain:devices.list: procedure binding added; an agent can now call it",
        "procedure-removed:domain:devices.list",
    );
}

#[test]
fn view_action_added_is_widening() {
    let current = devices_contract();
    let mut base = current.clone();
    remove(&mut base, "views", "view:devices.table.filter");
    assert_widening(
        "view-action-added",
        &base,
        &current,
        "view-action-added:view:devices.table.filter",
        "view:devices.table.filter: view action added; an agent can now call it",
        "view-action-removed:view:devices.table.filter",
    );
}

#[test]
fn manifest_procedure_added_is_widening() {
    let current = devices_contract();
    let mut base = current.clone();
    base["manifest"]["procedures"]
        .as_array_mut()
        .expect("manifest procedures")
        .retain(|p| p["id"] != "domain:devices.stats");
    assert_widening(
        "manifest-procedure-added",
        &base,
        &current,
        "manifest-procedure-added:domain:devices.stats",
        "domain:devices.stats: manifest procedure added; the application may now bind it",
        "manifest-procedure-removed:domain:devices.stats",
    );
}

#[test]
fn property_added_to_a_closed_schema_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "views", "view:devices.table.select")["inputSchema"]["properties"]
        ["extra"] = json!({"type": "string"});
    assert_widening(
        "schema-property-added",
        &base,
        &current,
        "input-schema-looser:view:devices.table.select",
        "view:devices.table.select: input schema accepts more: property /properties/extra added",
        "input-schema-stricter:view:devices.table.select",
    );
}

#[test]
fn required_name_removed_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "views", "view:devices.table.select")["inputSchema"]
        .as_object_mut()
        .expect("a schema")
        .remove("required");
    assert_widening(
        "schema-required-removed",
        &base,
        &current,
        "input-schema-looser:view:devices.table.select",
        "view:devices.table.select: input schema accepts more: deviceIds is no longer required at /",
        "input-schema-stricter:view:devices.table.select",
    );
}

#[test]
fn enum_value_added_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "views", "view:devices.table.filter")["inputSchema"]["properties"]
        ["status"]["enum"] = json!(["active", "disabled", "retired"]);
    assert_widening(
        "schema-enum-added",
        &base,
        &current,
        "input-schema-looser:view:devices.table.filter",
        "view:devices.table.filter: input schema accepts more: enum at /properties/status allows \"retired\"",
        "input-schema-stricter:view:devices.table.filter",
    );
}

#[test]
fn max_length_removed_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    manifest_entry(&mut current, "domain:devices.rename")["inputSchema"]["properties"]["name"]
        .as_object_mut()
        .expect("a schema")
        .remove("maxLength");
    assert_widening(
        "schema-max-length-removed",
        &base,
        &current,
        "manifest-input-schema-looser:domain:devices.rename",
        "domain:devices.rename: input schema accepts more: maxLength removed at /properties/name",
        "manifest-input-schema-stricter:domain:devices.rename",
    );
}

#[test]
fn maximum_raised_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.list")["inputSchema"]["properties"]
        ["limit"]["maximum"] = json!(1000);
    assert_widening(
        "schema-maximum-raised",
        &base,
        &current,
        "input-schema-looser:domain:devices.list",
        "domain:devices.list: input schema accepts more: maximum at /properties/limit changed from 100 to 1000",
        "input-schema-stricter:domain:devices.list",
    );
}

#[test]
fn pattern_removed_is_widening() {
    let mut base = devices_contract();
    let current = base.clone();
    entry(&mut base, "views", "view:devices.table.select")["inputSchema"]["properties"]
        ["deviceIds"]["items"]["pattern"] = json!("^dev-");
    assert_widening(
        "schema-pattern-removed",
        &base,
        &current,
        "input-schema-looser:view:devices.table.select",
        "view:devices.table.select: input schema accepts more: pattern removed at /properties/deviceIds/items",
        "input-schema-stricter:view:devices.table.select",
    );
}

#[test]
fn additional_properties_no_longer_false_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.purge")["inputSchema"]
        .as_object_mut()
        .expect("a schema")
        .remove("additionalProperties");
    assert_widening(
        "schema-additional-properties",
        &base,
        &current,
        "input-schema-looser:domain:devices.purge",
        "domain:devices.purge: input schema accepts more: additionalProperties no longer false at /",
        "input-schema-stricter:domain:devices.purge",
    );
}

#[test]
fn unprovable_schema_change_is_widening_both_ways() {
    let mut base = devices_contract();
    let mut current = base.clone();
    let schema = |c: &mut serde_json::Value| -> serde_json::Value {
        entry(c, "procedures", "domain:devices.disable")["inputSchema"].clone()
    };
    let mut b = schema(&mut base);
    b["anyOf"] = json!([{"required": ["reason"]}]);
    let mut c = schema(&mut current);
    c["anyOf"] = json!([{"required": ["note"]}]);
    entry(&mut base, "procedures", "domain:devices.disable")["inputSchema"] = b;
    entry(&mut current, "procedures", "domain:devices.disable")["inputSchema"] = c;
    let (code, out, _) = check("schema-changed", &base, &current, &[]);
    assert_eq!(
        out,
        "[widening] input-schema-changed:domain:devices.disable: domain:devices.disable: schema changed: schema changed at / (anyOf)\n\
         agent-surface check: 1 change(s): 1 widening (1 unacknowledged), 0 narrowing, 0 neutral\n"
    );
    assert_eq!(code, 1);
    let (code, pairs) = classes("schema-changed-reverse", &current, &base);
    assert_eq!(
        pairs,
        [(
            "widening".to_string(),
            "input-schema-changed:domain:devices.disable".to_string()
        )]
    );
    assert_eq!(code, 1);
}

#[test]
fn bound_field_removed_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.disable")["boundFields"] = json!([]);
    assert_widening(
        "bound-field-removed",
        &base,
        &current,
        "bound-field-removed:domain:devices.disable:deviceIds",
        "domain:devices.disable: bound field deviceIds removed; the agent may now set it",
        "bound-field-added:domain:devices.disable:deviceIds",
    );
}

#[test]
fn bound_field_unlocked_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.purge")["boundFields"][0]["locked"] =
        json!(false);
    assert_widening(
        "bound-field-unlocked",
        &base,
        &current,
        "bound-field-unlocked:domain:devices.purge:deviceIds",
        "domain:devices.purge: bound field deviceIds no longer locked; the agent may now set it",
        "bound-field-locked:domain:devices.purge:deviceIds",
    );
}

#[test]
fn confirmation_lowered_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.disable")["confirmation"] = json!("optional");
    assert_widening(
        "confirmation-lowered",
        &base,
        &current,
        "confirmation-lowered:domain:devices.disable",
        "domain:devices.disable: confirmation required -> optional",
        "confirmation-raised:domain:devices.disable",
    );
}

#[test]
fn effect_escalated_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.disable")["effect"] = json!("destructive");
    assert_widening(
        "effect-escalated",
        &base,
        &current,
        "effect-escalated:domain:devices.disable",
        "domain:devices.disable: effect server-mutation -> destructive",
        "effect-reduced:domain:devices.disable",
    );
}

#[test]
fn view_effect_escalated_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "views", "view:devices.table.filter")["effect"] = json!("navigation");
    assert_widening(
        "view-effect-escalated",
        &base,
        &current,
        "effect-escalated:view:devices.table.filter",
        "view:devices.table.filter: effect local-state -> navigation",
        "effect-reduced:view:devices.table.filter",
    );
}

#[test]
fn requires_approval_dropped_is_widening() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.purge")["requiresApproval"] = json!(false);
    assert_widening(
        "approval-dropped",
        &base,
        &current,
        "approval-dropped:domain:devices.purge",
        "domain:devices.purge: requiresApproval dropped (the server no longer asks for its own approval)",
        "approval-added:domain:devices.purge",
    );
}

#[test]
fn binding_policy_removed_is_widening() {
    let mut base = devices_contract();
    let current = base.clone();
    entry(&mut base, "procedures", "domain:devices.disable")["policies"] = json!(["audit-log"]);
    assert_widening(
        "policy-removed",
        &base,
        &current,
        "policy-removed:domain:devices.disable:audit-log",
        "domain:devices.disable: policy audit-log removed",
        "policy-added:domain:devices.disable:audit-log",
    );
}

#[test]
fn registry_policy_removed_is_widening() {
    let mut base = devices_contract();
    let current = base.clone();
    base["policies"] = json!(["tenant-scope"]);
    assert_widening(
        "registry-policy-removed",
        &base,
        &current,
        "registry-policy-removed:tenant-scope",
        "the registry: policy tenant-scope removed",
        "registry-policy-added:tenant-scope",
    );
}

#[test]
fn description_changes_are_neutral_and_exit_0() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.list")["description"] = json!("List them");
    entry(&mut current, "views", "view:devices.table.select")["inputSchema"]["properties"]
        ["deviceIds"]["description"] = json!("Row ids");
    let (code, out, _) = check("neutral", &base, &current, &[]);
    assert_eq!(
        out,
        "[neutral] description-changed:domain:devices.list: domain:devices.list: description changed from \"List devices, optionally filtered by status\" to \"List them\"\n\
         [neutral] input-schema-reworded:view:devices.table.select: view:devices.table.select: input schema reworded (annotations or equivalent forms only)\n\
         agent-surface check: 2 change(s): 0 widening (0 unacknowledged), 0 narrowing, 2 neutral\n"
    );
    assert_eq!(code, 0);
}

#[test]
fn identical_contracts_have_no_changes() {
    let base = devices_contract();
    let (code, out, err) = check("identical", &base, &base, &[]);
    assert_eq!(out, "agent-surface check: no changes\n", "stderr: {err}");
    assert_eq!(code, 0);
}

#[test]
fn acknowledged_widening_exits_0() {
    let current = devices_contract();
    let mut base = current.clone();
    remove(&mut base, "procedures", "domain:devices.list");
    entry(&mut base, "procedures", "domain:devices.purge")["confirmation"] = json!("optional");
    let (code, out, err) = check(
        "acknowledged",
        &base,
        &current,
        &[
            "--acknowledge",
            "procedure-added:domain:devices.list",
            "procedure-added:domain:devices.lst",
        ],
    );
    assert_eq!(
        err,
        "agent-surface: warning: --acknowledge procedure-added:domain:devices.lst names no widening change\n"
    );
    assert_eq!(
        out,
        "[widening, acknowledged] procedure-added:domain:devices.list: domain:devices.list: procedure binding added; an agent can now call it\n\
         [narrowing] confirmation-raised:domain:devices.purge: domain:devices.purge: confirmation optional -> required\n\
         agent-surface check: 2 change(s): 1 widening (0 unacknowledged), 1 narrowing, 0 neutral\n"
    );
    assert_eq!(code, 0);
    let mut base2 = base.clone();
    entry(&mut base2, "procedures", "domain:devices.purge")["confirmation"] = json!("required");
    entry(&mut base2, "procedures", "domain:devices.purge")["requiresApproval"] = json!(true);
    let mut current2 = current.clone();
    entry(&mut current2, "procedures", "domain:devices.purge")["requiresApproval"] = json!(false);
    let (code, _, _) = check(
        "acknowledged-partly",
        &base2,
        &current2,
        &["--acknowledge", "procedure-added:domain:devices.list"],
    );
    assert_eq!(code, 1, "one widening change is still unacknowledged");
}

#[test]
fn github_format_escapes_hostile_text() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.list")["description"] =
        json!("100% safe\r\n::error title=x::pwned, really");
    let mut hostile = entry(&mut current, "views", "view:devices.table.filter").clone();
    hostile["id"] = json!("view:evil,1::x\n%");
    current["views"]
        .as_array_mut()
        .expect("views")
        .push(hostile);
    let (code, out, _) = check("github", &base, &current, &["--format", "github"]);
    let file = std::env::temp_dir()
        .join("agent-surface-cli-tests")
        .join(format!("github-{}", std::process::id()))
        .join("current.json");
    let file = file
        .to_str()
        .expect("UTF-8")
        .replace('%', "%25")
        .replace(':', "%3A")
        .replace(',', "%2C");
    assert_eq!(
        out,
        format!(
            "::error file={file},title=widening%3A view-action-added%3Aview%3Aevil%2C1%3A%3Ax%0A%25::view:evil,1::x%0A%25: view action added; an agent can now call it%0AReview it, then acknowledge with --acknowledge view-action-added:view:evil,1::x%0A%25\n\
             ::notice file={file},title=neutral%3A description-changed%3Adomain%3Adevices.list::domain:devices.list: description changed from \"List devices, optionally filtered by status\" to \"100%25 safe%0D%0A::error title=x::pwned, really\"\n\
             ::notice title=agent-surface check::2 change(s): 1 widening (1 unacknowledged), 0 narrowing, 1 neutral\n"
        )
    );
    assert_eq!(code, 1);
}

#[test]
fn text_format_escapes_control_characters() {
    let base = devices_contract();
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.list")["description"] =
        json!("a\u{1b}[31mred\\n\nb");
    let (code, out, _) = check("text-escape", &base, &current, &[]);
    assert_eq!(
        out,
        "[neutral] description-changed:domain:devices.list: domain:devices.list: description changed from \"List devices, optionally filtered by status\" to \"a\\u{1b}[31mred\\\\n\\u{a}b\"\n\
         agent-surface check: 1 change(s): 0 widening (0 unacknowledged), 0 narrowing, 1 neutral\n"
    );
    assert_eq!(code, 0);
}

#[test]
fn json_format_lists_every_change() {
    let current = devices_contract();
    let mut base = current.clone();
    remove(&mut base, "procedures", "domain:devices.list");
    let (code, out, _) = check("json", &base, &current, &["--format", "json"]);
    assert_eq!(
        out,
        "{\n  \"changes\": [\n    {\n      \"acknowledged\": false,\n      \"class\": \"widening\",\n      \"key\": \"procedure-added:domain:devices.list\",\n      \"reason\": \"domain:devices.list: procedure binding added; an agent can now call it\"\n    }\n  ],\n  \"summary\": {\n    \"changes\": 1,\n    \"narrowing\": 0,\n    \"neutral\": 0,\n    \"unacknowledged\": 1,\n    \"widening\": 1\n  }\n}\n"
    );
    assert_eq!(code, 1);
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git");
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

#[test]
fn git_revision_as_the_base() {
    let dir = scratch("git-base");
    git(&dir, &["init", "-q"]);
    let base = devices_contract();
    write(&dir, "surface.contract.json", &base);
    git(&dir, &["add", "surface.contract.json"]);
    git(
        &dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qm",
            "base",
        ],
    );
    let mut current = base.clone();
    entry(&mut current, "procedures", "domain:devices.purge")["requiresApproval"] = json!(false);
    write(&dir, "surface.contract.json", &current);
    let output = run(&dir, &["check", "--base", "HEAD"]);
    assert_eq!(
        stdout(&output),
        "[widening] approval-dropped:domain:devices.purge: domain:devices.purge: requiresApproval dropped (the server no longer asks for its own approval)\n\
         agent-surface check: 1 change(s): 1 widening (1 unacknowledged), 0 narrowing, 0 neutral\n",
        "stderr: {}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(1));
    let output = run(&dir, &["check", "--base", "no-such-ref"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with(
            "agent-surface: error: base contract no-such-ref:./surface.contract.json (git show): not a file, and git could not read it: "
        ),
        "stderr: {}",
        stderr(&output)
    );
}

#[test]
fn missing_current_file_exits_2() {
    let dir = scratch("missing");
    let base = write(&dir, "base.json", &devices_contract());
    let output = run(&dir, &["check", "--base", &base, "--current", "nope.json"]);
    assert_eq!(
        stderr(&output),
        "agent-surface: error: current contract nope.json: No such file or directory (os error 2)\n"
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout(&output), "");
}

#[test]
fn not_json_exits_2() {
    let dir = scratch("not-json");
    let base = write(&dir, "base.json", &devices_contract());
    std::fs::write(dir.join("current.json"), "not json").expect("write");
    let output = run(
        &dir,
        &["check", "--base", &base, "--current", "current.json"],
    );
    assert_eq!(
        stderr(&output),
        "agent-surface: error: current contract current.json: not a surface contract: expected ident at line 1 column 2\n"
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn wrong_contract_version_exits_2() {
    let mut contract = devices_contract();
    contract["contractVersion"] = json!(2);
    let (code, out, err) = check("version", &contract, &devices_contract(), &[]);
    assert!(
        err.starts_with("agent-surface: error: base contract ")
            && err.ends_with(
                "base.json: unsupported contractVersion 2 (this tool reads contractVersion 1)\n"
            ),
        "stderr: {err}"
    );
    assert_eq!(out, "");
    assert_eq!(code, 2);
}

#[test]
fn unknown_effect_exits_2_naming_the_line() {
    let mut current = devices_contract();
    entry(&mut current, "procedures", "domain:devices.list")["effect"] = json!("teleport");
    let (code, _, err) = check("effect", &devices_contract(), &current, &[]);
    assert!(
        err.contains("current.json: not a surface contract: unknown variant `teleport`, expected one of `server-query`, `server-mutation`, `external-side-effect`, `destructive` at line ")
            && err.contains(" column "),
        "stderr: {err}"
    );
    assert_eq!(code, 2);
}

#[test]
fn usage_error_exits_2() {
    let dir = scratch("usage");
    let output = run(&dir, &["check"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--base <FILE|GIT-REF>"),
        "stderr: {}",
        stderr(&output)
    );
}
