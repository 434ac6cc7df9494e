//! The devices host's approvals without a browser, against the real oRPC
//! peer: an approval decided before the host stopped but not resumed is
//! resumed when the host starts again on its store — once, through the
//! gateway's `resumeApproval {invocationId, approvalId}`, with the
//! requester's credential — and the run gets the outcome. Needs Node.js (the peer); skips with a notice without it, and
//! fails when `CI=true`.

use std::time::Duration;

use agent_surface::bridge::{CallOptions, HttpOrpcClient, OrpcClient};
use agent_surface::store::{
    ApprovalDecision, ApprovalRecord, ApprovalState, CallRecord, CallState, HostStore, SqliteStore,
    SqliteStoreOptions,
};
use devices_host::{peer::Peer, serve, Database, HostConfig, PEER_APPROVER_TOKEN, PEER_USER_TOKEN};
use serde_json::{json, Value};

fn node_available() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

async fn peer_ids(peer: &Peer) -> Vec<String> {
    let client = HttpOrpcClient::new(peer.rpc_url()).with_header("authorization", PEER_USER_TOKEN);
    let out = client
        .call("devices.list", Some(json!({})), CallOptions::default())
        .await
        .unwrap();
    out["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_decided_before_a_restart_is_resumed_at_start_up() {
    if !node_available() {
        assert!(
            !ci(),
            "Node.js is missing (CI=true makes this a failure): the oRPC peer needs it"
        );
        eprintln!("\n!!! SKIPPED: Node.js is missing (the oRPC peer needs it)\n");
        return;
    }
    let peer = Peer::start().expect("the oRPC peer starts");
    // What the page did before the host stopped: the confirmed purge
    // reached the backend as `confirmed-1`; its domain router dispatched it
    // through the gateway's `invoke` under that id, which holds it for
    // appr-1.
    let domain = HttpOrpcClient::new(peer.rpc_url())
        .with_header("authorization", PEER_USER_TOKEN)
        .with_header("x-agent-invocation-id", "confirmed-1");
    let held = domain
        .call(
            "devices.purge",
            Some(json!({"deviceIds": ["dev-2"]})),
            CallOptions::default(),
        )
        .await
        .expect_err("the backend holds the purge");
    assert_eq!(held.orpc_code(), Some("APPROVAL_REQUIRED"));
    // The approver decided at the application's decision endpoint and the
    // host recorded it; then the host stopped before resuming.
    let decide = peer.rpc_url().replace("/rpc", "/approvals/decide");
    let decided = reqwest::Client::new()
        .post(decide)
        .header("authorization", PEER_APPROVER_TOKEN)
        .header("content-type", "application/json")
        .body(json!({"approvalId": "appr-1", "status": "approved"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status().as_u16(), 200);
    let dir = std::env::temp_dir().join(format!("devices-host-approvals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("host.db");
    {
        let store = SqliteStore::open(SqliteStoreOptions::file(&path))
            .await
            .unwrap();
        store
            .record_dispatch(&CallRecord {
                invocation_id: "run-1-a".into(),
                owner: "devices-host".into(),
                run_id: "run-1".into(),
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
            })
            .await
            .unwrap();
        store
            .record_approval(&ApprovalRecord {
                approval_id: "run-1-a".into(),
                backend_approval_id: "appr-1".into(),
                expires_at_ms: i64::MAX,
                invocation_id: "run-1-a".into(),
                run_id: "run-1".into(),
                tool_call_id: "tool-call-1".into(),
                capability_id: "domain:devices.purge".into(),
                state: ApprovalState::Pending,
                requested_at_ms: 2,
                decided_by: None,
                decided_at_ms: None,
                backend_invocation_id: "confirmed-1".into(),
                outcome: None,
                resumed_at_ms: None,
            })
            .await
            .unwrap();
        store
            .decide_approval("run-1-a", ApprovalDecision::Approve, "approver", 3)
            .await
            .unwrap();
        store.close().await;
    }
    assert!(peer_ids(&peer).await.contains(&"dev-2".to_string()));

    let mut config = HostConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        peer.rpc_url(),
        std::env::temp_dir(),
    );
    config.database = Database::Sqlite(path.clone());
    let host = serve(config).await.expect("the host starts on its store");
    let reports = host.wait_for_reports(1, Duration::from_secs(20)).await;
    assert_eq!(reports.len(), 1, "the host resumed at start-up");
    assert_eq!(
        (reports[0].run_id.as_str(), reports[0].summary.as_str()),
        (
            "run-1",
            "Approved by approver and resumed: the server purged dev-2."
        )
    );
    assert!(!peer_ids(&peer).await.contains(&"dev-2".to_string()));
    let approvals = host.durable().run_approvals("run-1", 10).await.unwrap();
    let outcome: Value = serde_json::from_str(approvals[0].outcome.as_deref().unwrap()).unwrap();
    assert_eq!(
        outcome,
        json!({"status": "ok", "invocationId": "run-1-a", "capabilityId": "domain:devices.purge",
            "output": {"purged": ["dev-2"]}, "surfaceVersion": "0"})
    );
    drop(host);

    // A second start finds nothing to resume.
    let mut config = HostConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        peer.rpc_url(),
        std::env::temp_dir(),
    );
    config.database = Database::Sqlite(path);
    let host = serve(config).await.unwrap();
    assert!(host
        .wait_for_reports(1, Duration::from_millis(500))
        .await
        .is_empty());
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A call row and its pending approval (the host's id: the call's
/// invocation id `{run}-a`; the backend's: `backend_approval_id`), as
/// `accept_result` records them for a `DOMAIN_APPROVAL_REQUIRED` result of
/// a page.
async fn seed_pending(store: &SqliteStore, run: &str, backend_approval_id: &str, backend: &str) {
    let invocation_id = format!("{run}-a");
    store
        .record_dispatch(&CallRecord {
            invocation_id: invocation_id.clone(),
            owner: "devices-host".into(),
            run_id: run.into(),
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
        })
        .await
        .unwrap();
    store
        .record_approval(&ApprovalRecord {
            approval_id: invocation_id.clone(),
            backend_approval_id: backend_approval_id.into(),
            expires_at_ms: i64::MAX,
            invocation_id,
            run_id: run.into(),
            tool_call_id: "tool-call-1".into(),
            capability_id: "domain:devices.purge".into(),
            state: ApprovalState::Pending,
            requested_at_ms: 2,
            decided_by: None,
            decided_at_ms: None,
            backend_invocation_id: backend.into(),
            outcome: None,
            resumed_at_ms: None,
        })
        .await
        .unwrap();
}

/// The purge of `device` held at the backend under `invocation_id`.
async fn hold_purge(peer: &Peer, invocation_id: &str, device: &str) {
    let held = HttpOrpcClient::new(peer.rpc_url())
        .with_header("authorization", PEER_USER_TOKEN)
        .with_header("x-agent-invocation-id", invocation_id)
        .call(
            "devices.purge",
            Some(json!({ "deviceIds": [device] })),
            CallOptions::default(),
        )
        .await
        .expect_err("the backend holds the purge");
    assert_eq!(held.orpc_code(), Some("APPROVAL_REQUIRED"));
}

/// The approver page over plain HTTP: sign-in, the pending approvals as
/// the gateway's `getApproval` shows them, a decision through the
/// application's decision endpoint and `resumeApproval`, and a forged row
/// (an approval id that is not the gateway's approval of the held call)
/// refused without deciding anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approver_page_shows_get_approval_and_decides_at_the_endpoint() {
    if !node_available() {
        assert!(!ci(), "Node.js is missing (CI=true makes this a failure)");
        eprintln!("\n!!! SKIPPED: Node.js is missing (the oRPC peer needs it)\n");
        return;
    }
    let peer = Peer::start().expect("the oRPC peer starts");
    hold_purge(&peer, "confirmed-7", "dev-2").await; // appr-1
    hold_purge(&peer, "confirmed-8", "dev-3").await; // appr-2
    let dir = std::env::temp_dir().join(format!("devices-host-approver-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("host.db");
    {
        let store = SqliteStore::open(SqliteStoreOptions::file(&path))
            .await
            .unwrap();
        seed_pending(&store, "run-7", "appr-1", "confirmed-7").await;
        // A forged row: appr-2 claimed for the call the backend holds as
        // confirmed-7 (whose approval is appr-1).
        seed_pending(&store, "run-8", "appr-2", "confirmed-7").await;
        store.close().await;
    }
    let mut config = HostConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        peer.rpc_url(),
        std::env::temp_dir(),
    );
    config.database = Database::Sqlite(path);
    config.approver_secret = "s3cret".into();
    let host = serve(config).await.expect("the host starts");
    let page = ApproverPage::sign_in(&host.url(), "s3cret").await;

    let html = page.get("approver").await;
    for shown in [
        "<tr id=\"approval-run-7-a\">",
        "<code class=\"backend-approval\">appr-1</code>",
        "<span class=\"status\">pending</span>",
        "&quot;types&quot;:[&quot;irreversible&quot;]",
        "&quot;reasons&quot;:[&quot;Approval is required for devices.purge.&quot;]",
        "&quot;status&quot;:&quot;pending&quot;",
    ] {
        assert!(html.contains(shown), "missing {shown} in {html}");
    }

    let location = page.decide("run-8-a", "approve").await;
    assert!(
        location.starts_with("/approver?problem=") && location.contains("another%20call"),
        "{location}"
    );
    let location = page.decide("run-7-a", "approve").await;
    assert_eq!(location, "/approver?done=run-7-a");
    let html = page.get("approver?done=run-7-a").await;
    assert!(
        html.contains("run-7-a: Approved by approver and resumed: the server purged dev-2."),
        "{html}"
    );
    assert!(!peer_ids(&peer).await.contains(&"dev-2".to_string()));
    // At the gateway: appr-1 was used, appr-2 was never decided.
    let gateway = agent_surface::bridge::OrpcCapabilityClient::new(
        HttpOrpcClient::new(peer.rpc_url().replace("/rpc", "/gateway"))
            .with_header("authorization", PEER_USER_TOKEN),
    );
    use agent_surface::bridge::CapabilityClient;
    for (id, status) in [("appr-1", "consumed"), ("appr-2", "pending")] {
        let approval = gateway
            .get_approval(id, CallOptions::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(approval.status.as_str(), status, "{id}");
    }
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The approver's browser, as plain HTTP: the session cookie and the
/// same-origin headers the page guard wants.
struct ApproverPage {
    base: String,
    cookie: String,
    http: reqwest::Client,
}

impl ApproverPage {
    async fn sign_in(base: &str, secret: &str) -> ApproverPage {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let base = base.trim_end_matches('/').to_string();
        let answer = http
            .post(format!("{base}/approver/login"))
            .header("origin", &base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("secret={secret}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 303);
        let cookie = answer.headers()["set-cookie"].to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_string();
        ApproverPage { base, cookie, http }
    }

    async fn get(&self, path: &str) -> String {
        let answer = self
            .http
            .get(format!("{}/{path}", self.base))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 200);
        answer.text().await.unwrap()
    }

    /// Posts a decision; returns where the page redirects.
    async fn decide(&self, approval_id: &str, decision: &str) -> String {
        let answer = self
            .http
            .post(format!("{}/approver/decide", self.base))
            .header("cookie", &self.cookie)
            .header("origin", &self.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("approvalId={approval_id}&decision={decision}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 303);
        answer.headers()["location"].to_str().unwrap().to_string()
    }
}
