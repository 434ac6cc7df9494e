//! The devices console's agent surface, tested the way an application team
//! tests its own: `agent_surface::testing::TestSurface` over the console's
//! real registration code (`examples/devices/app.rs`), a fake server and a
//! manual clock — no browser, host, backend or agent. The golden file
//! `tests/golden/devices_surface.json` is what the agent sees with two rows
//! selected; `UPDATE_GOLDEN=1 cargo test --test devices_surface` rewrites
//! it (review the diff: it is what agents are shown).

#[path = "../examples/devices/app.rs"]
#[allow(dead_code)]
mod app;

use std::path::Path;

use agent_surface::testing::{assert_fails_with, TestSurface};
use agent_surface::{ErrorCode, ExecutionError, Retry};
use app::{Device, DevicesView};
use serde_json::json;

const SELECT_FIRST: &str = "Select at least one device in the table first";

fn console() -> (TestSurface, DevicesView, app::Registrations) {
    let surface = TestSurface::new(app::api::authority());
    let view = DevicesView::default();
    view.set_rows(
        [
            ("dev-1", "active"),
            ("dev-2", "active"),
            ("dev-3", "disabled"),
        ]
        .into_iter()
        .map(|(id, status)| Device {
            id: id.into(),
            name: format!("Device {id}"),
            status: status.into(),
        })
        .collect(),
    );
    let registrations = app::register(surface.registry(), &view).expect("the console registers");
    (surface, view, registrations)
}

#[test]
fn with_nothing_selected_disable_and_purge_are_unavailable_with_the_reason() {
    let (surface, _view, _registrations) = console();
    surface
        .assert_exposes("domain:devices.list")
        .assert_exposes("view:devices.table.select")
        .assert_exposes_unavailable("domain:devices.disable", SELECT_FIRST)
        .assert_exposes_unavailable("domain:devices.purge", SELECT_FIRST)
        // Registered by nobody: the manifest has it, the agent never sees it.
        .assert_not_exposed("domain:devices.rename");
    let result = surface.call("domain:devices.disable", json!({}));
    let error = assert_fails_with(&result, ErrorCode::CapabilityNotAvailable);
    assert_eq!(error.details["reason"], json!(SELECT_FIRST));
    assert!(surface.executor().calls().is_empty());
}

#[test]
fn the_agent_cannot_set_device_ids() {
    let (surface, view, _registrations) = console();
    view.select(vec!["dev-1".into()]).unwrap();
    surface
        .assert_locked("domain:devices.disable", "deviceIds")
        .assert_locked("domain:devices.purge", "deviceIds");
    assert!(surface.executor().calls().is_empty());
}

#[test]
fn selecting_through_the_view_makes_disable_available_and_the_user_approves_the_selection() {
    let (surface, view, _registrations) = console();
    let selected = surface.call(
        "view:devices.table.select",
        json!({"deviceIds": ["dev-1", "dev-2"]}),
    );
    assert_eq!(
        selected.output(),
        Some(&json!({"selected": ["dev-1", "dev-2"]}))
    );
    surface.assert_exposes("domain:devices.disable");
    let note = surface
        .snapshot()
        .procedures
        .into_iter()
        .find(|p| p.procedure_id == "domain:devices.disable")
        .and_then(|p| p.contextual_note);
    assert_eq!(
        note.as_deref(),
        Some("Applies to the 2 device(s) selected in the table")
    );

    surface
        .executor()
        .respond("devices.disable", json!({"disabled": ["dev-1", "dev-2"]}));
    let (asked, result) =
        surface.call_approved("domain:devices.disable", json!({"reason": "maintenance"}));
    // The user approved exactly what the server receives: the bound ids.
    assert_eq!(
        asked.input,
        json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"})
    );
    assert_eq!(
        result.output(),
        Some(&json!({"disabled": ["dev-1", "dev-2"]}))
    );
    let calls = surface.executor().calls_of("devices.disable");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].input, asked.input);
    assert!(calls[0].confirmed);
    assert_eq!(view.selection(), ["dev-1", "dev-2"]);
}

#[test]
fn a_declined_purge_never_reaches_the_server_and_a_server_refusal_reaches_the_agent() {
    let (surface, view, _registrations) = console();
    view.select(vec!["dev-3".into()]).unwrap();
    let (_, declined) = surface.call_rejected("domain:devices.purge", json!({}));
    let error = assert_fails_with(&declined, ErrorCode::ConfirmationInvalid);
    assert_eq!(error.details["reason"], json!("denied"));
    assert!(surface.executor().calls().is_empty());

    surface.executor().fail(
        "devices.purge",
        ExecutionError::new(
            ErrorCode::NotAuthorized,
            "The backend refused this device.",
            Retry::No,
        ),
    );
    let (_, refused) = surface.call_approved("domain:devices.purge", json!({}));
    let error = assert_fails_with(&refused, ErrorCode::NotAuthorized);
    assert_eq!(error.message, "The backend refused this device.");
}

#[test]
fn the_surface_with_two_rows_selected_matches_its_golden_file() {
    let (surface, view, _registrations) = console();
    view.select(vec!["dev-1".into(), "dev-2".into()]).unwrap();
    let written = surface.serialize_snapshot();
    // Stable across runs and registries: a second console writes the same.
    let (again, again_view, _r) = console();
    again_view
        .select(vec!["dev-1".into(), "dev-2".into()])
        .unwrap();
    assert_eq!(again.serialize_snapshot(), written);

    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/devices_surface.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &written).unwrap();
    }
    let expected = std::fs::read_to_string(&golden)
        .expect("tests/golden/devices_surface.json (UPDATE_GOLDEN=1 writes it)");
    assert_eq!(
        written, expected,
        "what the agent sees changed: review, then UPDATE_GOLDEN=1"
    );
}

#[test]
fn a_failed_assertion_shows_the_surface() {
    let (surface, _view, _registrations) = console();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        surface.assert_exposes("domain:devices.disable");
    }))
    .expect_err("disable is unavailable with nothing selected");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert_eq!(
        message.as_str(),
        "expected the agent to see `domain:devices.disable` available\n\
         it is listed unavailable: Select at least one device in the table first\n\
         the surface (test-agent):\n\
         surfaceVersion 4\n  \
         domain:devices.list  r2  available  confirmation never\n  \
         domain:devices.disable  r3  unavailable: Select at least one device in the table first  confirmation required  locked: deviceIds\n  \
         domain:devices.purge  r4  unavailable: Select at least one device in the table first  confirmation required  locked: deviceIds\n  \
         view:devices.table.select  r1  available  confirmation never\n  \
         view:devices.table.filter  r1  available  confirmation never\n"
    );
}
