//! Procedure paths and their Rust names.
//!
//! # Segment → identifier mapping
//!
//! Each dotted segment of a procedure path becomes one Rust module (and the
//! last one also a function) by [`segment_to_ident`]:
//!
//! 1. the segment must match `[A-Za-z_][A-Za-z0-9_-]*` and must not be one of
//!    the JavaScript prototype names `__proto__`, `prototype`, `constructor`;
//! 2. `-` becomes `_`, then the segment is converted to snake_case
//!    (`listAll` → `list_all`, `HTTPStatus` → `http_status`, `v2` → `v2`);
//! 3. a Rust keyword becomes a raw identifier (`type` → `r#type`,
//!    `match` → `r#match`);
//! 4. `self`, `super`, `crate` and `Self` cannot be raw identifiers and get a
//!    trailing underscore (`self` → `self_`);
//! 5. a segment whose mapping is empty or starts with a digit is unsafe.
//!
//! # Path rules
//!
//! [`validate_paths`]: no empty segment, every segment safe, no path that
//! is a prefix of another (`a.b` and `a.b.c`: one name cannot be both a
//! procedure and a namespace), and no two paths mapping to the same Rust
//! path (`devices.listAll` and `devices.list_all`,
//! [`ManifestIssue::IdentCollision`]).

use std::collections::BTreeMap;

use crate::error::{ManifestIssue, UnsafeSegment};

/// JavaScript prototype names that are never valid segments.
pub const PROTOTYPE_SEGMENTS: [&str; 3] = ["__proto__", "prototype", "constructor"];

/// Every Rust keyword of any edition (strict, reserved, 2018+ and 2024
/// `gen`): a path segment or schema property equal to one becomes a raw
/// identifier (`type` → `r#type`). Shared by the segment mapping and the
/// code generator's field names.
pub const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static",
    "struct", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized",
    "virtual", "yield", "try", "gen",
];

/// Keywords that cannot be raw identifiers: they get a trailing `_`
/// (`self` → `self_`).
pub const NON_RAW_KEYWORDS: &[&str] = &["self", "super", "crate", "Self"];

/// Maps one path segment to a Rust identifier, following the mapping in the
/// module docs. Returns the identifier as source text (`r#type`, `self_`,
/// `list_all`).
///
/// # Errors
/// [`UnsafeSegment`] saying why, when the segment is a prototype name, has
/// characters outside `[A-Za-z0-9_-]`, starts with a digit or `-`, or maps
/// to nothing.
pub fn segment_to_ident(segment: &str) -> Result<String, UnsafeSegment> {
    if PROTOTYPE_SEGMENTS.contains(&segment) {
        return Err(UnsafeSegment::PrototypeName);
    }
    match segment.chars().next() {
        None => return Err(UnsafeSegment::Empty),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        Some(_) => return Err(UnsafeSegment::BadStart),
    }
    if !segment
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(UnsafeSegment::BadCharacter);
    }
    let snake = heck::ToSnakeCase::to_snake_case(segment.replace('-', "_").as_str());
    match snake.chars().next() {
        None => return Err(UnsafeSegment::MapsToEmpty),
        Some(c) if c.is_ascii_digit() => return Err(UnsafeSegment::MapsToDigit),
        Some(_) => {}
    }
    if snake == "_" {
        return Err(UnsafeSegment::Underscore);
    }
    if NON_RAW_KEYWORDS.contains(&snake.as_str()) {
        return Ok(format!("{snake}_"));
    }
    if RUST_KEYWORDS.contains(&snake.as_str()) {
        return Ok(format!("r#{snake}"));
    }
    Ok(snake)
}

/// Maps a whole dotted path to its Rust module path (`devices::list_all`).
///
/// # Errors
/// [`ManifestIssue::EmptySegment`] or [`ManifestIssue::UnsafeSegment`].
pub fn path_to_rust(path: &str) -> Result<Vec<String>, ManifestIssue> {
    let mut out = Vec::new();
    for segment in path.split('.') {
        if segment.is_empty() {
            return Err(ManifestIssue::EmptySegment {
                path: path.to_string(),
            });
        }
        match segment_to_ident(segment) {
            Ok(ident) => out.push(ident),
            Err(reason) => {
                return Err(ManifestIssue::UnsafeSegment {
                    path: path.to_string(),
                    segment: segment.to_string(),
                    reason,
                })
            }
        }
    }
    Ok(out)
}

/// Validates a set of procedure paths against the path rules (module docs)
/// and returns every problem found (empty when valid): empty or unsafe
/// segments, prefix conflicts, and two paths mapping to the same Rust path.
/// Duplicates cannot be seen here (a map has unique keys); the JSON reader
/// reports them.
pub fn validate_paths<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<ManifestIssue> {
    let mut issues = Vec::new();
    let mut mapped: BTreeMap<Vec<String>, &'a str> = BTreeMap::new();
    for path in paths {
        match path_to_rust(path) {
            Ok(rust) => {
                if let Some(other) = mapped.get(&rust) {
                    issues.push(ManifestIssue::IdentCollision {
                        path: (*other).to_string(),
                        other: path.to_string(),
                        rust_path: rust.join("::"),
                    });
                } else {
                    mapped.insert(rust, path);
                }
            }
            Err(issue) => issues.push(issue),
        }
    }
    // Prefix conflicts, on the mapped Rust paths (so `a.b` vs `a.b.c` and
    // `a.B` vs `a.b.c` are both caught). `mapped` is sorted, so the paths a
    // path prefixes come right after it: comparing each path with its
    // successor alone finds every conflict, in linear time after the sort.
    let entries: Vec<(&Vec<String>, &&str)> = mapped.iter().collect();
    for pair in entries.windows(2) {
        let ((rust, path), (other_rust, other)) = (pair[0], pair[1]);
        if other_rust.len() > rust.len() && other_rust[..rust.len()] == rust[..] {
            issues.push(ManifestIssue::PrefixConflict {
                path: (*path).to_string(),
                other: (*other).to_string(),
            });
        }
    }
    issues
}

/// The paths of `candidates` nearest to `wanted` (Jaro–Winkler similarity on
/// the whole path, at least 0.7), best first, at most `limit`. Used by the
/// "unknown procedure path" diagnostics.
pub fn nearest_paths<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &'a str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(wanted, c), c))
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(limit).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_conflict_unsafe_and_collision() {
        let issues = validate_paths([
            "a.b",
            "a.b.c",
            "x.__proto__",
            "x..y",
            "d.listAll",
            "d.list_all",
            "e.9x",
        ]);
        assert_eq!(
            issues,
            vec![
                ManifestIssue::UnsafeSegment {
                    path: "x.__proto__".into(),
                    segment: "__proto__".into(),
                    reason: UnsafeSegment::PrototypeName,
                },
                ManifestIssue::EmptySegment {
                    path: "x..y".into()
                },
                ManifestIssue::IdentCollision {
                    path: "d.listAll".into(),
                    other: "d.list_all".into(),
                    rust_path: "d::list_all".into()
                },
                ManifestIssue::UnsafeSegment {
                    path: "e.9x".into(),
                    segment: "9x".into(),
                    reason: UnsafeSegment::BadStart,
                },
                ManifestIssue::PrefixConflict {
                    path: "a.b".into(),
                    other: "a.b.c".into()
                },
            ]
        );
        assert_eq!(
            issues[0].to_string(),
            "procedure path `x.__proto__` has an unsafe segment `__proto__`: `__proto__`, `prototype` and `constructor` are reserved JavaScript prototype names"
        );
        assert_eq!(
            issues[3].to_string(),
            "procedure path `e.9x` has an unsafe segment `9x`: a segment must start with an ASCII letter or `_`"
        );
    }

    #[test]
    fn prefix_conflict_not_confused_by_siblings() {
        assert!(validate_paths(["a.b", "a.bc", "a.b_c", "ab.c"]).is_empty());
        assert_eq!(
            validate_paths(["a", "a.b"]),
            vec![ManifestIssue::PrefixConflict {
                path: "a".into(),
                other: "a.b".into()
            }]
        );
        assert_eq!(
            validate_paths(["a.b", "a.b-x", "a.b.c"]),
            vec![ManifestIssue::PrefixConflict {
                path: "a.b".into(),
                other: "a.b.c".into()
            }]
        );
    }

    #[test]
    fn segment_mapping() {
        assert_eq!(segment_to_ident("listAll").unwrap(), "list_all");
        assert_eq!(segment_to_ident("HTTPStatus").unwrap(), "http_status");
        assert_eq!(segment_to_ident("get-by-id").unwrap(), "get_by_id");
        assert_eq!(segment_to_ident("type").unwrap(), "r#type");
        assert_eq!(segment_to_ident("match").unwrap(), "r#match");
        assert_eq!(segment_to_ident("self").unwrap(), "self_");
        assert_eq!(segment_to_ident("Self").unwrap(), "self_");
        assert_eq!(segment_to_ident("crate").unwrap(), "crate_");
        assert_eq!(segment_to_ident("v2").unwrap(), "v2");
        assert_eq!(
            segment_to_ident("prototype"),
            Err(UnsafeSegment::PrototypeName)
        );
        assert_eq!(segment_to_ident("a b"), Err(UnsafeSegment::BadCharacter));
        assert_eq!(segment_to_ident("_"), Err(UnsafeSegment::MapsToEmpty));
        assert_eq!(segment_to_ident("-a"), Err(UnsafeSegment::BadStart));
        assert_eq!(segment_to_ident(""), Err(UnsafeSegment::Empty));
    }

    #[test]
    fn nearest_paths_suggests() {
        let paths = [
            "devices.disable",
            "devices.list",
            "devices.rename",
            "users.list",
        ];
        assert_eq!(
            nearest_paths("devices.disabel", paths, 3)[0],
            "devices.disable"
        );
        assert!(nearest_paths("zzz", paths, 3).is_empty());
    }
}
