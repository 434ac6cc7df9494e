//! `base64`, `base64url` and `jwt`.

fn is_base64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

/// Padded base64 (`A-Z a-z 0-9 + /`, length a multiple of 4, `=` or `==`
/// only at the end; the empty string included), no whitespace
/// (`z.base64()`). Unused trailing bits are not checked.
#[must_use]
pub fn is_base64(value: &str) -> bool {
    let b = value.as_bytes();
    let body = b
        .strip_suffix(b"==")
        .or_else(|| b.strip_suffix(b"="))
        .unwrap_or(b);
    b.len().is_multiple_of(4) && body.iter().all(|&c| is_base64_char(c))
}

/// Unpadded base64url (`A-Z a-z 0-9 _ -`, a length that is not 1 more than a
/// multiple of 4; the empty string included; no `=`) (`z.base64url()`).
#[must_use]
pub fn is_base64url(value: &str) -> bool {
    value.len() % 4 != 1
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// What `z.jwt()` accepts: three `.`-separated parts whose first is
/// non-empty and decodes with JavaScript's `atob` (forgiving base64:
/// ASCII whitespace ignored, `+ /` alphabet, optional padding) to a JSON
/// object (each byte read as one Latin-1 character, as `JSON.parse(atob(…))`
/// does) whose last `alg` member is truthy in JavaScript (a non-empty
/// string, a non-zero number, `true`, an object or an array) and whose
/// `typ`, if present, is exactly `"JWT"`. The payload and signature parts
/// are not checked (they may be empty).
#[must_use]
pub fn is_jwt(value: &str) -> bool {
    let mut parts = value.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    !header.is_empty() && atob(header).is_some_and(|bytes| jwt_header_ok(&bytes))
}

/// The HTML standard's forgiving-base64 decode (`atob`).
fn atob(input: &str) -> Option<Vec<u8>> {
    let mut data: Vec<u8> = input
        .bytes()
        .filter(|c| !matches!(c, b'\t' | b'\n' | b'\x0c' | b'\r' | b' '))
        .collect();
    if data.len().is_multiple_of(4) {
        for _ in 0..2 {
            if data.last() == Some(&b'=') {
                data.pop();
            }
        }
    }
    if data.len() % 4 == 1 || !data.iter().all(|&c| is_base64_char(c)) {
        return None;
    }
    let sextet = |c: u8| -> u32 {
        u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        })
    };
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &c in &data {
        buffer = (buffer << 6) | sextet(c);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The top-level value kinds the header check needs.
enum Json {
    String(Vec<u16>),
    Number(bool),
    Bool(bool),
    Null,
    Container,
}

impl Json {
    /// JavaScript truthiness.
    fn truthy(&self) -> bool {
        match self {
            Json::String(s) => !s.is_empty(),
            Json::Number(nonzero) => *nonzero,
            Json::Bool(b) => *b,
            Json::Null => false,
            Json::Container => true,
        }
    }
}

fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// `JSON.parse(latin1(bytes))` is an object meeting `z.jwt()`'s `alg`/`typ`
/// rules. Linear in the header; nesting depth is unbounded (an explicit
/// stack, no recursion).
fn jwt_header_ok(bytes: &[u8]) -> bool {
    let mut p = Parser { b: bytes, i: 0 };
    p.ws();
    if !p.eat(b'{') {
        return false;
    }
    let (mut alg, mut typ): (Option<Json>, Option<Json>) = (None, None);
    p.ws();
    if !p.eat(b'}') {
        loop {
            p.ws();
            let mut key = Vec::new();
            if !p.string(Some(&mut key)) {
                return false;
            }
            p.ws();
            if !p.eat(b':') {
                return false;
            }
            p.ws();
            let Some(value) = p.value() else {
                return false;
            };
            if key == utf16("alg") {
                alg = Some(value);
            } else if key == utf16("typ") {
                typ = Some(value);
            }
            p.ws();
            if p.eat(b',') {
                continue;
            }
            if p.eat(b'}') {
                break;
            }
            return false;
        }
    }
    p.ws();
    if p.i != bytes.len() {
        return false;
    }
    let typ_ok = match &typ {
        None => true,
        Some(Json::String(s)) => *s == utf16("JWT"),
        Some(_) => false,
    };
    typ_ok && alg.is_some_and(|a| a.truthy())
}

/// A JSON (RFC 8259, as `JSON.parse`) reader over Latin-1 bytes.
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let hit = self.b[self.i..].starts_with(word);
        if hit {
            self.i += word.len();
        }
        hit
    }

    /// A string at `i`; its UTF-16 code units into `out` when given.
    fn string(&mut self, mut out: Option<&mut Vec<u16>>) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        loop {
            let Some(c) = self.peek() else {
                return false;
            };
            self.i += 1;
            let unit = match c {
                b'"' => return true,
                0..=0x1f => return false,
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return false;
                    };
                    self.i += 1;
                    match e {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => {
                            let Some(hex) = self.b.get(self.i..self.i + 4) else {
                                return false;
                            };
                            let Some(unit) = std::str::from_utf8(hex)
                                .ok()
                                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                                .and_then(|h| u16::from_str_radix(h, 16).ok())
                            else {
                                return false;
                            };
                            self.i += 4;
                            unit
                        }
                        _ => return false,
                    }
                }
                other => u16::from(other),
            };
            if let Some(out) = out.as_deref_mut() {
                out.push(unit);
            }
        }
    }

    /// A number at `i`; whether its IEEE double value is non-zero.
    fn number(&mut self) -> Option<bool> {
        let start = self.i;
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return None,
        }
        if self.eat(b'.') {
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return None;
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return None;
            }
            self.digits();
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        text.parse::<f64>().ok().map(|v| v != 0.0)
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// Any value at `i`; strings are decoded only at the top level.
    fn value(&mut self) -> Option<Json> {
        match self.peek()? {
            b'"' => {
                let mut s = Vec::new();
                self.string(Some(&mut s)).then_some(Json::String(s))
            }
            b'{' | b'[' => self.container().then_some(Json::Container),
            b't' => self.literal(b"true").then_some(Json::Bool(true)),
            b'f' => self.literal(b"false").then_some(Json::Bool(false)),
            b'n' => self.literal(b"null").then_some(Json::Null),
            _ => self.number().map(Json::Number),
        }
    }

    fn scalar(&mut self) -> bool {
        match self.peek() {
            Some(b'"') => self.string(None),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            _ => self.number().is_some(),
        }
    }

    /// An object or array at `i`, validated with an explicit stack.
    fn container(&mut self) -> bool {
        let mut stack = Vec::new();
        let mut opened = true;
        stack.push(self.b[self.i]);
        self.i += 1;
        loop {
            self.ws();
            let Some(&top) = stack.last() else {
                return true;
            };
            let close = if top == b'{' { b'}' } else { b']' };
            if opened && self.eat(close) {
                stack.pop();
                if stack.is_empty() {
                    return true;
                }
            } else {
                if top == b'{' {
                    if !self.string(None) {
                        return false;
                    }
                    self.ws();
                    if !self.eat(b':') {
                        return false;
                    }
                    self.ws();
                }
                match self.peek() {
                    Some(c @ (b'{' | b'[')) => {
                        stack.push(c);
                        self.i += 1;
                        opened = true;
                        continue;
                    }
                    _ => {
                        if !self.scalar() {
                            return false;
                        }
                    }
                }
            }
            // After a value (or a closed container): `,` or the close of
            // the enclosing container.
            loop {
                self.ws();
                let Some(&top) = stack.last() else {
                    return true;
                };
                let close = if top == b'{' { b'}' } else { b']' };
                if self.eat(b',') {
                    opened = false;
                    break;
                }
                if !self.eat(close) {
                    return false;
                }
                stack.pop();
                if stack.is_empty() {
                    return true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_needs_padding_and_no_whitespace() {
        assert!(is_base64(""));
        assert!(is_base64("YQ=="));
        assert!(is_base64("YWJj"));
        assert!(!is_base64("YQ"));
        assert!(!is_base64("YQ==="));
        assert!(!is_base64("YW=j"));
        assert!(!is_base64("YWJj\n"));
    }

    #[test]
    fn base64url_has_no_padding() {
        assert!(is_base64url("YQ"));
        assert!(!is_base64url("YQ=="));
        assert!(!is_base64url("abcde"));
    }

    #[test]
    fn atob_is_forgiving_about_whitespace_and_padding() {
        assert_eq!(atob(" YW Jj\n").as_deref(), Some(&b"abc"[..]));
        assert_eq!(atob("YQ").as_deref(), Some(&b"a"[..]));
        assert_eq!(atob("YQ==").as_deref(), Some(&b"a"[..]));
        assert_eq!(atob("Y"), None);
        assert_eq!(atob("YQ-_"), None);
    }

    #[test]
    fn jwt_header_needs_a_truthy_alg_and_typ_jwt() {
        let token = |header: &str| {
            let encoded: String = {
                // Standard base64 of `header`.
                const A: &[u8; 64] =
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
                let bytes = header.as_bytes();
                let mut s = String::new();
                for chunk in bytes.chunks(3) {
                    let n = chunk.iter().fold(0u32, |n, &b| (n << 8) | u32::from(b))
                        << (8 * (3 - chunk.len()));
                    for k in 0..=chunk.len() {
                        s.push(A[((n >> (18 - 6 * k)) & 63) as usize] as char);
                    }
                }
                s
            };
            format!("{encoded}.e30.sig")
        };
        assert!(is_jwt(&token(r#"{"alg":"HS256","typ":"JWT"}"#)));
        assert!(is_jwt(&token(r#"{"alg":[],"x":[{"y":[1,{"z":null}]}]}"#)));
        assert!(is_jwt(&token(r#"{"\u0061lg":1e400}"#)));
        assert!(!is_jwt(&token(r#"{"alg":1e-400}"#)));
        assert!(!is_jwt(&token(r#"{"alg":"x","typ":"jwt"}"#)));
        assert!(!is_jwt(&token(r#"{"alg":"x","alg":""}"#)));
        assert!(!is_jwt(&token(r#"{"alg":"x",}"#)));
        assert!(!is_jwt(&token(r#"["alg"]"#)));
        assert!(!is_jwt(&token(r#"{"alg":"x"} 1"#)));
        assert!(!is_jwt("a.b"));
        // Deep nesting is linear and does not overflow the stack.
        let deep = format!("{{\"alg\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(is_jwt(&token(&deep)));
    }
}
