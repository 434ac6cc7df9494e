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

/// The milliseconds since the Unix epoch that [`iso_8601`] writes as
/// `text` (`"2026-09-13T00:00:00.000Z"`: four-digit year, UTC, exactly
/// three fraction digits); `None` for any other text.
pub fn parse_iso_8601(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let shape = b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z';
    if !shape {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<u64> {
        let digits = &text[from..to];
        digits
            .bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten()
    };
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (h, m, s, milli) = (
        number(11, 13)?,
        number(14, 16)?,
        number(17, 19)?,
        number(20, 23)?,
    );
    if year < 1970 || !(1..=12).contains(&month) || day == 0 || h > 23 || m > 59 || s > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    let ms = days * 86_400_000 + h * 3_600_000 + m * 60_000 + s * 1_000 + milli;
    // A day past the month's end (2026-02-30) does not round-trip.
    (iso_8601(ms) == text).then_some(ms)
}

/// Days from 1970-01-01 to a proleptic Gregorian date on or after it
/// (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y % 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
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
    fn parse_iso_8601_reads_what_iso_8601_writes_and_nothing_else() {
        for ms in [
            0,
            1_789_257_600_000,
            951_782_400_000,
            1_709_251_199_999,
            253_402_300_799_999,
        ] {
            assert_eq!(parse_iso_8601(&iso_8601(ms)), Some(ms), "{ms}");
        }
        for text in [
            "",
            "2026-09-13T00:00:00Z",
            "2026-09-13T00:00:00.000+00:00",
            "2026-02-30T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-09-13T24:00:00.000Z",
            "1969-12-31T23:59:59.999Z",
            "2026-09-13 00:00:00.000Z",
            "+2026-09-13T00:00:00.00Z",
        ] {
            assert_eq!(parse_iso_8601(text), None, "{text}");
        }
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
