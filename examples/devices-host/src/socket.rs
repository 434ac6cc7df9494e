//! The page's session WebSocket (`/agent/ws`): accepted only with the
//! session cookie (and, by the page guard, from the page's own origin);
//! the library's `Host::page_socket` speaks the protocol on it. The
//! session record learns which tab and connection the page announced.

use std::sync::Arc;

use agent_surface::PageSocketEvent;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::server::{session_of, AppState};

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
    let sessions = state.clone();
    state.agent.page_socket(
        upgrade,
        &record.session_id,
        &record.user_id,
        move |event| match event {
            PageSocketEvent::Announced {
                tab_id,
                connection_id,
            } => {
                sessions.sessions.update(&token, |s| {
                    s.tab_id = Some(tab_id);
                    s.connection_id = Some(connection_id);
                });
            }
            PageSocketEvent::Closed { connection_id, .. } => {
                sessions.sessions.update(&token, |s| {
                    if s.connection_id.is_some() && s.connection_id == connection_id {
                        s.connection_id = None;
                    }
                });
            }
            _ => {}
        },
    )
}
