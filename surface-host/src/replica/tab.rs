//! The host side of one page connection on a replica: what the page sends
//! goes in through [`ReplicaTab::receive`]; the calls for the page come
//! out of [`TabCalls`].

use std::sync::Arc;

use surface_runtime::host::{
    AnnouncementAccepted, AuthenticatedConnection, BrowserSurfaceCall, BrowserToHostMessage,
    InterruptedCall, ResultDisposition,
};
use tokio::sync::mpsc;

use super::{CallEnd, Connection, Inner, ReplicaError};
use crate::durable::DurableError;

/// What [`ReplicaTab::receive`] did.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Received {
    /// An announcement was accepted; `leased` is whether this replica holds
    /// the tab's lease now (`false` while another replica's lease still
    /// holds: it is claimed again at every renewal).
    Announcement {
        /// What the host accepted.
        accepted: AnnouncementAccepted,
        /// Whether the lease is this replica's.
        leased: bool,
    },
    /// An announcement identical to the one this connection's tab has
    /// in force (same tab, same JSON): nothing was written, no lease
    /// renewed, no replica woken.
    Unchanged,
    /// A result answered a call.
    Result,
    /// An identical copy of an accepted result; ignored.
    DuplicateResult,
    /// A progress message was forwarded to its call.
    Progress,
}

/// The calls to send to one page, in dispatch order; `None` once the
/// connection is closed.
#[derive(Debug)]
pub struct TabCalls {
    receiver: mpsc::UnboundedReceiver<BrowserSurfaceCall>,
}

impl TabCalls {
    /// The next call to send to the page.
    pub async fn next(&mut self) -> Option<BrowserSurfaceCall> {
        self.receiver.recv().await
    }
}

/// The host side of one authenticated page connection on a replica
/// ([`super::Replica::open_connection`]). Close it with
/// [`ReplicaTab::close`] when the socket closes; dropping it closes it in
/// the background.
pub struct ReplicaTab {
    inner: Arc<Inner>,
    connection: AuthenticatedConnection,
    closed: bool,
}

impl std::fmt::Debug for ReplicaTab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaTab")
            .field("connection", &self.connection)
            .finish()
    }
}

pub(super) fn open(
    inner: Arc<Inner>,
    connection: AuthenticatedConnection,
) -> Result<(ReplicaTab, TabCalls), ReplicaError> {
    let (sender, receiver) = mpsc::unbounded_channel();
    {
        let mut state = inner.lock();
        if state.connections.contains_key(&connection.connection_id) {
            return Err(ReplicaError::ConnectionOpen(connection.connection_id));
        }
        // Unbounded, yet never more than the host's outstanding calls:
        // each is dispatched once.
        state.connections.insert(
            connection.connection_id.clone(),
            Connection {
                sender,
                session_id: connection.session_id.clone(),
                tab: None,
            },
        );
    }
    Ok((
        ReplicaTab {
            inner,
            connection,
            closed: false,
        },
        TabCalls { receiver },
    ))
}

impl Inner {
    /// Whether `json` is the announcement of `tab_id` already in force on
    /// `connection_id` (and the tab is still this connection's here).
    fn unchanged(&self, connection_id: &str, tab_id: &str, json: &str) -> bool {
        let state = self.lock();
        let current = state
            .connections
            .get(connection_id)
            .and_then(|c| c.tab.as_ref());
        current.is_some_and(|(tab, announced)| tab == tab_id && announced == json)
            && state.local_tabs.get(tab_id).map(String::as_str) == Some(connection_id)
    }

    fn end_waiters(&self, interrupted: &[InterruptedCall]) {
        let waiters: Vec<_> = {
            let mut state = self.lock();
            interrupted
                .iter()
                .filter_map(|c| state.waiters.remove(&c.call.invocation.invocation_id))
                .collect()
        };
        for waiter in waiters {
            let _ = waiter.done.send(CallEnd::Interrupted);
        }
    }

    /// Everything a closed connection ends: its tab's tools, its calls
    /// (interrupted), its lease.
    async fn close_connection(&self, connection_id: &str) -> Vec<InterruptedCall> {
        let tab = {
            let mut state = self.lock();
            state.unclaimed.remove(connection_id);
            let tab = state
                .connections
                .remove(connection_id)
                .and_then(|c| c.tab)
                .map(|(tab, _)| tab);
            // A tab that reconnected here on a new connection keeps its
            // lease: only its current connection gives it up.
            tab.filter(|tab| {
                let current = state.local_tabs.get(tab).map(String::as_str) == Some(connection_id);
                if current {
                    state.local_tabs.remove(tab);
                }
                current
            })
        };
        let interrupted = self.durable.connection_closed(connection_id).await;
        self.end_waiters(&interrupted);
        if let Some(tab) = tab {
            self.release(&tab, connection_id).await;
            self.surfaces_changed(&tab).await;
        }
        interrupted
    }
}

impl ReplicaTab {
    /// The authenticated connection.
    pub fn connection(&self) -> &AuthenticatedConnection {
        &self.connection
    }

    /// Handles one message of the page: an announcement is accepted
    /// ([`crate::durable::DurableHost::accept_announcement`]) and its lease claimed
    /// (one identical to the one in force is skipped: [`Received::Unchanged`]),
    /// a result recorded and handed to its call, a progress message
    /// recorded and forwarded.
    ///
    /// # Errors
    /// The [`DurableError`] of the durable host; nothing changes then.
    pub async fn receive(&self, message: BrowserToHostMessage) -> Result<Received, DurableError> {
        let inner = &*self.inner;
        let conn = &self.connection;
        match message {
            BrowserToHostMessage::Announcement(announcement) => {
                let tab_id = announcement.identity.tab_id.clone();
                let json = serde_json::to_string(&announcement).unwrap_or_default();
                if inner.unchanged(&conn.connection_id, &tab_id, &json) {
                    return Ok(Received::Unchanged);
                }
                // Marked local first, so no mirror of the tab replaces the
                // real connection once it is accepted.
                let before = inner
                    .lock()
                    .local_tabs
                    .insert(tab_id.clone(), conn.connection_id.clone());
                let accepted = match inner.durable.accept_announcement(conn, &announcement).await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Undone only while the entry is still this
                        // connection's (a newer connection of the tab may
                        // have announced meanwhile).
                        let mut state = inner.lock();
                        if state.local_tabs.get(&tab_id) == Some(&conn.connection_id) {
                            match before {
                                Some(previous) => state.local_tabs.insert(tab_id, previous),
                                None => state.local_tabs.remove(&tab_id),
                            };
                        }
                        return Err(error);
                    }
                };
                inner.end_waiters(&accepted.interrupted);
                {
                    let mut state = inner.lock();
                    if let Some(c) = state.connections.get_mut(&conn.connection_id) {
                        c.tab = Some((tab_id.clone(), json));
                    }
                    state.mirrors.remove(&tab_id);
                }
                let leased = inner.claim(&conn.connection_id).await.is_some();
                inner.surfaces_changed(&tab_id).await;
                Ok(Received::Announcement { accepted, leased })
            }
            BrowserToHostMessage::Result(result) => {
                match inner.durable.accept_result(conn, &result).await? {
                    ResultDisposition::Completed(done) => {
                        let id = &done.call.invocation.invocation_id;
                        let waiter = inner.lock().waiters.remove(id);
                        if let Some(waiter) = waiter {
                            let _ = waiter.done.send(CallEnd::Outcome {
                                outcome: done.result,
                            });
                        }
                        Ok(Received::Result)
                    }
                    ResultDisposition::Duplicate => Ok(Received::DuplicateResult),
                }
            }
            BrowserToHostMessage::Progress(progress) => {
                let call = inner.durable.accept_progress(conn, &progress).await?;
                let state = inner.lock();
                let waiter = state.waiters.get(&call.invocation.invocation_id);
                if let Some(sender) = waiter.and_then(|w| w.progress.as_ref()) {
                    let _ = sender.send(progress);
                }
                Ok(Received::Progress)
            }
        }
    }

    /// Closes the connection: the tab's tools disappear, its lease is
    /// released and its outstanding calls end [`CallEnd::Interrupted`]
    /// (returned, for reconciliation: they may have taken effect).
    pub async fn close(mut self) -> Vec<InterruptedCall> {
        self.closed = true;
        self.inner
            .close_connection(&self.connection.connection_id)
            .await
    }
}

impl Drop for ReplicaTab {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        let inner = self.inner.clone();
        let id = self.connection.connection_id.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    inner.close_connection(&id).await;
                });
            }
            Err(_) => {
                // No runtime to write the store with: end what is in
                // memory; the lease expires and the next start interrupts
                // the rows.
                inner.lock().connections.remove(&id);
                let interrupted = inner.durable.host().connection_closed(&id);
                inner.end_waiters(&interrupted);
            }
        }
    }
}
