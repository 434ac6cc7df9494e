//! Invocation-id admission (SPEC §7, §11: "the registry never executes one
//! invocation id twice").
//!
//! An id is first checked against the one invocation-id rule
//! ([`crate::invocation::check_invocation_id`]: 1–256 visible ASCII
//! characters); an id that breaks it is refused and never recorded.
//!
//! The registry then remembers every invocation id it admitted for its
//! whole lifetime in an [`InvocationIds`] table — not the id itself but a
//! fixed-size **keyed digest** of it ([`IdDigest`]: the first 128 bits of
//! HMAC-SHA-256 under a key derived from the registry's secret), next to the
//! keyed hash of the envelope (so an identical repeat can be told from a
//! reused id), whether it completed, and — for the last `recorded_results`
//! completions — the result, replayed to an identical repeat. Each
//! remembered id costs 40 bytes plus one control byte of the hash table,
//! whatever the id's length.
//!
//! The table holds at most `max_invocation_ids` ids
//! ([`crate::registry::DEFAULT_MAX_INVOCATION_IDS`], 100,000 ≈ 5.4 MB).
//! At the bound a **new** id is refused with `PRECONDITION_FAILED`,
//! `details.reason: "invocation-ids-exhausted"` (repeats of known ids are
//! still answered): forgetting ids would let one run twice, so the
//! application replaces the registry instead (a new page session).
//!
//! A digest collision (two ids sharing 128 bits of a keyed HMAC, about
//! n²/2¹²⁹ for n ids) could only make a fresh id be refused as a repeat or
//! be answered with another call's recorded outcome; it can never make an
//! id execute twice.

use std::collections::VecDeque;

use hashbrown::HashTable;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::invocation::{AgentError, AgentInvocationResult};

/// A fixed-size keyed digest of an invocation id (128 bits of
/// HMAC-SHA-256): what the registry and the agent host remember of an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct IdDigest([u64; 2]);

impl IdDigest {
    /// The hash-table hash (the first 64 bits; the digest is already
    /// uniformly distributed).
    pub(crate) fn table_hash(self) -> u64 {
        self.0[0]
    }
}

/// Computes [`IdDigest`]s under one key.
#[derive(Clone)]
pub(crate) struct IdDigester {
    /// HMAC state already keyed (cloned per digest).
    keyed: Hmac<Sha256>,
}

impl IdDigester {
    /// A digester keyed with `key` (any length).
    pub(crate) fn new(key: &[u8]) -> Self {
        // HMAC accepts keys of any length; this never fails.
        let keyed = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
        Self { keyed }
    }

    /// A digester with a fresh random key; when the platform has no random
    /// source the key is fixed, which keeps the digest's collision
    /// resistance (that of truncated SHA-256) but lets ids be precomputed.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        // A failure leaves the fixed all-zero key (see above).
        let _ = getrandom::fill(&mut key);
        Self::new(&key)
    }

    /// The digest of `id`.
    pub(crate) fn digest(&self, id: &str) -> IdDigest {
        let mut mac = self.keyed.clone();
        mac.update(id.as_bytes());
        let bytes = mac.finalize().into_bytes();
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        IdDigest([word(0), word(1)])
    }
}

/// What is remembered of one admitted id: 40 bytes, whatever the id.
struct InvocationRecord {
    id: IdDigest,
    /// Keyed hash of the envelope (invocation + consumer).
    fingerprint: u64,
    done: bool,
    /// The outcome while it is among the last `recorded_results` (the
    /// invocation id comes from the repeat, which carries the same id).
    result: Option<Box<Outcome>>,
}

/// A recorded result without its invocation id.
#[derive(Clone)]
enum Outcome {
    Success(serde_json::Value),
    Error(AgentError),
}

impl Outcome {
    fn of(result: &AgentInvocationResult) -> Self {
        match result {
            AgentInvocationResult::Success { output, .. } => Outcome::Success(output.clone()),
            AgentInvocationResult::Error { error, .. } => Outcome::Error(error.clone()),
        }
    }

    fn to_result(&self, invocation_id: &str) -> AgentInvocationResult {
        let invocation_id = invocation_id.to_string();
        match self {
            Outcome::Success(output) => AgentInvocationResult::Success {
                invocation_id,
                output: output.clone(),
            },
            Outcome::Error(error) => AgentInvocationResult::Error {
                invocation_id,
                error: error.clone(),
            },
        }
    }
}

/// Why admission did not admit an invocation id.
pub(crate) enum Refusal {
    /// The identical envelope completed before: its recorded result.
    Replay(AgentInvocationResult),
    /// `details.reason` of the `PRECONDITION_FAILED` answer:
    /// `invocation-id-reused`, `invocation-in-flight`,
    /// `duplicate-invocation` or `invocation-ids-exhausted`.
    Reason(&'static str),
}

/// Every invocation id a registry admitted (as digests), and the recent
/// results.
pub(crate) struct InvocationIds {
    table: HashTable<InvocationRecord>,
    digester: IdDigester,
    /// Completed ids, oldest first, whose results are still kept.
    completed: VecDeque<IdDigest>,
    /// The most ids the table holds.
    max_ids: usize,
}

impl InvocationIds {
    /// An empty table keyed with `key`, holding at most `max_ids` ids.
    pub(crate) fn new(key: &[u8], max_ids: usize) -> Self {
        Self {
            table: HashTable::new(),
            digester: IdDigester::new(key),
            completed: VecDeque::new(),
            max_ids,
        }
    }

    /// How many ids are remembered.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Admits `id` (recording it as in flight) and returns its digest, or
    /// says why a repeat (or a new id beyond the bound) is refused.
    pub(crate) fn admit(&mut self, id: &str, fingerprint: u64) -> Result<IdDigest, Refusal> {
        let digest = self.digester.digest(id);
        if let Some(record) = self.table.find(digest.table_hash(), |r| r.id == digest) {
            return Err(if record.fingerprint != fingerprint {
                Refusal::Reason("invocation-id-reused")
            } else if !record.done {
                Refusal::Reason("invocation-in-flight")
            } else if let Some(outcome) = &record.result {
                Refusal::Replay(outcome.to_result(id))
            } else {
                Refusal::Reason("duplicate-invocation")
            });
        }
        if self.table.len() >= self.max_ids {
            return Err(Refusal::Reason("invocation-ids-exhausted"));
        }
        self.table.insert_unique(
            digest.table_hash(),
            InvocationRecord {
                id: digest,
                fingerprint,
                done: false,
                result: None,
            },
            |r| r.id.table_hash(),
        );
        Ok(digest)
    }

    /// Marks `id` completed with `result`, keeping the last `keep` results
    /// for replay.
    pub(crate) fn complete(&mut self, id: IdDigest, result: &AgentInvocationResult, keep: usize) {
        if let Some(record) = self.find_mut(id) {
            record.done = true;
            record.result = Some(Box::new(Outcome::of(result)));
        }
        self.completed.push_back(id);
        while self.completed.len() > keep {
            if let Some(old) = self.completed.pop_front() {
                if let Some(record) = self.find_mut(old) {
                    record.result = None;
                }
            }
        }
    }

    fn find_mut(&mut self, id: IdDigest) -> Option<&mut InvocationRecord> {
        self.table.find_mut(id.table_hash(), |r| r.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(id: &str) -> AgentInvocationResult {
        AgentInvocationResult::Success {
            invocation_id: id.into(),
            output: json!(id),
        }
    }

    fn reason(r: Result<IdDigest, Refusal>) -> &'static str {
        match r {
            Err(Refusal::Reason(reason)) => reason,
            Err(Refusal::Replay(_)) => "replay",
            Ok(_) => "admitted",
        }
    }

    #[test]
    fn ids_are_admitted_once_and_survive_growth() {
        let mut ids = InvocationIds::new(&[7; 32], usize::MAX);
        let keys: Vec<IdDigest> = (0..5_000)
            .map(|i| ids.admit(&format!("inv-{i}"), i).ok().unwrap())
            .collect();
        assert_eq!(reason(ids.admit("inv-17", 17)), "invocation-in-flight");
        assert_eq!(reason(ids.admit("inv-17", 18)), "invocation-id-reused");
        for (i, key) in keys.into_iter().enumerate() {
            ids.complete(key, &ok(&format!("inv-{i}")), 2);
        }
        // Only the last two results are kept; every id stays known.
        assert_eq!(reason(ids.admit("inv-17", 17)), "duplicate-invocation");
        match ids.admit("inv-4999", 4_999) {
            Err(Refusal::Replay(result)) => assert_eq!(result, ok("inv-4999")),
            _ => panic!("expected the recorded result"),
        }
        assert_eq!(reason(ids.admit("inv-5000", 1)), "admitted");
    }

    #[test]
    fn new_ids_beyond_the_bound_are_refused_known_ones_still_answered() {
        let mut ids = InvocationIds::new(&[1; 32], 2);
        let a = ids.admit("a", 1).ok().unwrap();
        let b = ids.admit("b", 2).ok().unwrap();
        assert_eq!(reason(ids.admit("c", 3)), "invocation-ids-exhausted");
        assert_eq!(ids.len(), 2, "a refused id is not remembered");
        assert_eq!(reason(ids.admit("a", 1)), "invocation-in-flight");
        ids.complete(a, &ok("a"), 1);
        ids.complete(b, &ok("b"), 1);
        assert_eq!(reason(ids.admit("a", 1)), "duplicate-invocation");
        assert!(matches!(ids.admit("b", 2), Err(Refusal::Replay(r)) if r == ok("b")));
        assert_eq!(reason(ids.admit("c", 3)), "invocation-ids-exhausted");
    }

    #[test]
    fn digests_depend_on_the_id_and_the_key() {
        let one = IdDigester::new(&[1; 32]);
        let two = IdDigester::new(&[2; 32]);
        assert_eq!(one.digest("inv-1"), one.digest("inv-1"));
        assert_ne!(one.digest("inv-1"), one.digest("inv-2"));
        assert_ne!(one.digest("inv-1"), two.digest("inv-1"));
        // Long ids cost the same 16 bytes.
        assert_eq!(std::mem::size_of::<IdDigest>(), 16);
        assert_eq!(std::mem::size_of::<InvocationRecord>(), 40);
        assert_ne!(
            one.digest(&"x".repeat(10_000)),
            one.digest(&"x".repeat(10_001))
        );
    }
}
