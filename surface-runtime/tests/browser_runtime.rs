//! The runtime's default features in a real browser (headless Chromium via
//! `wasm-bindgen-test-runner`): the clock (`js_sys::Date`), randomness
//! (`getrandom` → `crypto.getRandomValues`), `pattern` (JavaScript's
//! `RegExp` with the `u` flag) and `format` (JavaScript's `URL` for `uri`)
//! — the code paths that exist only on wasm32.
//!
//! ```text
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!   CHROMEDRIVER=/usr/bin/chromedriver \
//!   cargo test -p surface-runtime --target wasm32-unknown-unknown --test browser_runtime
//! ```
//!
//! `scripts/test` runs it with `--features browser`, in the same build as
//! `browser_transports` (these code paths are the same with it).
#![cfg(target_arch = "wasm32")]

mod common;

use common::{authority, consumer, now, procedure, DisableBinding, RecordingExecutor};
use serde_json::{json, Value};
use std::sync::Arc;
use surface_runtime::format;
use surface_runtime::pattern::{check_syntax, Pattern};
use surface_runtime::{
    AgentInvocation, AgentProcedureBinding, Clock, ConfirmationLevel, SurfaceRegistry, SystemClock,
};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn system_clock_reads_the_browsers_date_now() {
    let before = js_sys::Date::now() as u64;
    let read = SystemClock.now_ms();
    let after = js_sys::Date::now() as u64;
    assert!(
        before <= read && read <= after,
        "{before} <= {read} <= {after}"
    );
    assert!(read > 1_577_836_800_000, "after 2020: {read}");
}

/// A registry in the browser: the secret comes from `getrandom`
/// (`crypto.getRandomValues`), confirmation expiry from the system clock,
/// and a confirmation id approved in one registry does not confirm a call
/// in another (ids are MACs under each registry's secret).
#[wasm_bindgen_test]
fn registries_get_random_secrets_and_clock_based_expiry_in_the_browser() {
    let registries: Vec<(SurfaceRegistry, Arc<RecordingExecutor>, _)> = (0..2)
        .map(|_| {
            let registry = SurfaceRegistry::builder(authority())
                .try_build()
                .expect("getrandom works in the browser");
            let executor = Arc::new(RecordingExecutor::default());
            registry.set_procedure_executor(executor.clone());
            let handle = registry
                .register_procedure(
                    AgentProcedureBinding::new(procedure(registry.authority(), "devices.disable"))
                        .bind(|| DisableBinding {
                            device_ids: vec!["dev-1".into(), "dev-2".into()],
                        })
                        .confirmation(ConfirmationLevel::Required),
                )
                .unwrap();
            (registry, executor, handle)
        })
        .collect();
    let mut approved = Vec::new();
    for (i, (registry, _, _)) in registries.iter().enumerate() {
        let mut call = AgentInvocation::new(format!("first-{i}"), "domain:devices.disable");
        call.surface_version = Some(registry.surface_version());
        let before = js_sys::Date::now() as u64;
        let result = now(registry.invoke(call, &consumer()));
        let error = result.error().expect("confirmation required");
        assert_eq!(error.code.as_str(), "CONFIRMATION_REQUIRED");
        assert_eq!(
            error.details["summary"],
            r#"Disable devices — input: {"deviceIds":["dev-1","dev-2"]}"#
        );
        let expires_at = error.details["expiresAt"].as_str().unwrap();
        let expires = js_sys::Date::parse(expires_at) as u64;
        // An ISO 8601 instant as JavaScript writes it.
        assert_eq!(surface_runtime::clock::iso_8601(expires), expires_at);
        // The default confirmation lifetime is 5 minutes.
        assert!(
            expires >= before + 300_000 && expires <= js_sys::Date::now() as u64 + 300_000,
            "{expires_at}"
        );
        let id = error.details["confirmationId"].as_str().unwrap();
        let pending = registry.confirm(id).unwrap();
        assert_eq!(pending.input, json!({"deviceIds": ["dev-1", "dev-2"]}));
        approved.push(pending.confirmation_id);
    }
    // `conf_` and 24 hex digits of a MAC under each registry's secret.
    for id in &approved {
        assert_eq!(id.len(), "conf_".len() + 24, "{id}");
        assert!(
            id["conf_".len()..].bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
    assert_ne!(approved[0], approved[1]);
    assert_ne!(registries[0].0.surface_id(), registries[1].0.surface_id());
    // Registry 1's approved confirmation presented to registry 0 is
    // refused; registry 0's own is accepted.
    let (registry, executor, _) = &registries[0];
    for (id, confirmation, expected) in [
        ("cross", &approved[1], "error"),
        ("own", &approved[0], "ok"),
    ] {
        let mut call = AgentInvocation::new(id, "domain:devices.disable");
        call.surface_version = Some(registry.surface_version());
        call.confirmation_id = Some(confirmation.clone());
        let result = serde_json::to_value(now(registry.invoke(call, &consumer()))).unwrap();
        assert_eq!(result["status"], expected, "{id}: {result}");
        assert_eq!(result["capabilityId"], "domain:devices.disable", "{result}");
        if expected == "error" {
            assert_eq!(result["error"]["code"], "CONFIRMATION_INVALID", "{result}");
        }
    }
    assert_eq!(executor.calls().len(), 1);
    assert_eq!(
        executor.calls()[0].input,
        json!({"deviceIds": ["dev-1", "dev-2"]})
    );
}

/// `pattern` on wasm32 is JavaScript's `RegExp` with the `u` flag:
/// search semantics, Unicode property escapes, lookbehind, code-point `.`,
/// ASCII-only `\d`, and syntax errors reported, never thrown.
#[wasm_bindgen_test]
fn patterns_use_javascript_regexp_with_the_unicode_flag() {
    let cases: &[(&'static str, &str, bool)] = &[
        ("a", "xxa", true),
        ("^a$", "xxa", false),
        (r"^\p{L}+$", "héllo", true),
        (r"^\p{L}+$", "hé1lo", false),
        (r"(?<=a)b", "ab", true),
        (r"(?<=a)b", "cb", false),
        (r"^.$", "😀", true),
        (r"^..$", "😀", false),
        (r"^\d$", "٣", false),
        (r"^\d$", "3", true),
        (r"^(?<y>\d{4})-\k<y>$", "2026-2026", true),
        (r"^(?<y>\d{4})-\k<y>$", "2026-2027", false),
        (r"^[^@\s]+@[^@\s]+$", "a@b", true),
    ];
    for (source, haystack, expected) in cases {
        let pattern = Pattern::new(source);
        assert_eq!(
            pattern.matches(haystack),
            Ok(*expected),
            "/{source}/u on {haystack:?}"
        );
    }
    // Invalid under the u flag (an identity escape), and unbalanced.
    for source in [r"\-", "(", "[a-"] {
        assert!(check_syntax(source).is_err(), "{source}");
        let pattern = Pattern::new(source);
        let error = pattern.matches("x").unwrap_err();
        assert_eq!(error.pattern(), source);
        assert!(!error.message().is_empty());
        assert!(!pattern.is_match("x"), "fails closed");
    }
    assert!(check_syntax(r"^\p{Lu}").is_ok());
}

/// Every labelled string of `tests/fixtures/formats/cases.json` (whose
/// labels `tests/formats_zod.rs` checks against the real zod) gets the
/// same verdict from `format::check` in the browser, where `uri` uses
/// JavaScript's `URL` and patterns its `RegExp`.
#[wasm_bindgen_test]
fn formats_give_the_zod_labels_in_the_browser() {
    let cases: Value =
        serde_json::from_str(include_str!("../../tests/fixtures/formats/cases.json")).unwrap();
    let mut checked = 0;
    let mut disagreements = Vec::new();
    for (name, lists) in cases.as_object().unwrap() {
        for (label, expected) in [("valid", true), ("invalid", false)] {
            for value in lists[label].as_array().into_iter().flatten() {
                let value = value.as_str().unwrap();
                checked += 1;
                if format::check(name, value) != Some(expected) {
                    disagreements.push(format!("{name} {value:?}: expected {label}"));
                }
            }
        }
    }
    assert!(checked > 300, "{checked} cases");
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// Every `pattern` zod emitted in `tests/fixtures/formats/zod-formats.json`
/// that `Pattern` recognizes (and matches with a hand-written check) gets
/// the browser `RegExp`'s verdict on every string of
/// `tests/fixtures/formats/cases.json`, and the recognized ones include
/// zod's email, uuid and date-time regexes.
#[wasm_bindgen_test]
fn recognized_zod_patterns_give_the_browser_regexp_verdict() {
    let schemas: Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/formats/zod-formats.json"
    ))
    .unwrap();
    let cases: Value =
        serde_json::from_str(include_str!("../../tests/fixtures/formats/cases.json")).unwrap();
    let values: Vec<&str> = cases
        .as_object()
        .unwrap()
        .values()
        .flat_map(|lists| ["valid", "invalid"].map(|label| &lists[label]))
        .flat_map(|list| list.as_array().unwrap())
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut recognized = Vec::new();
    let mut disagreements = Vec::new();
    for (constructor, schema) in schemas.as_object().unwrap() {
        let Some(source) = schema["zod"]["pattern"].as_str() else {
            continue;
        };
        let source: &'static str = Box::leak(source.to_string().into_boxed_str());
        let (shortcut, regexp) = (Pattern::new(source), Pattern::engine_only(source));
        if !shortcut.is_recognized() {
            continue;
        }
        recognized.push(constructor.as_str());
        for value in &values {
            if shortcut.matches(value) != regexp.matches(value) {
                disagreements.push(format!("{constructor} {value:?}"));
            }
        }
    }
    for constructor in ["z.email()", "z.uuid()", "z.iso.datetime()"] {
        assert!(recognized.contains(&constructor), "{recognized:?}");
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
