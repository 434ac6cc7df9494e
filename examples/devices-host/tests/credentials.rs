//! The host accepts the session WebSocket and proxies `/rpc` only for a
//! page holding the cookie it issued, and the socket only from its own
//! origin. No browser and no backend are needed: every request here is
//! refused before the backend would be reached.

use devices_host::{serve, HostConfig, Running, COOKIE};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Error as WsError;

async fn host() -> Running {
    serve(HostConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        // Nothing listens there: a request that got through would fail
        // with 502, not with the statuses asserted below.
        backend_rpc: "http://127.0.0.1:9/rpc".into(),
        backend_authorization: "Bearer user-token".into(),
        page_dir: std::env::temp_dir(),
    })
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
        set_cookie.ends_with("; Path=/; HttpOnly; SameSite=Strict"),
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
