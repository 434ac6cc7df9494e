//! Two replicas of the `devices_mcp` example (`--database postgres://…
//! --replica NAME`, docs/host.md, "Replicas") on one database of a
//! throwaway PostgreSQL 15 cluster, each with its own simulated tab, and
//! the official MCP TypeScript SDK client: a client of one replica holding
//! the other replica's token acts in the other replica's tab (its calls
//! routed through the database), a client whose requests alternate
//! between the replicas keeps its session, and the TypeScript SDK v2
//! client on the sessionless revision 2026-07-28 is served by both
//! replicas in turn. Fails, not skips, under
//! `CI=true` without PostgreSQL or Node.js.

#[path = "../surface-host/tests/support/pg.rs"]
mod pg;
mod support;

use pg::PgCluster;
use serde_json::{json, Value};
use support::mcp::{ts_client_on, ts_client_v2_on, DevicesMcp};
use surface_store::{CallState, HostStore, PostgresStore, PostgresStoreOptions, RouteState};

const WAITING: &str = "Waiting for the user to confirm this call in the application.";
const CONFIRMED: &str = "The user confirmed; the call runs.";

/// What each replica's embedded backend lists after its tab's selection
/// (dev-1 and dev-2) was disabled: dev-3 was disabled from the start.
fn after_disable() -> Value {
    json!({"dev-1": "disabled", "dev-2": "disabled", "dev-3": "disabled", "dev-locked": "active"})
}

fn disabled_selection() -> Value {
    json!({"isError": false, "text": ["{\"disabled\":[\"dev-1\",\"dev-2\"]}"],
           "structuredContent": {"disabled": ["dev-1", "dev-2"]}})
}

#[test]
fn a_client_of_either_replica_acts_in_the_tab_of_its_tokens_replica() {
    let test = "a_client_of_either_replica_acts_in_the_tab_of_its_tokens_replica";
    let Some(cluster) = PgCluster::require(test) else {
        return;
    };
    let database = cluster.database("mcp_replicas");
    let replica =
        |name| DevicesMcp::start(&["--approve", "--database", &database, "--replica", name]);
    let (r1, r2) = (replica("r1"), replica("r2"));
    assert_ne!(r1.token, r2.token);

    // r1's token at r2: the tab is r1's, so r2 routes the calls to r1,
    // whose simulated user approves the confirmation.
    let Some(out) = ts_client_on(test, "replicas", &r2.url, &r1.token, &[&r1, &r2]) else {
        return;
    };
    assert_eq!(out["protocolVersion"], json!("2025-11-25"));
    assert_eq!(out["disable"], disabled_selection());
    // The user approves after 200 ms, well within one progress interval:
    // the waiting report, then the confirmation, relayed from r1.
    assert_eq!(
        out["progress"],
        json!([{"progress": 1, "message": WAITING}, {"progress": 2, "message": CONFIRMED}])
    );
    assert_eq!(out["listed"], after_disable());

    // r2's token, requests alternating between r1 and r2: one session
    // served by both, the calls running in r2's tab.
    let both = format!("{},{}", r1.url, r2.url);
    let out = ts_client_on(test, "replicas", &both, &r2.token, &[&r1, &r2]).expect("node ran once");
    assert_eq!(out["session"], json!(true));
    assert_eq!(out["disable"], disabled_selection());
    assert_eq!(out["listed"], after_disable());
    let per_url = out["requestsPerUrl"].as_array().unwrap();
    assert!(
        per_url.iter().all(|n| n.as_u64().unwrap() >= 2),
        "both replicas served the session: {per_url:?}"
    );

    // The store: the first client's two calls (disable, list) were routed
    // r2 → r1 and ran once each, in r1's tab.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = PostgresStore::open(PostgresStoreOptions::new(database.clone()))
            .await
            .expect("the test's own store handle");
        let routed = store
            .routes_for_holder("r1", RouteState::Answered, 0, 10)
            .await
            .unwrap();
        let pairs: Vec<_> = routed
            .iter()
            .map(|r| format!("{}>{}", r.requester, r.holder))
            .collect();
        assert_eq!(pairs, ["r2>r1", "r2>r1"]);
        for route in &routed {
            let call = store.call(&route.invocation_id).await.unwrap().unwrap();
            assert_eq!(
                (call.owner.as_str(), call.state),
                ("r1", CallState::Completed)
            );
        }
    });

    // The current revision (2026-07-28), stateless: r1's token, requests
    // alternating between the replicas, the calls running in r1's tab
    // (whose devices the first client already disabled).
    let out =
        ts_client_v2_on(test, "replicas", &both, &r1.token, &[&r1, &r2]).expect("node ran once");
    assert_eq!(out["protocolVersion"], json!("2026-07-28"));
    assert_eq!(out["sessionIdSent"], json!(false));
    assert_eq!(
        out["disable"],
        json!({"isError": false, "text": ["{\"disabled\":[]}"],
               "structuredContent": {"disabled": []}})
    );
    assert_eq!(
        out["progress"],
        json!([{"progress": 1, "message": WAITING}, {"progress": 2, "message": CONFIRMED}])
    );
    assert_eq!(out["listed"], after_disable());
    let per_url = out["requestsPerUrl"].as_array().unwrap();
    assert!(
        per_url.iter().all(|n| n.as_u64().unwrap() >= 2),
        "both replicas served the client: {per_url:?}"
    );
}
