//! Recognized sources: zod 4's own format regexes, matched by the
//! hand-written checks of [`crate::format`] instead of the regex engine.
//!
//! zod's `z.toJSONSchema` writes `format` **and** `pattern` for the same
//! rule (`z.email()` → `format: "email"` and `pattern:` the source of zod's
//! email regex), so a validator would run both a hand-written check and a
//! regex engine on every value. A [`Pattern`](super::Pattern) whose source
//! is, byte for byte, one of the sources below runs the listed check
//! instead, on every target (natively and on wasm32).
//!
//! Each source is anchored (`^…$`, no `m` flag), so the unanchored search
//! JSON Schema asks for is a whole-string match, and each check accepts a
//! string exactly when the ECMA-262 expression (with the `u` flag) matches
//! it. The tests below prove it for every entry against the regex engine
//! on the format differential's strings and on generated strings near each
//! grammar; a source without such a proof is not listed.

use crate::format::{self, same_bytes};

/// zod 4's `dateSource` (`z.iso.date()`, and the date part of
/// `z.iso.datetime()`).
macro_rules! date_source {
    () => {
        "(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))"
    };
}

/// The `hh:mm:ss` zod 4's `timeSource` writes for `z.iso.datetime()`.
macro_rules! hms {
    () => {
        "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d"
    };
}

/// zod 4's offset alternative (`offset: true`).
macro_rules! offset {
    () => {
        "|([+-](?:[01]\\d|2[0-3]):[0-5]\\d)"
    };
}

/// A hand-written check: `true` when the string matches.
type Check = fn(&str) -> bool;

/// Every recognized source (the JSON Schema `pattern` string, i.e. the
/// regex's `.source`), the check that replaces it and the `format` zod
/// writes beside it, whose check accepts everything this one accepts (the
/// same check, or the union it is part of: tested below), with the zod
/// constructor that emits it.
pub(crate) const KNOWN: &[(&str, Check, &str)] = &[
    // z.email()
    (
        "^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$",
        format::is_email, "email",
    ),
    // z.guid()
    (
        "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$",
        format::is_uuid, "uuid",
    ),
    // z.uuid()
    (
        "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$",
        format::is_rfc_uuid, "uuid",
    ),
    // z.iso.date()
    (concat!("^", date_source!(), "$"), format::is_date, "date"),
    // z.iso.datetime()
    (
        concat!("^", date_source!(), "T(?:", hms!(), "(?:\\.\\d+)?(?:Z))$"),
        format::is_datetime_utc, "date-time",
    ),
    // z.iso.datetime({ offset: true })
    (
        concat!("^", date_source!(), "T(?:", hms!(), "(?:\\.\\d+)?(?:Z", offset!(), "))$"),
        format::is_datetime_offset, "date-time",
    ),
    // z.iso.datetime({ precision: 0 })
    (
        concat!("^", date_source!(), "T(?:", hms!(), "(?:Z))$"),
        format::is_datetime_utc_seconds, "date-time",
    ),
    // z.iso.datetime({ precision: 3 })
    (
        concat!("^", date_source!(), "T(?:", hms!(), "\\.\\d{3}(?:Z))$"),
        format::is_datetime_utc_millis, "date-time",
    ),
    // z.iso.datetime({ precision: 3, offset: true })
    (
        concat!("^", date_source!(), "T(?:", hms!(), "\\.\\d{3}(?:Z", offset!(), "))$"),
        format::is_datetime_offset_millis, "date-time",
    ),
];

/// The check that replaces `source`, if it is one of [`KNOWN`]. A `const
/// fn`, so a `static` [`Pattern`](super::Pattern) resolves it at compile
/// time.
pub(super) const fn recognize(source: &str) -> Option<Check> {
    let mut i = 0;
    while i < KNOWN.len() {
        if same_bytes(KNOWN[i].0.as_bytes(), source.as_bytes()) {
            return Some(KNOWN[i].1);
        }
        i += 1;
    }
    None
}

/// Whether `source` is one of [`KNOWN`] written beside `format`: a string
/// its check accepts passes `format`'s check too.
pub(super) const fn covers(source: &str, format: &str) -> bool {
    let mut i = 0;
    while i < KNOWN.len() {
        if same_bytes(KNOWN[i].0.as_bytes(), source.as_bytes()) {
            return same_bytes(KNOWN[i].2.as_bytes(), format.as_bytes());
        }
        i += 1;
    }
    false
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::super::Pattern;
    use super::KNOWN;
    use proptest::prelude::*;
    use serde_json::Value;

    const CASES: &str = include_str!("../../../tests/fixtures/formats/cases.json");
    const ZOD_SCHEMAS: &str = include_str!("../../../tests/fixtures/formats/zod-formats.json");
    const ZOD_MANIFEST: &str = include_str!("../../../tests/fixtures/codegen/zod.manifest.json");

    fn leak(s: &str) -> &'static str {
        Box::leak(s.to_string().into_boxed_str())
    }

    /// Every `pattern` string in a JSON document.
    fn patterns(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(p)) = map.get("pattern") {
                    out.push(p.clone());
                }
                map.values().for_each(|v| patterns(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| patterns(v, out)),
            _ => {}
        }
    }

    /// The engine's verdict and the shortcut's, for every recognized
    /// source; the list of disagreements.
    fn disagreements(values: &[String]) -> Vec<String> {
        let mut wrong = Vec::new();
        for (source, check, format) in KNOWN {
            let implied = crate::format::checker(format).expect("an asserted format");
            let engine = Pattern::engine_only(source);
            let recognized = Pattern::new(leak(source));
            assert!(recognized.is_recognized(), "{source}");
            for value in values {
                let expected = engine.matches(value).expect("zod's source compiles");
                if check(value) != expected || recognized.matches(value) != Ok(expected) {
                    wrong.push(format!("{source} on {value:?}: regex {expected}"));
                }
                if expected && !implied(value) {
                    wrong.push(format!("{source} on {value:?}: not a {format:?}"));
                }
            }
        }
        wrong
    }

    #[test]
    fn recognized_sources_are_patterns_zod_emits() {
        let mut emitted = Vec::new();
        for doc in [ZOD_SCHEMAS, ZOD_MANIFEST] {
            patterns(&serde_json::from_str(doc).unwrap(), &mut emitted);
        }
        for (source, _, _) in KNOWN {
            assert!(
                emitted.iter().any(|p| p == source),
                "{source} is not a pattern zod emitted in the fixtures"
            );
            assert!(source.starts_with('^') && source.ends_with('$'), "{source}");
        }
        let mut sources: Vec<&str> = KNOWN.iter().map(|(s, _, _)| *s).collect();
        sources.sort_unstable();
        sources.dedup();
        assert_eq!(sources.len(), KNOWN.len(), "duplicate sources");
    }

    #[test]
    fn only_exact_sources_are_recognized() {
        let (email, _, _) = KNOWN[0];
        assert!(Pattern::new(email).is_recognized());
        assert!(!Pattern::engine_only(email).is_recognized());
        // One byte different, unanchored, or another zod regex (html5Email).
        for other in [
            leak(&email.replace("{2,}", "{3,}")),
            leak(email.trim_start_matches('^')),
            leak(&format!("{email} ")),
            "^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$",
            "^a$",
            "",
        ] {
            assert!(!Pattern::new(other).is_recognized(), "{other}");
        }
    }

    /// Every string of the format differential (every format's valid and
    /// invalid cases, checked against the real zod by the facade's
    /// `formats_zod` test) gets the regex engine's verdict from every
    /// recognized source's shortcut, plus the strings around them that
    /// break an anchor (a newline or a character before or after).
    #[test]
    fn shortcuts_equal_the_regex_engine_on_the_format_differential_strings() {
        let cases: Value = serde_json::from_str(CASES).unwrap();
        let mut values = Vec::new();
        for sets in cases.as_object().unwrap().values() {
            for label in ["valid", "invalid"] {
                for v in sets[label].as_array().unwrap() {
                    let v = v.as_str().unwrap();
                    values.push(v.to_string());
                    values.push(format!("{v}\n"));
                    values.push(format!("\n{v}"));
                    values.push(format!("x{v}"));
                    values.push(format!("{v}x"));
                }
            }
        }
        assert!(values.len() > 4_000, "{} strings", values.len());
        let wrong = disagreements(&values);
        assert!(wrong.is_empty(), "disagreements:\n{}", wrong.join("\n"));
    }

    /// Characters the grammars treat specially, and a few outside them.
    const EDITS: &[char] = &[
        '0', '1', '2', '3', '5', '8', '9', 'a', 'b', 'f', 'g', 'z', 'A', 'B', 'F', 'G', 'T', 'Z',
        't', '-', '+', '_', '\'', '.', ':', '@', ' ', '\n', '\u{e9}', '\u{661}', '\u{ff11}',
    ];

    /// A string the source's own grammar generates (anchors stripped, `\d`
    /// read as Unicode digits, which widens it), then 0–3 random edits.
    fn near(source: &'static str) -> impl Strategy<Value = String> {
        let body = &source[1..source.len() - 1];
        let generated = proptest::string::string_regex(body).expect("a generator for the source");
        let edit = (
            0usize..3,
            any::<prop::sample::Index>(),
            prop::sample::select(EDITS),
        );
        (generated, prop::collection::vec(edit, 0..4)).prop_map(|(seed, edits)| {
            let mut chars: Vec<char> = seed.chars().collect();
            for (kind, at, c) in edits {
                let i = at.index(chars.len() + 1);
                match kind {
                    0 => chars.insert(i, c),
                    1 if i < chars.len() => {
                        chars.remove(i);
                    }
                    _ if i < chars.len() => chars[i] = c,
                    _ => chars.push(c),
                }
            }
            chars.into_iter().collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn shortcuts_equal_the_regex_engine_near_each_grammar(
            (i, value) in (0..KNOWN.len()).prop_flat_map(|i| (Just(i), near(KNOWN[i].0)))
        ) {
            let (source, check, format) = KNOWN[i];
            let expected = Pattern::engine_only(source).matches(&value).expect("compiles");
            prop_assert_eq!(check(&value), expected, "{} on {:?}", source, value);
            // The format zod writes beside it accepts what it accepts.
            let implied = crate::format::checker(format).expect("an asserted format");
            prop_assert!(!expected || implied(&value), "{} on {:?}: not a {}", source, value, format);
        }
    }
}
