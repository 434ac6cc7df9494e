//! Wake-ups (`surface_store::wake`): in process, and over PostgreSQL
//! `LISTEN/NOTIFY` between two stores (two host processes' pools) on one
//! database of a throwaway cluster — including a listener whose
//! connection is killed, which must hear a `Rescan` and then new
//! wake-ups again.

#[path = "../../surface-host/tests/support/pg.rs"]
mod pg;

use std::time::Duration;

use pg::PgCluster;
use surface_store::wake::{
    Delivery, LocalWakeups, PostgresWakeups, Subscription, WakeError, Wakeups, MAX_QUEUED_WAKEUPS,
};
use surface_store::{PostgresStore, PostgresStoreOptions};

const WAIT: Duration = Duration::from_secs(10);

async fn next(sub: &mut Subscription) -> Delivery {
    tokio::time::timeout(WAIT, sub.next())
        .await
        .expect("a delivery in time")
        .expect("the bus is open")
}

async fn nothing_within(sub: &mut Subscription, wait: Duration) {
    if let Ok(got) = tokio::time::timeout(wait, sub.next()).await {
        panic!("expected no delivery, got {got:?}");
    }
}

/// The contract every bus keeps.
async fn contract(a: &dyn Wakeups, b: &dyn Wakeups) {
    let mut replica_a = a.subscribe("replica-a").await.unwrap();
    let mut replica_b = b.subscribe("replica-b").await.unwrap();
    assert_eq!(
        next(&mut replica_a).await,
        Delivery::Rescan,
        "first a rescan"
    );
    assert_eq!(next(&mut replica_b).await, Delivery::Rescan);
    b.notify("replica-a", "inv-1").await.unwrap();
    b.notify("replica-a", "inv-2").await.unwrap();
    assert_eq!(next(&mut replica_a).await, Delivery::Wake("inv-1".into()));
    assert_eq!(next(&mut replica_a).await, Delivery::Wake("inv-2".into()));
    nothing_within(&mut replica_b, Duration::from_millis(300)).await;
    assert!(matches!(
        a.notify("replica a", "inv-1").await,
        Err(WakeError::InvalidTarget(_))
    ));
    assert!(matches!(
        a.notify("replica-a", "bad id").await,
        Err(WakeError::InvalidId(_))
    ));
    assert!(matches!(
        a.subscribe(&"x".repeat(65)).await,
        Err(WakeError::InvalidTarget(_))
    ));
    // A wake-up for a target nobody listens to is simply lost.
    a.notify("replica-z", "inv-3").await.unwrap();
}

#[tokio::test]
async fn local_wakeups_keep_the_contract() {
    let bus = LocalWakeups::new();
    contract(&bus, &bus).await;
}

#[tokio::test]
async fn a_full_queue_drops_wakeups_and_asks_for_a_rescan() {
    let bus = LocalWakeups::new();
    let mut sub = bus.subscribe("replica-a").await.unwrap();
    assert_eq!(next(&mut sub).await, Delivery::Rescan);
    for n in 0..=MAX_QUEUED_WAKEUPS {
        bus.notify("replica-a", &format!("inv-{n}")).await.unwrap();
    }
    assert_eq!(next(&mut sub).await, Delivery::Rescan, "one was dropped");
    bus.notify("replica-a", "inv-after").await.unwrap();
    assert_eq!(next(&mut sub).await, Delivery::Wake("inv-after".into()));
    drop(sub);
    // A dropped subscription is forgotten on the next wake-up.
    bus.notify("replica-a", "inv-gone").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_wakeups_between_two_stores_and_across_a_lost_connection() {
    let Some(cluster) = PgCluster::require("postgres_wakeups") else {
        return;
    };
    let url = cluster.database("wake");
    let a = PostgresStore::open(PostgresStoreOptions::new(url.clone()))
        .await
        .unwrap();
    let b = PostgresStore::open(PostgresStoreOptions::new(url))
        .await
        .unwrap();
    contract(
        &PostgresWakeups::for_store(&a),
        &PostgresWakeups::for_store(&b),
    )
    .await;

    // Kill the listening connection: the subscriber hears a rescan (what
    // was sent meanwhile is lost) and then new wake-ups again.
    let bus_a = PostgresWakeups::for_store(&a);
    let bus_b = PostgresWakeups::for_store(&b);
    let mut sub = bus_a.subscribe("replica-a").await.unwrap();
    assert_eq!(next(&mut sub).await, Delivery::Rescan);
    let pool = sqlx_pool(&cluster).await;
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE query LIKE 'LISTEN %') t",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(killed >= 1, "a listener was connected");
    assert_eq!(
        next(&mut sub).await,
        Delivery::Rescan,
        "after the lost connection"
    );
    // The listener reconnects and listens again; wake-ups flow.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        bus_b.notify("replica-a", "inv-again").await.unwrap();
        match tokio::time::timeout(Duration::from_millis(200), sub.next()).await {
            Ok(Some(Delivery::Wake(id))) => {
                assert_eq!(id, "inv-again");
                break;
            }
            Ok(Some(Delivery::Rescan)) | Err(_) => {}
            Ok(None) => panic!("the bus ended"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no wake-up after reconnecting"
        );
    }
}

async fn sqlx_pool(cluster: &PgCluster) -> sqlx::PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&cluster.database("admin"))
        .await
        .unwrap()
}
