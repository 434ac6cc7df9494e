//! A bounded, incremental decoder of `text/event-stream` bodies (the
//! WHATWG "server-sent events" parsing rules), for AG-UI's SSE encoding.
//!
//! Bytes go in as they arrive ([`SseDecoder::push`]); each complete event's
//! `data` (its `data:` lines joined with `\n`) comes out. Lines end with
//! LF, CRLF or CR; a leading byte-order mark is skipped; comments (`:`)
//! and the `event`, `id` and `retry` fields are read and ignored (AG-UI
//! puts the event's type inside its JSON). A line or an event's data over
//! the limit is an error before more than the limit is buffered, and text
//! that is not UTF-8 is an error: the decoder never grows without bound
//! and never guesses.

/// Why a stream could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event's data (or one line) is longer than the limit.
    #[error("an event is longer than {limit} bytes")]
    EventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A line is not UTF-8.
    #[error("the stream is not UTF-8 text (at byte {offset})")]
    NotUtf8 {
        /// Offset in the stream of the line's first byte.
        offset: u64,
    },
}

/// The decoder (module docs).
#[derive(Debug)]
pub struct SseDecoder {
    limit: usize,
    line: Vec<u8>,
    data: String,
    has_data: bool,
    /// The previous byte was CR (a following LF belongs to the same end).
    after_cr: bool,
    /// Bytes taken so far (for error offsets).
    offset: u64,
    line_start: u64,
    bom_checked: bool,
    /// The first bytes, until they are known not to be a partial BOM.
    head: Vec<u8>,
}

/// UTF-8's byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseDecoder {
    /// A decoder refusing events (and lines) longer than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            line: Vec::new(),
            data: String::new(),
            has_data: false,
            after_cr: false,
            offset: 0,
            line_start: 0,
            bom_checked: false,
            head: Vec::new(),
        }
    }

    /// Takes the next bytes of the body; appends every event they complete
    /// to `events`.
    ///
    /// # Errors
    /// [`SseError`]; the decoder must not be used after one.
    pub fn push(&mut self, bytes: &[u8], events: &mut Vec<String>) -> Result<(), SseError> {
        if self.bom_checked {
            return self.push_lines(bytes, events);
        }
        self.head.extend_from_slice(bytes);
        if self.head.len() < BOM.len() && BOM.starts_with(&self.head) {
            return Ok(());
        }
        self.bom_checked = true;
        let head = std::mem::take(&mut self.head);
        let skip = if head.starts_with(BOM) { BOM.len() } else { 0 };
        self.offset = skip as u64;
        self.line_start = self.offset;
        self.push_lines(&head[skip..], events)
    }

    fn push_lines(&mut self, bytes: &[u8], events: &mut Vec<String>) -> Result<(), SseError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr && rest[0] == b'\n' {
                rest = &rest[1..];
                self.offset += 1;
                self.line_start = self.offset;
                self.after_cr = false;
                continue;
            }
            self.after_cr = false;
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.extend_line(&rest[..end])?;
                    self.after_cr = rest[end] == b'\r';
                    self.offset += end as u64 + 1;
                    rest = &rest[end + 1..];
                    self.end_line(events)?;
                    self.line_start = self.offset;
                }
                None => {
                    self.extend_line(rest)?;
                    self.offset += rest.len() as u64;
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    fn extend_line(&mut self, part: &[u8]) -> Result<(), SseError> {
        if self.line.len() + part.len() > self.limit + "data: ".len() {
            return Err(SseError::EventTooLarge { limit: self.limit });
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<String>) -> Result<(), SseError> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if self.has_data {
                events.push(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return Ok(());
        }
        let text = std::str::from_utf8(&line).map_err(|_| SseError::NotUtf8 {
            offset: self.line_start,
        })?;
        let (field, value) = match text.find(':') {
            Some(0) => return Ok(()),
            Some(i) => {
                let value = &text[i + 1..];
                (&text[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (text, ""),
        };
        if field == "data" {
            let extra = usize::from(self.has_data);
            if self.data.len() + extra + value.len() > self.limit {
                return Err(SseError::EventTooLarge { limit: self.limit });
            }
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
        Ok(())
    }

    /// Whether the body so far ended exactly at an event boundary (nothing
    /// half-received): what a complete stream looks like at its end.
    pub fn is_at_boundary(&self) -> bool {
        self.line.is_empty() && !self.has_data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]], limit: usize) -> Result<Vec<String>, SseError> {
        let mut decoder = SseDecoder::new(limit);
        let mut events = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut events)?;
        }
        Ok(events)
    }

    #[test]
    fn events_split_anywhere_decode_the_same() {
        let body = b"\xEF\xBB\xBFdata: {\"a\":1}\n\n: comment\r\nevent: x\r\ndata: one\r\ndata:two\r\rdata: 3\n\n";
        let whole = decode(&[body], 1024).unwrap();
        assert_eq!(whole, vec!["{\"a\":1}", "one\ntwo", "3"]);
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(decode(&[a, b], 1024).unwrap(), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&bytes, 1024).unwrap(), whole);
    }

    #[test]
    fn an_event_over_the_limit_is_refused_while_it_arrives() {
        let long = format!("data: {}\n\n", "x".repeat(100));
        assert_eq!(
            decode(&[long.as_bytes()], 64),
            Err(SseError::EventTooLarge { limit: 64 })
        );
        let lines = "data: 0123456789\n".repeat(10);
        assert_eq!(
            decode(&[lines.as_bytes()], 64),
            Err(SseError::EventTooLarge { limit: 64 })
        );
        let endless = vec![b'x'; 1000];
        assert_eq!(
            decode(&[&endless], 64),
            Err(SseError::EventTooLarge { limit: 64 })
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_refused_with_its_offset() {
        assert_eq!(
            decode(&[b"data: a\n\ndata: \xFF\n\n"], 64),
            Err(SseError::NotUtf8 { offset: 9 })
        );
    }
}
