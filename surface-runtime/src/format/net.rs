//! `email`, `uri`, `hostname`, `ipv4`, `ipv6`, `cidrv4`, `cidrv6`, `mac`.

use super::{class, ALPHA, DIGIT, EMAIL_LOCAL};

/// zod's default `z.email()` pattern: a local part of dot-separated
/// non-empty runs of `A-Z a-z 0-9 _ ' + -` not ending in `'`, one `@`, and a
/// domain of at least two dot-separated labels, each starting with a letter
/// or digit (then letters, digits, `-`), the last being two or more ASCII
/// letters. No quoted local parts, IP literals, Unicode or trailing dot.
#[must_use]
pub fn is_email(value: &str) -> bool {
    let b = value.as_bytes();
    // The local part, up to the first `@`: `segment` counts the current
    // dot-separated run.
    let mut i = 0;
    let mut segment = 0usize;
    loop {
        let Some(&c) = b.get(i) else {
            return false;
        };
        i += 1;
        if class(c) & EMAIL_LOCAL != 0 {
            segment += 1;
        } else if c == b'.' && segment > 0 {
            segment = 0;
        } else if c == b'@' {
            break;
        } else {
            return false;
        }
    }
    // Not empty, no trailing dot (`segment > 0`), not ending in `'`.
    if segment == 0 || b[i - 2] == b'\'' {
        return false;
    }
    // The domain: `label` counts the current label, `letters` says whether
    // it is all ASCII letters so far (the last one must be).
    let mut dots = 0usize;
    let mut label = 0usize;
    let mut letters = true;
    for &c in &b[i..] {
        let k = class(c);
        if k & (ALPHA | DIGIT) != 0 {
            label += 1;
            letters &= k & ALPHA != 0;
        } else if c == b'-' && label > 0 {
            label += 1;
            letters = false;
        } else if c == b'.' && label > 0 {
            dots += 1;
            label = 0;
            letters = true;
        } else {
            return false;
        }
    }
    dots > 0 && label >= 2 && letters
}

/// What `z.url()` accepts: the value with JavaScript's `String.prototype.trim`
/// whitespace removed from both ends parses as an absolute WHATWG URL
/// (`URL.canParse`). Natively the `url` crate's WHATWG parser, on wasm32 the
/// JavaScript engine's `URL`. Any scheme: `mailto:`, `file:`,
/// `javascript:` are URLs; relative references are not.
#[must_use]
pub fn is_uri(value: &str) -> bool {
    let trimmed = value.trim_matches(is_js_whitespace);
    #[cfg(not(target_arch = "wasm32"))]
    {
        url::Url::parse(trimmed).is_ok()
    }
    #[cfg(target_arch = "wasm32")]
    {
        js::can_parse_url(trimmed)
    }
}

/// ECMAScript `WhiteSpace` and `LineTerminator` (what `trim` and `\s`
/// remove): TAB, VT, FF, SP, NBSP, ZWNBSP, the `Zs` category, LF, CR,
/// LS, PS.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// zod's `z.hostname()`: dot-separated labels of 1–63 `A-Z a-z 0-9 -`, not
/// starting or ending with `-`, an optional single trailing dot, at most 253
/// characters before it. Digits-only labels are allowed.
#[must_use]
pub fn is_hostname(value: &str) -> bool {
    let body = value.strip_suffix('.').unwrap_or(value);
    !body.is_empty()
        && body.len() <= 253
        && body.split('.').all(|label| {
            let b = label.as_bytes();
            (1..=63).contains(&b.len())
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        })
}

/// Dotted-decimal IPv4: four decimal octets 0–255 without leading zeros
/// (`z.ipv4()`).
#[must_use]
pub fn is_ipv4(value: &str) -> bool {
    let mut parts = 0;
    for part in value.split('.') {
        parts += 1;
        if parts > 4 || octet(part.as_bytes()).is_none() {
            return false;
        }
    }
    parts == 4
}

/// `0`–`max` in canonical decimal (no sign, no leading zero).
fn decimal(b: &[u8], max: u32) -> Option<u32> {
    if b.is_empty() || b.len() > 3 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    let mut n = 0u32;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u32::from(c - b'0');
    }
    (n <= max).then_some(n)
}

fn octet(b: &[u8]) -> Option<u32> {
    decimal(b, 255)
}

/// What `z.ipv6()` accepts: only hex digits, `:` and `.`, forming an
/// address the WHATWG URL host parser accepts inside `[…]`: up to eight
/// 1–4-digit hex pieces, at most one `::`, optionally ending in a
/// dotted-decimal IPv4 (no leading zeros) in place of the last two pieces.
/// No zone index (`%eth0`), no brackets.
#[must_use]
pub fn is_ipv6(value: &str) -> bool {
    let b = value.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_hexdigit() || *c == b':' || *c == b'.')
        && whatwg_ipv6(b)
}

/// The WHATWG URL Standard's IPv6 parser, for validity only.
fn whatwg_ipv6(b: &[u8]) -> bool {
    let at = |i: usize| b.get(i).copied();
    let mut piece = 0usize;
    let mut compress: Option<usize> = None;
    let mut i = 0usize;
    if at(0) == Some(b':') {
        if at(1) != Some(b':') {
            return false;
        }
        i = 2;
        piece = 1;
        compress = Some(1);
    }
    while i < b.len() {
        if piece == 8 {
            return false;
        }
        if b[i] == b':' {
            if compress.is_some() {
                return false;
            }
            i += 1;
            piece += 1;
            compress = Some(piece);
            continue;
        }
        let mut length = 0;
        while length < 4 && at(i).is_some_and(|c| c.is_ascii_hexdigit()) {
            i += 1;
            length += 1;
        }
        match at(i) {
            Some(b'.') => {
                if length == 0 || piece > 6 {
                    return false;
                }
                return embedded_ipv4(b, i - length, piece)
                    .is_some_and(|piece| compress.is_some() || piece == 8);
            }
            Some(b':') => {
                i += 1;
                if i == b.len() {
                    return false;
                }
            }
            Some(_) => return false,
            None => {}
        }
        piece += 1;
    }
    compress.is_some() || piece == 8
}

/// The IPv4 part that ends an IPv6 address, from `b[i]` to the end, in
/// the WHATWG parser's rules: four decimal numbers 0–255 without leading
/// zeros. Returns the piece count after it (`piece` plus two), or `None`.
fn embedded_ipv4(b: &[u8], mut i: usize, mut piece: usize) -> Option<usize> {
    let at = |i: usize| b.get(i).copied();
    let mut numbers = 0;
    while i < b.len() {
        if numbers > 0 {
            if b[i] == b'.' && numbers < 4 {
                i += 1;
            } else {
                return None;
            }
        }
        if !at(i).is_some_and(|c| c.is_ascii_digit()) {
            return None;
        }
        let mut value: Option<u32> = None;
        while let Some(c) = at(i).filter(u8::is_ascii_digit) {
            let digit = u32::from(c - b'0');
            value = match value {
                None => Some(digit),
                Some(0) => return None,
                Some(v) => Some(v * 10 + digit),
            };
            if value > Some(255) {
                return None;
            }
            i += 1;
        }
        numbers += 1;
        if numbers == 2 || numbers == 4 {
            piece += 1;
        }
    }
    (numbers == 4).then_some(piece)
}

/// Dotted-decimal IPv4 (as [`is_ipv4`]), `/`, and a prefix length 0–32 in
/// canonical decimal (`z.cidrv4()`).
#[must_use]
pub fn is_cidrv4(value: &str) -> bool {
    value.split_once('/').is_some_and(|(address, prefix)| {
        is_ipv4(address) && decimal(prefix.as_bytes(), 32).is_some()
    })
}

/// An address [`is_ipv6`] accepts, exactly one `/`, and a prefix as
/// `z.cidrv6()` checks it: JavaScript's own text of `Number(prefix)`, not
/// below 0 nor above 128. So fractions pass (`::/6.4`, `2001:db8::/32.1`),
/// and so does `NaN` (it fails neither comparison); `06`, `1e2`, `-0`,
/// `+6` do not.
#[must_use]
pub fn is_cidrv6(value: &str) -> bool {
    value.split_once('/').is_some_and(|(address, prefix)| {
        !prefix.contains('/') && zod_prefix(prefix) && is_ipv6(address)
    })
}

/// `` `${Number(prefix)}` === prefix `` and `!(n < 0 || n > 128)`, as
/// zod's `isValidCIDRv6` tests the prefix.
fn zod_prefix(prefix: &str) -> bool {
    if prefix == "NaN" {
        return true;
    }
    let Ok(n) = prefix.parse::<f64>() else {
        return false;
    };
    if !n.is_finite() || (n == 0.0 && prefix != "0") {
        // `Infinity` is over 128; `-0` and `0.0` are written `0`.
        return false;
    }
    if n != 0.0 && n.abs() < 1e-6 {
        // JavaScript writes these with an exponent (`1e-7`).
        return false;
    }
    (0.0..=128.0).contains(&n) && format!("{n}") == prefix
}

/// Six two-digit hex groups separated by one delimiter string repeated
/// five times (any delimiter, including none), letters all uppercase or
/// all lowercase: the union of `z.mac({ delimiter })` over every delimiter
/// (zod's converter writes `format: mac` for each, with the delimiter only
/// in the sibling `pattern`).
#[must_use]
pub fn is_mac(value: &str) -> bool {
    let b = value.as_bytes();
    let Some(extra) = b.len().checked_sub(12) else {
        return false;
    };
    if !extra.is_multiple_of(5) {
        return false;
    }
    let width = extra / 5;
    let delimiter = &b[2..2 + width];
    let (mut upper, mut lower) = (false, false);
    for group in 0..6 {
        let start = group * (2 + width);
        for &c in &b[start..start + 2] {
            match c {
                b'0'..=b'9' => {}
                b'A'..=b'F' => upper = true,
                b'a'..=b'f' => lower = true,
                _ => return false,
            }
        }
        if group < 5 && &b[start + 2..start + 2 + width] != delimiter {
            return false;
        }
    }
    !(upper && lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_follows_the_whatwg_host_parser() {
        for v in [
            "::",
            "::1",
            "1::",
            "1:2:3:4:5:6:7::",
            "::ffff:1.2.3.4",
            "1:2:3:4:5:6:1.2.3.4",
        ] {
            assert!(is_ipv6(v), "{v}");
        }
        for v in [
            ":::",
            "1::2::3",
            "1:2:3:4:5:6:7",
            "12345::",
            "::01.2.3.4",
            "::1.2.3",
            "1:2:3:4:5:6:7:1.2.3.4",
            "fe80::1%eth0",
            "1:",
            "1:2:3:4:5:6:7:8::",
        ] {
            assert!(!is_ipv6(v), "{v}");
        }
    }

    #[test]
    fn mac_accepts_any_single_repeated_delimiter_and_one_letter_case() {
        assert!(is_mac("00:1A:2B:3C:4D:5E"));
        assert!(is_mac("001a2b3c4d5e"));
        assert!(is_mac("00::1a::2b::3c::4d::5e"));
        assert!(!is_mac("00:1A:2b:3C:4D:5E"));
        assert!(!is_mac("00:1A-2B:3C:4D:5E"));
        assert!(!is_mac("00:1A:2B:3C:4D"));
    }

    #[test]
    fn email_is_zods_default_pattern() {
        assert!(is_email("first.last+tag@sub.example.co"));
        assert!(is_email("a-@b-.io"));
        assert!(!is_email("a..b@example.com"));
        assert!(!is_email("a'@example.com"));
        assert!(!is_email("a@localhost"));
        assert!(!is_email("a@example.c"));
        assert!(!is_email("a@-x.com"));
    }

    #[test]
    fn email_refuses_each_misplaced_separator() {
        for v in [
            "", "@", "a", "@b.io", ".a@b.io", "a.@b.io", "a@b", "a@.io", "a@b..io", "a@b.io.",
            "a@@b.io", "a@b@c.io", "a@b.i1", "a@b.i-o", "a@b.-io", "é@b.io", "a@b.iö",
        ] {
            assert!(!is_email(v), "{v}");
        }
        for v in ["a@b.io", "'a@1.2.io", "a'b@x-.y.io", "a_+-@b.co"] {
            assert!(is_email(v), "{v}");
        }
    }

    #[test]
    fn uri_trims_javascript_whitespace_and_needs_a_scheme() {
        assert!(is_uri("https://example.com"));
        assert!(is_uri("\u{a0}https://example.com\u{feff}"));
        assert!(is_uri("mailto:"));
        assert!(!is_uri("/relative"));
        assert!(!is_uri("http://"));
        assert!(!is_uri("tomorrow"));
    }
}

#[cfg(target_arch = "wasm32")]
mod js {
    //! The JavaScript engine's `URL`, looked up on the global object and
    //! constructed through `Reflect.construct` (a constructor that throws
    //! is an `Err`, never an abort).

    use js_sys::{Array, Function, Reflect};
    use wasm_bindgen::{JsCast, JsValue};

    thread_local! {
        static URL: Option<Function> = Reflect::get(&js_sys::global(), &JsValue::from_str("URL"))
            .ok()
            .and_then(|ctor| ctor.dyn_into::<Function>().ok());
    }

    /// `new URL(input)` succeeds (WHATWG URL parsing, no base). A host
    /// without a `URL` global refuses every input.
    ///
    /// Chromium's `URL` accepts forbidden host code points in special-scheme
    /// URLs and percent-encodes them (`http://exa mple.com` has the
    /// hostname `exa%20mple.com`), where the WHATWG parser — Node's, so
    /// zod's — fails. A valid special-scheme host never contains `%` (it is
    /// itself forbidden after percent-decoding), so such a parse is
    /// refused here too.
    pub(super) fn can_parse_url(input: &str) -> bool {
        URL.with(|ctor| {
            ctor.as_ref().is_some_and(|ctor| {
                match Reflect::construct(ctor, &Array::of1(&JsValue::from_str(input))) {
                    Ok(url) => !escaped_special_host(&url),
                    Err(_) => false,
                }
            })
        })
    }

    fn escaped_special_host(url: &JsValue) -> bool {
        let field = |name: &str| {
            Reflect::get(url, &JsValue::from_str(name))
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default()
        };
        let special = matches!(
            field("protocol").as_str(),
            "http:" | "https:" | "ws:" | "wss:" | "ftp:" | "file:"
        );
        special && field("hostname").contains('%')
    }
}
