//! The `browser` feature's transports in a real browser (headless Chromium
//! via `wasm-bindgen-test-runner`), against `tests/browser-fixture`:
//! `FetchOrpcClient` (wire codec, limits, redirects, timeout, cancellation
//! through `AbortController`), `SessionSocket` (announcements, calls,
//! disconnect, reconnect under a new connection id, backoff, giving up)
//! and `BrowserTimer`.
//!
//! The fixture's address is compiled in from `SURFACE_BROWSER_FIXTURE`
//! (`http://127.0.0.1:PORT`); `scripts/test` starts the fixture and sets
//! it:
//!
//! ```text
//! SURFACE_BROWSER_FIXTURE=http://127.0.0.1:PORT \
//!   CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!   CHROMEDRIVER=/usr/bin/chromedriver \
//!   cargo test -p surface-runtime --target wasm32-unknown-unknown --features browser \
//!   --test browser_transports
//! ```
#![cfg(target_arch = "wasm32")]

mod common;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{authority, consumer, procedure};
use futures_util::future::{select, Either};
use serde_json::{json, Value};
use surface_runtime::bridge::{CallMethod, CallOptions, ClientLimits, OrpcCallError, OrpcClient};
use surface_runtime::browser::{
    sleep, Backoff, BrowserTimer, FetchOrpcClient, SessionSocket, SessionSocketOptions,
    SocketEvent, StopReason,
};
use surface_runtime::host::{
    BrowserSurfaceIdentity, BrowserSurfaceSession, BrowserSurfaceSessionOptions,
};
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentInvocation, AgentProcedureBinding, AgentProcedureExecutor, Cancellation, ExecuteRequest,
    ExecutionError, SurfaceRegistry,
};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use web_sys::{MessageEvent, WebSocket};

wasm_bindgen_test_configure!(run_in_browser);

fn fixture() -> &'static str {
    option_env!("SURFACE_BROWSER_FIXTURE").unwrap_or_else(|| {
        panic!(
            "SURFACE_BROWSER_FIXTURE is not set at build time: start `cargo run -p browser-fixture` \
             and build with SURFACE_BROWSER_FIXTURE=http://127.0.0.1:PORT (scripts/test does both)"
        )
    })
}

fn rpc() -> String {
    format!("{}/rpc", fixture())
}

fn ws_base() -> String {
    fixture().replacen("http://", "ws://", 1)
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

async fn call(
    client: &FetchOrpcClient,
    path: &str,
    input: Option<Value>,
) -> Result<Value, OrpcCallError> {
    client.call(path, input, CallOptions::default()).await
}

/// A client whose base carries a query (`…?k=v&x=`): the procedure path
/// the client appends lands in the ignored `x` parameter, so the fixture
/// sees the query.
fn with_query(path_and_query: &str, limits: ClientLimits) -> FetchOrpcClient {
    FetchOrpcClient::with_limits(format!("{}{path_and_query}&x=", fixture()), limits)
}

/// What the fixture saw of an `answer/hang` request.
async fn hang_log(id: &str) -> Value {
    with_query(&format!("/log?id={id}"), ClientLimits::default())
        .call("end", None, CallOptions::default())
        .await
        .unwrap()
}

// ----- fetch ------------------------------------------------------------------

#[wasm_bindgen_test]
async fn fetch_post_sends_the_orpc_envelope_and_headers_call_headers_replace_client_headers() {
    let client = FetchOrpcClient::new(rpc())
        .with_header("authorization", "Bearer stale")
        .with_header("x-app", "console");
    let out = client
        .call(
            "echo.request",
            Some(json!({"deviceIds": ["dev-1"], "note": null})),
            CallOptions {
                headers: vec![
                    ("Authorization".into(), "Bearer fresh".into()),
                    ("x-agent-invocation-id".into(), "inv-1".into()),
                ],
                ..CallOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(out["method"], "POST");
    assert_eq!(out["query"], Value::Null);
    assert_eq!(
        out["body"],
        json!({"json": {"deviceIds": ["dev-1"], "note": null}})
    );
    let headers = &out["headers"];
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["authorization"], "Bearer fresh");
    assert_eq!(headers["x-app"], "console");
    assert_eq!(headers["x-agent-invocation-id"], "inv-1");
    // No input: the `{}` envelope (oRPC's undefined).
    let out = call(&client, "echo.request", None).await.unwrap();
    assert_eq!(out["body"], json!({}));
}

#[wasm_bindgen_test]
async fn fetch_get_carries_the_data_query_and_long_input_falls_back_to_post() {
    let client = FetchOrpcClient::new(rpc());
    let get = CallOptions {
        method: CallMethod::Get,
        ..CallOptions::default()
    };
    let out = client
        .call("echo.request", Some(json!({"limit": 2})), get.clone())
        .await
        .unwrap();
    assert_eq!(out["method"], "GET");
    assert_eq!(
        out["query"],
        "data=%7B%22json%22%3A%7B%22limit%22%3A2%7D%7D"
    );
    let long = "x".repeat(2083);
    let out = client
        .call("echo.request", Some(json!({ "q": long })), get)
        .await
        .unwrap();
    assert_eq!(out["method"], "POST");
    assert_eq!(out["body"]["json"]["q"].as_str().map(str::len), Some(2083));
}

#[wasm_bindgen_test]
async fn fetch_decodes_success_meta_void_errors_and_non_orpc_bodies() {
    let client = FetchOrpcClient::new(rpc());
    assert_eq!(
        call(&client, "answer.ok", None).await.unwrap(),
        json!({"ok": true, "bytes": "9007199254740993", "tags": ["a", "b"]})
    );
    assert_eq!(
        call(&client, "answer.void", None).await.unwrap(),
        Value::Null
    );
    match call(&client, "answer.orpc-error", None).await.unwrap_err() {
        OrpcCallError::Orpc(e) => {
            assert_eq!(
                (e.defined, e.code.as_str(), e.status, e.data),
                (true, "NOT_FOUND", 404, Some(json!({"deviceId": "nope"})))
            );
        }
        other => panic!("{other:?}"),
    }
    match call(&client, "answer.text404", None).await.unwrap_err() {
        OrpcCallError::UnexpectedResponse {
            status,
            content_type,
            body,
            ..
        } => {
            assert_eq!(status, 404);
            assert_eq!(content_type.as_deref(), Some("text/plain"));
            assert_eq!(body, "Not found");
        }
        other => panic!("{other:?}"),
    }
}

#[wasm_bindgen_test]
async fn fetch_never_follows_a_redirect() {
    let err = call(
        &FetchOrpcClient::new(rpc()),
        "answer.redirect",
        Some(json!({})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        OrpcCallError::Redirect {
            status: 0,
            location: None
        }
    );
    assert!(err.may_have_executed());
}

#[wasm_bindgen_test]
async fn fetch_response_cap_is_exact_for_declared_and_streamed_bodies() {
    let limits = ClientLimits::default().with_max_response_bytes(1024);
    for (kind, declared) in [("sized", true), ("sized-stream", false)] {
        let sized = |bytes: usize| with_query(&format!("/rpc/answer/{kind}?bytes={bytes}"), limits);
        // Exactly at the cap: accepted.
        let exact = sized(1024)
            .call("end", None, CallOptions::default())
            .await
            .unwrap();
        assert_eq!(exact.as_str().map(str::len), Some(1024 - 11), "{kind}");
        // One byte over: refused (before reading when declared).
        let err = sized(1025)
            .call("end", None, CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            OrpcCallError::ResponseTooLarge {
                status: 200,
                limit: 1024,
                declared_length: declared.then_some(1025)
            },
            "{kind}"
        );
        assert!(err.may_have_executed());
    }
}

#[wasm_bindgen_test]
async fn fetch_total_timeout_ends_a_trickling_body_and_aborts_a_silent_server() {
    let timeout = Duration::from_millis(400);
    let client = FetchOrpcClient::with_limits(rpc(), ClientLimits::default().with_timeout(timeout));
    let start = now_ms();
    let err = call(&client, "answer.trickle", None).await.unwrap_err();
    assert_eq!(err, OrpcCallError::Timeout { timeout });
    assert!(now_ms() - start >= 399.0, "{}", now_ms() - start);
    // A server that never answers: the timeout aborts the request, and the
    // fixture sees the client go away.
    let id = format!("timeout-{}", (js_sys::Math::random() * 1e12) as u64);
    let hang = with_query(
        &format!("/rpc/answer/hang?id={id}"),
        ClientLimits::default().with_timeout(timeout),
    );
    assert_eq!(
        hang.call("end", None, CallOptions::default())
            .await
            .unwrap_err(),
        OrpcCallError::Timeout { timeout }
    );
    wait_dropped(&id).await;
}

async fn wait_dropped(id: &str) {
    for _ in 0..50 {
        let log = hang_log(id).await;
        assert_eq!(log["started"], true, "{id}: {log}");
        if log["dropped"] == true {
            return;
        }
        sleep(Duration::from_millis(100)).await;
    }
    panic!("the fixture never saw request {id} aborted");
}

#[wasm_bindgen_test]
async fn fetch_cancellation_aborts_the_request_through_abort_controller() {
    let id = format!("cancel-{}", (js_sys::Math::random() * 1e12) as u64);
    let client = with_query(
        &format!("/rpc/answer/hang?id={id}"),
        ClientLimits::default(),
    );
    let cancellation = Cancellation::new();
    let trigger = cancellation.clone();
    js_sys::futures::spawn_local(async move {
        sleep(Duration::from_millis(150)).await;
        trigger.cancel();
    });
    let err = client
        .call(
            "end",
            None,
            CallOptions {
                cancellation: Some(cancellation.clone()),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err, OrpcCallError::Cancelled);
    wait_dropped(&id).await;
    // Already cancelled: nothing is sent at all.
    let err = FetchOrpcClient::new(rpc())
        .call(
            "echo.request",
            None,
            CallOptions {
                cancellation: Some(cancellation),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err, OrpcCallError::Cancelled);
}

#[wasm_bindgen_test]
async fn fetch_refused_connection_is_a_transport_error_and_bad_headers_are_invalid_requests() {
    let err = call(&FetchOrpcClient::new("http://127.0.0.1:1/rpc"), "a.b", None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, OrpcCallError::Transport { message } if message.starts_with("TypeError")),
        "{err:?}"
    );
    assert!(
        err.may_have_executed(),
        "the browser cannot tell refused from lost"
    );
    let err = call(
        &FetchOrpcClient::new(rpc()).with_header("bad name", "x"),
        "echo.request",
        None,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, OrpcCallError::InvalidRequest { message } if message.contains("header `bad name`")),
        "{err:?}"
    );
    let err = call(&FetchOrpcClient::new(rpc()), "a..b", None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, OrpcCallError::InvalidRequest { .. }),
        "{err:?}"
    );
}

// ----- timer ------------------------------------------------------------------

#[wasm_bindgen_test]
async fn sleep_waits_at_least_its_duration_and_a_dropped_sleep_never_fires() {
    let start = now_ms();
    sleep(Duration::from_millis(120)).await;
    assert!(now_ms() - start >= 119.0, "{}", now_ms() - start);
    // A sleep raced and lost is dropped (clearTimeout); the test finishing
    // without "closure invoked after being dropped" shows it never fired.
    let short = std::pin::pin!(sleep(Duration::from_millis(10)));
    let long = std::pin::pin!(sleep(Duration::from_millis(50)));
    assert!(matches!(select(short, long).await, Either::Left(_)));
    sleep(Duration::from_millis(100)).await;
}

/// An executor that waits (60 s) and keeps each call's cancellation
/// signal, to check that an aborted call's signal fired (its future is
/// dropped, so it cannot report it itself).
#[derive(Default)]
struct Waiting {
    started: Mutex<Vec<(String, Cancellation)>>,
}

impl Waiting {
    fn started(&self) -> Vec<String> {
        self.started
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn cancelled(&self) -> Vec<String> {
        self.started
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, c)| c.is_cancelled())
            .map(|(id, _)| id.clone())
            .collect()
    }
}

impl AgentProcedureExecutor for Waiting {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        self.started.lock().unwrap().push((
            request.info.invocation_id.to_string(),
            request.info.cancellation.clone(),
        ));
        Box::pin(async move {
            sleep(Duration::from_secs(60)).await;
            Ok(json!({"late": true}))
        })
    }
}

#[wasm_bindgen_test]
async fn browser_timer_bounds_registry_calls() {
    let registry = SurfaceRegistry::builder(authority())
        .timer(Arc::new(BrowserTimer))
        .timeout(Duration::from_millis(200))
        .build();
    let executor = Arc::new(Waiting::default());
    registry.set_procedure_executor(executor.clone());
    let _list = registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            registry.authority(),
            "devices.list",
        )))
        .unwrap();
    let start = now_ms();
    let result = registry
        .invoke(
            AgentInvocation::new("slow-1", "domain:devices.list"),
            &consumer(),
        )
        .await;
    assert_eq!(
        result.error().map(|e| e.code.as_str()),
        Some("TIMEOUT"),
        "{result:?}"
    );
    assert!(now_ms() - start >= 199.0);
    assert_eq!(executor.cancelled(), ["slow-1"]);
}

// ----- WebSocket session --------------------------------------------------------

/// The test's side of the fixture relay: plays the agent host.
struct Control {
    ws: WebSocket,
    inbox: Rc<RefCell<VecDeque<String>>>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

impl Control {
    async fn open(room: &str) -> Control {
        let ws = WebSocket::new(&format!("{}/ws/control?room={room}", ws_base())).unwrap();
        let inbox = Rc::new(RefCell::new(VecDeque::new()));
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
            let inbox = inbox.clone();
            move |event: MessageEvent| {
                if let Some(text) = event.data().as_string() {
                    inbox.borrow_mut().push_back(text);
                }
            }
        });
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        for _ in 0..100 {
            if ws.ready_state() == WebSocket::OPEN {
                break;
            }
            sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(ws.ready_state(), WebSocket::OPEN, "control socket");
        Control {
            ws,
            inbox,
            _on_message: on_message,
        }
    }

    /// The next frame from the relay, as JSON (5 s at most).
    async fn next(&self) -> Value {
        for _ in 0..250 {
            if let Some(text) = self.inbox.borrow_mut().pop_front() {
                return serde_json::from_str(&text).unwrap();
            }
            sleep(Duration::from_millis(20)).await;
        }
        panic!("no frame from the relay within 5 s");
    }

    /// Nothing arrives for `ms`.
    async fn quiet_for(&self, ms: u64) {
        sleep(Duration::from_millis(ms)).await;
        assert!(
            self.inbox.borrow().is_empty(),
            "unexpected frames: {:?}",
            self.inbox.borrow()
        );
    }

    fn send(&self, value: &Value) {
        self.ws.send_with_str(&value.to_string()).unwrap();
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        self.ws.set_onmessage(None);
        let _ = self.ws.close();
    }
}

fn room() -> String {
    format!("room-{}", (js_sys::Math::random() * 1e12) as u64)
}

struct Tab {
    registry: SurfaceRegistry,
    session: BrowserSurfaceSession,
    executor: Arc<Waiting>,
    events: Rc<RefCell<Vec<SocketEvent>>>,
}

fn tab() -> Tab {
    let registry = SurfaceRegistry::new(authority());
    let executor = Arc::new(Waiting::default());
    registry.set_procedure_executor(executor.clone());
    let session = BrowserSurfaceSession::new(BrowserSurfaceSessionOptions::new(
        registry.clone(),
        BrowserSurfaceIdentity::new("console", "build-1", "sess-1", "tab-1"),
        consumer(),
    ));
    Tab {
        registry,
        session,
        executor,
        events: Rc::default(),
    }
}

fn open_socket(
    tab: &Tab,
    room: &str,
    options: impl FnOnce(SessionSocketOptions) -> SessionSocketOptions,
) -> SessionSocket {
    let events = tab.events.clone();
    SessionSocket::open(
        tab.session.clone(),
        options(SessionSocketOptions::new(format!(
            "{}/ws/session?room={room}",
            ws_base()
        ))),
        move |event| events.borrow_mut().push(event.clone()),
    )
    .unwrap()
}

fn call_for(announcement: &Value, invocation_id: &str, capability: &str, input: Value) -> Value {
    let procedure = announcement["snapshot"]["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["procedureId"] == capability)
        .unwrap_or_else(|| panic!("{capability} announced: {announcement}"));
    json!({
        "protocolVersion": 1,
        "type": "surface-call",
        "identity": announcement["identity"],
        "connectionId": announcement["connectionId"],
        "runId": "run-1",
        "toolCallId": format!("tc-{invocation_id}"),
        "invocation": {
            "invocationId": invocation_id,
            "capabilityId": capability,
            "registrationId": procedure["registrationId"],
            "surfaceVersion": announcement["snapshot"]["surfaceVersion"],
            "input": input,
        },
    })
}

/// The fast-answering executor for the happy path.
struct Lister;

impl AgentProcedureExecutor for Lister {
    fn execute(&self, _request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(async { Ok(json!({"devices": ["dev-1"]})) })
    }
}

#[wasm_bindgen_test]
async fn socket_announces_on_connect_and_after_every_registry_change_and_answers_calls() {
    let room = room();
    let control = Control::open(&room).await;
    let tab = tab();
    tab.registry.set_procedure_executor(Arc::new(Lister));
    let _list = tab
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            tab.registry.authority(),
            "devices.list",
        )))
        .unwrap();
    let socket = open_socket(&tab, &room, |o| o.protocol("token.abc"));
    assert_eq!(
        control.next().await,
        json!({"event": "open", "protocols": ["token.abc"]})
    );
    let first = control.next().await;
    let connection_id = first["connectionId"].as_str().unwrap().to_string();
    assert!(
        connection_id.starts_with("conn-") && connection_id.len() == 37,
        "{connection_id}"
    );
    assert!(connection_id["conn-".len()..]
        .bytes()
        .all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        first["identity"],
        json!({"appId": "console", "buildId": "build-1", "sessionId": "sess-1", "tabId": "tab-1"})
    );
    assert_eq!(
        socket.connection_id().as_deref(),
        Some(connection_id.as_str())
    );
    assert!(socket.is_connected());
    assert_eq!(first["protocolVersion"], 1);
    assert_eq!(first["type"], "surface-announcement");
    // `surfaceVersion` is a decimal string on the wire.
    let version = |announcement: &Value| -> u64 {
        announcement["snapshot"]["surfaceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let v1 = version(&first);

    // A registry change: a refreshed announcement on the same connection.
    let _rename = tab
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            tab.registry.authority(),
            "devices.rename",
        )))
        .unwrap();
    let second = control.next().await;
    assert_eq!(second["connectionId"], connection_id.as_str());
    assert!(version(&second) > v1);
    assert_eq!(
        second["snapshot"]["procedures"].as_array().unwrap().len(),
        2
    );

    // A call is answered on the socket.
    control.send(&call_for(
        &second,
        "inv-1",
        "domain:devices.list",
        json!({}),
    ));
    let answer = control.next().await;
    assert_eq!(answer["protocolVersion"], 1);
    assert_eq!(answer["type"], "surface-result");
    assert_eq!(answer["identity"], first["identity"]);
    assert_eq!(answer["invocationId"], "inv-1");
    assert_eq!(answer["connectionId"], connection_id.as_str());
    assert_eq!(
        answer["result"],
        json!({
            "status": "ok",
            "invocationId": "inv-1",
            "capabilityId": "domain:devices.list",
            "output": {"devices": ["dev-1"]},
            "surfaceVersion": second["snapshot"]["surfaceVersion"],
        })
    );
    // Garbage is answered too (invalid-call), never dropped silently.
    control.send(&json!({"hello": "host"}));
    let answer = control.next().await;
    assert_eq!(
        answer["result"],
        json!({"status": "rejected", "reason": "invalid-call"})
    );

    let kinds: Vec<String> = tab.events.borrow().iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "connecting 1",
            "connected",
            "announced",
            "call",
            "answered sent",
            "answered sent"
        ],
    );
    drop(socket);
    assert_eq!(control.next().await, json!({"event": "closed"}));
}

fn kind(event: &SocketEvent) -> String {
    match event {
        SocketEvent::Connecting { attempt } => format!("connecting {attempt}"),
        SocketEvent::Connected { .. } => "connected".into(),
        SocketEvent::Announced { .. } => "announced".into(),
        SocketEvent::Call(_) => "call".into(),
        SocketEvent::Answered { sent, .. } => {
            format!("answered {}", if *sent { "sent" } else { "unsent" })
        }
        SocketEvent::Disconnected {
            aborted_calls,
            retry_in,
            ..
        } => {
            format!(
                "disconnected aborted={aborted_calls} retry={}",
                retry_in.is_some()
            )
        }
        SocketEvent::Stopped(reason) => format!("stopped {reason:?}"),
        other => format!("{other:?}"),
    }
}

#[wasm_bindgen_test]
async fn socket_drop_aborts_the_pending_call_and_reconnects_under_a_new_connection_id() {
    let room = room();
    let control = Control::open(&room).await;
    let tab = tab();
    let _list = tab
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            tab.registry.authority(),
            "devices.list",
        )))
        .unwrap();
    let initial = Duration::from_millis(100);
    let _socket = open_socket(&tab, &room, |o| {
        o.backoff(Backoff::default().with_initial(initial))
    });
    assert_eq!(control.next().await["event"], "open");
    let first = control.next().await;
    let pending = call_for(&first, "slow-1", "domain:devices.list", json!({}));
    control.send(&pending);
    for _ in 0..100 {
        if !tab.executor.started().is_empty() {
            break;
        }
        sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(tab.executor.started(), ["slow-1"]);
    assert!(tab.executor.cancelled().is_empty());
    // The network drops (no close frame).
    control.send(&json!({"control": "drop"}));
    assert_eq!(control.next().await, json!({"event": "closed"}));
    assert_eq!(control.next().await["event"], "open");
    let second = control.next().await;
    assert_ne!(second["connectionId"], first["connectionId"]);
    assert!(second["snapshot"].is_object());
    // The aborted call saw its cancellation and its answer was not carried
    // over to the new connection.
    assert_eq!(tab.executor.cancelled(), ["slow-1"]);
    control.quiet_for(200).await;
    // A re-send of the interrupted call (old connection id) is refused.
    control.send(&pending);
    let answer = control.next().await;
    assert_eq!(
        answer["result"],
        json!({"status": "rejected", "reason": "disconnected"})
    );
    let events = tab.events.borrow();
    let disconnected = events
        .iter()
        .find_map(|e| match e {
            SocketEvent::Disconnected {
                connection_id,
                code,
                aborted_calls,
                retry_in,
                ..
            } => Some((connection_id.clone(), *code, *aborted_calls, *retry_in)),
            _ => None,
        })
        .expect("a disconnect was reported");
    assert_eq!(disconnected.0.as_deref(), first["connectionId"].as_str());
    assert_eq!(disconnected.1, 1006);
    assert_eq!(disconnected.2, 1);
    let delay = disconnected.3.expect("a retry was scheduled");
    assert!(delay >= initial / 2 && delay <= initial, "{delay:?}");
    assert!(events.iter().any(|e| matches!(
        e,
        SocketEvent::Answered { result, sent: false } if result.invocation_id == "slow-1"
    )));
}

#[wasm_bindgen_test]
async fn socket_gives_up_after_max_attempts_and_reconnect_now_starts_again() {
    let room = room();
    let control = Control::open(&room).await;
    let tab = tab();
    let socket = open_socket(&tab, &room, |o| {
        o.backoff(
            Backoff::default()
                .with_initial(Duration::from_millis(40))
                .with_max(Duration::from_millis(60))
                .with_max_attempts(2),
        )
    });
    assert_eq!(control.next().await["event"], "open");
    let first = control.next().await;
    control.send(&json!({"control": "refuse", "count": 2}));
    assert_eq!(
        control.next().await,
        json!({"event": "refusing", "count": 2})
    );
    control.send(&json!({"control": "drop"}));
    assert_eq!(control.next().await, json!({"event": "closed"}));
    assert_eq!(control.next().await, json!({"event": "refused"}));
    assert_eq!(control.next().await, json!({"event": "refused"}));
    control.quiet_for(400).await;
    assert!(!socket.is_connected());
    {
        let kinds: Vec<String> = tab.events.borrow().iter().map(kind).collect();
        assert_eq!(
            kinds,
            [
                "connecting 1",
                "connected",
                "disconnected aborted=0 retry=true",
                "connecting 2",
                "disconnected aborted=0 retry=true",
                "connecting 3",
                "disconnected aborted=0 retry=false",
                "stopped GaveUp { attempts: 2 }",
            ]
        );
    }
    socket.reconnect_now().unwrap();
    assert_eq!(control.next().await["event"], "open");
    let again = control.next().await;
    assert_ne!(again["connectionId"], first["connectionId"]);
    // close(): no reconnect follows.
    socket.close();
    assert_eq!(control.next().await, json!({"event": "closed"}));
    control.quiet_for(300).await;
    let events = tab.events.borrow();
    assert!(matches!(
        events.last(),
        Some(SocketEvent::Stopped(StopReason::Closed))
    ));
    assert_eq!(tab.session.usage().connection_ids, 2);
}

#[wasm_bindgen_test]
fn backoff_doubles_from_initial_up_to_max_with_jitter_in_the_upper_half() {
    let backoff = Backoff::default();
    assert_eq!(backoff.delay(1, 0.0), Duration::from_millis(250));
    assert_eq!(backoff.delay(1, 1.0), Duration::from_millis(500));
    assert_eq!(backoff.delay(2, 1.0), Duration::from_secs(1));
    assert_eq!(backoff.delay(6, 1.0), Duration::from_secs(16));
    assert_eq!(backoff.delay(7, 1.0), Duration::from_secs(30));
    assert_eq!(backoff.delay(7, 0.0), Duration::from_secs(15));
    assert_eq!(backoff.delay(u32::MAX, 0.5), Duration::from_millis(22_500));
    assert_eq!(backoff.delay(1, f64::NAN), Duration::from_millis(500));
    assert_eq!(backoff.max_attempts, 10);
}
