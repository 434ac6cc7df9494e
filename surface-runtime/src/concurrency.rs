//! Concurrency groups (`docs/pipeline.md`, "Concurrency groups"): calls in
//! one group execute one at a time, in the order they reached phase 7
//! (first come, first served as the async mutex wakes them). The registry
//! keeps a group only while a call holds or waits for it, so memory is
//! bounded by the calls in flight, never by the number of names used.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::lock::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::sync::lock;

/// The registry's live groups, by name.
#[derive(Default)]
pub(crate) struct ConcurrencyGroups {
    groups: Mutex<HashMap<Arc<str>, Arc<AsyncMutex<()>>>>,
}

/// A call's turn in its group: the group's other calls wait until it is
/// dropped.
pub(crate) struct Turn<'a> {
    groups: &'a ConcurrencyGroups,
    name: Arc<str>,
    gate: Arc<AsyncMutex<()>>,
    guard: Option<OwnedMutexGuard<()>>,
}

impl ConcurrencyGroups {
    /// Waits for the turn of a call in group `name`. Dropped while it
    /// waits, it forgets the group as a released turn does.
    pub(crate) async fn enter(&self, name: &Arc<str>) -> Turn<'_> {
        let gate = lock(&self.groups).entry(name.clone()).or_default().clone();
        // The turn exists before the wait: if this future is dropped while
        // it waits, the lock future (declared after it) is dropped first,
        // then the turn's `Drop` forgets the group when nobody else holds
        // or waits for it.
        let mut turn = Turn {
            groups: self,
            name: name.clone(),
            gate: gate.clone(),
            guard: None,
        };
        let guard = gate.lock_owned().await;
        turn.guard = Some(guard);
        turn
    }

    /// How many groups are live (held or waited for).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        lock(&self.groups).len()
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        // Release first, then forget the group when nobody else holds or
        // waits for it: the map's reference and ours are the only ones.
        self.guard.take();
        let mut groups = lock(&self.groups.groups);
        if Arc::strong_count(&self.gate) == 2 {
            groups.remove(&self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[test]
    fn a_second_call_waits_for_the_first_and_the_group_is_forgotten_after() {
        let groups = ConcurrencyGroups::default();
        let name: Arc<str> = Arc::from("devices.table/main");
        let first = groups.enter(&name).now_or_never().expect("free group");
        let mut second = Box::pin(groups.enter(&name));
        assert!(
            second.as_mut().now_or_never().is_none(),
            "waits for the first"
        );
        // Another group is independent.
        let other = groups
            .enter(&Arc::from("other"))
            .now_or_never()
            .expect("free");
        assert_eq!(groups.live(), 2);
        drop(other);
        assert_eq!(groups.live(), 1);
        drop(first);
        let second = second.now_or_never().expect("its turn");
        assert_eq!(groups.live(), 1);
        drop(second);
        assert_eq!(groups.live(), 0);
    }
}

#[cfg(test)]
mod dropped_waiters {
    use super::*;
    use futures_util::FutureExt;

    /// A waiter that is woken (the holder released) but
    /// dropped before it is polled again — a call timed out or cancelled
    /// at that moment — leaves its group in the map for good: the holder's
    /// `Drop` saw the waiter's references (count 4, not 2) and kept the
    /// entry; the waiter's future has no `Drop` that forgets it. The
    /// module promises memory bounded by the calls in flight, never by the
    /// names used. Right behaviour: `live() == 0` once nobody holds or
    /// waits (the waiting half of `enter` needs a guard that forgets the
    /// group when it is dropped).
    #[test]
    fn a_waiter_dropped_after_the_holder_released_does_not_leak_its_group() {
        let groups = ConcurrencyGroups::default();
        let name: Arc<str> = Arc::from("devices.table/tenant-42");
        let first = groups.enter(&name).now_or_never().expect("free group");
        let mut second = Box::pin(groups.enter(&name));
        assert!(second.as_mut().now_or_never().is_none(), "waits");
        drop(first); // wakes `second`
        drop(second); // cancelled before its next poll
        assert_eq!(groups.live(), 0, "the group outlived every call");
    }
}
