//! `use_ag_ui_agent` in headless Chromium (`wasm-bindgen-test`), against
//! a scripted in-test `AgUiTransport` whose answers are the recorded
//! streams of `tests/fixtures/agui/` (the official `@ag-ui/mastra` stack's
//! bytes, with the tool named as agent-surface names it:
//! `devices__disable`): a turn whose tool call runs through the page's
//! pipeline (held in the page, approved, executed with the bound
//! selection) with the handle's signals at each step, an agent's
//! `RUN_ERROR`, a refused second send, a call the backend holds for
//! approval, the cleanup that cancels a running turn, and the chat panel
//! `docs/frameworks.md` quotes (`docs:begin agui`), driven through its
//! DOM.
#![cfg(target_arch = "wasm32")]

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use agent_surface::agui::FetchAgUiTransport;
use agent_surface::agui::{
    AgUiAgent, AgUiBody, AgUiCallOutcome, AgUiError, AgUiLimits, AgUiMessage, AgUiOptions,
    AgUiResponse, AgUiStatus, AgUiStreaming, AgUiToolCall, AgUiTransport, PendingApproval,
};
use agent_surface::browser::sleep;
use agent_surface::page::PageSurface;
use agent_surface::sync::BoxFuture;
use agent_surface::{
    AgentInvocationResult, AgentProcedureBinding, AgentProcedureExecutor, ConfirmationLevel,
    ErrorCode, ExecuteRequest, ExecutionError, Retry, SurfaceRegistry,
};
use agent_surface_leptos::{
    provide_agent_surface, use_ag_ui_agent, use_agent_procedure, AgUiHandle, ChatEntry,
};
use devices_api::{api, DisableSelection};
use leptos::prelude::*;
use serde_json::{json, Value};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// A recording of `tests/fixtures/agui/`, the tool renamed from the
/// recorder's `devices_disable` to agent-surface's `devices__disable`.
fn fixture(text: &str) -> String {
    text.replace("devices_disable", "devices__disable")
}

fn disable_1() -> String {
    fixture(include_str!("../../tests/fixtures/agui/disable-1.sse"))
}

fn disable_2() -> String {
    fixture(include_str!("../../tests/fixtures/agui/disable-2.sse"))
}

fn error_sse() -> String {
    fixture(include_str!("../../tests/fixtures/agui/error.sse"))
}

/// The recordings' assistant message ids (random UUIDs of the adapter).
const TOOL_PARENT: &str = "58c506e6-76fa-4ccf-9e52-ae46c0ac2b38";
const TEXT_MESSAGE: &str = "0a5c8c47-b996-492e-b8e6-7661dbcc744c";

/// What `disable-2.sse` says, with the executor's output.
const ANSWER: &str = r#"The tool answered devices__disable: {"disabled":["dev-1","dev-2"]}"#;

/// One piece of a scripted response body.
enum Part {
    /// Bytes, as one chunk.
    Bytes(String),
    /// Nothing more until the test opens it.
    Gate(Rc<Cell<bool>>),
}

/// `text` as one chunk.
fn whole(text: String) -> Vec<Part> {
    vec![Part::Bytes(text)]
}

/// `text` up to its `events`-th event, a gate, then the rest.
fn gated(text: &str, events: usize, gate: &Rc<Cell<bool>>) -> Vec<Part> {
    let cut = text
        .match_indices("\n\n")
        .nth(events - 1)
        .map(|(at, _)| at + 2)
        .unwrap();
    vec![
        Part::Bytes(text[..cut].to_string()),
        Part::Gate(gate.clone()),
        Part::Bytes(text[cut..].to_string()),
    ]
}

/// The agent's side: each `post` answers the next scripted run (200,
/// `text/event-stream`) and records the request's `RunAgentInput`.
#[derive(Clone, Default)]
struct Scripted {
    runs: Rc<RefCell<VecDeque<Vec<Part>>>>,
    requests: Rc<RefCell<Vec<Value>>>,
}

impl Scripted {
    fn new(runs: Vec<Vec<Part>>) -> Self {
        Self {
            runs: Rc::new(RefCell::new(runs.into())),
            requests: Rc::default(),
        }
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.borrow().clone()
    }
}

impl AgUiTransport for Scripted {
    fn url(&self) -> &str {
        "scripted:agent"
    }

    fn post(
        &self,
        body: String,
        _limits: AgUiLimits,
    ) -> BoxFuture<'static, Result<AgUiResponse, AgUiError>> {
        self.requests
            .borrow_mut()
            .push(serde_json::from_str(&body).unwrap());
        let run = self.runs.borrow_mut().pop_front();
        Box::pin(async move {
            let Some(parts) = run else {
                return Err(AgUiError::Transport {
                    url: "scripted:agent".into(),
                    message: "no scripted run left".into(),
                });
            };
            let body = futures_util::stream::unfold(VecDeque::from(parts), |mut parts| async {
                loop {
                    match parts.pop_front()? {
                        Part::Bytes(text) => return Some((Ok(text.into_bytes()), parts)),
                        Part::Gate(gate) => {
                            while !gate.get() {
                                sleep(Duration::from_millis(5)).await;
                            }
                        }
                    }
                }
            });
            let body: AgUiBody = Box::pin(body);
            Ok(AgUiResponse {
                status: 200,
                content_type: Some("text/event-stream".into()),
                body,
            })
        })
    }
}

/// The backend: records every executed input and answers with `answer`.
struct Backend {
    inputs: std::sync::Mutex<Vec<Value>>,
    answer: fn(&Value) -> Result<Value, ExecutionError>,
}

impl AgentProcedureExecutor for Backend {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        self.inputs.lock().unwrap().push(request.input.clone());
        let answer = (self.answer)(&request.input);
        Box::pin(async move { answer })
    }
}

fn disabled(input: &Value) -> Result<Value, ExecutionError> {
    Ok(json!({ "disabled": input["deviceIds"] }))
}

fn held_for_approval(_: &Value) -> Result<Value, ExecutionError> {
    Err(ExecutionError::new(
        ErrorCode::DomainApprovalRequired,
        "The server holds this for an approver.",
        Retry::No,
    )
    .with_detail("approvalId", "appr-1"))
}

/// Waits (at most 5 s, in 10 ms steps) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("not reached within 5 s: {what}");
}

/// The page under test: `devices.disable` bound to a selection of
/// `dev-1`, `dev-2` (confirmation required when `confirm`), and a
/// component with the agent, mounted while `shown` is true.
struct Page {
    page: PageSurface,
    backend: Arc<Backend>,
    transport: Scripted,
    handle: Rc<RefCell<Option<AgUiHandle>>>,
    shown: RwSignal<bool>,
    root: web_sys::HtmlElement,
}

#[component]
fn Agent(transport: Scripted, out: Rc<RefCell<Option<AgUiHandle>>>) -> impl IntoView {
    let mut options = AgUiOptions::default();
    options.thread_id = Some("thread-disable".into());
    let handle = use_ag_ui_agent(transport, options);
    *out.borrow_mut() = Some(handle);
    view! { <ChatPanel agent=handle /> }
}

fn mount(
    runs: Vec<Vec<Part>>,
    confirm: bool,
    answer: fn(&Value) -> Result<Value, ExecutionError>,
) -> Page {
    let registry = SurfaceRegistry::new(api::authority());
    let backend = Arc::new(Backend {
        inputs: Default::default(),
        answer,
    });
    registry.set_procedure_executor(backend.clone());
    let page = PageSurface::new(registry);
    let transport = Scripted::new(runs);
    let handle = Rc::new(RefCell::new(None));
    let shown = RwSignal::new(true);
    let document = leptos::prelude::document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    let root = wasm_bindgen::JsCast::unchecked_into::<web_sys::HtmlElement>(root);
    let in_page = page.clone();
    // `<Show>`'s children are `Send`: the `Rc`s go in a local stored value.
    let agent_parts = (transport.clone(), handle.clone());
    leptos::mount::mount_to(root.clone(), move || {
        provide_agent_surface(in_page);
        let level = if confirm {
            ConfirmationLevel::Required
        } else {
            ConfirmationLevel::Never
        };
        use_agent_procedure(
            AgentProcedureBinding::new(api::devices::disable())
                .bind(|| DisableSelection {
                    device_ids: vec!["dev-1".into(), "dev-2".into()],
                })
                .confirmation(level),
        )
        .unwrap();
        let parts = StoredValue::new_local(agent_parts);
        let agent = move || {
            let (transport, out) = parts.get_value();
            view! { <Agent transport=transport out=out /> }
        };
        view! { <Show when=move || shown.get()>{agent()}</Show> }
    })
    .forget();
    Page {
        page,
        backend,
        transport,
        handle,
        shown,
        root,
    }
}

impl Page {
    fn handle(&self) -> AgUiHandle {
        self.handle
            .borrow()
            .expect("the agent component is mounted")
    }

    fn executed(&self) -> Vec<Value> {
        self.backend.inputs.lock().unwrap().clone()
    }

    /// The element matching `selector`, once there.
    async fn element(&self, selector: &str) -> web_sys::HtmlElement {
        until(selector, || {
            self.root.query_selector(selector).unwrap().is_some()
        })
        .await;
        let found = self.root.query_selector(selector).unwrap().unwrap();
        wasm_bindgen::JsCast::unchecked_into(found)
    }

    fn text(&self, selector: &str) -> String {
        self.root
            .query_selector(selector)
            .unwrap()
            .and_then(|e| e.text_content())
            .unwrap_or_default()
    }
}

fn user_text(message: &AgUiMessage) -> Option<&str> {
    match message {
        AgUiMessage::User { content, .. } => Some(content),
        _ => None,
    }
}

/// The thread after the `disable` turn, with the ids the client made
/// (the user's and the tool message's) taken from `actual`.
fn disable_thread(actual: &[AgUiMessage], tool_result: &str) -> Vec<AgUiMessage> {
    vec![
        AgUiMessage::User {
            id: actual[0].id().to_string(),
            content: "disable the selected devices".into(),
        },
        AgUiMessage::Assistant {
            id: TOOL_PARENT.into(),
            content: None,
            tool_calls: vec![AgUiToolCall::new(
                "call-disable-1",
                "devices__disable",
                r#"{"reason":"maintenance"}"#,
            )],
        },
        AgUiMessage::Tool {
            id: actual[2].id().to_string(),
            content: tool_result.into(),
            tool_call_id: "call-disable-1".into(),
        },
        AgUiMessage::Assistant {
            id: TEXT_MESSAGE.into(),
            content: Some(ANSWER.into()),
            tool_calls: Vec::new(),
        },
    ]
}

/// The agent calls `devices__disable` with no ids; the call runs through
/// the page's pipeline: it waits in the page's held confirmations (the
/// bound selection in its input, the executor not called) while the
/// status is `RunningTools`; approved, it runs with the bound ids, and
/// the next run carries its result. The signals follow every step.
#[wasm_bindgen_test]
async fn a_turn_runs_the_agents_call_through_the_pipeline_and_the_signals_follow() {
    let gate = Rc::new(Cell::new(false));
    let p = mount(
        vec![whole(disable_1()), gated(&disable_2(), 2, &gate)],
        true,
        disabled,
    );
    let agent = p.handle();
    assert_eq!(agent.messages().get_untracked(), Vec::new());
    assert_eq!(agent.status().get_untracked(), AgUiStatus::Idle);
    assert_eq!(agent.streaming().get_untracked(), None);
    assert_eq!(agent.error().get_untracked(), None);
    assert_eq!(agent.last_turn().get_untracked(), None);

    agent.send("disable the selected devices");
    until("the call is held in the page", || {
        !p.page.held_confirmations().is_empty()
    })
    .await;
    let held = p.page.held_confirmations().remove(0);
    assert_eq!(held.capability_id, "domain:devices.disable");
    assert_eq!(
        held.input,
        json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"})
    );
    until("the status is RunningTools", || {
        agent.status().get_untracked() == AgUiStatus::RunningTools
    })
    .await;
    // While the user decides, the panel can say what the agent calls.
    assert_eq!(
        agent.streaming().get_untracked(),
        Some(AgUiStreaming {
            text: String::new(),
            tool_calls: vec!["devices__disable".into()],
        })
    );
    let messages = agent.messages().get_untracked();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        user_text(&messages[0]),
        Some("disable the selected devices")
    );
    assert!(p.executed().is_empty(), "nothing runs before the approval");

    p.page.approve(&held.confirmation_id).unwrap();
    let first_chunk = AgUiStreaming {
        text: "The tool answered ".into(),
        tool_calls: Vec::new(),
    };
    until("the second run streams its first chunk", || {
        agent.streaming().get_untracked() == Some(first_chunk.clone())
    })
    .await;
    assert_eq!(agent.status().get_untracked(), AgUiStatus::Streaming);
    assert_eq!(agent.messages().get_untracked().len(), 3);
    gate.set(true);
    until("the turn ends", || {
        agent.last_turn().get_untracked().is_some()
    })
    .await;

    let result = r#"{"disabled":["dev-1","dev-2"]}"#;
    let messages = agent.messages().get_untracked();
    assert_eq!(messages, disable_thread(&messages, result));
    assert_eq!(agent.status().get_untracked(), AgUiStatus::Idle);
    assert_eq!(agent.streaming().get_untracked(), None);
    assert_eq!(agent.error().get_untracked(), None);
    assert_eq!(agent.pending_approvals().get_untracked(), Vec::new());
    assert_eq!(
        agent.transcript().get_untracked(),
        vec![
            ChatEntry::User {
                id: messages[0].id().to_string(),
                text: "disable the selected devices".into()
            },
            ChatEntry::ToolCall {
                id: "call-disable-1".into(),
                name: "devices__disable".into(),
                arguments: r#"{"reason":"maintenance"}"#.into(),
                result: Some(result.into()),
            },
            ChatEntry::Assistant {
                id: TEXT_MESSAGE.into(),
                text: ANSWER.into()
            },
        ]
    );
    let turn = agent.last_turn().get_untracked().unwrap();
    assert_eq!(turn.runs, 2);
    assert_eq!(turn.text, ANSWER);
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].tool_name, "devices__disable");
    let AgUiCallOutcome::Ran(AgentInvocationResult::Ok { output, .. }) = &turn.calls[0].outcome
    else {
        panic!("{:?}", turn.calls[0].outcome);
    };
    assert_eq!(output, &Some(json!({"disabled": ["dev-1", "dev-2"]})));

    // The pipeline ran the call with the bound ids.
    assert_eq!(
        p.executed(),
        [json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"})]
    );
    // The agent saw the tool without the locked ids, and got the result.
    let requests = p.transport.requests();
    assert_eq!(requests.len(), 2);
    let tool = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "devices__disable")
        .expect("devices__disable declared");
    assert_eq!(tool["parameters"]["properties"].get("deviceIds"), None);
    assert_eq!(requests[1]["threadId"], "thread-disable");
    assert_eq!(
        requests[1]["messages"][2],
        json!({"id": messages[2].id(), "role": "tool", "content": result, "toolCallId": "call-disable-1"})
    );
}

/// `RUN_ERROR` ends the turn: the error signal holds the agent's message
/// and code, the failed run adds nothing to the thread, no turn is
/// recorded and the agent is idle again.
#[wasm_bindgen_test]
async fn an_agents_run_error_is_the_error_signal() {
    let p = mount(vec![whole(error_sse())], true, disabled);
    let agent = p.handle();
    agent.send("error");
    until("the turn fails", || agent.error().get_untracked().is_some()).await;
    assert_eq!(
        agent.error().get_untracked(),
        Some(AgUiError::Agent {
            message: "Error: scripted model failure".into(),
            code: Some("AGENT_ERROR".into()),
        })
    );
    let messages = agent.messages().get_untracked();
    assert_eq!(messages.len(), 1);
    assert_eq!(user_text(&messages[0]), Some("error"));
    assert_eq!(agent.status().get_untracked(), AgUiStatus::Idle);
    assert_eq!(agent.last_turn().get_untracked(), None);
    assert!(p.executed().is_empty());
}

/// A second `send` while a turn runs is refused (`Busy`, its text not
/// added); the running turn goes on, and its success clears the error.
#[wasm_bindgen_test]
async fn a_send_during_a_turn_is_refused_busy() {
    let gate = Rc::new(Cell::new(false));
    let p = mount(vec![gated(&disable_2(), 2, &gate)], true, disabled);
    let agent = p.handle();
    agent.send("hello");
    until("the run streams", || {
        agent.streaming().get_untracked().is_some()
    })
    .await;
    agent.send("and again");
    until("the second send is refused", || {
        agent.error().get_untracked() == Some(AgUiError::Busy)
    })
    .await;
    let messages = agent.messages().get_untracked();
    assert_eq!(messages.len(), 1);
    assert_eq!(user_text(&messages[0]), Some("hello"));
    gate.set(true);
    until("the first turn ends", || {
        agent.last_turn().get_untracked().is_some()
    })
    .await;
    assert_eq!(agent.error().get_untracked(), Some(AgUiError::Busy));
    assert_eq!(agent.last_turn().get_untracked().unwrap().text, ANSWER);
    assert_eq!(agent.messages().get_untracked().len(), 2);
    assert_eq!(p.transport.requests().len(), 1);
}

/// A call the backend holds for a person's approval
/// (`DOMAIN_APPROVAL_REQUIRED` with an `approvalId`) is in the
/// `pending_approvals` signal once the turn answered it.
#[wasm_bindgen_test]
async fn a_call_the_backend_holds_is_a_pending_approval() {
    let p = mount(
        vec![whole(disable_1()), whole(disable_2())],
        false,
        held_for_approval,
    );
    let agent = p.handle();
    agent.send("disable the selected devices");
    until("the turn ends", || {
        agent.last_turn().get_untracked().is_some()
    })
    .await;
    let turn = agent.last_turn().get_untracked().unwrap();
    let invocation_id = turn.calls[0]
        .outcome
        .result()
        .unwrap()
        .invocation_id()
        .to_string();
    assert_eq!(
        agent.pending_approvals().get_untracked(),
        vec![PendingApproval {
            approval_id: "appr-1".into(),
            tool_call_id: "call-disable-1".into(),
            tool_name: "devices__disable".into(),
            capability_id: "domain:devices.disable".into(),
            invocation_id,
        }]
    );
    assert_eq!(p.executed().len(), 1);
    assert_eq!(agent.error().get_untracked(), None);
}

/// Unmounting the component cancels its running turn: the call held in
/// the page is withdrawn (never executed), the turn ends `CANCELLED`, no
/// further run is posted, and the agent is idle.
#[wasm_bindgen_test]
async fn unmounting_cancels_the_running_turn() {
    let p = mount(vec![whole(disable_1()), whole(disable_2())], true, disabled);
    let handle = p.handle();
    let agent: AgUiAgent = handle.agent();
    handle.send("disable the selected devices");
    until("the call is held in the page", || {
        !p.page.held_confirmations().is_empty()
    })
    .await;
    p.shown.set(false);
    until("the held call is withdrawn", || {
        p.page.held_confirmations().is_empty()
    })
    .await;
    until("the turn ends", || agent.status() == AgUiStatus::Idle).await;
    assert!(p.executed().is_empty());
    assert_eq!(p.transport.requests().len(), 1);
    let messages = agent.messages();
    let AgUiMessage::Tool { content, .. } = &messages[2] else {
        panic!("{messages:?}");
    };
    assert!(content.contains("CANCELLED"), "{content}");
    assert!(p.root.query_selector("#agent-chat").unwrap().is_none());
}

// docs:begin agui
/// A chat panel over an AG-UI agent: the transcript (texts, and each tool
/// call with the page's answer), what the current run streams, the
/// status, the last turn's error, an input and Send / Stop buttons.
#[component]
fn ChatPanel(agent: AgUiHandle) -> impl IntoView {
    let draft = RwSignal::new(String::new());
    let busy = move || agent.status().get() != AgUiStatus::Idle;
    let send = move || {
        let text = draft.get_untracked();
        if !text.trim().is_empty() {
            agent.send(text);
            draft.set(String::new());
        }
    };
    view! {
        <section id="agent-chat">
            <ol class="transcript">
                {move || agent.transcript().get().into_iter().map(chat_line).collect_view()}
            </ol>
            <p class="streaming">{move || agent.streaming().get().map(|s| s.text)}</p>
            <p class="status">{move || status_words(agent.status().get())}</p>
            <p class="error">{move || agent.error().get().map(|e| e.to_string())}</p>
            <form on:submit=move |ev| {
                ev.prevent_default();
                send();
            }>
                <input bind:value=draft placeholder="Ask the agent" />
                <button type="submit" disabled=busy>"Send"</button>
                <button type="button" disabled=move || !busy() on:click=move |_| agent.cancel()>
                    "Stop"
                </button>
            </form>
        </section>
    }
}

/// One line of the transcript.
fn chat_line(entry: ChatEntry) -> AnyView {
    match entry {
        ChatEntry::User { text, .. } => view! { <li class="user">{text}</li> }.into_any(),
        ChatEntry::Assistant { text, .. } => view! { <li class="assistant">{text}</li> }.into_any(),
        ChatEntry::ToolCall {
            name,
            arguments,
            result,
            ..
        } => {
            let answer = result.unwrap_or_else(|| "…".into());
            view! { <li class="tool">{format!("{name} {arguments} → {answer}")}</li> }.into_any()
        }
        _ => ().into_any(),
    }
}

/// What the agent is doing, in words.
fn status_words(status: AgUiStatus) -> &'static str {
    match status {
        AgUiStatus::Idle => "Idle",
        AgUiStatus::Streaming => "The agent is answering…",
        AgUiStatus::RunningTools => {
            "Running the agent's tool calls (confirm in the page if asked)…"
        }
        _ => "",
    }
}

/// The panel over an AG-UI agent server reached with `fetch` (the page's
/// origin forwards `/agent` to it: a page may fetch its own origin only).
#[component]
fn AgentChat() -> impl IntoView {
    let agent = use_ag_ui_agent(FetchAgUiTransport::new("/agent"), AgUiOptions::default());
    view! { <ChatPanel agent=agent /> }
}
// docs:end agui

/// The quoted panel, driven through its DOM: typing and submitting sends
/// the text, the status line follows the turn, and the transcript shows
/// the tool call with its result and the agent's answer.
#[wasm_bindgen_test]
async fn the_quoted_chat_panel_sends_and_shows_the_turn() {
    let p = mount(vec![whole(disable_1()), whole(disable_2())], true, disabled);
    let input = p.element("#agent-chat input").await;
    let input: web_sys::HtmlInputElement = wasm_bindgen::JsCast::unchecked_into(input);
    input.set_value("disable the selected devices");
    input
        .dispatch_event(&web_sys::Event::new("input").unwrap())
        .unwrap();
    p.element("#agent-chat button[type=submit]").await.click();
    until("the call is held", || {
        !p.page.held_confirmations().is_empty()
    })
    .await;
    until("the status line says so", || {
        p.text("#agent-chat .status")
            == "Running the agent's tool calls (confirm in the page if asked)…"
    })
    .await;
    assert_eq!(input.value(), "");
    let held = p.page.held_confirmations().remove(0);
    p.page.approve(&held.confirmation_id).unwrap();
    until("the turn ends", || p.text("#agent-chat .status") == "Idle").await;
    assert_eq!(
        p.text("#agent-chat .transcript"),
        format!(
            "disable the selected devices{}{ANSWER}",
            r#"devices__disable {"reason":"maintenance"} → {"disabled":["dev-1","dev-2"]}"#
        )
    );
    assert_eq!(p.text("#agent-chat .error"), "");
}

/// `AgentChat` (the page's fetch transport) mounts idle, posting nothing.
#[wasm_bindgen_test]
async fn the_quoted_fetch_panel_mounts_idle() {
    let page = PageSurface::new(SurfaceRegistry::new(api::authority()));
    let document = leptos::prelude::document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    let root = wasm_bindgen::JsCast::unchecked_into::<web_sys::HtmlElement>(root);
    let mounted = leptos::mount::mount_to(root.clone(), move || {
        provide_agent_surface(page);
        view! { <AgentChat /> }
    });
    let status = root.query_selector("#agent-chat .status").unwrap().unwrap();
    assert_eq!(status.text_content().as_deref(), Some("Idle"));
    drop(mounted);
}

/// The region `docs:begin agui` of this file appears verbatim in
/// `docs/frameworks.md`, as a `rust,ignore` block.
#[wasm_bindgen_test]
fn frameworks_md_quotes_the_chat_panel() {
    let doc = include_str!("../../docs/frameworks.md");
    let source = include_str!("agui.rs");
    let begin = "// docs:begin agui\n";
    let start = source.find(begin).unwrap() + begin.len();
    let stop = source.find("// docs:end agui\n").unwrap();
    let block = format!("```rust,ignore\n{}```\n", &source[start..stop]);
    assert!(
        doc.contains(&block),
        "docs/frameworks.md does not quote region `agui` of surface-leptos/tests/agui.rs"
    );
}

/// The names the quoted panel uses come with the prelude (feature
/// `ag-ui`), as the doc says.
#[allow(unused_imports)]
mod prelude_names {
    use agent_surface_leptos::prelude::{
        transcript, use_ag_ui_agent, AgUiAgent, AgUiError, AgUiHandle, AgUiMessage, AgUiOptions,
        AgUiStatus, AgUiStreaming, AgUiTurn, ChatEntry, FetchAgUiTransport, PendingApproval,
    };
}
