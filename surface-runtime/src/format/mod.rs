//! JSON Schema `format` checks with zod 4's acceptance (docs/formats.md).
//!
//! oRPC's converter (`@orpc/zod/zod4`) writes `z.uuid()`, `z.email()`,
//! `z.iso.datetime()`… as a bare `format`, with no `pattern`; zod's own
//! `z.toJSONSchema` writes most formats with the constructor's pattern
//! beside them. Each check here accepts a string if and only if the zod
//! constructors that write that `format` accept it:
//!
//! * where several constructors or options write the same `format` (e.g.
//!   `z.guid()` and `z.uuid()` both write `uuid`; `z.iso.datetime()` writes
//!   `date-time` whatever its `offset`/`local`/`precision`), the check is
//!   the **union** of what they accept, so a value the server accepts is
//!   never refused locally; the sibling `pattern` zod's converter writes
//!   gives the exact constructor;
//! * `email` is `z.email()`'s default pattern (its `pattern` option can
//!   widen it to anything);
//! * a `format` not in [`FORMATS`] is an annotation: [`check`] returns
//!   `None` and validators accept the value.
//!
//! The same functions back the registry's runtime validator (jsonschema,
//! with these checks registered as its formats) and the validators
//! `manifest!` generates, so both paths agree.
//!
//! Every check is linear in the value, allocation-free (except `jwt`, which
//! decodes its header) and regex-free, except `emoji`, which needs Unicode
//! property tables and runs zod's own pattern through [`crate::pattern`]
//! (the browser's `RegExp` on wasm32). `uri` uses the `url` crate (WHATWG)
//! natively and the browser's `URL` on wasm32.
//!
//! ```
//! use surface_runtime::format;
//!
//! assert_eq!(format::check("uuid", "not-a-uuid"), Some(false));
//! assert_eq!(format::check("date-time", "2026-11-29T19:00:00Z"), Some(true));
//! assert_eq!(format::check("date-time", "tomorrow"), Some(false));
//! assert_eq!(format::check("x-unknown", "anything"), None);
//! assert!(format::is_email("a@example.com"));
//! ```

mod encoding;
mod ids;
mod net;
mod time;

pub use encoding::{is_base64, is_base64url, is_jwt};
pub use ids::{
    is_credit_card, is_cuid, is_cuid2, is_currency_code, is_e164, is_hex, is_iban, is_ksuid,
    is_lowercase, is_md5_base64, is_md5_base64url, is_md5_hex, is_nanoid, is_sha1_base64,
    is_sha1_base64url, is_sha1_hex, is_sha256_base64, is_sha256_base64url, is_sha256_hex,
    is_sha384_base64, is_sha384_base64url, is_sha384_hex, is_sha512_base64, is_sha512_base64url,
    is_sha512_hex, is_ulid, is_uppercase, is_uuid, is_xid,
};
pub use net::{is_cidrv4, is_cidrv6, is_email, is_hostname, is_ipv4, is_ipv6, is_mac, is_uri};
pub use time::{is_date, is_date_time, is_duration, is_time};
// zod's exact constructors, for `pattern`'s recognized sources.
pub(crate) use ids::is_rfc_uuid;
pub(crate) use time::{
    is_datetime_offset, is_datetime_offset_millis, is_datetime_utc, is_datetime_utc_millis,
    is_datetime_utc_seconds,
};

use crate::regexp::Regexp;

/// Byte classes for the checks' inner loops ([`CLASS`]).
const HEX: u8 = 1;
const ALPHA: u8 = 2;
const DIGIT: u8 = 4;
/// A character of `z.email()`'s local part: `A-Z a-z 0-9 _ ' + -`.
const EMAIL_LOCAL: u8 = 8;

/// The classes of each byte (non-ASCII bytes have none).
static CLASS: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0usize;
    while c < 128 {
        let b = c as u8;
        let mut k = 0;
        if b.is_ascii_hexdigit() {
            k |= HEX;
        }
        if b.is_ascii_alphabetic() {
            k |= ALPHA;
        }
        if b.is_ascii_digit() {
            k |= DIGIT;
        }
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'\'' | b'+' | b'-') {
            k |= EMAIL_LOCAL;
        }
        t[c] = k;
        c += 1;
    }
    t
}

/// The classes of `c`.
#[inline]
fn class(c: u8) -> u8 {
    CLASS[usize::from(c)]
}

/// zod's `z.emoji()` pattern (a single character class after a lookahead,
/// so it cannot backtrack exponentially), with the `u` flag.
static EMOJI: Regexp = Regexp::new(
    "^(?=[\\s\\S]*[\\p{Extended_Pictographic}\\p{Regional_Indicator}\\u20E3])[\\p{Extended_Pictographic}\\p{Emoji_Component}]+$",
);

/// One or more emoji as `z.emoji()` accepts them: only
/// `Extended_Pictographic` and `Emoji_Component` code points, at least one
/// of them a pictograph, a regional indicator or the keycap U+20E3. Unicode
/// tables are the engine's (see [`crate::pattern`]).
#[must_use]
pub fn is_emoji(value: &str) -> bool {
    EMOJI.search(value).unwrap_or(false)
}

/// Byte equality in a `const fn` (`==` on slices is not `const`): format
/// names here, pattern sources in [`crate::pattern`].
pub(crate) const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// An asserted `format`: its name, the name of its check function in this
/// module (for code generators: `::surface_runtime::format::<function>`)
/// and the check itself.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// The JSON Schema `format` value, e.g. `"date-time"`.
    pub name: &'static str,
    /// The check's function name in this module, e.g. `"is_date_time"`.
    pub function: &'static str,
    /// The check: `true` when the string is valid.
    pub check: fn(&str) -> bool,
}

macro_rules! formats {
    ($($name:literal => $function:ident,)*) => {
        /// Every asserted `format`, in docs/formats.md order. Any other
        /// `format` value is an annotation.
        pub static FORMATS: &[Format] = &[
            $(Format { name: $name, function: stringify!($function), check: $function },)*
        ];

        /// The check of `format`, or `None` when it is not asserted.
        #[must_use]
        #[inline]
        pub fn checker(format: &str) -> Option<fn(&str) -> bool> {
            match format {
                $($name => Some($function as fn(&str) -> bool),)*
                _ => None,
            }
        }

        /// [`checker`] as a `const fn`: generated validators resolve their
        /// `format`s at compile time (`const F: Option<fn(&str) -> bool> =
        /// format::checker_const("email");`) and call the check directly.
        #[must_use]
        pub const fn checker_const(format: &str) -> Option<fn(&str) -> bool> {
            $(if same_bytes($name.as_bytes(), format.as_bytes()) {
                return Some($function as fn(&str) -> bool);
            })*
            None
        }
    };
}

formats! {
    "uuid" => is_uuid,
    "email" => is_email,
    "uri" => is_uri,
    "date-time" => is_date_time,
    "date" => is_date,
    "time" => is_time,
    "duration" => is_duration,
    "ipv4" => is_ipv4,
    "ipv6" => is_ipv6,
    "cidrv4" => is_cidrv4,
    "cidrv6" => is_cidrv6,
    "mac" => is_mac,
    "hostname" => is_hostname,
    "base64" => is_base64,
    "base64url" => is_base64url,
    "e164" => is_e164,
    "jwt" => is_jwt,
    "nanoid" => is_nanoid,
    "cuid" => is_cuid,
    "cuid2" => is_cuid2,
    "ulid" => is_ulid,
    "xid" => is_xid,
    "ksuid" => is_ksuid,
    "hex" => is_hex,
    "emoji" => is_emoji,
    "credit_card" => is_credit_card,
    "iban" => is_iban,
    "currency_code" => is_currency_code,
    "lowercase" => is_lowercase,
    "uppercase" => is_uppercase,
    "md5_hex" => is_md5_hex,
    "md5_base64" => is_md5_base64,
    "md5_base64url" => is_md5_base64url,
    "sha1_hex" => is_sha1_hex,
    "sha1_base64" => is_sha1_base64,
    "sha1_base64url" => is_sha1_base64url,
    "sha256_hex" => is_sha256_hex,
    "sha256_base64" => is_sha256_base64,
    "sha256_base64url" => is_sha256_base64url,
    "sha384_hex" => is_sha384_hex,
    "sha384_base64" => is_sha384_base64,
    "sha384_base64url" => is_sha384_base64url,
    "sha512_hex" => is_sha512_hex,
    "sha512_base64" => is_sha512_base64,
    "sha512_base64url" => is_sha512_base64url,
}

/// Whether `value` is valid for `format`: `Some(true|false)` for an
/// asserted format, `None` when `format` is an annotation (unknown, or a
/// zod format whose parameter lives only in a sibling `pattern`:
/// `starts_with`, `ends_with`, `includes`). Validators treat `None` as
/// valid.
#[must_use]
#[inline]
pub fn check(format: &str, value: &str) -> Option<bool> {
    checker(format).map(|f| f(value))
}

#[cfg(feature = "dynamic")]
/// jsonschema's built-in formats that are not in [`FORMATS`]: registered as
/// always-valid so that enabling format assertion changes nothing for them
/// (they stay annotations, as in the generated validators).
const ANNOTATION_ONLY_BUILTINS: &[&str] = &[
    "idn-email",
    "idn-hostname",
    "iri",
    "iri-reference",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "uri-reference",
    "uri-template",
];

#[cfg(feature = "dynamic")]
fn annotation(_: &str) -> bool {
    true
}

/// Compiles `schema` with jsonschema, asserting `format` with the checks of
/// this module (overriding jsonschema's own, so the semantics are zod's)
/// and leaving every other format an annotation. Errors keep jsonschema's
/// shape (`keyword: "format"`). This is the runtime validator the registry
/// compiles every schema with.
///
/// Feature `dynamic`.
///
/// # Errors
/// The schema is not a valid JSON Schema (jsonschema's error).
#[cfg(feature = "dynamic")]
pub fn validator_for(
    schema: &serde_json::Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    let mut options = jsonschema::options().should_validate_formats(true);
    for format in FORMATS {
        options = options.with_format(format.name, format.check);
    }
    for name in ANNOTATION_ONLY_BUILTINS {
        options = options.with_format(*name, annotation);
    }
    options.build(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const CASES: &str = include_str!("../../../tests/fixtures/formats/cases.json");

    /// The committed cases (their labels are checked against the real zod by
    /// the facade's `formats_zod` test): every asserted format agrees with
    /// every label, offline.
    #[test]
    fn every_format_agrees_with_the_zod_labelled_cases() {
        let cases: Value = serde_json::from_str(CASES).unwrap();
        let mut wrong = Vec::new();
        for (format, sets) in cases.as_object().unwrap() {
            for (label, expected) in [("valid", true), ("invalid", false)] {
                for value in sets[label].as_array().unwrap() {
                    let value = value.as_str().unwrap();
                    if check(format, value) != Some(expected) {
                        wrong.push(format!("{format} {label} {value:?}"));
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "disagreements:\n{}", wrong.join("\n"));
    }

    #[test]
    fn every_format_has_cases() {
        let cases: Value = serde_json::from_str(CASES).unwrap();
        for format in FORMATS {
            let sets = &cases[format.name];
            assert!(
                sets["valid"].as_array().is_some_and(|v| !v.is_empty())
                    && sets["invalid"].as_array().is_some_and(|v| !v.is_empty()),
                "{} has no valid and invalid cases",
                format.name
            );
        }
    }

    #[test]
    fn check_returns_none_for_annotations() {
        for name in [
            "starts_with",
            "ends_with",
            "includes",
            "uri-reference",
            "x-custom",
            "",
        ] {
            assert_eq!(check(name, "anything"), None, "{name}");
        }
    }

    #[test]
    fn format_table_names_its_functions() {
        let f = FORMATS.iter().find(|f| f.name == "date-time").unwrap();
        assert_eq!(f.function, "is_date_time");
        assert!((f.check)("2024-01-01T00:00:00Z"));
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
    }

    #[test]
    fn runtime_validator_asserts_zod_formats_and_ignores_the_rest() {
        let validator = validator_for(&json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "due": {"type": "string", "format": "date-time"},
                "pointer": {"type": "string", "format": "json-pointer"},
                "custom": {"type": "string", "format": "x-custom"},
                "count": {"type": "integer", "format": "int32"}
            }
        }))
        .unwrap();
        let ok = json!({"id": "123e4567-e89b-02d3-a456-426614174000", "due": "2024-01-01T10:00",
            "pointer": "not a pointer", "custom": "x", "count": 5});
        assert!(validator.is_valid(&ok));
        let bad = json!({"id": "not-a-uuid", "due": "tomorrow"});
        let mut errors: Vec<(String, String)> = validator
            .iter_errors(&bad)
            .map(|e| {
                (
                    e.instance_path().as_str().to_string(),
                    e.kind().keyword().to_string(),
                )
            })
            .collect();
        errors.sort();
        assert_eq!(
            errors,
            vec![
                ("/due".to_string(), "format".to_string()),
                ("/id".to_string(), "format".to_string())
            ]
        );
    }
}
