-- The agent host's durable state (docs/host.md, "The durable store").
-- Every state column changes only through one conditional UPDATE
-- (`... WHERE state = '<from>'`), so a transition happens once however
-- many processes race on the same database.
CREATE TABLE host_runs (
    run_id        TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    tab_id        TEXT,
    kind          TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('active', 'ended')),
    started_at_ms BIGINT NOT NULL
);
CREATE INDEX host_runs_owner ON host_runs (owner, state);

CREATE TABLE host_calls (
    invocation_id    TEXT PRIMARY KEY,
    owner            TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    tool_call_id     TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    tab_id           TEXT NOT NULL,
    connection_id    TEXT NOT NULL,
    capability_id    TEXT NOT NULL,
    effect           TEXT,
    envelope_digest  BLOB NOT NULL,
    state            TEXT NOT NULL
        CHECK (state IN ('dispatched', 'completed', 'interrupted', 'reconciled')),
    result_digest    BLOB,
    result           TEXT,
    receipt          TEXT,
    dispatched_at_ms BIGINT NOT NULL,
    settled_at_ms    BIGINT
);
CREATE INDEX host_calls_owner_state ON host_calls (owner, state);

CREATE TABLE host_approvals (
    approval_id     TEXT PRIMARY KEY,
    invocation_id   TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    tool_call_id    TEXT NOT NULL,
    capability_id   TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected')),
    requested_at_ms BIGINT NOT NULL,
    decided_by      TEXT,
    decided_at_ms   BIGINT
);
CREATE INDEX host_approvals_state ON host_approvals (state, requested_at_ms);
