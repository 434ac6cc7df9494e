-- Calls routed between replicas (docs/host.md, "Replicas"): a tools/call
-- that reached one replica (the requester) for a tab whose socket another
-- replica holds (the holder). The row is the hand-over: the requester
-- inserts it `requested`, the holder takes it (`taken`, one conditional
-- statement) and dispatches it to the tab, then answers it (`answered`,
-- with the result); a holder that stopped has its rows `interrupted`.
-- The invocation id is the primary key here and in host_calls, so an id
-- is dispatched at most once whichever replicas it reached.
CREATE TABLE host_routes (
    invocation_id   TEXT PRIMARY KEY,
    run_id          TEXT NOT NULL,
    tab_id          TEXT NOT NULL,
    requester       TEXT NOT NULL,
    holder          TEXT NOT NULL,
    request         TEXT NOT NULL,
    state           TEXT NOT NULL,
    result          TEXT,
    requested_at_ms BIGINT NOT NULL,
    settled_at_ms   BIGINT
);
CREATE INDEX host_routes_holder ON host_routes (holder, state);
CREATE INDEX host_routes_requester ON host_routes (requester, state);

-- MCP bearer tokens (SHA-256 hex of the token → its run), so any replica
-- serves any client's request.
CREATE TABLE host_tokens (
    token_digest  TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL,
    issued_at_ms  BIGINT NOT NULL
);

-- MCP sessions of the session-based revisions (2024-11-05 … 2025-11-25):
-- the client's initialize parameters, so a request with an Mcp-Session-Id
-- reaching another replica is served there (rmcp's session store), and
-- the run whose token opened it, so no other run's token restores it.
CREATE TABLE host_mcp_sessions (
    session_id    TEXT PRIMARY KEY,
    run_id        TEXT,
    state         TEXT NOT NULL DEFAULT '',
    updated_at_ms BIGINT NOT NULL
);
