//! The session-based revisions' sessions in the host store: rmcp's
//! [`SessionStore`] over [`McpStore`] (`host_mcp_sessions`), so a request
//! with an `Mcp-Session-Id` another replica (or this process before a
//! restart) opened is served here after rmcp replays its `initialize`.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore};
use surface_store::McpStore;

/// rmcp's [`SessionStore`] over the host store (`host_mcp_sessions`): the
/// `initialize` parameters of each session.
pub(super) struct StoreSessions(pub(super) Arc<dyn McpStore>);

impl StoreSessions {
    fn now() -> i64 {
        super::clock::now_ms()
    }
}

type SessionResult<T> =
    Result<T, rmcp::transport::streamable_http_server::session::SessionStoreError>;

#[async_trait::async_trait]
impl SessionStore for StoreSessions {
    async fn load(&self, session_id: &str) -> SessionResult<Option<SessionState>> {
        let Some(json) = self.0.mcp_session(session_id).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(&json)?))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> SessionResult<()> {
        let json = serde_json::to_string(state)?;
        self.0
            .store_mcp_session(session_id, &json, Self::now())
            .await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> SessionResult<()> {
        self.0.delete_mcp_session(session_id).await?;
        Ok(())
    }
}
