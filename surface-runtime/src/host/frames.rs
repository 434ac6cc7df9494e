//! [`BrowserMessage`]: telling the browser's two kinds of message apart on
//! a transport that carries one JSON message per frame (the
//! `browser::SessionSocket` of the `browser` feature, `docs/browser.md`).

use serde::Deserialize;

use super::wire::{BrowserSurfaceAnnouncement, BrowserSurfaceResult};

/// One message a browser tab sends to the host: an announcement (it has a
/// `snapshot`) or a call's result (it has a `result`). The host sends only
/// [`BrowserSurfaceCall`](super::BrowserSurfaceCall)s.
#[derive(Clone, Debug, PartialEq)]
pub enum BrowserMessage {
    /// The tab's surface on a connection.
    Announcement(Box<BrowserSurfaceAnnouncement>),
    /// The answer to a call.
    Result(Box<BrowserSurfaceResult>),
}

impl BrowserMessage {
    /// Parses one frame. Bound the frame size in the transport before
    /// calling this (an announcement carries the whole snapshot).
    ///
    /// # Errors
    /// The serde error when the text is not JSON, is neither message, or
    /// has both `snapshot` and `result`.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        #[derive(Deserialize)]
        struct Probe {
            #[serde(default)]
            snapshot: Option<serde::de::IgnoredAny>,
            #[serde(default)]
            result: Option<serde::de::IgnoredAny>,
        }
        let probe: Probe = serde_json::from_str(text)?;
        match (probe.snapshot.is_some(), probe.result.is_some()) {
            (true, false) => Ok(Self::Announcement(Box::new(serde_json::from_str(text)?))),
            (false, true) => Ok(Self::Result(Box::new(serde_json::from_str(text)?))),
            _ => Err(serde::de::Error::custom(
                "a browser message has exactly one of `snapshot` (announcement) or `result`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_message_is_told_apart_by_snapshot_or_result() {
        let announcement = r#"{"protocolVersion":1,"identity":{"appId":"a","buildId":"b","sessionId":"s","tabId":"t"},"connectionId":"c","snapshot":{"surfaceVersion":3,"components":[],"procedures":[]}}"#;
        match BrowserMessage::from_json(announcement).unwrap() {
            BrowserMessage::Announcement(a) => {
                assert_eq!((a.connection_id.as_str(), a.snapshot.surface_version), ("c", 3));
            }
            other => panic!("{other:?}"),
        }
        let result = r#"{"protocolVersion":1,"connectionId":"c","runId":"r","toolCallId":"tc","invocationId":"i","result":{"status":"rejected","reason":"stale-surface"}}"#;
        match BrowserMessage::from_json(result).unwrap() {
            BrowserMessage::Result(r) => assert_eq!(r.invocation_id, "i"),
            other => panic!("{other:?}"),
        }
        let both = r#"{"snapshot":{},"result":{}}"#;
        let err = BrowserMessage::from_json(both).unwrap_err().to_string();
        assert!(err.contains("exactly one of"), "{err}");
        assert!(BrowserMessage::from_json("[1]").is_err());
        assert!(BrowserMessage::from_json(r#"{"x":1}"#).is_err());
    }
}
