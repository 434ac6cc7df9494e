//! One run: its response read, bounded and folded into a [`RunOutput`]
//! (the assistant's text messages, its tool calls with their complete
//! arguments, the agent's own tool results and how the run ended).

use std::collections::HashMap;

use futures_util::future::{select, Either};
use futures_util::StreamExt;

use super::event::{AgUiEvent, RunError, RunOutcome};
use super::sse::{SseDecoder, SseError};
use super::transport::{is_event_stream, AgUiTransport};
use super::{foreign_text, AgUiError, AgUiLimits};
use crate::Cancellation;

/// A tool call as the stream delivered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamedCall {
    /// The agent's `toolCallId`.
    pub id: String,
    /// The tool it names.
    pub name: String,
    /// The assistant message it belongs to: the agent's
    /// `parentMessageId`, or one id per run the client made when absent.
    pub parent_message_id: String,
    /// The arguments' JSON text, the deltas concatenated.
    pub arguments: String,
    /// Whether `TOOL_CALL_END` arrived.
    pub complete: bool,
}

/// What one run produced, in stream order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// Assistant text messages: (message id, text).
    pub texts: Vec<(String, String)>,
    /// Tool calls.
    pub calls: Vec<StreamedCall>,
    /// Results the agent produced itself (`TOOL_CALL_RESULT`), by call id.
    pub agent_results: HashMap<String, String>,
    /// `RUN_FINISHED.outcome`.
    pub outcome: Option<RunOutcome>,
    /// `RUN_ERROR`.
    pub error: Option<RunError>,
    /// The last `STATE_SNAPSHOT`.
    pub state: Option<serde_json::Value>,
    /// Events received.
    pub events: usize,
    /// Assistant message ids (text messages and tool calls' parents) in
    /// the order they first appeared.
    pub message_order: Vec<String>,
    /// Bytes of every text message together.
    text_len: usize,
}

impl RunOutput {
    /// Bytes of every text message together (without the separators of
    /// [`Self::text`]).
    pub fn text_bytes(&self) -> usize {
        self.text_len
    }

    /// The text received so far, every message joined by a blank line (for
    /// a chat panel while the run streams).
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self.texts.iter().map(|(_, t)| t.as_str()).collect();
        parts.join("\n\n")
    }
}

/// Longest id or tool name accepted from the stream (`toolCallId`,
/// `toolCallName`, `messageId`, `parentMessageId`), in bytes: the export's
/// call id bound ([`crate::export::MAX_CALL_ID_BYTES`]).
pub const MAX_STREAM_ID_BYTES: usize = crate::export::MAX_CALL_ID_BYTES;

/// Folds events into a [`RunOutput`], enforcing the run's limits.
pub(crate) struct Assembler {
    limits: AgUiLimits,
    pub(crate) output: RunOutput,
    text_bytes: usize,
    /// The message a field-less `TEXT_MESSAGE_CHUNK` continues.
    open_text: Option<String>,
    /// The call a field-less `TOOL_CALL_CHUNK` continues.
    open_call: Option<String>,
    started: bool,
    finished: bool,
    /// The parent of this run's calls that name none.
    orphan_parent: Option<String>,
    /// Calls started by `TOOL_CALL_CHUNK` (no end event: complete when the
    /// run finishes).
    chunk_calls: Vec<String>,
}

impl Assembler {
    pub(crate) fn new(limits: AgUiLimits) -> Self {
        Self {
            limits,
            output: RunOutput::default(),
            text_bytes: 0,
            open_text: None,
            open_call: None,
            started: false,
            finished: false,
            orphan_parent: None,
            chunk_calls: Vec::new(),
        }
    }

    fn malformed(&self, reason: impl Into<String>) -> AgUiError {
        AgUiError::Malformed {
            event: self.output.events,
            reason: reason.into(),
        }
    }

    /// `Malformed` when an id or name from the stream is over
    /// [`MAX_STREAM_ID_BYTES`].
    fn check_ids(&self, event: &AgUiEvent) -> Result<(), AgUiError> {
        let ids: [Option<&str>; 3] = match event {
            AgUiEvent::TextMessageStart(e) => [Some(&e.message_id), None, None],
            AgUiEvent::TextMessageContent(e) | AgUiEvent::TextMessageEnd(e) => {
                [Some(&e.message_id), None, None]
            }
            AgUiEvent::TextMessageChunk(e) => [e.message_id.as_deref(), None, None],
            AgUiEvent::ToolCallStart(e) => [
                Some(&e.tool_call_id),
                Some(&e.tool_call_name),
                e.parent_message_id.as_deref(),
            ],
            AgUiEvent::ToolCallArgs(e) => [Some(&e.tool_call_id), None, None],
            AgUiEvent::ToolCallEnd(e) => [Some(&e.tool_call_id), None, None],
            AgUiEvent::ToolCallChunk(e) => [
                e.tool_call_id.as_deref(),
                e.tool_call_name.as_deref(),
                e.parent_message_id.as_deref(),
            ],
            AgUiEvent::ToolCallResult(e) => [Some(&e.tool_call_id), e.message_id.as_deref(), None],
            _ => [None, None, None],
        };
        match ids
            .into_iter()
            .flatten()
            .find(|id| id.len() > MAX_STREAM_ID_BYTES)
        {
            Some(_) => Err(self.malformed(format!(
                "a {} event has an id or tool name longer than {MAX_STREAM_ID_BYTES} bytes",
                event.event_type()
            ))),
            None => Ok(()),
        }
    }

    /// Takes one event's data; `Ok(true)` once the run ended.
    pub(crate) fn push(&mut self, data: &str) -> Result<bool, AgUiError> {
        self.output.events += 1;
        if self.output.events > self.limits.max_events {
            return Err(AgUiError::TooLarge {
                what: "events",
                limit: self.limits.max_events,
            });
        }
        let event = AgUiEvent::from_json(data).map_err(|r| self.malformed(foreign_text(&r)))?;
        if !self.started && !matches!(event, AgUiEvent::RunStarted(_) | AgUiEvent::RunError(_)) {
            return Err(self.malformed(format!(
                "the first event is {}, not RUN_STARTED",
                foreign_text(event.event_type())
            )));
        }
        self.started = true;
        self.check_ids(&event)?;
        self.apply(event)?;
        Ok(self.finished)
    }

    fn apply(&mut self, event: AgUiEvent) -> Result<(), AgUiError> {
        match event {
            AgUiEvent::RunFinished(finished) => {
                self.output.outcome = finished.outcome;
                self.finished = true;
            }
            AgUiEvent::RunError(error) => {
                self.output.error = Some(error);
                self.finished = true;
            }
            AgUiEvent::TextMessageStart(start) => self.text(Some(start.message_id), ""),
            AgUiEvent::TextMessageContent(content) | AgUiEvent::TextMessageEnd(content) => {
                self.text(Some(content.message_id), &content.delta);
            }
            AgUiEvent::TextMessageChunk(chunk) => {
                let delta = chunk.delta.unwrap_or_default();
                self.text(chunk.message_id, &delta);
            }
            AgUiEvent::ToolCallStart(start) => {
                self.start_call(
                    start.tool_call_id,
                    start.tool_call_name,
                    start.parent_message_id,
                )?;
            }
            AgUiEvent::ToolCallArgs(args) => self.arguments(&args.tool_call_id, &args.delta)?,
            AgUiEvent::ToolCallEnd(end) => self.end_call(&end.tool_call_id)?,
            AgUiEvent::ToolCallChunk(chunk) => self.call_chunk(chunk)?,
            AgUiEvent::ToolCallResult(result) => {
                self.output
                    .agent_results
                    .insert(result.tool_call_id, result.content);
            }
            AgUiEvent::StateSnapshot(state) => self.output.state = Some(state.snapshot),
            AgUiEvent::RunStarted(_) | AgUiEvent::Other { .. } => {}
        }
        self.check_text()
    }

    fn check_text(&self) -> Result<(), AgUiError> {
        if self.text_bytes > self.limits.max_text_bytes {
            return Err(AgUiError::TooLarge {
                what: "text bytes",
                limit: self.limits.max_text_bytes,
            });
        }
        Ok(())
    }

    /// Appends `delta` to message `id` (a new id opens a message; `None`
    /// continues the open one).
    fn text(&mut self, id: Option<String>, delta: &str) {
        let id = id
            .or_else(|| self.open_text.clone())
            .unwrap_or_else(|| super::ids::fresh_id("msg"));
        self.text_bytes += delta.len();
        if self.text_bytes > self.limits.max_text_bytes {
            return;
        }
        self.output.text_len += delta.len();
        match self.output.texts.iter_mut().find(|(m, _)| *m == id) {
            Some((_, text)) => text.push_str(delta),
            None => {
                self.note_message(&id);
                self.output.texts.push((id.clone(), delta.to_string()));
            }
        }
        self.open_text = Some(id);
    }

    fn start_call(
        &mut self,
        id: String,
        name: String,
        parent: Option<String>,
    ) -> Result<(), AgUiError> {
        if self.output.calls.iter().any(|c| c.id == id) {
            return Err(self.malformed(format!("tool call `{}` started twice", foreign_text(&id))));
        }
        if self.output.calls.len() >= self.limits.max_tool_calls {
            return Err(AgUiError::TooLarge {
                what: "tool calls",
                limit: self.limits.max_tool_calls,
            });
        }
        self.open_call = Some(id.clone());
        let parent = match parent {
            Some(parent) => parent,
            None => self
                .orphan_parent
                .get_or_insert_with(|| super::ids::fresh_id("msg"))
                .clone(),
        };
        self.note_message(&parent);
        self.output.calls.push(StreamedCall {
            id,
            name,
            parent_message_id: parent,
            arguments: String::new(),
            complete: false,
        });
        Ok(())
    }

    fn note_message(&mut self, id: &str) {
        if !self.output.message_order.iter().any(|m| m == id) {
            self.output.message_order.push(id.to_string());
        }
    }

    fn call_mut(&mut self, id: &str) -> Result<&mut StreamedCall, AgUiError> {
        let error = self.malformed(format!(
            "TOOL_CALL_ARGS or TOOL_CALL_END for tool call `{}`, which did not start or has ended",
            foreign_text(id)
        ));
        self.output
            .calls
            .iter_mut()
            .find(|c| c.id == id && !c.complete)
            .ok_or(error)
    }

    fn arguments(&mut self, id: &str, delta: &str) -> Result<(), AgUiError> {
        let limit = self.limits.max_arguments_bytes;
        let call = self.call_mut(id)?;
        if call.arguments.len() + delta.len() > limit {
            return Err(AgUiError::TooLarge {
                what: "arguments bytes",
                limit,
            });
        }
        call.arguments.push_str(delta);
        Ok(())
    }

    fn end_call(&mut self, id: &str) -> Result<(), AgUiError> {
        self.call_mut(id)?.complete = true;
        Ok(())
    }

    fn call_chunk(&mut self, chunk: super::event::ToolCallChunk) -> Result<(), AgUiError> {
        let id = chunk.tool_call_id.or_else(|| self.open_call.clone());
        let Some(id) = id else {
            return Err(self.malformed("a TOOL_CALL_CHUNK without a toolCallId and no open call"));
        };
        if !self.output.calls.iter().any(|c| c.id == id) {
            let Some(name) = chunk.tool_call_name else {
                return Err(self.malformed(format!(
                    "the TOOL_CALL_CHUNK starting tool call `{}` has no toolCallName",
                    foreign_text(&id)
                )));
            };
            self.start_call(id.clone(), name, chunk.parent_message_id)?;
            self.chunk_calls.push(id.clone());
        }
        self.arguments(&id, chunk.delta.as_deref().unwrap_or(""))
    }

    /// The run's output once the stream ended: chunk-built calls are
    /// complete (a chunk has no end event).
    pub(crate) fn finish(mut self) -> Result<RunOutput, AgUiError> {
        if !self.finished {
            return Err(AgUiError::StreamEnded {
                events: self.output.events,
            });
        }
        for call in &mut self.output.calls {
            call.complete |= self.chunk_calls.contains(&call.id);
        }
        Ok(self.output)
    }
}

/// Decodes a complete event stream already in memory (a recording, a
/// test's fixture) into its [`RunOutput`], with the same decoding and
/// limits as a live run (`max_response_bytes` excepted).
///
/// # Errors
/// As a live run: [`AgUiError::Malformed`], [`AgUiError::TooLarge`],
/// [`AgUiError::StreamEnded`] when it has no `RUN_FINISHED`/`RUN_ERROR`.
pub fn read_stream(bytes: &[u8], limits: AgUiLimits) -> Result<RunOutput, AgUiError> {
    let mut decoder = SseDecoder::new(limits.max_event_bytes);
    let mut assembler = Assembler::new(limits);
    let mut events = Vec::new();
    let decoded = decoder.push(bytes, &mut events);
    for data in events {
        if assembler.push(&data)? {
            return assembler.finish();
        }
    }
    decoded.map_err(|e| sse_error(e, assembler.output.events, &limits))?;
    assembler.finish()
}

fn sse_error(error: SseError, events: usize, limits: &AgUiLimits) -> AgUiError {
    match error {
        SseError::EventTooLarge { .. } => AgUiError::TooLarge {
            what: "event bytes",
            limit: limits.max_event_bytes,
        },
        other => AgUiError::Malformed {
            event: events + 1,
            reason: other.to_string(),
        },
    }
}

/// Sends one run and reads it to its end; `observe` sees the output after
/// every chunk (for a chat panel).
pub(crate) async fn stream_run(
    transport: &dyn AgUiTransport,
    body: String,
    limits: AgUiLimits,
    cancellation: &Cancellation,
    observe: impl FnMut(&RunOutput),
) -> Result<RunOutput, AgUiError> {
    let read = std::pin::pin!(read_run(transport, body, limits, observe));
    let cancelled = std::pin::pin!(cancellation.cancelled());
    match select(read, cancelled).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => Err(AgUiError::Cancelled),
    }
}

async fn read_run(
    transport: &dyn AgUiTransport,
    body: String,
    limits: AgUiLimits,
    mut observe: impl FnMut(&RunOutput),
) -> Result<RunOutput, AgUiError> {
    let mut response = transport.post(body, limits).await?;
    if !(200..300).contains(&response.status) {
        return Err(refused(response, &limits).await);
    }
    if !is_event_stream(response.content_type.as_deref()) {
        return Err(AgUiError::NotEventStream {
            content_type: foreign_text(response.content_type.as_deref().unwrap_or("(none)")),
        });
    }
    let mut decoder = SseDecoder::new(limits.max_event_bytes);
    let mut assembler = Assembler::new(limits);
    let (mut received, mut events) = (0usize, Vec::new());
    while let Some(chunk) = response.body.next().await {
        let chunk = chunk.map_err(|error| match error {
            AgUiError::Transport { message, .. } => AgUiError::StreamBroken {
                events: assembler.output.events,
                message,
            },
            other => other,
        })?;
        received += chunk.len();
        if received > limits.max_response_bytes {
            return Err(AgUiError::TooLarge {
                what: "response bytes",
                limit: limits.max_response_bytes,
            });
        }
        let decoded = decoder.push(&chunk, &mut events);
        let taken = !events.is_empty();
        // The events completed before a decoding error count first: a run
        // that finished is finished however the body was chunked.
        for data in events.drain(..) {
            if assembler.push(&data)? {
                observe(&assembler.output);
                return assembler.finish();
            }
        }
        decoded.map_err(|e| sse_error(e, assembler.output.events, &limits))?;
        if taken {
            observe(&assembler.output);
        }
    }
    assembler.finish()
}

/// The error of a non-2xx answer, with the start of its body.
async fn refused(mut response: super::AgUiResponse, limits: &AgUiLimits) -> AgUiError {
    let mut body = Vec::new();
    while body.len() < limits.max_error_body_bytes {
        match response.body.next().await {
            Some(Ok(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(limits.max_error_body_bytes);
    AgUiError::Status {
        status: response.status,
        body: foreign_text(&String::from_utf8_lossy(&body)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(events: &[&str]) -> Result<RunOutput, AgUiError> {
        let mut assembler = Assembler::new(AgUiLimits::default());
        for event in events {
            if assembler.push(event)? {
                break;
            }
        }
        assembler.finish()
    }

    #[test]
    fn chunks_and_deltas_assemble_into_messages_and_calls() {
        let output = assemble(&[
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
            r#"{"type":"TEXT_MESSAGE_CHUNK","role":"assistant","messageId":"m1","delta":"Hel"}"#,
            r#"{"type":"TEXT_MESSAGE_CHUNK","delta":"lo"}"#,
            r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"t1","delta":"{\"a\":"}"#,
            r#"{"type":"TOOL_CALL_CHUNK","delta":"1}"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"t2"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"c2"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
        ])
        .unwrap();
        assert_eq!(output.texts, vec![("m1".to_string(), "Hello".to_string())]);
        assert_eq!(output.calls[0].arguments, "{\"a\":1}");
        assert!(output.calls[0].complete);
        assert_eq!(output.calls[1].arguments, "");
        assert!(output.calls[1].complete);
    }

    #[test]
    fn protocol_violations_are_malformed_with_the_event_number() {
        let error = assemble(&[
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"nope","delta":"{}"}"#,
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the agent's stream is malformed at event 2: TOOL_CALL_ARGS or TOOL_CALL_END for \
             tool call `nope`, which did not start or has ended"
        );
        let error = assemble(&[r#"{"type":"TEXT_MESSAGE_CHUNK","delta":"x"}"#]).unwrap_err();
        assert_eq!(
            error,
            AgUiError::Malformed {
                event: 1,
                reason: "the first event is TEXT_MESSAGE_CHUNK, not RUN_STARTED".into()
            }
        );
        let ended = assemble(&[r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#]);
        assert_eq!(ended, Err(AgUiError::StreamEnded { events: 1 }));
    }
}
