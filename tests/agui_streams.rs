//! The AG-UI client against streams a real agent would not send — and
//! against the recorded streams of a real one (`tests/fixtures/agui/`,
//! `@ag-ui/mastra` through the official `HttpAgent`) replayed byte for
//! byte: every malformed, oversized, slow, refused or cut stream fails the
//! turn with an error naming what was wrong, runs no tool and leaves the
//! thread as it was.

#[path = "../examples/devices/app.rs"]
#[allow(dead_code)]
mod app;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::agui::{
    AgUiAgent, AgUiCallOutcome, AgUiError, AgUiLimits, AgUiMessage, AgUiOptions, HttpAgUiTransport,
};
use agent_surface::page::PageSurface;
use agent_surface::testing::TestSurface;
use agent_surface::ErrorCode;
use app::{Device, DevicesView};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One canned HTTP answer: status line, headers and body chunks (each
/// written separately), then the connection closes (or stalls).
#[derive(Clone)]
struct Answer {
    head: String,
    chunks: Vec<Vec<u8>>,
    stall: bool,
}

impl Answer {
    fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::with("200 OK", "text/event-stream", body)
    }

    fn with(status: &str, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            head: format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
            ),
            chunks: vec![body.into()],
            stall: false,
        }
    }
}

/// A server answering each connection with the next [`Answer`]; keeps the
/// request bodies.
struct Server {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

async fn serve(answers: Vec<Answer>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/agent", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let kept = requests.clone();
    tokio::spawn(async move {
        for answer in answers {
            let (mut socket, _) = listener.accept().await.unwrap();
            let body = read_request(&mut socket).await;
            kept.lock().unwrap().push(body);
            socket.write_all(answer.head.as_bytes()).await.unwrap();
            for chunk in &answer.chunks {
                if socket.write_all(chunk).await.is_err() {
                    break;
                }
            }
            if answer.stall {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
        }
    });
    Server { url, requests }
}

/// The JSON body of one request (by its content-length).
async fn read_request(socket: &mut tokio::net::TcpStream) -> Value {
    let mut data = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let n = socket.read(&mut buffer).await.unwrap();
        data.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&data).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return serde_json::from_slice(&data[end + 4..end + 4 + length]).unwrap();
            }
        }
        if n == 0 {
            panic!("the client closed before sending its request");
        }
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/agui/{name}.sse",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

struct Console {
    surface: TestSurface,
    page: PageSurface,
    _registrations: app::Registrations,
}

fn console() -> Console {
    let surface = TestSurface::new(app::api::authority());
    let view = DevicesView::default();
    view.set_rows(vec![Device {
        id: "dev-1".into(),
        name: "Device dev-1".into(),
        status: "active".into(),
    }]);
    let registrations = app::register(surface.registry(), &view).unwrap();
    view.select(vec!["dev-1".into()]).unwrap();
    let page = PageSurface::new(surface.registry().clone());
    Console {
        surface,
        page,
        _registrations: registrations,
    }
}

impl Console {
    fn agent(&self, server: &Server, limits: AgUiLimits) -> AgUiAgent {
        let options = AgUiOptions::default().with_limits(limits);
        AgUiAgent::new(&self.page, HttpAgUiTransport::new(&server.url), options)
    }

    /// Sends one message over `answers` and returns the error; checks that
    /// nothing ran and the thread holds only the user's message.
    async fn fails(&self, answers: Vec<Answer>, limits: AgUiLimits) -> AgUiError {
        let server = serve(answers).await;
        let agent = self.agent(&server, limits);
        let error = agent.send("disable").await.unwrap_err();
        assert!(self.surface.executor().calls().is_empty());
        assert!(self.page.held_confirmations().is_empty());
        let messages = agent.messages();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(matches!(messages[0], AgUiMessage::User { .. }));
        error
    }
}

const STARTED: &str = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
const FINISHED: &str = "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";

#[tokio::test]
async fn an_event_that_is_not_json_is_malformed_with_its_number() {
    let body = format!("{STARTED}data: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\n\n{FINISHED}");
    let error = console()
        .fails(vec![Answer::sse(body)], AgUiLimits::default())
        .await;
    assert_eq!(
        error,
        AgUiError::Malformed {
            event: 2,
            reason: "not JSON (line 1, column 29)".into()
        }
    );
}

#[tokio::test]
async fn a_known_event_missing_a_field_is_malformed() {
    let body = format!(
        "{STARTED}data: {{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c1\"}}\n\n{FINISHED}"
    );
    let error = console()
        .fails(vec![Answer::sse(body)], AgUiLimits::default())
        .await;
    assert_eq!(
        error.to_string(),
        "the agent's stream is malformed at event 2: a TOOL_CALL_START event: missing field \
         `toolCallName`"
    );
}

#[tokio::test]
async fn an_event_over_the_limit_is_refused_before_it_is_buffered() {
    let huge = format!(
        "{STARTED}data: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\"delta\":\"{}\"}}\n\n{FINISHED}",
        "x".repeat(70_000)
    );
    let limits = AgUiLimits::default().with_max_event_bytes(64 * 1024);
    let error = console().fails(vec![Answer::sse(huge)], limits).await;
    assert_eq!(
        error,
        AgUiError::TooLarge {
            what: "event bytes",
            limit: 64 * 1024
        }
    );
}

#[tokio::test]
async fn a_response_over_the_limit_is_cut_off() {
    let chunk =
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"0123456789\"}\n\n";
    let mut answer = Answer::sse(STARTED);
    answer
        .chunks
        .extend(std::iter::repeat_n(chunk.as_bytes().to_vec(), 2000));
    let limits = AgUiLimits::default().with_max_response_bytes(32 * 1024);
    let error = console().fails(vec![answer], limits).await;
    assert_eq!(
        error,
        AgUiError::TooLarge {
            what: "response bytes",
            limit: 32 * 1024
        }
    );
}

#[tokio::test]
async fn too_many_tool_calls_in_one_run_are_refused() {
    let mut body = STARTED.to_string();
    for i in 0..5 {
        body.push_str(&format!(
            "data: {{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c{i}\",\"toolCallName\":\"devices__list\"}}\n\n"
        ));
    }
    body.push_str(FINISHED);
    let limits = AgUiLimits::default().with_max_tool_calls(4);
    let error = console().fails(vec![Answer::sse(body)], limits).await;
    assert_eq!(
        error,
        AgUiError::TooLarge {
            what: "tool calls",
            limit: 4
        }
    );
}

#[tokio::test]
async fn arguments_over_the_limit_are_refused() {
    let mut body = STARTED.to_string();
    body.push_str("data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c1\",\"toolCallName\":\"devices__disable\"}\n\n");
    let piece = format!(
        "data: {{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"c1\",\"delta\":\"{}\"}}\n\n",
        "y".repeat(100_000)
    );
    for _ in 0..3 {
        body.push_str(&piece);
    }
    body.push_str(FINISHED);
    let error = console()
        .fails(vec![Answer::sse(body)], AgUiLimits::default())
        .await;
    assert_eq!(
        error,
        AgUiError::TooLarge {
            what: "arguments bytes",
            limit: agent_surface::export::MAX_ARGUMENTS_BYTES
        }
    );
}

#[tokio::test]
async fn a_stream_that_ends_before_run_finished_runs_nothing() {
    // The recorded `drop` stream, ended cleanly this time (connection
    // closed after the bytes): still no RUN_FINISHED.
    let error = console()
        .fails(vec![Answer::sse(fixture("drop"))], AgUiLimits::default())
        .await;
    assert_eq!(error, AgUiError::StreamEnded { events: 3 });
}

#[tokio::test]
async fn protobuf_or_json_instead_of_an_event_stream_is_refused() {
    let error = console()
        .fails(
            vec![Answer::with(
                "200 OK",
                "application/vnd.ag-ui.event+proto",
                vec![0, 0, 0, 1, 8],
            )],
            AgUiLimits::default(),
        )
        .await;
    assert_eq!(
        error,
        AgUiError::NotEventStream {
            content_type: "application/vnd.ag-ui.event+proto".into()
        }
    );
}

#[tokio::test]
async fn an_http_error_keeps_the_start_of_its_body_escaped() {
    let body = format!("agent down\n\u{202e}{}", "z".repeat(10_000));
    let error = console()
        .fails(
            vec![Answer::with("503 Service Unavailable", "text/plain", body)],
            AgUiLimits::default(),
        )
        .await;
    let AgUiError::Status { status, body } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*status, 503);
    assert!(body.starts_with("agent down\\u{a}\\u{202e}zzz"), "{body}");
    // 500 characters of the body, two of them escaped (`\u{a}`: 4 more,
    // `\u{202e}`: 7 more), then `…`.
    assert_eq!(
        body.chars().count(),
        agent_surface::agui::MAX_FOREIGN_TEXT_CHARS + 4 + 7 + 1
    );
}

#[tokio::test]
async fn an_agent_that_stops_sending_times_out() {
    let mut answer = Answer::sse(STARTED);
    answer.stall = true;
    let limits = AgUiLimits::default().with_run_timeout(Duration::from_millis(500));
    let error = console().fails(vec![answer], limits).await;
    assert_eq!(
        error,
        AgUiError::Timeout {
            what: "run",
            timeout: Duration::from_millis(500)
        }
    );
}

#[tokio::test]
async fn the_recorded_dotted_name_stream_calls_an_undeclared_tool_which_is_refused() {
    // `disable-dotted`: the agent calls `devices_disable`, a name this page
    // never declared (it declares `devices__disable`).
    let console = console();
    let server = serve(vec![Answer::sse(fixture("disable-dotted"))]).await;
    let agent = console.agent(&server, AgUiLimits::default());
    let turn = agent.send("disable").await.expect("the run completes");
    assert_eq!(turn.runs, 1);
    assert_eq!(turn.calls[0].tool_name, "devices_disable");
    assert_eq!(turn.calls[0].arguments, r#"{"reason":"maintenance"}"#);
    let AgUiCallOutcome::Refused(result) = &turn.calls[0].outcome else {
        panic!("{:?}", turn.calls[0].outcome);
    };
    assert_eq!(
        result.error().map(|e| e.code.clone()),
        Some(ErrorCode::CapabilityNotFound)
    );
    assert!(console.surface.executor().calls().is_empty());
    // What the run declared: the live catalog, reduced schemas, no ids.
    let request = &server.requests.lock().unwrap()[0];
    assert_eq!(request["protocolVersion"], json!("1.0"));
    let disable = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == json!("devices__disable"))
        .expect("disable is declared");
    assert!(disable["parameters"]["properties"]
        .get("deviceIds")
        .is_none());
    assert!(disable["parameters"]["properties"].get("reason").is_some());
}

#[tokio::test]
async fn the_recorded_turn_replayed_sends_the_tool_message_the_agent_expects() {
    // `disable-1` then `disable-2`, as the real agent sent them.
    let console = console();
    console
        .surface
        .executor()
        .respond("devices.disable", json!({"disabled": ["dev-1"]}));
    let one = String::from_utf8(fixture("disable-1"))
        .unwrap()
        .replace("devices_disable", "devices__disable");
    let server = serve(vec![Answer::sse(one), Answer::sse(fixture("disable-2"))]).await;
    let agent = console.agent(&server, AgUiLimits::default());
    let page = console.page.clone();
    let approve = async move {
        loop {
            if let Some(held) = page.held_confirmations().into_iter().next() {
                page.approve(&held.confirmation_id).unwrap();
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let (turn, ()) = tokio::join!(agent.send("disable"), approve);
    let turn = turn.unwrap();
    assert_eq!(turn.runs, 2);
    assert_eq!(
        turn.text,
        r#"The tool answered devices_disable: {"disabled":["dev-1","dev-2"]}"#
    );
    let requests = server.requests.lock().unwrap();
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], json!("assistant"));
    assert_eq!(
        messages[1]["toolCalls"],
        json!([{"id": "call-disable-1", "type": "function",
                "function": {"name": "devices__disable", "arguments": "{\"reason\":\"maintenance\"}"}}])
    );
    assert_eq!(messages[2]["role"], json!("tool"));
    assert_eq!(messages[2]["toolCallId"], json!("call-disable-1"));
    assert_eq!(messages[2]["content"], json!("{\"disabled\":[\"dev-1\"]}"));
    assert_eq!(requests[1]["threadId"], requests[0]["threadId"]);
    assert_ne!(requests[1]["runId"], requests[0]["runId"]);
}

#[tokio::test]
async fn the_applications_context_and_state_go_with_every_run() {
    let console = console();
    let text = format!(
        "{STARTED}data: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m1\",\"delta\":\"ok\"}}\n\n{FINISHED}"
    );
    let server = serve(vec![Answer::sse(text)]).await;
    let options = AgUiOptions::default()
        .with_context(|snapshot| {
            vec![agent_surface::agui::AgUiContext {
                description: "The page's route and surface version".into(),
                value: format!("surface {}", snapshot.surface_version),
            }]
        })
        .with_state(|snapshot| json!({"procedures": snapshot.procedures.len()}))
        .with_forwarded_props(json!({"tenant": "t-1"}));
    let agent = AgUiAgent::new(&console.page, HttpAgUiTransport::new(&server.url), options);
    let turn = agent.send("hello").await.unwrap();
    assert_eq!(turn.text, "ok");
    let request = &server.requests.lock().unwrap()[0];
    let version = console.surface.registry().surface_version();
    assert_eq!(
        request["context"],
        json!([{"description": "The page's route and surface version", "value": format!("surface {version}")}])
    );
    assert_eq!(request["state"], json!({"procedures": 3}));
    assert_eq!(request["forwardedProps"], json!({"tenant": "t-1"}));
    assert_eq!(request["messages"][0]["role"], json!("user"));
    assert_eq!(request["messages"][0]["content"], json!("hello"));
}

#[tokio::test]
async fn in_meta_mode_the_run_declares_two_tools_and_surface_act_runs_the_named_one() {
    let console = console();
    console
        .surface
        .executor()
        .respond("devices.list", json!({"devices": ["dev-1"]}));
    let call = format!(
        "{STARTED}\
         data: {{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c1\",\"toolCallName\":\"surface_act\"}}\n\n\
         data: {{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"c1\",\"delta\":\"{{\\\"tool\\\":\\\"devices__list\\\",\\\"arguments\\\":{{}}}}\"}}\n\n\
         data: {{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c1\"}}\n\n{FINISHED}"
    );
    let answer = format!(
        "{STARTED}data: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m2\",\"delta\":\"listed\"}}\n\n{FINISHED}"
    );
    let server = serve(vec![Answer::sse(call), Answer::sse(answer)]).await;
    let options = AgUiOptions::default().with_export(agent_surface::export::ExportOptions {
        mode: agent_surface::export::ToolMode::Meta,
        ..Default::default()
    });
    let agent = AgUiAgent::new(&console.page, HttpAgUiTransport::new(&server.url), options);
    let turn = agent.send("list").await.unwrap();
    assert_eq!(turn.runs, 2);
    assert_eq!(
        turn.calls[0].outcome.result().and_then(|r| r.output()),
        Some(&json!({"devices": ["dev-1"]}))
    );
    let requests = server.requests.lock().unwrap();
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["surface_discover", "surface_act"]);
    assert_eq!(
        requests[1]["messages"][2]["content"],
        json!("{\"devices\":[\"dev-1\"]}")
    );
}

#[tokio::test]
async fn the_agent_is_busy_from_send_and_streaming_is_cleared_with_a_notice() {
    let console = console();
    let text = format!(
        "{STARTED}data: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m1\",\"delta\":\"ok\"}}\n\n{FINISHED}"
    );
    let server = serve(vec![Answer::sse(text)]).await;
    let agent = console.agent(&server, AgUiLimits::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (watch, log) = (agent.clone(), seen.clone());
    let _subscription = agent.on_change(move |change| {
        if change == agent_surface::agui::AgUiChange::Streaming {
            log.lock().unwrap().push(watch.streaming().map(|s| s.text));
        }
    });
    let turn = agent.send("hello");
    assert_eq!(agent.status(), agent_surface::agui::AgUiStatus::Streaming);
    turn.await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&Some("ok".to_string())));
    assert_eq!(seen.last(), Some(&None));
    assert_eq!(agent.status(), agent_surface::agui::AgUiStatus::Idle);
}
