//! The AG-UI client in a real browser (headless Chromium via
//! `wasm-bindgen-test-runner`): `agui::FetchAgUiTransport` against
//! `tests/browser-fixture`'s AG-UI routes — a turn replaying the recorded
//! `@ag-ui/mastra` runs with the user approving in the page, cancellation
//! from an `AbortSignal` aborting the `fetch`, and the run timeout. Built
//! and run like `browser_transports.rs` (`SURFACE_BROWSER_FIXTURE`, set by
//! `scripts/test`), with `--features browser,ag-ui`.
#![cfg(target_arch = "wasm32")]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::{authority, procedure, DisableBinding, RecordingExecutor};
use futures_util::future::join;
use serde_json::{json, Value};
use surface_runtime::agui::{
    cancellation_from_abort_signal, AgUiAgent, AgUiCallOutcome, AgUiError, AgUiLimits, AgUiOptions,
    FetchAgUiTransport,
};
use surface_runtime::bridge::{CallOptions, ClientLimits, OrpcClient};
use surface_runtime::browser::{sleep, FetchOrpcClient};
use surface_runtime::page::PageSurface;
use surface_runtime::registry::RegistrationHandle;
use surface_runtime::{AgentProcedureBinding, ConfirmationLevel, SurfaceRegistry};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

fn fixture() -> &'static str {
    option_env!("SURFACE_BROWSER_FIXTURE").unwrap_or_else(|| {
        panic!(
            "SURFACE_BROWSER_FIXTURE is not set at build time: start `cargo run -p browser-fixture` \
             and build with SURFACE_BROWSER_FIXTURE=http://127.0.0.1:PORT (scripts/test does both)"
        )
    })
}

/// `devices.disable` bound to the selection, confirmation required.
struct Page {
    page: PageSurface,
    executor: Arc<RecordingExecutor>,
    _disable: RegistrationHandle,
}

fn page() -> Page {
    let registry = SurfaceRegistry::new(authority());
    let executor = Arc::new(RecordingExecutor::default());
    registry.set_procedure_executor(executor.clone());
    let selection = Rc::new(RefCell::new(vec!["dev-1".to_string(), "dev-2".to_string()]));
    let bound = selection.clone();
    let disable = registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(registry.authority(), "devices.disable"))
                .bind(move || DisableBinding {
                    device_ids: bound.borrow().clone(),
                })
                .confirmation(ConfirmationLevel::Required),
        )
        .unwrap();
    Page {
        page: PageSurface::new(registry),
        executor,
        _disable: disable,
    }
}

/// What the fixture saw of an `agui/stall` request.
async fn stall_log(id: &str) -> Value {
    FetchOrpcClient::with_limits(
        format!("{}/log?id={id}&x=", fixture()),
        ClientLimits::default(),
    )
    .call("end", None, CallOptions::default())
    .await
    .unwrap()
}

/// What the fixture saw of an `agui/stall` request, once it saw the
/// client go away (or after 2 s).
async fn stall_log_once_dropped(id: &str) -> Value {
    let mut seen = Value::Null;
    for _ in 0..100 {
        seen = stall_log(id).await;
        if seen["dropped"] == json!(true) {
            break;
        }
        sleep(Duration::from_millis(20)).await;
    }
    seen
}

#[wasm_bindgen_test]
async fn a_turn_over_fetch_runs_the_call_after_the_user_approves_in_the_page() {
    let page = page();
    let transport = FetchAgUiTransport::new(format!("{}/agui/replay", fixture()));
    let agent = AgUiAgent::new(&page.page, transport, AgUiOptions::default());
    let surface = page.page.clone();
    let user = async move {
        for _ in 0..500 {
            if let Some(held) = surface.held_confirmations().into_iter().next() {
                assert_eq!(held.input["deviceIds"], json!(["dev-1", "dev-2"]));
                surface.approve(&held.confirmation_id).unwrap();
                return;
            }
            sleep(Duration::from_millis(10)).await;
        }
        panic!("no confirmation was held within 5 s");
    };
    let (turn, ()) = join(agent.send("disable the selected devices"), user).await;
    let turn = turn.expect("the turn completes");
    assert_eq!(turn.runs, 2);
    assert_eq!(turn.calls[0].tool_name, "devices__disable");
    assert!(
        matches!(&turn.calls[0].outcome, AgUiCallOutcome::Ran(r) if r.error().is_none()),
        "{:?}",
        turn.calls[0].outcome
    );
    assert_eq!(
        turn.text,
        r#"The tool answered devices_disable: {"disabled":["dev-1","dev-2"]}"#
    );
    let calls = page.executor.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(agent.messages().len(), 4);
}

#[wasm_bindgen_test]
async fn an_abort_signal_cancels_the_turn_and_aborts_the_fetch() {
    let page = page();
    let id = format!("agui-abort-{}", js_sys::Math::random());
    let url = format!("{}/agui/stall?id={id}", fixture());
    let agent = AgUiAgent::new(
        &page.page,
        FetchAgUiTransport::new(url),
        AgUiOptions::default(),
    );
    let controller = web_sys::AbortController::new().unwrap();
    let (cancellation, _guard) = cancellation_from_abort_signal(&controller.signal());
    let abort = async {
        sleep(Duration::from_millis(300)).await;
        controller.abort();
    };
    let (turn, ()) = join(agent.send_with("disable", cancellation), abort).await;
    assert_eq!(turn.unwrap_err(), AgUiError::Cancelled);
    // The server saw the request go away.
    assert_eq!(
        stall_log_once_dropped(&id).await,
        json!({"started": true, "dropped": true})
    );
    assert!(page.executor.calls().is_empty());
    assert_eq!(agent.messages().len(), 1);
}

#[wasm_bindgen_test]
async fn a_signal_already_aborted_cancels_before_anything_is_sent() {
    let controller = web_sys::AbortController::new().unwrap();
    controller.abort();
    let (cancellation, _guard) = cancellation_from_abort_signal(&controller.signal());
    assert!(cancellation.is_cancelled());
}

#[wasm_bindgen_test]
async fn an_agent_that_stops_sending_times_out_and_the_fetch_is_aborted() {
    let page = page();
    let id = format!("agui-timeout-{}", js_sys::Math::random());
    let url = format!("{}/agui/stall?id={id}", fixture());
    let limits = AgUiLimits::default().with_run_timeout(Duration::from_millis(400));
    let options = AgUiOptions::default().with_limits(limits);
    let agent = AgUiAgent::new(&page.page, FetchAgUiTransport::new(url), options);
    let error = agent.send("disable").await.unwrap_err();
    assert_eq!(
        error,
        AgUiError::Timeout {
            what: "run",
            timeout: Duration::from_millis(400)
        }
    );
    assert_eq!(
        stall_log_once_dropped(&id).await,
        json!({"started": true, "dropped": true})
    );
}
