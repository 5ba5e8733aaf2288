-- A landing zone's Kubernetes cluster: the kubeconfig a provider admin gave, reduced to what
-- Nimbus takes and sealed with the master key, and what the API server said when it was last
-- checked. The server's address is kept apart, in the clear, to show which cluster it is.
CREATE TABLE zone_clusters (
    landing_zone_id uuid PRIMARY KEY REFERENCES landing_zones (id) ON DELETE CASCADE,
    server          text NOT NULL,
    kubeconfig      bytea NOT NULL,
    secret_key_id   text NOT NULL,
    server_version  text NOT NULL,
    signed_in_as    text NOT NULL,
    checked_at      timestamptz NOT NULL,
    set_by          uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
