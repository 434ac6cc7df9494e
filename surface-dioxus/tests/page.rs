//! The Dioxus hooks in headless Chromium (`wasm-bindgen-test`), on one
//! small devices page launched with Dioxus web into a fresh element: the
//! selection drives `devices.disable` with no explicit notify (the
//! announcement pushed to the agent follows the checkboxes), the agent's
//! call is held and shown by the ready-made `ConfirmationDialog`, approving
//! runs it with the effective input, and a details child mounted while
//! exactly one row is selected brings `devices.stats` (in its component)
//! and takes it away when it unmounts.
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use agent_surface::browser::sleep;
use agent_surface::host::{
    BrowserSurfaceAnnouncement, BrowserSurfaceCall, BrowserSurfaceIdentity, BrowserSurfaceOutcome,
    BrowserSurfaceResult, BrowserSurfaceSessionOptions,
};
use agent_surface::page::{AgentCallState, PageSurface};
use agent_surface::{
    AgentConsumer, AgentInvocation, AgentProcedureBinding, AgentProcedureDescriptor,
    AgentProcedureExecutor, ComponentDefinition, ConfirmationLevel, ExecuteRequest, ExecutionError,
    SurfaceRegistry, SurfaceSnapshot,
};
use agent_surface_dioxus::{
    provide_agent_surface, use_agent_component, use_agent_procedure, ConfirmationDialog,
};
use devices_api::{api, DisableSelection};
use dioxus::prelude::*;
use serde_json::{json, Value};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

const DEVICES: [&str; 3] = ["dev-1", "dev-2", "dev-3"];

/// Records the effective input of every executed call.
#[derive(Default)]
struct Recording(std::sync::Mutex<Vec<Value>>);

impl AgentProcedureExecutor for Recording {
    fn execute(
        &self,
        request: ExecuteRequest,
    ) -> agent_surface::sync::BoxFuture<'_, Result<Value, ExecutionError>> {
        self.0.lock().unwrap().push(request.input.clone());
        Box::pin(async move { Ok(json!({"disabled": request.input["deviceIds"]})) })
    }
}

fn applies_to(count: usize) -> String {
    format!("Applies to the {count} selected device(s).")
}

/// Asserts that `d` carries the manifest's description and `describe()`'s
/// text for `count` selected devices as its contextual note, and that a
/// tool list shows both (`model_description`).
fn assert_described(d: &AgentProcedureDescriptor, count: usize) {
    assert_eq!(d.description, "Disable devices");
    assert_eq!(d.contextual_note, Some(applies_to(count)));
    assert_eq!(
        d.model_description(),
        format!("Disable devices\n\n{}", applies_to(count))
    );
}

/// Asserts that the announced snapshot `s` is the registry's current view:
/// equal to a fresh snapshot but for the instant it was captured at (an
/// ISO 8601 UTC time, at most as late as the fresh one's).
fn assert_current(s: &SurfaceSnapshot, registry: &SurfaceRegistry, consumer: &AgentConsumer) {
    let mut fresh = registry.snapshot(consumer);
    assert_eq!(s.captured_at.len(), "2026-09-13T00:00:00.000Z".len());
    assert!(s.captured_at.ends_with('Z'), "{}", s.captured_at);
    assert!(s.captured_at <= fresh.captured_at, "{}", s.captured_at);
    fresh.captured_at = s.captured_at.clone();
    assert_eq!(*s, fresh);
}

/// The page: the table with its selection, `devices.disable` bound to it
/// (page-level), the details of the single selected row, the dialog.
#[component]
fn App() -> Element {
    let page = use_hook(consume_context::<PageSurface>);
    let surface = provide_agent_surface(page);
    let mut selection = use_signal(Vec::<String>::new);
    use_agent_procedure(
        AgentProcedureBinding::new(api::devices::disable())
            .bind(move || DisableSelection {
                device_ids: selection.peek().clone(),
            })
            .when(move || !selection.read().is_empty())
            .unavailable_reason("Select a device first")
            .describe(move || applies_to(selection.read().len()))
            .confirmation(ConfirmationLevel::Required),
    )
    .unwrap();
    let selected = selection.read().clone();
    // The newest agent call's state, from the activity signal.
    let activity = surface.activity();
    let latest = match activity.read().last().map(|c| &c.state) {
        None => "none",
        Some(AgentCallState::Running) => "running",
        Some(AgentCallState::AwaitingConfirmation) => "awaiting",
        Some(AgentCallState::Confirmation(_)) => "decided",
        Some(AgentCallState::Answered(_)) => "answered",
        Some(_) => "other",
    };
    rsx! {
        p { id: "activity", "{latest}" }
        table { id: "devices",
            for id in DEVICES {
                tr { key: "{id}",
                    td {
                        input {
                            r#type: "checkbox",
                            id: "select-{id}",
                            checked: selected.iter().any(|s| s == id),
                            onchange: move |_| {
                                let mut selection = selection.write();
                                match selection.iter().position(|s| s == id) {
                                    Some(at) => {
                                        selection.remove(at);
                                    }
                                    None => selection.push(id.to_string()),
                                }
                            },
                        }
                    }
                    td { "{id}" }
                }
            }
        }
        if selected.len() == 1 {
            Details { device_id: selected[0].clone() }
        }
        ConfirmationDialog { class: "card", approve_class: "btn btn-primary" }
    }
}

/// The single selected device: a `devices.details` component whose
/// descendant registers `devices.stats` (in the component, by context).
#[component]
fn Details(device_id: String) -> Element {
    use_agent_component(ComponentDefinition::new(
        "devices.details",
        device_id.clone(),
    ))
    .unwrap();
    rsx! {
        section { id: "details",
            h2 { "{device_id}" }
            Stats {}
        }
    }
}

#[component]
fn Stats() -> Element {
    use_agent_procedure(AgentProcedureBinding::new(api::devices::stats())).unwrap();
    rsx! { p { id: "stats", "stats" } }
}

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

fn element(id: &str) -> Option<web_sys::HtmlElement> {
    document()
        .get_element_by_id(id)
        .map(|e| e.dyn_into::<web_sys::HtmlElement>().unwrap())
}

/// A real DOM click on `#id` (a checkbox toggles and fires `change`).
fn click(id: &str) {
    element(id)
        .unwrap_or_else(|| panic!("no #{id} in the page"))
        .click();
}

fn text(id: &str) -> String {
    element(id).unwrap().text_content().unwrap_or_default()
}

fn checked(id: &str) -> bool {
    element(id)
        .unwrap()
        .dyn_into::<web_sys::HtmlInputElement>()
        .unwrap()
        .checked()
}

/// Waits (at most 2 s, in 10 ms steps) until `done` holds: Dioxus renders
/// and runs effects on the browser's task queue.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("not reached within 2 s: {what}");
}

fn paths(snapshot: &SurfaceSnapshot) -> Vec<&str> {
    let mut paths: Vec<&str> = snapshot
        .procedures
        .iter()
        .map(|p| p.procedure_id.as_str())
        .collect();
    paths.sort_unstable();
    paths
}

fn procedure<'a>(snapshot: &'a SurfaceSnapshot, id: &str) -> &'a AgentProcedureDescriptor {
    snapshot
        .procedures
        .iter()
        .find(|p| p.procedure_id == id)
        .unwrap_or_else(|| panic!("{id} is not in the snapshot"))
}

#[wasm_bindgen_test]
async fn the_devices_page_follows_selection_confirmation_and_mounting() {
    // The registry over the generated authority, executed by a recorder,
    // and the page surface over it with a session attached: the test is
    // the agent host, calling the session directly.
    let registry = SurfaceRegistry::new(api::authority());
    let executor = Arc::new(Recording::default());
    registry.set_procedure_executor(executor.clone());
    let page = PageSurface::new(registry.clone());
    let consumer = AgentConsumer::embedded("user-1");
    let identity = BrowserSurfaceIdentity::new(
        devices_api::APP_ID,
        devices_api::build_id(),
        "session-1",
        "tab-1",
    );
    let session = page
        .attach(BrowserSurfaceSessionOptions::new(
            registry.clone(),
            identity.clone(),
            consumer.clone(),
        ))
        .unwrap();
    let first = session.connect("conn-1").unwrap();
    assert!(first.snapshot.procedures.is_empty());
    // Every announcement the session pushes to the agent.
    let pushed: Rc<RefCell<Vec<BrowserSurfaceAnnouncement>>> = Rc::default();
    let sink = pushed.clone();
    let _pushes = session
        .subscribe(move |a| sink.borrow_mut().push(a.clone()))
        .unwrap();
    let last = || pushed.borrow().last().cloned().expect("an announcement");

    // Launch the page into a fresh element.
    let root = document().create_element("div").unwrap();
    document().body().unwrap().append_child(&root).unwrap();
    dioxus::web::launch::launch_virtual_dom(
        VirtualDom::new(App).with_root_context(page.clone()),
        dioxus::web::Config::new().rootelement(root),
    );
    until("the table is rendered", || {
        element("select-dev-1").is_some()
    })
    .await;

    // Mounted: disable is registered (page-level), not available yet.
    let s = last().snapshot;
    assert_current(&s, &registry, &consumer);
    assert_eq!(paths(&s), ["domain:devices.disable"]);
    assert!(s.components.is_empty());
    let disable = procedure(&s, "domain:devices.disable");
    assert!(!disable.available);
    assert_eq!(
        disable.unavailable_reason.as_deref(),
        Some("Select a device first")
    );
    assert_described(disable, 0);
    assert_eq!(disable.context, None);

    // Two clicks in one task: one render with two rows selected (the
    // details never mount), and one announcement that only the tracked
    // `when`/`describe` can cause — no notify anywhere.
    let before = pushed.borrow().len();
    let version = registry.surface_version();
    click("select-dev-1");
    click("select-dev-2");
    until("the selection change is announced", || {
        pushed.borrow().len() > before
    })
    .await;
    sleep(Duration::from_millis(50)).await;
    assert_eq!(pushed.borrow().len(), before + 1, "one announcement");
    assert!(checked("select-dev-1") && checked("select-dev-2") && !checked("select-dev-3"));
    let s = last().snapshot;
    assert!(s.surface_version > version);
    assert_current(&s, &registry, &consumer);
    assert_eq!(paths(&s), ["domain:devices.disable"]);
    let disable = procedure(&s, "domain:devices.disable");
    assert!(disable.available);
    assert_eq!(disable.unavailable_reason, None);
    assert_described(disable, 2);
    assert!(element("details").is_none());

    // The agent calls disable: the session holds it for the user.
    let mut invocation = AgentInvocation::new("call-1", "domain:devices.disable");
    invocation.registration_id = Some(disable.registration_id.clone());
    invocation.surface_version = Some(s.surface_version);
    invocation.input = json!({});
    let call = BrowserSurfaceCall::new(identity.clone(), "conn-1", "run-1", "tc-1", invocation);
    assert_eq!(text("activity"), "none");
    // What `AgentSurface::connect`'s socket does for each call and answer.
    page.record_call(&call);
    let answer: Rc<RefCell<Option<BrowserSurfaceResult>>> = Rc::default();
    let slot = answer.clone();
    let calling = session.clone();
    let recording = page.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let result = calling.invoke(call).await;
        recording.record_answer(&result);
        *slot.borrow_mut() = Some(result);
    });
    until("the dialog shows the held call", || {
        element("agent-confirmation-input").is_some()
    })
    .await;
    assert!(answer.borrow().is_none(), "held, not answered");
    until("the activity shows the call waiting", || {
        text("activity") == "awaiting"
    })
    .await;
    assert_eq!(page.held_confirmations().len(), 1);
    assert_eq!(
        element("agent-confirmation")
            .unwrap()
            .query_selector(".agent-confirmation-title")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap(),
        "The agent wants to run domain:devices.disable"
    );
    let shown = element("agent-confirmation-input")
        .unwrap()
        .text_content()
        .unwrap();
    assert_eq!(
        shown,
        "{\n  \"deviceIds\": [\n    \"dev-1\",\n    \"dev-2\"\n  ]\n}"
    );
    // The page's classes after the dialog's own.
    assert_eq!(
        element("agent-confirmation").unwrap().class_name(),
        "agent-confirmation card"
    );
    assert_eq!(
        element("agent-approve").unwrap().class_name(),
        "agent-confirmation-approve btn btn-primary"
    );
    assert_eq!(
        element("agent-reject").unwrap().class_name(),
        "agent-confirmation-reject"
    );
    // The manifest's description: what the approved call does.
    assert_eq!(
        element("agent-confirmation")
            .unwrap()
            .query_selector(".agent-confirmation-description")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap(),
        "Disable devices"
    );
    let held = &page.held_confirmations()[0];
    assert_eq!(held.input, json!({"deviceIds": ["dev-1", "dev-2"]}));
    assert_eq!(
        held.summary,
        r#"Disable devices — input: {"deviceIds":["dev-1","dev-2"]}"#
    );
    assert!(executor.0.lock().unwrap().is_empty(), "nothing ran yet");

    // The user approves in the dialog: the call runs with that input.
    click("agent-approve");
    until("the call is answered", || answer.borrow().is_some()).await;
    let result = answer.borrow_mut().take().unwrap();
    assert_eq!(result.invocation_id, "call-1");
    assert_eq!(result.identity, identity, "the session's own identity");
    let BrowserSurfaceOutcome::Invocation(outcome) = &result.result else {
        panic!("refused: {:?}", result.result);
    };
    let outcome = serde_json::to_value(outcome).unwrap();
    assert_eq!(
        outcome,
        json!({
            "status": "ok",
            "invocationId": "call-1",
            "capabilityId": "domain:devices.disable",
            "output": {"disabled": ["dev-1", "dev-2"]},
            "surfaceVersion": s.surface_version.to_string(),
        })
    );
    assert_eq!(
        *executor.0.lock().unwrap(),
        vec![json!({"deviceIds": ["dev-1", "dev-2"]})]
    );
    until("the dialog closes", || {
        element("agent-confirmation").is_none()
    })
    .await;
    assert!(page.held_confirmations().is_empty());

    // Exactly one row selected: the details mount, and devices.stats
    // comes with them, in the details component.
    let version = registry.surface_version();
    click("select-dev-2");
    until("devices.stats is announced", || {
        paths(&last().snapshot) == ["domain:devices.disable", "domain:devices.stats"]
    })
    .await;
    assert!(element("details").is_some() && element("stats").is_some());
    let s = last().snapshot;
    assert!(s.surface_version > version);
    assert_current(&s, &registry, &consumer);
    assert_eq!(s.components.len(), 1);
    assert_eq!(s.components[0].component_type, "devices.details");
    assert_eq!(s.components[0].instance_id, "dev-1");
    let stats = procedure(&s, "domain:devices.stats");
    let context = stats.context.as_ref().expect("in the details component");
    assert_eq!(
        (
            context.component_type.as_str(),
            context.instance_id.as_str()
        ),
        ("devices.details", "dev-1")
    );
    assert_eq!(procedure(&s, "domain:devices.disable").context, None);
    assert_described(procedure(&s, "domain:devices.disable"), 1);

    // No row selected: the details unmount and take devices.stats away.
    let version = registry.surface_version();
    click("select-dev-1");
    until("devices.stats is withdrawn", || {
        paths(&last().snapshot) == ["domain:devices.disable"]
    })
    .await;
    sleep(Duration::from_millis(50)).await;
    assert!(element("details").is_none() && element("stats").is_none());
    let s = last().snapshot;
    assert!(s.surface_version > version);
    assert_current(&s, &registry, &consumer);
    assert!(s.components.is_empty());
    let disable = procedure(&s, "domain:devices.disable");
    assert!(!disable.available);
    assert_described(disable, 0);
}

/// A page whose state changes during its first render, after the
/// registration and before the tracking effect's first run.
#[component]
fn Early() -> Element {
    let page = use_hook(consume_context::<PageSurface>);
    provide_agent_surface(page);
    let mut ready = use_signal(|| false);
    use_agent_procedure(
        AgentProcedureBinding::new(api::devices::list()).when(move || *ready.read()),
    )
    .unwrap();
    use_hook(move || ready.set(true));
    rsx! { p { id: "early", "early" } }
}

#[wasm_bindgen_test]
async fn a_change_before_the_first_effect_run_is_announced() {
    let registry = SurfaceRegistry::new(api::authority());
    let page = PageSurface::new(registry.clone());
    let consumer = AgentConsumer::embedded("user-1");
    let session = page
        .attach(BrowserSurfaceSessionOptions::new(
            registry.clone(),
            BrowserSurfaceIdentity::new(
                devices_api::APP_ID,
                devices_api::build_id(),
                "session-2",
                "tab-2",
            ),
            consumer.clone(),
        ))
        .unwrap();
    session.connect("conn-2").unwrap();
    let pushed: Rc<RefCell<Vec<BrowserSurfaceAnnouncement>>> = Rc::default();
    let sink = pushed.clone();
    let _pushes = session
        .subscribe(move |a| sink.borrow_mut().push(a.clone()))
        .unwrap();
    let root = document().create_element("div").unwrap();
    document().body().unwrap().append_child(&root).unwrap();
    dioxus::web::launch::launch_virtual_dom(
        VirtualDom::new(Early).with_root_context(page.clone()),
        dioxus::web::Config::new().rootelement(root),
    );
    until("the page is rendered", || element("early").is_some()).await;
    // Registered unavailable; the effect's first run (the observation at
    // registration as its baseline) announces the change.
    until("the change is announced", || {
        pushed
            .borrow()
            .last()
            .is_some_and(|a| procedure(&a.snapshot, "domain:devices.list").available)
    })
    .await;
    let pushed = pushed.borrow();
    assert_eq!(pushed.len(), 2, "registration, then the change");
    assert!(!procedure(&pushed[0].snapshot, "domain:devices.list").available);
    assert_current(&pushed[1].snapshot, &registry, &consumer);
}
