//! Regressions from a hostile review of `agui`: each `dN_` test states a
//! promise (docs/agents.md, "AG-UI", and the rustdoc) and a stream or an
//! interleaving an agent server (or the application) can produce that
//! broke it before the fix; the comments above them describe the defect as
//! it was found. Tests named `holds_*` check promises that already held.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{fixture, procedure, register_plain, DisableBinding, Fixture};
use serde_json::Value;
use surface_runtime::agui::sse::SseDecoder;
use surface_runtime::agui::{
    AgUiAgent, AgUiBody, AgUiCallOutcome, AgUiChange, AgUiError, AgUiLimits, AgUiMessage,
    AgUiOptions, AgUiResponse, AgUiStatus, AgUiTransport,
};
use surface_runtime::page::PageSurface;
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentProcedureBinding, Cancellation, ConfirmationLevel, ErrorCode, RegistrationHandle,
};

// ---------------------------------------------------------------------------
// An in-memory agent server: each run gets the next scripted body.

#[derive(Clone)]
enum Body {
    /// These chunks, then the end.
    Chunks(Vec<Vec<u8>>),
    /// These chunks, then nothing ever again (a stalled server).
    Stall(Vec<Vec<u8>>),
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Body>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Script {
    fn new(answers: Vec<Body>) -> Self {
        Self {
            answers: Arc::new(Mutex::new(answers.into())),
            requests: Arc::default(),
        }
    }
    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

impl AgUiTransport for Script {
    fn url(&self) -> &str {
        "memory://agent"
    }
    fn post(
        &self,
        body: String,
        _limits: AgUiLimits,
    ) -> BoxFuture<'static, Result<AgUiResponse, AgUiError>> {
        self.requests
            .lock()
            .unwrap()
            .push(serde_json::from_str(&body).unwrap());
        let next = self.answers.lock().unwrap().pop_front();
        Box::pin(async move {
            let Some(next) = next else {
                return Err(AgUiError::Transport {
                    url: "memory://agent".into(),
                    message: "the script has no more runs".into(),
                });
            };
            let body: AgUiBody = match next {
                Body::Chunks(chunks) => {
                    Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)))
                }
                Body::Stall(chunks) => Box::pin(futures_util::StreamExt::chain(
                    futures_util::stream::iter(chunks.into_iter().map(Ok)),
                    futures_util::stream::pending(),
                )),
            };
            Ok(AgUiResponse {
                status: 200,
                content_type: Some("text/event-stream".into()),
                body,
            })
        })
    }
}

fn sse(events: &[&str]) -> Body {
    let mut text = String::new();
    for e in events {
        text.push_str("data: ");
        text.push_str(e);
        text.push_str("\n\n");
    }
    Body::Chunks(vec![text.into_bytes()])
}

const STARTED: &str = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
const FINISHED: &str = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#;

fn call_events(id: &str, name: &str, args: &str) -> Vec<String> {
    vec![
        format!(
            r#"{{"type":"TOOL_CALL_START","toolCallId":"{id}","toolCallName":"{name}","parentMessageId":"a-{id}"}}"#
        ),
        format!(
            r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"{id}","delta":{}}}"#,
            serde_json::to_string(args).unwrap()
        ),
        format!(r#"{{"type":"TOOL_CALL_END","toolCallId":"{id}"}}"#),
    ]
}

fn run_with(calls: &[(&str, &str, &str)], finished: &str) -> Body {
    let mut events = vec![STARTED.to_string()];
    for (id, name, args) in calls {
        events.extend(call_events(id, name, args));
    }
    events.push(finished.to_string());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    sse(&refs)
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

fn text_run(text: &str) -> Body {
    let chunk = format!(
        r#"{{"type":"TEXT_MESSAGE_CHUNK","messageId":"m-{}","delta":{}}}"#,
        NEXT_ID.fetch_add(1, Ordering::SeqCst),
        serde_json::to_string(text).unwrap()
    );
    sse(&[STARTED, &chunk, FINISHED])
}

// ---------------------------------------------------------------------------
// A page: `devices.list` (tool `devices__list`, runs at once) and
// `devices.disable` (`devices__disable`, bound, confirmation required).

struct Page {
    fx: Fixture,
    page: PageSurface,
    _list: RegistrationHandle,
    _disable: RegistrationHandle,
}

fn page() -> Page {
    let fx = fixture();
    let list = register_plain(&fx.registry, "devices.list");
    let disable = fx
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(fx.registry.authority(), "devices.disable"))
                .bind(|| DisableBinding {
                    device_ids: vec!["dev-1".into()],
                })
                .confirmation(ConfirmationLevel::Required),
        )
        .unwrap();
    let page = PageSurface::new(fx.registry.clone());
    Page {
        fx,
        page,
        _list: list,
        _disable: disable,
    }
}

impl Page {
    fn agent(&self, script: &Script, limits: AgUiLimits) -> AgUiAgent {
        AgUiAgent::new(
            &self.page,
            script.clone(),
            AgUiOptions::default().with_limits(limits),
        )
    }
    fn executed(&self) -> Vec<String> {
        self.fx
            .executor
            .calls()
            .into_iter()
            .map(|c| c.path)
            .collect()
    }
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------
// D1. A run the server reports as cancelled still has its calls run.

/// AG-UI 1.0 (`RUN_FINISHED.outcome`): "A run that stopped because it was
/// told to ... ends with the cancelled outcome and asks for nothing."
/// The client runs its page calls anyway, and starts another run.
#[tokio::test]
async fn d1_a_run_finished_as_cancelled_runs_none_of_its_calls() {
    let p = page();
    let script = Script::new(vec![
        run_with(
            &[("c1", "devices__list", "{}")],
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}"#,
        ),
        text_run("after"),
    ]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("list").await;
    assert!(
        p.executed().is_empty(),
        "a call of a run the server cancelled was executed: {:?}; turn: {turn:?}",
        p.executed()
    );
}

// D2. An interrupted run's call — the very call the interrupt holds for
// approval — is run by the page.

/// `Interrupt::tool_call_id` is "the tool call it concerns, for a tool
/// approval": the server paused the run to ask whether `c1` may run. The
/// client runs `c1` at once, before anyone answered the interrupt.
#[tokio::test]
async fn d2_the_call_an_interrupt_holds_for_approval_is_not_run() {
    let p = page();
    let script = Script::new(vec![run_with(
        &[("c1", "devices__list", "{}")],
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"tool_approval","toolCallId":"c1"}]}}"#,
    )]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("list").await.unwrap();
    assert_eq!(turn.interrupts.len(), 1);
    assert!(
        p.executed().is_empty(),
        "the call awaiting the interrupt's approval ran: {:?}",
        p.executed()
    );
}

// D3. The same toolCallId in a later run runs the tool a second time.

/// A server that re-emits an answered call (a replayed history, a retry
/// after a crash) gets it run again: the client never checks that the
/// thread already answered that `toolCallId`, and the thread then holds
/// two assistant `toolCalls` with one id (and two tool messages).
#[tokio::test]
async fn d3_a_tool_call_id_already_answered_in_the_thread_is_not_run_again() {
    let p = page();
    let script = Script::new(vec![
        run_with(&[("c1", "devices__list", "{}")], FINISHED),
        run_with(&[("c1", "devices__list", "{}")], FINISHED),
        text_run("done"),
    ]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("list").await.unwrap();
    let tool_messages = agent
        .messages()
        .iter()
        .filter(|m| matches!(m, AgUiMessage::Tool { tool_call_id, .. } if tool_call_id == "c1"))
        .count();
    assert_eq!(
        p.executed().len(),
        1,
        "tool call c1 ran {} times (turn: {} runs); {tool_messages} tool messages answer c1",
        p.executed().len(),
        turn.runs
    );
}

// D4. Docs: "A turn whose only calls were refused does not start another
// run". A call of a declared tool refused for its arguments (not a JSON
// object) or for never ending does start another run.

#[tokio::test]
async fn d4_a_turn_whose_only_call_was_refused_for_its_arguments_starts_no_other_run() {
    let p = page();
    let script = Script::new(vec![
        run_with(&[("c1", "devices__list", "[1]")], FINISHED),
        text_run("second run"),
    ]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("list").await.unwrap();
    assert!(matches!(turn.calls[0].outcome, AgUiCallOutcome::Refused(_)));
    assert!(p.executed().is_empty());
    assert_eq!(
        (turn.runs, script.requests().len()),
        (1, 1),
        "the refused-only turn started another run"
    );
}

#[tokio::test]
async fn d4b_a_turn_whose_only_call_never_ended_starts_no_other_run() {
    let p = page();
    let start = r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"devices__list"}"#;
    let script = Script::new(vec![
        sse(&[STARTED, start, FINISHED]),
        text_run("second run"),
    ]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("list").await.unwrap();
    assert!(matches!(turn.calls[0].outcome, AgUiCallOutcome::Refused(_)));
    assert_eq!(turn.runs, 1, "the refused-only turn started another run");
}

// D5. A turn cancelled before it was first polled still runs the tool.

/// `send_with` with a cancellation that is already cancelled (an
/// `AbortSignal` already aborted: `cancellation_from_abort_signal` cancels
/// "at once if it already has"): `stream_run` polls the read before the
/// cancellation, and `invoke_in_page` polls the call before the
/// cancellation, so a run that is ready at once is read and its call
/// executed; the turn then reports `Cancelled`.
#[tokio::test]
async fn d5_a_turn_cancelled_before_it_starts_runs_no_tool() {
    let p = page();
    let script = Script::new(vec![run_with(&[("c1", "devices__list", "{}")], FINISHED)]);
    let agent = p.agent(&script, AgUiLimits::default());
    let cancellation = Cancellation::new();
    cancellation.cancel();
    let result = agent.send_with("list", cancellation).await;
    assert_eq!(result, Err(AgUiError::Cancelled));
    assert!(
        p.executed().is_empty(),
        "a cancelled turn executed {:?}",
        p.executed()
    );
}

// D6. Dropping the turn's future while a confirmation is held: a call
// that already ran is lost from the thread.

/// Two calls in one run: `devices__list` runs at once, `devices__disable`
/// waits for the user. The application drops the turn (a route change, a
/// component unmounted). The agent is freed, but the thread does not say
/// that `devices.list` ran: the next run's agent never learns of it (and
/// may call it again).
#[tokio::test]
async fn d6_dropping_the_turn_keeps_the_calls_that_ran_in_the_thread() {
    let p = page();
    let script = Script::new(vec![run_with(
        &[
            ("c1", "devices__list", "{}"),
            ("c2", "devices__disable", "{}"),
        ],
        FINISHED,
    )]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("list and disable");
    let page = p.page.clone();
    let wait_held = async move {
        while page.held_confirmations().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        _ = turn => panic!("the turn ended while a confirmation is held"),
        () = wait_held => {}
    }
    // The turn future is dropped here.
    assert_eq!(agent.status(), AgUiStatus::Idle, "dropping frees the agent");
    assert_eq!(p.executed(), ["devices.list"]);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let held = p.page.held_confirmations().len();
    let messages = agent.messages();
    assert!(
        messages
            .iter()
            .any(|m| matches!(m, AgUiMessage::Tool { tool_call_id, .. } if tool_call_id == "c1")),
        "devices.list ran but the thread has no trace of it: {messages:?} (held confirmations after the drop: {held})"
    );
}

// D7. `run()` without a new user message grows the thread past its limit.

/// `max_thread_messages`: "the oldest exchanges leave the thread". An
/// exchange ends only at a user message, so turns started with
/// `AgUiAgent::run` (the documented way to continue "after an error")
/// keep adding to one exchange that is never pruned.
#[tokio::test]
async fn d7_turns_started_with_run_keep_the_thread_within_its_limit() {
    let p = page();
    let runs = 20;
    let mut answers = vec![text_run("hi")];
    answers.extend((0..runs).map(|i| text_run(&format!("answer {i}"))));
    let script = Script::new(answers);
    let mut limits = AgUiLimits::default();
    limits.max_thread_messages = 6;
    let agent = p.agent(&script, limits);
    agent.send("hello").await.unwrap();
    for _ in 0..runs {
        agent.run(Cancellation::new()).await.unwrap();
    }
    assert!(
        agent.messages().len() <= 6,
        "max_thread_messages 6, the thread holds {}",
        agent.messages().len()
    );
}

// D8. Every body chunk re-renders the whole streamed text, even when the
// chunk completed no event: O(text × chunks) work and one `Streaming`
// notification per chunk.

/// 256 KiB of text (the default `max_text_bytes`), then 4,000 chunks of
/// one comment byte each (`:`) — no event at all. Each chunk rebuilds
/// `AgUiStreaming` (`RunOutput::text()` joins every message) and notifies
/// every listener. A server trickling bytes within `max_response_bytes`
/// (8 MiB: 8 M chunks) makes it terabytes of copying on the page's thread.
#[tokio::test]
async fn d8_chunks_that_complete_no_event_do_not_rerender_the_stream() {
    let p = page();
    let text = "x".repeat(250 * 1024);
    let mut chunks = vec![format!(
        "data: {STARTED}\n\ndata: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"{text}\"}}\n\n"
    )
    .into_bytes()];
    chunks.extend(std::iter::repeat_n(b":".to_vec(), 4_000));
    chunks.push(format!("\ndata: {FINISHED}\n\n").into_bytes());
    let script = Script::new(vec![Body::Chunks(chunks)]);
    let agent = p.agent(&script, AgUiLimits::default());
    let notified = Arc::new(AtomicUsize::new(0));
    let counter = notified.clone();
    let _subscription = agent.on_change(move |change| {
        if change == AgUiChange::Streaming {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let started = Instant::now();
    agent.send("talk").await.unwrap();
    let elapsed = started.elapsed();
    let notified = notified.load(Ordering::SeqCst);
    assert!(
        notified <= 3,
        "3 events, {notified} Streaming notifications, each re-joining 250 KiB ({elapsed:?})"
    );
}

// ---------------------------------------------------------------------------
// What held.

/// Listeners may call back into the agent (getters, `cancel`, even
/// `send`): no lock is held while they run.
#[tokio::test]
async fn holds_listeners_may_call_back_into_the_agent() {
    let p = page();
    let script = Script::new(vec![text_run("one"), text_run("two")]);
    let agent = p.agent(&script, AgUiLimits::default());
    let inner = agent.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let _subscription = agent.on_change(move |change| {
        let _ = (inner.messages(), inner.status(), inner.streaming());
        let _ = inner.pending_approvals();
        kept.lock().unwrap().push(change);
    });
    let turn = agent.send("a").await.unwrap();
    assert_eq!(turn.text, "one");
    assert!(seen.lock().unwrap().contains(&AgUiChange::Messages));
    assert_eq!(agent.status(), AgUiStatus::Idle);
}

/// `send` while a turn runs is `Busy` and adds nothing; `cancel` while
/// the stream stalls ends the turn with `Cancelled` and frees the agent.
#[tokio::test]
async fn holds_busy_and_cancel_while_streaming() {
    let p = page();
    let script = Script::new(vec![
        Body::Stall(vec![format!("data: {STARTED}\n\n").into_bytes()]),
        text_run("again"),
    ]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("first");
    let other = agent.clone();
    let poke = async move {
        while other.status() != AgUiStatus::Streaming {
            tokio::task::yield_now().await;
        }
        assert_eq!(other.send("second").await, Err(AgUiError::Busy));
        assert_eq!(other.messages().len(), 1);
        other.cancel();
    };
    let (turn, ()) = tokio::join!(turn, poke);
    assert_eq!(turn, Err(AgUiError::Cancelled));
    assert_eq!(agent.status(), AgUiStatus::Idle);
    assert_eq!(agent.send("third").await.unwrap().text, "again");
}

/// A call of a tool the run did not declare never runs, nor does a call
/// from a run that ended in RUN_ERROR, nor one whose arguments never
/// ended.
#[tokio::test]
async fn holds_undeclared_failed_and_incomplete_calls_do_not_run() {
    let p = page();
    let error = r#"{"type":"RUN_ERROR","message":"boom\u202e","code":"X"}"#;
    let start = r#"{"type":"TOOL_CALL_START","toolCallId":"c9","toolCallName":"devices__list"}"#;
    let script = Script::new(vec![
        run_with(&[("c1", "devices__rename", "{}")], FINISHED),
        {
            let mut events: Vec<String> = vec![STARTED.into()];
            events.extend(call_events("c2", "devices__list", "{}"));
            events.push(error.into());
            let refs: Vec<&str> = events.iter().map(String::as_str).collect();
            sse(&refs)
        },
        sse(&[STARTED, start, FINISHED]),
        text_run("ok"),
    ]);
    let agent = p.agent(&script, AgUiLimits::default());
    let turn = agent.send("one").await.unwrap();
    assert_eq!(turn.runs, 1);
    assert!(!tool_names(&script.requests()[0]).contains(&"devices__rename".to_string()));
    let e = agent.send("two").await.unwrap_err();
    assert_eq!(
        e,
        AgUiError::Agent {
            message: "boom\\u{202e}".into(),
            code: Some("X".into())
        }
    );
    let _ = agent.send("three").await;
    assert!(p.executed().is_empty(), "{:?}", p.executed());
    // The refused call's assistant message precedes its tool message.
    let messages = agent.messages();
    let assistant = messages
        .iter()
        .position(|m| matches!(m, AgUiMessage::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| c.id == "c1")))
        .unwrap();
    assert!(
        matches!(&messages[assistant + 1], AgUiMessage::Tool { tool_call_id, .. } if tool_call_id == "c1")
    );
    let _ = ErrorCode::CapabilityNotFound;
}

/// Incomplete JSON arguments of a chunk-built call go back to the agent
/// as `{}` (its `JSON.parse` of the next run's thread succeeds).
#[tokio::test]
async fn holds_kept_arguments_are_always_a_json_object() {
    let p = page();
    let chunk = r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"devices__list","delta":"{\"query\":"}"#;
    let script = Script::new(vec![sse(&[STARTED, chunk, FINISHED]), text_run("x")]);
    let agent = p.agent(&script, AgUiLimits::default());
    let _ = agent.send("go").await;
    for m in agent.messages() {
        if let AgUiMessage::Assistant { tool_calls, .. } = m {
            for c in tool_calls {
                let v: Value = serde_json::from_str(&c.function.arguments).unwrap();
                assert!(v.is_object());
            }
        }
    }
    assert!(p.executed().is_empty());
}

// ---------------------------------------------------------------------------
// The SSE decoder against the WHATWG rules.

fn decode(chunks: &[&[u8]]) -> Vec<String> {
    let mut decoder = SseDecoder::new(1024);
    let mut events = Vec::new();
    for c in chunks {
        decoder.push(c, &mut events).unwrap();
    }
    events
}

#[test]
fn holds_sse_whatwg_rules() {
    // `data` without a colon is an empty value; one leading space removed.
    assert_eq!(decode(&[b"data\n\n"]), [""]);
    assert_eq!(decode(&[b"data\ndata\n\n"]), ["\n"]);
    assert_eq!(decode(&[b"data:  two\n\n"]), [" two"]);
    assert_eq!(decode(&[b"data:x\n\n"]), ["x"]);
    // Field names are case-sensitive; unknown fields, event, id, retry and
    // comments are ignored; an event without data is not dispatched.
    assert_eq!(
        decode(&[b"Data: x\nevent: e\nid: 1\0\nretry: zz\n: c\n\n"]),
        Vec::<String>::new()
    );
    // CR, LF, CRLF, and CRLF split across chunks is one line end.
    assert_eq!(decode(&[b"data: a\r\r"]), ["a"]);
    assert_eq!(decode(&[b"data: a\r", b"\n\r\n"]), ["a"]);
    assert_eq!(decode(&[b"data: a\r", b"\r"]), ["a"]);
    // One BOM is skipped, even split; a second one is part of the line.
    assert_eq!(decode(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\n"]), ["a"]);
    assert_eq!(
        decode(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n"]),
        ["b"]
    );
    // An unterminated last event is dropped (the caller sees StreamEnded).
    assert_eq!(decode(&[b"data: a\n\ndata: b\n"]), ["a"]);
}

// D5b. The user presses stop as the page starts running the calls.

/// A chat panel's stop button, pressed when the status turns
/// `RunningTools` (here: a listener cancels then). The docs: cancelling
/// "ends the turn at once ... a procedure call in flight is dropped, and
/// answered CANCELLED". `invoke_in_page` polls the call before the
/// cancellation, so a call that completes on its first poll runs anyway.
#[tokio::test]
async fn d5b_cancelling_when_the_tools_start_runs_no_tool() {
    let p = page();
    let script = Script::new(vec![run_with(&[("c1", "devices__list", "{}")], FINISHED)]);
    let agent = p.agent(&script, AgUiLimits::default());
    let stop = agent.clone();
    let _subscription = agent.on_change(move |change| {
        if change == AgUiChange::Status && stop.status() == AgUiStatus::RunningTools {
            stop.cancel();
        }
    });
    let result = agent.send("list").await;
    assert_eq!(result, Err(AgUiError::Cancelled));
    assert!(
        p.executed().is_empty(),
        "cancelled before the call started, yet it executed {:?}",
        p.executed()
    );
}

// D9. A decoding error is reported at the wrong event number.

/// `AgUiError::Malformed::event`: "1-based number of the offending
/// event". The decoder takes a whole chunk before the assembler counts
/// its events, so a bad line after three good events in the same chunk
/// is reported at event 1.
#[test]
fn d9_a_line_that_is_not_utf8_is_reported_at_its_own_event_number() {
    let mut bytes = format!(
        "data: {STARTED}\n\ndata: {{\"type\":\"STEP_STARTED\"}}\n\ndata: {{\"type\":\"STEP_FINISHED\"}}\n\ndata: "
    )
    .into_bytes();
    bytes.extend_from_slice(b"\xFF\n\n");
    let error = surface_runtime::agui::run::read_stream(&bytes, AgUiLimits::default()).unwrap_err();
    let AgUiError::Malformed { event, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*event, 4, "{error}");
}

// D10. Whether a run succeeds depends on how its bytes were chunked.

/// Bytes after `RUN_FINISHED` are ignored when they arrive in a later
/// chunk (the read stops at `RUN_FINISHED`), but fail the whole run when
/// they share its chunk: the decoder decodes the whole chunk before the
/// assembler sees `RUN_FINISHED`. The same body, split differently (any
/// proxy may re-chunk it), succeeds or fails — here an oversized trailing
/// line turns a finished run into `TooLarge`, and its call is not run.
#[tokio::test]
async fn d10_the_same_body_succeeds_however_it_is_chunked() {
    let limits = AgUiLimits::default().with_max_event_bytes(1024);
    let head = {
        let mut events = vec![STARTED.to_string()];
        events.extend(call_events("c1", "devices__list", "{}"));
        events.push(FINISHED.to_string());
        events
            .iter()
            .map(|e| format!("data: {e}\n\n"))
            .collect::<String>()
    };
    let tail = format!(": {}\n", "z".repeat(4096));
    let p = page();
    let split = Script::new(vec![
        Body::Chunks(vec![head.clone().into_bytes(), tail.clone().into_bytes()]),
        text_run("done"),
    ]);
    let split_result = p.agent(&split, limits).send("a").await;
    assert!(split_result.is_ok(), "{split_result:?}");
    let p = page();
    let whole = Script::new(vec![
        Body::Chunks(vec![format!("{head}{tail}").into_bytes()]),
        text_run("done"),
    ]);
    let whole_result = p.agent(&whole, limits).send("a").await;
    assert_eq!(
        whole_result.as_ref().map(|t| t.runs),
        Ok(2),
        "split in two chunks the run succeeds; in one chunk: {whole_result:?}"
    );
}

// D11. `HttpAgUiTransport` ignores `AgUiLimits::idle_timeout`.

/// The transport contract (`agui::transport` module docs): "bound ... each
/// wait for bytes by `AgUiLimits::idle_timeout`". `HttpAgUiTransport` uses
/// the reqwest client's read timeout, fixed at 60 s when it was built; the
/// limits given to the agent are not applied (and a timeout it does report
/// as `idle` carries `limits.idle_timeout`, a value that was never in
/// force). Here: idle limit 200 ms, the server silent for 1.5 s — the run
/// succeeds.
#[tokio::test]
async fn d11_the_http_transport_applies_the_idle_timeout_it_is_given() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/agent", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        let mut buffer = [0u8; 8192];
        // Read the head and the body (content-length).
        loop {
            let n = socket.read(&mut buffer).await.unwrap();
            seen.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&seen).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if seen.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        socket
            .write_all(format!("data: {STARTED}\n\n").as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let text = r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"late"}"#;
        let _ = socket
            .write_all(format!("data: {text}\n\ndata: {FINISHED}\n\n").as_bytes())
            .await;
    });
    let p = page();
    let limits = AgUiLimits::default()
        .with_idle_timeout(Duration::from_millis(200))
        .with_run_timeout(Duration::from_secs(10));
    let agent = AgUiAgent::new(
        &p.page,
        surface_runtime::agui::HttpAgUiTransport::new(&url),
        AgUiOptions::default().with_limits(limits),
    );
    let result = agent.send("hi").await;
    assert_eq!(
        result.map(|t| t.text),
        Err(AgUiError::Timeout {
            what: "idle",
            timeout: Duration::from_millis(200)
        }),
        "1.5 s without a byte under a 200 ms idle timeout"
    );
}
