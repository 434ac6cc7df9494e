//! WebMCP: the page's live surface as the browser's own agent tools
//! (cargo feature `browser`, `wasm32-unknown-unknown` only;
//! `docs/browser.md`, "WebMCP").
//!
//! [`WebMcpBridge::start`] registers one `document.modelContext` tool per
//! exported tool of the [`ToolCatalog`] of the page registry's snapshot
//! (for [`WebMcpOptions::consumer`]): the same name, title, contextual
//! description, agent-facing input schema (bound fields absent) and
//! annotations as the MCP export ([`crate::export::CatalogTool::mcp_tool`]). After every
//! registry change it re-reads the snapshot once (coalesced to one
//! microtask): a tool that disappeared is unregistered (its
//! `AbortSignal` aborted), a tool whose definition changed is
//! unregistered and registered again, the others stay.
//!
//! A tool's `execute` runs [`PageSurface::invoke_in_page`]: the registry's
//! pipeline with a fresh invocation id and the capability, registration
//! and surface version of the **current** catalog, confirmations held in
//! the page (the same held confirmations as host calls); it resolves to
//! the MCP `CallToolResult` of [`crate::export::CatalogTool::mcp_result`].
//!
//! A `toolcancel` event (the browser cancelled a call of a tool, for
//! example `executeTool`'s `AbortSignal`) cancels every call of that tool
//! still running: a held confirmation is withdrawn, a procedure call in
//! flight is dropped (WebMCP names only the tool, not the call).
//!
//! Without the API (`document.modelContext` absent: every browser but
//! Chromium with `--enable-features=WebMCP` today) `start` returns `None`
//! and registers nothing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use js_sys::futures::{future_to_promise, spawn_local, JsFuture};
use js_sys::{Function, Object, Promise, Reflect, JSON};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::export::{ExportOptions, ResolvedCall, ToolCall, ToolCatalog};
use crate::invocation::{AgentConsumer, AgentError, AgentInvocationResult, ErrorCode, Retry};
use crate::page::PageSurface;
use crate::registry::Subscription;

/// The consumer id of the browser's agent ([`webmcp_consumer`]).
pub const WEBMCP_CONSUMER_ID: &str = "webmcp";

/// The consumer WebMCP calls run as by default: **embedded** (the browser's
/// agent acts on the live view, so it sees view capabilities) with id
/// [`WEBMCP_CONSUMER_ID`]. Policies and audit see this id.
pub fn webmcp_consumer() -> AgentConsumer {
    AgentConsumer::embedded(WEBMCP_CONSUMER_ID)
}

/// `document.modelContext` when the browser has WebMCP (an object with a
/// `registerTool` function), else `None`.
pub fn model_context() -> Option<Object> {
    let document = Reflect::get(&js_sys::global(), &JsValue::from_str("document")).ok()?;
    if !document.is_object() {
        return None;
    }
    let context = Reflect::get(&document, &JsValue::from_str("modelContext")).ok()?;
    if !context.is_object() {
        return None;
    }
    let register = Reflect::get(&context, &JsValue::from_str("registerTool")).ok()?;
    register.is_function().then(|| context.unchecked_into())
}

/// Options of [`WebMcpBridge::start`].
#[derive(Clone, Debug)]
pub struct WebMcpOptions {
    /// Who the snapshot is computed for and calls run as (default
    /// [`webmcp_consumer`]).
    pub consumer: AgentConsumer,
    /// How the catalog is built (default: available tools only).
    pub export: ExportOptions,
}

impl Default for WebMcpOptions {
    fn default() -> Self {
        Self {
            consumer: webmcp_consumer(),
            export: ExportOptions::default(),
        }
    }
}

type Execute = Closure<dyn FnMut(JsValue, JsValue) -> Promise>;
type Listener = Closure<dyn FnMut(JsValue)>;

/// One tool registered with the browser.
struct Registered {
    /// The definition's JSON, to notice a change.
    definition: String,
    abort: web_sys::AbortController,
    _execute: Execute,
}

#[derive(Default)]
struct State {
    catalog: Option<ToolCatalog>,
    tools: HashMap<String, Registered>,
    scheduled: bool,
    refused: Vec<(String, String)>,
    /// Calls running per tool name, for `toolcancel`.
    running: HashMap<String, Vec<(u64, crate::Cancellation)>>,
    next_call: u64,
}

struct Bridge {
    page: PageSurface,
    context: Object,
    options: WebMcpOptions,
    state: RefCell<State>,
    subscription: RefCell<Option<Subscription>>,
    on_cancel: RefCell<Option<Listener>>,
}

/// Keeps `document.modelContext` in sync with a page's registry (module
/// docs). Dropping it unregisters every tool it registered.
pub struct WebMcpBridge {
    inner: Rc<Bridge>,
}

impl std::fmt::Debug for WebMcpBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebMcpBridge")
            .field("tools", &self.tool_names())
            .finish()
    }
}

impl WebMcpBridge {
    /// Registers the page's current tools with WebMCP and follows the
    /// registry's changes; `None` (nothing registered, nothing logged above
    /// `debug`) when the browser has no `document.modelContext`.
    pub fn start(page: &PageSurface, options: WebMcpOptions) -> Option<Self> {
        let Some(context) = model_context() else {
            tracing::debug!("WebMCP: document.modelContext is absent; no tools registered");
            return None;
        };
        let inner = Rc::new(Bridge {
            page: page.clone(),
            context,
            options,
            state: RefCell::new(State::default()),
            subscription: RefCell::new(None),
            on_cancel: RefCell::new(None),
        });
        listen_for_cancel(&inner);
        let weak = Rc::downgrade(&inner);
        let subscription = page.registry().subscribe(move |_change| {
            if let Some(bridge) = weak.upgrade() {
                schedule(&bridge);
            }
        });
        *inner.subscription.borrow_mut() = Some(subscription);
        sync(&inner);
        Some(Self { inner })
    }

    /// Re-reads the snapshot and updates the registered tools now (the
    /// bridge does it by itself one microtask after every registry change).
    pub fn sync(&self) {
        sync(&self.inner);
    }

    /// The names of the tools registered now, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inner.state.borrow().tools.keys().cloned().collect();
        names.sort();
        names
    }

    /// Tools the browser refused to register (name, the browser's error),
    /// oldest first.
    pub fn refused(&self) -> Vec<(String, String)> {
        self.inner.state.borrow().refused.clone()
    }
}

/// `toolcancel` → cancel the tool's running calls.
fn listen_for_cancel(bridge: &Rc<Bridge>) {
    let weak = Rc::downgrade(bridge);
    let listener: Listener = Closure::new(move |event: JsValue| {
        let name = Reflect::get(&event, &"toolName".into())
            .ok()
            .and_then(|n| n.as_string());
        if let (Some(bridge), Some(name)) = (weak.upgrade(), name) {
            let calls = bridge.state.borrow_mut().running.remove(&name);
            for (_, cancellation) in calls.unwrap_or_default() {
                cancellation.cancel();
            }
        }
    });
    if event_method(&bridge.context, "addEventListener", &listener) {
        *bridge.on_cancel.borrow_mut() = Some(listener);
    }
}

/// `context[method]("toolcancel", listener)`; whether it could be called.
fn event_method(context: &Object, method: &str, listener: &Listener) -> bool {
    Reflect::get(context, &method.into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .is_some_and(|f| {
            f.call2(context, &"toolcancel".into(), listener.as_ref())
                .is_ok()
        })
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(listener) = self.on_cancel.get_mut().take() {
            event_method(&self.context, "removeEventListener", &listener);
        }
        for (_, tool) in self.state.get_mut().tools.drain() {
            tool.abort.abort();
        }
    }
}

fn schedule(bridge: &Rc<Bridge>) {
    {
        let mut state = bridge.state.borrow_mut();
        if state.scheduled {
            return;
        }
        state.scheduled = true;
    }
    let weak = Rc::downgrade(bridge);
    spawn_local(async move {
        if let Some(bridge) = weak.upgrade() {
            bridge.state.borrow_mut().scheduled = false;
            sync(&bridge);
        }
    });
}

/// The WebMCP tool definition of an exported MCP tool as JSON, without
/// its output schema (WebMCP's `registerTool` takes none): one per
/// capability, or the two meta tools ([`crate::export::ToolMode::Meta`]).
fn definition(mut tool: crate::export::McpTool) -> String {
    tool.output_schema = None;
    serde_json::to_string(&tool).unwrap_or_default()
}

fn sync(bridge: &Rc<Bridge>) {
    let snapshot = bridge.page.registry().snapshot(&bridge.options.consumer);
    let catalog = match ToolCatalog::with_options(&snapshot, &bridge.options.export) {
        Ok(catalog) => catalog,
        Err(error) => {
            tracing::warn!("WebMCP: the surface cannot be exported: {error}");
            return;
        }
    };
    let wanted: Vec<(String, String)> = catalog
        .mcp_tools()
        .into_iter()
        .map(|tool| (tool.name.clone(), definition(tool)))
        .collect();
    let mut state = bridge.state.borrow_mut();
    state.tools.retain(|name, registered| {
        let keep = wanted
            .iter()
            .any(|(n, d)| n == name && *d == registered.definition);
        if !keep {
            registered.abort.abort();
        }
        keep
    });
    for (name, definition) in wanted {
        if state.tools.contains_key(&name) {
            continue;
        }
        match register(bridge, &name, &definition) {
            Ok(registered) => {
                state.tools.insert(name, registered);
            }
            Err(error) => refuse(&mut state, name, error),
        }
    }
    state.catalog = Some(catalog);
}

/// How many refusals [`WebMcpBridge::refused`] keeps (the newest).
const MAX_REFUSED: usize = 64;

fn refuse(state: &mut State, name: String, error: String) {
    tracing::warn!("WebMCP: the browser refused tool `{name}`: {error}");
    if state.refused.len() >= MAX_REFUSED {
        state.refused.remove(0);
    }
    state.refused.push((name, error));
}

/// Registers one tool: `registerTool(definition + execute, {signal})`.
fn register(bridge: &Rc<Bridge>, name: &str, definition: &str) -> Result<Registered, String> {
    let text = |e: JsValue| crate::browser::js_error_text(&e);
    let tool = JSON::parse(definition).map_err(text)?;
    let weak = Rc::downgrade(bridge);
    let tool_name = name.to_string();
    let execute: Execute = Closure::new(move |input: JsValue, _client: JsValue| {
        let (weak, name) = (weak.clone(), tool_name.clone());
        future_to_promise(async move { Ok(execute(weak, name, input).await) })
    });
    Reflect::set(&tool, &"execute".into(), execute.as_ref()).map_err(text)?;
    let abort = web_sys::AbortController::new().map_err(text)?;
    let options = Object::new();
    Reflect::set(&options, &"signal".into(), &abort.signal()).map_err(text)?;
    let register: Function = Reflect::get(&bridge.context, &"registerTool".into())
        .map_err(text)?
        .unchecked_into();
    let answer = register
        .call2(&bridge.context, &tool, &options)
        .map_err(text)?;
    if let Ok(promise) = answer.dyn_into::<Promise>() {
        // Refusals (an invalid or duplicate name) reject the promise.
        let (weak, name) = (Rc::downgrade(bridge), name.to_string());
        spawn_local(async move {
            if let Err(error) = JsFuture::from(promise).await {
                if let Some(bridge) = weak.upgrade() {
                    let mut state = bridge.state.borrow_mut();
                    state.tools.remove(&name);
                    refuse(&mut state, name, text(error));
                }
            }
        });
    }
    Ok(Registered {
        definition: definition.to_string(),
        abort,
        _execute: execute,
    })
}

/// A fresh invocation id: `webmcp-` and 32 hex digits.
fn fresh_invocation_id() -> String {
    let mut bytes = [0u8; 16];
    let _ = getrandom::fill(&mut bytes);
    format!("webmcp-{}", hex::encode(bytes))
}

/// The agent's input as JSON: `undefined`/`null` is `{}`.
fn input_json(input: &JsValue) -> Result<serde_json::Value, String> {
    if input.is_undefined() || input.is_null() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    let text = JSON::stringify(input)
        .map_err(|e| crate::browser::js_error_text(&e))?
        .as_string()
        .unwrap_or_default();
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// `INVALID_INPUT` for a call of `capability_id` whose input is not JSON:
/// one issue at the root.
fn invalid_input(
    invocation_id: &str,
    capability_id: &str,
    surface_version: u64,
    message: String,
) -> AgentInvocationResult {
    let issues = serde_json::json!([{"path": "", "message": message}]);
    let error = AgentError::new(ErrorCode::InvalidInput, message, Retry::WithChanges)
        .with_detail("issues", issues);
    AgentInvocationResult::err(invocation_id, capability_id, error, surface_version)
}

/// Runs `invocation` in the page, cancellable by `toolcancel` for `name`.
async fn run(
    bridge: Rc<Bridge>,
    name: &str,
    invocation: crate::AgentInvocation,
) -> AgentInvocationResult {
    let cancellation = crate::Cancellation::new();
    let number = {
        let mut state = bridge.state.borrow_mut();
        state.next_call += 1;
        let number = state.next_call;
        let calls = state.running.entry(name.to_string()).or_default();
        calls.push((number, cancellation.clone()));
        number
    };
    let consumer = bridge.options.consumer.clone();
    let call = bridge
        .page
        .invoke_in_page(invocation, consumer, cancellation);
    let weak = Rc::downgrade(&bridge);
    drop(bridge);
    let result = call.await;
    if let Some(bridge) = weak.upgrade() {
        let mut state = bridge.state.borrow_mut();
        if let Some(calls) = state.running.get_mut(name) {
            calls.retain(|(n, _)| *n != number);
            if calls.is_empty() {
                state.running.remove(name);
            }
        }
    }
    result
}

/// One `execute`: the MCP `CallToolResult` as a JavaScript object. In meta
/// mode a `surface_discover` call is answered from the catalog and a
/// `surface_act` call runs the tool it names (a `toolcancel` of
/// `surface_act` cancels it).
async fn execute(bridge: Weak<Bridge>, name: String, input: JsValue) -> JsValue {
    let Some(bridge) = bridge.upgrade() else {
        return JsValue::UNDEFINED;
    };
    let id = fresh_invocation_id();
    let prepared = {
        let state = bridge.state.borrow();
        let Some(catalog) = state.catalog.as_ref() else {
            return JsValue::UNDEFINED;
        };
        let version = catalog.surface_version();
        let resolved = match input_json(&input) {
            Err(e) => Err(invalid_input(
                &id,
                "",
                version,
                format!("The input is not JSON: {e}"),
            )),
            Ok(input) => catalog
                .resolve_call(ToolCall::new(name.as_str(), &id, Some(input)))
                .map_err(|e| e.to_result(&id, String::new(), version)),
        };
        let call = match resolved {
            Ok(ResolvedCall::Discovered(answer)) => return to_js(&answer),
            Ok(ResolvedCall::Tool(call)) => Ok(call),
            Err(result) => Err(result),
        };
        // What a refused call echoes: the tool's capability id ("" for an
        // unknown name) and the catalog's surface version.
        let target = call.as_ref().map_or(name.clone(), |c| c.name.clone());
        let capability_id = catalog
            .tool(&target)
            .map_or("", |t| t.capability_id())
            .to_string();
        let invocation = call.and_then(|call| {
            catalog
                .invocation(call)
                .map_err(|e| e.to_result(&id, capability_id.clone(), version))
        });
        (invocation, target, catalog.clone())
    };
    let (invocation, target, catalog) = prepared;
    let result = match invocation {
        Ok(invocation) => run(bridge, &name, invocation).await,
        Err(result) => result,
    };
    to_js(&catalog.mcp_result(&target, &result))
}

/// An MCP result as a JavaScript object.
fn to_js(result: &crate::export::McpCallToolResult) -> JsValue {
    let text = serde_json::to_string(result).unwrap_or_default();
    JSON::parse(&text).unwrap_or(JsValue::UNDEFINED)
}
