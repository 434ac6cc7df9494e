//! The check's output in its three formats (docs/drift.md, "Output"):
//! `text` (control characters escaped), `github` (workflow commands,
//! escaped as GitHub Actions decodes them) and `json`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{json, Value};
use surface_runtime::contract::to_sorted_pretty;

use crate::diff::{Change, Class};

/// The most changes the `text` and `github` formats print; the summary
/// counts every change and says how many were left out.
pub const MAX_PRINTED_CHANGES: usize = 200;

/// The changes with their acknowledgement.
pub struct Report<'a> {
    /// Every change, in diff order.
    pub changes: &'a [Change],
    /// The keys `--acknowledge` named.
    pub acknowledged: &'a BTreeSet<String>,
    /// The contract file annotations point at (`file=`).
    pub file: &'a str,
}

impl Report<'_> {
    fn is_acknowledged(&self, change: &Change) -> bool {
        self.acknowledged.contains(&change.key)
    }

    /// Widening changes no `--acknowledge` names.
    pub fn unacknowledged(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.class == Class::Widening && !self.is_acknowledged(c))
            .count()
    }

    fn count(&self, class: Class) -> usize {
        self.changes.iter().filter(|c| c.class == class).count()
    }

    /// `N changes: W widening (U unacknowledged), N narrowing, X neutral`.
    fn summary(&self) -> String {
        if self.changes.is_empty() {
            return "no changes".to_string();
        }
        let mut text = format!(
            "{} change(s): {} widening ({} unacknowledged), {} narrowing, {} neutral",
            self.changes.len(),
            self.count(Class::Widening),
            self.unacknowledged(),
            self.count(Class::Narrowing),
            self.count(Class::Neutral)
        );
        if self.changes.len() > MAX_PRINTED_CHANGES {
            let left = self.changes.len() - MAX_PRINTED_CHANGES;
            let _ = write!(text, "; {left} not printed (limit {MAX_PRINTED_CHANGES})");
        }
        text
    }

    fn label(&self, change: &Change) -> String {
        if change.class == Class::Widening && self.is_acknowledged(change) {
            "widening, acknowledged".to_string()
        } else {
            change.class.as_str().to_string()
        }
    }

    /// One line per change, `[class] key: reason`, then the summary.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for change in self.changes.iter().take(MAX_PRINTED_CHANGES) {
            let _ = writeln!(
                out,
                "[{}] {}: {}",
                self.label(change),
                escape_text(&change.key),
                escape_text(&change.reason)
            );
        }
        let _ = writeln!(out, "agent-surface check: {}", self.summary());
        out
    }

    /// One workflow command per change (`::error` for unacknowledged
    /// widening, `::notice` otherwise), then a summary notice.
    pub fn github(&self) -> String {
        let mut out = String::new();
        let file = escape_property(self.file);
        for change in self.changes.iter().take(MAX_PRINTED_CHANGES) {
            let error = change.class == Class::Widening && !self.is_acknowledged(change);
            let command = if error { "error" } else { "notice" };
            let title = escape_property(&format!("{}: {}", self.label(change), change.key));
            let mut message = change.reason.clone();
            if error {
                let _ = write!(
                    message,
                    "\nReview it, then acknowledge with --acknowledge {}",
                    change.key
                );
            }
            let _ = writeln!(
                out,
                "::{command} file={file},title={title}::{}",
                escape_data(&message)
            );
        }
        let summary = escape_data(&self.summary());
        let _ = writeln!(out, "::notice title=agent-surface check::{summary}");
        out
    }

    /// `{"changes": [{"acknowledged", "class", "key", "reason"}…],
    /// "summary": {…}}`, every change included.
    pub fn json(&self) -> String {
        let changes: Vec<Value> = self
            .changes
            .iter()
            .map(|c| {
                json!({
                    "key": c.key,
                    "class": c.class.as_str(),
                    "reason": c.reason,
                    "acknowledged": c.class == Class::Widening && self.is_acknowledged(c),
                })
            })
            .collect();
        let summary = json!({
            "changes": self.changes.len(),
            "widening": self.count(Class::Widening),
            "unacknowledged": self.unacknowledged(),
            "narrowing": self.count(Class::Narrowing),
            "neutral": self.count(Class::Neutral),
        });
        to_sorted_pretty(&json!({"changes": changes, "summary": summary}))
    }
}

/// Control characters as `\u{…}` escapes; a backslash doubled so an
/// escape cannot be forged.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A workflow command's message: `%`, CR and LF percent-encoded as
/// GitHub Actions decodes them, other control characters as `\u{…}`.
pub fn escape_data(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A workflow command's property value: [`escape_data`], and `:` and `,`.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}
