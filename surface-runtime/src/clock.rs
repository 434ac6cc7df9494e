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

/// `ms` (milliseconds since the Unix epoch) as JavaScript's
/// `Date.prototype.toISOString` writes it: `"2026-09-13T00:00:00.000Z"`
/// (UTC, millisecond precision; years past 9999 are written with six
/// digits and a sign, `"+010000-01-01T00:00:00.000Z"`, as JavaScript does).
/// The timestamps of the wire (`capturedAt`, `expiresAt`) use it.
pub fn iso_8601(ms: u64) -> String {
    let days = ms / 86_400_000;
    let in_day = ms % 86_400_000;
    let (year, month, day) = civil_from_days(days);
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000,
    );
    let year = if year > 9_999 {
        format!("+{year:06}")
    } else {
        format!("{year:04}")
    };
    format!("{year}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
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
    fn iso_8601_writes_what_javascript_writes() {
        // new Date(x).toISOString() for each x.
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (1_789_257_600_000, "2026-09-13T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
            (4_102_444_800_000, "2100-01-01T00:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
            (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
        ] {
            assert_eq!(iso_8601(ms), text, "{ms}");
        }
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
