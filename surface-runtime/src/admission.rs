//! Invocation-id admission: the registry never executes one invocation id
//! twice (`docs/pipeline.md`, "Invocation ids").
//!
//! An id is first checked against the one invocation-id rule
//! ([`crate::invocation::check_invocation_id`]: 1–256 visible ASCII
//! characters); an id that breaks it is refused and never recorded.
//!
//! The registry then remembers every invocation id it admitted for its
//! whole lifetime in an [`InvocationIds`] table: the shared
//! [`crate::ledger::IdLedger`] (a keyed 128-bit digest per id, under a key
//! derived from the registry's secret) with the keyed hash of the envelope
//! as its envelope value (so an identical repeat can be told from a
//! reused id) and the outcome of each completion as its result. The
//! outcomes of the last `recorded_results` completions are kept, oldest
//! evicted first, and replayed to an identical repeat. Each remembered id
//! costs 32 bytes plus one control byte of the hash table, whatever the
//! id's length.
//!
//! The table holds at most `max_invocation_ids` ids
//! ([`crate::registry::DEFAULT_MAX_INVOCATION_IDS`], 100,000 ≈ 4.3 MB).
//! At the bound a **new** id is refused with `PRECONDITION_FAILED`,
//! `details.reason: "invocation-ids-exhausted"` (repeats of known ids are
//! still answered): forgetting ids would let one run twice, so the
//! application replaces the registry instead (a new page session).
//!
//! What this module adds to the ledger is the registry's answer to each
//! of the ledger's answers ([`Refusal`]): a different envelope is
//! `id-reused-with-different-request`, a pending id `invocation-in-flight`, a kept
//! result a replay, an evicted one `duplicate-invocation`, the bound
//! `invocation-ids-exhausted`. A digest collision could only make a fresh
//! id be refused as a repeat or be answered with another call's recorded
//! outcome; it can never make an id execute twice.

use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::hash::{Fingerprint, IdDigest, IdDigester};
use crate::invocation::{
    AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult, ErrorCode, Retry,
};
use crate::ledger::{Admission, IdLedger, Known, Status};

/// A recorded result without the two ids it echoes: a replay answers an
/// identical repeat, which carries the same invocation id and capability
/// id (and envelope), so they are taken from the repeat
/// ([`Refusal::into_result`]) and recording a result copies neither
/// string.
type Outcome = AgentInvocationResult;

/// `result` with empty (unallocated) `invocationId` and `capabilityId`.
fn outcome_of(result: &AgentInvocationResult) -> Outcome {
    match result {
        AgentInvocationResult::Ok {
            output,
            surface_version,
            surface_changed,
            ..
        } => AgentInvocationResult::Ok {
            invocation_id: String::new(),
            capability_id: String::new(),
            output: output.clone(),
            surface_version: *surface_version,
            surface_changed: *surface_changed,
        },
        AgentInvocationResult::Error {
            error,
            surface_version,
            surface_changed,
            ..
        } => AgentInvocationResult::Error {
            invocation_id: String::new(),
            capability_id: String::new(),
            error: error.clone(),
            surface_version: *surface_version,
            surface_changed: *surface_changed,
        },
    }
}

/// A recorded [`Outcome`] as the answer to `inv`, its identical repeat.
fn replay(mut outcome: Outcome, inv: &AgentInvocation) -> AgentInvocationResult {
    match &mut outcome {
        AgentInvocationResult::Ok {
            invocation_id,
            capability_id,
            ..
        }
        | AgentInvocationResult::Error {
            invocation_id,
            capability_id,
            ..
        } => {
            invocation_id.clone_from(&inv.invocation_id);
            capability_id.clone_from(&inv.capability_id);
        }
    }
    outcome
}

/// Why admission did not admit an invocation id.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The identical envelope completed before: its recorded result,
    /// without the ids the repeat carries (boxed: a result is large, the
    /// other refusals are not).
    Replay(Box<Outcome>),
    /// A repeat with a different envelope (`id-reused-with-different-request`).
    Reused,
    /// A repeat while the first call still runs (`invocation-in-flight`).
    InFlight,
    /// An identical repeat whose result is no longer kept
    /// (`duplicate-invocation`).
    Duplicate,
    /// A new id while `max_invocation_ids` ids are remembered
    /// (`invocation-ids-exhausted`).
    Exhausted,
}

impl Refusal {
    /// The refusal of a repeat of `id` (envelope hash `fingerprint`) the
    /// ledger knows as `known`.
    fn of_repeat(known: Known<'_, u64, Outcome>, fingerprint: u64) -> Self {
        if *known.envelope != fingerprint {
            return Refusal::Reused;
        }
        match known.status {
            Status::Pending => Refusal::InFlight,
            Status::Completed(outcome) => Refusal::Replay(Box::new(outcome.clone())),
            Status::Forgotten => Refusal::Duplicate,
        }
    }

    /// `details.reason` of the `PRECONDITION_FAILED` answer (`None` for a
    /// replay, which answers with the recorded result).
    pub(crate) fn reason(&self) -> Option<&'static str> {
        Some(match self {
            Refusal::Replay(_) => return None,
            Refusal::Reused => "id-reused-with-different-request",
            Refusal::InFlight => "invocation-in-flight",
            Refusal::Duplicate => "duplicate-invocation",
            Refusal::Exhausted => "invocation-ids-exhausted",
        })
    }

    /// The answer to the refused call at `surface_version`: the recorded
    /// result of a replay; a reused, running or forgotten id is
    /// `INVOCATION_CONFLICT` (retry `with-changes`: a fresh id); the id
    /// table's bound is `PRECONDITION_FAILED` (retry `after-refresh`: a new
    /// session). Both carry `details.reason` and a message saying what to
    /// do.
    pub(crate) fn into_result(
        self,
        inv: &AgentInvocation,
        surface_version: u64,
    ) -> AgentInvocationResult {
        let reason = self.reason();
        let (code, retry, message) = match self {
            Refusal::Replay(outcome) => return replay(*outcome, inv),
            Refusal::InFlight => (
                ErrorCode::InvocationConflict,
                Retry::WithChanges,
                "This invocation id is already running; wait for its result or use a fresh invocation id.",
            ),
            Refusal::Reused => (
                ErrorCode::InvocationConflict,
                Retry::WithChanges,
                "This invocation id was already used for a different request. Use a fresh invocation id if the new request is intentional.",
            ),
            Refusal::Duplicate => (
                ErrorCode::InvocationConflict,
                Retry::WithChanges,
                "This invocation id was already used; use a fresh invocation id.",
            ),
            Refusal::Exhausted => (
                ErrorCode::PreconditionFailed,
                Retry::AfterRefresh,
                "This application session has reached its limit of invocations; the application must start a new session.",
            ),
        };
        let mut error = AgentError::new(code, message, retry);
        if let Some(reason) = reason {
            error = error.with_detail("reason", reason);
        }
        AgentInvocationResult::err(
            inv.invocation_id.clone(),
            inv.capability_id.clone(),
            error,
            surface_version,
        )
    }

    /// The agent-facing code of a refusal (`None` for a replay), as
    /// [`Self::into_result`] answers it.
    pub(crate) fn code(&self) -> Option<ErrorCode> {
        match self {
            Refusal::Replay(_) => None,
            Refusal::Reused | Refusal::InFlight | Refusal::Duplicate => {
                Some(ErrorCode::InvocationConflict)
            }
            Refusal::Exhausted => Some(ErrorCode::PreconditionFailed),
        }
    }
}

/// A keyed 64-bit hash of the whole envelope (invocation and consumer),
/// compared when an invocation id repeats: equal envelopes hash equally
/// under one `fingerprint`.
pub(crate) fn envelope_fingerprint(
    fingerprint: &Fingerprint,
    inv: &AgentInvocation,
    consumer: &AgentConsumer,
) -> u64 {
    let mut h = fingerprint.hasher();
    inv.invocation_id.hash(&mut h);
    inv.capability_id.hash(&mut h);
    inv.registration_id.hash(&mut h);
    inv.surface_version.hash(&mut h);
    hash_value(&inv.input, &mut h);
    inv.instance_id.hash(&mut h);
    inv.confirmation_id.hash(&mut h);
    consumer.hash(&mut h);
    h.finish()
}

/// Feeds `value` to `h` as a prefix-free encoding: a tag with each
/// string's, array's and object's length in one word, then the bytes
/// (`Value`'s own `Hash` makes three calls per string: a tag, the bytes, a
/// terminator). Equal values feed equal words; `0.0` and `-0.0`, equal
/// numbers, feed the same ones.
fn hash_value(value: &Value, h: &mut impl Hasher) {
    /// The tag in the low byte, the length above it.
    fn word(tag: u8, len: usize) -> u64 {
        u64::from(tag) | (len as u64) << 8
    }
    match value {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                h.write_u8(3);
                h.write_u64(u);
            } else if let Some(i) = n.as_i64() {
                h.write_u8(4);
                h.write_i64(i);
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                h.write_u8(5);
                h.write_u64(if f == 0.0 { 0 } else { f.to_bits() });
            }
        }
        Value::String(s) => {
            h.write_u64(word(6, s.len()));
            h.write(s.as_bytes());
        }
        Value::Array(items) => {
            h.write_u64(word(7, items.len()));
            items.iter().for_each(|item| hash_value(item, h));
        }
        Value::Object(map) => {
            h.write_u64(word(8, map.len()));
            for (key, item) in map {
                h.write_u64(word(9, key.len()));
                h.write(key.as_bytes());
                hash_value(item, h);
            }
        }
    }
}

/// Every invocation id a registry admitted (as digests, with the keyed
/// hash of its envelope), and the recent outcomes.
pub(crate) struct InvocationIds {
    ledger: IdLedger<u64, Outcome>,
}

impl InvocationIds {
    /// An empty table keyed with `key` (any length), holding at most
    /// `max_ids` ids and the outcomes of the last `keep` completions.
    pub(crate) fn new(key: &[u8], max_ids: usize, keep: usize) -> Self {
        Self {
            ledger: IdLedger::new(IdDigester::new(key), max_ids, keep),
        }
    }

    /// How many ids are remembered.
    pub(crate) fn len(&self) -> usize {
        self.ledger.len()
    }

    /// Admits `id` (recording it as in flight with the envelope hash
    /// `fingerprint`) and returns its digest, or says why a repeat (or a
    /// new id beyond the bound) is refused.
    pub(crate) fn admit(&mut self, id: &str, fingerprint: u64) -> Result<IdDigest, Refusal> {
        let digest = self.ledger.digest(id);
        match self.ledger.admit(digest, fingerprint) {
            Admission::Admitted => Ok(digest),
            Admission::Refused => Err(Refusal::Exhausted),
            Admission::Known(known) => Err(Refusal::of_repeat(known, fingerprint)),
        }
    }

    /// Marks `id` completed with `result` (a second completion is
    /// ignored).
    pub(crate) fn complete(&mut self, id: IdDigest, result: &AgentInvocationResult) {
        self.ledger.complete(id, outcome_of(result));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(id: &str) -> AgentInvocationResult {
        AgentInvocationResult::ok(id, "view:t.a", json!(id), 1)
    }

    /// The replay `outcome` answers to a repeat of `id` (capability
    /// `view:t.a`, as [`ok`] records).
    fn replayed(outcome: &Outcome, id: &str) -> AgentInvocationResult {
        replay(outcome.clone(), &AgentInvocation::new(id, "view:t.a"))
    }

    fn reason(r: Result<IdDigest, Refusal>) -> &'static str {
        match r {
            Err(refusal) => refusal.reason().unwrap_or("replay"),
            Ok(_) => "admitted",
        }
    }

    #[test]
    fn ids_are_admitted_once_and_survive_growth() {
        let mut ids = InvocationIds::new(&[7; 32], usize::MAX, 2);
        let keys: Vec<IdDigest> = (0..5_000)
            .map(|i| ids.admit(&format!("inv-{i}"), i).ok().unwrap())
            .collect();
        assert_eq!(reason(ids.admit("inv-17", 17)), "invocation-in-flight");
        assert_eq!(
            reason(ids.admit("inv-17", 18)),
            "id-reused-with-different-request"
        );
        for (i, key) in keys.into_iter().enumerate() {
            ids.complete(key, &ok(&format!("inv-{i}")));
        }
        // Only the last two results are kept; every id stays known.
        assert_eq!(reason(ids.admit("inv-17", 17)), "duplicate-invocation");
        match ids.admit("inv-4999", 4_999) {
            Err(Refusal::Replay(result)) => {
                assert_eq!(replayed(&result, "inv-4999"), ok("inv-4999"));
            }
            _ => panic!("expected the recorded result"),
        }
        assert_eq!(reason(ids.admit("inv-5000", 1)), "admitted");
    }

    #[test]
    fn new_ids_beyond_the_bound_are_refused_known_ones_still_answered() {
        let mut ids = InvocationIds::new(&[1; 32], 2, 1);
        let a = ids.admit("a", 1).ok().unwrap();
        let b = ids.admit("b", 2).ok().unwrap();
        assert_eq!(reason(ids.admit("c", 3)), "invocation-ids-exhausted");
        assert_eq!(ids.len(), 2, "a refused id is not remembered");
        assert_eq!(reason(ids.admit("a", 1)), "invocation-in-flight");
        ids.complete(a, &ok("a"));
        ids.complete(b, &ok("b"));
        assert_eq!(reason(ids.admit("a", 1)), "duplicate-invocation");
        assert!(
            matches!(ids.admit("b", 2), Err(Refusal::Replay(r)) if replayed(&r, "b") == ok("b"))
        );
        assert_eq!(reason(ids.admit("c", 3)), "invocation-ids-exhausted");
    }

    #[test]
    fn the_value_walk_tells_values_apart_and_equal_ones_alike() {
        let fingerprint = Fingerprint::new(9);
        let of = |v: &Value| {
            let mut h = fingerprint.hasher();
            hash_value(v, &mut h);
            h.finish()
        };
        let values = [
            json!(null),
            json!(false),
            json!(true),
            json!(0),
            json!(-1),
            json!(0.5),
            json!("a".repeat(200)),
            json!("b".repeat(200)),
            json!(""),
            json!("a"),
            json!([]),
            json!([""]),
            json!(["", ""]),
            json!([[]]),
            json!({}),
            json!({"a": "b"}),
            json!({"ab": ""}),
            json!({"a": {"b": null}}),
            json!({"a": null, "b": null}),
        ];
        let mut seen: Vec<u64> = values.iter().map(of).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), values.len());
        assert_eq!(of(&json!(0.0)), of(&json!(-0.0)));
        let built = json!({"b": [1, "x"], "a": {"c": true}});
        assert_eq!(of(&built), of(&json!({"a": {"c": true}, "b": [1, "x"]})));
    }

    #[test]
    fn a_second_completion_of_one_id_is_ignored() {
        let mut ids = InvocationIds::new(&[5; 32], 10, 10);
        let a = ids.admit("a", 1).ok().unwrap();
        ids.complete(a, &ok("a"));
        ids.complete(a, &ok("other"));
        assert!(
            matches!(ids.admit("a", 1), Err(Refusal::Replay(r)) if replayed(&r, "a") == ok("a"))
        );
    }

    #[test]
    fn with_no_results_kept_a_completed_repeat_is_a_duplicate() {
        let mut ids = InvocationIds::new(&[6; 32], 10, 0);
        let a = ids.admit("a", 1).ok().unwrap();
        ids.complete(a, &ok("a"));
        assert_eq!(reason(ids.admit("a", 1)), "duplicate-invocation");
    }
}
