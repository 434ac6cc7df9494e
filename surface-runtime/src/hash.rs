//! The runtime's hashing, in one place:
//!
//! * [`FastHash`] — the hasher of the registry's hot maps (capability
//!   index), foldhash with a per-map random seed;
//! * [`FoldHasher`] — a seeded 64-bit hasher for envelope fingerprints
//!   (does a repeated invocation id carry the identical call?);
//! * [`IdDigest`] / [`IdDigester`] — fixed-size keyed digests of invocation
//!   ids (128 bits of HMAC-SHA-256), what the registry's admission and the
//!   agent host remember of every id they saw.

use std::hash::Hasher;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The hasher of the registry's hot maps: foldhash with a per-map random
/// seed (an index lookup went from 208 to 26 instructions under callgrind,
/// against std's SipHash).
pub(crate) type FastHash = foldhash::fast::RandomState;

/// A fast multiply-rotate hasher (FxHash-style) with a seed, for envelope
/// fingerprints. It is not collision-resistant against an adversary; a
/// collision could only make a *reused* invocation id replay its own
/// earlier result instead of answering `invocation-id-reused` — it can
/// never make an id execute twice.
pub(crate) struct FoldHasher(u64);

impl FoldHasher {
    /// A hasher starting from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        FoldHasher(seed)
    }
}

impl Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        // Final avalanche (splitmix64).
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

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

#[cfg(test)]
mod tests {
    use std::hash::Hash;

    use serde_json::{json, Value};

    use super::*;

    #[test]
    fn fold_hasher_distinguishes_inputs_and_seed_values() {
        let hash = |seed: u64, v: &Value| {
            let mut h = FoldHasher::new(seed);
            v.hash(&mut h);
            h.finish()
        };
        let a = json!({"ids": ["a", "b"]});
        let b = json!({"ids": ["b", "a"]});
        assert_ne!(hash(1, &a), hash(1, &b));
        assert_ne!(hash(1, &a), hash(2, &a));
        assert_eq!(hash(1, &a), hash(1, &a.clone()));
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
        assert_ne!(
            one.digest(&"x".repeat(10_000)),
            one.digest(&"x".repeat(10_001))
        );
    }
}
