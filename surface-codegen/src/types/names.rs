//! Rust names for schema things: field identifiers from property names,
//! type and variant names, each unique within its scope.

use std::collections::{HashMap, HashSet};

use heck::{ToSnakeCase, ToUpperCamelCase};
use proc_macro2::{Ident, Span};
use surface_manifest::{NON_RAW_KEYWORDS, RUST_KEYWORDS};

use crate::tokens::ident_from_source;

/// Keeps ASCII letters, digits and `_`; everything else becomes `_`.
fn ascii_word(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The snake_case identifier text for a property name (`deviceIds` →
/// `device_ids`, `type` → `r#type`, `self` → `self_`, `1st` → `field_1st`,
/// `ü` → `field`). Not yet unique.
pub(crate) fn field_ident_text(json_name: &str) -> String {
    let snake = ascii_word(&json_name.to_snake_case()).to_snake_case();
    let snake = snake.trim_matches('_').to_string();
    let base = if snake.is_empty() {
        "field".to_string()
    } else if snake.starts_with(|c: char| c.is_ascii_digit()) {
        format!("field_{snake}")
    } else {
        snake
    };
    if NON_RAW_KEYWORDS.contains(&base.as_str()) {
        format!("{base}_")
    } else {
        base
    }
}

/// A PascalCase name part for arbitrary text, ASCII only (`active` →
/// `Active`, `in-progress` → `InProgress`, `1` → `V1`, `` → `Empty`). Type
/// names always carry an `Input`/`Output` prefix; a standalone enum variant
/// name goes through [`variant`].
pub(crate) fn pascal(text: &str) -> String {
    let camel = ascii_word(&text.to_upper_camel_case()).to_upper_camel_case();
    let camel: String = camel
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    if camel.is_empty() {
        "Empty".to_string()
    } else if camel.starts_with(|c: char| c.is_ascii_digit()) {
        format!("V{camel}")
    } else {
        camel
    }
}

/// A standalone enum variant name: [`pascal`], with `Self` (a keyword that
/// cannot be raw) as `Self_`, and a sign before a leading digit spelled
/// out: `+1` → `Plus1`, `-1` → `Minus1`, `-0.5` → `Minus05` (so GitHub's
/// `"+1"`/`"-1"` reactions are distinct names instead of `V1`/`V12`).
pub(crate) fn variant(text: &str) -> String {
    for (sign, word) in [('+', "Plus"), ('-', "Minus")] {
        if let Some(rest) = text
            .strip_prefix(sign)
            .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        {
            // `pascal` of text starting with a digit is `V` + digits….
            let digits = pascal(rest);
            return format!("{word}{}", digits.strip_prefix('V').unwrap_or(&digits));
        }
    }
    match pascal(text) {
        name if name == "Self" => "Self_".to_string(),
        name => name,
    }
}

/// Builds an identifier from text produced by this module (raw when it is a
/// keyword).
pub(crate) fn ident(text: &str) -> Ident {
    ident_from_source(text, Span::call_site())
}

/// `device_ids` → `DeviceIds`: each `_` dropped and the ASCII letter after
/// it (and the first) upper-cased, as serde's `PascalCase` rule does.
pub(crate) fn snake_to_pascal(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A set of names in one scope (a module's types, a struct's fields, an
/// enum's variants) handing out unique names.
///
/// Linear in the number of names: for each suffix sequence (`stem_2`,
/// `stem_3`, … or `stem2`, `stem3`, …) it remembers the next suffix to try,
/// so `n` names that map to one base cost about `2n` probes, not `n²/2`.
/// The names are the same as a search restarting at suffix 2 would give,
/// because a name once taken stays taken.
#[derive(Clone, Debug, Default)]
pub(crate) struct NameSet {
    used: HashSet<String>,
    /// Next suffix to try, by `(stem, snake)`.
    next_suffix: HashMap<(String, bool), u64>,
    /// Candidate names looked up so far (the allocator's work).
    #[cfg(test)]
    pub(crate) probes: u64,
}

impl NameSet {
    /// Marks `name` as taken. Returns false when it already was.
    pub(crate) fn reserve(&mut self, name: &str) -> bool {
        #[cfg(test)]
        {
            self.probes += 1;
        }
        if self.used.contains(name) {
            return false;
        }
        self.used.insert(name.to_string())
    }

    /// `base`, or `base2`, `base3`, … (for snake_case `base_2`, …) — the
    /// first one not yet taken, now taken.
    pub(crate) fn unique(&mut self, base: &str, snake: bool) -> String {
        if self.reserve(base) {
            return base.to_string();
        }
        // `self_` → `self_2`, `Self_` → `Self2`: no `__`, no `_2` in
        // PascalCase (both would trip rustc's style lints).
        let stem = base.trim_end_matches('_');
        let key = (stem.to_string(), snake);
        let mut n = self.next_suffix.get(&key).copied().unwrap_or(2);
        loop {
            let candidate = if snake {
                format!("{stem}_{n}")
            } else {
                format!("{stem}{n}")
            };
            n += 1;
            if self.reserve(&candidate) {
                self.next_suffix.insert(key, n);
                return candidate;
            }
        }
    }

    /// A unique field identifier text for `json_name`, raw (`r#type`) when
    /// it is a keyword. Uniqueness is checked on the unraw text.
    pub(crate) fn field(&mut self, json_name: &str) -> String {
        let text = self.unique(&field_ident_text(json_name), true);
        if RUST_KEYWORDS.contains(&text.as_str()) {
            format!("r#{text}")
        } else {
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_become_snake_case_idents() {
        assert_eq!(field_ident_text("deviceIds"), "device_ids");
        assert_eq!(field_ident_text("already_snake"), "already_snake");
        assert_eq!(field_ident_text("self"), "self_");
        assert_eq!(field_ident_text("Self"), "self_");
        assert_eq!(field_ident_text("1st"), "field_1st");
        assert_eq!(field_ident_text("ü"), "field");
        assert_eq!(field_ident_text(""), "field");
        assert_eq!(field_ident_text("$ref"), "ref");
        assert_eq!(field_ident_text("x-y z"), "x_y_z");
        assert_eq!(field_ident_text("_"), "field");
    }

    #[test]
    fn keywords_become_raw_and_collisions_get_suffixes() {
        let mut set = NameSet::default();
        assert_eq!(set.field("type"), "r#type");
        assert_eq!(set.field("aB"), "a_b");
        assert_eq!(set.field("a_b"), "a_b_2");
        assert_eq!(set.field("$ref"), "r#ref");
        assert_eq!(set.field("ref"), "ref_2");
        assert_eq!(ident("r#type").to_string(), "r#type");
    }

    #[test]
    fn quadratic_name_allocation_is_linear_in_colliding_names() {
        let n = 4096u64;
        let mut fields = NameSet::default();
        let names: Vec<String> = (0..n)
            .map(|i| fields.field(&"_".repeat(i as usize + 1)))
            .collect();
        assert_eq!(names[0], "field");
        assert_eq!(names[1], "field_2");
        assert_eq!(names[4095], "field_4096");
        assert!(
            fields.probes <= 2 * n,
            "{} probes for {n} names",
            fields.probes
        );
        let mut variants = NameSet::default();
        for i in 0..n {
            let name = variants.unique(&variant(&"-".repeat(i as usize + 1)), false);
            assert_eq!(
                name,
                if i == 0 {
                    "Empty".to_string()
                } else {
                    format!("Empty{}", i + 1)
                }
            );
        }
        assert!(variants.probes <= 2 * n, "{} probes", variants.probes);
    }

    #[test]
    fn name_allocation_resumes_past_names_taken_by_others() {
        let mut set = NameSet::default();
        assert!(set.reserve("a_2"));
        assert!(set.reserve("a_4"));
        assert_eq!(set.unique("a", true), "a");
        assert_eq!(set.unique("a", true), "a_3");
        assert_eq!(set.unique("a_", true), "a_");
        assert_eq!(set.unique("a_", true), "a_5");
        assert_eq!(set.unique("a", true), "a_6");
        // The PascalCase sequence of the same stem is separate.
        assert_eq!(set.unique("a", false), "a2");
        // `a1` + `2` is `a12`, also on `a`'s sequence: skipped when reached.
        assert_eq!(set.unique("a1", false), "a1");
        assert_eq!(set.unique("a1", false), "a12");
        for _ in 3..12 {
            set.unique("a", false);
        }
        assert_eq!(set.unique("a", false), "a13");
    }

    #[test]
    fn pascal_names_are_ascii_idents() {
        assert_eq!(pascal("active"), "Active");
        assert_eq!(pascal("in-progress"), "InProgress");
        assert_eq!(pascal("1"), "V1");
        assert_eq!(pascal(""), "Empty");
        assert_eq!(pascal("__schema0"), "Schema0");
        assert_eq!(pascal("Self"), "Self");
        assert_eq!(variant("Self"), "Self_");
        assert_eq!(variant("self"), "Self_");
        assert_eq!(variant("+1"), "Plus1");
        assert_eq!(variant("-1"), "Minus1");
        assert_eq!(variant("-0.5"), "Minus05");
        assert_eq!(variant("+"), "Empty");
        assert_eq!(variant("-x"), "X");
        assert_eq!(variant("1"), "V1");
        assert_eq!(variant("a-1"), "A1");
        assert_eq!(pascal("größe"), "GrE");
        let mut set = NameSet::default();
        assert_eq!(set.unique("Input", false), "Input");
        assert_eq!(set.unique("Input", false), "Input2");
        assert_eq!(set.unique("Self_", false), "Self_");
        assert_eq!(set.unique("Self_", false), "Self2");
        let mut fields = NameSet::default();
        assert_eq!(fields.field("self"), "self_");
        assert_eq!(fields.field("Self"), "self_2");
    }
}
