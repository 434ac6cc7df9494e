//! The page's session WebSocket (`/agent/ws`): accepted only with the
//! session cookie (and, by the page guard, from the page's own origin);
//! its messages go to this replica's [`ReplicaTab`], the calls the
//! replica runs on the tab (its own and those routed from other replicas)
//! go out on it.

use std::sync::Arc;

use agent_surface::host::{AuthenticatedConnection, BrowserToHostMessage};
use agent_surface::store::replica::{ReplicaTab, TabCalls};
use agent_surface::store::DurableError;
use agent_surface::web::SessionToken;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};

use crate::server::{session_of, AppState, SessionRecord, MAX_SOCKET_MESSAGE};

pub(crate) async fn socket(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let Some((token, record)) = session_of(&state, &headers) else {
        return (
            StatusCode::UNAUTHORIZED,
            "no session cookie: load the page first",
        )
            .into_response();
    };
    // The page guard already refused a foreign Host or Origin.
    upgrade
        .max_message_size(MAX_SOCKET_MESSAGE)
        .max_frame_size(MAX_SOCKET_MESSAGE)
        .on_upgrade(move |ws| run_socket(state, token, record, ws))
}

/// The page's connection on this replica, once it announced.
struct Tab {
    tab: ReplicaTab,
    calls: TabCalls,
}

async fn run_socket(
    state: Arc<AppState>,
    token: SessionToken,
    record: SessionRecord,
    ws: WebSocket,
) {
    let (mut sink, mut stream) = ws.split();
    let mut tab: Option<Tab> = None;
    let mut refusal: Option<String> = None;
    loop {
        tokio::select! {
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    if let Err(why) = on_message(&state, &token, &record, &mut tab, text.as_str()).await {
                        refusal = Some(why);
                        break;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            call = async { tab.as_mut().expect("guarded").calls.next().await }, if tab.is_some() => match call {
                Some(call) => {
                    let text = serde_json::to_string(&call).unwrap_or_default();
                    if sink.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    if let Some(why) = refusal {
        eprintln!("devices-host: closing a session socket: {why}");
        let reason: String = why.chars().take(100).collect();
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: 1008,
                reason: reason.into(),
            })))
            .await;
    }
    if let Some(Tab { tab, .. }) = tab {
        let connection_id = tab.connection().connection_id.clone();
        state.sessions.update(&token, |s| {
            if s.connection_id.as_deref() == Some(connection_id.as_str()) {
                s.connection_id = None;
            }
        });
        // Its calls end interrupted (a routed one is answered so), its
        // lease is released.
        tab.close().await;
    }
}

/// Handles one frame; `Err` closes the socket with that reason.
async fn on_message(
    state: &AppState,
    token: &SessionToken,
    record: &SessionRecord,
    tab: &mut Option<Tab>,
    text: &str,
) -> Result<(), String> {
    // Lone surrogate escapes (a TypeScript page's string cut in the middle
    // of an emoji) read as U+FFFD: docs/host.md.
    let message = BrowserToHostMessage::from_json(text)
        .map_err(|e| format!("neither an announcement, a result nor progress: {e}"))?;
    if let BrowserToHostMessage::Announcement(announcement) = &message {
        match tab {
            // One socket carries one connection id.
            Some(open) if open.tab.connection().connection_id != announcement.connection_id => {
                return Err("a second connection id on one socket".into());
            }
            Some(_) => {}
            None => {
                let connection = AuthenticatedConnection::new(
                    &announcement.connection_id,
                    &record.session_id,
                    &record.user_id,
                );
                let (opened, calls) = state
                    .replica
                    .open_connection(connection)
                    .map_err(|e| format!("connection refused: {e}"))?;
                *tab = Some(Tab { tab: opened, calls });
            }
        }
    }
    let Some(open) = tab.as_ref() else {
        return Err("a result or progress before any announcement".into());
    };
    let what = match &message {
        BrowserToHostMessage::Announcement(_) => "announcement",
        BrowserToHostMessage::Result(_) => "result",
        BrowserToHostMessage::Progress(_) => "progress",
    };
    let ids = match &message {
        BrowserToHostMessage::Announcement(a) => {
            Some((a.identity.tab_id.clone(), a.connection_id.clone()))
        }
        _ => None,
    };
    let progress = match &message {
        BrowserToHostMessage::Progress(p) => Some((p.invocation_id.clone(), p.stage.as_str())),
        _ => None,
    };
    match open.tab.receive(message).await {
        Ok(_) => {
            if let Some((tab_id, connection_id)) = ids {
                state.sessions.update(token, |s| {
                    s.tab_id = Some(tab_id);
                    s.connection_id = Some(connection_id);
                });
            }
            if let Some((id, stage)) = progress {
                eprintln!("devices-host: {id} is {stage}");
            }
            Ok(())
        }
        Err(e) if ids.is_some() => Err(format!("announcement refused: {e}")),
        // The id the backend knows a confirmed call by could not be
        // recorded: fail closed — the socket closes, the call is
        // interrupted (ambiguous), never guessed later.
        Err(DurableError::Store(e)) if progress.is_some() => {
            Err(format!("the host store could not record progress: {e}"))
        }
        Err(e) => {
            eprintln!("devices-host: {what} refused: {e}");
            Ok(())
        }
    }
}
