-- A pending approval the requester's agent withdrew (an MCP client's
-- `tasks/cancel`; docs/agents.md, "Approvals as MCP tasks"): the new state
-- `withdrawn`, never decided and never resumed by the host.
ALTER TABLE host_approvals DROP CONSTRAINT host_approvals_state_check;
ALTER TABLE host_approvals ADD CONSTRAINT host_approvals_state_check
    CHECK (state IN ('pending', 'approved', 'rejected', 'withdrawn'));
