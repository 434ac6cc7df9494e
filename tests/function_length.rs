//! No library function over 80 lines (docs/design.md, "Layers"): in every
//! library crate, each `fn` — free, associated or nested, with a body —
//! spans at most [`MAX_LINES`] lines from its `fn` line to its closing
//! brace. A longer function does several things; split it where a name
//! fits.
//!
//! The check reads the sources as text: comments, string and character
//! literals are blanked (their line breaks kept) so braces inside them do
//! not count; code generated inside `quote!` counts as the function's own
//! lines. Test modules (`tests.rs`, everything after `#[cfg(test)]`) are
//! skipped.

use std::fs;
use std::path::PathBuf;

/// The most lines one library function may span.
const MAX_LINES: usize = 80;

#[path = "support/sources.rs"]
mod sources;

use sources::{rust_files, LIBRARY_CRATES};

/// Pushes `skipped` as blanks, keeping its line breaks.
fn blank(out: &mut String, skipped: &str) {
    out.extend(skipped.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
}

/// The end (exclusive) of the literal or comment starting at `rest`, or
/// `None` when `rest` starts none.
fn skipped_len(rest: &str) -> Option<usize> {
    let bytes = rest.as_bytes();
    if rest.starts_with("//") {
        return Some(rest.find('\n').unwrap_or(rest.len()));
    }
    if rest.starts_with("/*") {
        return Some(rest.find("*/").map_or(rest.len(), |e| e + 2));
    }
    // Raw strings: r"…", r#"…"#, br##"…"##.
    let raw = rest.strip_prefix("br").or_else(|| rest.strip_prefix('r'));
    if let Some(after_r) = raw {
        let hashes = after_r.len() - after_r.trim_start_matches('#').len();
        if after_r[hashes..].starts_with('"') {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = &after_r[hashes + 1..];
            let prefix = rest.len() - body.len();
            return Some(
                body.find(&close)
                    .map_or(rest.len(), |e| prefix + e + close.len()),
            );
        }
    }
    if bytes[0] == b'"' {
        let mut j = 1;
        while j < bytes.len() && bytes[j] != b'"' {
            j += if bytes[j] == b'\\' { 2 } else { 1 };
        }
        return Some((j + 1).min(bytes.len()));
    }
    if bytes[0] == b'\'' {
        // A character literal ('x', '\n', '\u{7f}', '{'), not a lifetime.
        let close = if bytes.get(1) == Some(&b'\\') {
            rest[2..].find('\'').map(|e| e + 2)
        } else {
            rest[1..]
                .char_indices()
                .nth(1)
                .filter(|(_, c)| *c == '\'')
                .map(|(e, _)| e + 1)
        };
        return close.map(|e| e + 1);
    }
    None
}

/// The library part of a source file with comments and literals blanked.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        // An identifier character before `r`/`b` means `r` is not a prefix.
        let after_ident = out
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        match skipped_len(rest).filter(|_| !(after_ident && rest.starts_with(['r', 'b']))) {
            Some(len) => {
                blank(&mut out, &rest[..len]);
                i += len;
            }
            None => {
                let c = rest.chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// Whether `line` starts a function item (`fn name`, after visibility and
/// qualifiers), with its name.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        let before = rest;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        if rest == before {
            break;
        }
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    (end > 0).then(|| &name[..end])
}

/// `(name, first line, line count)` of every function with a body.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let mut depth = 0usize;
        let mut opened = false;
        'scan: for (k, l) in lines.iter().enumerate().skip(start) {
            for c in l.chars() {
                match c {
                    ';' if !opened => break 'scan, // a declaration without a body
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' if opened => {
                        depth -= 1;
                        if depth == 0 {
                            found.push((name.to_string(), start + 1, k - start + 1));
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    found
}

#[test]
fn no_library_function_is_over_80_lines() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    let mut counted = 0;
    for krate in LIBRARY_CRATES {
        for file in rust_files(&root.join(krate))
            .into_iter()
            .filter(|f| f.file_name().is_some_and(|n| n != "tests.rs"))
        {
            let text = fs::read_to_string(&file).unwrap();
            for (name, line, count) in functions(&code_of(&text)) {
                counted += 1;
                if count > MAX_LINES {
                    let rel = file.strip_prefix(&root).unwrap().display();
                    long.push(format!("{rel}:{line}: `{name}` has {count} lines"));
                }
            }
        }
    }
    // The walk found the library (not an empty tree).
    assert!(counted > 1000, "only {counted} functions found");
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_counter_sees_through_literals_and_comments_and_skips_declarations() {
    let code = code_of(concat!(
        "fn a() {\n",
        "    let s = \"}}\"; // }\n",
        "    let r = r#\"{\"#; let c = '}'; let l: &'static str = \"\";\n",
        "    /* { */\n",
        "}\n",
        "trait T { fn decl(&self); }\n",
        "pub(crate) async fn b() {\n",
        "    fn inner() {}\n",
        "}\n",
        "#[cfg(test)]\n",
        "fn skipped() {}\n",
    ));
    assert_eq!(
        functions(&code),
        [
            ("a".to_string(), 1, 5),
            ("b".to_string(), 7, 3),
            ("inner".to_string(), 8, 1),
        ]
    );
}
