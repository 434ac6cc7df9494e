//! Helpers the generated validators call: exact number comparisons,
//! `multipleOf`, integer checks, JSON equality, `uniqueItems`, string
//! lengths in code points. Not meant for direct use.

use std::cmp::Ordering;
use std::hash::{BuildHasher, Hash, Hasher};

use serde_json::{Number, Value};

/// A numeric limit from the schema, in the exact form JSON gave it.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// A non-negative integer.
    U(u64),
    /// A negative integer.
    I(i64),
    /// Any other number.
    F(f64),
}

/// Exact ordering of a JSON number against a limit (no rounding: `2^53 + 1`
/// is greater than `2^53` as a float).
#[inline]
pub fn compare(n: &Number, limit: Limit) -> Ordering {
    if let Some(u) = n.as_u64() {
        cmp_i128_limit(i128::from(u), limit)
    } else if let Some(i) = n.as_i64() {
        cmp_i128_limit(i128::from(i), limit)
    } else {
        let f = n.as_f64().unwrap_or(0.0);
        match limit {
            Limit::U(u) => cmp_i128_f64(i128::from(u), f).reverse(),
            Limit::I(i) => cmp_i128_f64(i128::from(i), f).reverse(),
            Limit::F(l) => f.partial_cmp(&l).unwrap_or(Ordering::Equal),
        }
    }
}

#[inline]
fn cmp_i128_limit(v: i128, limit: Limit) -> Ordering {
    match limit {
        Limit::U(u) => v.cmp(&i128::from(u)),
        Limit::I(i) => v.cmp(&i128::from(i)),
        Limit::F(f) => cmp_i128_f64(v, f),
    }
}

/// Exact ordering of an integer (within ±2^64) against a finite float.
fn cmp_i128_f64(v: i128, f: f64) -> Ordering {
    if f.is_nan() {
        return Ordering::Equal;
    }
    // Beyond ±2^100 the float exceeds every value `v` can take.
    if f >= 1e30 {
        return Ordering::Less;
    }
    if f <= -1e30 {
        return Ordering::Greater;
    }
    let t = f.trunc();
    // `t` is an integer of magnitude below 1e30: exact in i128.
    #[allow(clippy::cast_possible_truncation)]
    let ti = t as i128;
    match v.cmp(&ti) {
        Ordering::Equal => {
            let frac = f - t;
            if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        other => other,
    }
}

/// `n >= limit`.
#[inline]
pub fn ge(n: &Number, limit: Limit) -> bool {
    compare(n, limit) != Ordering::Less
}

/// `n > limit`.
#[inline]
pub fn gt(n: &Number, limit: Limit) -> bool {
    compare(n, limit) == Ordering::Greater
}

/// `n <= limit`.
#[inline]
pub fn le(n: &Number, limit: Limit) -> bool {
    compare(n, limit) != Ordering::Greater
}

/// `n < limit`.
#[inline]
pub fn lt(n: &Number, limit: Limit) -> bool {
    compare(n, limit) == Ordering::Less
}

/// Whether `n` is an integer: an integer literal, or a float with a zero
/// fractional part (`2.0` is an integer).
#[inline]
pub fn is_integer(n: &Number) -> bool {
    n.is_u64() || n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Whether `s` has at least `min` code points.
#[inline]
pub fn min_length(s: &str, min: u64) -> bool {
    // Every code point takes 1 to 4 bytes.
    let bytes = s.len() as u64;
    if bytes < min {
        return false;
    }
    if bytes / 4 >= min {
        return true;
    }
    s.chars().count() as u64 >= min
}

/// Whether `s` has at most `max` code points.
#[inline]
pub fn max_length(s: &str, max: u64) -> bool {
    let bytes = s.len() as u64;
    if bytes <= max {
        return true;
    }
    if bytes / 4 > max {
        return false;
    }
    s.chars().count() as u64 <= max
}

/// `multipleOf` with an integer divisor (`divisor` whole and positive),
/// exact for integer instances.
#[inline]
pub fn multiple_of_integer(n: &Number, divisor: f64) -> bool {
    const MAX_SAFE: f64 = 9_007_199_254_740_992.0;
    if divisor <= MAX_SAFE {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let d = divisor as u64;
        if let Some(v) = n.as_u64() {
            return v % d == 0;
        }
        if let Some(v) = n.as_i64() {
            return v.unsigned_abs() % d == 0;
        }
    }
    let v = n.as_f64().unwrap_or(0.0);
    v.fract() == 0.0 && v % divisor == 0.0
}

/// `multipleOf` with a fractional divisor: exact in the decimal reading of
/// both numbers (`0.3` is a multiple of `0.1`, though not in binary floats).
pub fn multiple_of_float(n: &Number, divisor: f64) -> bool {
    let v = n.as_f64().unwrap_or(0.0);
    if v == 0.0 {
        return true;
    }
    if v.abs() < divisor {
        return false;
    }
    let (Some((vm, ve)), Some((dm, de))) = (decimal(v), decimal(divisor)) else {
        return false;
    };
    // v = vm·10^ve, d = dm·10^de, dm > 0. v/d is an integer iff
    // vm·10^(ve-e) is a multiple of dm·10^(de-e) with e = min(ve, de).
    let e = ve.min(de);
    let Some(d) = pow10(de - e).and_then(|p| dm.checked_mul(p)) else {
        // The divisor has more digits than i128 holds while the instance is
        // not smaller than it: only possible with huge exponents.
        return false;
    };
    // (vm · 10^k) mod d, one decimal shift at a time (k < 700 for f64);
    // d < 2^127, so a sum of two residues never overflows.
    let d = d.unsigned_abs();
    let mut r = vm.unsigned_abs() % d;
    for _ in 0..(ve - e) {
        let mut shifted = 0u128;
        for _ in 0..10 {
            shifted = (shifted + r) % d;
        }
        r = shifted;
    }
    r == 0
}

/// A finite non-zero float as `mantissa · 10^exponent`, from its shortest
/// round-trip decimal form.
fn decimal(f: f64) -> Option<(i128, i32)> {
    if !f.is_finite() {
        return None;
    }
    let text = format!("{f:e}");
    let (mantissa, exponent) = text.split_once('e')?;
    let mut exponent: i32 = exponent.parse().ok()?;
    let negative = mantissa.starts_with('-');
    let mut m: i128 = 0;
    let mut fraction = false;
    for b in mantissa.bytes() {
        match b {
            b'-' => {}
            b'.' => fraction = true,
            b'0'..=b'9' => {
                m = m * 10 + i128::from(b - b'0');
                if fraction {
                    exponent -= 1;
                }
            }
            _ => return None,
        }
    }
    Some((if negative { -m } else { m }, exponent))
}

fn pow10(k: i32) -> Option<i128> {
    10i128.checked_pow(u32::try_from(k).ok()?)
}

/// JSON equality: numbers compare by value (`1 == 1.0`), objects by their
/// members regardless of order, arrays item by item.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => number_eq(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => false,
    }
}

fn number_eq(x: &Number, y: &Number) -> bool {
    let limit = if let Some(u) = y.as_u64() {
        Limit::U(u)
    } else if let Some(i) = y.as_i64() {
        Limit::I(i)
    } else {
        Limit::F(y.as_f64().unwrap_or(0.0))
    };
    compare(x, limit) == Ordering::Equal
}

/// Whether the items are pairwise distinct under [`json_eq`]. Linear in
/// expectation: small arrays compare pairwise, larger ones by hash.
pub fn unique(items: &[Value]) -> bool {
    if items.len() <= 12 {
        for (n, a) in items.iter().enumerate() {
            if items[n + 1..].iter().any(|b| json_eq(a, b)) {
                return false;
            }
        }
        return true;
    }
    let state = foldhash::fast::RandomState::default();
    let mut hashed: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(n, v)| {
            let mut h = state.build_hasher();
            hash_value(v, &mut h);
            (h.finish(), n)
        })
        .collect();
    hashed.sort_unstable();
    let mut start = 0;
    while start < hashed.len() {
        let mut end = start + 1;
        while end < hashed.len() && hashed[end].0 == hashed[start].0 {
            end += 1;
        }
        let run = &hashed[start..end];
        for (n, (_, a)) in run.iter().enumerate() {
            if run[n + 1..]
                .iter()
                .any(|(_, b)| json_eq(&items[*a], &items[*b]))
            {
                return false;
            }
        }
        start = end;
    }
    true
}

/// A hash consistent with [`json_eq`].
fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, *b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            if let Some(u) = n.as_u64() {
                i128::from(u).hash(h);
            } else if let Some(i) = n.as_i64() {
                i128::from(i).hash(h);
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                if f.fract() == 0.0 && f.abs() < 1.8e19 {
                    #[allow(clippy::cast_possible_truncation)]
                    (f as i128).hash(h);
                } else {
                    f.to_bits().hash(h);
                }
            }
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for item in a {
                hash_value(item, h);
            }
        }
        Value::Object(o) => {
            // Order-independent: the sum of the members' own hashes.
            let state = foldhash::fast::FixedState::with_seed(0x5eed);
            let mut sum = 0u64;
            for (k, item) in o {
                let mut member = state.build_hasher();
                k.hash(&mut member);
                hash_value(item, &mut member);
                sum = sum.wrapping_add(member.finish());
            }
            (5u8, o.len(), sum).hash(h);
        }
    }
}
