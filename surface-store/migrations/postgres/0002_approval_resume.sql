-- Approvals resumed through the backend (docs/host.md, "Approvals, decided
-- and resumed"): the id the backend knows a call by (a call confirmed in
-- the page under ConfirmationMode::Hold runs as its retryInvocationId), and
-- the outcome of the resumption, written once (`... WHERE outcome IS NULL`).
ALTER TABLE host_calls ADD COLUMN backend_invocation_id TEXT;
ALTER TABLE host_approvals ADD COLUMN backend_invocation_id TEXT;
ALTER TABLE host_approvals ADD COLUMN outcome TEXT;
ALTER TABLE host_approvals ADD COLUMN resumed_at_ms BIGINT;
CREATE INDEX host_approvals_run ON host_approvals (run_id, requested_at_ms);
