//! A page in the host's own process: [`InProcessTab`] connects a
//! [`BrowserSurfaceSession`] to a [`Host`](super::Host) without a socket —
//! the same messages a page sends over its WebSocket (announcement,
//! results, progress), in order, and the host's calls run through the
//! session.

use std::sync::Arc;

use crate::replica::ReplicaError;
use surface_runtime::host::{
    AnnouncementSubscription, AuthenticatedConnection, BrowserSurfaceCall, BrowserSurfaceIdentity,
    BrowserSurfaceResult, BrowserSurfaceSession, BrowserToHostMessage, SessionError,
    SessionEventSubscription,
};
use tokio::sync::mpsc;

use super::Host;

/// A fresh identity for a page of `app_id`'s build `build_id`: session
/// `sess-` and tab `tab-`, each followed by 32 hex digits from the OS's
/// randomness, so they are never reused — also across restarts on a
/// durable store, whose runs and calls name them. The session's
/// connections ([`InProcessTab::connect`]) and runs
/// ([`Host::start_page_run`](super::Host::start_page_run)) derive from it.
///
/// # Panics
/// When the platform's randomness fails.
pub fn fresh_page_identity(
    app_id: impl Into<String>,
    build_id: impl Into<String>,
) -> BrowserSurfaceIdentity {
    let (session, tab) = (crate::mcp::random_hex(16), crate::mcp::random_hex(16));
    BrowserSurfaceIdentity::new(
        app_id,
        build_id,
        format!("sess-{session}"),
        format!("tab-{tab}"),
    )
}

/// Why an [`InProcessTab`] did not connect.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InProcessTabError {
    /// The host refused the connection (its id is in use).
    #[error("the host refused the tab's connection: {0}")]
    Host(#[from] ReplicaError),
    /// The session refused to connect or subscribe (it was disposed, or
    /// is connected already).
    #[error("the tab's session refused: {0}")]
    Session(#[from] SessionError),
    /// The host refused the session's first announcement (an unknown
    /// build, a capability its authority does not grant, the store).
    #[error("the host refused the tab's announcement: {0}")]
    Announcement(#[from] crate::durable::DurableError),
}

/// Runs after the session answered a host call and before the answer is
/// sent, with the call and the session's answer (e.g. re-render, so the
/// host knows the new surface before the agent's next call; or log).
pub type BeforeAnswer = Arc<dyn Fn(&BrowserSurfaceCall, &BrowserSurfaceResult) + Send + Sync>;

/// A page's session connected to a [`Host`] in the same process. The
/// connection id is fresh (`inproc-` and 32 hex digits); the session's
/// identity (app, build, session, tab) says the rest. Dropping it closes
/// the connection: the host interrupts the calls it was running.
///
/// Messages reach the host in the order the session emits them; each host
/// call runs on its own task (several may wait for the user at once).
pub struct InProcessTab {
    connection_id: String,
    _announcements: AnnouncementSubscription,
    _progress: SessionEventSubscription,
    /// Kept: the message task ends (and closes the connection) when the
    /// tab is dropped.
    _outbox: mpsc::UnboundedSender<BrowserToHostMessage>,
}

impl std::fmt::Debug for InProcessTab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessTab")
            .field("connection_id", &self.connection_id)
            .finish_non_exhaustive()
    }
}

impl InProcessTab {
    /// Connects `session` to `host` as `user_id` (the user the application
    /// authenticated for the session's `session_id`): announces the
    /// session's surface, forwards every later announcement and progress
    /// report, and answers the host's calls with `session.invoke`. When it
    /// returns, the host has accepted the announcement: the run's tools
    /// include the page's. Needs a tokio runtime.
    ///
    /// # Errors
    /// [`InProcessTabError`]: the host or the session refused.
    pub async fn connect(
        host: &Host,
        session: &BrowserSurfaceSession,
        user_id: &str,
    ) -> Result<Self, InProcessTabError> {
        Self::connect_with(host, session, user_id, None).await
    }

    /// [`Self::connect`] with `before_answer` run after each call and
    /// before its answer is sent.
    ///
    /// # Errors
    /// As [`Self::connect`].
    pub async fn connect_with(
        host: &Host,
        session: &BrowserSurfaceSession,
        user_id: &str,
        before_answer: Option<BeforeAnswer>,
    ) -> Result<Self, InProcessTabError> {
        let connection_id = format!("inproc-{}", crate::mcp::random_hex(16));
        let identity = session.identity();
        let auth = AuthenticatedConnection::new(&connection_id, &identity.session_id, user_id);
        let (tab, mut calls) = host.open_connection(auth)?;
        let announcement = session.connect(&connection_id)?;
        let first = serde_json::to_value(&announcement).ok();
        tab.receive(BrowserToHostMessage::Announcement(Box::new(announcement)))
            .await?;
        let (outbox, mut messages) = mpsc::unbounded_channel::<BrowserToHostMessage>();
        // One task hands the messages to the host in order.
        tokio::spawn(async move {
            while let Some(message) = messages.recv().await {
                if let Err(error) = tab.receive(message).await {
                    tracing::warn!(?error, "the host refused a message of the in-process tab");
                }
            }
            tab.close().await;
        });
        let sender = outbox.clone();
        let announcements = session.subscribe(move |a| {
            let _ = sender.send(BrowserToHostMessage::Announcement(Box::new(a.clone())));
        })?;
        // A change the page made while the first announcement was being
        // recorded was announced before anyone listened: send the surface
        // as it is now.
        if let Some(now) = session.announcement() {
            if serde_json::to_value(&now).ok() != first {
                let _ = outbox.send(BrowserToHostMessage::Announcement(Box::new(now)));
            }
        }
        let sender = outbox.clone();
        let progress = session.on_progress(move |p| {
            let _ = sender.send(BrowserToHostMessage::Progress(p.clone()));
        })?;
        let (sender, session) = (outbox.downgrade(), session.clone());
        tokio::spawn(async move {
            while let Some(call) = calls.next().await {
                let (sender, session, before_answer) =
                    (sender.clone(), session.clone(), before_answer.clone());
                tokio::spawn(async move {
                    let result = session.invoke(call.clone()).await;
                    if let Some(hook) = &before_answer {
                        hook(&call, &result);
                    }
                    if let Some(sender) = sender.upgrade() {
                        let _ = sender.send(BrowserToHostMessage::Result(Box::new(result)));
                    }
                });
            }
        });
        Ok(Self {
            connection_id,
            _announcements: announcements,
            _progress: progress,
            _outbox: outbox,
        })
    }

    /// The connection's id.
    pub fn connection_id(&self) -> &str {
        &self.connection_id
    }
}
