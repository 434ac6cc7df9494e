//! The invocation-id ledger: the one implementation of "an invocation id is
//! never executed (or dispatched) twice", shared by the registry
//! (`admission`), the browser side of a session
//! (`host::session::BrowserSurfaceSession`) and the agent host
//! (`host::agent_host::AgentHost`).
//!
//! An [`IdLedger`] remembers every id it admitted, for its whole lifetime
//! (until [`IdLedger::clear`]), as a fixed-size **keyed digest**
//! ([`IdDigest`]: 16 bytes, SipHash-2-4 with 128-bit output under the
//! ledger's key, whatever the id's length), next to a caller-chosen
//! *envelope* value `E` (what the first call carried, to tell an identical
//! repeat from a reused id) and whether the id completed. The results `R`
//! of the last `max_results` completions are kept, oldest evicted first;
//! an evicted id stays known ([`Status::Forgotten`]), so it is still never
//! executed again. Each id costs `24 + size_of::<E>()` bytes plus one
//! control byte of the hash table (32 bytes with a `u64` envelope).
//!
//! At most `max_ids` ids are held: at the bound a **new** id is refused
//! ([`Admission::Refused`]) while known ids are still answered — forgetting
//! an id would let it run twice, so the owner is replaced instead.
//!
//! The ledger only answers *new / known (pending, with its result, or with
//! its result evicted) / refused at the bound*; what each answer means to
//! the caller (a `PRECONDITION_FAILED` reason, a joined future, a
//! `HostError`) stays with the caller.
//!
//! A digest collision (two ids sharing 128 bits of a keyed pseudorandom
//! function, about n²/2¹²⁹ for n ids) could only make a fresh id count as
//! a repeat of another; it can never make an id execute twice.

use std::collections::VecDeque;

use hashbrown::HashTable;

use crate::hash::{IdDigest, IdDigester};

/// What is remembered of one id: its digest, the completion number and the
/// caller's envelope value (32 bytes with `E = u64`).
struct Record<E> {
    id: IdDigest,
    /// [`PENDING`], or the id's number in the order of completions (its
    /// result is kept while that number is among the last `max_results`).
    completion: u64,
    envelope: E,
}

/// [`Record::completion`] of an id not completed yet.
const PENDING: u64 = u64::MAX;

/// The state of a known id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Status<'a, R> {
    /// Admitted, not completed.
    Pending,
    /// Completed; its result is still kept.
    Completed(&'a R),
    /// Completed; its result was evicted (the id stays known).
    Forgotten,
}

/// A known id: the envelope value it was admitted with and its state.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Known<'a, E, R> {
    /// The envelope value given to [`IdLedger::admit`] the first time.
    pub(crate) envelope: &'a E,
    /// Pending, completed with its result, or completed and forgotten.
    pub(crate) status: Status<'a, R>,
}

/// The answer of [`IdLedger::admit`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission<'a, E, R> {
    /// A new id, now recorded as pending.
    Admitted,
    /// The id was admitted before; nothing changed.
    Known(Known<'a, E, R>),
    /// A new id while `max_ids` ids are held; it was not recorded.
    Refused,
}

/// Every id admitted (as keyed digests) with its envelope value `E`, and
/// the results `R` of the last completions.
pub(crate) struct IdLedger<E, R> {
    table: HashTable<Record<E>>,
    digester: IdDigester,
    /// The results of the last completions, oldest first: the result of
    /// completion number `n` is at `n - first_kept` while that is in range.
    kept: VecDeque<R>,
    /// The completion number of `kept[0]` (the next completion's number is
    /// `first_kept + kept.len()`).
    first_kept: u64,
    max_ids: usize,
    max_results: usize,
}

impl<E, R> IdLedger<E, R> {
    /// An empty ledger digesting ids with `digester`, holding at most
    /// `max_ids` ids and the results of the last `max_results` completions.
    pub(crate) fn new(digester: IdDigester, max_ids: usize, max_results: usize) -> Self {
        Self {
            table: HashTable::new(),
            digester,
            kept: VecDeque::new(),
            first_kept: 0,
            max_ids,
            max_results,
        }
    }

    /// The keyed digest of `id` (16 bytes whatever its length), the key of
    /// every other method.
    pub(crate) fn digest(&self, id: &str) -> IdDigest {
        self.digester.digest(id)
    }

    /// How many ids are held (pending and completed).
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    #[cfg(feature = "agent-host")]
    /// How many results are kept (at most `max_results`).
    pub(crate) fn kept_results(&self) -> usize {
        self.kept.len()
    }

    #[cfg(feature = "agent-host")]
    /// The bound of held ids.
    pub(crate) fn max_ids(&self) -> usize {
        self.max_ids
    }

    #[cfg(feature = "agent-host")]
    /// Sets the bound of held ids (ids already held stay).
    pub(crate) fn set_max_ids(&mut self, max_ids: usize) {
        self.max_ids = max_ids;
    }

    #[cfg(feature = "agent-host")]
    /// Sets how many results are kept, evicting the oldest beyond it.
    pub(crate) fn set_max_results(&mut self, max_results: usize) {
        self.max_results = max_results;
        self.evict();
    }

    /// What the ledger knows of `id`; `None` for an id never admitted.
    pub(crate) fn lookup(&self, id: IdDigest) -> Option<Known<'_, E, R>> {
        let record = self.table.find(id.table_hash(), |r| r.id == id)?;
        Some(Known {
            envelope: &record.envelope,
            status: self.status(record.completion),
        })
    }

    /// Admits `id` with `envelope`: [`Admission::Admitted`] for a new id
    /// (now pending), [`Admission::Known`] for an id admitted before
    /// (unchanged, `envelope` dropped), [`Admission::Refused`] for a new id
    /// at the `max_ids` bound.
    pub(crate) fn admit(&mut self, id: IdDigest, envelope: E) -> Admission<'_, E, R> {
        if self.lookup(id).is_none() {
            if self.table.len() >= self.max_ids {
                return Admission::Refused;
            }
            let record = Record {
                id,
                completion: PENDING,
                envelope,
            };
            self.table
                .insert_unique(id.table_hash(), record, |r| r.id.table_hash());
            return Admission::Admitted;
        }
        // Known: looked up again so the answer borrows `self` only here.
        self.lookup(id).map_or(Admission::Refused, Admission::Known)
    }

    /// Completes pending `id` with `result`, evicting the oldest kept result
    /// beyond `max_results`. Returns `false` (and drops `result`) when `id`
    /// is unknown or already completed: the first result stays.
    pub(crate) fn complete(&mut self, id: IdDigest, result: R) -> bool {
        let number = self.first_kept + self.kept.len() as u64;
        let Some(record) = self.table.find_mut(id.table_hash(), |r| r.id == id) else {
            return false;
        };
        if record.completion != PENDING {
            return false;
        }
        record.completion = number;
        self.kept.push_back(result);
        self.evict();
        true
    }

    /// Forgets every id and result (the owner's state is discarded: an
    /// expired or disposed session).
    pub(crate) fn clear(&mut self) {
        self.table.clear();
        self.first_kept += self.kept.len() as u64;
        self.kept.clear();
    }

    fn status(&self, completion: u64) -> Status<'_, R> {
        if completion == PENDING {
            return Status::Pending;
        }
        completion
            .checked_sub(self.first_kept)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.kept.get(i))
            .map_or(Status::Forgotten, Status::Completed)
    }

    fn evict(&mut self) {
        while self.kept.len() > self.max_results {
            self.kept.pop_front();
            self.first_kept += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Ledger = IdLedger<u64, String>;

    fn ledger(max_ids: usize, max_results: usize) -> Ledger {
        IdLedger::new(IdDigester::new(&[7; 32]), max_ids, max_results)
    }

    /// `(envelope, status)` of `id` as plain values.
    fn state(l: &Ledger, id: &str) -> Option<(u64, String)> {
        l.lookup(l.digest(id)).map(|k| {
            let status = match k.status {
                Status::Pending => "pending".to_string(),
                Status::Completed(r) => format!("completed {r}"),
                Status::Forgotten => "forgotten".to_string(),
            };
            (*k.envelope, status)
        })
    }

    fn admit(l: &mut Ledger, id: &str, envelope: u64) -> String {
        let d = l.digest(id);
        match l.admit(d, envelope) {
            Admission::Admitted => "admitted".into(),
            Admission::Refused => "refused".into(),
            Admission::Known(k) => match k.status {
                Status::Pending => format!("pending {}", k.envelope),
                Status::Completed(r) => format!("completed {} {r}", k.envelope),
                Status::Forgotten => format!("forgotten {}", k.envelope),
            },
        }
    }

    #[test]
    fn a_new_id_is_admitted_and_a_repeat_is_pending_with_the_first_envelope() {
        let mut l = ledger(10, 10);
        assert_eq!(state(&l, "a"), None);
        assert_eq!(admit(&mut l, "a", 1), "admitted");
        assert_eq!(
            admit(&mut l, "a", 2),
            "pending 1",
            "the first envelope stays"
        );
        assert_eq!(state(&l, "a"), Some((1, "pending".into())));
        assert_eq!((l.len(), l.kept_results()), (1, 0));
    }

    #[test]
    fn a_repeat_of_a_completed_id_answers_its_result() {
        let mut l = ledger(10, 10);
        admit(&mut l, "a", 1);
        assert!(l.complete(l.digest("a"), "A".into()));
        assert_eq!(admit(&mut l, "a", 1), "completed 1 A");
        assert_eq!(state(&l, "a"), Some((1, "completed A".into())));
        assert_eq!((l.len(), l.kept_results()), (1, 1));
    }

    #[test]
    fn a_second_completion_of_one_id_is_ignored() {
        let mut l = ledger(10, 10);
        admit(&mut l, "a", 1);
        assert!(l.complete(l.digest("a"), "A".into()));
        assert!(!l.complete(l.digest("a"), "other".into()));
        assert!(!l.complete(l.digest("never"), "x".into()), "unknown id");
        assert_eq!(admit(&mut l, "a", 1), "completed 1 A");
        assert_eq!(l.kept_results(), 1);
    }

    #[test]
    fn the_oldest_result_is_evicted_and_its_id_stays_known() {
        let mut l = ledger(10, 2);
        for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
            admit(&mut l, id, i as u64);
            l.complete(l.digest(id), id.to_uppercase());
        }
        assert_eq!(admit(&mut l, "a", 0), "forgotten 0");
        assert_eq!(admit(&mut l, "b", 1), "completed 1 B");
        assert_eq!(admit(&mut l, "c", 2), "completed 2 C");
        assert_eq!((l.len(), l.kept_results()), (3, 2));
        l.set_max_results(1);
        assert_eq!(admit(&mut l, "b", 1), "forgotten 1");
        assert_eq!(l.kept_results(), 1);
    }

    #[test]
    fn with_no_results_kept_a_completed_id_is_forgotten() {
        let mut l = ledger(10, 0);
        admit(&mut l, "a", 1);
        assert!(l.complete(l.digest("a"), "A".into()));
        assert_eq!(admit(&mut l, "a", 1), "forgotten 1");
        assert_eq!(l.kept_results(), 0);
    }

    #[test]
    fn new_ids_beyond_the_bound_are_refused_known_ones_still_answered() {
        let mut l = ledger(2, 1);
        assert_eq!(admit(&mut l, "a", 1), "admitted");
        assert_eq!(admit(&mut l, "b", 2), "admitted");
        assert_eq!(admit(&mut l, "c", 3), "refused");
        assert_eq!(l.len(), 2, "a refused id is not held");
        assert_eq!(state(&l, "c"), None);
        assert_eq!(admit(&mut l, "a", 9), "pending 1");
        l.complete(l.digest("a"), "A".into());
        l.complete(l.digest("b"), "B".into());
        assert_eq!(admit(&mut l, "a", 1), "forgotten 1");
        assert_eq!(admit(&mut l, "b", 2), "completed 2 B");
        assert_eq!(admit(&mut l, "c", 3), "refused");
        l.set_max_ids(3);
        assert_eq!(admit(&mut l, "c", 3), "admitted");
        assert_eq!(l.max_ids(), 3);
    }

    #[test]
    fn ids_survive_the_tables_growth() {
        let mut l = ledger(usize::MAX, 2);
        for i in 0..5_000u64 {
            assert_eq!(admit(&mut l, &format!("inv-{i}"), i), "admitted");
        }
        for i in 0..5_000u64 {
            assert!(l.complete(l.digest(&format!("inv-{i}")), format!("r{i}")));
        }
        assert_eq!(admit(&mut l, "inv-17", 17), "forgotten 17");
        assert_eq!(admit(&mut l, "inv-4999", 4_999), "completed 4999 r4999");
        assert_eq!(admit(&mut l, "inv-5000", 1), "admitted");
        assert_eq!((l.len(), l.kept_results()), (5_001, 2));
    }

    #[test]
    fn clear_forgets_every_id_and_result() {
        let mut l = ledger(2, 2);
        admit(&mut l, "a", 1);
        admit(&mut l, "b", 2);
        l.complete(l.digest("a"), "A".into());
        l.clear();
        assert_eq!((l.len(), l.kept_results()), (0, 0));
        assert_eq!(state(&l, "a"), None);
        assert_eq!(admit(&mut l, "c", 3), "admitted");
        assert!(l.complete(l.digest("c"), "C".into()));
        assert_eq!(admit(&mut l, "c", 3), "completed 3 C");
    }

    #[test]
    fn an_id_costs_a_16_byte_digest_and_8_bytes_beside_its_envelope() {
        assert_eq!(std::mem::size_of::<IdDigest>(), 16);
        assert_eq!(std::mem::size_of::<Record<u64>>(), 32);
        assert_eq!(std::mem::size_of::<Record<()>>(), 24);
        assert_eq!(std::mem::size_of::<Record<[u8; 32]>>(), 56);
        let mut l = ledger(10, 10);
        admit(&mut l, &"x".repeat(10_000), 1);
        assert_eq!(admit(&mut l, &"x".repeat(10_001), 1), "admitted");
    }
}
