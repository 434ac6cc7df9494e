//! What bounds one oRPC call: [`ClientLimits`] (response size, connect and
//! total timeouts, with documented defaults) and [`LimitedBody`], the
//! transport-independent reader that enforces the size cap while a body
//! arrives chunk by chunk.
//!
//! Every transport applies the same limits so that no server can hold a
//! call open forever or make the client buffer an unbounded answer:
//! [`crate::bridge::http::HttpOrpcClient`] takes them at construction, and
//! a browser transport over `fetch` reads its `ReadableStream` through a
//! [`LimitedBody`] and races the call against [`ClientLimits::timeout`].
//! A transport never follows redirects: a 3xx answer is
//! [`OrpcCallError::Redirect`] (see `docs/bridges.md`, "Limits").
//!
//! This module is in the default features and builds for
//! `wasm32-unknown-unknown` (no timers of its own: the transport supplies
//! them).

use std::time::Duration;

use crate::bridge::client::OrpcCallError;

/// Default [`ClientLimits::max_response_bytes`]: 8 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// Default [`ClientLimits::connect_timeout`]: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default [`ClientLimits::timeout`]: 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The bounds a transport puts on every call (`docs/bridges.md`,
/// "Limits"). `ClientLimits::default()` is [`DEFAULT_MAX_RESPONSE_BYTES`]
/// (8 MiB), [`DEFAULT_CONNECT_TIMEOUT`] (10 s) and [`DEFAULT_TIMEOUT`]
/// (30 s); change one with the `with_*` methods:
///
/// ```
/// # use std::time::Duration;
/// # use surface_runtime::bridge::ClientLimits;
/// let limits = ClientLimits::default()
///     .with_max_response_bytes(32 * 1024 * 1024)
///     .with_timeout(Duration::from_secs(120));
/// assert_eq!(limits.connect_timeout, Duration::from_secs(10));
/// ```
///
/// These bounds hold whether or not the registry has a `Timer`: without
/// one, [`ClientLimits::timeout`] is what ends a call to a server that
/// never answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ClientLimits {
    /// Largest response body, in bytes, the transport reads. A
    /// `Content-Length` above it is refused before any body byte is read;
    /// a body that grows past it while streaming is refused at the chunk
    /// that crosses it. Either way the call fails with
    /// [`OrpcCallError::ResponseTooLarge`] (agent: `EXECUTION_FAILED`).
    pub max_response_bytes: usize,
    /// Longest wait for the connection to be established (TCP and TLS).
    /// At the limit: [`OrpcCallError::Connect`] — nothing was sent
    /// (agent: `EXECUTION_FAILED`, retry `yes`). Transports that cannot
    /// tell connecting apart from the rest (`fetch`) apply only
    /// [`Self::timeout`].
    pub connect_timeout: Duration,
    /// Longest time for the whole call: connecting, sending, the response
    /// head and the complete body (a server that trickles bytes forever is
    /// cut off here too). At the limit: [`OrpcCallError::Timeout`] — the
    /// request may have been sent (agent: `TIMEOUT`; the governed bridge
    /// reports `DOMAIN_OUTCOME_UNKNOWN`).
    pub timeout: Duration,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl ClientLimits {
    /// The documented defaults (8 MiB, 10 s, 30 s).
    pub const DEFAULT: ClientLimits = ClientLimits {
        max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        timeout: DEFAULT_TIMEOUT,
    };

    /// Sets [`Self::max_response_bytes`].
    #[must_use]
    pub const fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Sets [`Self::connect_timeout`].
    #[must_use]
    pub const fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`Self::timeout`].
    #[must_use]
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A response body read incrementally under a byte cap: the one place
/// where every transport enforces [`ClientLimits::max_response_bytes`].
///
/// Memory stays within the cap: the buffer never grows past `limit`
/// bytes, and a chunk that would cross it is refused before it is copied.
///
/// ```
/// # use surface_runtime::bridge::{LimitedBody, OrpcCallError};
/// let mut body = LimitedBody::new(8, 200, None)?;
/// body.push(b"{\"json\"")?;
/// let err = body.push(b":1}").unwrap_err();
/// assert!(matches!(err, OrpcCallError::ResponseTooLarge { limit: 8, .. }));
/// # Ok::<(), OrpcCallError>(())
/// ```
#[derive(Debug)]
pub struct LimitedBody {
    limit: usize,
    status: u16,
    declared_length: Option<u64>,
    bytes: Vec<u8>,
}

impl LimitedBody {
    /// Starts reading the body of a response with HTTP `status` under a cap
    /// of `limit` bytes. `declared_length` is the response's
    /// `Content-Length`, when known.
    ///
    /// # Errors
    /// [`OrpcCallError::ResponseTooLarge`] at once when `declared_length`
    /// exceeds `limit`: read nothing, drop the response.
    pub fn new(
        limit: usize,
        status: u16,
        declared_length: Option<u64>,
    ) -> Result<Self, OrpcCallError> {
        let mut body = Self {
            limit,
            status,
            declared_length,
            bytes: Vec::new(),
        };
        if let Some(declared) = declared_length {
            match usize::try_from(declared) {
                Ok(declared) if declared <= limit => body.bytes.reserve_exact(declared),
                _ => return Err(body.too_large()),
            }
        }
        Ok(body)
    }

    /// Appends one chunk.
    ///
    /// # Errors
    /// [`OrpcCallError::ResponseTooLarge`] when the body would exceed the
    /// cap; the chunk is not copied. Stop reading and drop the response.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), OrpcCallError> {
        let needed = match self.bytes.len().checked_add(chunk.len()) {
            Some(needed) if needed <= self.limit => needed,
            _ => return Err(self.too_large()),
        };
        if needed > self.bytes.capacity() {
            // Double, but never past the cap: peak memory stays ≤ limit.
            let target = needed
                .max(self.bytes.capacity().saturating_mul(2))
                .min(self.limit);
            self.bytes.reserve_exact(target - self.bytes.len());
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// Bytes read so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether no byte was read yet.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The complete body.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    fn too_large(&self) -> OrpcCallError {
        OrpcCallError::ResponseTooLarge {
            status: self.status,
            limit: self.limit,
            declared_length: self.declared_length,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_limits_defaults_are_the_documented_ones() {
        let limits = ClientLimits::default();
        assert_eq!(limits.max_response_bytes, 8 * 1024 * 1024);
        assert_eq!(limits.connect_timeout, Duration::from_secs(10));
        assert_eq!(limits.timeout, Duration::from_secs(30));
        let changed = limits
            .with_max_response_bytes(1)
            .with_connect_timeout(Duration::from_millis(2))
            .with_timeout(Duration::from_millis(3));
        assert_eq!(
            (
                changed.max_response_bytes,
                changed.connect_timeout,
                changed.timeout
            ),
            (1, Duration::from_millis(2), Duration::from_millis(3))
        );
    }

    #[test]
    fn limited_body_accepts_exactly_the_cap_and_refuses_one_byte_more() {
        let mut body = LimitedBody::new(10, 200, None).unwrap();
        body.push(b"01234").unwrap();
        body.push(b"").unwrap();
        body.push(b"56789").unwrap();
        assert_eq!(body.len(), 10);
        assert_eq!(
            body.push(b"x").unwrap_err(),
            OrpcCallError::ResponseTooLarge {
                status: 200,
                limit: 10,
                declared_length: None
            }
        );
        assert_eq!(body.into_bytes(), b"0123456789");
    }

    #[test]
    fn limited_body_refuses_a_declared_length_over_the_cap_before_reading() {
        assert_eq!(
            LimitedBody::new(10, 502, Some(11)).unwrap_err(),
            OrpcCallError::ResponseTooLarge {
                status: 502,
                limit: 10,
                declared_length: Some(11)
            }
        );
        assert!(LimitedBody::new(10, 200, Some(u64::MAX)).is_err());
        let body = LimitedBody::new(10, 200, Some(10)).unwrap();
        assert!(body.is_empty());
    }

    #[test]
    fn limited_body_never_allocates_past_the_cap() {
        let limit = 1000;
        let mut body = LimitedBody::new(limit, 200, None).unwrap();
        for _ in 0..99 {
            body.push(&[b'x'; 10]).unwrap();
            assert!(body.bytes.capacity() <= limit);
        }
        // A chunk that crosses the cap is refused without being copied.
        assert!(body.push(&[b'x'; 11]).is_err());
        assert_eq!(body.len(), 990);
        assert!(body.bytes.capacity() <= limit);
        // A declared length reserves at most the cap.
        let body = LimitedBody::new(limit, 200, Some(1000)).unwrap();
        assert!(body.bytes.capacity() <= limit);
    }
}
