//! `Host::pages` over loopback HTTP and a real WebSocket (docs/host.md,
//! "The page service"): the page load's cookie, `/app/session`, the
//! socket updating the session's tab, `/app/mcp-run` (a run and a token
//! that works), `/app/run` (only the owning session's runs), the page's
//! files, the guard and the bounds.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;

use std::time::Duration;

use futures_util::SinkExt;
use host_support::*;
use serde_json::{json, Value};
use surface_host::host::{Database, Host, PageRecord, PagesOptions, PagesService, PAGE_COOKIE};
use surface_host::web::PageOrigin;
use surface_runtime::host::{
    BrowserSurfaceIdentity, BrowserSurfaceSession, BrowserSurfaceSessionOptions, KnownBuild,
};
use surface_runtime::AgentConsumer;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

struct Served {
    host: Host,
    pages: PagesService,
    base: String,
    dir: std::path::PathBuf,
}

async fn serve() -> Served {
    let host = Host::builder(Database::Memory)
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dir = std::env::temp_dir().join(format!(
        "pages-service-{}-{}",
        std::process::id(),
        addr.port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("app.js"), "export {};").unwrap();
    std::fs::write(dir.join("secret.txt"), "no").unwrap();
    std::fs::write(dir.join("help.html"), "<p>help</p>").unwrap();
    let options = PagesOptions::new(PageOrigin::for_bind(addr), "<p>page</p>", |_: &_| {
        Some("user-1".to_string())
    })
    .files(
        "/pkg",
        &dir,
        &[
            ("app.js", "text/javascript"),
            ("gone.wasm", "application/wasm"),
            ("help.html", "text/html; charset=utf-8"),
        ],
    );
    let pages = host.pages(options);
    let app = pages.router().route_service("/mcp", host.mcp_service());
    tokio::spawn(surface_host::server::serve(
        listener,
        app,
        surface_host::server::ServeOptions::default(),
    ));
    Served {
        host,
        pages,
        base: format!("http://{addr}"),
        dir,
    }
}

impl Served {
    /// Loads the page; its `NAME=VALUE` cookie.
    async fn cookie(&self) -> String {
        let response = reqwest::get(format!("{}/", self.base)).await.unwrap();
        assert_eq!(response.status(), 200);
        let h = |n: &str| response.headers()[n].to_str().unwrap().to_string();
        assert_eq!(h("content-type"), "text/html; charset=utf-8");
        assert_eq!(h("cache-control"), "no-store");
        let set_cookie = h("set-cookie");
        let (pair, attributes) = set_cookie.split_once(';').unwrap();
        assert_eq!(
            attributes,
            " Path=/; HttpOnly; SameSite=Strict; Max-Age=43200"
        );
        assert_eq!(pair.len(), PAGE_COOKIE.len() + 1 + 64);
        assert_eq!(response.text().await.unwrap(), "<p>page</p>");
        pair.to_string()
    }

    /// POSTs `body` to `path` from the page's origin; status and JSON.
    async fn post(&self, path: &str, cookie: Option<&str>, body: String) -> (u16, Value) {
        let mut request = reqwest::Client::new()
            .post(format!("{}{path}", self.base))
            .header("origin", &self.base)
            .header("content-type", "application/json")
            .body(body);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

fn refusal(status: u16, code: &str, message: &str) -> Value {
    json!({"json": {"defined": false, "code": code, "status": status, "message": message}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_session_learns_its_tab_and_gets_an_mcp_run_and_its_approvals() {
    let s = serve().await;
    let cookie = s.cookie().await;
    let (status, session) = s.post("/app/session", Some(&cookie), String::new()).await;
    assert_eq!(status, 200);
    let session_id = session["json"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(session_id.len(), "sess-".len() + 32);
    assert_eq!(
        session["json"],
        json!({"sessionId": session_id, "userId": "user-1", "socketPath": "/agent/ws"})
    );
    // No socket yet: no run.
    let no_tab = "This page has no live agent session yet; wait until it is connected.";
    let tab_1 = || json!({"json": {"tabId": "tab-1"}}).to_string();
    assert_eq!(
        s.post("/app/mcp-run", Some(&cookie), tab_1()).await,
        (409, refusal(409, "CONFLICT", no_tab))
    );

    // The page's socket: its announcement names the tab.
    let fx = Fixture::new();
    let identity = BrowserSurfaceIdentity::new("console", "build-1", &session_id, "tab-1");
    let page = BrowserSurfaceSession::new(BrowserSurfaceSessionOptions::new(
        fx.registry.clone(),
        identity,
        AgentConsumer::embedded("user-1"),
    ));
    let mut request = format!("{}/agent/ws", s.base.replace("http", "ws"))
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert("cookie", HeaderValue::from_str(&cookie).unwrap());
    headers.insert("origin", HeaderValue::from_str(&s.base).unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let announcement = serde_json::to_string(&page.connect("conn-1").unwrap()).unwrap();
    ws.send(Message::Text(announcement.into())).await.unwrap();
    let live = PageRecord {
        session_id: session_id.clone(),
        user_id: "user-1".into(),
        tab_id: Some("tab-1".into()),
        connection_id: Some("conn-1".into()),
    };
    for _ in 0..500 {
        if s.pages.sessions() == [live.clone()] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(s.pages.sessions(), std::slice::from_ref(&live));
    assert_eq!(live.live_tab(), Some("tab-1"));

    // Only for the tab the calling page announced: a page whose session
    // now names another tab (its cookie was replaced) is told to reload.
    assert_eq!(
        s.post("/app/mcp-run", Some(&cookie), String::new()).await,
        (
            400,
            refusal(
                400,
                "BAD_REQUEST",
                "tabId is required: the tab this page announced"
            )
        )
    );
    let elsewhere = json!({"json": {"tabId": "tab-victim"}}).to_string();
    assert_eq!(
        s.post("/app/mcp-run", Some(&cookie), elsewhere).await,
        (
            409,
            refusal(
                409,
                "CONFLICT",
                "This page's session now belongs to another tab (another page on this host may have replaced its cookie): reload the page."
            )
        )
    );
    // An MCP run on the tab, and a token that reaches its tools.
    let (status, run) = s.post("/app/mcp-run", Some(&cookie), tab_1()).await;
    assert_eq!(status, 200);
    let run_id = run["json"]["runId"].as_str().unwrap().to_string();
    let token = run["json"]["token"].as_str().unwrap();
    assert_eq!((run_id.len(), token.len()), ("run-".len() + 32, 64));
    assert!(run_id.starts_with("run-"));
    assert_eq!(run["json"]["mcpUrl"], format!("{}/mcp", s.base));
    assert_eq!(s.pages.run_owner(&run_id), Some(session_id));
    let tools = s.host.mcp().tools(&run_id).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "devices__list"));
    let host_tools = s.host.tools_for_run(&run_id).await.unwrap();
    assert!(host_tools
        .iter()
        .any(|t| t.capability_id() == "domain:devices.list"));
    assert!(s
        .host
        .tools_for_run("run-unknown")
        .await
        .unwrap()
        .is_empty());

    // Its approvals: none yet.
    let body = json!({"json": {"runId": run_id}}).to_string();
    assert_eq!(
        s.post("/app/run", Some(&cookie), body.clone()).await,
        (200, json!({"json": {"runId": run_id, "approvals": []}}))
    );
    // Another page session does not see it.
    let other = s.cookie().await;
    let not_found = refusal(404, "NOT_FOUND", "No such run in this session.");
    assert_eq!(
        s.post("/app/run", Some(&other), body).await,
        (404, not_found)
    );
    assert_eq!(
        s.post("/app/run", Some(&cookie), "{}".into()).await,
        (400, refusal(400, "BAD_REQUEST", "runId is required"))
    );
    let large = format!("{{\"json\":{{\"runId\":\"{}\"}}}}", "x".repeat(4 * 1024));
    assert_eq!(
        s.post("/app/run", Some(&cookie), large).await,
        (
            413,
            refusal(413, "PAYLOAD_TOO_LARGE", "the request is too large")
        )
    );

    // A session keeps at most 8 runs active: the ninth ends the first,
    // whose token then stops working.
    for _ in 1..surface_host::host::MAX_RUNS_PER_PAGE_SESSION {
        let (status, _) = s.post("/app/mcp-run", Some(&cookie), tab_1()).await;
        assert_eq!(status, 200);
    }
    assert!(s.host.durable().host().run(&run_id).is_some());
    let (status, _) = s.post("/app/mcp-run", Some(&cookie), tab_1()).await;
    assert_eq!(status, 200);
    assert!(
        s.host.durable().host().run(&run_id).is_none(),
        "the oldest run ended"
    );
    assert!(
        s.host.mcp().tools(&run_id).await.unwrap().is_empty(),
        "an ended run has no tools"
    );

    // The socket closes: the tab is no longer live.
    ws.close(None).await.unwrap();
    let mine = || {
        let sessions = s.pages.sessions().into_iter();
        sessions.filter(|r| r.tab_id.is_some()).collect::<Vec<_>>()
    };
    for _ in 0..500 {
        if mine()[0].connection_id.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let closed = PageRecord {
        connection_id: None,
        ..live
    };
    assert_eq!(mine(), std::slice::from_ref(&closed));
    assert_eq!(closed.live_tab(), None);
}

#[tokio::test]
async fn every_route_but_the_page_needs_the_cookie_and_the_page_origin() {
    let s = serve().await;
    let no_session = refusal(401, "UNAUTHORIZED", "No session: reload the page.");
    for path in ["/app/session", "/app/run", "/app/mcp-run"] {
        assert_eq!(
            s.post(path, None, String::new()).await,
            (401, no_session.clone()),
            "{path}"
        );
    }
    let forged = format!("{PAGE_COOKIE}={}", "ab".repeat(32));
    assert_eq!(
        s.post("/app/session", Some(&forged), String::new()).await,
        (401, no_session)
    );
    // Another origin: 403 before any handler.
    let cookie = s.cookie().await;
    let response = reqwest::Client::new()
        .post(format!("{}/app/session", s.base))
        .header("origin", "http://evil.example")
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        refusal(
            403,
            "FORBIDDEN",
            "the request comes from another origin (`http://evil.example`)"
        )
    );
    // The socket without the cookie: 401 before the upgrade.
    let mut request = format!("{}/agent/ws", s.base.replace("http", "ws"))
        .into_client_request()
        .unwrap();
    let origin = HeaderValue::from_str(&s.base).unwrap();
    request.headers_mut().insert("origin", origin);
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401)
        }
        other => panic!("the socket was not refused: {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn only_the_listed_files_are_served() {
    let s = serve().await;
    let file = reqwest::get(format!("{}/pkg/app.js", s.base))
        .await
        .unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(file.headers()["content-type"], "text/javascript");
    assert_eq!(file.headers()["cache-control"], "no-store");
    assert_eq!(file.text().await.unwrap(), "export {};");
    let unlisted = reqwest::get(format!("{}/pkg/secret.txt", s.base))
        .await
        .unwrap();
    assert_eq!(
        (unlisted.status().as_u16(), unlisted.text().await.unwrap()),
        (404, "Not found".into())
    );
    let missing = reqwest::get(format!("{}/pkg/gone.wasm", s.base))
        .await
        .unwrap();
    assert_eq!(
        (missing.status().as_u16(), missing.text().await.unwrap()),
        (404, "gone.wasm is missing: build the page".into())
    );
    let escape = reqwest::get(format!("{}/pkg/..%2Fsecret.txt", s.base))
        .await
        .unwrap();
    assert_eq!(escape.status(), 404);
}

#[tokio::test]
async fn a_fresh_gzip_copy_is_sent_to_a_browser_that_takes_gzip() {
    let s = serve().await;
    // Not real gzip: the test reads the bytes as sent (reqwest is built
    // without its decompression features).
    std::fs::write(s.dir.join("app.js.gz"), "GZIPPED").unwrap();
    let get = |accept: &'static str| {
        let url = format!("{}/pkg/app.js", s.base);
        async move {
            let mut request = reqwest::Client::new().get(url);
            if !accept.is_empty() {
                request = request.header("accept-encoding", accept);
            }
            let response = request.send().await.unwrap();
            let encoding = response
                .headers()
                .get("content-encoding")
                .map(|v| v.to_str().unwrap().to_string());
            assert_eq!(response.headers()["vary"], "accept-encoding");
            (encoding, response.text().await.unwrap())
        }
    };
    let gz = (Some("gzip".to_string()), "GZIPPED".to_string());
    let plain = (None, "export {};".to_string());
    assert_eq!(get("gzip, deflate, br").await, gz);
    assert_eq!(get("br, gzip;q=0").await, plain);
    assert_eq!(get("").await, plain);
    // A page rebuilt after its copy was written is sent as it is now.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(s.dir.join("app.js"), "export {};").unwrap();
    assert_eq!(get("gzip").await, plain);
}

#[tokio::test]
async fn host_serve_mounts_mcp_next_to_the_routes_and_stops_when_dropped() {
    let host = Host::builder(Database::Memory).build().await.unwrap();
    let routes = axum::Router::new().route("/hello", axum::routing::get(|| async { "hi" }));
    let served = host.serve(("127.0.0.1", 0), routes).await.unwrap();
    let base = format!("http://{}", served.addr());
    let hello = reqwest::get(format!("{base}/hello")).await.unwrap();
    assert_eq!(
        (hello.status().as_u16(), hello.text().await.unwrap()),
        (200, "hi".into())
    );
    let mcp = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status(), 401, "no bearer token");
    drop(served);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    assert!(
        client.get(format!("{base}/hello")).send().await.is_err(),
        "stopped"
    );
}

#[test]
fn a_fresh_page_identity_has_new_random_session_and_tab_ids() {
    let a = surface_host::host::fresh_page_identity("console", "build-1");
    let b = surface_host::host::fresh_page_identity("console", "build-1");
    assert_eq!(
        (a.app_id.as_str(), a.build_id.as_str()),
        ("console", "build-1")
    );
    let hex = |s: &str, prefix: &str| {
        let rest = s.strip_prefix(prefix).unwrap();
        rest.len() == 32 && rest.bytes().all(|c| c.is_ascii_hexdigit())
    };
    assert!(
        hex(&a.session_id, "sess-") && hex(&a.tab_id, "tab-"),
        "{a:?}"
    );
    assert_ne!((a.session_id, a.tab_id), (b.session_id, b.tab_id));
}

#[tokio::test]
async fn a_request_carrying_the_session_cookie_twice_is_refused() {
    let s = serve().await;
    let mine = s.cookie().await;
    let theirs = s.cookie().await;
    let value = |pair: &str| pair.split_once('=').unwrap().1.to_string();
    let twice = "Two session cookies (another page on this host set one): reload the page.";
    // Another port's page wrote `agent_session=THEIRS; Path=/app`: the
    // browser sends it first. Neither order authenticates.
    for cookies in [
        format!("{theirs}; {mine}"),
        format!("{mine}; {theirs}"),
        format!("{mine}; other=1; {PAGE_COOKIE}={}", value(&theirs)),
    ] {
        assert_eq!(
            s.post("/app/session", Some(&cookies), String::new()).await,
            (401, refusal(401, "UNAUTHORIZED", twice)),
            "{cookies}"
        );
        let (status, _) = s.post("/app/mcp-run", Some(&cookies), String::new()).await;
        assert_eq!(status, 401);
    }
    // The answer deletes the planted copies (every path of the request
    // but `/`, this host's own), so the reload it asks for works.
    let response = reqwest::Client::new()
        .post(format!("{}/app/mcp-run", s.base))
        .header("origin", &s.base)
        .header("cookie", format!("{theirs}; {mine}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let clears: Vec<&str> = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        clears,
        [
            format!("{PAGE_COOKIE}=; Path=/app; Max-Age=0"),
            format!("{PAGE_COOKIE}=; Path=/app/; Max-Age=0"),
            format!("{PAGE_COOKIE}=; Path=/app/mcp-run; Max-Age=0"),
        ]
    );
    // Two Cookie headers count too.
    let response = reqwest::Client::new()
        .post(format!("{}/app/session", s.base))
        .header("origin", &s.base)
        .header("cookie", &theirs)
        .header("cookie", &mine)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    // The socket: refused before the upgrade.
    let mut request = format!("{}/agent/ws", s.base.replace("http", "ws"))
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", HeaderValue::from_str(&s.base).unwrap());
    request.headers_mut().insert(
        "cookie",
        HeaderValue::from_str(&format!("{theirs}; {mine}")).unwrap(),
    );
    let refused = tokio_tungstenite::connect_async(request).await.unwrap_err();
    let tokio_tungstenite::tungstenite::Error::Http(response) = refused else {
        panic!("not an HTTP refusal: {refused:?}");
    };
    assert_eq!(response.status().as_u16(), 401);
    // One cookie still works.
    let (status, _) = s.post("/app/session", Some(&mine), String::new()).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_page_cannot_be_framed_and_loads_only_its_own_origin() {
    let host = Host::builder(Database::Memory)
        .known_build(KnownBuild::new("console", "build-1", authority()))
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let html = "<p>page</p><script type=\"module\">import init from \"/pkg/app.js\";</script>\
        <script src=\"/pkg/other.js\"></script>";
    let pages = host.pages(PagesOptions::new(
        PageOrigin::for_bind(addr),
        html,
        |_: &_| Some("user-1".to_string()),
    ));
    tokio::spawn(surface_host::server::serve(
        listener,
        pages.router(),
        surface_host::server::ServeOptions::default(),
    ));
    let response = reqwest::get(format!("http://{addr}/")).await.unwrap();
    assert_eq!(response.status(), 200);
    let h = |n: &str| response.headers()[n].to_str().unwrap().to_string();
    assert_eq!(h("x-frame-options"), "DENY");
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(h("cache-control"), "no-store");
    // sha256 of `import init from "/pkg/app.js";`, base64.
    let hash = surface_host::web::inline_script_hashes(html);
    assert_eq!(hash.len(), 1);
    assert_eq!(
        h("content-security-policy"),
        format!(
            "default-src 'none'; script-src 'self' 'wasm-unsafe-eval' '{}'; \
             style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
             connect-src 'self' ws://{addr}; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'",
            hash[0]
        )
    );
    assert_eq!(
        hash[0], "sha256-Dyu+607IVZXgK7EhxZxXPFQRbQC19KI9XTILgAgjeAs=",
        "the hash of the inline script"
    );
}

#[test]
fn over_https_the_cookie_is_a_host_cookie() {
    let sessions = surface_host::web::PageSessions::new(
        PAGE_COOKIE,
        surface_host::web::SessionLimits::default(),
    )
    .secure();
    assert_eq!(sessions.cookie_name(), "__Host-agent_session");
    let issued = sessions.issue(()).unwrap();
    let set_cookie = issued.set_cookie.to_str().unwrap();
    let (pair, attributes) = set_cookie.split_once(';').unwrap();
    assert!(pair.starts_with("__Host-agent_session="), "{pair}");
    assert_eq!(
        attributes,
        " Path=/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure"
    );
    // The plain name authenticates nothing; the prefixed one does, once.
    let mut headers = axum::http::HeaderMap::new();
    let value = pair.split_once('=').unwrap().1;
    headers.insert("cookie", format!("agent_session={value}").parse().unwrap());
    assert_eq!(
        sessions.check(&headers).unwrap_err(),
        surface_host::web::SessionRefusal::Missing
    );
    headers.insert("cookie", pair.parse().unwrap());
    assert!(sessions.check(&headers).is_ok());
    headers.insert("cookie", format!("{pair}; {pair}").parse().unwrap());
    assert_eq!(
        sessions.check(&headers).unwrap_err(),
        surface_host::web::SessionRefusal::Duplicate
    );
}

#[tokio::test]
async fn a_served_html_file_cannot_be_framed_either() {
    let s = serve().await;
    let html = reqwest::get(format!("{}/pkg/help.html", s.base))
        .await
        .unwrap();
    assert_eq!(html.status(), 200);
    let h = |r: &reqwest::Response, n: &str| r.headers()[n].to_str().unwrap().to_string();
    assert_eq!(
        h(&html, "content-security-policy"),
        "frame-ancestors 'none'"
    );
    assert_eq!(h(&html, "x-frame-options"), "DENY");
    assert_eq!(h(&html, "x-content-type-options"), "nosniff");
    let js = reqwest::get(format!("{}/pkg/app.js", s.base))
        .await
        .unwrap();
    assert_eq!(h(&js, "x-content-type-options"), "nosniff");
    assert!(js.headers().get("x-frame-options").is_none());
}
