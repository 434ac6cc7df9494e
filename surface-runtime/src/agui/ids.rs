//! Fresh ids for messages, runs, threads and invocations.

/// A fresh id: `prefix-` and 24 hex digits (96 random bits).
pub(crate) fn fresh_id(prefix: &str) -> String {
    let mut bytes = [0u8; 12];
    let _ = getrandom::fill(&mut bytes);
    format!("{prefix}-{}", hex::encode(bytes))
}
