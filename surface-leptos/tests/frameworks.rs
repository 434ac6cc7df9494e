//! The Leptos examples of `docs/frameworks.md`, compiled and run here (in
//! headless Chromium, `wasm-bindgen-test`): the page (`docs:begin page`)
//! and the test of its surface (`docs:begin testing`) are quoted verbatim
//! by the doc, and `frameworks_md_quotes_this_file` fails when the two
//! drift apart. `agent.manifest.json` and `view-inputs.json` in this
//! crate's root are links to `docs/example.manifest.json` and
//! `docs/example.view-inputs.json`, the files the docs' examples name.
#![cfg(target_arch = "wasm32")]

// docs:begin page
use std::sync::Arc;

use agent_surface_leptos::prelude::*;
use leptos::prelude::*;

/// The typed procedure references and the authority, generated from the
/// backend's agent manifest.
mod api {
    agent_surface::manifest!("agent.manifest.json");
}

/// The input types of the table's view capabilities.
mod view {
    agent_surface::view_inputs!("view-inputs.json");
}

/// The table's selection, bound into `devices.disable`: `device_ids` is
/// locked (the agent never sees or sets it), `reason` stays agent-settable.
#[agent_procedure(api, "devices.disable", overridable(reason))]
struct DisableSelection {
    device_ids: Vec<String>,
    reason: Option<String>,
}

#[component]
fn App() -> impl IntoView {
    // Once, near the root: the registry over the generated authority and
    // the oRPC bridge (procedure calls go to the backend over fetch). Keep
    // the returned `AgentSurface` (it is `Copy`) to connect later, once
    // the host has said who the page is:
    // surface.connect(surface.session_options(identity, consumer),
    //                 SessionSocketOptions::new(same_origin_socket_url("/agent/ws")),
    //                 |_event| {})?;
    let _surface = provide_agent_surface(PageSurface::orpc(
        api::authority(),
        Arc::new(FetchOrpcClient::new("/rpc")),
    ));
    view! {
        // A component that returns the hooks' `RegistrationError` with `?`
        // renders this fallback instead; the rest of the page stays.
        <ErrorBoundary fallback=|errors| view! {
            <p class="agent-error">
                {move || errors.get().into_iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>().join("; ")}
            </p>
        }>
            <DevicesTable />
        </ErrorBoundary>
        <ConfirmationDialog class="card" approve_class="btn btn-primary" reject_class="btn" />
    }
}

#[component]
fn DevicesTable() -> Result<impl IntoView, RegistrationError> {
    let selection = RwSignal::new(Vec::<String>::new());
    let any_selected = Memo::new(move |_| !selection.get().is_empty());
    // Registered while this component is mounted; the returned
    // `AgentComponent` is `Copy`, and dropping it unregisters nothing.
    let table = use_agent_component(
        ComponentDefinition::new("devices.table", "main")
            .description("The devices table")
            // An observation: read-only, no input, its output described.
            .capability(ViewCapability::observation(
                "readState",
                "The selected rows",
                json!({"type": "object", "properties": {"selectedIds": {"type": "array", "items": {"type": "string"}}}}),
                move || {
                    let ids = selection.get_untracked();
                    async move { Ok(json!({ "selectedIds": ids })) }
                },
            ))
            // An action: its input type from `view_inputs!`, its metadata
            // what it really does (defaults: local-state, not idempotent,
            // reversible, no confirmation).
            .capability(
                ViewCapability::new::<view::SelectRows, _, _>(
                    "select",
                    "Select rows",
                    move |input: view::SelectRows| {
                        selection.set(input.device_ids.clone());
                        async move { Ok(json!({ "selected": input.device_ids })) }
                    },
                )
                .idempotent(true)
                .reversible(true),
            ),
    )?;
    table.use_procedure(
        AgentProcedureBinding::new(api::devices::disable())
            // Read when a call executes: untracked.
            .bind(move || DisableSelection {
                device_ids: selection.get_untracked(),
                reason: None,
            })
            // A signal or a memo (`BindingSignals`), or a closure
            // (`.when(move || !selection.get().is_empty())`): tracked.
            .when_signal(any_selected)
            .unavailable_reason("Select a device first")
            // The contextual note, beside the manifest's description.
            .describe(move || format!("Applies to {} device(s).", selection.get().len()))
            .confirmation(ConfirmationLevel::Required),
    )?;
    Ok(view! {
        <ul id="devices">
            <For each=move || selection.get() key=|id| id.clone() let:id>
                <li>{id}</li>
            </For>
        </ul>
    })
}
// docs:end page

// docs:begin restyle
/// The page's own look for a held call: its markup, classes and words.
#[component]
fn AgentApproval() -> impl IntoView {
    view! {
        <ConfirmationDialog
            class="modal"
            render=|call: HeldCall| {
                let (approve, reject) = (call.clone(), call.clone());
                view! {
                    <p class="modal-title">{call.summary().to_string()}</p>
                    <button class="btn" on:click=move |_| drop(reject.reject())>"Not now"</button>
                    <button class="btn btn-danger" on:click=move |_| drop(approve.approve())>
                        "Disable"
                    </button>
                }
            }
        />
    }
}
// docs:end restyle

// docs:begin testing
use std::time::Duration;

use agent_surface::browser::sleep;
use agent_surface::Cancellation;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// The table's surface, tested with no agent host and no backend: the
/// test mounts the component, reads the registry's snapshot (what an
/// agent would be shown) and calls capabilities as an agent in the page.
#[wasm_bindgen_test]
async fn the_table_offers_disable_once_a_row_is_selected() {
    // A page surface with no bridge: nothing here reaches a backend.
    let page = PageSurface::new(SurfaceRegistry::new(api::authority()));
    let registry = page.registry().clone();
    let in_page = page.clone();
    // `mount_to` starts Leptos's executor (wasm-bindgen-futures), which
    // the hooks' effects run on.
    let document = leptos::prelude::document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    let root = wasm_bindgen::JsCast::unchecked_into::<web_sys::HtmlElement>(root);
    let mounted = leptos::mount::mount_to(root, move || {
        provide_agent_surface(in_page);
        view! { <DevicesTable /> }
    });

    // What an agent is shown now: closures are evaluated live.
    let agent = AgentConsumer::embedded("user-1");
    let snapshot = registry.snapshot(&agent);
    let disable = &snapshot.procedures[0];
    assert_eq!(disable.procedure_id, "domain:devices.disable");
    assert!(!disable.available);
    assert_eq!(
        disable.unavailable_reason.as_deref(),
        Some("Select a device first")
    );
    assert_eq!(snapshot.components[0].component_type, "devices.table");

    // The agent selects a row through the view capability.
    let mut select = AgentInvocation::new("call-1", "view:devices.table.select");
    select.input = json!({ "deviceIds": ["dev-1"] });
    let result = registry.invoke(select, &agent).await;
    assert!(result.error().is_none(), "{result:?}");
    let snapshot = registry.snapshot(&agent);
    let disable = &snapshot.procedures[0];
    assert!(disable.available);
    assert_eq!(
        disable.contextual_note.as_deref(),
        Some("Applies to 1 device(s).")
    );

    // Disabling needs the user's confirmation: an in-page call waits in
    // `held_confirmations` (what `<ConfirmationDialog/>` shows) until the
    // user decides.
    let mut call = AgentInvocation::new("call-2", "domain:devices.disable");
    call.surface_version = Some(snapshot.surface_version);
    let answer = page.invoke_in_page(call, agent.clone(), Cancellation::new());
    // The user's side, on Leptos's executor while the call waits.
    let deciding = page.clone();
    leptos::task::spawn_local(async move {
        while deciding.held_confirmations().is_empty() {
            sleep(Duration::from_millis(10)).await;
        }
        let held = &deciding.held_confirmations()[0];
        assert_eq!(held.input, json!({ "deviceIds": ["dev-1"] }));
        deciding.reject(&held.confirmation_id).unwrap();
    });
    let result = answer.await;
    assert_eq!(
        result.error().unwrap().code.as_str(),
        "CONFIRMATION_INVALID"
    );

    // Unmounting unregisters what the component registered when Leptos
    // disposes of its owner: at once, or once a task that still holds the
    // owner (the one spawned above) is dropped, a turn of the event loop
    // later.
    drop(mounted);
    for _ in 0..100 {
        if registry.snapshot(&agent).procedures.is_empty() {
            break;
        }
        sleep(Duration::from_millis(10)).await;
    }
    assert!(registry.snapshot(&agent).procedures.is_empty());
    assert!(registry.snapshot(&agent).components.is_empty());
}
// docs:end testing

/// `App` mounts: its table registers (the `FetchOrpcClient` is never
/// called: nothing executes), and no error reaches the boundary.
#[wasm_bindgen_test]
async fn the_frameworks_md_page_mounts_and_registers() {
    let document = leptos::prelude::document();
    let root = document.create_element("div").unwrap();
    root.set_id("frameworks-app");
    document.body().unwrap().append_child(&root).unwrap();
    let root = wasm_bindgen::JsCast::unchecked_into::<web_sys::HtmlElement>(root);
    let surface = std::rc::Rc::new(std::cell::RefCell::new(None::<AgentSurface>));
    let slot = surface.clone();
    let mounted = leptos::mount::mount_to(root.clone(), move || {
        let app = view! { <App /> };
        // `App` provided the surface on the mount's owner (a component has
        // no owner of its own).
        *slot.borrow_mut() = try_use_agent_surface();
        app
    });
    let registry = surface
        .borrow()
        .expect("App provides the surface")
        .registry();
    let snapshot = registry.snapshot(&AgentConsumer::embedded("user-1"));
    let paths: Vec<_> = snapshot
        .procedures
        .iter()
        .map(|p| p.procedure_id.as_str())
        .collect();
    assert_eq!(paths, ["domain:devices.disable"]);
    assert_eq!(snapshot.components[0].component_type, "devices.table");
    assert!(root.query_selector(".agent-error").unwrap().is_none());
    assert!(root.query_selector("#devices").unwrap().is_some());
    drop(mounted);
}

/// Every quoted region of this file appears verbatim in
/// `docs/frameworks.md`, as a `rust,ignore` block.
#[wasm_bindgen_test]
fn frameworks_md_quotes_this_file() {
    let doc = include_str!("../../docs/frameworks.md");
    let source = include_str!("frameworks.rs");
    for name in ["page", "restyle", "testing"] {
        let begin = format!("// docs:begin {name}\n");
        let end = format!("// docs:end {name}\n");
        let start = source.find(&begin).unwrap() + begin.len();
        let stop = source.find(&end).unwrap();
        let block = format!("```rust,ignore\n{}```\n", &source[start..stop]);
        assert!(
            doc.contains(&block),
            "docs/frameworks.md does not quote region `{name}` of surface-leptos/tests/frameworks.rs"
        );
    }
}

/// Mounts `view` with a provider over `page` in a fresh element, for the
/// rest of the test.
fn mount_with(page: PageSurface, view: impl FnOnce() -> AnyView + 'static) -> web_sys::HtmlElement {
    let document = leptos::prelude::document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    let root = wasm_bindgen::JsCast::unchecked_into::<web_sys::HtmlElement>(root);
    leptos::mount::mount_to(root.clone(), move || {
        provide_agent_surface(page);
        view()
    })
    .forget();
    root
}

/// Selects `dev-1` through the table's view capability and starts an
/// in-page call of `devices.disable`, which waits for the user; returns
/// its answer, set once decided.
async fn hold_disable(
    page: &PageSurface,
) -> std::rc::Rc<std::cell::RefCell<Option<AgentInvocationResult>>> {
    let agent = AgentConsumer::embedded("user-1");
    let mut select = AgentInvocation::new("select-1", "view:devices.table.select");
    select.input = json!({ "deviceIds": ["dev-1"] });
    let selected = page.registry().invoke(select, &agent).await;
    assert!(selected.error().is_none(), "{selected:?}");
    let mut call = AgentInvocation::new("disable-1", "domain:devices.disable");
    call.surface_version = Some(page.registry().surface_version());
    let answer = page.invoke_in_page(call, agent, Cancellation::new());
    let slot = std::rc::Rc::new(std::cell::RefCell::new(None));
    let set = slot.clone();
    leptos::task::spawn_local(async move {
        *set.borrow_mut() = Some(answer.await);
    });
    slot
}

/// Waits (at most 2 s, in 10 ms steps) for the first element matching
/// `selector` under `root`.
async fn element(root: &web_sys::HtmlElement, selector: &str) -> web_sys::HtmlElement {
    for _ in 0..200 {
        if let Some(found) = root.query_selector(selector).unwrap() {
            return wasm_bindgen::JsCast::unchecked_into(found);
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("no `{selector}` within 2 s");
}

/// Waits (at most 2 s) until `slot` holds the call's answer.
async fn answered(
    slot: &std::rc::Rc<std::cell::RefCell<Option<AgentInvocationResult>>>,
) -> AgentInvocationResult {
    for _ in 0..200 {
        if let Some(result) = slot.borrow().clone() {
            return result;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("the held call was not answered within 2 s");
}

/// `class`, `approve_class` and `reject_class` add the page's classes to
/// the default dialog's own, which keeps its ids and body; its Reject
/// answers the call `CONFIRMATION_INVALID` and the dialog goes.
#[wasm_bindgen_test]
async fn confirmation_dialog_class_props_add_the_pages_classes() {
    let page = PageSurface::new(SurfaceRegistry::new(api::authority()));
    let root = mount_with(page.clone(), || {
        view! {
            <DevicesTable />
            <ConfirmationDialog class="card" approve_class="btn btn-primary" reject_class="btn" />
        }
        .into_any()
    });
    assert!(root
        .query_selector("#agent-confirmation")
        .unwrap()
        .is_none());
    let answer = hold_disable(&page).await;
    let dialog = element(&root, "#agent-confirmation").await;
    assert_eq!(dialog.class_name(), "agent-confirmation card");
    assert_eq!(dialog.get_attribute("role").as_deref(), Some("dialog"));
    let approve = element(&root, "#agent-approve").await;
    assert_eq!(
        approve.class_name(),
        "agent-confirmation-approve btn btn-primary"
    );
    let reject = element(&root, "#agent-reject").await;
    assert_eq!(reject.class_name(), "agent-confirmation-reject btn");
    assert_eq!(
        element(&root, "#agent-confirmation-input")
            .await
            .text_content()
            .as_deref(),
        Some("{\n  \"deviceIds\": [\n    \"dev-1\"\n  ]\n}")
    );
    reject.click();
    let result = answered(&answer).await;
    assert_eq!(
        result.error().unwrap().code.as_str(),
        "CONFIRMATION_INVALID"
    );
    assert!(page.held_confirmations().is_empty());
    for _ in 0..200 {
        if root
            .query_selector("#agent-confirmation")
            .unwrap()
            .is_none()
        {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("the dialog stayed after the call was rejected");
}

/// `render` replaces the dialog's body with the page's view of the held
/// call (the `<aside>` with its id, role and classes stays), and its
/// buttons decide the call.
#[wasm_bindgen_test]
async fn confirmation_dialog_render_prop_draws_the_pages_body() {
    let page = PageSurface::new(SurfaceRegistry::new(api::authority()));
    let root = mount_with(page.clone(), || {
        view! {
            <DevicesTable />
            <AgentApproval />
        }
        .into_any()
    });
    let answer = hold_disable(&page).await;
    let title = element(&root, ".modal-title").await;
    assert_eq!(
        title.text_content().as_deref(),
        Some(r#"Disable devices — input: {"deviceIds":["dev-1"]}"#)
    );
    let dialog = element(&root, "#agent-confirmation").await;
    assert_eq!(dialog.class_name(), "agent-confirmation modal");
    // The default body is not drawn.
    assert!(root.query_selector("#agent-approve").unwrap().is_none());
    assert!(root
        .query_selector("#agent-confirmation-input")
        .unwrap()
        .is_none());
    let buttons = dialog.query_selector_all("button").unwrap();
    assert_eq!(buttons.length(), 2);
    let not_now: web_sys::HtmlElement =
        wasm_bindgen::JsCast::unchecked_into(buttons.get(0).unwrap());
    assert_eq!(not_now.text_content().as_deref(), Some("Not now"));
    not_now.click();
    let result = answered(&answer).await;
    assert_eq!(
        result.error().unwrap().code.as_str(),
        "CONFIRMATION_INVALID"
    );
    assert!(page.held_confirmations().is_empty());
}

/// The error-handling pattern of the page: a second `DevicesTable` (the
/// same component instance, `devices.table`/`main`) makes
/// `use_agent_component` refuse it, `?` returns the `RegistrationError`,
/// and the `<ErrorBoundary>` shows its fallback with the error's text;
/// the first table stays registered.
#[wasm_bindgen_test]
async fn a_registration_error_reaches_the_error_boundary() {
    let page = PageSurface::new(SurfaceRegistry::new(api::authority()));
    let registry = page.registry().clone();
    let root = mount_with(page, || {
        view! {
            <ErrorBoundary fallback=|errors| view! {
                <p class="agent-error">
                    {move || errors.get().into_iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>().join("; ")}
                </p>
            }>
                <DevicesTable />
                <DevicesTable />
            </ErrorBoundary>
        }
        .into_any()
    });
    let error = element(&root, ".agent-error").await;
    assert_eq!(
        error.text_content().as_deref(),
        Some("component `devices.table` instance `main` is already registered; drop its handle first or use another instance id")
    );
    let snapshot = registry.snapshot(&AgentConsumer::embedded("user-1"));
    assert_eq!(snapshot.components.len(), 1);
    let paths: Vec<_> = snapshot
        .procedures
        .iter()
        .map(|p| p.procedure_id.as_str())
        .collect();
    assert_eq!(paths, ["domain:devices.disable"]);
}
