-- What each cloud poller saw last: per cloud_provider source, each resource it found (a
-- machine's id, as the deployments' outputs hold it), its state, and when that state was
-- first seen. A poll compares the cloud with these rows and writes what changed, with the
-- events the changes make, in one transaction.
CREATE TABLE event_poller_state (
    source_id uuid NOT NULL REFERENCES event_sources (id) ON DELETE CASCADE,
    resource  text NOT NULL,
    state     text NOT NULL,
    seen_at   timestamptz NOT NULL,
    PRIMARY KEY (source_id, resource)
);
