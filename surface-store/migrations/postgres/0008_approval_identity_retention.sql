-- Approval identity and retention (docs/host.md, "Threat model" and
-- "Retention").
--
-- The host knows an approval by its own id, the held call's invocation id;
-- the backend's approval id moves to `backend_approval_id`, which several
-- rows may share (a backend that restarted numbers its approvals again; a
-- page may answer its own call with any id). A call held twice keeps the
-- row still needed, then its oldest. Pending approvals expire (`expires_at_ms`, the new state
-- `expired`; a row from before this migration expires a day after it was
-- requested). Runs record when they ended, and the tables retention
-- deletes from are indexed by what it reads.
ALTER TABLE host_approvals ADD COLUMN backend_approval_id TEXT;
ALTER TABLE host_approvals ADD COLUMN expires_at_ms BIGINT;
UPDATE host_approvals SET backend_approval_id = approval_id,
    expires_at_ms = requested_at_ms + 86400000;
-- Of a call held twice, keep the row still needed (not resumed, not
-- withdrawn), then the oldest.
DELETE FROM host_approvals a USING host_approvals b
    WHERE a.invocation_id = b.invocation_id
    AND (CASE WHEN a.outcome IS NULL AND a.state <> 'withdrawn' THEN 0 ELSE 1 END,
         a.requested_at_ms, a.approval_id)
      > (CASE WHEN b.outcome IS NULL AND b.state <> 'withdrawn' THEN 0 ELSE 1 END,
         b.requested_at_ms, b.approval_id);
-- Two steps: the primary key is checked row by row, and an old key may
-- equal another row's invocation id.
UPDATE host_approvals SET approval_id = 'v8:' || invocation_id;
UPDATE host_approvals SET approval_id = invocation_id;
ALTER TABLE host_approvals ALTER COLUMN backend_approval_id SET NOT NULL;
ALTER TABLE host_approvals ALTER COLUMN expires_at_ms SET NOT NULL;
ALTER TABLE host_approvals DROP CONSTRAINT host_approvals_state_check;
ALTER TABLE host_approvals ADD CONSTRAINT host_approvals_state_check
    CHECK (state IN ('pending', 'approved', 'rejected', 'withdrawn', 'expired'));
CREATE INDEX host_approvals_backend ON host_approvals (backend_approval_id);
CREATE INDEX host_approvals_expiry ON host_approvals (state, expires_at_ms);
CREATE INDEX host_approvals_invocation ON host_approvals (invocation_id);

ALTER TABLE host_runs ADD COLUMN ended_at_ms BIGINT;
CREATE INDEX host_runs_state ON host_runs (state, started_at_ms);
CREATE INDEX host_calls_settled ON host_calls (state, settled_at_ms);
CREATE INDEX host_routes_settled ON host_routes (state, settled_at_ms);
CREATE INDEX host_surfaces_expiry ON host_surfaces (lease_expires_at_ms);
CREATE INDEX host_tokens_issued ON host_tokens (issued_at_ms);
