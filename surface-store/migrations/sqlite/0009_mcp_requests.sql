-- MCP requests in flight on any replica (docs/agents.md, "The MCP
-- server"): one row per `tools/call` being served, keyed by the SHA-256 of
-- its scope (the legacy session, or the stateless request's run and body)
-- and JSON-RPC id, so the same request delivered to two replicas at once
-- runs once. A row expires (`expires_at_ms`): a replica that died leaves
-- no request refused for longer than a call may last, and a legacy
-- session's request answered stays refused for a short window (a retrying
-- proxy's copy never runs again). Retention deletes expired rows.
CREATE TABLE host_mcp_requests (
    request_key    TEXT PRIMARY KEY,
    started_at_ms  BIGINT NOT NULL,
    answered_at_ms BIGINT,
    expires_at_ms  BIGINT NOT NULL
);
CREATE INDEX host_mcp_requests_expiry ON host_mcp_requests (expires_at_ms);
