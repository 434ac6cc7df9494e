//! Local confirmation (`docs/pipeline.md`, "Local confirmation"): levels,
//! the issuance of pending confirmations, their approval or rejection by
//! the application, and their single use by the confirmed retry.
//!
//! Protocol (agent-surface's protocol 1: what a retry carries is
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
use crate::hash::{sha256, HmacSha256};
use crate::invocation::{AgentConsumer, Retry};
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
    /// The user's approval is required before execution.
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

/// Where a live confirmation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfirmationState {
    /// Waiting for the application's decision.
    Pending,
    /// Approved and not yet used: the next retry naming it for the same
    /// call runs.
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
    /// compact JSON>"`, except that the input's keys are in sorted order
    /// (the original keeps the agent's order, then the bound keys).
    /// Like the original, the text is cut to [`MAX_SUMMARY_CHARS`] UTF-16
    /// code units (the last one an ellipsis); the application's dialog shows
    /// [`Self::input`] whole.
    pub fn summary(&self) -> String {
        let input = serde_json::to_string(&self.input).unwrap_or_default();
        truncate(
            &format!("{} — input: {input}", self.description),
            MAX_SUMMARY_CHARS,
        )
    }
}

/// The longest `details.summary`, in UTF-16 code units (JavaScript's
/// `string.length`): 300, the original's.
pub const MAX_SUMMARY_CHARS: usize = 300;

/// `text` cut to `max` UTF-16 code units, its last one `…`, as the
/// original's `truncate` does (never splitting a character here: a
/// surrogate pair that would not fit is left out whole).
fn truncate(text: &str, max: usize) -> String {
    if text.encode_utf16().count() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut units = 0;
    for c in text.chars() {
        if units + c.len_utf16() > max.saturating_sub(1) {
            break;
        }
        units += c.len_utf16();
        out.push(c);
    }
    out.push('…');
    out
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

/// Hex SHA-256 of `canonical_json(input)`: the digest a confirmation is bound to.
pub fn input_digest(input: &Value) -> String {
    hex::encode(sha256(canonical_json(input).as_bytes()))
}

/// The per-registry secret's keyed functions: unguessable confirmation and
/// surface ids, and keys derived for other purposes.
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

/// Why a `confirmationId` did not apply, as the original names it
/// (`details.reason` of `CONFIRMATION_INVALID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EvidenceProblem {
    /// Expired before the retry (retry `with-confirmation`).
    Expired,
    /// The user declined it (retry `no`).
    Denied,
    /// Already used by a call (retry `no`).
    Consumed,
    /// Never issued here, forgotten, or issued for another consumer,
    /// capability, registration or effective input (retry `no`).
    Mismatch,
}

impl EvidenceProblem {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EvidenceProblem::Expired => "expired",
            EvidenceProblem::Denied => "denied",
            EvidenceProblem::Consumed => "consumed",
            EvidenceProblem::Mismatch => "mismatch",
        }
    }

    /// The original's retry: `with-confirmation` for an expired one (ask
    /// the user again), `no` for the others.
    pub(crate) fn retry(self) -> Retry {
        match self {
            EvidenceProblem::Expired => Retry::WithConfirmation,
            _ => Retry::No,
        }
    }

    /// The original's message to the agent.
    pub(crate) fn message(self) -> &'static str {
        match self {
            EvidenceProblem::Denied => {
                "The user declined this action. Do not retry; respect the decision."
            }
            EvidenceProblem::Expired => "The confirmation expired. Request a fresh confirmation.",
            EvidenceProblem::Consumed => {
                "This confirmation was already used. Request a fresh confirmation if the action is still needed."
            }
            EvidenceProblem::Mismatch => "The confirmation does not match this exact invocation.",
        }
    }
}

/// What a retry naming a `confirmationId` met.
#[derive(Debug)]
pub(crate) enum Consumed {
    /// Approved for this call, now used: when it was approved.
    Approved(u64),
    /// Still waiting for the user's decision: ask again with the same
    /// confirmation (`CONFIRMATION_REQUIRED`).
    PendingAgain(Box<PendingConfirmation>),
    /// It does not apply.
    Refused(EvidenceProblem),
}

/// Where a record stands; only `Pending` and `Approved` are live (shown to
/// the application). `Denied` and `Consumed` stay until their expiry so a
/// retry is told why it cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecordState {
    Live,
    Denied,
    Consumed,
}

/// The registry's confirmation records, keyed by id: at most `max` pending
/// at once (a new one beyond that is refused, never made room for), and
/// at most `4 × max` records in all (the oldest decided or used ones leave
/// first). Records leave at their expiry.
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
    state: RecordState,
    /// Who the call was made as (the original's `consumerKey`).
    consumer: AgentConsumer,
    pending: PendingConfirmation,
}

impl StoredConfirmation {
    fn is_pending(&self) -> bool {
        self.state == RecordState::Live && self.pending.state == ConfirmationState::Pending
    }

    /// Whether it was issued for this call.
    fn matches(&self, call: &CallIdentity<'_>) -> bool {
        let p = &self.pending;
        p.capability_id == call.capability_id
            && p.registration_id == call.registration_id
            && p.input_digest == call.digest
            && &self.consumer == call.consumer
    }
}

/// What a confirmation is bound to: the call's capability, registration,
/// consumer and effective-input digest.
pub(crate) struct CallIdentity<'a> {
    pub(crate) capability_id: &'a str,
    pub(crate) registration_id: &'a str,
    pub(crate) consumer: &'a AgentConsumer,
    pub(crate) digest: &'a str,
}

/// Why a confirmation could not be issued: `max` are pending; the oldest
/// expires at `oldest_expires_at_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overflow {
    pub(crate) oldest_expires_at_ms: u64,
}

impl ConfirmationStore {
    /// An empty store holding at most `max` pending confirmations.
    fn new(max: usize) -> Self {
        Self {
            entries: HashMap::new(),
            counter: 0,
            inserted: 0,
            max: max.max(1),
        }
    }

    fn purge(&mut self, now: u64) {
        self.entries.retain(|_, e| e.pending.expires_at_ms >= now);
    }

    fn next_counter(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// The pending record already issued for `call`, if any.
    fn pending_for(&self, call: &CallIdentity<'_>, now: u64) -> Option<PendingConfirmation> {
        self.entries
            .values()
            .find(|e| e.is_pending() && e.pending.expires_at_ms >= now && e.matches(call))
            .map(|e| e.pending.clone())
    }

    /// Records `pending` for `consumer`, unless `max` are pending. To stay
    /// within `4 × max` records the oldest decided or used one leaves (an
    /// approved, unused one only when none is left); it is returned when it
    /// was live.
    fn insert(
        &mut self,
        pending: PendingConfirmation,
        consumer: AgentConsumer,
        now: u64,
    ) -> Result<Option<PendingConfirmation>, Overflow> {
        self.purge(now);
        let pending_now = self.entries.values().filter(|e| e.is_pending());
        if pending_now.clone().count() >= self.max {
            let oldest = pending_now.map(|e| e.pending.expires_at_ms).min();
            return Err(Overflow {
                oldest_expires_at_ms: oldest.unwrap_or(now),
            });
        }
        let mut evicted = None;
        if self.entries.len() >= 4 * self.max {
            let oldest = |live: bool| {
                self.entries
                    .iter()
                    .filter(|(_, e)| (e.state == RecordState::Live) == live && !e.is_pending())
                    .min_by_key(|(_, e)| e.seq)
                    .map(|(id, _)| id.clone())
            };
            let victim = oldest(false).or_else(|| oldest(true));
            let gone = victim.and_then(|id| self.entries.remove(&id));
            evicted = gone
                .filter(|e| e.state == RecordState::Live)
                .map(|e| e.pending);
        }
        self.inserted += 1;
        let seq = self.inserted;
        self.entries.insert(
            pending.confirmation_id.clone(),
            StoredConfirmation {
                seq,
                state: RecordState::Live,
                consumer,
                pending,
            },
        );
        Ok(evicted)
    }

    /// How many records are stored (expired ones not yet purged included).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// A live (pending or approved) confirmation.
    fn get(&self, id: &str, now: u64) -> Option<PendingConfirmation> {
        self.entries
            .get(id)
            .filter(|e| e.state == RecordState::Live && e.pending.expires_at_ms >= now)
            .map(|e| e.pending.clone())
    }

    /// Every live confirmation, oldest first.
    fn list(&self, now: u64) -> Vec<PendingConfirmation> {
        let mut all: Vec<&StoredConfirmation> = self
            .entries
            .values()
            .filter(|e| e.state == RecordState::Live && e.pending.expires_at_ms >= now)
            .collect();
        all.sort_by_key(|e| e.seq);
        all.into_iter().map(|e| e.pending.clone()).collect()
    }

    /// The live record `id`, or why there is none.
    fn live_mut(
        &mut self,
        id: &str,
        now: u64,
    ) -> Result<&mut StoredConfirmation, ConfirmationError> {
        let expired = match self.entries.get(id) {
            Some(e) if e.state == RecordState::Live => e.pending.expires_at_ms < now,
            _ => return Err(ConfirmationError::Unknown(id.to_string())),
        };
        if expired {
            self.entries.remove(id);
            return Err(ConfirmationError::Expired(id.to_string()));
        }
        self.entries
            .get_mut(id)
            .ok_or_else(|| ConfirmationError::Unknown(id.to_string()))
    }

    /// Approves: the approval expires `ttl_ms` after it is given.
    fn approve(
        &mut self,
        id: &str,
        now: u64,
        ttl_ms: u64,
    ) -> Result<PendingConfirmation, ConfirmationError> {
        let entry = &mut self.live_mut(id, now)?.pending;
        if entry.state == ConfirmationState::Approved {
            return Err(ConfirmationError::AlreadyApproved(id.to_string()));
        }
        entry.state = ConfirmationState::Approved;
        entry.approved_at_ms = Some(now);
        entry.expires_at_ms = now.saturating_add(ttl_ms);
        Ok(entry.clone())
    }

    /// The user declines (a pending or an approved, unused confirmation): a
    /// retry naming it is told so until it would have expired.
    fn reject(&mut self, id: &str, now: u64) -> Result<PendingConfirmation, ConfirmationError> {
        let entry = self.live_mut(id, now)?;
        entry.state = RecordState::Denied;
        Ok(entry.pending.clone())
    }

    /// A retry naming confirmation `id` for `call`: used when approved for
    /// it; asked again when still pending for it; refused otherwise.
    fn consume(&mut self, id: &str, call: &CallIdentity<'_>, now: u64) -> Consumed {
        let Some(entry) = self.entries.get_mut(id) else {
            return Consumed::Refused(EvidenceProblem::Mismatch);
        };
        match entry.state {
            RecordState::Denied => return Consumed::Refused(EvidenceProblem::Denied),
            RecordState::Consumed => return Consumed::Refused(EvidenceProblem::Consumed),
            RecordState::Live => {}
        }
        if entry.pending.expires_at_ms < now {
            self.entries.remove(id);
            return Consumed::Refused(EvidenceProblem::Expired);
        }
        if !entry.matches(call) {
            return Consumed::Refused(EvidenceProblem::Mismatch);
        }
        match entry.pending.approved_at_ms {
            None => Consumed::PendingAgain(Box::new(entry.pending.clone())),
            Some(approved_at_ms) => {
                entry.state = RecordState::Consumed;
                Consumed::Approved(approved_at_ms)
            }
        }
    }
}

/// What a call that needs confirmation asks the user to approve.
pub(crate) struct ConfirmationRequest {
    pub(crate) invocation_id: String,
    pub(crate) capability_id: String,
    pub(crate) registration_id: String,
    /// Who calls.
    pub(crate) consumer: AgentConsumer,
    pub(crate) effect: Option<AgentEffect>,
    /// The capability's description as the snapshot shows it.
    pub(crate) description: String,
    /// The effective input.
    pub(crate) input: Value,
    /// [`input_digest`] of `input`.
    pub(crate) input_digest: String,
}

/// The confirmation a call is asked for — issued now, or the pending one
/// issued for the same call before — and a live one that left the store
/// to make room, if any.
pub(crate) struct Issued {
    pub(crate) pending: PendingConfirmation,
    /// Whether `pending` was issued by this request (not a repeat).
    pub(crate) new: bool,
    pub(crate) evicted: Option<PendingConfirmation>,
}

/// A registry's confirmations: issuance, the application's decisions and
/// the single use by a confirmed retry, under the registry's secret, clock
/// and bounds.
pub(crate) struct Confirmations {
    store: Mutex<ConfirmationStore>,
    signer: Signer,
    clock: Arc<dyn Clock>,
    ttl_ms: u64,
    confirm_optional: bool,
}

impl Confirmations {
    /// Confirmations with ids from `signer`, expiring `ttl` after request
    /// (and `ttl` after approval), at most `max` pending at once.
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

    /// The registry's clock.
    pub(crate) fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// The registry clock's time, ms since the Unix epoch.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Whether a call at `level` needs the user's approval: `Required`, or
    /// `Optional` when the registry enforces optional confirmations.
    pub(crate) fn required(&self, level: ConfirmationLevel) -> bool {
        level == ConfirmationLevel::Required
            || (level == ConfirmationLevel::Optional && self.confirm_optional)
    }

    /// The confirmation `request` is asked for: the pending one already
    /// issued for the same call (consumer, capability, registration,
    /// effective input), else a new one with an unguessable id.
    ///
    /// # Errors
    /// [`Overflow`] when the store already holds its bound of pending
    /// confirmations: nothing is issued.
    pub(crate) fn request(&self, request: ConfirmationRequest) -> Result<Issued, Overflow> {
        let now = self.clock.now_ms();
        let mut store = lock(&self.store);
        let call = CallIdentity {
            capability_id: &request.capability_id,
            registration_id: &request.registration_id,
            consumer: &request.consumer,
            digest: &request.input_digest,
        };
        if let Some(pending) = store.pending_for(&call, now) {
            return Ok(Issued {
                pending,
                new: false,
                evicted: None,
            });
        }
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
        let evicted = store.insert(pending.clone(), request.consumer, now)?;
        Ok(Issued {
            pending,
            new: true,
            evicted,
        })
    }

    /// A retry naming confirmation `id` for `call` (see
    /// [`ConfirmationStore::consume`]).
    pub(crate) fn consume(&self, id: &str, call: &CallIdentity<'_>) -> Consumed {
        let now = self.clock.now_ms();
        lock(&self.store).consume(id, call, now)
    }

    /// The application approves: the approved confirmation, usable by one
    /// retry within `ttl` from now.
    pub(crate) fn approve(&self, id: &str) -> Result<PendingConfirmation, ConfirmationError> {
        let now = self.clock.now_ms();
        lock(&self.store).approve(id, now, self.ttl_ms)
    }

    /// The application rejects (the user declined).
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

    fn alice() -> AgentConsumer {
        AgentConsumer::embedded("alice")
    }

    /// The call `pending("c…")` was issued for, as `consumer`.
    fn call<'a>(consumer: &'a AgentConsumer, digest: &'a str) -> CallIdentity<'a> {
        CallIdentity {
            capability_id: "domain:a.b",
            registration_id: "r1",
            consumer,
            digest,
        }
    }

    fn store_with(ids: &[&str], now: u64) -> ConfirmationStore {
        let mut store = ConfirmationStore::new(10);
        for id in ids {
            store.insert(pending(id, now), alice(), now).unwrap();
        }
        store
    }

    #[test]
    fn a_confirmation_is_single_use_and_bound_to_its_call_and_consumer() {
        let mut store = store_with(&["c1"], 10);
        let digest = input_digest(&json!({"x": 1}));
        let a = alice();
        // Not decided yet: the call is asked for it again.
        assert!(matches!(
            store.consume("c1", &call(&a, &digest), 15),
            Consumed::PendingAgain(p) if p.confirmation_id == "c1"
        ));
        let approved = store.approve("c1", 20, 50).unwrap();
        assert_eq!(
            (approved.expires_at_ms, approved.approved_at_ms),
            (70, Some(20))
        );
        assert_eq!(
            store.approve("c1", 21, 50),
            Err(ConfirmationError::AlreadyApproved("c1".into()))
        );
        let refused = |store: &mut ConfirmationStore, call: &CallIdentity<'_>| match store
            .consume("c1", call, 30)
        {
            Consumed::Refused(problem) => problem,
            other => panic!("{other:?}"),
        };
        let other_input = input_digest(&json!({"x": 2}));
        assert_eq!(
            refused(&mut store, &call(&a, &other_input)),
            EvidenceProblem::Mismatch
        );
        let mallory = AgentConsumer::embedded("mallory");
        assert_eq!(
            refused(&mut store, &call(&mallory, &digest)),
            EvidenceProblem::Mismatch
        );
        let headless = AgentConsumer::headless("alice");
        assert_eq!(
            refused(&mut store, &call(&headless, &digest)),
            EvidenceProblem::Mismatch
        );
        let mut elsewhere = call(&a, &digest);
        elsewhere.registration_id = "r2";
        assert_eq!(refused(&mut store, &elsewhere), EvidenceProblem::Mismatch);
        assert!(matches!(
            store.consume("forged", &call(&a, &digest), 30),
            Consumed::Refused(EvidenceProblem::Mismatch)
        ));
        assert!(matches!(
            store.consume("c1", &call(&a, &digest), 30),
            Consumed::Approved(20)
        ));
        assert_eq!(
            refused(&mut store, &call(&a, &digest)),
            EvidenceProblem::Consumed
        );
        assert_eq!(store.get("c1", 30), None, "a used confirmation is not live");
    }

    #[test]
    fn a_declined_confirmation_says_so_until_it_would_have_expired() {
        let mut store = store_with(&["c1", "c2"], 10);
        let a = alice();
        let digest = input_digest(&json!({"x": 1}));
        store.reject("c1", 20).unwrap();
        store.approve("c2", 20, 50).unwrap();
        store.reject("c2", 21).unwrap();
        for id in ["c1", "c2"] {
            assert!(matches!(
                store.consume(id, &call(&a, &digest), 30),
                Consumed::Refused(EvidenceProblem::Denied)
            ));
            assert_eq!(
                store.approve(id, 30, 50),
                Err(ConfirmationError::Unknown(id.into()))
            );
            assert_eq!(store.get(id, 30), None);
        }
        assert!(store.list(30).is_empty());
        store.purge(111);
        assert_eq!(store.len(), 0, "records leave at their expiry");
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
        // Cut to 300 UTF-16 units, the last an ellipsis, as the original.
        p.input = json!({"deviceIds": vec!["d-😀"; 500]});
        let long = p.summary();
        assert_eq!(long.encode_utf16().count(), MAX_SUMMARY_CHARS);
        assert!(long.ends_with('…'));
        assert!(long
            .starts_with("Permanently purge the given devices — input: {\"deviceIds\":[\"d-😀\""));
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "ab…");
        // A surrogate pair that would not fit is left out whole.
        assert_eq!(truncate("a😀bc", 3), "a…");
    }

    #[test]
    fn expired_confirmations_cannot_be_approved_or_used() {
        let mut store = store_with(&["c1", "c2"], 10);
        assert_eq!(
            store.approve("c1", 111, 50),
            Err(ConfirmationError::Expired("c1".into()))
        );
        let approved = store.approve("c2", 20, 5).unwrap();
        let a = alice();
        assert!(matches!(
            store.consume("c2", &call(&a, &approved.input_digest), 26),
            Consumed::Refused(EvidenceProblem::Expired)
        ));
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
    fn at_the_bound_nothing_pending_is_dropped_a_new_one_is_refused() {
        let mut store = ConfirmationStore::new(2);
        store.insert(pending("c1", 10), alice(), 10).unwrap();
        store.insert(pending("c2", 20), alice(), 20).unwrap();
        assert_eq!(
            store.insert(pending("c3", 30), alice(), 30),
            Err(Overflow {
                oldest_expires_at_ms: 110
            })
        );
        assert_eq!(store.list(30).len(), 2);
        // A decision frees a place.
        store.approve("c1", 31, 50).unwrap();
        assert_eq!(store.insert(pending("c3", 32), alice(), 32), Ok(None));
        // Expired ones make room too.
        assert_eq!(store.insert(pending("c4", 200), alice(), 200), Ok(None));
    }

    #[test]
    fn decided_records_leave_first_when_the_store_is_full() {
        // 4 × max records in all: here 4.
        let mut store = ConfirmationStore::new(1);
        for (n, id) in ["c1", "c2", "c3", "c4"].into_iter().enumerate() {
            let now = 10 + n as u64;
            store.insert(pending(id, now), alice(), now).unwrap();
            if id == "c1" {
                store.approve(id, now, 500).unwrap();
            } else {
                store.reject(id, now).unwrap();
            }
        }
        assert_eq!(store.len(), 4);
        // The oldest declined one leaves, not the approved c1.
        assert_eq!(store.insert(pending("c5", 20), alice(), 20), Ok(None));
        assert!(store.entries.contains_key("c1") && !store.entries.contains_key("c2"));
        // With only approved, unused ones left to drop, the oldest goes and is named.
        let mut store = ConfirmationStore::new(1);
        for (n, id) in ["a1", "a2", "a3", "a4"].into_iter().enumerate() {
            let now = 10 + n as u64;
            store.insert(pending(id, now), alice(), now).unwrap();
            store.approve(id, now, 500).unwrap();
        }
        let evicted = store
            .insert(pending("a5", 20), alice(), 20)
            .unwrap()
            .unwrap();
        assert_eq!(
            (evicted.confirmation_id.as_str(), evicted.state),
            ("a1", ConfirmationState::Approved)
        );
    }
}
