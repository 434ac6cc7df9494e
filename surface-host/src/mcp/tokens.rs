//! The bearer-token check in front of the store: a token that is not 64
//! lowercase hex digits (what [`McpServer::issue_token`](super::McpServer::issue_token)
//! issues) is refused without a store read, and a well-formed token the
//! store does not know is remembered as unknown for a while
//! ([`UNKNOWN_TOKEN_TTL`](super::UNKNOWN_TOKEN_TTL), at most
//! [`UNKNOWN_TOKEN_CACHE_ENTRIES`](super::UNKNOWN_TOKEN_CACHE_ENTRIES)), so
//! repeating it does not reach the database.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::TokenDigest;

/// Whether `token` has the shape of an issued token: 64 lowercase hex
/// digits.
pub(super) fn is_well_formed(token: &str) -> bool {
    token.len() == 64
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Digests of well-formed tokens the store did not know, each remembered
/// for `ttl` from its first miss; the oldest is forgotten first beyond
/// `capacity`.
pub(super) struct UnknownTokens {
    capacity: usize,
    ttl: Duration,
    since: HashMap<TokenDigest, Instant>,
    order: VecDeque<TokenDigest>,
}

impl UnknownTokens {
    pub(super) fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            capacity,
            ttl,
            since: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Whether `digest` missed within the last `ttl`.
    pub(super) fn contains(&mut self, digest: &TokenDigest, now: Instant) -> bool {
        match self.since.get(digest) {
            Some(at) if now.saturating_duration_since(*at) < self.ttl => true,
            Some(_) => {
                self.forget(digest);
                false
            }
            None => false,
        }
    }

    /// Remembers a miss of `digest` at `now`.
    pub(super) fn insert(&mut self, digest: TokenDigest, now: Instant) {
        if self.capacity == 0 || self.since.contains_key(&digest) {
            return;
        }
        while self.since.len() >= self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.since.remove(&oldest);
        }
        self.since.insert(digest, now);
        self.order.push_back(digest);
    }

    /// Forgets `digest` (a token just issued here).
    pub(super) fn forget(&mut self, digest: &TokenDigest) {
        if self.since.remove(digest).is_some() {
            self.order.retain(|d| d != digest);
        }
    }

    /// How many digests are remembered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.since.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_64_lowercase_hex_digits_are_well_formed() {
        assert!(is_well_formed(&"0123456789abcdef".repeat(4)));
        assert!(!is_well_formed(&"0123456789ABCDEF".repeat(4)));
        assert!(!is_well_formed(&"a".repeat(63)));
        assert!(!is_well_formed(&"a".repeat(65)));
        assert!(!is_well_formed(&format!("{}g", "a".repeat(63))));
        assert!(!is_well_formed("not-a-token"));
        assert!(!is_well_formed(""));
    }

    #[test]
    fn misses_are_remembered_for_the_ttl_and_within_the_capacity() {
        let start = Instant::now();
        let mut unknown = UnknownTokens::new(2, Duration::from_secs(10));
        unknown.insert([1; 32], start);
        unknown.insert([2; 32], start);
        assert!(unknown.contains(&[1; 32], start + Duration::from_secs(9)));
        assert!(!unknown.contains(&[1; 32], start + Duration::from_secs(10)));
        assert_eq!(unknown.len(), 1);
        unknown.insert([3; 32], start);
        unknown.insert([4; 32], start);
        assert_eq!(unknown.len(), 2);
        assert!(!unknown.contains(&[2; 32], start), "the oldest went first");
        assert!(unknown.contains(&[3; 32], start));
        assert!(unknown.contains(&[4; 32], start));
        unknown.forget(&[4; 32]);
        assert!(!unknown.contains(&[4; 32], start));
    }
}
