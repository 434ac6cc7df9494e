//! `use_ag_ui_agent` (feature `ag-ui`) in a headless Dioxus `VirtualDom`,
//! run by `wasm-bindgen-test` in Chromium like the crate's other tests:
//! the hook's agent talks to a scripted in-test `AgUiTransport` answering
//! the recorded AG-UI streams of `tests/fixtures/agui/` (byte for byte, or
//! with the tool renamed as the catalog names it), and the test drives
//! the virtual DOM's tasks and renders itself, so every step is observed:
//! the signals after `send`, while a run streams, while the page holds a
//! tool call for confirmation, after the turn, and after the component
//! unmounted.
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use agent_surface::agui::{
    AgUiCallOutcome, AgUiError, AgUiLimits, AgUiMessage, AgUiOptions, AgUiResponse, AgUiStatus,
    AgUiStreaming, AgUiToolCall, AgUiTransport, AgUiTurn, PendingApproval,
};
use agent_surface::browser::sleep;
use agent_surface::page::PageSurface;
use agent_surface::testing::TestSurface;
use agent_surface::{
    AgentInvocationResult, AgentProcedureBinding, ConfirmationLevel, ErrorCode, ExecutionError,
    Retry, SurfaceRegistry,
};
use agent_surface_dioxus::{
    provide_agent_surface, use_ag_ui_agent, use_agent_procedure, UseAgUiAgent,
};
use devices_api::{api, DisableSelection};
use dioxus::dioxus_core::NoOpMutations;
use dioxus::prelude::*;
use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures_util::future::{select, FutureExt};
use serde_json::{json, Value};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// The recorded text-only run: `The tool answered devices_disable: …`.
const DISABLE_2: &str = include_str!("../../tests/fixtures/agui/disable-2.sse");
/// The recorded run calling `devices_disable` with `{"reason":"maintenance"}`.
const DISABLE_1: &str = include_str!("../../tests/fixtures/agui/disable-1.sse");
/// The recorded run failing with `RUN_ERROR`.
const ERROR: &str = include_str!("../../tests/fixtures/agui/error.sse");

/// `disable-2`'s assistant message id and text.
const ANSWER_ID: &str = "0a5c8c47-b996-492e-b8e6-7661dbcc744c";
const ANSWER: &str = r#"The tool answered devices_disable: {"disabled":["dev-1","dev-2"]}"#;

/// One chunk of a response body.
type Chunk = Result<Vec<u8>, AgUiError>;

/// What one render of the chat read: status, messages, streamed text.
type Render = (AgUiStatus, usize, Option<String>);

/// An AG-UI transport answering each run with the next scripted body and
/// recording every request.
#[derive(Clone, Default)]
struct Scripted(Rc<RefCell<Script>>);

#[derive(Default)]
struct Script {
    bodies: VecDeque<UnboundedReceiver<Chunk>>,
    requests: Vec<Value>,
}

impl Scripted {
    /// The next run's body: all of `sse`, at once.
    fn ready(&self, sse: &str) {
        let (sender, body) = unbounded();
        sender.unbounded_send(Ok(sse.as_bytes().to_vec())).unwrap();
        self.0.borrow_mut().bodies.push_back(body);
    }

    /// The next run's body: what the test sends, until it drops the sender.
    fn gated(&self) -> UnboundedSender<Chunk> {
        let (sender, body) = unbounded();
        self.0.borrow_mut().bodies.push_back(body);
        sender
    }

    /// Every request body so far, as JSON.
    fn requests(&self) -> Vec<Value> {
        self.0.borrow().requests.clone()
    }
}

impl AgUiTransport for Scripted {
    fn url(&self) -> &str {
        "http://agent.test/agent"
    }

    fn post(
        &self,
        body: String,
        _limits: AgUiLimits,
    ) -> agent_surface::sync::BoxFuture<'static, Result<AgUiResponse, AgUiError>> {
        let mut script = self.0.borrow_mut();
        script.requests.push(serde_json::from_str(&body).unwrap());
        let next = script.bodies.pop_front();
        Box::pin(async move {
            let body = next.ok_or_else(|| AgUiError::Transport {
                url: "http://agent.test/agent".into(),
                message: "the test scripted no more runs".into(),
            })?;
            Ok(AgUiResponse {
                status: 200,
                content_type: Some("text/event-stream".into()),
                body: Box::pin(body),
            })
        })
    }
}

/// What the page gets from the test (root context) and gives back.
#[derive(Clone)]
struct Harness {
    page: PageSurface,
    transport: Scripted,
    /// The chat's handle, once it rendered.
    chat: Rc<RefCell<Option<UseAgUiAgent>>>,
    /// The page's switch, once it rendered: whether the chat is shown
    /// (`App`), whether the tool is available (`EffectApp`).
    switch: Rc<RefCell<Option<Signal<bool>>>>,
    /// How many times `EffectChat`'s effect ran.
    effects: Rc<RefCell<usize>>,
    /// What each render of the chat read: status, messages, streamed text.
    renders: Rc<RefCell<Vec<Render>>>,
}

impl Harness {
    fn new(page: PageSurface) -> Self {
        Self {
            page,
            transport: Scripted::default(),
            chat: Rc::default(),
            switch: Rc::default(),
            effects: Rc::default(),
            renders: Rc::default(),
        }
    }

    fn chat(&self) -> UseAgUiAgent {
        self.chat.borrow().expect("the chat rendered")
    }

    /// The page's switch.
    fn switch(&self) -> Signal<bool> {
        self.switch.borrow().expect("the page rendered")
    }

    /// The statuses the chat rendered with, repeats collapsed.
    fn rendered_statuses(&self) -> Vec<AgUiStatus> {
        let mut statuses: Vec<AgUiStatus> = self.renders.borrow().iter().map(|r| r.0).collect();
        statuses.dedup();
        statuses
    }
}

/// The page: the surface, `devices.disable` bound to a fixed selection
/// (held for confirmation), and the chat while `shown`.
#[component]
fn App() -> Element {
    let harness = use_hook(consume_context::<Harness>);
    provide_agent_surface(harness.page.clone());
    use_agent_procedure(
        AgentProcedureBinding::new(api::devices::disable())
            .bind(|| DisableSelection {
                device_ids: vec!["dev-1".into(), "dev-2".into()],
            })
            .confirmation(ConfirmationLevel::Required),
    )
    .unwrap();
    let shown = use_signal(|| true);
    *harness.switch.borrow_mut() = Some(shown);
    rsx! {
        if shown() {
            Chat {}
        }
    }
}

#[component]
fn Chat() -> Element {
    let harness = use_hook(consume_context::<Harness>);
    let transport = harness.transport.clone();
    let chat = use_ag_ui_agent(
        move || transport,
        || {
            let mut options = AgUiOptions::default();
            options.thread_id = Some("thread-chat".into());
            options
        },
    );
    *harness.chat.borrow_mut() = Some(chat);
    let status = chat.status();
    let messages = chat.messages().len();
    let streamed = chat.streaming().map(|s| s.text);
    harness
        .renders
        .borrow_mut()
        .push((status, messages, streamed));
    rsx! { p { "{status:?}: {messages} messages" } }
}

/// A page over the devices authority with a fake server answering
/// `devices.disable`, and its virtual DOM, rendered.
fn mount() -> (VirtualDom, Harness, TestSurface) {
    let registry = SurfaceRegistry::new(api::authority());
    let test = TestSurface::over(registry.clone());
    test.executor()
        .respond("devices.disable", json!({"disabled": ["dev-1", "dev-2"]}));
    let harness = Harness::new(PageSurface::new(registry));
    let mut dom = VirtualDom::new(App).with_root_context(harness.clone());
    dom.rebuild_in_place();
    (dom, harness, test)
}

/// Runs the virtual DOM's tasks and renders until `done` holds (at most
/// 2 s), reading the handle's signals in its runtime.
async fn until(dom: &mut VirtualDom, what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        dom.render_immediate(&mut NoOpMutations);
        if dom.in_runtime(&done) {
            return;
        }
        let work = Box::pin(dom.wait_for_work());
        select(work, sleep(Duration::from_millis(10))).await;
    }
    panic!("not reached within 2 s: {what}");
}

/// Runs whatever work the virtual DOM has for 50 ms, rendering.
async fn settle(dom: &mut VirtualDom) {
    for _ in 0..5 {
        let work = Box::pin(dom.wait_for_work());
        select(work, sleep(Duration::from_millis(10))).await;
        dom.render_immediate(&mut NoOpMutations);
    }
}

/// `sse` split after its first `events` events.
fn split_events(sse: &str, events: usize) -> (&str, &str) {
    let at = sse
        .match_indices("\n\n")
        .nth(events - 1)
        .map(|(i, _)| i + 2)
        .unwrap();
    sse.split_at(at)
}

fn user(message: &AgUiMessage, content: &str) -> AgUiMessage {
    AgUiMessage::User {
        id: message.id().to_string(),
        content: content.into(),
    }
}

fn answer() -> AgUiMessage {
    AgUiMessage::Assistant {
        id: ANSWER_ID.into(),
        content: Some(ANSWER.into()),
        tool_calls: vec![],
    }
}

#[wasm_bindgen_test]
async fn send_streams_the_run_then_settles_the_thread() {
    let (mut dom, harness, _test) = mount();
    let chat = harness.chat();
    assert_eq!(dom.in_runtime(|| chat.status()), AgUiStatus::Idle);
    let body = harness.transport.gated();

    // The turn starts before `send` returns: the user's message is in
    // the thread, the first run's request is sent, the run streams.
    assert_eq!(dom.in_runtime(|| chat.send("hello")), Ok(()));
    let messages = dom.in_runtime(|| chat.messages());
    assert_eq!(messages, vec![user(&messages[0], "hello")]);
    assert!(messages[0].id().starts_with("msg-"), "{messages:?}");
    assert_eq!(dom.in_runtime(|| chat.status()), AgUiStatus::Streaming);
    let requests = harness.transport.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["threadId"], "thread-chat");
    assert_eq!(
        requests[0]["messages"],
        json!([{"id": messages[0].id(), "role": "user", "content": "hello"}])
    );

    // Half the recorded stream: the chat shows the text so far.
    let (head, tail) = split_events(DISABLE_2, 2);
    body.unbounded_send(Ok(head.as_bytes().to_vec())).unwrap();
    until(&mut dom, "the first delta is streamed", || {
        chat.streaming().is_some()
    })
    .await;
    assert_eq!(
        dom.in_runtime(|| chat.streaming()),
        Some(AgUiStreaming {
            text: "The tool answered ".into(),
            tool_calls: vec![],
        })
    );
    assert_eq!(dom.in_runtime(|| chat.status()), AgUiStatus::Streaming);
    assert_eq!(dom.in_runtime(|| chat.messages()).len(), 1);
    assert_eq!(dom.in_runtime(|| chat.last_turn()), None);

    // The rest: the assistant's message joins the thread, the turn ends.
    body.unbounded_send(Ok(tail.as_bytes().to_vec())).unwrap();
    drop(body);
    until(&mut dom, "the turn ends", || {
        chat.status() == AgUiStatus::Idle
    })
    .await;
    assert_eq!(
        dom.in_runtime(|| chat.messages()),
        vec![user(&messages[0], "hello"), answer()]
    );
    assert_eq!(dom.in_runtime(|| chat.streaming()), None);
    assert_eq!(dom.in_runtime(|| chat.error()), None);
    assert_eq!(
        dom.in_runtime(|| chat.last_turn()),
        Some(AgUiTurn {
            runs: 1,
            calls: vec![],
            text: ANSWER.into(),
            interrupts: vec![],
        })
    );
    // The component re-rendered from the signals at each step.
    assert_eq!(
        harness.rendered_statuses(),
        [AgUiStatus::Idle, AgUiStatus::Streaming, AgUiStatus::Idle]
    );
    let renders = harness.renders.borrow();
    assert!(renders.contains(&(AgUiStatus::Streaming, 1, Some("The tool answered ".into()))));
    assert_eq!(renders.last(), Some(&(AgUiStatus::Idle, 2, None)));
}

#[wasm_bindgen_test]
async fn a_run_error_is_the_error_until_the_next_send_and_busy_is_refused() {
    let (mut dom, harness, _test) = mount();
    let chat = harness.chat();

    // The recorded RUN_ERROR: the exact error, nothing of the run kept.
    harness.transport.ready(ERROR);
    assert_eq!(dom.in_runtime(|| chat.send("fail")), Ok(()));
    until(&mut dom, "the turn fails", || {
        chat.error().is_some() && chat.status() == AgUiStatus::Idle
    })
    .await;
    assert_eq!(
        dom.in_runtime(|| chat.error()),
        Some(AgUiError::Agent {
            message: "Error: scripted model failure".into(),
            code: Some("AGENT_ERROR".into()),
        })
    );
    assert_eq!(dom.in_runtime(|| chat.last_turn()), None);
    let failed = dom.in_runtime(|| chat.messages());
    assert_eq!(failed, vec![user(&failed[0], "fail")]);

    // The next send clears it at once.
    let body = harness.transport.gated();
    assert_eq!(dom.in_runtime(|| chat.send("again")), Ok(()));
    assert_eq!(dom.in_runtime(|| chat.error()), None);
    assert_eq!(dom.in_runtime(|| chat.status()), AgUiStatus::Streaming);
    let messages = dom.in_runtime(|| chat.messages());
    assert_eq!(
        messages,
        vec![user(&failed[0], "fail"), user(&messages[1], "again")]
    );

    // While it runs, another send is refused and changes nothing.
    assert_eq!(
        dom.in_runtime(|| chat.send("too soon")),
        Err(AgUiError::Busy)
    );
    assert_eq!(dom.in_runtime(|| chat.messages()), messages);
    assert_eq!(dom.in_runtime(|| chat.error()), None);
    assert_eq!(harness.transport.requests().len(), 2);

    body.unbounded_send(Ok(DISABLE_2.as_bytes().to_vec()))
        .unwrap();
    drop(body);
    until(&mut dom, "the turn ends", || {
        chat.status() == AgUiStatus::Idle
    })
    .await;
    assert_eq!(dom.in_runtime(|| chat.error()), None);
    assert_eq!(
        dom.in_runtime(|| chat.last_turn()).map(|t| t.text),
        Some(ANSWER.to_string())
    );
    assert_eq!(
        dom.in_runtime(|| chat.messages()),
        vec![
            user(&failed[0], "fail"),
            user(&messages[1], "again"),
            answer()
        ]
    );
    // The failed run added nothing to what the second request carried.
    assert_eq!(
        harness.transport.requests()[1]["messages"],
        json!([
            {"id": failed[0].id(), "role": "user", "content": "fail"},
            {"id": messages[1].id(), "role": "user", "content": "again"},
        ])
    );
}

/// The recorded run calling `devices_disable`, with the tool named as the
/// catalog names it (`devices__disable`).
fn recorded_call() -> String {
    let call = DISABLE_1.replace(
        r#""toolCallName":"devices_disable""#,
        r#""toolCallName":"devices__disable""#,
    );
    assert_ne!(call, DISABLE_1);
    call
}

/// The page's one tool as a run declares it: the manifest's description
/// with the registry's notes, the schema without the bound `deviceIds`.
fn assert_declares_disable(request: &Value) {
    assert_eq!(
        request["tools"],
        json!([{
            "name": "devices__disable",
            "description": "Disable devices\n\nThe application sets deviceIds from the current \
                view; they are not arguments.\n\nThe user confirms each call in the application \
                before it runs.",
            "parameters": {
                "type": "object",
                "properties": {"reason": {"type": "string"}},
            },
        }])
    );
}

/// The thread after the recorded call ran and `disable-2` answered, and
/// the second request: the user's message, the call, its result.
fn assert_thread_after_the_call(messages: &[AgUiMessage], second_request: &Value) {
    assert_eq!(messages.len(), 4, "{messages:?}");
    let calling = AgUiMessage::Assistant {
        id: "58c506e6-76fa-4ccf-9e52-ae46c0ac2b38".into(),
        content: None,
        tool_calls: vec![AgUiToolCall::new(
            "call-disable-1",
            "devices__disable",
            r#"{"reason":"maintenance"}"#,
        )],
    };
    let result = AgUiMessage::Tool {
        id: messages[2].id().to_string(),
        content: r#"{"disabled":["dev-1","dev-2"]}"#.into(),
        tool_call_id: "call-disable-1".into(),
    };
    let asked = user(&messages[0], "disable them");
    let sent = [asked.clone(), calling.clone(), result.clone()];
    assert_eq!(messages, [asked, calling, result, answer()]);
    assert_eq!(
        second_request["messages"],
        serde_json::to_value(sent).unwrap()
    );
    assert_eq!(
        second_request["messages"][2],
        json!({
            "id": messages[2].id(),
            "role": "tool",
            "content": "{\"disabled\":[\"dev-1\",\"dev-2\"]}",
            "toolCallId": "call-disable-1",
        })
    );
}

#[wasm_bindgen_test]
async fn a_tool_call_runs_through_the_page_pipeline_and_its_result_goes_back() {
    let (mut dom, harness, test) = mount();
    let chat = harness.chat();
    harness.transport.ready(&recorded_call());
    harness.transport.ready(DISABLE_2);

    assert_eq!(dom.in_runtime(|| chat.send("disable them")), Ok(()));
    // The run declared the page's tool; its call waits in the page for
    // the user's confirmation, with the bound selection locked in.
    until(&mut dom, "the call is held", || {
        chat.status() == AgUiStatus::RunningTools
    })
    .await;
    let requests = harness.transport.requests();
    assert_eq!(requests.len(), 1);
    assert_declares_disable(&requests[0]);
    let held = harness.page.held_confirmations();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].capability_id, "domain:devices.disable");
    let input = json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"});
    assert_eq!(held[0].input, input);
    assert!(test.executor().calls().is_empty(), "nothing ran yet");
    let messages = dom.in_runtime(|| chat.messages());
    assert_eq!(messages, vec![user(&messages[0], "disable them")]);

    // Approved: the call runs, its result goes back in the second run,
    // whose text ends the turn.
    harness.page.approve(&held[0].confirmation_id).unwrap();
    until(&mut dom, "the turn ends", || {
        chat.status() == AgUiStatus::Idle
    })
    .await;
    let executed = test.executor().calls_of("devices.disable");
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].input, input);
    assert!(executed[0].confirmed);
    let requests = harness.transport.requests();
    assert_eq!(requests.len(), 2);
    assert_thread_after_the_call(&dom.in_runtime(|| chat.messages()), &requests[1]);

    let turn = dom.in_runtime(|| chat.last_turn()).expect("the turn ended");
    assert_eq!((turn.runs, turn.text.as_str()), (2, ANSWER));
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].tool_name, "devices__disable");
    let AgUiCallOutcome::Ran(result) = &turn.calls[0].outcome else {
        panic!("not run: {:?}", turn.calls[0].outcome);
    };
    assert_eq!(
        result.output(),
        Some(&json!({"disabled": ["dev-1", "dev-2"]}))
    );
    assert_eq!(dom.in_runtime(|| chat.error()), None);
    assert_eq!(
        harness.rendered_statuses(),
        [AgUiStatus::Idle, AgUiStatus::RunningTools, AgUiStatus::Idle]
    );
}

#[wasm_bindgen_test]
async fn unmounting_cancels_the_running_turn() {
    let (mut dom, harness, _test) = mount();
    let chat = harness.chat();
    let body = harness.transport.gated();
    assert_eq!(dom.in_runtime(|| chat.send("hello")), Ok(()));
    assert_eq!(dom.in_runtime(|| chat.status()), AgUiStatus::Streaming);
    let agent = dom.in_runtime(|| chat.agent());

    // The chat leaves the page mid-run: the request is aborted (its body
    // dropped) and the agent is free again.
    let mut shown = harness.switch();
    dom.in_runtime(|| shown.set(false));
    until(&mut dom, "the request is aborted", || body.is_closed()).await;
    assert_eq!(agent.status(), AgUiStatus::Idle);
    let renders = harness.renders.borrow().len();

    // The agent (a clone outlives the component) runs a turn of its own;
    // the unmounted chat's signals are gone, and nothing breaks.
    harness.transport.ready(DISABLE_2);
    let turn = agent.send("after").now_or_never().expect("ready at once");
    assert_eq!(turn.map(|t| t.text), Ok(ANSWER.to_string()));
    settle(&mut dom).await;
    assert_eq!(harness.renders.borrow().len(), renders);
}

/// A page whose chat sends from an effect, and whose tool is available
/// while `ready` holds.
#[component]
fn EffectApp() -> Element {
    let harness = use_hook(consume_context::<Harness>);
    provide_agent_surface(harness.page.clone());
    let ready = use_signal(|| false);
    *harness.switch.borrow_mut() = Some(ready);
    use_agent_procedure(
        AgentProcedureBinding::new(api::devices::disable())
            .bind(|| DisableSelection {
                device_ids: vec!["dev-1".into()],
            })
            .when(move || *ready.read()),
    )
    .unwrap();
    rsx! { EffectChat {} }
}

#[component]
fn EffectChat() -> Element {
    let harness = use_hook(consume_context::<Harness>);
    let transport = harness.transport.clone();
    let chat = use_ag_ui_agent(move || transport, AgUiOptions::default);
    *harness.chat.borrow_mut() = Some(chat);
    let effects = harness.effects.clone();
    use_effect(move || {
        *effects.borrow_mut() += 1;
        chat.send("from an effect").unwrap();
    });
    rsx! {}
}

#[wasm_bindgen_test]
async fn a_send_in_an_effect_does_not_track_what_the_surface_reads() {
    let harness = Harness::new(PageSurface::new(SurfaceRegistry::new(api::authority())));
    harness.transport.ready(DISABLE_2);
    let mut dom = VirtualDom::new(EffectApp).with_root_context(harness.clone());
    dom.rebuild_in_place();
    until(&mut dom, "the effect's turn ends", || {
        harness.chat().last_turn().is_some()
    })
    .await;
    // The run's snapshot read `ready` (the tool's `when()`), inside the
    // effect: changing it must not run the effect, hence a turn, again.
    let mut ready = harness.switch();
    dom.in_runtime(|| ready.set(true));
    settle(&mut dom).await;
    assert_eq!(*harness.effects.borrow(), 1, "the effect ran once");
    assert_eq!(harness.transport.requests().len(), 1);
    assert_eq!(harness.transport.requests()[0]["tools"], json!([]));
}

#[wasm_bindgen_test]
async fn a_call_held_by_the_backend_is_a_pending_approval_until_delivered_then_run() {
    let (mut dom, harness, test) = mount();
    let chat = harness.chat();
    test.executor().fail(
        "devices.disable",
        ExecutionError::new(
            ErrorCode::DomainApprovalRequired,
            "A supervisor approves disabling devices.",
            Retry::No,
        )
        .with_detail("approvalId", "approval-1"),
    );
    harness.transport.ready(&recorded_call());
    harness.transport.ready(DISABLE_2);
    assert_eq!(dom.in_runtime(|| chat.send("disable them")), Ok(()));
    until(&mut dom, "the call is held in the page", || {
        chat.status() == AgUiStatus::RunningTools
    })
    .await;
    let held = harness.page.held_confirmations();
    harness.page.approve(&held[0].confirmation_id).unwrap();
    until(&mut dom, "the turn ends", || {
        chat.status() == AgUiStatus::Idle
    })
    .await;

    // The backend holds the call: the signal lists it.
    let turn = dom.in_runtime(|| chat.last_turn()).expect("the turn ended");
    let result = turn.calls[0].outcome.result().expect("it ran").clone();
    let approvals = dom.in_runtime(|| chat.pending_approvals());
    assert_eq!(
        approvals,
        vec![PendingApproval {
            approval_id: "approval-1".into(),
            tool_call_id: "call-disable-1".into(),
            tool_name: "devices__disable".into(),
            capability_id: "domain:devices.disable".into(),
            invocation_id: result.invocation_id().to_string(),
        }]
    );

    // Its outcome delivered, the list is empty and the thread says so;
    // `run` shows it to the agent now.
    let decided = AgentInvocationResult::ok(
        result.invocation_id(),
        "domain:devices.disable",
        json!({"disabled": ["dev-1", "dev-2"]}),
        result.surface_version(),
    );
    dom.in_runtime(|| chat.agent().deliver_approval("approval-1", &decided))
        .unwrap();
    until(&mut dom, "the approval leaves the list", || {
        chat.pending_approvals().is_empty()
    })
    .await;
    let messages = dom.in_runtime(|| chat.messages());
    let AgUiMessage::User { content, .. } = &messages[4] else {
        panic!("not the delivery: {messages:?}");
    };
    assert!(
        content.ends_with(r#"Its result: {"disabled":["dev-1","dev-2"]}"#),
        "{content}"
    );
    harness.transport.ready(DISABLE_2);
    assert_eq!(dom.in_runtime(|| chat.run()), Ok(()));
    until(&mut dom, "the run's turn ends", || {
        chat.last_turn().is_some_and(|t| t.runs == 1)
    })
    .await;
    let requests = harness.transport.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2]["messages"][4]["content"], json!(content));
    assert_eq!(dom.in_runtime(|| chat.messages()).len(), 6);
}

#[wasm_bindgen_test]
async fn cancel_ends_the_turn_with_cancelled() {
    let (mut dom, harness, _test) = mount();
    let chat = harness.chat();
    let body = harness.transport.gated();
    assert_eq!(dom.in_runtime(|| chat.send("hello")), Ok(()));
    dom.in_runtime(|| chat.cancel());
    until(&mut dom, "the turn is cancelled", || chat.error().is_some()).await;
    assert_eq!(dom.in_runtime(|| chat.error()), Some(AgUiError::Cancelled));
    assert_eq!(dom.in_runtime(|| chat.status()), AgUiStatus::Idle);
    assert_eq!(dom.in_runtime(|| chat.last_turn()), None);
    assert!(body.is_closed(), "the request is aborted");
    assert_eq!(dom.in_runtime(|| chat.messages()).len(), 1);
}
