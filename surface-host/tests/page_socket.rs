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
use surface_host::host::{Database, Host, PageSocketEvent};
use surface_runtime::host::{
    BrowserSurfaceIdentity, BrowserSurfaceSession, BrowserSurfaceSessionOptions, KnownBuild,
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
