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

/// Canonical JSON text of `value`: object keys sorted byte-wise (UTF-8
/// order), no insignificant whitespace, numbers and strings as serde_json
/// writes them. Used for digests.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
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
        other => out.push_str(&other.to_string()),
    }
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

    #[test]
    fn sha256_hex_is_lowercase_hex_of_the_bytes() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
