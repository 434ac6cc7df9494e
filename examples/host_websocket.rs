//! Both sides of the browser-session protocol (`docs/host.md`) over a real
//! WebSocket on loopback: a "browser" (a `SurfaceRegistry` over the devices
//! manifest, an in-process executor and a `BrowserSurfaceSession`) and an
//! agent host (`AgentHost`). Run with:
//!
//! ```text
//! cargo run --example host_websocket
//! ```
//!
//! What happens, in order (each step is printed):
//! 1. the browser opens connection `conn-A`, authenticates (a demo token
//!    stands in for the application's own auth) and announces its surface;
//! 2. the host verifies the announcement against the known build, composes
//!    the run's tools (browser + server, one presentation per capability)
//!    and calls `domain:devices.disable`, whose `deviceIds` the browser
//!    binds from its selection;
//! 3. a second call is in flight when the network drops: the browser aborts
//!    it (its cancellation signal fires and its future is dropped), the
//!    host reports it as interrupted — to reconcile, never to replay;
//! 4. the browser reconnects under a NEW connection id `conn-B` and
//!    announces again; a stale re-send of the interrupted call is refused
//!    by both sides; a fresh call succeeds;
//! 5. the browser disposes its session and closes; the example exits 0.
//!
//! Everything is checked; any deviation exits with an error.

use std::collections::HashMap;
use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceAnnouncement, BrowserSurfaceCall,
    BrowserSurfaceIdentity, BrowserSurfaceResult, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, HostTool, InterruptedCall, KnownBuild, ResultDisposition,
    ServerTool, ToolCallRequest,
};
use agent_surface::sync::BoxFuture;
use agent_surface::{
    AgentConsumer, AgentInvocationResult, AgentManifest, AgentProcedureBinding,
    AgentProcedureExecutor, AgentProcedureRef, Authority, BoundField, BoundInput, ConsumerKind,
    ErrorCode, ExecuteRequest, ExecutionError, Retry, SurfaceRegistry,
};
use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

const MANIFEST: &str = include_str!("../tests/fixtures/devices.manifest.json");
const DEMO_TOKEN: &str = "demo-token-for-sess-1";

type AnyError = Box<dyn Error + Send + Sync>;

/// One WebSocket text frame.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", content = "body", rename_all = "camelCase")]
enum Frame {
    /// The application's own authentication (`docs/host.md`): here a demo token.
    Hello {
        token: String,
        connection_id: String,
    },
    Announcement(Box<BrowserSurfaceAnnouncement>),
    Call(Box<BrowserSurfaceCall>),
    Result(Box<BrowserSurfaceResult>),
    /// The host is done.
    Bye,
}

fn text(frame: &Frame) -> Result<Message, AnyError> {
    Ok(Message::text(serde_json::to_string(frame)?))
}

// ----- browser side -----------------------------------------------------------

/// A tiny device store standing in for the backend.
struct DeviceExecutor {
    devices: Mutex<Vec<(String, String)>>,
}

impl AgentProcedureExecutor for DeviceExecutor {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        Box::pin(async move {
            match &*request.path {
                "devices.list" => {
                    let devices = self.devices.lock().map_err(|_| failed())?;
                    Ok(
                        json!({"devices": devices.iter().map(|(id, status)| json!({"id": id, "name": id, "status": status})).collect::<Vec<_>>()}),
                    )
                }
                "devices.disable" => {
                    if request.input["reason"] == json!("slow") {
                        println!(
                            "[browser] executor: {} started, waiting on the backend…",
                            request.info.invocation_id
                        );
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(5)) => {}
                            () = request.info.cancellation.cancelled() => {
                                println!("[browser] executor: {} saw the cancellation signal and stopped", request.info.invocation_id);
                                return Err(ExecutionError::new(ErrorCode::Cancelled, "Cancelled.", Retry::No));
                            }
                        }
                    }
                    let ids: Vec<String> =
                        serde_json::from_value(request.input["deviceIds"].clone())
                            .map_err(|_| failed())?;
                    let mut devices = self.devices.lock().map_err(|_| failed())?;
                    for (id, status) in devices.iter_mut() {
                        if ids.contains(id) {
                            *status = "disabled".into();
                        }
                    }
                    Ok(json!({"disabled": ids}))
                }
                _ => Err(failed()),
            }
        })
    }
}

fn failed() -> ExecutionError {
    ExecutionError::new(
        ErrorCode::ExecutionFailed,
        "The device store failed.",
        Retry::No,
    )
}

/// `devices.disable`'s UI-bound subset: the selected rows (locked).
struct Selection(Vec<String>);

impl BoundInput for Selection {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.disable";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "deviceIds",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("deviceIds".into(), serde_json::to_value(&self.0)?);
        Ok(m)
    }
}

fn authority() -> Result<Authority, AnyError> {
    Ok(Authority::from_manifest(AgentManifest::from_json_str(
        MANIFEST,
    )?))
}

async fn browser(url: String) -> Result<(), AnyError> {
    let authority = authority()?;
    let registry = SurfaceRegistry::new(authority.clone());
    registry.set_procedure_executor(Arc::new(DeviceExecutor {
        devices: Mutex::new(vec![
            ("d1".into(), "active".into()),
            ("d2".into(), "active".into()),
            ("d3".into(), "active".into()),
        ]),
    }));
    let selection = Arc::new(Mutex::new(vec!["d2".to_string()]));
    let reference = |path: &str| -> Result<AgentProcedureRef<Value, Value>, AnyError> {
        AgentProcedureRef::from_authority(&authority, path)
            .ok_or_else(|| format!("{path} not in manifest").into())
    };
    let _list =
        registry.register_procedure(AgentProcedureBinding::new(reference("devices.list")?))?;
    let _disable = registry.register_procedure(
        AgentProcedureBinding::new(reference("devices.disable")?)
            .bind({
                let selection = selection.clone();
                move || Selection(selection.lock().map(|s| s.clone()).unwrap_or_default())
            })
            .describe(|| "Disables the devices selected in the table".to_string()),
    )?;

    let session = BrowserSurfaceSession::new(BrowserSurfaceSessionOptions::new(
        registry.clone(),
        BrowserSurfaceIdentity::new("console", "build-2026.11.29", "sess-1", "tab-7f3a"),
        AgentConsumer::embedded("user-1"),
    ));

    for (round, connection_id) in ["conn-A", "conn-B"].into_iter().enumerate() {
        let (ws, _) = tokio_tungstenite::connect_async(url.as_str()).await?;
        let (mut sink, mut stream) = ws.split();
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Frame>();
        sink.send(text(&Frame::Hello {
            token: DEMO_TOKEN.into(),
            connection_id: connection_id.into(),
        })?)
        .await?;
        let announcement = session.connect(connection_id)?;
        println!(
            "[browser] connected as {connection_id}; announcing surface version {} with {} procedure(s)",
            announcement.snapshot.surface_version,
            announcement.snapshot.procedures.len()
        );
        sink.send(text(&Frame::Announcement(Box::new(announcement)))?)
            .await?;
        let _subscription = session.subscribe({
            let out_tx = out_tx.clone();
            move |a| {
                let _ = out_tx.send(Frame::Announcement(Box::new(a.clone())));
            }
        })?;

        let mut calls_seen = 0;
        let mut pending = Vec::new();
        loop {
            tokio::select! {
                Some(frame) = out_rx.recv() => sink.send(text(&frame)?).await?,
                message = stream.next() => {
                    let Some(message) = message else { break };
                    let frame: Frame = serde_json::from_str(message?.to_text()?)?;
                    match frame {
                        Frame::Call(call) => {
                            calls_seen += 1;
                            println!("[browser] call {} for {}", call.invocation.invocation_id, call.invocation.capability_id);
                            let worker = session.clone();
                            let out_tx = out_tx.clone();
                            pending.push(tokio::spawn(async move {
                                let result = worker.invoke(*call).await;
                                let _ = out_tx.send(Frame::Result(Box::new(result.clone())));
                                result
                            }));
                            if round == 0 && calls_seen == 2 {
                                // The network drops while the second call runs.
                                tokio::time::sleep(Duration::from_millis(100)).await;
                                println!("[browser] network lost on {connection_id}: disconnecting the session");
                                session.disconnect();
                                break;
                            }
                        }
                        Frame::Bye => {
                            println!("[browser] host said bye: disposing the session");
                            session.dispose();
                            sink.send(Message::Close(None)).await?;
                            return Ok(());
                        }
                        other => return Err(format!("unexpected frame {other:?}").into()),
                    }
                }
            }
        }
        // The socket is dropped here (the "network loss").
        drop(sink);
        drop(stream);
        for task in pending {
            let result = task.await?;
            if let Some(reason) = result.rejection() {
                println!(
                    "[browser] {} ended `{reason}` (not sent: the connection is gone)",
                    result.invocation_id
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err("the host never said bye".into())
}

// ----- host side ------------------------------------------------------------------

#[derive(Debug)]
enum HostEvent {
    Announced(String),
    Result(Result<ResultDisposition, String>),
    Closed(String, Vec<InterruptedCall>),
}

type Writers = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Frame>>>>;

/// One socket: authenticate, then feed every frame to the `AgentHost`.
async fn serve_socket(
    stream: tokio::net::TcpStream,
    host: Arc<AgentHost>,
    writers: Writers,
    events: mpsc::UnboundedSender<HostEvent>,
) -> Result<(), AnyError> {
    let ws = tokio_tungstenite::accept_async(stream).await?;
    let (mut sink, mut stream) = ws.split();
    let first: Frame = match stream.next().await {
        Some(message) => serde_json::from_str(message?.to_text()?)?,
        None => return Ok(()),
    };
    let Frame::Hello {
        token,
        connection_id,
    } = first
    else {
        return Err("the first frame must authenticate".into());
    };
    if token != DEMO_TOKEN {
        return Err("authentication failed".into());
    }
    // The application's own authentication succeeded: only now does it
    // construct the evidence the AgentHost requires.
    let auth = AuthenticatedConnection::new(connection_id.clone(), "sess-1", "user-1");
    let (tx, mut rx) = mpsc::unbounded_channel::<Frame>();
    writers
        .lock()
        .map_err(|_| "poisoned")?
        .insert(connection_id.clone(), tx);
    loop {
        tokio::select! {
            Some(frame) = rx.recv() => sink.send(text(&frame)?).await?,
            message = stream.next() => {
                let frame = match message {
                    Some(Ok(Message::Text(t))) => serde_json::from_str::<Frame>(t.as_str())?,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => continue,
                };
                match frame {
                    Frame::Announcement(a) => match host.accept_announcement(&auth, &a) {
                        Ok(accepted) => {
                            println!("[host] accepted announcement from {} on {} (surface version {})", a.identity.tab_id, a.connection_id, accepted.surface_version);
                            let _ = events.send(HostEvent::Announced(a.connection_id.clone()));
                        }
                        Err(e) => println!("[host] refused announcement: {e}"),
                    },
                    Frame::Result(r) => {
                        let _ = events.send(HostEvent::Result(host.accept_result(&auth, &r).map_err(|e| e.to_string())));
                    }
                    other => return Err(format!("unexpected frame {other:?}").into()),
                }
            }
        }
    }
    writers
        .lock()
        .map_err(|_| "poisoned")?
        .remove(&connection_id);
    let interrupted = host.connection_closed(&connection_id);
    let _ = events.send(HostEvent::Closed(connection_id, interrupted));
    Ok(())
}

async fn next_event(
    events: &mut mpsc::UnboundedReceiver<HostEvent>,
) -> Result<HostEvent, AnyError> {
    events
        .recv()
        .await
        .ok_or_else(|| "host event channel closed".into())
}

fn send(writers: &Writers, connection_id: &str, frame: Frame) -> Result<(), AnyError> {
    writers
        .lock()
        .map_err(|_| "poisoned")?
        .get(connection_id)
        .ok_or_else(|| format!("no socket for {connection_id}"))?
        .send(frame)
        .map_err(|_| "socket closed".into())
}

fn describe(tools: &[HostTool]) -> String {
    tools
        .iter()
        .map(|t| match t {
            HostTool::Browser(b) => format!("{} (browser)", b.capability_id),
            HostTool::Server(s) => format!("{} (server)", s.capability_id),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

async fn run_host(listener: TcpListener) -> Result<(), AnyError> {
    let authority = authority()?;
    let host = Arc::new(
        AgentHost::new()
            .with_known_build(KnownBuild::new(
                "console",
                "build-2026.11.29",
                authority.clone(),
            ))
            .with_server_tool(ServerTool::from_authority(&authority, "devices.list").ok_or("list")?)
            .with_server_tool(
                ServerTool::from_authority(&authority, "devices.disable").ok_or("disable")?,
            )
            .with_server_tool(
                ServerTool::from_authority(&authority, "devices.stats").ok_or("stats")?,
            ),
    );
    let writers: Writers = Arc::default();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    tokio::spawn({
        let host = host.clone();
        let writers = writers.clone();
        async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (host, writers, events) = (host.clone(), writers.clone(), events_tx.clone());
                tokio::spawn(async move {
                    if let Err(e) = serve_socket(stream, host, writers, events).await {
                        println!("[host] socket error: {e}");
                    }
                });
            }
        }
    });

    // 1–2. First connection: announcement, tools, a bound mutation.
    let HostEvent::Announced(conn_a) = next_event(&mut events).await? else {
        return Err("expected an announcement".into());
    };
    host.start_run(AgentRun {
        run_id: "run-1".into(),
        session_id: "sess-1".into(),
        tab_id: Some("tab-7f3a".into()),
        kind: ConsumerKind::Embedded,
    })?;
    let tools = host.tools_for_run("run-1");
    println!("[host] tools for run-1: {}", describe(&tools));
    let expected = "domain:devices.disable (browser), domain:devices.list (server), domain:devices.stats (server)";
    if describe(&tools) != expected {
        return Err(format!("unexpected tools: {}", describe(&tools)).into());
    }
    let call = host.dispatch(ToolCallRequest::new(
        "run-1",
        "tc-1",
        "inv-1",
        "domain:devices.disable",
        json!({"reason": "lost laptop"}),
    ))?;
    println!(
        "[host] dispatching inv-1 on {conn_a} at surface version {:?}",
        call.invocation.surface_version
    );
    send(&writers, &conn_a, Frame::Call(Box::new(call)))?;
    match next_event(&mut events).await? {
        HostEvent::Result(Ok(ResultDisposition::Completed(done))) => match &done.result {
            agent_surface::host::BrowserSurfaceOutcome::Invocation(AgentInvocationResult::Ok {
                output: Some(output),
                ..
            }) => {
                println!("[host] inv-1 completed: {output}");
                if output != &json!({"disabled": ["d2"]}) {
                    return Err("the bound selection was not used".into());
                }
            }
            other => return Err(format!("inv-1 failed: {other:?}").into()),
        },
        other => return Err(format!("expected inv-1's result, got {other:?}").into()),
    }

    // 3. A call in flight when the network drops.
    let slow = host.dispatch(ToolCallRequest::new(
        "run-1",
        "tc-2",
        "inv-2",
        "domain:devices.disable",
        json!({"reason": "slow"}),
    ))?;
    println!("[host] dispatching inv-2 on {conn_a}");
    send(&writers, &conn_a, Frame::Call(Box::new(slow.clone())))?;
    match next_event(&mut events).await? {
        HostEvent::Closed(conn, interrupted) if conn == conn_a => {
            let ids: Vec<_> = interrupted
                .iter()
                .map(|i| i.call.invocation.invocation_id.as_str())
                .collect();
            println!(
                "[host] {conn} closed; interrupted calls to reconcile (never replay): {ids:?}"
            );
            if ids != ["inv-2"] {
                return Err("inv-2 should be interrupted".into());
            }
        }
        other => return Err(format!("expected {conn_a} to close, got {other:?}").into()),
    }
    println!(
        "[host] tools for run-1 with no live session: {}",
        describe(&host.tools_for_run("run-1"))
    );

    // 4. Reconnect under a new connection id.
    let HostEvent::Announced(conn_b) = next_event(&mut events).await? else {
        return Err("expected a new announcement".into());
    };
    if conn_b == conn_a {
        return Err("the reconnect must use a new connection id".into());
    }
    println!("[host] a misbehaving re-send of inv-2 over {conn_b}:");
    send(&writers, &conn_b, Frame::Call(Box::new(slow)))?;
    match next_event(&mut events).await? {
        HostEvent::Result(Err(e)) => {
            println!("[host]   browser answered, host refused the result: {e}")
        }
        other => return Err(format!("the stale re-send must be refused, got {other:?}").into()),
    }
    let fresh = host.dispatch(ToolCallRequest::new(
        "run-1",
        "tc-3",
        "inv-3",
        "domain:devices.disable",
        json!({}),
    ))?;
    println!("[host] dispatching inv-3 on {}", fresh.connection_id);
    send(&writers, &conn_b, Frame::Call(Box::new(fresh)))?;
    match next_event(&mut events).await? {
        HostEvent::Result(Ok(ResultDisposition::Completed(done))) => {
            println!(
                "[host] inv-3 completed: {}",
                serde_json::to_string(&done.result)?
            );
        }
        other => return Err(format!("expected inv-3's result, got {other:?}").into()),
    }

    // 5. Done.
    send(&writers, &conn_b, Frame::Bye)?;
    match next_event(&mut events).await? {
        HostEvent::Closed(conn, interrupted) if conn == conn_b && interrupted.is_empty() => {
            println!("[host] {conn} closed cleanly; nothing outstanding");
        }
        other => return Err(format!("expected a clean close, got {other:?}").into()),
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), AnyError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}", listener.local_addr()?);
    println!("[host] listening on {url}");
    let host = tokio::spawn(run_host(listener));
    let browser = tokio::spawn(browser(url));
    let (host, browser) = tokio::time::timeout(Duration::from_secs(20), async {
        (host.await, browser.await)
    })
    .await
    .map_err(|_| "the example timed out")?;
    host??;
    browser??;
    println!("done: both sides agree; exit 0");
    Ok(())
}
