//! The tool naming rule (docs/agents.md, "Tool names").
//!
//! One rule for every target: names match `^[a-zA-Z0-9_-]{1,64}$`, the
//! limit of OpenAI and Anthropic (MCP allows more; the same names are used
//! there).
//!
//! 1. The *key* of a capability is its dotted id without the prefix:
//!    `domain:devices.disable` → `devices.disable`,
//!    `view:devices.table.select` → `view.devices.table.select`.
//! 2. When several live registrations share one key (two tables each
//!    referencing `devices.disable`), every one gets a qualifier appended
//!    as a last segment: the component instance id (`devices.disable.main`)
//!    when all of them have a component and the instance ids give distinct
//!    names; else `componentType.instanceId`; else the registration id.
//! 3. The key is encoded: `.` → `__`; ASCII letters, digits, `_` and `-`
//!    are kept; any other character becomes `_`.
//! 4. A name longer than 64 characters, or one where step 3 replaced a
//!    character, is cut to 55 characters and gets `_` plus the first 8 hex
//!    digits of the SHA-256 of the key (stable across runs and processes).
//! 5. Two different capabilities that end up with the same name are an
//!    [`ExportError::NameCollision`](super::ExportError::NameCollision).
//!
//! Names are reversible through the [`ToolCatalog`](super::ToolCatalog)
//! built from the snapshot, never by parsing them.

use sha2::{Digest, Sha256};

/// Longest tool name (OpenAI and Anthropic: `^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_TOOL_NAME_LEN: usize = 64;
const HASH_HEX: usize = 8;

/// Encodes a dotted key (rule steps 3 and 4): `devices.disable` →
/// `devices__disable`.
///
/// ```
/// use surface_runtime::export::naming::tool_name;
/// assert_eq!(tool_name("devices.disable"), "devices__disable");
/// assert_eq!(tool_name("view.devices.table.select"), "view__devices__table__select");
/// assert_eq!(tool_name("café.list").len(), "caf___list".len() + 9); // + `_` and 8 hex digits
/// ```
pub fn tool_name(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 8);
    let mut lossy = key.is_empty();
    for c in key.chars() {
        match c {
            '.' => out.push_str("__"),
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => out.push(c),
            _ => {
                out.push('_');
                lossy = true;
            }
        }
    }
    if !lossy && out.len() <= MAX_TOOL_NAME_LEN {
        return out;
    }
    let digest = Sha256::digest(key.as_bytes());
    let hash = hex::encode(&digest[..HASH_HEX / 2]);
    // Only ASCII remains after encoding, so any byte index is a boundary.
    out.truncate(MAX_TOOL_NAME_LEN - 1 - HASH_HEX);
    out.push('_');
    out.push_str(&hash);
    out
}

/// Whether `name` fits every target: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The key of a capability id (rule step 1).
pub(crate) fn base_key(id: &str) -> String {
    if let Some(path) = id.strip_prefix("domain:") {
        path.to_string()
    } else if let Some(rest) = id.strip_prefix("view:") {
        format!("view.{rest}")
    } else {
        id.to_string()
    }
}

/// What distinguishes one member of a group sharing a key.
pub(crate) struct Member<'a> {
    pub(crate) component: Option<(&'a str, &'a str)>,
    pub(crate) registration_id: &'a str,
}

/// One way of qualifying a member (`None`: not applicable to it).
type Qualifier = &'static dyn Fn(&Member<'_>) -> Option<String>;

/// Names (and the qualifier used, if any) for one group of registrations
/// sharing `key` (rule step 2), in the members' order.
pub(crate) fn group_names(key: &str, members: &[Member<'_>]) -> Vec<(String, Option<String>)> {
    if members.len() == 1 {
        return vec![(tool_name(key), None)];
    }
    let tiers: [Qualifier; 3] = [
        &|m| m.component.map(|(_, instance)| instance.to_string()),
        &|m| m.component.map(|(ty, instance)| format!("{ty}.{instance}")),
        &|m| Some(m.registration_id.to_string()),
    ];
    let mut last = Vec::new();
    for tier in tiers {
        let qualifiers: Option<Vec<String>> = members.iter().map(tier).collect();
        if let Some(qualifiers) = qualifiers {
            let names: Vec<String> = qualifiers
                .iter()
                .map(|q| tool_name(&format!("{key}.{q}")))
                .collect();
            let ok = distinct(&names);
            last = names
                .into_iter()
                .zip(qualifiers.into_iter().map(Some))
                .collect();
            if ok {
                break;
            }
        }
    }
    last
}

fn distinct(names: &[String]) -> bool {
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort();
    sorted.windows(2).all(|w| w[0] != w[1])
}

/// The human title matching a name: the key, and the qualifier in
/// parentheses when there is one.
pub(crate) fn title(key: &str, qualifier: Option<&str>) -> String {
    match qualifier {
        Some(q) => format!("{key} ({q})"),
        None => key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(group: Vec<(String, Option<String>)>) -> Vec<String> {
        group.into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn dots_become_double_underscores() {
        assert_eq!(tool_name("devices.disable"), "devices__disable");
        assert_eq!(tool_name("admin.users.list-all"), "admin__users__list-all");
        assert_eq!(base_key("domain:devices.disable"), "devices.disable");
        assert_eq!(
            base_key("view:devices.table.select"),
            "view.devices.table.select"
        );
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let key = format!("a.{}", "b".repeat(80));
        let name = tool_name(&key);
        assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
        assert!(is_valid_tool_name(&name));
        let digest = hex::encode(&Sha256::digest(key.as_bytes())[..4]);
        assert_eq!(name, format!("a__{}_{digest}", "b".repeat(52)));
        // Deterministic.
        assert_eq!(tool_name(&key), name);
        // A different long key of the same prefix gets another name.
        assert_ne!(tool_name(&format!("a.{}c", "b".repeat(80))), name);
    }

    #[test]
    fn exactly_64_characters_is_not_cut() {
        let key = "x".repeat(64);
        assert_eq!(tool_name(&key), key);
        assert_eq!(tool_name(&"x".repeat(65)).len(), 64);
        assert!(tool_name(&"x".repeat(65)).starts_with(&"x".repeat(55)));
    }

    #[test]
    fn replaced_characters_force_a_hash_so_lossy_keys_stay_distinct() {
        let a = tool_name("view.grid.sélect");
        let b = tool_name("view.grid.sèlect");
        assert!(is_valid_tool_name(&a) && is_valid_tool_name(&b));
        assert!(a.starts_with("view__grid__s_lect_"));
        assert_ne!(a, b);
    }

    #[test]
    fn group_qualifier_is_the_instance_id_when_distinct() {
        let members = [
            Member {
                component: Some(("devices.table", "main")),
                registration_id: "r1",
            },
            Member {
                component: Some(("devices.table", "archive")),
                registration_id: "r2",
            },
        ];
        assert_eq!(
            names(group_names("devices.disable", &members)),
            ["devices__disable__main", "devices__disable__archive"]
        );
    }

    #[test]
    fn group_qualifier_falls_back_to_type_then_registration_id() {
        let same_instance = [
            Member {
                component: Some(("devices.table", "main")),
                registration_id: "r1",
            },
            Member {
                component: Some(("devices.grid", "main")),
                registration_id: "r2",
            },
        ];
        assert_eq!(
            names(group_names("devices.disable", &same_instance)),
            [
                "devices__disable__devices__table__main",
                "devices__disable__devices__grid__main"
            ]
        );
        let no_component = [
            Member {
                component: None,
                registration_id: "r7",
            },
            Member {
                component: Some(("devices.table", "main")),
                registration_id: "r9",
            },
        ];
        assert_eq!(
            names(group_names("devices.disable", &no_component)),
            ["devices__disable__r7", "devices__disable__r9"]
        );
        assert_eq!(
            group_names("devices.list", &no_component[..1]),
            [("devices__list".to_string(), None)]
        );
    }
}
