//! The MCP server of one replica (feature `store`; docs/host.md,
//! "Replicas"): [`McpServer::for_replica`]. Any replica serves any
//! client's request — bearer tokens are recorded in the shared store
//! ([`McpServer::issue_durable_token`]), the session-based revisions'
//! sessions too ([`StoreSessions`], rmcp's session store: a request with
//! an `Mcp-Session-Id` another replica opened is served here after rmcp
//! replays its `initialize`), and every `tools/call` runs through
//! [`Replica::call`] (here for a tab connected here, routed otherwise).

use std::sync::{Arc, Mutex, Weak};

use crate::host::replica::Replica;
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore};
use surface_store::{McpStore, StoreError};

use super::{token_digest, Backend, McpServer, McpServerOptions, McpState, Shared};

impl McpServer {
    /// The MCP server of `replica`: the run's tools are composed from the
    /// store wherever its tab is connected, calls run on the tab's
    /// replica, tokens and sessions live in the store. Pages connect
    /// through [`Replica::open_connection`] (not
    /// [`McpServer::open_connection`], which refuses). Call from within a
    /// tokio runtime: a task sends `tools/list_changed` when the
    /// replica's surfaces change. `mcp_store` records the tokens and
    /// sessions (the same database as the replica's store, so every
    /// replica accepts them).
    pub fn for_replica(
        replica: Replica,
        mcp_store: Arc<dyn McpStore>,
        options: McpServerOptions,
    ) -> Self {
        let mut changes = replica.changes();
        let shared = Arc::new(Shared {
            backend: Backend::Replica(replica),
            options,
            state: Mutex::new(McpState::default()),
            http_sessions: std::sync::OnceLock::new(),
            mcp_store: Some(mcp_store),
        });
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    while changes.changed().await.is_ok() {
                        let Some(shared) = weak.upgrade() else {
                            return;
                        };
                        shared.notify_tool_changes_now().await;
                    }
                });
            }
            Err(_) => tracing::warn!(
                "McpServer::for_replica outside a tokio runtime: tools/list_changed is not sent"
            ),
        }
        Self { shared }
    }

    /// The replica, in replica mode.
    pub fn replica(&self) -> Option<&Replica> {
        match &self.shared.backend {
            Backend::Replica(replica) => Some(replica),
            Backend::Local(_) => None,
        }
    }

    /// Issues a bearer token for `run_id` valid on every replica of the
    /// store: its SHA-256 is recorded in the store (`host_tokens`) before
    /// it is returned. In local mode it is [`McpServer::issue_token`].
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be written (no token then).
    ///
    /// # Panics
    /// When the platform's randomness fails, as [`McpServer::issue_token`].
    pub async fn issue_durable_token(&self, run_id: &str) -> Result<String, StoreError> {
        let Some(store) = self.shared.mcp_store() else {
            return Ok(self.issue_token(run_id));
        };
        let token = super::random_id("");
        let digest = hex::encode(token_digest(&token));
        let at = i64::try_from(surface_runtime::Clock::now_ms(
            &surface_runtime::SystemClock,
        ))
        .unwrap_or(i64::MAX);
        store.record_token(&digest, run_id, at).await?;
        Ok(token)
    }

    /// Revokes a token issued by [`Self::issue_durable_token`] on every
    /// replica (its requests get 401 from now on). Returns whether it was
    /// recorded.
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn revoke_durable_token(&self, token: &str) -> Result<bool, StoreError> {
        let local = self.revoke_token(token);
        let Some(store) = self.shared.mcp_store() else {
            return Ok(local);
        };
        let digest = hex::encode(token_digest(token));
        Ok(store.revoke_token(&digest).await? || local)
    }
}

/// rmcp's [`SessionStore`] over the replica's host store
/// (`host_mcp_sessions`): the `initialize` parameters of each session.
pub(super) struct StoreSessions(pub(super) Arc<dyn McpStore>);

impl StoreSessions {
    fn now() -> i64 {
        i64::try_from(surface_runtime::Clock::now_ms(
            &surface_runtime::SystemClock,
        ))
        .unwrap_or(i64::MAX)
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
