//! The devices host's approvals without a browser, against the real oRPC
//! peer: an approval decided before the host stopped but not resumed is
//! resumed when the host starts again on its store — once, through the
//! backend, with the requester's credential — and the run gets the
//! outcome. Needs Node.js (the peer); skips with a notice without it, and
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
    // reached the backend as `confirmed-1`, which holds it for appr-1.
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
    // The approver decided at the backend and the host recorded it; then
    // the host stopped before resuming.
    let gateway = peer.rpc_url().replace("/rpc", "/gateway");
    HttpOrpcClient::new(gateway.clone())
        .with_header("authorization", PEER_APPROVER_TOKEN)
        .call(
            "approvals.decide",
            Some(json!({"approvalId": "appr-1", "decision": "approve"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
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
                approval_id: "appr-1".into(),
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
            .decide_approval("appr-1", ApprovalDecision::Approve, "approver", 3)
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
        json!({"status": "success", "invocationId": "run-1-a", "output": {"purged": ["dev-2"]}})
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
