//! No module cycle in any library crate (docs/design.md, "Layers"): within
//! every module, the graph of its child modules — `a` uses `b` when code in
//! `a` (or below it) names `crate::…::b` or `super::b` — has no cycle. A
//! cycle means two modules that cannot be understood, tested or moved
//! apart; break it by moving the shared item down to a module both use.
//!
//! The check reads the sources as text: module files from the file tree
//! (`a.rs`, `a/mod.rs`, `a/b.rs`), references from `crate::` and `super::`
//! paths (`use` trees with braces included). Code inside `quote!`/
//! `quote_spanned!` is generated for another crate and skipped, as are test
//! modules (`tests.rs`, `#[cfg(test)]` blocks to the end of the file).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

#[path = "support/sources.rs"]
mod sources;

use sources::{rust_files, LIBRARY_CRATES as CRATES};

/// A module path below the crate root, e.g. `["host", "verify"]`.
type ModPath = Vec<String>;

fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without test code, comments, strings and `quote!` bodies.
fn library_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = rest.strip_prefix("r#\"") {
            i += raw.find("\"#").map_or(rest.len(), |e| e + 5);
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
        } else if rest.starts_with("'\"'") {
            i += 3;
        } else if let Some(len) = ["quote!", "quote_spanned!"]
            .iter()
            .find(|m| rest.starts_with(**m))
            .map(|m| m.len())
        {
            // Skip to the macro's opening delimiter, then its balanced body.
            let mut j = i + len;
            while j < bytes.len() && !matches!(bytes[j], b'(' | b'{' | b'[') {
                j += 1;
            }
            let mut depth = 0usize;
            while j < bytes.len() {
                match bytes[j] {
                    b'(' | b'{' | b'[' => depth += 1,
                    b')' | b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The paths a `use` tree or a path expression starting at `s` (just after
/// `crate::` or `super::`) names: only their first segment matters, but a
/// brace group names several.
fn first_segments(s: &str) -> Vec<String> {
    let s = s.trim_start();
    if let Some(group) = s.strip_prefix('{') {
        let mut depth = 0usize;
        let mut names = Vec::new();
        let mut at_start = true;
        for (k, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => at_start = true,
                c if c.is_whitespace() => {}
                _ if at_start && depth == 0 => {
                    at_start = false;
                    if let Some(name) = ident_at(&group[k..]) {
                        if name == "super" {
                            continue;
                        }
                        names.push(name.to_string());
                    }
                }
                _ => {}
            }
        }
        names
    } else {
        ident_at(s).map(|n| vec![n.to_string()]).unwrap_or_default()
    }
}

/// Every module `module` refers to, as absolute module paths (prefixes are
/// resolved against the module tree later).
fn references(module: &ModPath, code: &str) -> Vec<ModPath> {
    let mut refs = Vec::new();
    let bytes = code.as_bytes();
    for (i, _) in code.match_indices("crate::") {
        if i > 0
            && (bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b'$')
        {
            continue;
        }
        let mut rest = &code[i + "crate::".len()..];
        let mut path = Vec::new();
        loop {
            match first_segments(rest).as_slice() {
                [one] => {
                    path.push(one.clone());
                    rest = &rest[rest.find(one.as_str()).unwrap() + one.len()..];
                    match rest.strip_prefix("::") {
                        Some(r) => rest = r,
                        None => break,
                    }
                }
                many => {
                    for name in many {
                        let mut p = path.clone();
                        p.push(name.clone());
                        refs.push(p);
                    }
                    path.clear();
                    break;
                }
            }
        }
        if !path.is_empty() {
            refs.push(path);
        }
    }
    for (i, _) in code.match_indices("super::") {
        if i > 0
            && (bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':')
        {
            continue;
        }
        let mut base = module.clone();
        base.pop();
        let mut rest = &code[i + "super::".len()..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        for name in first_segments(rest) {
            let mut p = base.clone();
            p.push(name);
            refs.push(p);
        }
    }
    refs
}

/// Cycles among the children of each module: for every parent, the child
/// graph's strongly connected components of more than one child.
fn cycles(modules: &BTreeSet<ModPath>, uses: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let mut found = Vec::new();
    let parents: BTreeSet<ModPath> = modules
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    for parent in &parents {
        let children: Vec<&ModPath> = modules
            .iter()
            .filter(|m| m.len() == parent.len() + 1 && m.starts_with(parent))
            .collect();
        // child → children it uses (through any module below it).
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, targets) in uses {
            if from.len() <= parent.len() || !from.starts_with(parent) {
                continue;
            }
            let a = &from[parent.len()];
            for to in targets {
                if to.len() <= parent.len() || !to.starts_with(parent) {
                    continue;
                }
                let b = &to[parent.len()];
                if a != b && children.iter().any(|c| c.last() == Some(b)) {
                    edges.entry(a.clone()).or_default().insert(b.clone());
                }
            }
        }
        // A cycle exists iff some child reaches itself.
        for child in children {
            let name = child.last().unwrap();
            let mut stack: Vec<(String, Vec<String>)> = vec![(name.clone(), vec![name.clone()])];
            let mut seen = BTreeSet::new();
            while let Some((at, trail)) = stack.pop() {
                for next in edges.get(&at).into_iter().flatten() {
                    if next == name && trail.iter().all(|m| m >= name) {
                        // Reported once, from its smallest member.
                        let mut cycle = trail.clone();
                        cycle.push(name.clone());
                        let place = if parent.is_empty() {
                            "the crate root".to_string()
                        } else {
                            parent.join("::")
                        };
                        found.push(format!("in {place}: {}", cycle.join(" → ")));
                        stack.clear();
                        break;
                    }
                    if seen.insert(next.clone()) {
                        let mut t = trail.clone();
                        t.push(next.clone());
                        stack.push((next.clone(), t));
                    }
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn crate_cycles(src: &Path) -> (usize, Vec<String>) {
    let files = rust_files(src);
    let mut modules = BTreeSet::new();
    let mut uses: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        if module.last().is_some_and(|m| m == "tests") {
            continue;
        }
        for k in 0..=module.len() {
            modules.insert(module[..k].to_vec());
        }
        let code = library_code(&fs::read_to_string(file).unwrap());
        uses.entry(module.clone())
            .or_default()
            .extend(references(&module, &code));
    }
    to_modules(&modules, &mut uses);
    (modules.len(), cycles(&modules, &uses))
}

/// A reference names an item; its module is its longest known prefix
/// (references to nothing known are dropped).
fn to_modules(modules: &BTreeSet<ModPath>, uses: &mut BTreeMap<ModPath, BTreeSet<ModPath>>) {
    for targets in uses.values_mut() {
        *targets = targets
            .iter()
            .filter_map(|t| {
                (0..=t.len())
                    .rev()
                    .map(|k| t[..k].to_vec())
                    .find(|p| modules.contains(p))
            })
            .collect();
    }
}

#[test]
fn no_library_crate_has_a_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    let mut counted = 0;
    for src in CRATES {
        let (modules, found) = crate_cycles(&root.join(src));
        counted += modules;
        report.extend(found.into_iter().map(|c| format!("{src}: {c}")));
    }
    assert!(counted >= 120, "the check read only {counted} modules");
    assert!(report.is_empty(), "module cycles:\n{}", report.join("\n"));
}

#[test]
fn the_check_sees_a_cycle_through_a_use_tree_and_through_super() {
    let modules: BTreeSet<ModPath> = [
        vec![],
        vec!["a".into()],
        vec!["b".into()],
        vec!["b".into(), "c".into()],
    ]
    .into_iter()
    .collect();
    let a = vec!["a".to_string()];
    let c = vec!["b".to_string(), "c".to_string()];
    let mut uses: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    uses.insert(
        a.clone(),
        references(&a, "use crate::{b::c::Thing, x};")
            .into_iter()
            .collect(),
    );
    uses.insert(
        c.clone(),
        references(&c, "fn f() { super::super::a::g() }")
            .into_iter()
            .collect(),
    );
    to_modules(&modules, &mut uses);
    assert_eq!(
        cycles(&modules, &uses),
        vec!["in the crate root: a → b → a".to_string()]
    );
    // Generated code and comments do not count.
    let generated = library_code("quote! { crate::b::X } // crate::b\nlet s = \"crate::b\";");
    assert_eq!(references(&a, &generated), Vec::<ModPath>::new());
}
