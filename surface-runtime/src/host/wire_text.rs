//! Lone UTF-16 surrogates in the JSON text of the wire (`docs/host.md`,
//! "Where this project differs from the original").
//!
//! A JavaScript string may hold a lone surrogate — a string cut in the
//! middle of an emoji — and `JSON.stringify` writes it as an escape
//! (`"ok\ud83d"`), which `JSON.parse` reads back. A Rust `String` cannot
//! hold one, so `serde_json` refuses such text. The rule of this crate:
//!
//! * **text read to be acted on** — a call into the session — keeps being
//!   refused: it is answered `invalid-call`, never run with altered input.
//!   Only the ids of that answer are read from the lossy copy
//!   ([`replace_lone_surrogates`]), so the host can match the answer to its
//!   pending call;
//! * **text read to be reported** — a page's result, progress or
//!   announcement, read by the host — is read lossily
//!   ([`from_json_lossy`]): each lone surrogate becomes U+FFFD, as
//!   [`String::from_utf16_lossy`] would make it. A result nobody can read
//!   would leave the agent's call waiting until its timeout.
//!
//! The lossy copy is always a text its sender could have sent verbatim, so
//! reading it grants nothing that text would not.

use std::borrow::Cow;

use serde::de::DeserializeOwned;

/// The escape that replaces a lone surrogate escape: `\ufffd`, as long as
/// the `\uXXXX` it replaces, so positions in the copy are the original's.
const REPLACEMENT_ESCAPE: &str = "\\ufffd";

/// The code unit of the `\uXXXX` escape starting at `at`, if `bytes` holds
/// a complete one there (exactly four hex digits).
fn unicode_escape(bytes: &[u8], at: usize) -> Option<u16> {
    let escape = bytes.get(at..at.checked_add(6)?)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    escape[2..].iter().try_fold(0u16, |unit, &digit| {
        let value = char::from(digit).to_digit(16)?;
        Some((unit << 4) | value as u16)
    })
}

fn is_high(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

/// `text` with every lone UTF-16 surrogate escape replaced by `\ufffd`:
/// a `\uD800`–`\uDBFF` not immediately followed by a `\uDC00`–`\uDFFF`,
/// and a `\uDC00`–`\uDFFF` not immediately preceded by a
/// `\uD800`–`\uDBFF` (hex digits in either case). Everything else is
/// copied as it is: a surrogate pair, an escaped backslash (`\\ud83d` is a
/// backslash followed by the text `ud83d`), other escapes, and incomplete
/// or malformed escapes (`\ud83`, `\uzzzz`, a trailing `\`), which stay
/// invalid JSON.
///
/// One pass over the bytes, no recursion; the copy has exactly the length
/// of `text` (so a parse error in it is at the original's position), and
/// is made only when something is replaced ([`Cow::Borrowed`] otherwise).
/// Escapes are recognised wherever they are — JSON has backslashes only
/// inside strings, and text with one outside a string stays invalid.
/// Never panics, whatever `text` holds.
pub fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut copy: Option<String> = None;
    // Bytes before `copied` are in `copy` already.
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = unicode_escape(bytes, i) else {
            // `\\`, `\"`, `\n`, … or an incomplete escape: the escaped
            // byte is skipped with the backslash, so an escaped backslash
            // never starts an escape. A backslash and a non-ASCII byte:
            // the continuation bytes that follow are never `\`.
            i += 2;
            continue;
        };
        let lone = if is_high(unit) {
            match unicode_escape(bytes, i + 6) {
                Some(next) if is_low(next) => {
                    // A pair: both escapes are kept.
                    i += 12;
                    continue;
                }
                _ => true,
            }
        } else {
            is_low(unit)
        };
        if lone {
            // `i` is at an ASCII byte, so both slices end on char boundaries.
            let out = copy.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..i]);
            out.push_str(REPLACEMENT_ESCAPE);
            copied = i + 6;
        }
        i += 6;
    }
    match copy {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// Reads JSON text as JavaScript's `JSON.parse` would hand it to a Rust
/// reader that replaces each lone surrogate with U+FFFD: strictly first
/// (`serde_json::from_str`), and only when that fails, once more from the
/// copy of [`replace_lone_surrogates`] (when it differs). Lossy in that one
/// character only: `"ok\ud83d"` reads as `"ok\u{FFFD}"`; every other error
/// is reported as the strict reading reports it, at the same position.
///
/// For text *reported* to the reader — a TypeScript page's result,
/// progress or announcement, read by an agent host (see
/// [`BrowserToHostMessage::from_json`](super::BrowserToHostMessage::from_json))
/// — never for text that is acted upon, such as a call's input. The copy
/// is as long as `text`: bound the text before reading it.
///
/// # Errors
/// The parse error of the copy (or of `text`, when it has no lone
/// surrogate escape).
pub fn from_json_lossy<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(text).or_else(|strict| from_lossy_copy(text, strict))
}

/// The second half of [`from_json_lossy`], for a caller that parsed `text`
/// strictly already and got `strict`.
pub(crate) fn from_lossy_copy<T: DeserializeOwned>(
    text: &str,
    strict: serde_json::Error,
) -> Result<T, serde_json::Error> {
    match replace_lone_surrogates(text) {
        Cow::Borrowed(_) => Err(strict),
        Cow::Owned(copy) => serde_json::from_str(&copy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn replaced(text: &str) -> String {
        replace_lone_surrogates(text).into_owned()
    }

    #[test]
    fn a_lone_high_surrogate_becomes_the_replacement_escape() {
        let text = r#"{"note":"ok\ud83d"}"#;
        assert_eq!(replaced(text), r#"{"note":"ok\ufffd"}"#);
        assert!(serde_json::from_str::<Value>(text).is_err());
        let v: Value = from_json_lossy(text).unwrap();
        assert_eq!(v, json!({"note": "ok\u{FFFD}"}));
        // Upper case hex, and a high surrogate before plain text.
        assert_eq!(replaced(r#""\uD83Dx""#), r#""\ufffdx""#);
    }

    #[test]
    fn a_lone_low_surrogate_becomes_the_replacement_escape() {
        assert_eq!(replaced(r#""\ude00ok""#), r#""\ufffdok""#);
        assert_eq!(replaced(r#""\uDFFF""#), r#""\ufffd""#);
        // A low then a high is two lone surrogates, not a pair.
        assert_eq!(replaced(r#""\ude00\ud83d""#), r#""\ufffd\ufffd""#);
    }

    #[test]
    fn pairs_and_other_escapes_are_untouched() {
        for text in [
            r#""\ud83d\ude00""#,
            r#""\uD83D\uDE00""#,
            r#""\uDBFF\uDFFF""#,
            r#""\u00e9\n\t\"\/\b\f\r""#,
            r#""\ud7ff\ue000""#,
            r#""plain é 😀""#,
            "",
        ] {
            assert!(
                matches!(replace_lone_surrogates(text), Cow::Borrowed(_)),
                "{text}"
            );
        }
        // A high surrogate, then a pair: the first alone is lone.
        assert_eq!(
            replaced(r#""\ud83d\ud83d\ude00""#),
            r#""\ufffd\ud83d\ude00""#
        );
    }

    #[test]
    fn an_escaped_backslash_never_starts_an_escape() {
        // `\\ud83d` is a backslash and the text `ud83d`.
        let text = r#"{"path":"C:\\ud83d"}"#;
        assert!(matches!(replace_lone_surrogates(text), Cow::Borrowed(_)));
        let v: Value = from_json_lossy(text).unwrap();
        assert_eq!(v["path"], json!("C:\\ud83d"));
        // An escaped backslash, then a lone surrogate escape.
        assert_eq!(replaced(r#""\\\ud83d""#), r#""\\\ufffd""#);
        // Two escaped backslashes, then text.
        assert!(matches!(
            replace_lone_surrogates(r#""\\\\ud83d""#),
            Cow::Borrowed(_)
        ));
        // An escaped backslash between the halves of a would-be pair.
        assert_eq!(replaced(r#""\ud83d\\ude00""#), r#""\ufffd\\ude00""#);
    }

    #[test]
    fn truncated_and_malformed_escapes_are_copied_and_never_panic() {
        for (text, expected) in [
            ("\\", "\\"),
            ("\\u", "\\u"),
            ("\\ud8", "\\ud8"),
            ("\\ud83", "\\ud83"),
            ("\\ud83d", "\\ufffd"),
            ("\\ud83d\\", "\\ufffd\\"),
            ("\\ud83d\\u", "\\ufffd\\u"),
            ("\\ud83d\\ude0", "\\ufffd\\ude0"),
            ("\\ud83d\\ude00", "\\ud83d\\ude00"),
            ("\"ok\\ud83d", "\"ok\\ufffd"),
            ("\\uzzzz", "\\uzzzz"),
            ("\\u+d83", "\\u+d83"),
            ("\\u-001", "\\u-001"),
            ("\\ud83d\\u+c00", "\\ufffd\\u+c00"),
            ("\\é\\ud83d", "\\é\\ufffd"),
            ("\\😀", "\\😀"),
            ("é\\udc00😀", "é\\ufffd😀"),
        ] {
            assert_eq!(replaced(text), expected, "{text:?}");
        }
    }

    #[test]
    fn other_errors_keep_their_message_and_position() {
        let strict = serde_json::from_str::<Value>(r#"{"a":"x" "b"}"#).unwrap_err();
        let lossy = from_json_lossy::<Value>(r#"{"a":"x" "b"}"#).unwrap_err();
        assert_eq!(lossy.to_string(), strict.to_string());
        // With a lone surrogate before the error: same column as without.
        let plain = serde_json::from_str::<Value>(r#"{"a":"\u0041" "b"}"#).unwrap_err();
        let lone = from_json_lossy::<Value>(r#"{"a":"\ud83d" "b"}"#).unwrap_err();
        assert_eq!((lone.line(), lone.column()), (plain.line(), plain.column()));
    }

    /// Decodes the inside of a JSON string to UTF-16 code units as
    /// JavaScript's `JSON.parse` does (lone surrogates kept); `None` when
    /// it is not a valid JSON string body.
    fn js_units(body: &str) -> Option<Vec<u16>> {
        let mut units = Vec::new();
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return None,
                '\\' => match chars.next()? {
                    '"' => units.push(0x22),
                    '\\' => units.push(0x5C),
                    '/' => units.push(0x2F),
                    'b' => units.push(0x08),
                    'f' => units.push(0x0C),
                    'n' => units.push(0x0A),
                    'r' => units.push(0x0D),
                    't' => units.push(0x09),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).collect();
                        if hex.len() != 4 || !hex.chars().all(|h| h.is_ascii_hexdigit()) {
                            return None;
                        }
                        units.push(u16::from_str_radix(&hex, 16).ok()?);
                    }
                    _ => return None,
                },
                c => units.extend(c.encode_utf16(&mut [0; 2]).iter()),
            }
        }
        Some(units)
    }

    #[test]
    fn reads_every_string_as_javascript_then_from_utf16_lossy() {
        // Every string of up to four fragments: the lossy reading equals
        // JavaScript's code units with lone surrogates replaced, and text
        // JavaScript refuses stays refused. The copy is as long as the
        // text, and replacing twice changes nothing more.
        const FRAGMENTS: [&str; 13] = [
            "a", "é", "😀", "\\\\", "\\\"", "\\n", "\\ud83d", "\\uDE00", "\\u00e9", "\\", "\\ud8",
            "\\u", "\"",
        ];
        let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
        let mut checked = 0;
        while let Some((body, depth)) = stack.pop() {
            let text = format!("\"{body}\"");
            let copy = replace_lone_surrogates(&text);
            assert_eq!(copy.len(), text.len(), "{text}");
            assert_eq!(replace_lone_surrogates(&copy), copy, "{text}");
            let lossy = from_json_lossy::<String>(&text);
            match js_units(&body) {
                Some(units) => assert_eq!(
                    lossy.unwrap_or_else(|e| panic!("{text}: {e}")),
                    String::from_utf16_lossy(&units),
                    "{text}"
                ),
                None => assert!(lossy.is_err(), "{text}"),
            }
            checked += 1;
            if depth < 4 {
                stack.extend(FRAGMENTS.iter().map(|f| (format!("{body}{f}"), depth + 1)));
            }
        }
        assert!(checked > 20_000, "{checked}");
    }
}
