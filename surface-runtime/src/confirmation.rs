//! Local confirmation (`docs/pipeline.md`, "Local confirmation"): levels,
//! the issuance of pending confirmations, their approval or rejection by
//! the application, and their single use by the confirmed retry.
//!
//! Protocol (agent-surface's protocol 1: the evidence a retry carries is
//! the `confirmationId`; what it approves stays in the registry):
//! 1. A call whose confirmation level demands it and names no confirmation
//!    ends with `CONFIRMATION_REQUIRED`: `details.confirmationId`,
//!    `details.summary` (the description and the **effective input**,
//!    bound values included: what the server will receive),
//!    `details.expiresAt`, `details.effect`, `details.origin: "client"`.
//!    The registry records a [`PendingConfirmation`] bound to the
//!    capability, the registration and the digest of that input.
//! 2. The application (never the model) shows it and calls
//!    `SurfaceRegistry::confirm(id)` or `SurfaceRegistry::reject(id)`.
//! 3. The agent retries with a **fresh** invocation id and
//!    `confirmationId`. The registry recomputes the effective input
//!    (bindings run again) and accepts the id only if the registry issued
//!    it (ids are HMAC outputs under the registry's secret: unguessable),
//!    the application approved it, it has not expired or been used, and it
//!    was issued for the same capability, registration and digest of the
//!    effective input. It is consumed by that call (single use), even when
//!    execution then fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Clock;
use crate::executor::ConfirmationInfo;
use crate::hash::{sha256, HmacSha256};
use crate::manifest::{canonical_json, AgentEffect};
use crate::sync::lock;

/// How much confirmation a call needs, ordered `Never < Optional <
/// Required`; the effective level is the maximum of every source (the
/// effect floor, the binding, static policy levels and policy decisions).
/// Serialized `"never"`, `"optional"`, `"required"`.
///
/// `Optional` means *the application may ask*: the registry runs the call
/// without a prompt unless a policy asks for confirmation
/// ([`crate::policy::PolicyDecision::RequireConfirmation`]) or the registry
/// was built with `SurfaceRegistryBuilder::confirm_optional(true)`, which
/// treats it like `Required`. The snapshot reports it so agents and UIs
/// know a prompt is possible.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmationLevel {
    /// No local confirmation.
    #[default]
    Never,
    /// The application may ask (see the type docs).
    Optional,
    /// Evidence is required before execution.
    Required,
}

impl ConfirmationLevel {
    /// The floor an effect sets: destructive and external-side-effect ⇒
    /// `Required`, server-mutation ⇒ `Optional`, server-query ⇒ `Never`.
    /// The manifest's `requiresApproval` plays no part: it is a hint about
    /// the server's own approval, which a local confirmation never
    /// satisfies.
    pub fn floor(effect: AgentEffect) -> Self {
        match effect {
            AgentEffect::ServerQuery => ConfirmationLevel::Never,
            AgentEffect::ServerMutation => ConfirmationLevel::Optional,
            AgentEffect::ExternalSideEffect | AgentEffect::Destructive => {
                ConfirmationLevel::Required
            }
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmationLevel::Never => "never",
            ConfirmationLevel::Optional => "optional",
            ConfirmationLevel::Required => "required",
        }
    }
}

/// Where a pending confirmation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfirmationState {
    /// Waiting for the application's decision.
    Pending,
    /// Approved; evidence issued and not yet used.
    Approved,
}

/// What the application shows the user before approving (camelCase JSON):
/// the capability, the registration and the effective input the server
/// will receive, bound values included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingConfirmation {
    /// Id to pass to `confirm` / `reject`.
    pub confirmation_id: String,
    /// The invocation that asked for it (the retry uses a fresh id).
    pub invocation_id: String,
    /// Capability id the agent called (`domain:…` or `view:…`).
    pub capability_id: String,
    /// Registration the confirmation is bound to.
    pub registration_id: String,
    /// Effect of the procedure; `None` for view capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<AgentEffect>,
    /// Description of the capability as the snapshot showed it.
    pub description: String,
    /// The effective input (agent input merged with bound values, validated).
    pub input: Value,
    /// Hex SHA-256 of the canonical effective input ([`input_digest`]).
    pub input_digest: String,
    /// When it was requested, ms since the Unix epoch.
    pub requested_at_ms: u64,
    /// After this instant (ms since the epoch) it can no longer be approved.
    pub expires_at_ms: u64,
    /// Pending or approved.
    pub state: ConfirmationState,
    /// When the application approved it, ms since the Unix epoch (`None`
    /// while pending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at_ms: Option<u64>,
}

impl PendingConfirmation {
    /// The `details.summary` text of `CONFIRMATION_REQUIRED`, as the
    /// original writes it: `"<description> — input: <effective input as
    /// compact JSON>"`.
    pub fn summary(&self) -> String {
        let input = serde_json::to_string(&self.input).unwrap_or_default();
        format!("{} — input: {input}", self.description)
    }
}

/// Why `confirm` / `reject` failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfirmationError {
    /// No pending confirmation has this id (never issued, rejected, already
    /// used, or expired early to make room for newer ones at the
    /// registry's `max_pending_confirmations` bound).
    #[error("no pending confirmation `{0}`")]
    Unknown(String),
    /// The confirmation expired before the decision.
    #[error("confirmation `{0}` expired")]
    Expired(String),
    /// The confirmation was already approved.
    #[error("confirmation `{0}` was already approved")]
    AlreadyApproved(String),
}

/// Hex SHA-256 of `canonical_json(input)`: the digest evidence is bound to.
pub fn input_digest(input: &Value) -> String {
    hex::encode(sha256(canonical_json(input).as_bytes()))
}

/// Signs and verifies evidence with the per-registry secret.
pub(crate) struct Signer {
    secret: [u8; 32],
}

impl Signer {
    pub(crate) fn new(secret: [u8; 32]) -> Self {
        Self { secret }
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new(&self.secret)
    }

    /// A 32-byte key for another purpose, derived from the secret
    /// (HMAC of `label`), so one secret keys several independent MACs.
    pub(crate) fn derived_key(&self, label: &str) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(b"agent-surface derived key:");
        mac.update(label.as_bytes());
        mac.finish()
    }

    /// An unpredictable id (HMAC of a counter): ids cannot be guessed
    /// without the secret.
    pub(crate) fn id(&self, prefix: &str, counter: u64) -> String {
        let mut mac = self.mac();
        mac.update(format!("{prefix}:{counter}").as_bytes());
        let bytes = mac.finish();
        format!("{prefix}_{}", hex::encode(&bytes[..12]))
    }
}

/// Why a `confirmationId` did not apply: the agent sees
/// `CONFIRMATION_INVALID` with `details.reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EvidenceProblem {
    /// Expired before the retry.
    Expired,
    /// Never issued by this registry, rejected, already used, or not (yet)
    /// approved.
    NotApproved,
    /// Issued for another capability, registration or effective input.
    Mismatch,
}

impl EvidenceProblem {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EvidenceProblem::Expired => "expired",
            EvidenceProblem::NotApproved => "not-approved-or-used",
            EvidenceProblem::Mismatch => "different-call",
        }
    }
}

/// The registry's confirmations, keyed by id. Entries leave on rejection,
/// on use, (lazily) on expiry, and — when `max` are live and a new one is
/// requested — the oldest pending one (the oldest approved one if none is
/// pending) is expired to make room.
struct ConfirmationStore {
    entries: HashMap<String, StoredConfirmation>,
    counter: u64,
    /// Insertion counter (ordering for eviction and listing).
    inserted: u64,
    max: usize,
}

struct StoredConfirmation {
    /// Insertion order.
    seq: u64,
    pending: PendingConfirmation,
}

impl ConfirmationStore {
    /// An empty store holding at most `max` live confirmations.
    fn new(max: usize) -> Self {
        Self {
            entries: HashMap::new(),
            counter: 0,
            inserted: 0,
            max: max.max(1),
        }
    }

    fn purge(&mut self, now: u64) {
        self.entries.retain(|_, p| p.pending.expires_at_ms >= now);
    }

    fn next_counter(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// Records `pending`. Returns the confirmation expired to stay within
    /// the bound, if any.
    fn insert(&mut self, pending: PendingConfirmation, now: u64) -> Option<PendingConfirmation> {
        self.purge(now);
        let mut evicted = None;
        if self.entries.len() >= self.max {
            // At most `max` entries: a linear scan for the oldest.
            let oldest = |state: Option<ConfirmationState>| {
                self.entries
                    .iter()
                    .filter(|(_, e)| state.is_none_or(|s| e.pending.state == s))
                    .min_by_key(|(_, e)| e.seq)
                    .map(|(id, _)| id.clone())
            };
            let victim = oldest(Some(ConfirmationState::Pending)).or_else(|| oldest(None));
            evicted = victim.and_then(|id| self.entries.remove(&id).map(|e| e.pending));
        }
        self.inserted += 1;
        let seq = self.inserted;
        self.entries.insert(
            pending.confirmation_id.clone(),
            StoredConfirmation { seq, pending },
        );
        evicted
    }

    /// How many confirmations are stored (expired ones not yet purged
    /// included).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn get(&self, id: &str, now: u64) -> Option<PendingConfirmation> {
        self.entries
            .get(id)
            .map(|e| &e.pending)
            .filter(|p| p.expires_at_ms >= now)
            .cloned()
    }

    fn list(&self, now: u64) -> Vec<PendingConfirmation> {
        let mut all: Vec<&StoredConfirmation> = self
            .entries
            .values()
            .filter(|e| e.pending.expires_at_ms >= now)
            .collect();
        all.sort_by_key(|e| e.seq);
        all.into_iter().map(|e| e.pending.clone()).collect()
    }

    /// Approves: the approval expires `ttl_ms` after it is given.
    fn approve(
        &mut self,
        id: &str,
        now: u64,
        ttl_ms: u64,
    ) -> Result<PendingConfirmation, ConfirmationError> {
        let entry = self
            .entries
            .get_mut(id)
            .map(|e| &mut e.pending)
            .ok_or_else(|| ConfirmationError::Unknown(id.to_string()))?;
        if entry.expires_at_ms < now {
            self.entries.remove(id);
            return Err(ConfirmationError::Expired(id.to_string()));
        }
        if entry.state == ConfirmationState::Approved {
            return Err(ConfirmationError::AlreadyApproved(id.to_string()));
        }
        entry.state = ConfirmationState::Approved;
        entry.approved_at_ms = Some(now);
        entry.expires_at_ms = now.saturating_add(ttl_ms);
        Ok(entry.clone())
    }

    fn reject(&mut self, id: &str, now: u64) -> Result<PendingConfirmation, ConfirmationError> {
        let entry = self
            .entries
            .remove(id)
            .map(|e| e.pending)
            .ok_or_else(|| ConfirmationError::Unknown(id.to_string()))?;
        if entry.expires_at_ms < now {
            return Err(ConfirmationError::Expired(id.to_string()));
        }
        Ok(entry)
    }

    /// Checks confirmation `id` for a call to `capability_id` /
    /// `registration_id` with effective-input digest `digest`, and consumes
    /// it when it applies. Returns when it was approved.
    fn consume(
        &mut self,
        id: &str,
        capability_id: &str,
        registration_id: &str,
        digest: &str,
        now: u64,
    ) -> Result<u64, EvidenceProblem> {
        let Some(entry) = self.entries.get(id).map(|e| &e.pending) else {
            return Err(EvidenceProblem::NotApproved);
        };
        if entry.expires_at_ms < now {
            self.entries.remove(id);
            return Err(EvidenceProblem::Expired);
        }
        let Some(approved_at_ms) = entry.approved_at_ms else {
            return Err(EvidenceProblem::NotApproved);
        };
        if entry.capability_id != capability_id
            || entry.registration_id != registration_id
            || entry.input_digest != digest
        {
            return Err(EvidenceProblem::Mismatch);
        }
        self.entries.remove(id);
        Ok(approved_at_ms)
    }
}

/// What a call that needs confirmation asks the user to approve.
pub(crate) struct ConfirmationRequest {
    pub(crate) invocation_id: String,
    pub(crate) capability_id: String,
    pub(crate) registration_id: String,
    pub(crate) effect: Option<AgentEffect>,
    /// The capability's description as the snapshot shows it.
    pub(crate) description: String,
    /// The effective input.
    pub(crate) input: Value,
    /// [`input_digest`] of `input`.
    pub(crate) input_digest: String,
}

/// A confirmation just issued, and the one expired to make room for it.
pub(crate) struct Issued {
    pub(crate) pending: PendingConfirmation,
    pub(crate) evicted: Option<PendingConfirmation>,
}

/// A registry's confirmations: issuance, the application's decisions and
/// the evidence a confirmed retry carries, under the registry's secret,
/// clock and bounds.
pub(crate) struct Confirmations {
    store: Mutex<ConfirmationStore>,
    signer: Signer,
    clock: Arc<dyn Clock>,
    ttl_ms: u64,
    confirm_optional: bool,
}

impl Confirmations {
    /// Confirmations signed by `signer`, expiring `ttl` after request (and
    /// evidence `ttl` after approval), at most `max` live at once.
    pub(crate) fn new(
        signer: Signer,
        clock: Arc<dyn Clock>,
        ttl: Duration,
        confirm_optional: bool,
        max: usize,
    ) -> Self {
        Self {
            store: Mutex::new(ConfirmationStore::new(max)),
            signer,
            clock,
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            confirm_optional,
        }
    }

    /// The registry clock's time, ms since the Unix epoch.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Whether a call at `level` needs evidence: `Required`, or
    /// `Optional` when the registry enforces optional confirmations.
    pub(crate) fn required(&self, level: ConfirmationLevel) -> bool {
        level == ConfirmationLevel::Required
            || (level == ConfirmationLevel::Optional && self.confirm_optional)
    }

    /// Issues a pending confirmation for `request`, with an unguessable id.
    pub(crate) fn request(&self, request: ConfirmationRequest) -> Issued {
        let now = self.clock.now_ms();
        let mut store = lock(&self.store);
        let counter = store.next_counter();
        let pending = PendingConfirmation {
            confirmation_id: self.signer.id("conf", counter),
            invocation_id: request.invocation_id,
            capability_id: request.capability_id,
            registration_id: request.registration_id,
            effect: request.effect,
            description: request.description,
            input: request.input,
            input_digest: request.input_digest,
            requested_at_ms: now,
            expires_at_ms: now.saturating_add(self.ttl_ms),
            state: ConfirmationState::Pending,
            approved_at_ms: None,
        };
        let evicted = store.insert(pending.clone(), now);
        Issued { pending, evicted }
    }

    /// Consumes confirmation `id` for a call to `capability_id` /
    /// `registration_id` with effective-input digest `digest`.
    pub(crate) fn consume(
        &self,
        id: &str,
        capability_id: &str,
        registration_id: &str,
        digest: &str,
    ) -> Result<ConfirmationInfo, EvidenceProblem> {
        let now = self.clock.now_ms();
        let approved_at_ms =
            lock(&self.store).consume(id, capability_id, registration_id, digest, now)?;
        Ok(ConfirmationInfo {
            id: id.to_string(),
            approved_at_ms,
        })
    }

    /// The application approves: the approved confirmation, usable by one
    /// retry within `ttl` from now.
    pub(crate) fn approve(&self, id: &str) -> Result<PendingConfirmation, ConfirmationError> {
        let now = self.clock.now_ms();
        lock(&self.store).approve(id, now, self.ttl_ms)
    }

    /// The application rejects.
    pub(crate) fn reject(&self, id: &str) -> Result<PendingConfirmation, ConfirmationError> {
        let now = self.clock.now_ms();
        lock(&self.store).reject(id, now)
    }

    /// A live confirmation.
    pub(crate) fn get(&self, id: &str) -> Option<PendingConfirmation> {
        let now = self.clock.now_ms();
        lock(&self.store).get(id, now)
    }

    /// Every live confirmation, oldest first.
    pub(crate) fn list(&self) -> Vec<PendingConfirmation> {
        let now = self.clock.now_ms();
        lock(&self.store).list(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pending(id: &str, now: u64) -> PendingConfirmation {
        PendingConfirmation {
            confirmation_id: id.into(),
            invocation_id: "i1".into(),
            capability_id: "domain:a.b".into(),
            registration_id: "r1".into(),
            effect: Some(AgentEffect::Destructive),
            description: "d".into(),
            input: json!({"x": 1}),
            input_digest: input_digest(&json!({"x": 1})),
            requested_at_ms: now,
            expires_at_ms: now + 100,
            state: ConfirmationState::Pending,
            approved_at_ms: None,
        }
    }

    #[test]
    fn levels_order_and_floors() {
        assert!(ConfirmationLevel::Never < ConfirmationLevel::Optional);
        assert!(ConfirmationLevel::Optional < ConfirmationLevel::Required);
        assert_eq!(
            ConfirmationLevel::floor(AgentEffect::ServerQuery),
            ConfirmationLevel::Never
        );
        assert_eq!(
            ConfirmationLevel::floor(AgentEffect::ServerMutation),
            ConfirmationLevel::Optional
        );
        assert_eq!(
            ConfirmationLevel::floor(AgentEffect::ExternalSideEffect),
            ConfirmationLevel::Required
        );
        assert_eq!(
            ConfirmationLevel::floor(AgentEffect::Destructive),
            ConfirmationLevel::Required
        );
        assert_eq!(
            serde_json::to_value(ConfirmationLevel::Optional).unwrap(),
            json!("optional")
        );
    }

    #[test]
    fn input_digest_ignores_key_order() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":[1,2]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":[1,2],"a":1}"#).unwrap();
        assert_eq!(input_digest(&a), input_digest(&b));
        assert_ne!(
            input_digest(&a),
            input_digest(&json!({"a": 2, "b": [1, 2]}))
        );
    }

    #[test]
    fn a_confirmation_is_single_use_and_bound_to_its_call() {
        let mut store = ConfirmationStore::new(10);
        store.insert(pending("c1", 10), 10);
        let digest = input_digest(&json!({"x": 1}));
        // Not approved yet: a retry with its id does not apply.
        assert_eq!(
            store.consume("c1", "domain:a.b", "r1", &digest, 15),
            Err(EvidenceProblem::NotApproved)
        );
        let approved = store.approve("c1", 20, 50).unwrap();
        assert_eq!(
            (approved.expires_at_ms, approved.approved_at_ms),
            (70, Some(20))
        );
        assert_eq!(
            store.approve("c1", 21, 50),
            Err(ConfirmationError::AlreadyApproved("c1".into()))
        );
        let other_input = input_digest(&json!({"x": 2}));
        assert_eq!(
            store.consume("c1", "domain:a.b", "r1", &other_input, 30),
            Err(EvidenceProblem::Mismatch)
        );
        assert_eq!(
            store.consume("c1", "domain:a.b", "r2", &digest, 30),
            Err(EvidenceProblem::Mismatch)
        );
        assert_eq!(
            store.consume("c1", "domain:a.c", "r1", &digest, 30),
            Err(EvidenceProblem::Mismatch)
        );
        assert_eq!(
            store.consume("forged", "domain:a.b", "r1", &digest, 30),
            Err(EvidenceProblem::NotApproved)
        );
        assert_eq!(store.consume("c1", "domain:a.b", "r1", &digest, 30), Ok(20));
        assert_eq!(
            store.consume("c1", "domain:a.b", "r1", &digest, 31),
            Err(EvidenceProblem::NotApproved)
        );
    }

    #[test]
    fn the_summary_is_the_originals_text() {
        let mut p = pending("c1", 0);
        p.description = "Permanently purge the given devices".into();
        p.input = json!({"deviceIds": ["d1", "d2"]});
        assert_eq!(
            p.summary(),
            "Permanently purge the given devices — input: {\"deviceIds\":[\"d1\",\"d2\"]}"
        );
    }

    #[test]
    fn expired_confirmations_cannot_be_approved_or_used() {
        let mut store = ConfirmationStore::new(10);
        store.insert(pending("c1", 10), 10);
        assert_eq!(
            store.approve("c1", 111, 50),
            Err(ConfirmationError::Expired("c1".into()))
        );
        store.insert(pending("c2", 10), 10);
        let approved = store.approve("c2", 20, 5).unwrap();
        assert_eq!(
            store.consume("c2", "domain:a.b", "r1", &approved.input_digest, 26),
            Err(EvidenceProblem::Expired)
        );
        assert_eq!(
            store.reject("c9", 0),
            Err(ConfirmationError::Unknown("c9".into()))
        );
    }

    #[test]
    fn ids_are_distinct_per_counter_and_secret() {
        let a = Signer::new([1; 32]);
        let b = Signer::new([2; 32]);
        assert_ne!(a.id("c", 1), a.id("c", 2));
        assert_ne!(a.id("c", 1), b.id("c", 1));
        assert!(a.id("c", 1).starts_with("c_"));
    }

    #[test]
    fn at_the_bound_the_oldest_pending_confirmation_is_evicted_first() {
        let mut store = ConfirmationStore::new(3);
        assert_eq!(store.insert(pending("c1", 10), 10), None);
        assert_eq!(store.insert(pending("c2", 10), 10), None);
        assert_eq!(store.insert(pending("c3", 10), 10), None);
        // c1 approved: the oldest *pending* one, c2, goes first.
        store.approve("c1", 11, 50).unwrap();
        let evicted = store.insert(pending("c4", 12), 12).unwrap();
        assert_eq!(evicted.confirmation_id, "c2");
        assert_eq!(store.len(), 3);
        let live: Vec<String> = store
            .list(12)
            .into_iter()
            .map(|p| p.confirmation_id)
            .collect();
        assert_eq!(live, ["c1", "c3", "c4"]);
        // With every live one approved, the oldest approved one goes.
        store.approve("c3", 13, 50).unwrap();
        store.approve("c4", 13, 50).unwrap();
        let evicted = store.insert(pending("c5", 14), 14).unwrap();
        assert_eq!(
            (evicted.confirmation_id.as_str(), evicted.state),
            ("c1", ConfirmationState::Approved)
        );
        assert_eq!(
            store.approve("c2", 15, 50),
            Err(ConfirmationError::Unknown("c2".into()))
        );
        // Expired entries make room before anything is evicted.
        let mut store = ConfirmationStore::new(1);
        store.insert(pending("old", 0), 0);
        assert_eq!(store.insert(pending("new", 500), 500), None);
    }
}
