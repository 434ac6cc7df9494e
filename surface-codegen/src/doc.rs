//! Doc comments of generated code, and the one way manifest text gets into
//! them.
//!
//! rustdoc reads doc comments as markdown. A code block in them (fenced with
//! ```` ``` ```` or `~~~`, or indented by four spaces, also inside a list
//! item or a block quote) is a doctest that `cargo test --doc` compiles and
//! runs in the user's crate; raw HTML is copied into the rendered page; a
//! `[x]: url` line defines a link. Text taken from the manifest —
//! descriptions, property names, enum and `const` values, paths, capability
//! ids, formats, defaults, `$ref`s, and the notes that quote them — comes
//! from whoever wrote the manifest, so it reaches a `#[doc]` attribute only
//! through [`manifest_text`]. That function renders it as one line in which
//! every character stands for itself. Everything else in a generated doc
//! comment is `&'static str` text written in this crate ([`DocText::ours`]).
//!
//! [`doc_attrs`] is the only place the expansion emits a computed
//! `#[doc = "…"]`; both [`crate::types`] and [`crate::manifest_macro`] build
//! their comments as [`DocText`] paragraphs.

use std::fmt;

use proc_macro2::TokenStream;
use quote::quote;

/// How [`manifest_text`] renders a piece of manifest text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Style {
    /// Prose: markdown-active characters are backslash-escaped, so the text
    /// renders as written (a description).
    Text,
    /// Inline code (a property name, a path, a JSON value): a code span
    /// when the text allows one that nothing can break out of, else
    /// escaped prose as for [`Style::Text`].
    Code,
}

/// Renders untrusted `text` as inert markdown on a single line: the only
/// function through which manifest text reaches generated documentation.
///
/// Whatever `text` holds, the result opens no code block, HTML tag or
/// comment, autolink, link, image, link or footnote definition, heading,
/// list, block quote, table, emphasis or strikethrough, and it holds no
/// line break, so it cannot end a paragraph or start a block either:
///
/// * whitespace runs (line breaks, tabs, leading indentation) become one
///   space, leading and trailing whitespace is dropped;
/// * control characters and the bidirectional-override characters become
///   their `\u{…}` escape, so they are visible;
/// * [`Style::Code`] wraps the text in single backticks when it holds no
///   backtick and no `<` (inside a code span nothing else is markdown, and
///   without `<` no HTML tag or autolink, which take precedence over code
///   spans, can start in it); empty code renders as `""`;
/// * otherwise (prose, or code that cannot be a code span) the characters
///   that open inline constructs anywhere — `` \ ` * _ ~ [ ] < & `` — are
///   backslash-escaped, and so are the block markers `- + = # >` and the
///   `.` or `)` after leading digits (`1.`) at the start of the text; an
///   escaped ASCII punctuation character is literal in CommonMark. The
///   other block constructs (setext headings, tables) need two lines, and
///   the result is one line.
///
/// What remains is rustdoc's smart punctuation (`--` renders as an en
/// dash, quotes are curled), which changes glyphs, not structure.
///
/// The result is meant to sit inside a line of generated markdown, after a
/// leading space, next to text of this crate that does not itself leave
/// an inline construct open.
pub fn manifest_text(text: &str, style: Style) -> String {
    let line = one_visible_line(text);
    if style == Style::Code {
        if line.is_empty() {
            return "\"\"".to_string();
        }
        if !line.contains(['`', '<']) {
            return format!("`{line}`");
        }
    }
    let mut out = String::with_capacity(line.len() + line.len() / 4);
    let mut leading_digits = true;
    for (i, c) in line.chars().enumerate() {
        let escape = match c {
            '\\' | '`' | '*' | '_' | '~' | '[' | ']' | '<' | '&' => true,
            // Block markers, only at the start of a line.
            '-' | '+' | '=' | '#' | '>' => i == 0,
            // `1.` and `1)` start an ordered list.
            '.' | ')' => leading_digits && i > 0,
            _ => false,
        };
        leading_digits &= c.is_ascii_digit();
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` with every whitespace run as one space, no leading or trailing
/// whitespace, and control and bidirectional-override characters as their
/// `\u{…}` escapes.
fn one_visible_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars() {
            if c.is_control() || is_bidi_control(c) {
                out.extend(c.escape_unicode());
            } else {
                out.push(c);
            }
        }
    }
    out
}

/// The characters that reorder how text around them is displayed
/// ("Trojan Source", CVE-2021-42574).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// One piece of a [`DocText`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Piece {
    /// Markdown written in this crate.
    Ours(&'static str),
    /// A number this crate formats.
    Number(u64),
    /// Manifest text, rendered by [`manifest_text`].
    Manifest(String, Style),
}

/// One paragraph of generated documentation: markdown of this crate
/// interleaved with manifest text, which [`DocText::markdown`] renders
/// through [`manifest_text`].
///
/// Built with chained calls:
/// `DocText::new().ours("Format: ").code(format).ours(" (not checked).")`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DocText {
    pieces: Vec<Piece>,
}

impl DocText {
    /// An empty paragraph.
    pub fn new() -> DocText {
        DocText::default()
    }

    /// Appends markdown written in this crate (never manifest text: it must
    /// be a literal, hence `&'static str`).
    pub fn ours(mut self, markdown: &'static str) -> DocText {
        self.pieces.push(Piece::Ours(markdown));
        self
    }

    /// Appends a number.
    pub fn number(mut self, n: impl TryInto<u64>) -> DocText {
        self.pieces
            .push(Piece::Number(n.try_into().unwrap_or(u64::MAX)));
        self
    }

    /// A tool or property description as one paragraph of manifest text,
    /// `(no description)` when blank.
    pub fn description(description: &str) -> DocText {
        if description.trim().is_empty() {
            DocText::from("(no description)")
        } else {
            DocText::new().text(description)
        }
    }

    /// Appends manifest text as prose ([`Style::Text`]).
    pub fn text(mut self, manifest: impl Into<String>) -> DocText {
        self.pieces
            .push(Piece::Manifest(manifest.into(), Style::Text));
        self
    }

    /// Appends manifest text as inline code ([`Style::Code`]).
    pub fn code(mut self, manifest: impl Into<String>) -> DocText {
        self.pieces
            .push(Piece::Manifest(manifest.into(), Style::Code));
        self
    }

    /// Appends the pieces of `other`.
    pub fn append(mut self, other: DocText) -> DocText {
        self.pieces.extend(other.pieces);
        self
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The paragraph as one line of markdown, manifest text rendered by
    /// [`manifest_text`].
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Ours(text) => out.push_str(text),
                Piece::Number(n) => out.push_str(&n.to_string()),
                Piece::Manifest(text, style) => out.push_str(&manifest_text(text, *style)),
            }
        }
        out
    }
}

impl From<&'static str> for DocText {
    fn from(markdown: &'static str) -> DocText {
        DocText::new().ours(markdown)
    }
}

/// Plain text for people (compiler notes, tests): manifest text as it is,
/// code pieces in backticks. Not markdown-safe; documentation uses
/// [`DocText::markdown`].
impl fmt::Display for DocText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in &self.pieces {
            match piece {
                Piece::Ours(text) => f.write_str(text)?,
                Piece::Number(n) => write!(f, "{n}")?,
                Piece::Manifest(text, Style::Text) => f.write_str(text)?,
                Piece::Manifest(text, Style::Code) => write!(f, "`{text}`")?,
            }
        }
        Ok(())
    }
}

/// Paragraphs of a manifest description: split at blank lines, each one
/// [`Style::Text`] paragraph.
pub fn description_paragraphs(description: &str) -> Vec<DocText> {
    let mut paragraphs = Vec::new();
    let mut current = String::new();
    for line in description.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                paragraphs.push(DocText::new().text(std::mem::take(&mut current)));
            }
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    if !current.trim().is_empty() {
        paragraphs.push(DocText::new().text(current));
    }
    paragraphs
}

/// `#[doc = "…"]` attributes for `paragraphs`: one line each, with a leading
/// space (as `///` writes it) and an empty line between paragraphs.
pub fn doc_attrs(paragraphs: &[DocText]) -> TokenStream {
    let mut out = TokenStream::new();
    for (i, paragraph) in paragraphs.iter().enumerate() {
        if i > 0 {
            out.extend(quote!(#[doc = ""]));
        }
        let line = format!(" {}", paragraph.markdown());
        out.extend(quote!(#[doc = #line]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_text_cannot_open_code_block_in_docs_fences_become_one_escaped_line() {
        assert_eq!(
            manifest_text("x\n```\nfn main(){}\n```\n", Style::Text),
            r"x \`\`\` fn main(){} \`\`\`"
        );
        assert_eq!(
            manifest_text("  ~~~rust\n\tboom()\n~~~", Style::Text),
            r"\~\~\~rust boom() \~\~\~"
        );
        assert_eq!(
            manifest_text("\n\n    indented();", Style::Text),
            "indented();"
        );
        // In code style a backtick forbids the code span: escaped prose.
        assert_eq!(manifest_text("a`\n```\nx", Style::Code), r"a\` \`\`\` x");
    }

    #[test]
    fn manifest_text_cannot_open_code_block_in_docs_html_links_and_blocks_are_escaped() {
        assert_eq!(
            manifest_text("<script>alert(1)</script>", Style::Text),
            r"\<script>alert(1)\</script>"
        );
        assert_eq!(
            manifest_text("[x]: https://evil.example", Style::Text),
            r"\[x\]: https://evil.example"
        );
        // Block markers matter only at the start of the (single) line.
        for (marker, escaped) in [
            ("# H", r"\# H"),
            ("> q", r"\> q"),
            ("- a", r"\- a"),
            ("+ b", r"\+ b"),
            ("---", r"\---"),
            ("===", r"\==="),
            ("1. c", r"1\. c"),
            ("22) d 3.4", r"22\) d 3.4"),
            ("\n\n  - x - y", r"\- x - y"),
        ] {
            assert_eq!(manifest_text(marker, Style::Text), escaped);
        }
        assert_eq!(
            manifest_text("a # H > q - a + b 1. c | d |\n---|---", Style::Text),
            "a # H > q - a + b 1. c | d | ---|---"
        );
        assert_eq!(
            manifest_text("*em* _u_ ~~s~~ &lt; \\", Style::Text),
            r"\*em\* \_u\_ \~\~s\~\~ \&lt; \\"
        );
        assert_eq!(
            manifest_text("![i](x) [^1]", Style::Text),
            r"!\[i\](x) \[^1\]"
        );
    }

    #[test]
    fn manifest_text_cannot_open_code_block_in_docs_code_spans_only_when_unbreakable() {
        assert_eq!(manifest_text("deviceIds", Style::Code), "`deviceIds`");
        assert_eq!(manifest_text("a\n b", Style::Code), "`a b`");
        assert_eq!(manifest_text("*[x]: y*", Style::Code), "`*[x]: y*`");
        // `<` could start an HTML tag reaching past the span: escaped prose.
        assert_eq!(
            manifest_text("<img src=x onerror=\"", Style::Code),
            r#"\<img src=x onerror=""#
        );
        assert_eq!(manifest_text("", Style::Code), "\"\"");
        assert_eq!(manifest_text(" \n\t", Style::Code), "\"\"");
        assert_eq!(manifest_text("", Style::Text), "");
    }

    #[test]
    fn manifest_text_cannot_open_code_block_in_docs_controls_and_bidi_are_visible() {
        assert_eq!(
            manifest_text("a\u{202E}b\u{7}c\u{2066}", Style::Code),
            r"`a\u{202e}b\u{7}c\u{2066}`"
        );
        assert_eq!(manifest_text("a\u{202E}b", Style::Text), r"a\\u{202e}b");
        // Unicode line and paragraph separators are whitespace.
        assert_eq!(manifest_text("a\u{2028}b\u{85}c", Style::Text), "a b c");
    }

    #[test]
    fn doc_text_renders_manifest_pieces_through_manifest_text() {
        let doc = DocText::new()
            .ours("Format: ")
            .code("a`b")
            .ours(" at ")
            .number(3usize)
            .ours(": ")
            .text("<b>");
        assert_eq!(doc.markdown(), r"Format: a\`b at 3: \<b>");
        assert_eq!(doc.to_string(), "Format: `a`b` at 3: <b>");
        assert_eq!(
            doc_attrs(&[DocText::new().ours("A"), DocText::new().text("b\n\nc")]).to_string(),
            quote!(#[doc = " A"] #[doc = ""] #[doc = " b c"]).to_string()
        );
        let paragraphs = description_paragraphs("one\ntwo\n\n\n  three  \n");
        assert_eq!(
            paragraphs.iter().map(DocText::markdown).collect::<Vec<_>>(),
            ["one two", "three"]
        );
        assert!(description_paragraphs(" \n ").is_empty());
    }

    /// The options rustdoc parses doc comments with (`main_body_opts` in
    /// rustdoc's `html/markdown.rs`).
    fn rustdoc_options() -> pulldown_cmark::Options {
        use pulldown_cmark::Options;
        Options::ENABLE_TABLES
            | Options::ENABLE_FOOTNOTES
            | Options::ENABLE_STRIKETHROUGH
            | Options::ENABLE_TASKLISTS
            | Options::ENABLE_SMART_PUNCTUATION
    }

    /// Parses `markdown` and returns what it rendered as (text, code),
    /// failing on any event other than one paragraph of text and code.
    fn inert_events(
        markdown: &str,
        options: pulldown_cmark::Options,
    ) -> Result<(String, Vec<String>), String> {
        use pulldown_cmark::{Event, Parser, Tag, TagEnd};
        let mut text = String::new();
        let mut code = Vec::new();
        let mut paragraphs = 0;
        for event in Parser::new_ext(markdown, options) {
            match event {
                Event::Start(Tag::Paragraph) => paragraphs += 1,
                Event::End(TagEnd::Paragraph) => {}
                Event::Text(t) => text.push_str(&t),
                Event::Code(c) => code.push(c.to_string()),
                Event::SoftBreak => text.push('\n'),
                other => return Err(format!("{other:?} in {markdown:?}")),
            }
        }
        if paragraphs > 1 {
            return Err(format!("{paragraphs} paragraphs in {markdown:?}"));
        }
        Ok((text, code))
    }

    const ALPHABET: &[&str] = &[
        "a",
        "1",
        "22",
        " ",
        "    ",
        "\t",
        "\n",
        "\r\n",
        "\n\n",
        "```",
        "~~~",
        "`",
        "<",
        ">",
        "</",
        "<!--",
        "-->",
        "<script>",
        "[",
        "]",
        "]:",
        "(",
        ")",
        "!",
        "#",
        "*",
        "_",
        "-",
        "+",
        "=",
        "|",
        ".",
        "\\",
        "&",
        "&lt;",
        ";",
        "\"",
        "'",
        ":",
        "^",
        "{",
        "}",
        "http://x.y",
        "<a href=\"",
        "\">",
        "\u{202e}",
        "\u{0}",
        "é",
        "[x](y)",
        "[x]: /u",
        "[^1]",
        "[^1]: n",
        "- [ ] t",
        "![i](j)",
        "<http://a.b>",
        "~~s~~",
        "**b**",
    ];

    fn hostile() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        proptest::collection::vec(proptest::sample::select(ALPHABET), 0..24)
            .prop_map(|parts| parts.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2048, ..Default::default() })]

        #[test]
        fn manifest_text_cannot_open_code_block_in_docs_any_text_renders_as_itself(text in hostile()) {
            // Without smart punctuation, the rendered text is exactly the
            // one-line form of the input.
            let no_smart = rustdoc_options() - pulldown_cmark::Options::ENABLE_SMART_PUNCTUATION;
            let line = one_visible_line(&text);
            let prose = manifest_text(&text, Style::Text);
            proptest::prop_assert_eq!(inert_events(&prose, no_smart).map(|(t, _)| t), Ok(line.clone()));
            let code = manifest_text(&text, Style::Code);
            let (t, c) = inert_events(&code, no_smart).map_err(proptest::test_runner::TestCaseError::fail)?;
            if c.is_empty() {
                let expected = if line.is_empty() { "\"\"".to_string() } else { line.clone() };
                proptest::prop_assert_eq!(t, expected);
            } else {
                proptest::prop_assert_eq!(c, vec![line.clone()]);
            }
        }

        #[test]
        fn manifest_text_cannot_open_code_block_in_docs_pieces_combined_stay_inert(a in hostile(), b in hostile(), c in hostile()) {
            // Several pieces in one line, as generated docs combine them,
            // with rustdoc's exact options: still one paragraph of text and
            // code spans, one code span per code piece that got one.
            let doc = DocText::new().code(a.as_str()).ours(" (x): ").text(b.as_str()).ours(" at ").code(c.as_str()).ours(".");
            let line = format!(" {}", doc.markdown());
            let (_, spans) = inert_events(&line, rustdoc_options()).map_err(proptest::test_runner::TestCaseError::fail)?;
            let expected: Vec<String> = [&a, &c]
                .iter()
                .map(|t| one_visible_line(t))
                .filter(|t| !t.is_empty() && !t.contains(['`', '<']))
                .collect();
            proptest::prop_assert_eq!(spans, expected);
            // As a whole doc comment after a line of ours.
            let comment = format!(" The property:\n{line}\n\n{line}");
            let paragraphs = comment.split("\n\n").map(|p| inert_events(p, rustdoc_options()).map(|_| ()));
            for p in paragraphs {
                proptest::prop_assert_eq!(p, Ok(()));
            }
        }
    }
}
