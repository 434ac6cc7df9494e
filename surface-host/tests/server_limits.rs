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

/// A body that never finishes arriving (8 of 100 announced bytes) ends at
/// the body-read timeout: the route answers 400 instead of holding the
/// connection for as long as the peer likes.
#[tokio::test]
async fn a_body_that_never_finishes_is_cut_at_the_body_read_timeout() {
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(|body: axum::body::Bytes| async move { format!("{}", body.len()) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = ServeOptions {
        body_read_timeout: Duration::from_millis(400),
        ..ServeOptions::default()
    };
    let task = tokio::spawn(serve(listener, app, options));
    let started = Instant::now();
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n12345678")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut answer))
        .await
        .expect("the server ends the request within 5 s")
        .ok();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(started.elapsed() >= Duration::from_millis(400));
    task.abort();
}

/// At `max_connections` open connections the next one is not served
/// until one of them ends.
#[tokio::test]
async fn connections_past_the_bound_wait_until_one_ends() {
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = ServeOptions {
        max_connections: 2,
        ..ServeOptions::default()
    };
    let task = tokio::spawn(serve(listener, app, options));
    let first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _second = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
    third
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    let waited = tokio::time::timeout(
        Duration::from_millis(500),
        third.read_to_string(&mut answer),
    )
    .await;
    assert!(waited.is_err(), "served past the bound: {answer}");
    drop(first);
    tokio::time::timeout(Duration::from_secs(5), third.read_to_string(&mut answer))
        .await
        .expect("served once a connection ended")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    task.abort();
}
