//! The host side of one authenticated page connection: what the page sends
//! (announcements, results, progress) goes in through
//! [`McpTabConnection::receive`]; the calls for the page come out of
//! [`TabCalls`].

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Completion, Shared, MAX_BROWSER_MESSAGE_BYTES};
use surface_runtime::host::{
    AnnouncementAccepted, AuthenticatedConnection, BrowserSurfaceCall, BrowserToHostMessage,
    HostError, InterruptedCall, ResultDisposition,
};

/// Why the host refused something from a page connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TabError {
    /// A connection with this id is already open on this server.
    #[error("connection `{0}` is already open; every page connection needs a fresh id")]
    ConnectionOpen(String),
    /// The message is longer than [`MAX_BROWSER_MESSAGE_BYTES`].
    #[error("the page's message is {size} bytes; the limit is {limit}")]
    TooLarge {
        /// Its size in bytes.
        size: usize,
        /// [`MAX_BROWSER_MESSAGE_BYTES`].
        limit: usize,
    },
    /// The text is not an announcement, a result or a progress message.
    #[error("the page's message is not an announcement, a result or a progress message: {0}")]
    NotAMessage(String),
    /// The agent host refused it (see [`HostError`]).
    #[error(transparent)]
    Host(#[from] HostError),
    /// The server runs on a replica (`McpServer::for_replica`): pages
    /// connect through the replica's `open_connection`.
    #[error("this MCP server runs on a replica; open page connections on the replica")]
    OnReplica,
}

/// What [`McpTabConnection::receive`] did.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Received {
    /// An announcement was accepted (clients whose tools changed are
    /// told).
    Announcement(AnnouncementAccepted),
    /// A result answered a waiting `tools/call` (or one that had stopped
    /// waiting: timed out or cancelled by the client).
    Result,
    /// An identical copy of an accepted result; ignored.
    DuplicateResult,
    /// A progress message was forwarded to its waiting `tools/call`.
    Progress,
}

/// The calls to send to one page, in dispatch order. Ends (`None`) when
/// the connection closes.
#[derive(Debug)]
pub struct TabCalls {
    receiver: mpsc::UnboundedReceiver<BrowserSurfaceCall>,
}

impl TabCalls {
    /// The next call to send to the page; `None` once the connection is
    /// closed.
    pub async fn next(&mut self) -> Option<BrowserSurfaceCall> {
        self.receiver.recv().await
    }
}

/// The host side of one authenticated page connection
/// ([`super::McpServer::open_connection`]). Dropping it closes the
/// connection: the tab's tools disappear, its waiting calls are answered
/// as interrupted (they may have taken effect) and clients are told the
/// tool list changed.
pub struct McpTabConnection {
    shared: Arc<Shared>,
    connection: AuthenticatedConnection,
    closed: bool,
}

impl std::fmt::Debug for McpTabConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTabConnection")
            .field("connection", &self.connection)
            .finish()
    }
}

pub(super) fn open(
    shared: Arc<Shared>,
    connection: AuthenticatedConnection,
) -> Result<(McpTabConnection, TabCalls), TabError> {
    if !matches!(shared.backend, super::Backend::Local(_)) {
        return Err(TabError::OnReplica);
    }
    let (sender, receiver) = mpsc::unbounded_channel();
    {
        let mut state = shared.lock();
        if state.connections.contains_key(&connection.connection_id) {
            return Err(TabError::ConnectionOpen(connection.connection_id));
        }
        // Unbounded, yet never more than the host's outstanding calls
        // (`AgentHost::with_max_outstanding`): each is dispatched once.
        state
            .connections
            .insert(connection.connection_id.clone(), sender);
    }
    Ok((
        McpTabConnection {
            shared,
            connection,
            closed: false,
        },
        TabCalls { receiver },
    ))
}

impl McpTabConnection {
    /// The authenticated connection.
    pub fn connection(&self) -> &AuthenticatedConnection {
        &self.connection
    }

    /// Parses one message of the page (`BrowserToHostMessage` JSON) and
    /// handles it like [`Self::receive`]. The text is read with
    /// `BrowserToHostMessage::from_json`: a lone UTF-16 surrogate escape,
    /// which a TypeScript page writes for a string cut in the middle of an
    /// emoji (`"ok\ud83d"`), is read as U+FFFD (`"ok\u{FFFD}"`), so such a
    /// result still answers its `tools/call` (docs/host.md, "Where this
    /// project differs from the original").
    ///
    /// # Errors
    /// [`TabError::TooLarge`] over [`MAX_BROWSER_MESSAGE_BYTES`],
    /// [`TabError::NotAMessage`] naming the parse error, or what
    /// [`Self::receive`] returns.
    pub fn receive_json(&self, text: &str) -> Result<Received, TabError> {
        if text.len() > MAX_BROWSER_MESSAGE_BYTES {
            return Err(TabError::TooLarge {
                size: text.len(),
                limit: MAX_BROWSER_MESSAGE_BYTES,
            });
        }
        let message = BrowserToHostMessage::from_json(text)
            .map_err(|e| TabError::NotAMessage(e.to_string()))?;
        self.receive(message)
    }

    /// Handles one message of the page: an announcement goes to
    /// `AgentHost::accept_announcement` (and changed tool lists are
    /// announced to MCP clients), a result to `AgentHost::accept_result`
    /// (and answers the waiting `tools/call`), a progress message to
    /// `AgentHost::accept_progress` (and becomes MCP progress).
    ///
    /// # Errors
    /// [`TabError::Host`] with the host's refusal; nothing changes then.
    pub fn receive(&self, message: BrowserToHostMessage) -> Result<Received, TabError> {
        let shared = &self.shared;
        match message {
            BrowserToHostMessage::Announcement(announcement) => {
                let accepted = shared
                    .agent_host()
                    .accept_announcement(&self.connection, &announcement)?;
                shared.interrupt(&accepted.interrupted);
                shared.notify_tool_changes();
                Ok(Received::Announcement(accepted))
            }
            BrowserToHostMessage::Result(result) => {
                match shared
                    .agent_host()
                    .accept_result(&self.connection, &result)?
                {
                    ResultDisposition::Completed(done) => {
                        let waiter = shared
                            .lock()
                            .waiters
                            .remove(&done.call.invocation.invocation_id);
                        if let Some(waiter) = waiter {
                            let _ = waiter.done.send(Completion::Outcome(done.result));
                        }
                        Ok(Received::Result)
                    }
                    ResultDisposition::Duplicate => Ok(Received::DuplicateResult),
                }
            }
            BrowserToHostMessage::Progress(progress) => {
                let call = shared
                    .agent_host()
                    .accept_progress(&self.connection, &progress)?;
                let state = shared.lock();
                if let Some(waiter) = state.waiters.get(&call.invocation.invocation_id) {
                    let _ = waiter.progress.send(progress);
                }
                Ok(Received::Progress)
            }
        }
    }

    /// Closes the connection now (as dropping it does) and returns the
    /// calls it interrupted, for reconciliation: they may have taken
    /// effect. Their `tools/call`s are answered `EXECUTION_FAILED`
    /// (`details.reason: "disconnected"`, retry `no`).
    pub fn close(mut self) -> Vec<InterruptedCall> {
        self.close_now()
    }

    fn close_now(&mut self) -> Vec<InterruptedCall> {
        if self.closed {
            return Vec::new();
        }
        self.closed = true;
        let shared = &self.shared;
        shared
            .lock()
            .connections
            .remove(&self.connection.connection_id);
        let interrupted = shared
            .agent_host()
            .connection_closed(&self.connection.connection_id);
        shared.interrupt(&interrupted);
        shared.notify_tool_changes();
        interrupted
    }
}

impl Drop for McpTabConnection {
    fn drop(&mut self) {
        self.close_now();
    }
}
