//! `date`, `time`, `date-time` and `duration` (zod's `z.iso.*`).

/// `^\d{4}-\d{2}-\d{2}$` with a real calendar date (Gregorian leap years,
/// years `0000`–`9999`): `z.iso.date()`.
#[must_use]
pub fn is_date(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() == 10 && date(b)
}

/// `HH:MM`, `HH:MM:SS` or `HH:MM:SS.f…` (any number of fraction digits),
/// 00:00–23:59:59, no offset: the union of `z.iso.time()` over its
/// `precision` option (the default constructor accepts all of them).
#[must_use]
pub fn is_time(value: &str) -> bool {
    let b = value.as_bytes();
    clock(b) == Some(b.len())
}

/// A calendar date (as [`is_date`]), `T`, a time (as [`is_time`]) and
/// optionally `Z` or a `±HH:MM` offset: the union of `z.iso.datetime()` over
/// its `offset`, `local` and `precision` options (oRPC's converter writes
/// `format: date-time` for all of them). Uppercase `T`/`Z` only, no leap
/// second, hours up to 23.
#[must_use]
pub fn is_date_time(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() < 16 || !date(&b[..10]) || b[10] != b'T' {
        return false;
    }
    let Some(n) = clock(&b[11..]) else {
        return false;
    };
    match &b[11 + n..] {
        [] | [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            two_digits(*h1, *h2).is_some_and(|h| h <= 23)
                && two_digits(*m1, *m2).is_some_and(|m| m <= 59)
        }
        _ => false,
    }
}

/// How many fraction digits a `z.iso.datetime()` constructor allows after
/// the seconds.
#[derive(Clone, Copy)]
enum Fraction {
    /// `(?:\.\d+)?`: none or any number (no `precision`).
    Any,
    /// None (`precision: 0`).
    No,
    /// `\.\d{N}`: exactly N (`precision: N`).
    Exactly(usize),
}

/// One `z.iso.datetime({ precision, offset })` constructor without `local`:
/// a calendar date, `T`, `hh:mm:ss` (seconds required), the fraction
/// `precision` allows, then `Z` or, with `offset`, a `±hh:mm` offset.
fn zod_datetime(value: &str, fraction: Fraction, offset: bool) -> bool {
    let b = value.as_bytes();
    if b.len() < 20 || !date(&b[..10]) || b[10] != b'T' {
        return false;
    }
    let [h1, h2, b':', m1, m2, b':', s1, s2, ref rest @ ..] = b[11..] else {
        return false;
    };
    if !(two_digits(h1, h2).is_some_and(|h| h <= 23)
        && two_digits(m1, m2).is_some_and(|m| m <= 59)
        && two_digits(s1, s2).is_some_and(|s| s <= 59))
    {
        return false;
    }
    let rest = match (fraction, rest) {
        (Fraction::Any | Fraction::Exactly(_), [b'.', digits_after @ ..]) => {
            let n = digits(digits_after);
            if n == 0 || matches!(fraction, Fraction::Exactly(want) if n != want) {
                return false;
            }
            &digits_after[n..]
        }
        (Fraction::Exactly(_), _) => return false,
        (Fraction::Any | Fraction::No, rest) => rest,
    };
    match rest {
        [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] if offset => {
            two_digits(*h1, *h2).is_some_and(|h| h <= 23)
                && two_digits(*m1, *m2).is_some_and(|m| m <= 59)
        }
        _ => false,
    }
}

/// `z.iso.datetime()`'s regex: seconds, an optional fraction, `Z`.
pub(crate) fn is_datetime_utc(value: &str) -> bool {
    zod_datetime(value, Fraction::Any, false)
}

/// `z.iso.datetime({ offset: true })`'s regex.
pub(crate) fn is_datetime_offset(value: &str) -> bool {
    zod_datetime(value, Fraction::Any, true)
}

/// `z.iso.datetime({ precision: 0 })`'s regex: no fraction, `Z`.
pub(crate) fn is_datetime_utc_seconds(value: &str) -> bool {
    zod_datetime(value, Fraction::No, false)
}

/// `z.iso.datetime({ precision: 3 })`'s regex: three fraction digits, `Z`.
pub(crate) fn is_datetime_utc_millis(value: &str) -> bool {
    zod_datetime(value, Fraction::Exactly(3), false)
}

/// `z.iso.datetime({ precision: 3, offset: true })`'s regex.
pub(crate) fn is_datetime_offset_millis(value: &str) -> bool {
    zod_datetime(value, Fraction::Exactly(3), true)
}

/// An ISO 8601-1 duration as `z.iso.duration()` accepts it: `P` then either
/// `nW` alone, or `nY`, `nM`, `nD` in that order (each optional) and an
/// optional `T` part with `nH`, `nM`, `nS` (seconds may have a `.` or `,`
/// fraction); at least one component, no signs, uppercase designators.
#[must_use]
pub fn is_duration(value: &str) -> bool {
    let Some(b) = value.as_bytes().strip_prefix(b"P") else {
        return false;
    };
    let weeks = digits(b);
    if weeks > 0 && &b[weeks..] == b"W" {
        return true;
    }
    if b.contains(&b'W') {
        return false;
    }
    match b {
        [first, ..] if first.is_ascii_digit() => {}
        [b'T', second, ..] if second.is_ascii_digit() => {}
        _ => return false,
    }
    let mut i = components(b, 0, b"YMD", false);
    if b.get(i) == Some(&b'T') {
        if !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return false;
        }
        i = components(b, i + 1, b"HMS", true);
    }
    i == b.len()
}

/// Consumes `<digits><unit>` for each unit in order (each optional) from
/// `i`; with `seconds`, the last unit may carry a `[.,]\d+` fraction.
fn components(b: &[u8], mut i: usize, units: &[u8], seconds: bool) -> usize {
    for (k, &unit) in units.iter().enumerate() {
        let n = digits(&b[i..]);
        if n == 0 {
            break;
        }
        let mut end = i + n;
        if seconds && k == units.len() - 1 && matches!(b.get(end), Some(b'.' | b',')) {
            let fraction = digits(&b[end + 1..]);
            if fraction > 0 {
                end += 1 + fraction;
            }
        }
        if b.get(end) == Some(&unit) {
            i = end + 1;
        }
    }
    i
}

/// The number of leading ASCII digits.
fn digits(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

fn two_digits(a: u8, b: u8) -> Option<u32> {
    (a.is_ascii_digit() && b.is_ascii_digit())
        .then(|| u32::from(a - b'0') * 10 + u32::from(b - b'0'))
}

/// `YYYY-MM-DD` (exactly 10 bytes) naming a real day.
fn date(b: &[u8]) -> bool {
    let [y1, y2, y3, y4, b'-', m1, m2, b'-', d1, d2] = *b else {
        return false;
    };
    let (Some(hi), Some(lo), Some(month), Some(day)) = (
        two_digits(y1, y2),
        two_digits(y3, y4),
        two_digits(m1, m2),
        two_digits(d1, d2),
    ) else {
        return false;
    };
    let year = hi * 100 + lo;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let last = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=last).contains(&day)
}

/// `HH:MM[:SS[.f+]]` at the start of `b`; the length it spans. A `:` after
/// the minutes must start valid seconds and a `.` after the seconds must
/// start at least one digit (otherwise the whole value is invalid).
fn clock(b: &[u8]) -> Option<usize> {
    let [h1, h2, b':', m1, m2, ..] = *b else {
        return None;
    };
    if two_digits(h1, h2)? > 23 || two_digits(m1, m2)? > 59 {
        return None;
    }
    if b.get(5) != Some(&b':') {
        return Some(5);
    }
    let (&s1, &s2) = (b.get(6)?, b.get(7)?);
    if two_digits(s1, s2)? > 59 {
        return None;
    }
    if b.get(8) != Some(&b'.') {
        return Some(8);
    }
    let fraction = digits(&b[9..]);
    (fraction > 0).then_some(9 + fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_follows_the_gregorian_calendar() {
        assert!(is_date("2024-02-29"));
        assert!(is_date("2000-02-29"));
        assert!(is_date("0000-02-29"));
        assert!(!is_date("1900-02-29"));
        assert!(!is_date("2023-02-29"));
        assert!(!is_date("2024-04-31"));
        assert!(!is_date("2024-00-01"));
        assert!(!is_date("2024-01-00"));
    }

    #[test]
    fn date_time_accepts_every_zod_option_shape() {
        for v in [
            "2024-01-01T00:00:00Z",
            "2024-01-01T00:00:00.5+02:00",
            "2024-01-01T10:00",
            "2024-01-01T10:00Z",
            "2024-01-01T10:00-05:30",
            "2024-01-01T10:00:00",
        ] {
            assert!(is_date_time(v), "{v}");
        }
        for v in [
            "tomorrow",
            "2024-01-01",
            "2024-01-01T24:00:00Z",
            "2024-01-01T23:59:60Z",
            "2024-01-01t00:00:00Z",
            "2024-01-01T00:00:00z",
            "2024-01-01T00:00:00+0200",
            "2024-01-01T00:00:00.Z",
        ] {
            assert!(!is_date_time(v), "{v}");
        }
    }

    #[test]
    fn time_has_no_offset() {
        assert!(is_time("23:59:59.999"));
        assert!(is_time("00:00"));
        assert!(!is_time("12:34:56Z"));
        assert!(!is_time("24:00"));
        assert!(!is_time("12:34:"));
    }

    #[test]
    fn duration_orders_components_and_needs_one() {
        for v in ["P1Y2M3DT4H5M6.5S", "P1W", "PT1,5S", "P1MT1M", "P0D"] {
            assert!(is_duration(v), "{v}");
        }
        for v in [
            "P", "PT", "P1", "P1YT", "P1W1D", "P1D1M", "PT1.5H", "-P1D", "PT1.S",
        ] {
            assert!(!is_duration(v), "{v}");
        }
    }
}
