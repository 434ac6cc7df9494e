-- Live surfaces with a lease (docs/host.md, "Surface leases"): which host
-- process (replica) holds each tab's socket, until when. A lease is taken
-- or renewed only by one conditional statement: by its holder, or by
-- anyone once it expired.
CREATE TABLE host_surfaces (
    tab_id              TEXT PRIMARY KEY,
    session_id          TEXT NOT NULL,
    replica             TEXT NOT NULL,
    connection_id       TEXT NOT NULL,
    announcement        TEXT NOT NULL,
    lease_expires_at_ms BIGINT NOT NULL,
    updated_at_ms       BIGINT NOT NULL
);
CREATE INDEX host_surfaces_replica ON host_surfaces (replica);
CREATE INDEX host_surfaces_session ON host_surfaces (session_id);
