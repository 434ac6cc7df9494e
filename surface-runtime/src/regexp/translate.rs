//! ECMA-262 (`u` flag) pattern source → `fancy-regex` source with the same
//! meaning, for the native engine. The source has already been accepted by
//! `regress` (exact ECMA-262 syntax), so only the tokens whose meaning
//! differs are rewritten; groups, lookaround, backreferences, quantifiers
//! and `\p{…}` keep their spelling:
//!
//! * `\d \w \s \b` and their negations are ASCII / ECMAScript-whitespace
//!   sets (the Rust engine's are Unicode);
//! * `.` excludes the four ECMAScript line terminators;
//! * `\uXXXX` (a surrogate pair becomes one code point), `\u{…}`, `\xHH`,
//!   `\cX`, `\0` become `\x{…}`; `\/` becomes `/`;
//! * inside a class, `[`, `&`, `~` and a doubled `-` are literal (Rust
//!   reads them as nested classes and set operations) and `\b` is
//!   backspace; `[^]` is any character and `[]` matches nothing.

use std::fmt::Write;

/// ECMAScript `WhiteSpace` and `LineTerminator`, as class items.
const SPACE: &str = "\\t\\n\\x{b}\\x{c}\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}";
const WORD: &str = "0-9A-Za-z_";
const DIGIT: &str = "0-9";

/// The `fancy-regex` source for an ECMA-262 `u`-mode source.
pub(super) fn to_fancy(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len() + 16);
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        if in_class {
            match c {
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                '\\' => {
                    let set = matches!(chars.get(i + 1), Some('d' | 'D' | 'w' | 'W' | 's' | 'S'));
                    i = escape(&chars, i, true, &mut out);
                    // A `-` after a class escape is literal in ECMAScript.
                    if set && chars.get(i + 1) == Some(&'-') {
                        out.push_str("\\-");
                        i += 1;
                    }
                }
                '[' | '&' | '~' | '^' => {
                    out.push('\\');
                    out.push(c);
                }
                '-' if i > 0 && chars[i - 1] == '-' => out.push_str("\\-"),
                _ => out.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '\\' => i = escape(&chars, i, false, &mut out),
            '.' => out.push_str("[^\\n\\r\\x{2028}\\x{2029}]"),
            '[' => {
                if chars.get(i + 1) == Some(&'^') && chars.get(i + 2) == Some(&']') {
                    out.push_str("(?s:.)");
                    i += 2;
                } else if chars.get(i + 1) == Some(&']') {
                    out.push_str("(?!)");
                    i += 1;
                } else {
                    out.push('[');
                    in_class = true;
                    if chars.get(i + 1) == Some(&'^') {
                        out.push('^');
                        i += 1;
                    }
                }
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// An escaped character as a literal: ASCII punctuation keeps its
/// backslash (Rust's syntax allows escaping any of it but `<` and `>`),
/// anything else becomes `\x{…}` or itself.
fn push_literal(out: &mut String, c: char) {
    if c.is_ascii_punctuation() && c != '<' && c != '>' {
        out.push('\\');
        out.push(c);
    } else if c.is_ascii_control() {
        let _ = write!(out, "\\x{{{:x}}}", c as u32);
    } else {
        out.push(c);
    }
}

fn hex(chars: &[char], from: usize, len: usize) -> Option<u32> {
    let digits: String = chars.get(from..from + len)?.iter().collect();
    if digits.chars().all(|c| c.is_ascii_hexdigit()) {
        u32::from_str_radix(&digits, 16).ok()
    } else {
        None
    }
}

fn code_point(out: &mut String, cp: u32) {
    let _ = write!(out, "\\x{{{cp:x}}}");
}

/// Rewrites the escape starting at `chars[i] == '\\'`; returns the index
/// of its last character.
fn escape(chars: &[char], i: usize, in_class: bool, out: &mut String) -> usize {
    let Some(&e) = chars.get(i + 1) else {
        out.push('\\');
        return i;
    };
    let set = |out: &mut String, items: &str, negated: bool| {
        out.push('[');
        if negated {
            out.push('^');
        }
        out.push_str(items);
        out.push(']');
    };
    match e {
        'd' | 'D' => set(out, DIGIT, e == 'D'),
        'w' | 'W' => set(out, WORD, e == 'W'),
        's' | 'S' => set(out, SPACE, e == 'S'),
        'b' if in_class => out.push_str("\\x{8}"),
        'b' => out.push_str("(?-u:\\b)"),
        'B' => out.push_str("(?-u:\\B)"),
        '/' => out.push('/'),
        '0' => out.push_str("\\x{0}"),
        'c' => {
            if let Some(letter) = chars.get(i + 2).filter(|c| c.is_ascii_alphabetic()) {
                code_point(out, u32::from(*letter) % 32);
                return i + 2;
            }
            out.push_str("\\\\c");
        }
        'x' => {
            if let Some(cp) = hex(chars, i + 2, 2) {
                code_point(out, cp);
                return i + 3;
            }
            out.push('x');
        }
        'u' => {
            if chars.get(i + 2) == Some(&'{') {
                if let Some(end) = chars[i + 3..].iter().position(|c| *c == '}') {
                    if let Some(cp) = hex(chars, i + 3, end) {
                        code_point(out, cp);
                        return i + 3 + end;
                    }
                }
            } else if let Some(high) = hex(chars, i + 2, 4) {
                if (0xd800..0xdc00).contains(&high)
                    && chars.get(i + 6) == Some(&'\\')
                    && chars.get(i + 7) == Some(&'u')
                {
                    if let Some(low) = hex(chars, i + 8, 4).filter(|l| (0xdc00..0xe000).contains(l))
                    {
                        code_point(out, 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00));
                        return i + 11;
                    }
                }
                code_point(out, high);
                return i + 5;
            }
            out.push('u');
        }
        'p' | 'P' | 'k' | 't' | 'n' | 'r' | 'f' | 'v' | '1'..='9' => {
            if e == 'v' {
                out.push_str("\\x{b}");
            } else {
                out.push('\\');
                out.push(e);
            }
        }
        _ => push_literal(out, e),
    }
    i + 1
}

#[cfg(test)]
mod tests {
    use super::to_fancy;

    #[test]
    fn ascii_classes_and_dot_follow_ecmascript() {
        assert_eq!(to_fancy("^\\d+$"), "^[0-9]+$");
        assert_eq!(to_fancy("[\\w-]"), "[[0-9A-Za-z_]\\-]");
        assert_eq!(to_fancy("a.b"), "a[^\\n\\r\\x{2028}\\x{2029}]b");
        assert_eq!(to_fancy("\\bx"), "(?-u:\\b)x");
    }

    #[test]
    fn escapes_become_code_points() {
        assert_eq!(to_fancy("\\u20E3"), "\\x{20e3}");
        assert_eq!(to_fancy("\\uD83D\\uDE00"), "\\x{1f600}");
        assert_eq!(to_fancy("\\u{1F600}"), "\\x{1f600}");
        assert_eq!(to_fancy("\\x41\\cJ\\/"), "\\x{41}\\x{a}/");
    }

    #[test]
    fn class_set_syntax_is_literal() {
        assert_eq!(to_fancy("[a[&&~^]"), "[a\\[\\&\\&\\~\\^]");
        assert_eq!(to_fancy("[^]"), "(?s:.)");
        assert_eq!(to_fancy("[]"), "(?!)");
    }
}
