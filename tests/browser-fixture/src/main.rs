//! The loopback server of the wasm-bindgen browser tests
//! (`surface-runtime/tests/browser_transports.rs`). CORS is open, so a test
//! page served by `wasm-bindgen-test-runner` on another port can call it.
//!
//! ```text
//! browser-fixture [--port N]   # prints {"port":N} when ready
//! ```
//!
//! It runs until killed (SIGTERM), or one hour at most.
//!
//! oRPC answers (`/rpc/...`, any method):
//!
//! | path | answer |
//! |---|---|
//! | `echo/request` | `{"json": {"method", "query", "headers", "body"}}` — what arrived |
//! | `answer/ok` | 200 with `meta` (a BigInt and a Set) |
//! | `answer/void` | 200 `{}` |
//! | `answer/orpc-error` | 404 defined `NOT_FOUND` with `data.deviceId` |
//! | `answer/text404` | 404 `text/plain` `Not found` |
//! | `answer/redirect` | 307 to `answer/ok` |
//! | `answer/sized?bytes=N` | 200, a `{"json":"aaa…"}` body of exactly N bytes, with `Content-Length` |
//! | `answer/sized-stream?bytes=N` | the same body streamed in 1 KiB chunks, no `Content-Length` |
//! | `answer/hang?id=X` | never answers (120 s); `/log?id=X` answers `{"json": {"started", "dropped"}}`: whether it started and whether the client went away |
//! | `answer/trickle` | the head at once, then one space every 50 ms (60 s) |
//!
//! AG-UI runs (`POST /agui/...`, `tests/browser_agui.rs`), server-sent
//! events:
//!
//! | path | answer |
//! |---|---|
//! | `agui/replay` | the recorded `@ag-ui/mastra` runs of the `disable` script (`tests/fixtures/agui/disable-1.sse`, the tool renamed to the request's first declared tool whose name has `disable`), or `disable-2.sse` when the request's last message is a tool message |
//! | `agui/stall?id=X` | `RUN_STARTED`, then nothing (120 s); `/log?id=X` tells whether the client went away |
//!
//! WebSocket relay (a test plays the agent host):
//!
//! * `/ws/control?room=R` — the test's socket. It receives
//!   `{"event":"open","protocol":…}` when a session socket of the room
//!   opens, every text frame the session socket sends, and
//!   `{"event":"closed"}` when it closes. Text it sends is forwarded to the
//!   session socket, except commands: `{"control":"drop"}` (cut the TCP
//!   connection, no close frame), `{"control":"close","code":C,"reason":R}`
//!   (a close frame), `{"control":"refuse","count":N}` (answer the next N
//!   session upgrades with 403; acknowledged with
//!   `{"event":"refusing","count":N}`).
//! * `/ws/session?room=R` — the `SessionSocket` under test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

#[derive(Default)]
struct Fixture {
    /// `answer/hang` ids: (started, client went away).
    hangs: Mutex<HashMap<String, (bool, bool)>>,
    rooms: Mutex<HashMap<String, Room>>,
}

#[derive(Default)]
struct Room {
    session: Option<mpsc::UnboundedSender<SessionCommand>>,
    control: Option<mpsc::UnboundedSender<String>>,
    backlog: Vec<String>,
    refuse: u32,
}

enum SessionCommand {
    Text(String),
    Drop,
    Close(u16, String),
}

type Shared = Arc<Fixture>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[tokio::main]
async fn main() {
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| fail("--port needs a number 0..65535"));
            }
            other => fail(&format!(
                "unknown argument {other:?}; usage: browser-fixture [--port N]"
            )),
        }
    }
    let shared: Shared = Arc::default();
    let app = Router::new()
        .route("/rpc/echo/request", any(echo))
        .route("/rpc/answer/{kind}", any(answer))
        .route("/agui/{kind}", any(agui))
        .route("/log", any(log))
        .route("/ws/session", get(session_socket))
        .route("/ws/control", get(control_socket))
        .layer(middleware::from_fn(cors))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| fail(&format!("bind 127.0.0.1:{port}: {e}")));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(port);
    println!("{}", json!({ "port": port }));
    let lifetime = tokio::time::sleep(Duration::from_secs(3600));
    tokio::select! {
        served = axum::serve(listener, app) => {
            if let Err(e) = served {
                fail(&format!("serve: {e}"));
            }
        }
        () = lifetime => eprintln!("browser-fixture: one hour is up, exiting"),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("browser-fixture: {message}");
    std::process::exit(2)
}

/// Open CORS on every answer; preflights are answered here.
async fn cors(request: Request, next: Next) -> Response {
    let mut response = if request.method() == Method::OPTIONS {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        (header::ACCESS_CONTROL_ALLOW_METHODS, "*"),
        (header::ACCESS_CONTROL_ALLOW_HEADERS, "*"),
        (header::ACCESS_CONTROL_EXPOSE_HEADERS, "*"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn echo(method: Method, headers: HeaderMap, request: Request) -> Response {
    let query = request.uri().query().map(str::to_string);
    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let mut seen = Map::new();
    for (name, value) in &headers {
        seen.insert(
            name.as_str().to_string(),
            json!(value.to_str().unwrap_or("<binary>")),
        );
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    json_response(
        StatusCode::OK,
        json!({"json": {"method": method.as_str(), "query": query, "headers": seen, "body": body}})
            .to_string(),
    )
}

/// A `{"json":"aaa…"}` body of exactly `bytes` bytes (at least 11).
fn sized_body(bytes: usize) -> String {
    format!(r#"{{"json":"{}"}}"#, "a".repeat(bytes.saturating_sub(11)))
}

/// Marks an `answer/hang` id as abandoned when the handler is dropped
/// (the client went away).
struct HangGuard {
    shared: Shared,
    id: String,
}

impl Drop for HangGuard {
    fn drop(&mut self) {
        if let Some(entry) = lock(&self.shared.hangs).get_mut(&self.id) {
            entry.1 = true;
        }
    }
}

async fn answer(
    State(shared): State<Shared>,
    axum::extract::Path(kind): axum::extract::Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let bytes = || {
        query
            .get("bytes")
            .and_then(|b| b.parse::<usize>().ok())
            .unwrap_or(1024)
            .min(64 << 20)
    };
    match kind.as_str() {
        "ok" => json_response(
            StatusCode::OK,
            r#"{"json":{"ok":true,"bytes":"9007199254740993","tags":["a","b"]},"meta":[[0,"bytes"],[6,"tags"]]}"#.into(),
        ),
        "void" => json_response(StatusCode::OK, "{}".into()),
        "orpc-error" => json_response(
            StatusCode::NOT_FOUND,
            r#"{"json":{"defined":true,"code":"NOT_FOUND","status":404,"message":"Device not found","data":{"deviceId":"nope"}}}"#.into(),
        ),
        "text404" => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain")],
            "Not found",
        )
            .into_response(),
        "redirect" => (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, "/rpc/answer/ok")],
        )
            .into_response(),
        "sized" => json_response(StatusCode::OK, sized_body(bytes())),
        "sized-stream" => {
            let body = Bytes::from(sized_body(bytes()));
            let chunks: Vec<Result<Bytes, std::io::Error>> = (0..body.len())
                .step_by(1024)
                .map(|start| Ok(body.slice(start..(start + 1024).min(body.len()))))
                .collect();
            Response::builder()
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from_stream(futures_util::stream::iter(chunks)))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        "hang" => {
            let id = query.get("id").cloned().unwrap_or_default();
            lock(&shared.hangs).insert(id.clone(), (true, false));
            let _guard = HangGuard { shared, id };
            tokio::time::sleep(Duration::from_secs(120)).await;
            json_response(StatusCode::OK, "{}".into())
        }
        "trickle" => {
            let stream = futures_util::stream::unfold(0u32, |n| async move {
                if n >= 1200 {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                Some((Ok::<_, std::io::Error>(Bytes::from_static(b" ")), n + 1))
            });
            Response::builder()
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from_stream(stream))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        _ => (StatusCode::NOT_FOUND, "Not found").into_response(),
    }
}

/// The recorded runs `agui/replay` answers with.
const AGUI_CALL: &str = include_str!("../../fixtures/agui/disable-1.sse");
const AGUI_ANSWER: &str = include_str!("../../fixtures/agui/disable-2.sse");

fn event_stream(body: Body) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn agui(
    State(shared): State<Shared>,
    axum::extract::Path(kind): axum::extract::Path<String>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match kind.as_str() {
        "replay" => {
            let messages = input["messages"].as_array().cloned().unwrap_or_default();
            if messages.last().is_some_and(|m| m["role"] == "tool") {
                return event_stream(Body::from(AGUI_ANSWER));
            }
            let tools = input["tools"].as_array().cloned().unwrap_or_default();
            let name = tools
                .iter()
                .filter_map(|t| t["name"].as_str())
                .find(|n| n.contains("disable"))
                .unwrap_or("devices_disable")
                .to_string();
            event_stream(Body::from(AGUI_CALL.replace("devices_disable", &name)))
        }
        "stall" => {
            let id = query.get("id").cloned().unwrap_or_default();
            lock(&shared.hangs).insert(id.clone(), (true, false));
            let guard = HangGuard { shared, id };
            let started = Bytes::from_static(
                b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
            );
            let stream = futures_util::stream::unfold(Some((started, guard)), |state| async move {
                let (first, guard) = state?;
                if first.is_empty() {
                    tokio::time::sleep(Duration::from_secs(120)).await;
                    drop(guard);
                    return None;
                }
                Some((Ok::<_, std::io::Error>(first), Some((Bytes::new(), guard))))
            });
            event_stream(Body::from_stream(stream))
        }
        _ => (StatusCode::NOT_FOUND, "Not found").into_response(),
    }
}

async fn log(
    State(shared): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let id = query.get("id").cloned().unwrap_or_default();
    let (started, dropped) = lock(&shared.hangs).get(&id).copied().unwrap_or_default();
    json_response(
        StatusCode::OK,
        json!({"json": {"started": started, "dropped": dropped}}).to_string(),
    )
}

/// Sends `text` to the room's control socket, or keeps it until one
/// connects.
fn to_control(shared: &Shared, room: &str, text: String) {
    let mut rooms = lock(&shared.rooms);
    let room = rooms.entry(room.to_string()).or_default();
    match &room.control {
        Some(control) if control.send(text.clone()).is_ok() => {}
        _ => room.backlog.push(text),
    }
}

async fn session_socket(
    State(shared): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let room = query.get("room").cloned().unwrap_or_default();
    {
        let mut rooms = lock(&shared.rooms);
        let entry = rooms.entry(room.clone()).or_default();
        if entry.refuse > 0 {
            entry.refuse -= 1;
            drop(rooms);
            to_control(&shared, &room, json!({"event": "refused"}).to_string());
            return StatusCode::FORBIDDEN.into_response();
        }
    }
    let requested: Vec<String> = headers
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(',').map(|p| p.trim().to_string()).collect())
        .unwrap_or_default();
    let upgrade = match requested.first() {
        Some(first) => upgrade.protocols([first.clone()]),
        None => upgrade,
    };
    upgrade.on_upgrade(move |socket| run_session(shared, room, requested, socket))
}

async fn run_session(shared: Shared, room: String, protocols: Vec<String>, socket: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    lock(&shared.rooms).entry(room.clone()).or_default().session = Some(tx);
    to_control(
        &shared,
        &room,
        json!({"event": "open", "protocols": protocols}).to_string(),
    );
    let (mut sink, mut stream) = socket.split();
    loop {
        tokio::select! {
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Text(text))) => to_control(&shared, &room, text.to_string()),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            command = rx.recv() => match command {
                Some(SessionCommand::Text(text)) => {
                    if sink.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                Some(SessionCommand::Close(code, reason)) => {
                    let frame = CloseFrame { code, reason: reason.into() };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    // Wait for the browser's answering close frame.
                    let _ = tokio::time::timeout(Duration::from_secs(2), stream.next()).await;
                    break;
                }
                Some(SessionCommand::Drop) | None => {
                    // Dropping both halves closes the TCP connection without a
                    // close frame: the browser sees code 1006.
                    drop(sink);
                    drop(stream);
                    break;
                }
            },
        }
    }
    lock(&shared.rooms).entry(room.clone()).or_default().session = None;
    to_control(&shared, &room, json!({"event": "closed"}).to_string());
}

async fn control_socket(
    State(shared): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let room = query.get("room").cloned().unwrap_or_default();
    upgrade.on_upgrade(move |socket| run_control(shared, room, socket))
}

async fn run_control(shared: Shared, room: String, socket: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    {
        let mut rooms = lock(&shared.rooms);
        let entry = rooms.entry(room.clone()).or_default();
        for text in entry.backlog.drain(..) {
            let _ = tx.send(text);
        }
        entry.control = Some(tx);
    }
    let (mut sink, mut stream) = socket.split();
    loop {
        tokio::select! {
            outgoing = rx.recv() => match outgoing {
                Some(text) => {
                    if sink.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Text(text))) => control_command(&shared, &room, text.to_string()),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
        }
    }
    lock(&shared.rooms).entry(room).or_default().control = None;
}

fn control_command(shared: &Shared, room: &str, text: String) {
    let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let mut rooms = lock(&shared.rooms);
    let entry = rooms.entry(room.to_string()).or_default();
    let command = match parsed["control"].as_str() {
        Some("drop") => SessionCommand::Drop,
        Some("close") => SessionCommand::Close(
            parsed["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(1000),
            parsed["reason"].as_str().unwrap_or("").to_string(),
        ),
        Some("refuse") => {
            entry.refuse = parsed["count"]
                .as_u64()
                .and_then(|c| u32::try_from(c).ok())
                .unwrap_or(1);
            // Acknowledged, so the test knows the next upgrades are refused.
            if let Some(control) = &entry.control {
                let ack = json!({"event": "refusing", "count": entry.refuse});
                let _ = control.send(ack.to_string());
            }
            return;
        }
        _ => SessionCommand::Text(text),
    };
    if let Some(session) = &entry.session {
        let _ = session.send(command);
    }
}
