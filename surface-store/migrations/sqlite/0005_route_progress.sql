-- The latest progress of a routed call (docs/host.md, "Replicas"): the
-- holder writes the page's `BrowserSurfaceProgress` JSON here while the
-- call is `taken` (at most once per stage: awaiting-confirmation, then
-- confirmed) and wakes the requester, which relays it to the agent (MCP
-- progress notifications while the user confirms in the page).
ALTER TABLE host_routes ADD COLUMN progress TEXT;
