-- A landing zone's plan policies: CEL over each resource a preview plans, checked after the
-- preview and before anything is applied. A mandatory policy that fails stops the operation; an
-- advisory one is shown.
CREATE TABLE plan_policies (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    landing_zone_id uuid NOT NULL REFERENCES landing_zones (id) ON DELETE CASCADE,
    name            text NOT NULL,
    message         text NOT NULL,
    expression      text NOT NULL,
    level           text NOT NULL CHECK (level IN ('mandatory', 'advisory')),
    enabled         boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (landing_zone_id, name)
);

-- Every change of a zone's policies makes a version of the whole set, kept forever: what an
-- operation was checked against stays readable after the policies change.
CREATE TABLE plan_policy_versions (
    landing_zone_id uuid NOT NULL REFERENCES landing_zones (id) ON DELETE CASCADE,
    version         integer NOT NULL,
    change          text NOT NULL CHECK (change IN ('create', 'edit', 'remove')),
    policy_name     text NOT NULL,
    policies        jsonb NOT NULL, -- the set after the change
    changed_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (landing_zone_id, version)
);

-- The check of an operation's plan: the version of its zone's policies, and what failed.
CREATE TABLE operation_policy_checks (
    operation_id    uuid PRIMARY KEY REFERENCES operations (id) ON DELETE CASCADE,
    landing_zone_id uuid NOT NULL REFERENCES landing_zones (id) ON DELETE CASCADE,
    version         integer NOT NULL,
    policies        integer NOT NULL,
    resources       integer NOT NULL,
    violations      jsonb NOT NULL DEFAULT '[]',
    created_at      timestamptz NOT NULL DEFAULT now()
);
