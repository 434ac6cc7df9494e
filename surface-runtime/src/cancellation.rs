//! A cancellation signal that needs no async runtime (the Rust counterpart
//! of JavaScript's `AbortSignal`), carried by `ProcedureCallInfo`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// A cloneable cancellation signal. All clones observe the same state;
/// [`Cancellation::cancel`] is idempotent and wakes every task awaiting
/// [`Cancellation::cancelled`].
#[derive(Clone, Default)]
pub struct Cancellation {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl std::fmt::Debug for Cancellation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancellation")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancellation {
    /// A fresh, not-cancelled signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Signals cancellation and wakes all waiters.
    pub fn cancel(&self) {
        if !self.inner.cancelled.swap(true, Ordering::SeqCst) {
            let wakers = std::mem::take(&mut *lock(&self.inner.wakers));
            for waker in wakers {
                waker.wake();
            }
        }
    }

    /// Whether [`Cancellation::cancel`] was called on any clone.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// This signal, reset for another call, when nothing else holds it (no
    /// clone, no [`Cancelled`] future) and it was not cancelled; `None`
    /// otherwise. Lets the registry reuse one signal across calls instead
    /// of allocating one per call.
    pub(crate) fn reclaim(mut self) -> Option<Self> {
        let inner = Arc::get_mut(&mut self.inner)?;
        if *inner.cancelled.get_mut() {
            return None;
        }
        match inner.wakers.get_mut() {
            Ok(wakers) => wakers.clear(),
            Err(poisoned) => poisoned.into_inner().clear(),
        }
        Some(self)
    }

    /// A future that completes once the signal is cancelled.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            inner: self.inner.clone(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Future returned by [`Cancellation::cancelled`].
pub struct Cancelled {
    inner: Arc<Inner>,
}

impl Future for Cancelled {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.inner.cancelled.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        let mut wakers = lock(&self.inner.wakers);
        if self.inner.cancelled.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unshared_uncancelled_signal_is_reclaimed() {
        let c = Cancellation::new();
        let clone = c.clone();
        assert!(c.clone().reclaim().is_none(), "a clone is alive");
        drop(clone);
        let waiting = c.cancelled();
        assert!(c.clone().reclaim().is_none(), "a future is alive");
        drop(waiting);
        let c = c.reclaim().expect("unshared");
        c.cancel();
        assert!(c.reclaim().is_none(), "cancelled");
    }

    #[test]
    fn cancel_wakes_waiters() {
        let c = Cancellation::new();
        let fut = c.cancelled();
        assert!(!c.is_cancelled());
        c.clone().cancel();
        assert!(c.is_cancelled());
        futures_util::FutureExt::now_or_never(fut).expect("cancelled future completes");
    }
}
