-- Approval identity and retention (docs/host.md, "Threat model" and
-- "Retention").
--
-- The host knows an approval by its own id, the held call's invocation id;
-- the backend's approval id moves to `backend_approval_id`, which several
-- rows may share (a backend that restarted numbers its approvals again; a
-- page may answer its own call with any id). A call held twice keeps the
-- row still needed (not resumed, not withdrawn), then its oldest. Pending approvals expire (`expires_at_ms`, the new state
-- `expired`; a row from before this migration expires a day after it was
-- requested). Runs record when they ended, and the tables retention
-- deletes from are indexed by what it reads. SQLite cannot change a
-- primary key or a CHECK constraint in place, so host_approvals is rebuilt.
CREATE TABLE host_approvals_v8 (
    approval_id           TEXT PRIMARY KEY,
    backend_approval_id   TEXT NOT NULL,
    invocation_id         TEXT NOT NULL,
    run_id                TEXT NOT NULL,
    tool_call_id          TEXT NOT NULL,
    capability_id         TEXT NOT NULL,
    state                 TEXT NOT NULL
        CHECK (state IN ('pending', 'approved', 'rejected', 'withdrawn', 'expired')),
    requested_at_ms       BIGINT NOT NULL,
    decided_by            TEXT,
    decided_at_ms         BIGINT,
    backend_invocation_id TEXT,
    outcome               TEXT,
    resumed_at_ms         BIGINT,
    expires_at_ms         BIGINT NOT NULL
);
INSERT OR IGNORE INTO host_approvals_v8 (approval_id, backend_approval_id, invocation_id,
    run_id, tool_call_id, capability_id, state, requested_at_ms, decided_by, decided_at_ms,
    backend_invocation_id, outcome, resumed_at_ms, expires_at_ms)
SELECT invocation_id, approval_id, invocation_id, run_id, tool_call_id, capability_id, state,
    requested_at_ms, decided_by, decided_at_ms, backend_invocation_id, outcome, resumed_at_ms,
    requested_at_ms + 86400000
FROM host_approvals
ORDER BY CASE WHEN outcome IS NULL AND state <> 'withdrawn' THEN 0 ELSE 1 END,
    requested_at_ms, approval_id;
DROP TABLE host_approvals;
ALTER TABLE host_approvals_v8 RENAME TO host_approvals;
CREATE INDEX host_approvals_state ON host_approvals (state, requested_at_ms);
CREATE INDEX host_approvals_run ON host_approvals (run_id, requested_at_ms);
CREATE INDEX host_approvals_backend ON host_approvals (backend_approval_id);
CREATE INDEX host_approvals_expiry ON host_approvals (state, expires_at_ms);
CREATE INDEX host_approvals_invocation ON host_approvals (invocation_id);

ALTER TABLE host_runs ADD COLUMN ended_at_ms BIGINT;
CREATE INDEX host_runs_state ON host_runs (state, started_at_ms);
CREATE INDEX host_calls_settled ON host_calls (state, settled_at_ms);
CREATE INDEX host_routes_settled ON host_routes (state, settled_at_ms);
CREATE INDEX host_surfaces_expiry ON host_surfaces (lease_expires_at_ms);
CREATE INDEX host_tokens_issued ON host_tokens (issued_at_ms);
