//! Invocation-id admission (SPEC §7, §11: "the registry never executes one
//! invocation id twice").
//!
//! The registry remembers every invocation id it admitted for its whole
//! lifetime in an [`InvocationIds`] table: per id the keyed hash of the
//! envelope (so an identical repeat can be told from a reused id), whether
//! it completed, and — for the last `recorded_results` completions — the
//! result, replayed to an identical repeat.
//!
//! The table stores each id's hash next to it, so growing the table never
//! re-hashes ids (a long session admits thousands of them).

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;

use crate::invocation::{AgentError, AgentInvocationResult};
use crate::registry::FastHash;

/// An admitted invocation id with its table hash.
#[derive(Clone)]
pub(crate) struct IdKey {
    hash: u64,
    id: Arc<str>,
}

impl IdKey {
    /// The id, shared (`ProcedureCallInfo::invocation_id`).
    pub(crate) fn id(&self) -> &Arc<str> {
        &self.id
    }
}

/// What is remembered of one admitted id (a few dozen bytes plus the id).
struct InvocationRecord {
    key: IdKey,
    /// Keyed hash of the envelope (invocation + consumer).
    fingerprint: u64,
    done: bool,
    /// The outcome while it is among the last `recorded_results` (the
    /// invocation id is the key's).
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
    /// `invocation-id-reused`, `invocation-in-flight` or
    /// `duplicate-invocation`.
    Reason(&'static str),
}

/// Every invocation id a registry admitted, and the recent results.
pub(crate) struct InvocationIds {
    table: HashTable<InvocationRecord>,
    hasher: FastHash,
    /// Completed ids, oldest first, whose results are still kept.
    completed: VecDeque<IdKey>,
}

impl InvocationIds {
    pub(crate) fn new() -> Self {
        Self {
            table: HashTable::new(),
            hasher: FastHash::default(),
            completed: VecDeque::new(),
        }
    }

    /// Admits `id` (recording it as in flight) and returns its key, or says
    /// why a repeat is refused.
    pub(crate) fn admit(&mut self, id: &str, fingerprint: u64) -> Result<IdKey, Refusal> {
        let hash = self.hasher.hash_one(id);
        if let Some(record) = self.table.find(hash, |r| &*r.key.id == id) {
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
        let key = IdKey {
            hash,
            id: Arc::from(id),
        };
        self.table.insert_unique(
            hash,
            InvocationRecord {
                key: key.clone(),
                fingerprint,
                done: false,
                result: None,
            },
            |r| r.key.hash,
        );
        Ok(key)
    }

    /// Marks `key` completed with `result`, keeping the last `keep` results
    /// for replay.
    pub(crate) fn complete(&mut self, key: IdKey, result: &AgentInvocationResult, keep: usize) {
        if let Some(record) = self.find_mut(&key) {
            record.done = true;
            record.result = Some(Box::new(Outcome::of(result)));
        }
        self.completed.push_back(key);
        while self.completed.len() > keep {
            if let Some(old) = self.completed.pop_front() {
                if let Some(record) = self.find_mut(&old) {
                    record.result = None;
                }
            }
        }
    }

    fn find_mut(&mut self, key: &IdKey) -> Option<&mut InvocationRecord> {
        self.table
            .find_mut(key.hash, |r| Arc::ptr_eq(&r.key.id, &key.id))
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

    fn reason(r: Result<IdKey, Refusal>) -> &'static str {
        match r {
            Err(Refusal::Reason(reason)) => reason,
            Err(Refusal::Replay(_)) => "replay",
            Ok(_) => "admitted",
        }
    }

    #[test]
    fn ids_are_admitted_once_and_survive_growth() {
        let mut ids = InvocationIds::new();
        let keys: Vec<IdKey> = (0..5_000)
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
}
