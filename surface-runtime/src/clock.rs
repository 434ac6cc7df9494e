//! Time seams of the registry (`docs/pipeline.md`): a [`Clock`] for confirmation
//! expiry and a [`Timer`] for the registry timeout. Neither needs an async
//! runtime; both are injectable so the registry runs under tokio, in the
//! browser (`wasm32-unknown-unknown`) and in deterministic tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// Wall-clock time in milliseconds since the Unix epoch. Used for
/// confirmation expiry (`expiresAtMs`, `approvedAtMs`).
pub trait Clock: MaybeSend + MaybeSync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The default clock: `std::time::SystemTime` on native targets,
/// `js_sys::Date::now()` on `wasm32` (where `SystemTime::now()` panics).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[cfg(not(target_arch = "wasm32"))]
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }

    #[cfg(target_arch = "wasm32")]
    fn now_ms(&self) -> u64 {
        let now = js_sys::Date::now();
        if now.is_finite() && now > 0.0 {
            now as u64
        } else {
            0
        }
    }
}

/// A clock that only moves when told to (tests, simulations). Cheap to
/// share behind an `Arc`.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Self {
            now: AtomicU64::new(now_ms),
        }
    }
    /// Sets the time, in milliseconds since the Unix epoch.
    pub fn set(&self, now_ms: u64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// Produces sleep futures for the registry timeout (the execute phase).
///
/// The registry has **no timeout unless a timer is installed**
/// (`SurfaceRegistryBuilder::timer`): without an async runtime there is no
/// portable way to sleep. Native hosts enable the `tokio` feature and use
/// [`TokioTimer`]; browser apps wrap their framework's timer (for example
/// `gloo-timers`).
pub trait Timer: MaybeSend + MaybeSync {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// A [`Timer`] backed by `tokio::time::sleep` (feature `tokio`, native
/// hosts; needs a running tokio runtime with the time driver enabled).
#[cfg(feature = "tokio")]
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioTimer;

#[cfg(feature = "tokio")]
impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance(Duration::from_millis(250));
        assert_eq!(c.now_ms(), 1_250);
        c.set(7);
        assert_eq!(c.now_ms(), 7);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
