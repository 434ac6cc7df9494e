//! [`AgUiError`]: why a turn stopped.

use std::time::Duration;

/// Characters of text another party wrote (an agent's error message, a
/// response body) kept in an [`AgUiError`]; the rest is cut.
pub const MAX_FOREIGN_TEXT_CHARS: usize = 500;

/// Why an AG-UI turn stopped before the agent finished. Text the agent or
/// its server wrote is cut to [`MAX_FOREIGN_TEXT_CHARS`] and has its
/// control characters escaped ([`foreign_text`]), so it is safe in a log
/// line or a page.
///
/// Whatever the error, the thread keeps every run that completed before
/// it; a run that failed adds nothing, and none of its tool calls ran.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgUiError {
    /// A turn is already running on this agent.
    #[error("a turn is already running on this agent; wait for it or cancel it")]
    Busy,
    /// The surface could not be exported as tools.
    #[error("the surface cannot be exported as tools: {0}")]
    Export(#[from] crate::export::ExportError),
    /// The request could not be sent or the response not read (network,
    /// DNS, refused connection, CORS, the connection cut).
    #[error("the agent at {url} could not be reached: {message}")]
    Transport {
        /// The agent URL.
        url: String,
        /// What the transport said.
        message: String,
    },
    /// The agent answered with a non-2xx status.
    #[error("the agent answered HTTP {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the body ([`foreign_text`]).
        body: String,
    },
    /// The agent answered something other than `text/event-stream` (for
    /// example protobuf, which AG-UI servers send to `Accept: */*`).
    #[error("the agent answered `{content_type}`, not an AG-UI event stream (text/event-stream)")]
    NotEventStream {
        /// The answer's content type ([`foreign_text`]).
        content_type: String,
    },
    /// A run took longer than a limit.
    #[error("the agent's run took longer than {timeout:?} ({what})")]
    Timeout {
        /// `"run"` ([`super::AgUiLimits::run_timeout`]) or `"idle"`
        /// ([`super::AgUiLimits::idle_timeout`]).
        what: &'static str,
        /// The limit.
        timeout: Duration,
    },
    /// A run's stream went over a size or count limit.
    #[error("the agent's stream is over a limit: {what} (limit {limit})")]
    TooLarge {
        /// Which limit (`"response bytes"`, `"event bytes"`, `"events"`,
        /// `"text bytes"`, `"tool calls"`, `"arguments bytes"`).
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The stream is not valid AG-UI.
    #[error("the agent's stream is malformed at event {event}: {reason}")]
    Malformed {
        /// 1-based number of the offending event (0: before the first).
        event: usize,
        /// What is wrong ([`foreign_text`] where it quotes the stream).
        reason: String,
    },
    /// The stream ended before `RUN_FINISHED` or `RUN_ERROR` (the agent
    /// crashed or the connection was cut mid-run).
    #[error("the agent's stream ended after {events} events without RUN_FINISHED; nothing of this run was kept or run")]
    StreamEnded {
        /// Events received.
        events: usize,
    },
    /// The connection broke while the run streamed (the agent's server
    /// died or the network cut it): nothing of the run was kept or run.
    #[error("the agent's stream broke after {events} events ({message}); nothing of this run was kept or run")]
    StreamBroken {
        /// Events received before it broke.
        events: usize,
        /// What the transport said ([`foreign_text`]).
        message: String,
    },
    /// The agent reported `RUN_ERROR`.
    #[error("the agent failed: {message}{}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Agent {
        /// Its message ([`foreign_text`]).
        message: String,
        /// Its code ([`foreign_text`]).
        code: Option<String>,
    },
    /// The turn needed more runs than [`super::AgUiLimits::max_runs_per_turn`].
    #[error("the turn needed more than {limit} runs; it was stopped")]
    TooManyRuns {
        /// The limit.
        limit: usize,
    },
    /// The turn was cancelled.
    #[error("the turn was cancelled")]
    Cancelled,
}

/// Text another party wrote, made safe to show and log: at most
/// [`MAX_FOREIGN_TEXT_CHARS`] characters (then `…`), control characters
/// and Unicode bidirectional and format controls escaped as `\u{…}`.
pub fn foreign_text(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_FOREIGN_TEXT_CHARS {
            out.push('…');
            break;
        }
        let format_control = matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}');
        if c.is_control() || format_control {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_text_is_cut_and_escaped() {
        assert_eq!(foreign_text("a\nb\u{202E}c"), "a\\u{a}b\\u{202e}c");
        let long = "x".repeat(MAX_FOREIGN_TEXT_CHARS + 10);
        assert_eq!(
            foreign_text(&long).chars().count(),
            MAX_FOREIGN_TEXT_CHARS + 1
        );
    }
}
