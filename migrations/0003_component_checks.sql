-- A check previews a component's draft with the real engine on a throwaway stack. The row is
-- the record; a River job does the work.
CREATE TABLE component_checks (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    component_id uuid NOT NULL REFERENCES components (id) ON DELETE CASCADE,
    status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    -- The draft as it was when the check was asked for.
    code         text NOT NULL,
    input_schema jsonb NOT NULL,
    output       text NOT NULL DEFAULT '',
    changes      jsonb NOT NULL DEFAULT '{}',
    requested_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz
);
CREATE INDEX component_checks_component_idx ON component_checks (component_id, created_at DESC);
