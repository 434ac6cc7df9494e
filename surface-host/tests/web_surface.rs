//! The page host's HTTP surface (`web`) against an attacker on loopback,
//! over real sockets: a page router built from the guard, the session
//! table and the proxy, in front of a fake backend that records what
//! reaches it. One test per defect of the example host it replaces: DNS
//! rebinding, cross-origin requests through `/rpc`, a proxy path leaving
//! its prefix, a flood of page loads, a body read before authentication.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use surface_host::web::{
    orpc_error, page_guard, PageOrigin, PageSessions, ProxyLimits, RpcProxy, SessionLimits,
};

struct App {
    sessions: PageSessions<String>,
    proxy: RpcProxy,
}

async fn index(State(app): State<Arc<App>>) -> Response {
    match app.sessions.issue("user-1".into()) {
        Ok(issued) => ([(header::SET_COOKIE, issued.set_cookie)], "page").into_response(),
        Err(full) => (StatusCode::SERVICE_UNAVAILABLE, full.to_string()).into_response(),
    }
}

async fn turn(State(app): State<Arc<App>>, headers: HeaderMap, request: Request) -> Response {
    if app.sessions.authenticate(&headers).is_none() {
        return orpc_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "no session");
    }
    match axum::body::to_bytes(request.into_body(), 64 * 1024).await {
        Ok(_) => "ran".into_response(),
        Err(_) => StatusCode::PAYLOAD_TOO_LARGE.into_response(),
    }
}

async fn rpc(State(app): State<Arc<App>>, headers: HeaderMap, request: Request) -> Response {
    if app.sessions.authenticate(&headers).is_none() {
        return orpc_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "no session");
    }
    let raw = request
        .uri()
        .path()
        .strip_prefix("/rpc/")
        .unwrap_or("")
        .to_string();
    app.proxy.forward(&raw, request).await
}

struct Setup {
    addr: SocketAddr,
    /// Paths the backend received.
    backend_saw: Arc<Mutex<Vec<String>>>,
}

async fn setup(limits: SessionLimits) -> Setup {
    let backend_saw = Arc::new(Mutex::new(Vec::new()));
    let saw = backend_saw.clone();
    let backend = Router::new().fallback(any(move |request: Request| {
        let saw = saw.clone();
        async move {
            saw.lock().unwrap().push(request.uri().path().to_string());
            (
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"json":{"ok":true}}"#,
            )
        }
    }));
    let backend_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend_addr = backend_listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(backend_listener, backend).await.unwrap() });

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let proxy = RpcProxy::new(
        &format!("http://{backend_addr}/rpc"),
        "Bearer backend-secret",
        ["devices.disable", "devices.rename"],
        ProxyLimits::default(),
    )
    .unwrap();
    let app = Arc::new(App {
        sessions: PageSessions::new("agent_session", limits),
        proxy,
    });
    let origin = Arc::new(PageOrigin::for_bind(addr));
    let router = Router::new()
        .route("/", get(index))
        .route("/app/turn", post(turn))
        .route("/rpc/{*path}", any(rpc))
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(origin, page_guard));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    Setup { addr, backend_saw }
}

/// A raw HTTP/1.1 exchange (the request exactly as written, like
/// `curl --path-as-is`): the status and the body.
async fn raw(addr: SocketAddr, request: String) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("the host answered within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text[9..12].parse().unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_string(), body.to_string())
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    format!("{text}\r\n{body}")
}

/// `GET /` from the page's own origin: the cookie pair `agent_session=…`.
async fn cookie(addr: SocketAddr) -> String {
    let host = addr.to_string();
    let (status, head, _) = raw(addr, request("GET", "/", &[("Host", &host)], "")).await;
    assert_eq!(status, 200, "{head}");
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap();
    line["set-cookie:".len()..]
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string()
}

const BODY: &str = r#"{"json":{"deviceId":"dev-locked","name":"renamed-by-evil"}}"#;

#[tokio::test]
async fn dns_rebinding_host_names_are_refused() {
    let s = setup(SessionLimits::default()).await;
    let cookie = cookie(s.addr).await;
    let evil = format!("evil.example:{}", s.addr.port());
    let evil_origin = format!("http://{evil}");
    let (status, _, body) = raw(s.addr, request("GET", "/", &[("Host", &evil)], "")).await;
    assert_eq!(status, 403, "no cookie for a foreign Host: {body}");
    let headers = [
        ("Host", evil.as_str()),
        ("Origin", &evil_origin),
        ("Cookie", &cookie),
        ("Content-Type", "application/json"),
    ];
    let (status, _, body) = raw(
        s.addr,
        request("POST", "/rpc/devices/rename", &headers, BODY),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("is not one this host serves"), "{body}");
    assert!(s.backend_saw.lock().unwrap().is_empty());
}

#[tokio::test]
async fn cross_origin_and_untyped_rpc_calls_are_refused() {
    let s = setup(SessionLimits::default()).await;
    let cookie = cookie(s.addr).await;
    let host = s.addr.to_string();
    let own = format!("http://{host}");
    let other_port = format!("http://127.0.0.1:{}", s.addr.port() + 1);
    let disable = r#"{"json":{"deviceIds":["dev-1"]}}"#;
    for origin in ["http://evil.example", other_port.as_str()] {
        let headers = [
            ("Host", host.as_str()),
            ("Origin", origin),
            ("Cookie", &cookie),
            ("Content-Type", "application/json"),
        ];
        let (status, _, body) = raw(
            s.addr,
            request("POST", "/rpc/devices/disable", &headers, disable),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {body}");
    }
    let headers = [
        ("Host", host.as_str()),
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
    ];
    let (status, _, body) = raw(
        s.addr,
        request("POST", "/rpc/devices/disable", &headers, disable),
    )
    .await;
    assert_eq!(status, 403, "neither Origin nor Referer: {body}");
    let referer = format!("{own}/index.html");
    let headers = [
        ("Host", host.as_str()),
        ("Referer", &referer),
        ("Cookie", &cookie),
        ("Content-Type", "text/plain"),
    ];
    let (status, _, body) = raw(
        s.addr,
        request("POST", "/rpc/devices/disable", &headers, disable),
    )
    .await;
    assert_eq!(status, 415, "a body without the JSON content type: {body}");
    let headers = [
        ("Host", host.as_str()),
        ("Origin", &own),
        ("Cookie", &cookie),
        ("Content-Type", "application/json"),
    ];
    let (status, _, body) = raw(
        s.addr,
        request(
            "POST",
            "/app/turn",
            &[
                ("Host", host.as_str()),
                ("Origin", "http://evil.example"),
                ("Cookie", &cookie),
            ],
            "{}",
        ),
    )
    .await;
    assert_eq!(status, 403, "/app/turn from another origin: {body}");
    assert!(s.backend_saw.lock().unwrap().is_empty());
    let (status, _, body) = raw(
        s.addr,
        request("POST", "/rpc/devices/disable", &headers, disable),
    )
    .await;
    assert_eq!(status, 200, "the page's own call: {body}");
    assert_eq!(*s.backend_saw.lock().unwrap(), ["/rpc/devices/disable"]);
}

#[tokio::test]
async fn proxy_paths_stay_inside_the_known_procedures() {
    let s = setup(SessionLimits::default()).await;
    let cookie = cookie(s.addr).await;
    let host = s.addr.to_string();
    let own = format!("http://{host}");
    let headers = [
        ("Host", host.as_str()),
        ("Origin", own.as_str()),
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
    ];
    for path in [
        "/rpc/..%2fgateway%2fcapabilities%2fdescribe",
        "/rpc/%2e%2e/gateway/capabilities/describe",
        "/rpc/..%5cgateway",
        "/rpc/devices/../gateway/capabilities/describe",
        "/rpc/devices//disable",
    ] {
        let (status, _, body) =
            raw(s.addr, request("POST", path, &headers, r#"{"json":{}}"#)).await;
        assert_eq!(status, 400, "{path}: {body}");
    }
    let (status, _, body) = raw(
        s.addr,
        request("POST", "/rpc/gateway/capabilities/describe", &headers, "{}"),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(
        s.backend_saw.lock().unwrap().is_empty(),
        "{:?}",
        s.backend_saw
    );
}

#[tokio::test]
async fn a_flood_of_page_loads_does_not_lock_out_a_user() {
    let limits = SessionLimits {
        max_sessions: 50,
        ..SessionLimits::default()
    };
    let s = setup(limits).await;
    let host = s.addr.to_string();
    let own = format!("http://{host}");
    // A real user: loads the page and uses the session.
    let user = cookie(s.addr).await;
    let headers = [
        ("Host", host.as_str()),
        ("Origin", own.as_str()),
        ("Cookie", user.as_str()),
    ];
    assert_eq!(
        raw(s.addr, request("POST", "/app/turn", &headers, "{}"))
            .await
            .0,
        200
    );
    // The flood: three times the bound.
    for _ in 0..150 {
        let (status, _, body) = raw(s.addr, request("GET", "/", &[("Host", &host)], "")).await;
        assert_eq!(status, 200, "{body}");
    }
    // A new user still gets in, and the first one's session survived.
    let late = cookie(s.addr).await;
    let headers_late = [
        ("Host", host.as_str()),
        ("Origin", own.as_str()),
        ("Cookie", late.as_str()),
    ];
    assert_eq!(
        raw(s.addr, request("POST", "/app/turn", &headers_late, "{}"))
            .await
            .0,
        200
    );
    assert_eq!(
        raw(s.addr, request("POST", "/app/turn", &headers, "{}"))
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn an_unauthenticated_body_is_not_read() {
    let s = setup(SessionLimits::default()).await;
    let host = s.addr.to_string();
    let own = format!("http://{host}");
    let big = "x".repeat(3 * 1024 * 1024);
    let headers = [("Host", host.as_str()), ("Origin", own.as_str())];
    let (status, _, body) = raw(s.addr, request("POST", "/app/turn", &headers, &big)).await;
    assert_eq!(status, 401, "{body}");
}
