-- MCP sessions expire from the store, not only from a replica's memory
-- (docs/limits.md, "MCP sessions"): `updated_at_ms` is the session's last
-- use (each replica marks it at most every half keep-alive), and sessions
-- idle past twice rmcp's keep-alive are deleted by the replica opening or
-- restoring a session. The index serves that deletion.
CREATE INDEX host_mcp_sessions_idle ON host_mcp_sessions (updated_at_ms);
