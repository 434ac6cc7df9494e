//! Canonical JSON and the SHA-256 digests computed from it. The digests of
//! a manifest and of one procedure, and the canonical capability id, are
//! defined with the model ([`crate::model`]) on top of these two functions.
//!
//! A digest is the lowercase hex SHA-256 of the canonical JSON text, so
//! equal values have equal digests whatever their key order or formatting.
//! The `manifest!` macro computes them at compile time and the runtime
//! recomputes them from the embedded manifest; both call these functions.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes` (64 characters).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Canonical JSON text of `value`, as the originals' `canonicalJson`
/// writes it (so digests agree with theirs): object keys sorted by UTF-16
/// code unit (JavaScript's `sort()`), no insignificant whitespace, strings
/// as `JSON.stringify` escapes them, and numbers as JavaScript writes a
/// double ([`js_number`]): `100`, `1e2` and `100.0` are all `100`, `-0`
/// is `0`. Used for digests and replay identities.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Number(n) => out.push_str(&js_number(n)),
        other => out.push_str(&other.to_string()),
    }
}

/// The largest integer every double holds exactly (2^53).
const EXACT_INTEGERS: u64 = 1 << 53;

/// `n` as JavaScript's `JSON.stringify` writes the double `JSON.parse`
/// reads it as: integers up to 2^53 in magnitude as they are; any other
/// number as the double's shortest round-trip digits, in plain notation
/// when its decimal exponent is in `-6 < e <= 21` (`100`, `0.000001`,
/// `123.5`) and as `d.ddde+x` / `d.ddde-x` otherwise (`1e+21`, `1e-7`).
pub fn js_number(n: &serde_json::Number) -> String {
    if let Some(u) = n.as_u64().filter(|u| *u <= EXACT_INTEGERS) {
        return u.to_string();
    }
    if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= EXACT_INTEGERS) {
        return i.to_string();
    }
    let x = n.as_f64().unwrap_or(0.0);
    if x == 0.0 {
        return "0".to_string();
    }
    // Rust's `{:e}` is the shortest round-trip form: `d.ddde<exp>`.
    let scientific = format!("{:e}", x.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if x < 0.0 { "-" } else { "" };
    // `n` of ECMAScript's Number::toString: the value is 0.digits × 10^n.
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let point = exponent + 1;
    let body = if k <= point && point <= 21 {
        let zeros = usize::try_from(point - k).unwrap_or(0);
        format!("{digits}{}", "0".repeat(zeros))
    } else if 0 < point && point <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(point).unwrap_or(0));
        format!("{int}.{frac}")
    } else if -6 < point && point <= 0 {
        let zeros = usize::try_from(-point).unwrap_or(0);
        format!("0.{}{digits}", "0".repeat(zeros))
    } else {
        let e = point - 1;
        let e_sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{rest}e{e_sign}{}", e.abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        assert_eq!(
            canonical_json(&json!({"b": [1, {"d": null, "c": "x"}], "a": true})),
            r#"{"a":true,"b":[1,{"c":"x","d":null}]}"#
        );
    }

    /// Every number as JavaScript's `JSON.stringify(JSON.parse(text))`
    /// writes it (the right-hand sides are Node's output).
    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        for (text, js) in [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("100", "100"),
            ("1e2", "100"),
            ("100.0", "100"),
            ("1.5", "1.5"),
            ("-1.5", "-1.5"),
            ("0.1", "0.1"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("1.5e-7", "1.5e-7"),
            ("123456789012345680000", "123456789012345680000"),
            ("1e21", "1e+21"),
            ("1.2345e25", "1.2345e+25"),
            ("9007199254740992", "9007199254740992"),
            ("9007199254740993", "9007199254740992"),
            ("18446744073709551615", "18446744073709552000"),
            ("-9007199254740993", "-9007199254740992"),
            ("1e16", "10000000000000000"),
            ("5e-324", "5e-324"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("123.456", "123.456"),
            ("0.5", "0.5"),
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(canonical_json(&value), js, "{text}");
        }
    }

    /// JavaScript's `sort()` compares UTF-16 code units: U+FF61 (one
    /// unit, 0xFF61) sorts after U+1F600 (surrogates 0xD83D 0xDE00), the
    /// reverse of UTF-8 byte order.
    #[test]
    fn keys_sort_by_utf16_code_unit() {
        let value = json!({"\u{FF61}": 1, "\u{1F600}": 2, "a": 3});
        assert_eq!(
            canonical_json(&value),
            "{\"a\":3,\"\u{1F600}\":2,\"\u{FF61}\":1}"
        );
    }

    #[test]
    fn sha256_hex_is_lowercase_hex_of_the_bytes() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
