//! `server::serve` against a silent peer, over a real loopback socket: a
//! connection whose headers never complete is closed at the header-read
//! timeout (with `axum::serve` it stayed open indefinitely).

use std::time::{Duration, Instant};

use surface_host::server::{serve, ServeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_connection_whose_headers_never_complete_is_closed() {
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = ServeOptions {
        header_read_timeout: Duration::from_millis(500),
        ..ServeOptions::default()
    };
    let task = tokio::spawn(serve(listener, app, options));

    // A complete request is answered.
    let mut ok = tokio::net::TcpStream::connect(addr).await.unwrap();
    ok.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), ok.read_to_string(&mut answer))
        .await
        .expect("a complete request is answered within 5 s")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // Headers that never end: the server closes the connection.
    let started = Instant::now();
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    silent
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), silent.read_to_end(&mut rest))
        .await
        .expect("the server did not close a connection whose headers never completed within 10 s")
        .ok();
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "closed before the timeout: {:?}",
        started.elapsed()
    );
    task.abort();
}

#[tokio::test]
async fn serve_with_shutdown_answers_then_returns_ok_when_told_to_stop() {
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(surface_host::server::serve_with_shutdown(
        listener,
        app,
        ServeOptions::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let mut ok = tokio::net::TcpStream::connect(addr).await.unwrap();
    ok.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    ok.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    stop.send(()).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("serve_with_shutdown returns after the signal")
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    // No longer accepting: the listener was dropped with the server.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
