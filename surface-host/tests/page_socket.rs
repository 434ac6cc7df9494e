//! `Host::page_socket` over a real loopback WebSocket (docs/host.md, "The
//! Host"): an authenticated page's announcement reaches the host (its
//! tools are the run's), the application hears it; a binary message or an
//! announcement for another session closes the socket with 1008 and a
//! bounded reason.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use host_support::*;
use surface_host::host::replica::Received;
use surface_host::host::{Database, Host, PageSocketEvent, PageSocketLimits};
use surface_runtime::host::{
    AuthenticatedConnection, BrowserSurfaceIdentity, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, BrowserToHostMessage, KnownBuild,
};
use surface_runtime::{AgentConsumer, ConsumerKind};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

type Events = Arc<Mutex<Vec<PageSocketEvent>>>;

/// A host whose `/ws` is the page socket of session `sess-1`, user `u1`.
async fn serve(host: Host, events: Events) -> String {
    async fn socket(
        State((host, events)): State<(Host, Events)>,
        upgrade: WebSocketUpgrade,
    ) -> Response {
        host.page_socket(upgrade, "sess-1", "u1", move |e| {
            events.lock().unwrap().push(e);
        })
    }
    let app = axum::Router::new()
        .route("/ws", axum::routing::get(socket))
        .with_state((host, events));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    tokio::spawn(surface_host::server::serve(
        listener,
        app,
        surface_host::server::ServeOptions::default(),
    ));
    url
}

async fn host() -> Host {
    Host::builder(Database::Memory)
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .unwrap()
}

fn session(identity: BrowserSurfaceIdentity) -> (Fixture, BrowserSurfaceSession) {
    let fx = Fixture::new();
    let session = BrowserSurfaceSession::new(BrowserSurfaceSessionOptions::new(
        fx.registry.clone(),
        identity,
        AgentConsumer::embedded("u1"),
    ));
    (fx, session)
}

/// Waits (at most 5 s) until the socket closes; its close code and reason.
async fn closed<S>(ws: &mut S) -> (CloseCode, String)
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("the host closes the socket within 5 s")
        {
            Some(Ok(Message::Close(Some(frame)))) => return (frame.code, frame.reason.to_string()),
            Some(Ok(_)) => {}
            other => panic!("no close frame: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announcement_reaches_the_host_and_a_binary_message_closes_with_1008() {
    let host = host().await;
    let events = Events::default();
    let url = serve(host.clone(), events.clone()).await;
    let (_fx, page) = session(identity());
    let run = host
        .start_page_run(page.identity(), ConsumerKind::Embedded)
        .await
        .unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let announcement = serde_json::to_string(&page.connect("conn-ws-1").unwrap()).unwrap();
    ws.send(Message::Text(announcement.into())).await.unwrap();
    let mut tools = Vec::new();
    for _ in 0..500 {
        tools = host.mcp().tools(&run).await.unwrap();
        if !tools.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        tools.iter().any(|t| t.name == "devices__list"),
        "the page's tools are the run's"
    );
    assert_eq!(
        events.lock().unwrap()[0],
        PageSocketEvent::Announced {
            tab_id: "tab-1".into(),
            connection_id: "conn-ws-1".into()
        }
    );

    ws.send(Message::Binary(vec![1, 2, 3].into()))
        .await
        .unwrap();
    let (code, reason) = closed(&mut ws).await;
    assert_eq!(code, CloseCode::Policy);
    assert_eq!(reason, "a binary message: the protocol is JSON text");
    for _ in 0..500 {
        if events.lock().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        events.lock().unwrap()[1],
        PageSocketEvent::Closed {
            connection_id: Some("conn-ws-1".into()),
            refusal: Some("a binary message: the protocol is JSON text".into())
        }
    );
    // Closed: the page's tools are gone.
    assert!(host.mcp().tools(&run).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announcement_of_another_session_closes_with_a_bounded_ascii_reason() {
    let host = host().await;
    let events = Events::default();
    let url = serve(host, events.clone()).await;
    // The socket was authenticated for sess-1; this page says sess-2, with
    // a connection id of 60 emoji.
    let (_fx, page) = session(BrowserSurfaceIdentity::new(
        "console", "build-1", "sess-2", "tab-2",
    ));
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let id = "\u{1F600}".repeat(60);
    let text = match page.connect(id.as_str()) {
        Ok(a) => serde_json::to_string(&a).unwrap(),
        // The session refuses such an id itself: send it by hand.
        Err(_) => {
            let a = page.connect("conn-x").unwrap();
            serde_json::to_string(&a).unwrap().replace("conn-x", &id)
        }
    };
    ws.send(Message::Text(text.into())).await.unwrap();
    let (code, reason) = closed(&mut ws).await;
    assert_eq!(code, CloseCode::Policy);
    assert!(reason.len() <= 123, "{} bytes", reason.len());
    assert!(
        reason.bytes().all(|b| b.is_ascii_graphic() || b == b' '),
        "{reason}"
    );
    assert!(
        reason.starts_with("announcement refused") || reason.starts_with("connection refused"),
        "{reason}"
    );
}

/// A host with `limits` whose `/ws/{session}` is the page socket of that
/// session (user `u1`).
async fn serve_sessions(host: Host) -> String {
    async fn socket(
        State(host): State<Host>,
        axum::extract::Path(session): axum::extract::Path<String>,
        upgrade: WebSocketUpgrade,
    ) -> Response {
        host.page_socket(upgrade, session, "u1", |_| {})
    }
    let app = axum::Router::new()
        .route("/ws/{session}", axum::routing::get(socket))
        .with_state(host);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    tokio::spawn(surface_host::server::serve(
        listener,
        app,
        surface_host::server::ServeOptions::default(),
    ));
    url
}

/// The HTTP status of a refused upgrade.
fn refused_status(error: tokio_tungstenite::tungstenite::Error) -> u16 {
    match error {
        tokio_tungstenite::tungstenite::Error::Http(response) => response.status().as_u16(),
        other => panic!("not an HTTP refusal: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_sockets_are_bounded_per_session_and_per_host() {
    let host = Host::builder(Database::Memory)
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .page_sockets(PageSocketLimits {
            per_session: 2,
            total: 3,
        })
        .build()
        .await
        .unwrap();
    let url = serve_sessions(host).await;
    let (a1, _) = tokio_tungstenite::connect_async(format!("{url}/sess-a"))
        .await
        .unwrap();
    let (_a2, _) = tokio_tungstenite::connect_async(format!("{url}/sess-a"))
        .await
        .unwrap();
    // A third socket of sess-a: 429 before the upgrade.
    let third = tokio_tungstenite::connect_async(format!("{url}/sess-a")).await;
    assert_eq!(refused_status(third.unwrap_err()), 429);
    // Another session still gets one, up to the host's 3.
    let (_b1, _) = tokio_tungstenite::connect_async(format!("{url}/sess-b"))
        .await
        .unwrap();
    let fourth = tokio_tungstenite::connect_async(format!("{url}/sess-c")).await;
    assert_eq!(refused_status(fourth.unwrap_err()), 429);
    // A closed socket gives its place back.
    drop(a1);
    let mut reopened = None;
    for _ in 0..500 {
        if let Ok((ws, _)) = tokio_tungstenite::connect_async(format!("{url}/sess-c")).await {
            reopened = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        reopened.is_some(),
        "the closed socket's place is free again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_tab_on_one_socket_closes_it() {
    let host = host().await;
    let url = serve(host, Events::default()).await;
    let (_fx, page) = session(identity());
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let first = serde_json::to_string(&page.connect("conn-ws-1").unwrap()).unwrap();
    ws.send(Message::Text(first.clone().into())).await.unwrap();
    // The same announcement again is accepted (skipped); another tab id
    // on this socket is not.
    ws.send(Message::Text(first.clone().into())).await.unwrap();
    let other = first.replace("\"tab-1\"", "\"tab-2\"");
    assert_ne!(other, first);
    ws.send(Message::Text(other.into())).await.unwrap();
    let (code, reason) = closed(&mut ws).await;
    assert_eq!(code, CloseCode::Policy);
    assert_eq!(reason, "a second tab on one socket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identical_announcement_writes_nothing() {
    let host = host().await;
    let (_fx, page) = session(identity());
    let (tab, _calls) = host
        .open_connection(AuthenticatedConnection::new("conn-1", "sess-1", "u1"))
        .unwrap();
    let announcement = page.connect("conn-1").unwrap();
    let first = tab
        .receive(BrowserToHostMessage::Announcement(Box::new(
            announcement.clone(),
        )))
        .await
        .unwrap();
    assert!(matches!(first, Received::Announcement { .. }), "{first:?}");
    let lease = |host: &Host| {
        let host = host.clone();
        async move {
            host.store()
                .surface("tab-1")
                .await
                .unwrap()
                .map(|l| l.updated_at_ms)
        }
    };
    let written = lease(&host).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let again = tab
        .receive(BrowserToHostMessage::Announcement(Box::new(
            announcement.clone(),
        )))
        .await
        .unwrap();
    assert_eq!(again, Received::Unchanged);
    assert_eq!(
        lease(&host).await,
        written,
        "the lease row is not rewritten"
    );
    // A changed one is accepted again.
    let mut changed = announcement;
    changed.snapshot.procedures[0].contextual_note = Some("changed".into());
    let third = tab
        .receive(BrowserToHostMessage::Announcement(Box::new(changed)))
        .await
        .unwrap();
    assert!(matches!(third, Received::Announcement { .. }), "{third:?}");
}

/// Every event's fields, written as `tracing-subscriber`'s `fmt` writes
/// them: `%` values and `&str` values as they are, `?` values as Debug.
struct Captured(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl tracing::Subscriber for Captured {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = String::new();
        event.record(&mut Fields(&mut line));
        let mut out = self.0.lock().unwrap();
        out.push_str(&line);
        out.push('\n');
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_supplied_ids_cannot_forge_log_lines() {
    let log = Arc::new(Mutex::new(String::new()));
    tracing::subscriber::set_global_default(Captured(log.clone())).unwrap();
    let host = host().await;
    let url = serve(host, Events::default()).await;
    // The socket is sess-1's; this page's session id carries a line of
    // its own.
    let (_fx, page) = session(identity());
    let text = serde_json::to_string(&page.connect("conn-ws-1").unwrap())
        .unwrap()
        .replace("\"sess-1\"", "\"sess-9\\nFORGED admin signed in\"");
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    ws.send(Message::Text(text.into())).await.unwrap();
    let (code, _) = closed(&mut ws).await;
    assert_eq!(code, CloseCode::Policy);
    let mut logged = String::new();
    for _ in 0..500 {
        logged = log.lock().unwrap().clone();
        if logged.contains("closing a page socket") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(logged.contains("FORGED admin signed in"), "{logged}");
    assert!(
        !logged.lines().any(|l| l.starts_with("FORGED")),
        "a forged line: {logged}"
    );
}
