//! The approvals service (`Host::approvals`; docs/host.md, "The approvals
//! service") over HTTP: the sign-in, the guard's refusals, the escaped
//! page with its headers, paging, decisions through the decider and the
//! gateway, the JSON routes, and the resumed outcome handed over once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use surface_host::host::{ApprovalDecider, ApprovalsOptions, ApproverSignIn, Database, Host};
use surface_host::web::{PageOrigin, HTML_CSP};
use surface_runtime::bridge::{
    CallOptions, CapabilityClient, DescribeScope, GatewayApproval, GatewayOutcome,
    InvocationReceipt, InvokeRequest, OrpcCallError, ResumeApprovalRequest,
};
use surface_runtime::manifest::CapabilityDescriptor;
use surface_runtime::sync::BoxFuture;
use surface_store::{ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState};

/// The gateway: held call `held-N` is held for approval `appr-N`; every
/// approval's reasons carry markup; `resumeApproval` completes the call.
struct Gateway;

fn refused<T: Send + 'static>() -> BoxFuture<'static, Result<T, OrpcCallError>> {
    Box::pin(async {
        Err(OrpcCallError::Transport {
            message: "not in this test".into(),
        })
    })
}

impl CapabilityClient for Gateway {
    fn describe(
        &self,
        _: DescribeScope,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>> {
        refused()
    }
    fn invoke(
        &self,
        _: InvokeRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        refused()
    }
    fn get_invocation<'a>(
        &'a self,
        invocation_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>> {
        let approval = invocation_id.replace("held-", "appr-");
        let receipt = serde_json::from_value(json!({
            "invocationId": invocation_id, "capabilityId": "devices.purge",
            "contractDigest": "00", "state": "pending", "approvalId": approval,
            "createdAt": "2026-12-05T00:00:00.000Z", "updatedAt": "2026-12-05T00:00:00.000Z"
        }))
        .unwrap();
        Box::pin(async move { Ok(Some(receipt)) })
    }
    fn get_approval<'a>(
        &'a self,
        approval_id: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>> {
        Box::pin(async move { Ok(Some(approval(approval_id, "pending"))) })
    }
    fn resume_approval(
        &self,
        request: ResumeApprovalRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        let outcome = serde_json::from_value(json!({
            "status": "completed", "invocationId": request.invocation_id,
            "executionId": "exec-1", "output": {"purged": ["dev-2"]}
        }))
        .unwrap();
        Box::pin(async move { Ok(outcome) })
    }
}

fn approval(id: &str, status: &str) -> GatewayApproval {
    serde_json::from_value(json!({
        "id": id, "capabilityId": "devices.purge", "status": status,
        "reasons": ["<script>alert(1)</script> & \"more\""], "types": ["irreversible"],
        "requestedAt": "2026-12-05T00:00:00.000Z", "expiresAt": "2026-12-06T00:00:00.000Z"
    }))
    .unwrap()
}

/// The decision endpoint: keeps what it is asked, counts its calls.
#[derive(Default)]
struct Endpoint(AtomicUsize);

impl ApprovalDecider for Endpoint {
    fn decide<'a>(
        &'a self,
        approval_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<GatewayApproval, String>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let status = match decision {
            ApprovalDecision::Approve => "approved",
            ApprovalDecision::Reject => "rejected",
        };
        Box::pin(async move { Ok(approval(approval_id, status)) })
    }
}

/// Approval `appr-N` of run `run-N`, held by the backend as `held-N`
/// (`backend` overrides it: a forged row).
async fn seed(host: &Host, n: usize, backend: Option<&str>) {
    let held = backend.map_or(format!("held-{n}"), str::to_string);
    seed_as(host, n, &format!("appr-{n}"), &held, &format!("appr-{n}")).await;
}

/// The call `run-N-a` of run `run-N` and its pending approval: the host's
/// id `approval_id`, the backend's `backend_approval`, the backend holding
/// the call as `held`.
async fn seed_as(host: &Host, n: usize, approval_id: &str, held: &str, backend_approval: &str) {
    let invocation_id = format!("run-{n}-a");
    let call = CallRecord {
        invocation_id: invocation_id.clone(),
        owner: "host".into(),
        run_id: format!("run-{n}"),
        tool_call_id: "tool-call-1".into(),
        session_id: "sess-1".into(),
        tab_id: "tab-1".into(),
        connection_id: "conn-1".into(),
        capability_id: "domain:devices.purge".into(),
        effect: Some("destructive".into()),
        envelope_digest: vec![0; 32],
        state: CallState::Dispatched,
        result_digest: None,
        result: None,
        receipt: None,
        dispatched_at_ms: 1,
        settled_at_ms: None,
        backend_invocation_id: None,
    };
    host.store().record_dispatch(&call).await.unwrap();
    let approval = ApprovalRecord {
        approval_id: approval_id.into(),
        backend_approval_id: backend_approval.into(),
        expires_at_ms: i64::MAX,
        invocation_id,
        run_id: format!("run-{n}"),
        tool_call_id: "tool-call-1".into(),
        capability_id: "domain:devices.purge".into(),
        state: ApprovalState::Pending,
        requested_at_ms: n as i64,
        decided_by: None,
        decided_at_ms: None,
        backend_invocation_id: held.into(),
        outcome: None,
        resumed_at_ms: None,
    };
    host.store().record_approval(&approval).await.unwrap();
}

struct Served {
    base: String,
    http: reqwest::Client,
    endpoint: Arc<Endpoint>,
    resumed: Arc<Mutex<Vec<String>>>,
    _host: Host,
}

/// A host with `pending` approvals (the last one forged: its row names
/// the held call of `appr-1`) and the service on `/approver`, page size 2.
async fn served(pending: usize) -> Served {
    let host = Host::builder(Database::Memory).build().await.unwrap();
    for n in 1..=pending {
        let forged = (n == pending && n > 1).then_some("held-1");
        seed(&host, n, forged).await;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let endpoint = Arc::new(Endpoint::default());
    let resumed = Arc::new(Mutex::new(Vec::new()));
    let heard = resumed.clone();
    let options = ApprovalsOptions::new(
        PageOrigin::for_bind(addr),
        ApproverSignIn::secret("s3cret", "alice"),
        endpoint.clone(),
        Arc::new(Gateway),
    )
    .page_size(2)
    .on_resumed(move |approval, _| heard.lock().unwrap().push(approval.approval_id.clone()));
    let app = host.approvals_service(options);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    Served {
        base: format!("http://{addr}"),
        http,
        endpoint,
        resumed,
        _host: host,
    }
}

impl Served {
    async fn post_form(
        &self,
        path: &str,
        cookie: &str,
        body: &str,
        origin: bool,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("cookie", cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.to_string());
        if origin {
            request = request.header("origin", &self.base);
        }
        request.send().await.unwrap()
    }

    /// Signs in; returns the cookie pair.
    async fn sign_in(&self) -> String {
        let answer = self
            .post_form("/approver/login", "", "secret=s3cret", true)
            .await;
        assert_eq!(answer.status().as_u16(), 303);
        assert_eq!(answer.headers()["location"], "/approver");
        let cookie = answer.headers()["set-cookie"].to_str().unwrap().to_string();
        assert!(cookie.starts_with("approver_session="), "{cookie}");
        assert!(
            cookie.ends_with("; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200"),
            "{cookie}"
        );
        cookie.split(';').next().unwrap().to_string()
    }

    async fn get(&self, path: &str, cookie: &str) -> (u16, String) {
        let answer = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    }

    async fn api_decide(&self, cookie: &str, body: Value) -> (u16, Value) {
        let answer = self
            .http
            .post(format!("{}/approver/api/decide", self.base))
            .header("cookie", cookie)
            .header("origin", &self.base)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap())
    }
}

#[tokio::test]
async fn the_sign_in_page_is_framed_by_nothing_and_refuses_a_wrong_secret() {
    let s = served(1).await;
    let answer = s
        .http
        .get(format!("{}/approver", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let headers = answer.headers().clone();
    assert_eq!(headers["content-security-policy"], HTML_CSP);
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let html = answer.text().await.unwrap();
    assert!(
        html.contains("<form method=\"post\" action=\"/approver/login\">"),
        "{html}"
    );
    assert!(
        !html.contains("appr-1"),
        "nothing is shown before the sign-in"
    );
    // A wrong secret, and the right one from another origin or none.
    let wrong = s
        .post_form("/approver/login", "", "secret=guess", true)
        .await;
    assert_eq!(wrong.status().as_u16(), 401);
    assert!(wrong
        .text()
        .await
        .unwrap()
        .contains("<p id=\"approver-result\" class=\"error\">Wrong approver secret.</p>"));
    let no_origin = s
        .post_form("/approver/login", "", "secret=s3cret", false)
        .await;
    assert_eq!(no_origin.status().as_u16(), 403);
    let foreign = s
        .http
        .post(format!("{}/approver/login", s.base))
        .header("origin", "http://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("secret=s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status().as_u16(), 403);
    assert_eq!(
        foreign.text().await.unwrap(),
        r#"{"json":{"code":"FORBIDDEN","defined":false,"message":"the request comes from another origin (`http://evil.example`)","status":403}}"#
    );
    s.sign_in().await;
}

#[tokio::test]
async fn the_page_escapes_what_the_gateway_says_and_pages_the_pending_approvals() {
    let s = served(3).await;
    let cookie = s.sign_in().await;
    let (status, html) = s.get("/approver", &cookie).await;
    assert_eq!(status, 200);
    assert!(html.contains("<p id=\"approver-user\">Signed in as alice.</p>"));
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains(
        "&quot;reasons&quot;:[&quot;&lt;script&gt;alert(1)&lt;/script&gt; &amp; \\&quot;more\\&quot;&quot;]"
    ), "{html}");
    assert!(html.contains("<tr id=\"approval-appr-1\">"));
    assert!(html.contains("<tr id=\"approval-appr-2\">"));
    assert!(!html.contains("appr-3"));
    assert!(html.contains(
        "<p class=\"pager\"><a id=\"approvals-next\" href=\"/approver?after=2.appr-2\">Next</a></p>"
    ), "{html}");
    let (status, html) = s.get("/approver?after=2.appr-2", &cookie).await;
    assert_eq!(status, 200);
    assert!(html.contains("<tr id=\"approval-appr-3\">"));
    assert!(!html.contains("appr-1\">"));
    assert!(
        html.contains(
            "<p class=\"pager\"><a id=\"approvals-first\" href=\"/approver\">Oldest</a> </p>"
        ),
        "{html}"
    );
    let (status, body) = s.get("/approver/api/pending?after=2.appr-2", &cookie).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"approvals": [{"approvalId": "appr-3", "backendApprovalId": "appr-3",
            "runId": "run-3", "toolCallId": "tool-call-1",
            "capabilityId": "domain:devices.purge", "state": "pending", "requestedAtMs": 3,
            "expiresAtMs": i64::MAX, "conflict": false}],
            "pageSize": 2, "next": null})
    );
    // A cursor that is not one.
    let (status, body) = s.get("/approver/api/pending?after=x", &cookie).await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            r#"{"error":"The page link is not valid; start from the first page."}"#
        )
    );
    let (status, _) = s.get("/approver?after=2", &cookie).await;
    assert_eq!(status, 400);
    // Nothing without the sign-in.
    let (status, body) = s.get("/approver/api/pending", "").await;
    assert_eq!(
        (status, body.as_str()),
        (401, r#"{"error":"Sign in as an approver."}"#)
    );
}

#[tokio::test]
async fn a_decision_is_guarded_checked_resumed_and_handed_over_once() {
    let s = served(2).await; // appr-2 is forged: its row names appr-1's held call
    let cookie = s.sign_in().await;
    let forged = s
        .post_form(
            "/approver/decide",
            &cookie,
            "approvalId=appr-2&decision=approve",
            true,
        )
        .await;
    assert_eq!(forged.status().as_u16(), 303);
    assert_eq!(
        forged.headers()["location"],
        "/approver?problem=The%20gateway%27s%20approval%20belongs%20to%20another%20call%20than%20this%20one%3B%20it%20was%20not%20decided."
    );
    // Without Origin: refused before anything is decided.
    let csrf = s
        .post_form(
            "/approver/decide",
            &cookie,
            "approvalId=appr-1&decision=approve",
            false,
        )
        .await;
    assert_eq!(csrf.status().as_u16(), 403);
    assert_eq!(s.endpoint.0.load(Ordering::SeqCst), 0);
    let decided = s
        .post_form(
            "/approver/decide",
            &cookie,
            "approvalId=appr-1&decision=approve",
            true,
        )
        .await;
    assert_eq!(decided.headers()["location"], "/approver?done=appr-1");
    let (_, html) = s.get("/approver?done=appr-1", &cookie).await;
    assert!(html.contains(
        "<p id=\"approver-result\" class=\"ok\">appr-1: Approved by alice and resumed: the call succeeded.</p>"
    ), "{html}");
    // Deciding again answers the recorded outcome; nothing is sent again.
    let (status, body) = s
        .api_decide(
            &cookie,
            json!({"approvalId": "appr-1", "decision": "reject"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"approvalId": "appr-1", "state": "approved", "decidedBy": "alice",
            "summary": "Approved by alice and resumed: the call succeeded.",
            "outcome": {"status": "ok", "invocationId": "run-1-a", "capabilityId": "domain:devices.purge",
                "output": {"purged": ["dev-2"]}, "surfaceVersion": "0"}})
    );
    assert_eq!(s.endpoint.0.load(Ordering::SeqCst), 1);
    assert_eq!(*s.resumed.lock().unwrap(), ["appr-1"]);
    let (status, body) = s
        .api_decide(
            &cookie,
            json!({"approvalId": "appr-9", "decision": "approve"}),
        )
        .await;
    assert_eq!((status, body), (404, json!({"error": "No such approval."})));
    let (status, body) = s
        .api_decide(
            &cookie,
            json!({"approvalId": "appr-2", "decision": "maybe"}),
        )
        .await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "The decision must be approve, reject or resume."})
        )
    );
    let (status, body) = s
        .api_decide("", json!({"approvalId": "appr-2", "decision": "approve"}))
        .await;
    assert_eq!(
        (status, body),
        (401, json!({"error": "Sign in as an approver."}))
    );
    let form = s
        .post_form(
            "/approver/api/decide",
            &cookie,
            "approvalId=appr-2&decision=approve",
            true,
        )
        .await;
    assert_eq!(
        form.status().as_u16(),
        415,
        "the JSON route takes JSON only"
    );
}

#[tokio::test]
async fn the_applications_own_sign_in_decides_who_is_an_approver() {
    let host = Host::builder(Database::Memory).build().await.unwrap();
    seed(&host, 1, None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let auth = |headers: &axum::http::HeaderMap| {
        (headers.get("x-approver")?.to_str().ok()? == "bob").then(|| "bob".to_string())
    };
    let options = ApprovalsOptions::new(
        PageOrigin::for_bind(addr),
        ApproverSignIn::application(auth, Some("/sso?next=<here>".into())),
        Arc::new(Endpoint::default()),
        Arc::new(Gateway),
    )
    .path("review/")
    .title("Review <queue>");
    let app = host.approvals_service(options);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::new();
    let html = http
        .get(format!("http://{addr}/review"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("<title>Review &lt;queue&gt;</title>"),
        "{html}"
    );
    assert!(
        html.contains("<a id=\"approver-sign-in\" href=\"/sso?next=&lt;here&gt;\">Sign in</a>"),
        "{html}"
    );
    let answer = http
        .get(format!("http://{addr}/review"))
        .header("x-approver", "bob")
        .send()
        .await
        .unwrap();
    let html = answer.text().await.unwrap();
    assert!(html.contains("<p id=\"approver-user\">Signed in as bob.</p>"));
    assert!(
        html.contains("<form method=\"post\" action=\"/review/decide\">"),
        "{html}"
    );
    let login = http
        .post(format!("http://{addr}/review/login"))
        .header("origin", format!("http://{addr}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("secret=x")
        .send()
        .await
        .unwrap();
    assert_eq!(login.status().as_u16(), 404, "no shared-secret sign-in");
}

#[tokio::test]
async fn a_request_carrying_the_approver_cookie_twice_is_not_signed_in() {
    let s = served(1).await;
    let mine = s.sign_in().await;
    let theirs = s.sign_in().await;
    let (status, _) = s.get("/approver/api/pending", &mine).await;
    assert_eq!(status, 200);
    // Another port's page wrote an `approver_session` of its own.
    for cookies in [format!("{theirs}; {mine}"), format!("{mine}; {theirs}")] {
        let (status, body) = s.get("/approver/api/pending", &cookies).await;
        assert_eq!(
            (status, body.as_str()),
            (401, r#"{"error":"Sign in as an approver."}"#),
            "{cookies}"
        );
    }
}

#[tokio::test]
async fn on_an_https_origin_the_approver_cookie_is_a_host_cookie() {
    let host = Host::builder(Database::Memory).build().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // A TLS proxy in front: the origin is https.
    let options = ApprovalsOptions::new(
        PageOrigin::for_bind(addr).https(),
        ApproverSignIn::secret("s3cret", "alice"),
        Arc::new(Endpoint::default()),
        Arc::new(Gateway),
    );
    let app = host.approvals_service(options);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let answer = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("http://{addr}/approver/login"))
        .header("origin", format!("https://{addr}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("secret=s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 303);
    let cookie = answer.headers()["set-cookie"].to_str().unwrap();
    let (pair, attributes) = cookie.split_once(';').unwrap();
    assert!(pair.starts_with("__Host-approver_session="), "{cookie}");
    assert_eq!(
        attributes,
        " Path=/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure"
    );
}

/// A page that answers its own call with another call's backend approval
/// id (`appr-1`) creates a second row, under its own id: both are listed,
/// both marked as a conflict, and each is decided by its own id — the
/// made-up one is refused (the backend's receipt of its call names another
/// approval), the real one is decided and resumed.
#[tokio::test]
async fn a_backend_approval_id_named_by_two_calls_hides_neither_and_is_marked() {
    let s = served(1).await;
    seed_as(&s._host, 2, "run-2-a", "held-2", "appr-1").await;
    let cookie = s.sign_in().await;
    let (status, body) = s.get("/approver/api/pending", &cookie).await;
    assert_eq!(status, 200);
    let listed: Value = serde_json::from_str(&body).unwrap();
    let rows: Vec<(&str, &str, bool)> = listed["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["approvalId"].as_str().unwrap(),
                a["backendApprovalId"].as_str().unwrap(),
                a["conflict"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("appr-1", "appr-1", true), ("run-2-a", "appr-1", true)]
    );
    let (_, html) = s.get("/approver", &cookie).await;
    assert_eq!(
        html.matches(
            "<span class=\"conflict error\">Another pending call names this backend approval"
        )
        .count(),
        2,
        "{html}"
    );
    let (status, forged) = s
        .api_decide(
            &cookie,
            json!({"approvalId": "run-2-a", "decision": "approve"}),
        )
        .await;
    assert_eq!(
        (status, forged["error"].as_str()),
        (
            409,
            Some(
                "The gateway's approval belongs to another call than this one; it was not decided."
            )
        )
    );
    assert_eq!(s.endpoint.0.load(Ordering::SeqCst), 0);
    let (status, real) = s
        .api_decide(
            &cookie,
            json!({"approvalId": "appr-1", "decision": "approve"}),
        )
        .await;
    assert_eq!((status, real["state"].as_str()), (200, Some("approved")));
    // Only the made-up row is left, no longer in conflict.
    let (_, body) = s.get("/approver/api/pending", &cookie).await;
    let listed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed["approvals"].as_array().unwrap().len(), 1);
    assert_eq!(listed["approvals"][0]["approvalId"], "run-2-a");
    assert_eq!(listed["approvals"][0]["conflict"], false);
}
