-- A pending approval the requester's agent withdrew (an MCP client's
-- `tasks/cancel`; docs/agents.md, "Approvals as MCP tasks"): the new state
-- `withdrawn`, never decided and never resumed by the host. SQLite cannot
-- change a CHECK constraint in place, so the table is rebuilt with the same
-- columns, rows and indexes.
CREATE TABLE host_approvals_v6 (
    approval_id           TEXT PRIMARY KEY,
    invocation_id         TEXT NOT NULL,
    run_id                TEXT NOT NULL,
    tool_call_id          TEXT NOT NULL,
    capability_id         TEXT NOT NULL,
    state                 TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'withdrawn')),
    requested_at_ms       BIGINT NOT NULL,
    decided_by            TEXT,
    decided_at_ms         BIGINT,
    backend_invocation_id TEXT,
    outcome               TEXT,
    resumed_at_ms         BIGINT
);
INSERT INTO host_approvals_v6 (approval_id, invocation_id, run_id, tool_call_id,
    capability_id, state, requested_at_ms, decided_by, decided_at_ms,
    backend_invocation_id, outcome, resumed_at_ms)
SELECT approval_id, invocation_id, run_id, tool_call_id, capability_id, state,
    requested_at_ms, decided_by, decided_at_ms, backend_invocation_id, outcome,
    resumed_at_ms
FROM host_approvals;
DROP TABLE host_approvals;
ALTER TABLE host_approvals_v6 RENAME TO host_approvals;
CREATE INDEX host_approvals_state ON host_approvals (state, requested_at_ms);
CREATE INDEX host_approvals_run ON host_approvals (run_id, requested_at_ms);
