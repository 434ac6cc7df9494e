//! A page's session WebSocket served by a [`Host`] (features `mcp`,
//! `store` and `axum`; docs/host.md, "The Host"): the browser-session
//! protocol's page → host messages (announcements, results, progress) go
//! to the host, the host's calls for the tab go out on the socket.
//!
//! The application authenticates the socket before the upgrade (its
//! session cookie, its `Host`/`Origin` rules — `web::page_guard`) and
//! hands the session and user to [`Host::page_socket`]; everything after
//! the upgrade is here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::durable::DurableError;
use crate::replica::{ReplicaTab, TabCalls};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use surface_runtime::host::{AuthenticatedConnection, BrowserToHostMessage};

use super::Host;

/// Largest message a page may send on its socket: 1 MiB (an announcement
/// carries the whole snapshot). Larger ones close the socket (the
/// WebSocket's own limit).
pub const MAX_PAGE_SOCKET_MESSAGE_BYTES: usize = 1 << 20;

/// Default [`PageSocketLimits::per_session`]: 4.
pub const DEFAULT_PAGE_SOCKETS_PER_SESSION: usize = 4;
/// Default [`PageSocketLimits::total`]: 10,000.
pub const DEFAULT_PAGE_SOCKETS: usize = 10_000;

/// Bounds of the open page sockets of a [`Host`]
/// ([`crate::host::HostBuilder::page_sockets`]). A socket carries one tab,
/// so they bound the live surfaces too. An upgrade past either bound is
/// answered HTTP 429 before the upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageSocketLimits {
    /// Sockets open at once for one page session (default
    /// [`DEFAULT_PAGE_SOCKETS_PER_SESSION`]: a page and its reconnect).
    pub per_session: usize,
    /// Sockets open at once on this host (default
    /// [`DEFAULT_PAGE_SOCKETS`]).
    pub total: usize,
}

impl Default for PageSocketLimits {
    fn default() -> Self {
        Self {
            per_session: DEFAULT_PAGE_SOCKETS_PER_SESSION,
            total: DEFAULT_PAGE_SOCKETS,
        }
    }
}

/// The open page sockets, per session and in all.
pub(crate) struct SocketCounts {
    limits: PageSocketLimits,
    open: Mutex<(usize, HashMap<String, usize>)>,
}

/// One open socket's place in [`SocketCounts`], given back when dropped.
struct SocketSlot {
    counts: Arc<SocketCounts>,
    session_id: String,
}

impl SocketCounts {
    pub(crate) fn new(limits: PageSocketLimits) -> Self {
        Self {
            limits,
            open: Mutex::default(),
        }
    }

    fn reserve(self: &Arc<Self>, session_id: &str) -> Result<SocketSlot, String> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let (total, per_session) = &mut *open;
        let mine = per_session.get(session_id).copied().unwrap_or(0);
        if mine >= self.limits.per_session {
            return Err(format!(
                "this page session has {mine} sockets open already: close a tab"
            ));
        }
        if *total >= self.limits.total {
            return Err(format!("{total} page sockets are open: try again later"));
        }
        *total += 1;
        per_session.insert(session_id.to_string(), mine + 1);
        Ok(SocketSlot {
            counts: self.clone(),
            session_id: session_id.to_string(),
        })
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        let mut open = self.counts.open.lock().unwrap_or_else(|p| p.into_inner());
        let (total, per_session) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(mine) = per_session.get_mut(&self.session_id) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                per_session.remove(&self.session_id);
            }
        }
    }
}

/// What happened on a page socket, for the application's own records
/// (which tab a session shows, for instance).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageSocketEvent {
    /// The host accepted an announcement of `tab_id` on `connection_id`.
    Announced {
        /// The announcing tab.
        tab_id: String,
        /// The socket's connection id.
        connection_id: String,
    },
    /// The socket closed; the host interrupted the calls it was running
    /// on `connection_id` (when it had announced).
    Closed {
        /// The socket's connection id, if it announced.
        connection_id: Option<String>,
        /// Why the host closed it (a refused announcement, a second
        /// connection id, an unreadable message, a store failure), or
        /// `None` when the page closed it.
        refusal: Option<String>,
    },
}

impl Host {
    /// Upgrades an authenticated page request to the session WebSocket:
    /// the page of `session_id`, signed in as `user_id` (both the
    /// application's, checked before this call), speaks the
    /// browser-session protocol on it. `on_event` hears each accepted
    /// announcement and the close. Messages are bounded by
    /// [`MAX_PAGE_SOCKET_MESSAGE_BYTES`], sockets by [`PageSocketLimits`]
    /// (HTTP 429, `Too Many Requests`, past them).
    ///
    /// The socket closes (code 1008, the reason in at most 123 bytes of
    /// printable ASCII) on a binary message, a text message that is
    /// neither an announcement, a result nor progress, a result or
    /// progress before any announcement, a
    /// second connection id, an announcement of a second tab, a refused
    /// announcement (an unknown build, a
    /// session id that is not `session_id`, …), and on a store failure
    /// while recording progress (fail closed: the call is interrupted,
    /// never guessed later). Another refused result or progress is logged
    /// and the socket stays open.
    pub fn page_socket(
        &self,
        upgrade: WebSocketUpgrade,
        session_id: impl Into<String>,
        user_id: impl Into<String>,
        on_event: impl Fn(PageSocketEvent) + Send + Sync + 'static,
    ) -> Response {
        let host = self.clone();
        let (session_id, user_id) = (session_id.into(), user_id.into());
        let slot = match self.sockets.reserve(&session_id) {
            Ok(slot) => slot,
            Err(why) => return (StatusCode::TOO_MANY_REQUESTS, why).into_response(),
        };
        upgrade
            .max_message_size(MAX_PAGE_SOCKET_MESSAGE_BYTES)
            .max_frame_size(MAX_PAGE_SOCKET_MESSAGE_BYTES)
            .on_upgrade(move |ws| async move {
                let page = PageUser {
                    session_id,
                    user_id,
                };
                run(host, page, ws, &on_event).await;
                drop(slot);
            })
    }
}

struct PageUser {
    session_id: String,
    user_id: String,
}

/// The page's connection, once it announced.
struct Open {
    tab: ReplicaTab,
    calls: TabCalls,
    /// The tab of the accepted announcements: one per socket.
    tab_id: Option<String>,
}

async fn run(
    host: Host,
    page: PageUser,
    mut ws: WebSocket,
    on_event: &(dyn Fn(PageSocketEvent) + Send + Sync),
) {
    let mut open: Option<Open> = None;
    let mut refusal: Option<String> = None;
    loop {
        let call = async {
            match open.as_mut() {
                Some(o) => o.calls.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            incoming = ws.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    if let Err(why) = receive(&host, &page, &mut open, text.as_str(), on_event).await {
                        refusal = Some(why);
                        break;
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    refusal = Some("a binary message: the protocol is JSON text".into());
                    break;
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            call = call => match call {
                Some(call) => {
                    let text = match serde_json::to_string(&call) {
                        Ok(text) => text,
                        Err(_) => break,
                    };
                    if ws.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    if let Some(why) = &refusal {
        close_refused(&mut ws, why).await;
    }
    let connection_id = match open {
        Some(Open { tab, .. }) => {
            let id = tab.connection().connection_id.clone();
            // Its calls end interrupted (a routed one is answered so), its
            // lease is released.
            tab.close().await;
            Some(id)
        }
        None => None,
    };
    on_event(PageSocketEvent::Closed {
        connection_id,
        refusal,
    });
}

/// Closes the socket with 1008 and `why`: a close frame's reason is at
/// most 123 bytes, here printable ASCII only (it may quote what the page
/// sent).
async fn close_refused(ws: &mut WebSocket, why: &str) {
    tracing::warn!(reason = ?why, "closing a page socket");
    let printable = |c: char| {
        if c.is_ascii_graphic() || c == ' ' {
            c
        } else {
            '?'
        }
    };
    let reason: String = why.chars().map(printable).take(123).collect();
    let _ = ws
        .send(Message::Close(Some(CloseFrame {
            code: 1008,
            reason: reason.into(),
        })))
        .await;
}

/// Handles one text message; `Err` closes the socket with that reason.
async fn receive(
    host: &Host,
    page: &PageUser,
    open: &mut Option<Open>,
    text: &str,
    on_event: &(dyn Fn(PageSocketEvent) + Send + Sync),
) -> Result<(), String> {
    // Lone surrogate escapes (a TypeScript page's string cut in the middle
    // of an emoji) read as U+FFFD (docs/host.md).
    let message = BrowserToHostMessage::from_json(text)
        .map_err(|e| format!("neither an announcement, a result nor progress: {e}"))?;
    if let BrowserToHostMessage::Announcement(announcement) = &message {
        match open {
            // One socket carries one connection id.
            Some(o) if o.tab.connection().connection_id != announcement.connection_id => {
                return Err("a second connection id on one socket".into());
            }
            // One socket carries one tab (bounding the live surfaces).
            Some(Open {
                tab_id: Some(tab), ..
            }) if *tab != announcement.identity.tab_id => {
                return Err("a second tab on one socket".into());
            }
            Some(_) => {}
            None => {
                let connection = AuthenticatedConnection::new(
                    &announcement.connection_id,
                    &page.session_id,
                    &page.user_id,
                );
                let (tab, calls) = host
                    .open_connection(connection)
                    .map_err(|e| format!("connection refused: {e}"))?;
                *open = Some(Open {
                    tab,
                    calls,
                    tab_id: None,
                });
            }
        }
    }
    let Some(o) = open.as_mut() else {
        return Err("a result or progress before any announcement".into());
    };
    let announced = match &message {
        BrowserToHostMessage::Announcement(a) => {
            Some((a.identity.tab_id.clone(), a.connection_id.clone()))
        }
        _ => None,
    };
    let is_progress = matches!(message, BrowserToHostMessage::Progress(_));
    match o.tab.receive(message).await {
        Ok(_) => {
            if let Some((tab_id, connection_id)) = announced {
                o.tab_id = Some(tab_id.clone());
                on_event(PageSocketEvent::Announced {
                    tab_id,
                    connection_id,
                });
            }
            Ok(())
        }
        Err(e) if announced.is_some() => Err(format!("announcement refused: {e}")),
        // The id the backend knows a confirmed call by could not be
        // recorded: fail closed.
        Err(DurableError::Store(e)) if is_progress => {
            Err(format!("the host store could not record progress: {e}"))
        }
        Err(e) => {
            tracing::warn!(error = ?e, "a page's result or progress was refused");
            Ok(())
        }
    }
}
