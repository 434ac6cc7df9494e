//! JSON Pointer (RFC 6901): the one place tokens are escaped (`~` → `~0`,
//! `/` → `~1`) and unescaped.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

/// A JSON Pointer in its escaped text form: `""` (the whole document) or
/// `/token/token…`, each token escaped.
///
/// ```
/// use surface_manifest::schema::Pointer;
///
/// let mut p = Pointer::root();
/// p.push("$defs");
/// p.push("a/b~c");
/// p.push_index(2);
/// assert_eq!(p.as_str(), "/$defs/a~1b~0c/2");
/// assert_eq!(p.tokens().collect::<Vec<_>>(), ["$defs", "a/b~c", "2"]);
/// assert_eq!(p.last().as_deref(), Some("2"));
/// p.pop();
/// assert_eq!(p.to_string(), "/$defs/a~1b~0c");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pointer(String);

/// Why a text is not a JSON Pointer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PointerError {
    /// Not empty and not starting with `/`.
    #[error("a JSON Pointer is empty or starts with `/`")]
    NoLeadingSlash,
    /// A `~` not followed by `0` or `1`.
    #[error("`~` must be followed by `0` or `1` in a JSON Pointer")]
    BadEscape,
}

impl Pointer {
    /// The empty pointer: the whole document.
    #[must_use]
    pub const fn root() -> Self {
        Pointer(String::new())
    }

    /// Parses the escaped text of a pointer (`""` or `/a/b`), checking its
    /// escapes.
    ///
    /// # Errors
    /// [`PointerError`] when the text is not a JSON Pointer.
    pub fn parse(text: &str) -> Result<Self, PointerError> {
        if !text.is_empty() && !text.starts_with('/') {
            return Err(PointerError::NoLeadingSlash);
        }
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Err(PointerError::BadEscape);
            }
        }
        Ok(Pointer(text.to_string()))
    }

    /// The pointer of these (unescaped) tokens.
    pub fn from_tokens<I, T>(tokens: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: AsRef<str>,
    {
        let mut p = Pointer::root();
        for t in tokens {
            p.push(t.as_ref());
        }
        p
    }

    /// Appends one (unescaped) token.
    pub fn push(&mut self, token: &str) {
        push_token(&mut self.0, token);
    }

    /// Appends an array index.
    pub fn push_index(&mut self, index: usize) {
        use fmt::Write;
        let _ = write!(self.0, "/{index}");
    }

    /// This pointer with one more token.
    #[must_use]
    pub fn child(&self, token: &str) -> Self {
        let mut p = self.clone();
        p.push(token);
        p
    }

    /// This pointer with one more array index.
    #[must_use]
    pub fn child_index(&self, index: usize) -> Self {
        let mut p = self.clone();
        p.push_index(index);
        p
    }

    /// Removes the last token; false at the root.
    pub fn pop(&mut self) -> bool {
        match self.0.rfind('/') {
            Some(at) => {
                self.0.truncate(at);
                true
            }
            None => false,
        }
    }

    /// Whether this is the root pointer `""`.
    #[must_use]
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The escaped text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The escaped text, owned.
    #[must_use]
    pub fn into_string(self) -> String {
        self.0
    }

    /// The unescaped tokens, first to last.
    pub fn tokens(&self) -> impl Iterator<Item = Cow<'_, str>> {
        self.0.split('/').skip(1).map(unescape_token)
    }

    /// The last unescaped token, `None` at the root.
    #[must_use]
    pub fn last(&self) -> Option<Cow<'_, str>> {
        self.0
            .rfind('/')
            .map(|at| unescape_token(&self.0[at + 1..]))
    }

    /// The value this pointer names in `document` (RFC 6901: an array
    /// token is a decimal index without leading zeros).
    #[must_use]
    pub fn resolve<'v>(&self, document: &'v Value) -> Option<&'v Value> {
        self.tokens()
            .try_fold(document, |node, token| step(node, &token))
    }
}

/// One step of a pointer into `node`.
pub(crate) fn step<'v>(node: &'v Value, token: &str) -> Option<&'v Value> {
    match node {
        Value::Object(m) => m.get(token),
        Value::Array(a) => {
            let canonical = token == "0" || (!token.starts_with('0') && !token.starts_with('+'));
            if !canonical {
                return None;
            }
            a.get(token.parse::<usize>().ok()?)
        }
        _ => None,
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Pointer {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<Pointer> for String {
    fn from(p: Pointer) -> String {
        p.0
    }
}

/// Appends `/` and the escaped `token` to a pointer kept as text.
///
/// ```
/// let mut path = String::from("/properties");
/// surface_manifest::schema::push_token(&mut path, "a/b");
/// assert_eq!(path, "/properties/a~1b");
/// ```
pub fn push_token(path: &mut String, token: &str) {
    path.push('/');
    path.push_str(&escape_token(token));
}

/// `ptr` + `/` + the escaped `token`, as a new text.
#[must_use]
pub fn child_pointer(ptr: &str, token: &str) -> String {
    let mut out = String::with_capacity(ptr.len() + token.len() + 1);
    out.push_str(ptr);
    push_token(&mut out, token);
    out
}

/// A token escaped for a pointer: `~` → `~0`, `/` → `~1`.
#[must_use]
pub fn escape_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// A pointer token unescaped: `~1` → `/`, then `~0` → `~`.
#[must_use]
pub fn unescape_token(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_round_trip() {
        for token in ["", "a", "~", "/", "~1", "~0/", "a/b~c"] {
            let p = Pointer::from_tokens([token]);
            assert_eq!(p.tokens().collect::<Vec<_>>(), [token], "{token:?}");
        }
        assert_eq!(escape_token("~1"), "~01");
        assert_eq!(unescape_token("~01"), "~1");
    }

    #[test]
    fn parse_checks_the_text() {
        assert_eq!(Pointer::parse("").unwrap(), Pointer::root());
        assert_eq!(
            Pointer::parse("/a~1b")
                .unwrap()
                .tokens()
                .collect::<Vec<_>>(),
            ["a/b"]
        );
        assert_eq!(Pointer::parse("a"), Err(PointerError::NoLeadingSlash));
        assert_eq!(Pointer::parse("/a~2"), Err(PointerError::BadEscape));
        assert_eq!(Pointer::parse("/a~"), Err(PointerError::BadEscape));
    }

    #[test]
    fn resolve_follows_objects_and_canonical_indexes() {
        let doc = json!({"a": [{"b/c": 1}, 2], "": 3});
        assert_eq!(
            Pointer::parse("/a/0/b~1c").unwrap().resolve(&doc),
            Some(&json!(1))
        );
        assert_eq!(
            Pointer::parse("/a/1").unwrap().resolve(&doc),
            Some(&json!(2))
        );
        assert_eq!(Pointer::parse("/a/01").unwrap().resolve(&doc), None);
        assert_eq!(Pointer::parse("/a/+1").unwrap().resolve(&doc), None);
        assert_eq!(Pointer::parse("/a/2").unwrap().resolve(&doc), None);
        assert_eq!(Pointer::parse("/").unwrap().resolve(&doc), Some(&json!(3)));
        assert_eq!(Pointer::root().resolve(&doc), Some(&doc));
    }

    #[test]
    fn pop_and_last() {
        let mut p = Pointer::parse("/a/b~1c").unwrap();
        assert_eq!(p.last().as_deref(), Some("b/c"));
        assert!(p.pop());
        assert_eq!(p.as_str(), "/a");
        assert!(p.pop());
        assert!(!p.pop());
        assert_eq!(p.last(), None);
    }
}
