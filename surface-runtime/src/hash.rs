//! The runtime's hashing, in one place:
//!
//! * [`FastHash`] — the hasher of the registry's hot maps (capability
//!   index), foldhash with a per-map random seed;
//! * [`Fingerprint`] — a seeded 64-bit hash of envelopes (does a repeated
//!   invocation id carry the identical call?);
//! * [`IdDigest`] / [`IdDigester`] — fixed-size keyed digests of invocation
//!   ids (SipHash-2-4 with 128-bit output under a 128-bit secret key), what
//!   the id ledger ([`crate::ledger::IdLedger`]) of the registry, the
//!   browser session and the agent host remembers of every id;
//! * [`sha256`] / [`Sha256Hasher`] — SHA-256 (the effective-input digests
//!   confirmations are bound to, the session's envelope digests, the
//!   host's result digests);
//! * [`HmacSha256`] — HMAC-SHA-256 under the registry's secret (derived
//!   keys, unguessable confirmation and surface ids).
//!
//! No other module of the runtime names `sha2`, `hmac` or `siphasher`, and
//! the agent host (`surface-host`: session-token and tool-list digests)
//! hashes through the one public function here, [`sha256`].

use std::hash::{BuildHasher, Hash, Hasher};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use siphasher::sip128::{Hasher128, SipHasher24};

/// The hasher of the registry's hot maps: foldhash with a per-map random
/// seed (an index lookup went from 208 to 26 instructions under callgrind,
/// against std's SipHash).
pub(crate) type FastHash = foldhash::fast::RandomState;

/// A seeded 64-bit hash of envelopes (foldhash's quality variant, seed
/// derived from the registry's secret). Not collision-resistant against
/// an adversary who knew the seed; a collision could only make a *reused*
/// invocation id replay its own earlier result instead of answering
/// `id-reused-with-different-request` — it can never make an id execute twice.
#[derive(Clone)]
pub(crate) struct Fingerprint(foldhash::quality::FixedState);

impl Fingerprint {
    /// Fingerprints under `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Fingerprint(foldhash::quality::FixedState::with_seed(seed))
    }

    /// A hasher starting from the seed: equal values hashed in the same
    /// order give equal results.
    pub(crate) fn hasher(&self) -> impl Hasher {
        self.0.build_hasher()
    }

    /// The fingerprint of one value.
    #[cfg(test)]
    pub(crate) fn of(&self, value: &impl Hash) -> u64 {
        let mut h = self.hasher();
        value.hash(&mut h);
        h.finish()
    }
}

/// A fixed-size keyed digest of an invocation id (SipHash-2-4, 128-bit
/// output, 16 bytes whatever the id's length): what the id ledger of the
/// registry, the browser session and the agent host remembers of an id.
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
///
/// SipHash is a keyed pseudorandom function: without the key, two ids
/// with the same digest cannot be found faster than by trying about 2⁶⁴
/// of them, and the registry, session and host admit at most a few million ids
/// in their lifetime. It costs about a tenth of an HMAC-SHA-256 of the
/// same id.
#[derive(Clone)]
pub(crate) struct IdDigester {
    /// The keyed state (copied per digest).
    keyed: SipHasher24,
}

impl IdDigester {
    /// A digester keyed with `key` (any length; its 128-bit SipHash key
    /// is derived from it with HMAC-SHA-256, once).
    pub(crate) fn new(key: &[u8]) -> Self {
        let mut mac = HmacSha256::new(key);
        mac.update(b"agent-surface invocation-id digest");
        let bytes = mac.finish();
        let mut sip_key = [0u8; 16];
        sip_key.copy_from_slice(&bytes[..16]);
        Self {
            keyed: SipHasher24::new_with_key(&sip_key),
        }
    }

    /// A digester with a fresh random key; when the platform has no random
    /// source the key is fixed, which keeps the digest's spread but lets
    /// colliding ids be searched for offline.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        // A failure leaves the fixed all-zero key (see above).
        let _ = getrandom::fill(&mut key);
        Self::new(&key)
    }

    /// The digest of `id`.
    pub(crate) fn digest(&self, id: &str) -> IdDigest {
        let mut h = self.keyed;
        h.write(id.as_bytes());
        let d = h.finish128();
        IdDigest([d.h1, d.h2])
    }
}

/// The SHA-256 of `bytes` (32 bytes).
///
/// ```
/// let d = surface_runtime::hash::sha256(b"abc");
/// assert_eq!(d[..4], [0xba, 0x78, 0x16, 0xbf]);
/// ```
#[must_use]
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// An incremental SHA-256; also an [`std::io::Write`] sink, so a value can
/// be serialized straight into it (writing never fails).
#[cfg(feature = "agent-host")]
#[derive(Clone, Default)]
pub(crate) struct Sha256Hasher(Sha256);

#[cfg(feature = "agent-host")]
impl Sha256Hasher {
    /// A hasher with nothing hashed yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends `bytes`.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The SHA-256 of everything appended (32 bytes).
    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

#[cfg(feature = "agent-host")]
impl std::io::Write for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An HMAC-SHA-256 in progress under one key.
#[derive(Clone)]
pub(crate) struct HmacSha256(Hmac<Sha256>);

impl HmacSha256 {
    /// A MAC keyed with `key` (HMAC accepts any key length).
    pub(crate) fn new(key: &[u8]) -> Self {
        // HMAC accepts keys of any length; this never fails.
        Self(<Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length"))
    }

    /// Appends `bytes` to the message.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The 32-byte tag of the message.
    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into_bytes().into()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    #[test]
    fn fingerprints_distinguish_inputs_and_seed_values() {
        let hash = |seed: u64, v: &Value| Fingerprint::new(seed).of(v);
        let a = json!({"ids": ["a", "b"]});
        let b = json!({"ids": ["b", "a"]});
        assert_ne!(hash(1, &a), hash(1, &b));
        assert_ne!(hash(1, &a), hash(2, &a));
        assert_eq!(hash(1, &a), hash(1, &a.clone()));
        // String boundaries count: ["ab", "c"] is not ["a", "bc"].
        assert_ne!(hash(1, &json!(["ab", "c"])), hash(1, &json!(["a", "bc"])));
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

    #[test]
    fn sha256_matches_the_fips_180_vector_in_one_piece_and_incrementally() {
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(hex::encode(sha256(b"abc")), abc);
        let mut h = Sha256Hasher::new();
        h.update(b"a");
        std::io::Write::write_all(&mut h, b"bc").unwrap();
        assert_eq!(hex::encode(h.finish()), abc);
    }

    #[test]
    fn hmac_sha256_matches_rfc_4231_case_2() {
        let tag = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let mac = |data: &[u8]| {
            let mut m = HmacSha256::new(b"Jefe");
            m.update(data);
            m
        };
        assert_eq!(
            hex::encode(mac(b"what do ya want for nothing?").finish()),
            tag
        );
        assert_ne!(
            hex::encode(mac(b"what do ya want for nothing!").finish()),
            tag
        );
    }
}
