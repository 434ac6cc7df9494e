//! The Leptos hooks in headless Chromium (`wasm-bindgen-test`): mounting
//! and unmounting a component registers and unregisters its procedures,
//! availability and descriptions follow the signals `when`/`describe` read
//! with no explicit notify (closures, or signals and memos through
//! `BindingSignals`/`CapabilitySignals`), `bind` is read when a call
//! executes, a procedure inside `use_agent_component` records the
//! component, the returned handle does not unregister when dropped (the
//! owner's cleanup or `unregister()` does), and the registry's reads
//! outside the effects log no untracked-read warning.
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use agent_surface::browser::sleep;
use agent_surface::page::PageSurface;
use agent_surface::{
    AgentConsumer, AgentInvocation, AgentProcedureBinding, AgentProcedureDescriptor,
    AgentProcedureExecutor, ComponentDefinition, ConfirmationLevel, ExecuteRequest, ExecutionError,
    SurfaceRegistry, SurfaceSnapshot, ViewCapability,
};
use agent_surface_leptos::{
    provide_agent_surface, use_agent_component, use_agent_procedure, AgentRegistration,
    AgentSurface, BindingSignals, CapabilitySignals,
};
use devices_api::{api, DisableSelection};
use leptos::prelude::*;
use serde_json::{json, Value};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

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

fn consumer() -> AgentConsumer {
    AgentConsumer::embedded("user-1")
}

fn snapshot(registry: &SurfaceRegistry) -> SurfaceSnapshot {
    registry.snapshot(&consumer())
}

/// Waits (at most 2 s, in 10 ms steps) until `done` holds; the effects
/// run on the browser's task queue.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("not reached within 2 s: {what}");
}

fn applies_to(count: usize) -> String {
    format!("Applies to the {count} selected device(s).")
}

/// The manifest's description of `devices.disable`: the descriptor's
/// `description` whatever the selection.
const DISABLE: &str = "Disable devices";

/// Asserts that `d` carries the manifest's description and `describe()`'s
/// text for `count` selected devices as its contextual note, and that a
/// tool list shows both (`model_description`).
fn assert_described(d: &AgentProcedureDescriptor, count: usize) {
    assert_eq!(d.description, DISABLE);
    assert_eq!(d.contextual_note, Some(applies_to(count)));
    assert_eq!(
        d.model_description(),
        format!("{DISABLE}\n\n{}", applies_to(count))
    );
}

/// The page under test: the selection-bound `devices.disable` in a
/// `devices.table` component, and `devices.list` in a panel that exists
/// while `show_panel` is true.
#[component]
fn Table(selection: RwSignal<Vec<String>>) -> impl IntoView {
    let table = use_agent_component(ComponentDefinition::new("devices.table", "main")).unwrap();
    table
        .use_procedure(
            AgentProcedureBinding::new(api::devices::disable())
                .bind(move || DisableSelection {
                    device_ids: selection.get_untracked(),
                })
                .when(move || !selection.get().is_empty())
                .unavailable_reason("Select a device first")
                .describe(move || applies_to(selection.get().len()))
                .confirmation(ConfirmationLevel::Required),
        )
        .unwrap();
    view! {
        <p>"table"</p>
        <leptos::context::Provider value=table>
            <Stats />
        </leptos::context::Provider>
    }
}

/// A descendant of the table, inside `<Provider value=table>`.
#[component]
fn Stats() -> impl IntoView {
    use_agent_procedure(AgentProcedureBinding::new(api::devices::stats())).unwrap();
    view! { <p>"stats"</p> }
}

#[component]
fn Panel() -> impl IntoView {
    use_agent_procedure(AgentProcedureBinding::new(api::devices::list())).unwrap();
    view! { <p id="panel">"panel"</p> }
}

struct Page {
    registry: SurfaceRegistry,
    executor: Arc<Recording>,
    selection: RwSignal<Vec<String>>,
    show_panel: RwSignal<bool>,
    surface: Rc<RefCell<Option<AgentSurface>>>,
}

fn mount_page() -> Page {
    let registry = SurfaceRegistry::new(api::authority());
    let executor = Arc::new(Recording::default());
    registry.set_procedure_executor(executor.clone());
    let page = PageSurface::new(registry.clone());
    let selection = RwSignal::new(Vec::<String>::new());
    let show_panel = RwSignal::new(false);
    let surface = Rc::new(RefCell::new(None));
    let slot = surface.clone();
    let root = web_sys::window()
        .unwrap()
        .document()
        .unwrap()
        .create_element("div")
        .unwrap()
        .dyn_into::<web_sys::HtmlElement>()
        .unwrap();
    web_sys::window()
        .unwrap()
        .document()
        .unwrap()
        .body()
        .unwrap()
        .append_child(&root)
        .unwrap();
    let handle = leptos::mount::mount_to(root, move || {
        *slot.borrow_mut() = Some(provide_agent_surface(page));
        view! {
            <Table selection=selection />
            <Show when=move || show_panel.get()>
                <Panel />
            </Show>
        }
    });
    // The page lives for the rest of the test.
    handle.forget();
    Page {
        registry,
        executor,
        selection,
        show_panel,
        surface,
    }
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

#[wasm_bindgen_test]
async fn mounting_and_unmounting_registers_and_unregisters() {
    let page = mount_page();
    assert!(page.surface.borrow().is_some());
    let s = snapshot(&page.registry);
    assert_eq!(
        paths(&s),
        ["domain:devices.disable", "domain:devices.stats"]
    );
    assert_eq!(s.components.len(), 1);
    // The descendant inside <Provider value=table> is in the table.
    let stats = s
        .procedures
        .iter()
        .find(|p| p.procedure_id == "domain:devices.stats")
        .unwrap();
    assert_eq!(
        stats.context.as_ref().map(|c| c.component_type.as_str()),
        Some("devices.table")
    );
    assert_eq!(s.components[0].component_type, "devices.table");

    let before = page.registry.surface_version();
    page.show_panel.set(true);
    until("the panel's devices.list is registered", || {
        paths(&snapshot(&page.registry))
            == [
                "domain:devices.disable",
                "domain:devices.list",
                "domain:devices.stats",
            ]
    })
    .await;
    assert!(page.registry.surface_version() > before);
    // Outside any use_agent_component: page-level.
    let s = snapshot(&page.registry);
    let list = s
        .procedures
        .iter()
        .find(|p| p.procedure_id == "domain:devices.list")
        .unwrap();
    assert_eq!(list.context, None);

    let before = page.registry.surface_version();
    page.show_panel.set(false);
    until("the panel's devices.list is unregistered", || {
        paths(&snapshot(&page.registry)) == ["domain:devices.disable", "domain:devices.stats"]
    })
    .await;
    assert!(page.registry.surface_version() > before);
    assert!(web_sys::window()
        .unwrap()
        .document()
        .unwrap()
        .get_element_by_id("panel")
        .is_none());
}

#[wasm_bindgen_test]
async fn availability_and_description_follow_the_signals_without_notify() {
    let page = mount_page();
    let disable = |s: &SurfaceSnapshot| {
        s.procedures
            .iter()
            .find(|p| p.procedure_id == "domain:devices.disable")
            .cloned()
            .unwrap()
    };
    let s = snapshot(&page.registry);
    let d = disable(&s);
    assert!(!d.available);
    assert_eq!(
        d.unavailable_reason.as_deref(),
        Some("Select a device first")
    );
    assert_described(&d, 0);
    // The binding is in the table component.
    assert_eq!(
        d.context.as_ref().map(|c| c.component_type.as_str()),
        Some("devices.table")
    );

    // Changes are pushed: the version moves with no snapshot taken and no
    // notify_changed anywhere.
    let changes = Rc::new(RefCell::new(0u32));
    let counted = changes.clone();
    let _subscription = page.registry.subscribe(move |_| *counted.borrow_mut() += 1);
    let before = page.registry.surface_version();
    page.selection.set(vec!["dev-1".into()]);
    until("the selection change re-announces", || {
        page.registry.surface_version() > before
    })
    .await;
    assert_eq!(*changes.borrow(), 1, "one change for one selection change");
    let d = disable(&snapshot(&page.registry));
    assert!(d.available);
    assert_described(&d, 1);

    // A description-only change (1 → 2 selected) is re-announced too.
    let before = page.registry.surface_version();
    page.selection.set(vec!["dev-1".into(), "dev-2".into()]);
    until("the description change re-announces", || {
        page.registry.surface_version() > before
    })
    .await;
    assert_described(&disable(&snapshot(&page.registry)), 2);

    // A change the agent cannot see (same count, other ids) announces
    // nothing.
    let before = page.registry.surface_version();
    page.selection.set(vec!["dev-3".into(), "dev-4".into()]);
    sleep(Duration::from_millis(50)).await;
    assert_eq!(page.registry.surface_version(), before);
}

#[wasm_bindgen_test]
async fn bind_is_read_when_the_call_executes() {
    let page = mount_page();
    page.selection.set(vec!["dev-1".into()]);
    let consumer = consumer();
    let mut call = AgentInvocation::new("call-1", "domain:devices.disable");
    call.surface_version = Some(page.registry.surface_version());
    let result = page.registry.invoke(call, &consumer).await;
    let error = result.error().expect("confirmation required").clone();
    assert_eq!(error.code.as_str(), "CONFIRMATION_REQUIRED");
    assert_eq!(
        error.details["summary"],
        r#"Disable devices — input: {"deviceIds":["dev-1"]}"#
    );
    let first = error.details["confirmationId"].as_str().unwrap();
    assert_eq!(
        page.registry.pending_confirmation(first).unwrap().input,
        json!({"deviceIds": ["dev-1"]})
    );

    // The selection changes after registration and after the first call:
    // the next call carries the new one (bind is never cached).
    page.selection.set(vec!["dev-2".into(), "dev-3".into()]);
    until("re-announced", || {
        snapshot(&page.registry)
            .procedures
            .iter()
            .any(|p| p.contextual_note == Some(applies_to(2)))
    })
    .await;
    let mut call = AgentInvocation::new("call-2", "domain:devices.disable");
    call.surface_version = Some(page.registry.surface_version());
    let result = page.registry.invoke(call, &consumer).await;
    let error = result.error().expect("confirmation required").clone();
    let id = error.details["confirmationId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        error.details["summary"],
        r#"Disable devices — input: {"deviceIds":["dev-2","dev-3"]}"#
    );
    let approved = page.registry.confirm(&id).unwrap();
    assert_eq!(approved.input, json!({"deviceIds": ["dev-2", "dev-3"]}));
    let mut call = AgentInvocation::new("call-3", "domain:devices.disable");
    call.surface_version = Some(page.registry.surface_version());
    call.confirmation_id = Some(id);
    let result = serde_json::to_value(page.registry.invoke(call, &consumer).await).unwrap();
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(result["capabilityId"], "domain:devices.disable", "{result}");
    assert_eq!(
        result["output"],
        json!({"disabled": ["dev-2", "dev-3"]}),
        "{result}"
    );
    assert_eq!(
        *page.executor.0.lock().unwrap(),
        vec![json!({"deviceIds": ["dev-2", "dev-3"]})]
    );
}

/// Mounts `view` with a provider over a registry of the devices API (its
/// executor the recorder) in a fresh element, for the rest of the test.
fn mount_view(view: impl FnOnce() -> AnyView + 'static) -> SurfaceRegistry {
    let registry = SurfaceRegistry::new(api::authority());
    registry.set_procedure_executor(Arc::new(Recording::default()));
    let page = PageSurface::new(registry.clone());
    let document = web_sys::window().unwrap().document().unwrap();
    let root = document
        .create_element("div")
        .unwrap()
        .dyn_into::<web_sys::HtmlElement>()
        .unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    leptos::mount::mount_to(root, move || {
        provide_agent_surface(page);
        view()
    })
    .forget();
    registry
}

thread_local! {
    /// The registration `Dropper` made (it drops its own copy).
    static KEPT: std::cell::Cell<Option<AgentRegistration>> = const { std::cell::Cell::new(None) };
}

/// Registers `devices.list` and drops the returned handle at once.
#[component]
fn Dropper() -> impl IntoView {
    let registration =
        use_agent_procedure(AgentProcedureBinding::new(api::devices::list())).unwrap();
    KEPT.with(|kept| kept.set(Some(registration)));
    #[allow(dropping_copy_types)]
    drop(registration);
    view! { <p>"dropper"</p> }
}

#[wasm_bindgen_test]
async fn dropping_the_returned_registration_unregisters_nothing() {
    let show = RwSignal::new(true);
    let registry = mount_view(move || {
        view! {
            <Show when=move || show.get()>
                <Dropper />
            </Show>
        }
        .into_any()
    });
    let registration = KEPT.with(std::cell::Cell::take).unwrap();
    // Still registered after the component dropped its handle.
    assert_eq!(paths(&snapshot(&registry)), ["domain:devices.list"]);
    assert!(registration.is_registered());
    let id = registration.registration_id().unwrap();
    assert_eq!(snapshot(&registry).procedures[0].registration_id, id);

    // `unregister()` ends it at once, before the component unmounts.
    let before = registry.surface_version();
    registration.unregister();
    assert!(!registration.is_registered());
    assert_eq!(registration.registration_id(), None);
    assert!(snapshot(&registry).procedures.is_empty());
    assert!(registry.surface_version() > before);

    // A new mount registers again; the owner's cleanup unregisters it.
    show.set(false);
    // Let `<Show>` unmount before it mounts again.
    sleep(Duration::from_millis(50)).await;
    show.set(true);
    until("remounted", || {
        paths(&snapshot(&registry)) == ["domain:devices.list"]
    })
    .await;
    let again = KEPT.with(std::cell::Cell::take).unwrap();
    assert!(again.is_registered());
    assert_ne!(again.registration_id(), Some(id));
    show.set(false);
    until("unmounted", || snapshot(&registry).procedures.is_empty()).await;
    assert!(!again.is_registered());
}

/// The table of [`Table`] with its state in a memo and signals.
#[component]
fn SignalTable(selection: RwSignal<Vec<String>>, reason: RwSignal<String>) -> impl IntoView {
    let any_selected = Memo::new(move |_| !selection.get().is_empty());
    let note = Signal::derive(move || applies_to(selection.get().len()));
    let table = use_agent_component(
        ComponentDefinition::new("devices.table", "main").capability(
            ViewCapability::observation(
                "readState",
                "The selection",
                json!({"type": "object"}),
                || async { Ok(json!({})) },
            )
            .when_signal(any_selected)
            .unavailable_reason_signal(reason),
        ),
    )
    .unwrap();
    table
        .use_procedure(
            AgentProcedureBinding::new(api::devices::disable())
                .bind(move || DisableSelection {
                    device_ids: selection.get_untracked(),
                })
                .when_signal(any_selected)
                .unavailable_reason_signal(reason)
                .describe_signal(note),
        )
        .unwrap();
    view! { <p>"signal table"</p> }
}

#[wasm_bindgen_test]
async fn signals_and_memos_are_tracked_like_closures() {
    let selection = RwSignal::new(Vec::<String>::new());
    let reason = RwSignal::new("Select a device first".to_string());
    let registry =
        mount_view(move || view! { <SignalTable selection=selection reason=reason /> }.into_any());
    let s = snapshot(&registry);
    let d = &s.procedures[0];
    assert!(!d.available);
    assert_eq!(
        d.unavailable_reason.as_deref(),
        Some("Select a device first")
    );
    assert_described(d, 0);
    let view = &s.components[0].observations[0];
    assert!(!view.available);
    assert_eq!(
        view.unavailable_reason.as_deref(),
        Some("Select a device first")
    );

    // A reason signal's change is a change the agent sees.
    let before = registry.surface_version();
    reason.set("Pick a row".to_string());
    until("the reason change re-announces", || {
        registry.surface_version() > before
    })
    .await;
    assert_eq!(
        snapshot(&registry).procedures[0]
            .unavailable_reason
            .as_deref(),
        Some("Pick a row")
    );

    // The memo and the derived note follow the selection.
    let before = registry.surface_version();
    selection.set(vec!["dev-1".into(), "dev-2".into()]);
    until("the selection change re-announces", || {
        registry.surface_version() > before
    })
    .await;
    let s = snapshot(&registry);
    assert!(s.procedures[0].available);
    assert_eq!(s.procedures[0].unavailable_reason, None);
    assert_described(&s.procedures[0], 2);
    assert!(s.components[0].observations[0].available);
}

/// Replaces `console.warn` with a recorder (the original still runs) and
/// returns the function counting the recorded warnings that contain
/// `text`.
fn record_warnings() -> impl Fn(&str) -> u32 {
    js_sys::Function::new_no_args(
        "if (!window.__recordedWarnings) { window.__recordedWarnings = []; const warn = console.warn; console.warn = function (...args) { window.__recordedWarnings.push(String(args[0])); return warn.apply(console, args); }; } window.__recordedWarnings.length = 0;",
    )
    .call0(&wasm_bindgen::JsValue::NULL)
    .unwrap();
    |text: &str| {
        let window = web_sys::window().unwrap();
        let recorded: js_sys::Array = js_sys::Reflect::get(&window, &"__recordedWarnings".into())
            .unwrap()
            .into();
        recorded
            .iter()
            .filter(|w| w.as_string().is_some_and(|w| w.contains(text)))
            .count() as u32
    }
}

const UNTRACKED: &str = "outside a reactive tracking context";

#[wasm_bindgen_test]
async fn registry_reads_outside_effects_log_no_untracked_warning() {
    let warnings = record_warnings();
    // The recorder sees Leptos's warning: an untracked `.get()` here.
    let probe = RwSignal::new(0);
    let _ = probe.get();
    assert_eq!(warnings(UNTRACKED), 1);

    // `Table` reads its signals with `.get()` in `when` and `describe`:
    // registration, snapshots, a call and the effects' re-runs warn of
    // nothing.
    let page = mount_page();
    assert_eq!(warnings(UNTRACKED), 1, "registration warns of nothing");
    let s = snapshot(&page.registry);
    assert!(!s
        .procedures
        .iter()
        .any(|p| p.procedure_id == "domain:devices.disable" && p.available));
    let before = page.registry.surface_version();
    page.selection.set(vec!["dev-1".into()]);
    until("re-announced", || page.registry.surface_version() > before).await;
    let mut call = AgentInvocation::new("call-w", "domain:devices.disable");
    call.surface_version = Some(page.registry.surface_version());
    let result = page.registry.invoke(call, &consumer()).await;
    assert_eq!(
        result.error().unwrap().code.as_str(),
        "CONFIRMATION_REQUIRED"
    );
    let s = snapshot(&page.registry);
    assert!(s
        .procedures
        .iter()
        .any(|p| p.procedure_id == "domain:devices.disable" && p.available));
    assert_eq!(warnings(UNTRACKED), 1, "only the probe's warning");
}
