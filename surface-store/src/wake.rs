//! Wake-ups between host processes (`docs/host.md`, "Wake-ups"): a small
//! bus that tells a host "look at this row" — a dispatch row written for
//! a tab it holds, a result written for a call it waits for. The store
//! stays the truth; a wake-up carries **ids only** and is at most once, so
//! every subscriber also receives [`Delivery::Rescan`] when it starts and
//! whenever wake-ups may have been lost (a reconnect, a full queue): then
//! it re-reads its rows.
//!
//! * [`Wakeups`] — the trait another bus (NATS request-reply, Redis pub/sub)
//!   implements without touching the host's rules;
//! * [`LocalWakeups`] — in process (the embedded single-process default:
//!   SQLite and no server);
//! * [`PostgresWakeups`] (feature `postgres`) — PostgreSQL `LISTEN/NOTIFY`
//!   on the store's own database ([`PostgresWakeups::for_store`]).
//!
//! Limits: a target is 1–64 characters of `A–Z a–z 0–9 . _ -`; an id
//! follows the invocation-id rule (1–256 visible ASCII); each subscription
//! queues at most [`MAX_QUEUED_WAKEUPS`] wake-ups — past it they are
//! dropped and the subscriber gets a `Rescan`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc;

use crate::store::StoreError;

/// A boxed wake-up future.
pub type WakeFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, WakeError>> + Send + 'a>>;

/// Wake-ups one subscription queues before it drops them (and asks for a
/// rescan): 1,024.
pub const MAX_QUEUED_WAKEUPS: usize = 1_024;

/// Longest target name: 64 characters.
pub const MAX_TARGET_CHARS: usize = 64;

/// What a subscription receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Row `id` changed for this target: read it from the store.
    Wake(String),
    /// Wake-ups may have been lost (the subscription just started, the bus
    /// reconnected, or the queue was full): re-read every row of interest.
    Rescan,
}

/// Why a wake-up could not be sent or a subscription not started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WakeError {
    /// The target name breaks the rule (1–64 of `A–Z a–z 0–9 . _ -`).
    #[error("a wake-up target must be 1 to 64 characters of A-Z a-z 0-9 . _ - (got {0:?})")]
    InvalidTarget(String),
    /// The id breaks the invocation-id rule.
    #[error("a wake-up id must follow the invocation-id rule: {0}")]
    InvalidId(String),
    /// The bus failed (the database refused `NOTIFY`/`LISTEN`).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A bus of wake-ups (module docs). `notify` is fire-and-forget: a wake-up
/// nobody listens to is lost, which is why subscribers also rescan.
pub trait Wakeups: Send + Sync {
    /// Tells the subscribers of `target` that row `id` changed.
    ///
    /// # Errors
    /// [`WakeError::InvalidTarget`], [`WakeError::InvalidId`],
    /// [`WakeError::Store`].
    fn notify<'a>(&'a self, target: &'a str, id: &'a str) -> WakeFuture<'a, ()>;

    /// Subscribes to `target`'s wake-ups; the first delivery is
    /// [`Delivery::Rescan`]. Dropping the subscription ends it.
    ///
    /// # Errors
    /// [`WakeError::InvalidTarget`], [`WakeError::Store`].
    fn subscribe<'a>(&'a self, target: &'a str) -> WakeFuture<'a, Subscription>;
}

fn check_target(target: &str) -> Result<(), WakeError> {
    let ok = !target.is_empty()
        && target.len() <= MAX_TARGET_CHARS
        && target
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(WakeError::InvalidTarget(
            target.chars().take(MAX_TARGET_CHARS).collect(),
        ))
    }
}

fn check_id(id: &str) -> Result<(), WakeError> {
    surface_runtime::check_invocation_id(id).map_err(|e| WakeError::InvalidId(e.to_string()))
}

/// The sending half of one subscription: a bounded queue and the "lost
/// something" flag.
#[derive(Debug)]
struct Sink {
    queue: mpsc::Sender<String>,
    lost: Arc<AtomicBool>,
}

impl Sink {
    /// Queues `id`; a full queue drops it and flags a rescan. `false` once
    /// the subscription is gone.
    fn send(&self, id: String) -> bool {
        match self.queue.try_send(id) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.lost.store(true, Ordering::SeqCst);
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    fn rescan(&self) {
        self.lost.store(true, Ordering::SeqCst);
        // Wake a subscriber waiting on an empty queue.
        let _ = self.queue.try_send(String::new());
    }
}

/// One subscription's deliveries ([`Wakeups::subscribe`]).
#[derive(Debug)]
pub struct Subscription {
    queue: mpsc::Receiver<String>,
    lost: Arc<AtomicBool>,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    task: Option<AbortOnDrop>,
    hold: Option<LocalHold>,
}

#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn subscription() -> (Sink, Subscription) {
    let task = None;
    let (tx, rx) = mpsc::channel(MAX_QUEUED_WAKEUPS);
    // The first delivery is a rescan.
    let lost = Arc::new(AtomicBool::new(true));
    (
        Sink {
            queue: tx,
            lost: lost.clone(),
        },
        Subscription {
            queue: rx,
            lost,
            task: task.map(AbortOnDrop),
            hold: None,
        },
    )
}

impl Subscription {
    /// The next delivery; `None` when the bus is gone for good.
    pub async fn next(&mut self) -> Option<Delivery> {
        loop {
            if self.lost.swap(false, Ordering::SeqCst) {
                // What is queued now is covered by the rescan.
                while self.queue.try_recv().is_ok() {}
                return Some(Delivery::Rescan);
            }
            match self.queue.recv().await {
                // The empty id only wakes a waiting subscriber for a rescan.
                Some(id) if id.is_empty() => continue,
                Some(id) => return Some(Delivery::Wake(id)),
                None => return None,
            }
        }
    }
}

/// In-process wake-ups (module docs): for hosts in one process.
#[derive(Debug, Default)]
pub struct LocalWakeups {
    subscribers: Mutex<HashMap<String, Vec<Weak<Sink>>>>,
}

impl LocalWakeups {
    /// An empty bus.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Keeps a local subscription's sink alive while the subscription lives.
#[derive(Debug)]
struct LocalHold(#[allow(dead_code)] Arc<Sink>);

impl Wakeups for LocalWakeups {
    fn notify<'a>(&'a self, target: &'a str, id: &'a str) -> WakeFuture<'a, ()> {
        let result = check_target(target).and_then(|()| check_id(id)).map(|()| {
            let mut subscribers = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(sinks) = subscribers.get_mut(target) {
                sinks.retain(|s| s.upgrade().is_some_and(|s| s.send(id.to_string())));
            }
        });
        Box::pin(std::future::ready(result))
    }

    fn subscribe<'a>(&'a self, target: &'a str) -> WakeFuture<'a, Subscription> {
        let result = check_target(target).map(|()| {
            let (sink, mut sub) = subscription();
            let sink = Arc::new(sink);
            self.subscribers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(target.to_string())
                .or_default()
                .push(Arc::downgrade(&sink));
            sub.hold = Some(LocalHold(sink));
            sub
        });
        Box::pin(std::future::ready(result))
    }
}

#[cfg(feature = "postgres")]
pub use postgres::PostgresWakeups;

#[cfg(feature = "postgres")]
mod postgres {
    use std::time::Duration;

    use sqlx::postgres::PgListener;
    use sqlx::PgPool;

    use super::{
        check_id, check_target, subscription, Subscription, WakeError, WakeFuture, Wakeups,
    };
    use crate::store::StoreError;

    /// PostgreSQL `LISTEN/NOTIFY` wake-ups on a store's database
    /// ([`PostgresWakeups::for_store`]). One channel per target,
    /// `surface_wake_<first 16 hex digits of SHA-256(target)>`; the payload
    /// is the id alone. `NOTIFY` is transactional and at most once per
    /// listening connection: a listener that reconnects gets a
    /// [`super::Delivery::Rescan`].
    #[derive(Clone, Debug)]
    pub struct PostgresWakeups {
        pool: PgPool,
    }

    /// How long a listener waits before reconnecting after an error: 1 s.
    const RECONNECT_WAIT: Duration = Duration::from_secs(1);

    impl PostgresWakeups {
        /// Wake-ups on `store`'s database, sharing its pool.
        pub fn for_store(store: &crate::store::PostgresStore) -> Self {
            Self {
                pool: store.pool().clone(),
            }
        }

        /// The channel of `target`.
        pub fn channel(target: &str) -> String {
            let digest = surface_runtime::hash::sha256(target.as_bytes());
            let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            format!("surface_wake_{hex}")
        }
    }

    fn db(operation: &'static str, error: sqlx::Error) -> WakeError {
        WakeError::Store(match error {
            sqlx::Error::PoolClosed => StoreError::Closed,
            other => StoreError::Database {
                operation,
                source: Box::new(other),
            },
        })
    }

    impl Wakeups for PostgresWakeups {
        fn notify<'a>(&'a self, target: &'a str, id: &'a str) -> WakeFuture<'a, ()> {
            Box::pin(async move {
                check_target(target)?;
                check_id(id)?;
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(Self::channel(target))
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| db("send a wake-up", e))?;
                Ok(())
            })
        }

        fn subscribe<'a>(&'a self, target: &'a str) -> WakeFuture<'a, Subscription> {
            Box::pin(async move {
                check_target(target)?;
                let channel = Self::channel(target);
                let mut listener = PgListener::connect_with(&self.pool)
                    .await
                    .map_err(|e| db("listen for wake-ups", e))?;
                listener
                    .listen(&channel)
                    .await
                    .map_err(|e| db("listen for wake-ups", e))?;
                let (sink, sub) = subscription();
                let task = tokio::spawn(async move {
                    loop {
                        match listener.try_recv().await {
                            Ok(Some(n)) => {
                                let id = n.payload();
                                if check_id(id).is_ok() && !sink.send(id.to_string()) {
                                    return;
                                }
                            }
                            // The connection was lost and is re-established
                            // on the next call: what was sent meanwhile is
                            // gone.
                            Ok(None) => sink.rescan(),
                            Err(sqlx::Error::PoolClosed) => return,
                            Err(error) => {
                                tracing::warn!(%error, "wake-up listener failed; reconnecting");
                                sink.rescan();
                                tokio::time::sleep(RECONNECT_WAIT).await;
                            }
                        }
                        if sink.queue.is_closed() {
                            return;
                        }
                    }
                });
                let mut sub = sub;
                sub.task = Some(super::AbortOnDrop(task));
                Ok(sub)
            })
        }
    }
}
