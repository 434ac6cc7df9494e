//! The host accepts the session WebSocket and proxies `/rpc` only for a
//! page holding the cookie it issued, and the socket only from its own
//! origin. No browser and no backend are needed: every request here is
//! refused before the backend would be reached.

use devices_host::{serve, HostConfig, Running, COOKIE};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Error as WsError;

async fn host() -> Running {
    // Nothing listens at the backend: a request that got through would
    // fail with 502, not with the statuses asserted below.
    serve(HostConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        "http://127.0.0.1:9/rpc",
        std::env::temp_dir(),
    ))
    .await
    .expect("the host starts")
}

/// Loads the page like a browser and returns its `agent_session` cookie.
async fn page_cookie(host: &Running) -> String {
    let response = reqwest::get(host.url()).await.unwrap();
    assert_eq!(response.status(), 200);
    let set_cookie = response
        .headers()
        .get("set-cookie")
        .expect("the page load issues a cookie")
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        set_cookie.ends_with("; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200"),
        "{set_cookie}"
    );
    let pair = set_cookie.split(';').next().unwrap().to_string();
    let token = pair
        .strip_prefix(&format!("{COOKIE}="))
        .expect("the cookie's name");
    assert_eq!(token.len(), 64, "32 random bytes, hex");
    pair
}

/// The HTTP status the socket upgrade is answered with (101 = accepted).
async fn upgrade_status(host: &Running, cookie: Option<&str>, origin: Option<&str>) -> u16 {
    let url = format!("ws://{}/agent/ws", host.addr);
    let mut request = url.into_client_request().unwrap();
    if let Some(cookie) = cookie {
        request
            .headers_mut()
            .insert("cookie", HeaderValue::from_str(cookie).unwrap());
    }
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("origin", HeaderValue::from_str(origin).unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((_socket, response)) => response.status().as_u16(),
        Err(WsError::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("unexpected WebSocket error: {e}"),
    }
}

#[tokio::test]
async fn the_session_socket_needs_the_cookie_the_host_issued() {
    let host = host().await;
    let origin = format!("http://{}", host.addr);
    assert_eq!(upgrade_status(&host, None, Some(&origin)).await, 401);
    let forged = format!("{COOKIE}={}", "ab".repeat(32));
    assert_eq!(
        upgrade_status(&host, Some(&forged), Some(&origin)).await,
        401
    );
    let cookie = page_cookie(&host).await;
    assert_eq!(
        upgrade_status(&host, Some(&cookie), Some(&origin)).await,
        101
    );
}

#[tokio::test]
async fn the_session_socket_refuses_another_origin_even_with_the_cookie() {
    let host = host().await;
    let cookie = page_cookie(&host).await;
    assert_eq!(
        upgrade_status(&host, Some(&cookie), Some("http://evil.example")).await,
        403
    );
    assert_eq!(upgrade_status(&host, Some(&cookie), None).await, 403);
}

#[tokio::test]
async fn the_rpc_proxy_refuses_a_request_without_a_session() {
    let host = host().await;
    let response = reqwest::Client::new()
        .post(format!("http://{}/rpc/devices/list", host.addr))
        .header("origin", format!("http://{}", host.addr))
        .header("content-type", "application/json")
        .body(r#"{"json":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["json"]["code"], "UNAUTHORIZED");
    assert_eq!(body["json"]["message"], "No session: reload the page.");
}

/// The issue's reproductions against this host (docs/host.md, "Threat
/// model"): each is refused before the backend would be reached (a request
/// that got through would be answered 502: nothing listens there).
#[tokio::test]
async fn rebinding_cross_origin_and_path_escapes_are_refused() {
    let host = host().await;
    let cookie = page_cookie(&host).await;
    let own = format!("http://{}", host.addr);
    let evil = format!("evil.example:{}", host.addr.port());
    let client = reqwest::Client::new();
    let post = |path: &str| {
        client
            .post(format!("http://{}{path}", host.addr))
            .header("cookie", &cookie)
            .body(r#"{"json":{"deviceIds":["dev-1"]}}"#)
    };
    let status = |r: reqwest::Response| r.status().as_u16();
    // 1. DNS rebinding: a foreign Host gets neither a cookie nor a call.
    let r = client
        .get(host.url())
        .header("host", &evil)
        .send()
        .await
        .unwrap();
    assert_eq!(status(r), 403);
    let r = post("/rpc/devices/rename")
        .header("host", &evil)
        .header("origin", format!("http://{evil}"))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(status(r), 403);
    // 2. CSRF: a foreign Origin, or no JSON content type.
    let r = post("/rpc/devices/disable")
        .header("origin", "http://evil.example")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(status(r), 403);
    let r = post("/rpc/devices/disable")
        .header("origin", &own)
        .send()
        .await
        .unwrap();
    assert_eq!(status(r), 415);
    for path in ["/app/session", "/app/turn"] {
        let r = post(path)
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(status(r), 403, "{path}");
    }
    // 3. The proxy stays inside the procedure namespace.
    let r = post("/rpc/..%2fgateway%2fcapabilities%2fdescribe")
        .header("origin", &own)
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(status(r), 400);
    // 5. No session, large body: 401, the body unread.
    let r = client
        .post(format!("http://{}/app/turn", host.addr))
        .header("origin", &own)
        .body("x".repeat(3 * 1024 * 1024))
        .send()
        .await;
    if let Ok(r) = r {
        assert_eq!(status(r), 401);
    }
}

/// 4. A flood of page loads does not lock a user out.
#[tokio::test]
async fn a_flood_of_page_loads_leaves_room_for_users() {
    let host = host().await;
    for _ in 0..1_100 {
        let r = reqwest::get(host.url()).await.unwrap();
        assert_eq!(r.status(), 200);
    }
    page_cookie(&host).await;
}

#[tokio::test]
async fn turn_reports_are_bounded() {
    let host = host().await;
    let cookie = page_cookie(&host).await;
    let origin = format!("http://{}", host.addr);
    let http = reqwest::Client::new();
    // No socket: every turn is "Not run" and reported.
    for _ in 0..devices_host::MAX_KEPT_REPORTS + 5 {
        let response = http
            .post(format!("{origin}/app/turn"))
            .header("origin", &origin)
            .header("cookie", &cookie)
            .header("content-type", "application/json")
            .body(r#"{"json":{"script":"disable"}}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let reports = host.reports();
    assert_eq!(reports.len(), 100);
    assert_eq!(devices_host::MAX_KEPT_REPORTS, 100);
    assert_eq!(
        reports[0].summary,
        "Not run: this page has no live agent session yet; wait until it is connected."
    );
}

#[tokio::test]
async fn two_session_cookies_are_refused_and_the_page_cannot_be_framed() {
    let host = host().await;
    let mine = page_cookie(&host).await;
    let theirs = page_cookie(&host).await;
    let origin = format!("http://{}", host.addr);
    // A page on another loopback port wrote `agent_session=…; Path=/app`.
    let response = reqwest::Client::new()
        .post(format!("{origin}/app/session"))
        .header("origin", &origin)
        .header("cookie", format!("{theirs}; {mine}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"json": {"code": "UNAUTHORIZED", "defined": false, "status": 401,
            "message": "Two session cookies (another page on this host set one): reload the page."}})
    );
    assert_eq!(
        upgrade_status(&host, Some(&format!("{theirs}; {mine}")), Some(&origin)).await,
        401
    );
    let page = reqwest::get(host.url()).await.unwrap();
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert_eq!(
        csp,
        format!(
            "default-src 'none'; script-src 'self' 'wasm-unsafe-eval' \
             'sha256-Bhapdp9OBlM3hmxdRWS8zyyFgSquj0C5R7l6C4tsTWM='; \
             style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
             connect-src 'self' ws://{}; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'",
            host.addr
        )
    );
}
