//! `webmcp::WebMcpBridge` against Chromium's own WebMCP
//! (`document.modelContext`), from Rust through `Reflect` as a browser
//! agent would call it: `getTools()` and `executeTool(tool, input)`.
//!
//! With the API (Chromium started with `--enable-features=WebMCP`, passed
//! through `tests/webmcp-webdriver.json`):
//!
//! ```text
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!   CHROMEDRIVER=/usr/bin/chromedriver \
//!   WASM_BINDGEN_TEST_WEBDRIVER_JSON=tests/webmcp-webdriver.json \
//!   cargo test -p surface-runtime --target wasm32-unknown-unknown --features browser --test browser_webmcp
//! ```
//!
//! Without it (the plain runner, no flag), compiled with
//! `SURFACE_WEBMCP_EXPECT_ABSENT=1`: the tests that need the API return at
//! once and `feature_detection_registers_nothing` checks the real absence.
#![cfg(all(target_arch = "wasm32", feature = "browser"))]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::{authority, procedure, DisableBinding, RecordingExecutor};
use js_sys::futures::JsFuture;
use js_sys::{Array, Function, Object, Promise, Reflect, JSON};
use serde_json::{json, Value};
use surface_runtime::browser::sleep;
use surface_runtime::export::ExportOptions;
use surface_runtime::page::{PageSurface, IN_PAGE_CONNECTION_ID};
use surface_runtime::registry::RegistrationHandle;
use surface_runtime::webmcp::{model_context, WebMcpBridge, WebMcpOptions};
use surface_runtime::{
    AgentProcedureBinding, ComponentDefinition, ConfirmationLevel, SurfaceRegistry, ViewCapability,
};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

const EXPECT_ABSENT: bool = option_env!("SURFACE_WEBMCP_EXPECT_ABSENT").is_some();

/// The page under test: `devices.list` plain, `devices.disable` bound to
/// the selection (locked `deviceIds`, confirmation required, available
/// while something is selected).
struct Page {
    page: PageSurface,
    executor: Arc<RecordingExecutor>,
    selection: Rc<RefCell<Vec<String>>>,
    list: Option<RegistrationHandle>,
    _disable: RegistrationHandle,
}

fn page() -> Page {
    let registry = SurfaceRegistry::new(authority());
    let executor = Arc::new(RecordingExecutor::default());
    registry.set_procedure_executor(executor.clone());
    let selection = Rc::new(RefCell::new(vec!["dev-1".to_string(), "dev-2".to_string()]));
    let list = registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            registry.authority(),
            "devices.list",
        )))
        .unwrap();
    let (bound, seen) = (selection.clone(), selection.clone());
    let disable = registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(registry.authority(), "devices.disable"))
                .bind(move || DisableBinding {
                    device_ids: bound.borrow().clone(),
                })
                .confirmation(ConfirmationLevel::Required)
                .when(move || !seen.borrow().is_empty())
                .unavailable_reason("Select at least one device first"),
        )
        .unwrap();
    Page {
        page: PageSurface::new(registry),
        executor,
        selection,
        list: Some(list),
        _disable: disable,
    }
}

fn context() -> Option<Object> {
    let context = model_context();
    assert!(
        context.is_some() || EXPECT_ABSENT,
        "document.modelContext is absent: run with WASM_BINDGEN_TEST_WEBDRIVER_JSON=tests/webmcp-webdriver.json \
         (Chromium with --enable-features=WebMCP), or compile with SURFACE_WEBMCP_EXPECT_ABSENT=1"
    );
    context
}

fn method(context: &Object, name: &str) -> Function {
    Reflect::get(context, &name.into())
        .unwrap()
        .unchecked_into()
}

/// `await document.modelContext.getTools()`.
async fn tools(context: &Object) -> Vec<JsValue> {
    let promise: Promise = method(context, "getTools")
        .call0(context)
        .unwrap()
        .unchecked_into();
    Array::from(&JsFuture::from(promise).await.unwrap())
        .iter()
        .collect()
}

fn field(tool: &JsValue, name: &str) -> Value {
    let value = Reflect::get(tool, &name.into()).unwrap();
    if value.is_undefined() {
        return Value::Null;
    }
    if let Some(text) = value.as_string() {
        // Chromium may hand the schema back as its JSON text.
        return serde_json::from_str(&text).unwrap_or(Value::String(text));
    }
    serde_json::from_str(&String::from(JSON::stringify(&value).unwrap())).unwrap()
}

async fn tool(context: &Object, name: &str) -> Option<JsValue> {
    tools(context)
        .await
        .into_iter()
        .find(|t| field(t, "name") == json!(name))
}

/// `executeTool(tool, input)`, not awaited.
fn execute(context: &Object, tool: &JsValue, input: Value) -> Promise {
    let input = JSON::parse(&input.to_string()).unwrap();
    method(context, "executeTool")
        .call2(context, tool, &input)
        .unwrap()
        .unchecked_into()
}

/// What `executeTool` resolved to, as JSON (Chromium resolves to the JSON
/// text of what `execute` returned).
async fn outcome(promise: Promise) -> Value {
    let value = JsFuture::from(promise).await.expect("executeTool resolves");
    match value.as_string() {
        Some(text) => serde_json::from_str(&text).unwrap(),
        None => serde_json::from_str(&String::from(JSON::stringify(&value).unwrap())).unwrap(),
    }
}

fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

async fn tick() {
    sleep(Duration::from_millis(30)).await;
}

#[wasm_bindgen_test]
async fn get_tools_lists_the_surface_with_reduced_schemas_and_annotations() {
    let Some(context) = context() else { return };
    let page = page();
    let bridge = WebMcpBridge::start(&page.page, WebMcpOptions::default()).unwrap();
    tick().await;
    assert_eq!(bridge.tool_names(), ["devices__disable", "devices__list"]);
    assert!(bridge.refused().is_empty(), "{:?}", bridge.refused());

    let disable = tool(&context, "devices__disable").await.expect("listed");
    let schema = field(&disable, "inputSchema");
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"].get("deviceIds").is_none(), "{schema}");
    assert!(schema["properties"].get("reason").is_some(), "{schema}");
    let description = field(&disable, "description");
    assert!(
        description.as_str().unwrap().contains("confirm"),
        "{description}"
    );
    assert_eq!(field(&disable, "title"), json!("devices.disable"));
    // Chromium keeps readOnlyHint of the MCP annotations (and adds its own).
    assert_eq!(field(&disable, "annotations")["readOnlyHint"], json!(false));
    let list = tool(&context, "devices__list").await.expect("listed");
    assert_eq!(field(&list, "annotations")["readOnlyHint"], json!(true));
    assert_eq!(
        field(&list, "inputSchema")["properties"]["query"]["type"],
        "string"
    );
    drop(bridge);
    assert!(tool(&context, "devices__list").await.is_none());
}

#[wasm_bindgen_test]
async fn a_locked_field_supplied_is_refused() {
    let Some(context) = context() else { return };
    let page = page();
    let _bridge = WebMcpBridge::start(&page.page, WebMcpOptions::default()).unwrap();
    let disable = tool(&context, "devices__disable").await.unwrap();
    let result = outcome(execute(&context, &disable, json!({"deviceIds": ["dev-9"]}))).await;
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(first_text(&result).starts_with("INVALID_INPUT"), "{result}");
    assert!(page.page.held_confirmations().is_empty());
    assert!(page.executor.calls().is_empty());
}

#[wasm_bindgen_test]
async fn a_confirmation_waits_in_the_page_and_approve_runs_it() {
    let Some(context) = context() else { return };
    let page = page();
    let _bridge = WebMcpBridge::start(&page.page, WebMcpOptions::default()).unwrap();
    let disable = tool(&context, "devices__disable").await.unwrap();
    let pending = execute(&context, &disable, json!({"reason": "old"}));
    tick().await;
    let held = page.page.held_confirmations();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].connection_id, IN_PAGE_CONNECTION_ID);
    assert_eq!(held[0].capability_id, "domain:devices.disable");
    assert_eq!(
        held[0].input,
        json!({"deviceIds": ["dev-1", "dev-2"], "reason": "old"})
    );
    assert!(held[0].invocation_id.starts_with("webmcp-"));
    assert!(
        page.executor.calls().is_empty(),
        "nothing runs before approval"
    );

    page.page.approve(&held[0].confirmation_id).unwrap();
    let result = outcome(pending).await;
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(result["structuredContent"], json!({"ok": true}));
    let calls = page.executor.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].input,
        json!({"deviceIds": ["dev-1", "dev-2"], "reason": "old"})
    );
    assert!(page.page.held_confirmations().is_empty());
    let activity = page.page.activity();
    assert_eq!(activity.len(), 1);
    assert_eq!(activity[0].invocation_id, held[0].invocation_id);
}

#[wasm_bindgen_test]
async fn reject_fails_the_call_and_nothing_runs() {
    let Some(context) = context() else { return };
    let page = page();
    let _bridge = WebMcpBridge::start(&page.page, WebMcpOptions::default()).unwrap();
    let disable = tool(&context, "devices__disable").await.unwrap();
    let pending = execute(&context, &disable, json!({}));
    tick().await;
    let held = page.page.held_confirmations();
    assert_eq!(held.len(), 1);
    page.page.reject(&held[0].confirmation_id).unwrap();
    let result = outcome(pending).await;
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(
        first_text(&result).starts_with("CONFIRMATION_INVALID"),
        "{result}"
    );
    assert_eq!(result["structuredContent"]["details"]["reason"], "denied");
    assert!(page.executor.calls().is_empty());
}

/// `executeTool(tool, input, {signal})` aborted while the call waits for
/// the user: Chromium rejects the promise (`AbortError`) and fires
/// `toolcancel`; the bridge withdraws the held confirmation and nothing
/// runs.
#[wasm_bindgen_test]
async fn toolcancel_withdraws_a_held_call() {
    let Some(context) = context() else { return };
    let page = page();
    let _bridge = WebMcpBridge::start(&page.page, WebMcpOptions::default()).unwrap();
    let disable = tool(&context, "devices__disable").await.unwrap();
    let abort = web_sys::AbortController::new().unwrap();
    let options = Object::new();
    Reflect::set(&options, &"signal".into(), &abort.signal()).unwrap();
    let input = JSON::parse("{}").unwrap();
    let pending: Promise = method(&context, "executeTool")
        .call3(&context, &disable, &input, &options)
        .unwrap()
        .unchecked_into();
    tick().await;
    let held = page.page.held_confirmations();
    assert_eq!(held.len(), 1);
    abort.abort();
    let error = JsFuture::from(pending).await.expect_err("aborted");
    let name = Reflect::get(&error, &"name".into()).unwrap();
    assert_eq!(name.as_string().as_deref(), Some("AbortError"));
    tick().await;
    assert!(page.page.held_confirmations().is_empty());
    assert!(page.page.approve(&held[0].confirmation_id).is_err());
    assert!(page.executor.calls().is_empty());
    let activity = page.page.activity();
    assert!(
        format!("{:?}", activity[0].state).contains("Cancelled"),
        "{activity:?}"
    );
}

#[wasm_bindgen_test]
async fn registry_changes_update_and_remove_tools() {
    let Some(context) = context() else { return };
    let mut page = page();
    let bridge = WebMcpBridge::start(&page.page, WebMcpOptions::default()).unwrap();
    assert!(tool(&context, "devices__disable").await.is_some());
    // The selection empties: disable becomes unavailable and goes away.
    page.selection.borrow_mut().clear();
    page.page.registry().notify_changed();
    tick().await;
    assert!(tool(&context, "devices__disable").await.is_none());
    assert_eq!(bridge.tool_names(), ["devices__list"]);
    // Selected again: back.
    page.selection.borrow_mut().push("dev-3".into());
    page.page.registry().notify_changed();
    tick().await;
    assert!(tool(&context, "devices__disable").await.is_some());
    // Unregistering devices.list removes its tool.
    drop(page.list.take());
    tick().await;
    assert!(tool(&context, "devices__list").await.is_none());
    assert_eq!(bridge.tool_names(), ["devices__disable"]);
}

#[wasm_bindgen_test]
async fn an_unavailable_tool_answers_unavailable_with_the_reason() {
    let Some(context) = context() else { return };
    let page = page();
    page.selection.borrow_mut().clear();
    let options = WebMcpOptions {
        export: ExportOptions {
            include_unavailable: true,
            ..ExportOptions::default()
        },
        ..WebMcpOptions::default()
    };
    let _bridge = WebMcpBridge::start(&page.page, options).unwrap();
    let disable = tool(&context, "devices__disable").await.unwrap();
    let result = outcome(execute(&context, &disable, json!({}))).await;
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(
        first_text(&result).starts_with("CAPABILITY_NOT_AVAILABLE"),
        "{result}"
    );
    assert!(
        first_text(&result).contains("Select at least one device first"),
        "{result}"
    );
    assert!(page.executor.calls().is_empty());
}

/// A component's view capability is a WebMCP tool too (the default
/// consumer is embedded), and `executeTool` runs its handler in the page.
#[wasm_bindgen_test]
async fn view_capabilities_are_tools_and_run_in_the_page() {
    let Some(context) = context() else { return };
    let page = page();
    let selection = page.selection.clone();
    let _table = page
        .page
        .registry()
        .register_component(
            ComponentDefinition::new("devices.table", "main").capability(
                ViewCapability::with_schema(
                    "select",
                    "Select devices in the table",
                    json!({"type": "object", "properties": {"ids": {"type": "array",
                    "items": {"type": "string"}}}, "required": ["ids"],
                    "additionalProperties": false}),
                    move |input: Value| {
                        let ids: Vec<String> =
                            serde_json::from_value(input["ids"].clone()).unwrap();
                        *selection.borrow_mut() = ids.clone();
                        async move { Ok(json!({"selected": ids.len()})) }
                    },
                ),
            ),
        )
        .unwrap();
    let bridge = WebMcpBridge::start(&page.page, WebMcpOptions::default()).unwrap();
    let name = bridge
        .tool_names()
        .into_iter()
        .find(|n| n.contains("select"))
        .expect("the view capability is registered");
    let select = tool(&context, &name).await.expect("listed");
    assert_eq!(
        field(&select, "inputSchema")["required"],
        json!(["ids"]),
        "{name}"
    );
    let result = outcome(execute(&context, &select, json!({"ids": ["dev-7"]}))).await;
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(result["structuredContent"], json!({"selected": 1}));
    assert_eq!(*page.selection.borrow(), ["dev-7"]);
}

/// Without `document.modelContext`, `start` registers nothing and returns
/// `None`. Without the flag the API is really absent; with it, the test
/// hides it for the call.
#[wasm_bindgen_test]
async fn feature_detection_registers_nothing() {
    let document = Reflect::get(&js_sys::global(), &"document".into()).unwrap();
    let present = model_context().is_some();
    assert_eq!(present, !EXPECT_ABSENT, "WebMCP presence");
    if present {
        let hide = Object::new();
        Reflect::set(&hide, &"value".into(), &JsValue::UNDEFINED).unwrap();
        Reflect::set(&hide, &"configurable".into(), &JsValue::TRUE).unwrap();
        Object::define_property(
            document.unchecked_ref::<Object>(),
            &"modelContext".into(),
            &hide,
        );
        assert!(model_context().is_none());
    }
    let page = page();
    assert!(WebMcpBridge::start(&page.page, WebMcpOptions::default()).is_none());
    if present {
        Reflect::delete_property(document.unchecked_ref::<Object>(), &"modelContext".into())
            .unwrap();
        let context = model_context().expect("restored");
        assert!(tool(&context, "devices__list").await.is_none());
    }
}

#[wasm_bindgen_test]
async fn in_meta_mode_the_browser_gets_two_tools_and_surface_act_runs_the_named_tool() {
    let Some(context) = context() else { return };
    let page = page();
    let options = WebMcpOptions {
        export: ExportOptions {
            mode: surface_runtime::export::ToolMode::Meta,
            ..ExportOptions::default()
        },
        ..WebMcpOptions::default()
    };
    let bridge = WebMcpBridge::start(&page.page, options).unwrap();
    tick().await;
    assert_eq!(bridge.tool_names(), ["surface_act", "surface_discover"]);
    assert!(tool(&context, "devices__list").await.is_none());
    let discover = tool(&context, "surface_discover").await.expect("listed");
    let found = outcome(execute(&context, &discover, json!({"query": "list"}))).await;
    assert_eq!(found["isError"], json!(false), "{found}");
    assert_eq!(found["structuredContent"]["matched"], json!(1), "{found}");
    assert_eq!(
        found["structuredContent"]["tools"][0]["name"],
        json!("devices__list")
    );
    let act = tool(&context, "surface_act").await.expect("listed");
    let listed = outcome(execute(
        &context,
        &act,
        json!({"tool": "devices__list", "arguments": {"query": "lobby"}}),
    ))
    .await;
    assert_eq!(listed["isError"], json!(false), "{listed}");
    let calls = page.executor.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].input, json!({"query": "lobby"}));
    // A locked field through surface_act is refused as a direct call is.
    let locked = outcome(execute(
        &context,
        &act,
        json!({"tool": "devices__disable", "arguments": {"deviceIds": ["dev-9"]}}),
    ))
    .await;
    assert!(first_text(&locked).starts_with("INVALID_INPUT"), "{locked}");
    assert_eq!(page.executor.calls().len(), 1);
}
