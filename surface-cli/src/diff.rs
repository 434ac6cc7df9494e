//! The comparison of two contracts (docs/drift.md, "Classification"):
//! every difference as a [`Change`] with a stable key, a class and a
//! reason.

use std::collections::BTreeMap;

use serde_json::Value;
use surface_runtime::contract::{
    ManifestProcedureContract, ProcedureContract, SurfaceContract, ViewCapabilityKind,
    ViewContract, ViewContractEffect,
};
use surface_runtime::{AgentEffect, ConfirmationLevel};

use crate::schema;

/// Whether a change lets an agent do more, less, or the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// An agent may now do something it could not.
    Widening,
    /// An agent may now do less.
    Narrowing,
    /// Neither (descriptions, digests).
    Neutral,
}

impl Class {
    /// `widening`, `narrowing`, `neutral`.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Widening => "widening",
            Class::Narrowing => "narrowing",
            Class::Neutral => "neutral",
        }
    }
}

/// One difference between the base and the current contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// `kind:id[:detail]`, stable across runs (what `--acknowledge` names).
    pub key: String,
    /// Its class.
    pub class: Class,
    /// A sentence for the reviewer.
    pub reason: String,
}

/// The rank of an effect in the documented order: `read` = `server-query`
/// (0) < `local-state` (1) < `navigation` (2) < `server-mutation` (3) <
/// `external-side-effect` (4) < `destructive` (5).
pub fn effect_rank(effect: &str) -> u8 {
    match effect {
        "local-state" => 1,
        "navigation" => 2,
        "server-mutation" => 3,
        "external-side-effect" => 4,
        "destructive" => 5,
        _ => 0,
    }
}

fn agent_effect(effect: AgentEffect) -> &'static str {
    effect.as_str()
}

fn view_effect(effect: ViewContractEffect) -> &'static str {
    match effect {
        ViewContractEffect::Read => "read",
        ViewContractEffect::LocalState => "local-state",
        ViewContractEffect::Navigation => "navigation",
    }
}

/// The most characters of a text a reason quotes.
const MAX_QUOTED_CHARS: usize = 120;

/// The most characters of one schema finding a reason lists (a JSON
/// Pointer 32 levels deep fits).
const MAX_FINDING_CHARS: usize = 600;

/// `text` cut to [`MAX_QUOTED_CHARS`] characters (`…` marks a cut).
fn clip(text: &str) -> String {
    clip_to(text, MAX_QUOTED_CHARS)
}

/// `text` cut to `max` characters (`…` marks a cut).
fn clip_to(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The most schema findings one reason lists.
const MAX_LISTED_FINDINGS: usize = 10;

/// The first [`MAX_LISTED_FINDINGS`] findings, each cut to
/// [`MAX_FINDING_CHARS`],
/// joined by `; `, and how many more there were.
fn findings_text(findings: &[&String]) -> String {
    let mut listed: Vec<String> = findings
        .iter()
        .take(MAX_LISTED_FINDINGS)
        .map(|f| clip_to(f, MAX_FINDING_CHARS))
        .collect();
    if findings.len() > MAX_LISTED_FINDINGS {
        listed.push(format!("and {} more", findings.len() - MAX_LISTED_FINDINGS));
    }
    listed.join("; ")
}

/// Collects changes, keys prefixed per section (`manifest-` for the
/// manifest's procedures).
struct Changes {
    prefix: &'static str,
    list: Vec<Change>,
}

impl Changes {
    fn push(&mut self, class: Class, kind: &str, id: &str, reason: String) {
        self.list.push(Change {
            key: format!("{}{kind}:{id}", self.prefix),
            class,
            reason,
        });
    }

    /// `widening` when `current` ranks above `base`, `narrowing` below.
    fn ordered(
        &mut self,
        kinds: [&str; 2],
        id: &str,
        what: &str,
        base: (&str, u8),
        cur: (&str, u8),
    ) {
        if base.1 == cur.1 {
            return;
        }
        let (class, kind) = if cur.1 > base.1 {
            (Class::Widening, kinds[0])
        } else {
            (Class::Narrowing, kinds[1])
        };
        let reason = format!("{id}: {what} {} -> {}", base.0, cur.0);
        self.push(class, kind, id, reason);
    }

    fn effect(&mut self, id: &str, base: &str, current: &str) {
        let ranks = ((base, effect_rank(base)), (current, effect_rank(current)));
        self.ordered(
            ["effect-escalated", "effect-reduced"],
            id,
            "effect",
            ranks.0,
            ranks.1,
        );
    }

    /// Confirmation: lower is wider (`required` > `optional` > `never`).
    fn confirmation(&mut self, id: &str, base: ConfirmationLevel, current: ConfirmationLevel) {
        let rank = |l: ConfirmationLevel| 2 - l as u8;
        self.ordered(
            ["confirmation-lowered", "confirmation-raised"],
            id,
            "confirmation",
            (base.as_str(), rank(base)),
            (current.as_str(), rank(current)),
        );
    }

    fn approval(&mut self, id: &str, base: bool, current: bool) {
        match (base, current) {
            (true, false) => self.push(
                Class::Widening,
                "approval-dropped",
                id,
                format!("{id}: requiresApproval dropped (the server no longer asks for its own approval)"),
            ),
            (false, true) => self.push(
                Class::Narrowing,
                "approval-added",
                id,
                format!("{id}: requiresApproval added"),
            ),
            _ => {}
        }
    }

    fn text(&mut self, kind: &str, id: &str, what: &str, base: &str, current: &str) {
        if base != current {
            let (base, current) = (clip(base), clip(current));
            let reason = format!("{id}: {what} changed from \"{base}\" to \"{current}\"");
            self.push(Class::Neutral, kind, id, reason);
        }
    }

    fn schema(&mut self, id: &str, base: &Value, current: &Value) {
        let found = schema::compare(base, current);
        let all: Vec<&String> = found
            .looser
            .iter()
            .chain(&found.changed)
            .chain(&found.stricter)
            .collect();
        let detail = findings_text(&all);
        let (class, kind, reason) = if !found.looser.is_empty() {
            (
                Class::Widening,
                "input-schema-looser",
                format!("{id}: input schema accepts more: {detail}"),
            )
        } else if !found.changed.is_empty() {
            (
                Class::Widening,
                "input-schema-changed",
                format!("{id}: schema changed: {detail}"),
            )
        } else if !found.stricter.is_empty() {
            (
                Class::Narrowing,
                "input-schema-stricter",
                format!("{id}: input schema accepts less: {detail}"),
            )
        } else if found.reworded {
            (
                Class::Neutral,
                "input-schema-reworded",
                format!("{id}: input schema reworded (annotations or equivalent forms only)"),
            )
        } else {
            return;
        };
        self.push(class, kind, id, reason);
    }

    /// Policies compared as a multiset: a name fewer times on the current
    /// side is `removed` and widens (a policy no longer applies), more
    /// times is `added`.
    fn policies(&mut self, prefix: &str, id: Option<&str>, base: &[String], current: &[String]) {
        let count = |names: &[String]| {
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for name in names {
                *counts.entry(name.clone()).or_default() += 1;
            }
            counts
        };
        let (b, c) = (count(base), count(current));
        let fewer = |x: &BTreeMap<String, usize>, y: &BTreeMap<String, usize>| -> Vec<String> {
            x.iter()
                .filter(|(name, n)| y.get(*name).copied().unwrap_or(0) < **n)
                .map(|(name, _)| name.clone())
                .collect()
        };
        let (removed, added) = (fewer(&b, &c), fewer(&c, &b));
        let owner = id.map_or_else(|| "the registry".to_string(), str::to_string);
        let key = |name: &str| id.map_or_else(|| name.to_string(), |id| format!("{id}:{name}"));
        for name in &removed {
            let reason = format!("{owner}: policy {name} removed");
            self.push(
                Class::Widening,
                &format!("{prefix}policy-removed"),
                &key(name),
                reason,
            );
        }
        for name in &added {
            let reason = format!("{owner}: policy {name} added");
            self.push(
                Class::Narrowing,
                &format!("{prefix}policy-added"),
                &key(name),
                reason,
            );
        }
    }
}

/// Every difference from `base` to `current`, widening first, then
/// narrowing, then neutral, each class sorted by key.
pub fn diff(base: &SurfaceContract, current: &SurfaceContract) -> Vec<Change> {
    let mut changes = Changes {
        prefix: "",
        list: Vec::new(),
    };
    changes.policies("registry-", None, &base.policies, &current.policies);
    let pairs = paired(&base.procedures, &current.procedures, |p| &p.id);
    for (id, pair) in pairs {
        procedure(&mut changes, &id, pair);
    }
    for (id, pair) in paired(&base.views, &current.views, |v| &v.id) {
        view(&mut changes, &id, pair);
    }
    changes.prefix = "manifest-";
    let base_manifest = manifest_procedures(base);
    let current_manifest = manifest_procedures(current);
    for (id, pair) in paired(base_manifest, current_manifest, |p| &p.id) {
        manifest_procedure(&mut changes, &id, pair);
    }
    let mut list = changes.list;
    list.sort_by(|a, b| (a.class, &a.key).cmp(&(b.class, &b.key)));
    list.dedup_by(|a, b| a.key == b.key && a.class == b.class);
    list
}

fn manifest_procedures(contract: &SurfaceContract) -> &[ManifestProcedureContract] {
    contract
        .manifest
        .as_ref()
        .map_or(&[], |m| m.procedures.as_slice())
}

/// One entry on either side, or both.
enum Pair<'a, T> {
    Added(&'a T),
    Removed(&'a T),
    Both(&'a T, &'a T),
}

/// Entries matched by id; several entries with one id are matched in
/// their canonical order.
fn paired<'a, T>(
    base: &'a [T],
    current: &'a [T],
    id: impl Fn(&T) -> &String,
) -> Vec<(String, Pair<'a, T>)> {
    let mut groups: BTreeMap<String, (Vec<&'a T>, Vec<&'a T>)> = BTreeMap::new();
    for item in base {
        groups.entry(id(item).clone()).or_default().0.push(item);
    }
    for item in current {
        groups.entry(id(item).clone()).or_default().1.push(item);
    }
    let mut out = Vec::new();
    for (key, (b, c)) in groups {
        for i in 0..b.len().max(c.len()) {
            let pair = match (b.get(i), c.get(i)) {
                (Some(b), Some(c)) => Pair::Both(*b, *c),
                (Some(b), None) => Pair::Removed(*b),
                (None, Some(c)) => Pair::Added(*c),
                (None, None) => continue,
            };
            out.push((key.clone(), pair));
        }
    }
    out
}

fn procedure(changes: &mut Changes, id: &str, pair: Pair<'_, ProcedureContract>) {
    let (b, c) = match pair {
        Pair::Added(_) => {
            let reason = format!("{id}: procedure binding added; an agent can now call it");
            return changes.push(Class::Widening, "procedure-added", id, reason);
        }
        Pair::Removed(_) => {
            let reason = format!("{id}: procedure binding removed");
            return changes.push(Class::Narrowing, "procedure-removed", id, reason);
        }
        Pair::Both(b, c) => (b, c),
    };
    changes.effect(id, agent_effect(b.effect), agent_effect(c.effect));
    changes.approval(id, b.requires_approval, c.requires_approval);
    changes.confirmation(id, b.confirmation, c.confirmation);
    bound_fields(changes, id, b, c);
    changes.policies("", Some(id), &b.policies, &c.policies);
    changes.schema(id, &b.input_schema, &c.input_schema);
    changes.text(
        "description-changed",
        id,
        "description",
        &b.description,
        &c.description,
    );
    changes.text(
        "capability-id-changed",
        id,
        "capabilityId",
        &b.capability_id,
        &c.capability_id,
    );
    let component = |p: &ProcedureContract| p.component.clone().unwrap_or_default();
    changes.text(
        "component-changed",
        id,
        "component",
        &component(b),
        &component(c),
    );
}

fn bound_fields(changes: &mut Changes, id: &str, b: &ProcedureContract, c: &ProcedureContract) {
    let map = |p: &ProcedureContract| -> BTreeMap<String, bool> {
        p.bound_fields
            .iter()
            .map(|f| (f.path.clone(), f.locked))
            .collect()
    };
    let (bm, cm) = (map(b), map(c));
    for (field, locked) in &bm {
        let key = format!("{id}:{field}");
        match cm.get(field) {
            None => {
                let reason = format!("{id}: bound field {field} removed; the agent may now set it");
                changes.push(Class::Widening, "bound-field-removed", &key, reason);
            }
            Some(false) if *locked => {
                let reason =
                    format!("{id}: bound field {field} no longer locked; the agent may now set it");
                changes.push(Class::Widening, "bound-field-unlocked", &key, reason);
            }
            Some(true) if !*locked => {
                let reason = format!("{id}: bound field {field} now locked");
                changes.push(Class::Narrowing, "bound-field-locked", &key, reason);
            }
            _ => {}
        }
    }
    for field in cm.keys().filter(|f| !bm.contains_key(*f)) {
        let reason = format!("{id}: field {field} now bound by the application");
        changes.push(
            Class::Narrowing,
            "bound-field-added",
            &format!("{id}:{field}"),
            reason,
        );
    }
}

fn kind_name(kind: ViewCapabilityKind) -> &'static str {
    match kind {
        ViewCapabilityKind::Observation => "observation",
        ViewCapabilityKind::Action => "action",
    }
}

fn view(changes: &mut Changes, id: &str, pair: Pair<'_, ViewContract>) {
    let (b, c) = match pair {
        Pair::Added(v) => {
            let kind = kind_name(v.kind);
            let reason = format!("{id}: view {kind} added; an agent can now call it");
            return changes.push(Class::Widening, &format!("view-{kind}-added"), id, reason);
        }
        Pair::Removed(v) => {
            let kind = kind_name(v.kind);
            let reason = format!("{id}: view {kind} removed");
            return changes.push(
                Class::Narrowing,
                &format!("view-{kind}-removed"),
                id,
                reason,
            );
        }
        Pair::Both(b, c) => (b, c),
    };
    let kind_rank = |v: &ViewContract| u8::from(v.kind == ViewCapabilityKind::Action);
    changes.ordered(
        ["view-kind-widened", "view-kind-narrowed"],
        id,
        "kind",
        (kind_name(b.kind), kind_rank(b)),
        (kind_name(c.kind), kind_rank(c)),
    );
    changes.effect(id, view_effect(b.effect), view_effect(c.effect));
    changes.confirmation(id, b.confirmation, c.confirmation);
    changes.schema(id, &b.input_schema, &c.input_schema);
    changes.text(
        "description-changed",
        id,
        "description",
        &b.description,
        &c.description,
    );
}

fn manifest_procedure(changes: &mut Changes, id: &str, pair: Pair<'_, ManifestProcedureContract>) {
    let (b, c) = match pair {
        Pair::Added(_) => {
            let reason = format!("{id}: manifest procedure added; the application may now bind it");
            return changes.push(Class::Widening, "procedure-added", id, reason);
        }
        Pair::Removed(_) => {
            let reason = format!("{id}: manifest procedure removed");
            return changes.push(Class::Narrowing, "procedure-removed", id, reason);
        }
        Pair::Both(b, c) => (b, c),
    };
    let before = changes.list.len();
    changes.effect(id, agent_effect(b.effect), agent_effect(c.effect));
    changes.approval(id, b.requires_approval, c.requires_approval);
    changes.schema(id, &b.input_schema, &c.input_schema);
    changes.text(
        "description-changed",
        id,
        "description",
        &b.description,
        &c.description,
    );
    changes.text(
        "capability-id-changed",
        id,
        "capabilityId",
        &b.capability_id,
        &c.capability_id,
    );
    let digest = |p: &ManifestProcedureContract| p.contract_digest.clone().unwrap_or_default();
    changes.text(
        "contract-digest-changed",
        id,
        "contractDigest",
        &digest(b),
        &digest(c),
    );
    if changes.list.len() == before {
        changes.text(
            "digest-changed",
            id,
            "procedure digest",
            &b.digest,
            &c.digest,
        );
    }
}
