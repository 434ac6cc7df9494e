//! [`AgUiLimits`]: every size, count and wait of an AG-UI client, with
//! documented defaults (`docs/limits.md`, "AG-UI client").

use std::time::Duration;

/// The bounds of [`super::AgUiAgent`]. Defaults:
///
/// | field | default | at the limit |
/// |---|---|---|
/// | `max_response_bytes` | 8 MiB per run | [`super::AgUiError::TooLarge`], the request aborted |
/// | `max_event_bytes` | 1 MiB per event | `TooLarge` |
/// | `max_events` | 10,000 per run | `TooLarge` |
/// | `max_text_bytes` | 256 KiB of assistant text per run | `TooLarge` |
/// | `max_tool_calls` | 32 per run | `TooLarge` |
/// | `max_arguments_bytes` | 245,760 per call ([`crate::export::MAX_ARGUMENTS_BYTES`]) | `TooLarge` |
/// | `max_runs_per_turn` | 8 | [`super::AgUiError::TooManyRuns`] |
/// | `max_thread_messages` | 400 | the oldest messages leave the thread (an assistant message with its tool messages) |
/// | `max_thread_bytes` | 2 MiB | the same |
/// | `max_pending_approvals` | 64 | the oldest is forgotten |
/// | `run_timeout` | 120 s per run | [`super::AgUiError::Timeout`], the request aborted |
/// | `idle_timeout` | 60 s without a byte | `Timeout` |
/// | `max_error_body_bytes` | 4 KiB of a non-2xx body kept | the rest is not read |
///
/// A run over a limit changes nothing in the thread: none of its tool
/// calls runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgUiLimits {
    /// Largest body of one run's response, in bytes.
    pub max_response_bytes: usize,
    /// Largest single event (its SSE `data`), in bytes.
    pub max_event_bytes: usize,
    /// Most events in one run.
    pub max_events: usize,
    /// Most assistant text in one run, in bytes.
    pub max_text_bytes: usize,
    /// Most tool calls in one run.
    pub max_tool_calls: usize,
    /// Longest arguments text of one tool call, in bytes.
    pub max_arguments_bytes: usize,
    /// Most runs in one turn (a run per round of tool results).
    pub max_runs_per_turn: usize,
    /// Most messages kept in the thread.
    pub max_thread_messages: usize,
    /// Most bytes of text and arguments kept in the thread.
    pub max_thread_bytes: usize,
    /// Most server approvals waiting for their outcome.
    pub max_pending_approvals: usize,
    /// Longest run, from the request to the stream's end.
    pub run_timeout: Duration,
    /// Longest wait for the next bytes of a response.
    pub idle_timeout: Duration,
    /// Bytes of a refused (non-2xx) response body kept for the error.
    pub max_error_body_bytes: usize,
}

impl Default for AgUiLimits {
    fn default() -> Self {
        Self {
            max_response_bytes: 8 * 1024 * 1024,
            max_event_bytes: 1024 * 1024,
            max_events: 10_000,
            max_text_bytes: 256 * 1024,
            max_tool_calls: 32,
            max_arguments_bytes: crate::export::MAX_ARGUMENTS_BYTES,
            max_runs_per_turn: 8,
            max_thread_messages: 400,
            max_thread_bytes: 2 * 1024 * 1024,
            max_pending_approvals: 64,
            run_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(60),
            max_error_body_bytes: 4096,
        }
    }
}

impl AgUiLimits {
    /// These limits with another [`Self::max_response_bytes`].
    #[must_use]
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// These limits with another [`Self::max_event_bytes`].
    #[must_use]
    pub fn with_max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// These limits with another [`Self::max_tool_calls`].
    #[must_use]
    pub fn with_max_tool_calls(mut self, count: usize) -> Self {
        self.max_tool_calls = count;
        self
    }

    /// These limits with another [`Self::max_runs_per_turn`].
    #[must_use]
    pub fn with_max_runs_per_turn(mut self, count: usize) -> Self {
        self.max_runs_per_turn = count;
        self
    }

    /// These limits with another [`Self::run_timeout`].
    #[must_use]
    pub fn with_run_timeout(mut self, timeout: Duration) -> Self {
        self.run_timeout = timeout;
        self
    }

    /// These limits with another [`Self::idle_timeout`].
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }
}
