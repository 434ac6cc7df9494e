//! Retention run by the `Host` in the background (docs/host.md,
//! "Retention"), on a SQLite file and on a throwaway PostgreSQL 15
//! cluster: finished rows older than the policy's age disappear without
//! anyone calling a pass, while a call still in flight stays.

#[path = "support/pg.rs"]
mod pg;

use std::time::Duration;

use pg::PgCluster;
use surface_host::host::{Database, Host, RetentionPolicy};
use surface_store::{CallRecord, CallState, Completion, DispatchWrite, Transition};

fn call(invocation_id: &str) -> CallRecord {
    CallRecord {
        invocation_id: invocation_id.into(),
        owner: "elsewhere".into(),
        run_id: "run-1".into(),
        tool_call_id: "tc-1".into(),
        session_id: "sess-1".into(),
        tab_id: "tab-1".into(),
        connection_id: "conn-1".into(),
        capability_id: "domain:devices.list".into(),
        effect: None,
        envelope_digest: vec![1; 32],
        state: CallState::Dispatched,
        result_digest: None,
        result: None,
        receipt: None,
        dispatched_at_ms: 1,
        settled_at_ms: None,
        backend_invocation_id: None,
    }
}

/// A host on `database` with a pass every 50 ms deleting what finished a
/// second ago: a call that finished long ago goes, one in flight stays.
async fn the_host_deletes_finished_rows_by_itself(database: Database) {
    let policy = RetentionPolicy::default()
        .finished_age(Duration::from_secs(1))
        .interval(Duration::from_millis(50));
    let host = Host::builder(database)
        .retention(policy)
        .build()
        .await
        .unwrap();
    let store = host.store().clone();
    for id in ["inv-old", "inv-open"] {
        assert_eq!(
            store.record_dispatch(&call(id)).await.unwrap(),
            DispatchWrite::Inserted
        );
    }
    let completion = Completion {
        result_digest: vec![2; 32],
        result: "{}".into(),
        at_ms: 2,
    };
    assert_eq!(
        store.complete("inv-old", &completion).await.unwrap(),
        Transition::Applied
    );
    let mut waited = 0;
    while store.call("inv-old").await.unwrap().is_some() {
        waited += 1;
        assert!(
            waited < 100,
            "no retention pass deleted the finished call within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        store.call("inv-open").await.unwrap().is_some(),
        "in flight: kept"
    );
    assert_eq!(host.row_counts().await.unwrap().calls, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_the_host_deletes_finished_rows_in_the_background() {
    let dir = std::env::temp_dir().join(format!("retention-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    the_host_deletes_finished_rows_by_itself(Database::Sqlite(dir.join("host.db"))).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_the_host_deletes_finished_rows_in_the_background() {
    let Some(cluster) =
        PgCluster::require("on_postgresql_the_host_deletes_finished_rows_in_the_background")
    else {
        return;
    };
    let url = cluster.database("retention");
    the_host_deletes_finished_rows_by_itself(url.parse().unwrap()).await;
}
