-- What a pending instance's wiring gave when its plan was recorded: by slot, each input the
-- parameters alone give, secret ones left out. The plan's page shows these rather than
-- evaluating tenants' expressions again on every view.
CREATE TABLE stack_instance_wiring (
    instance_id uuid PRIMARY KEY REFERENCES stack_instances (id) ON DELETE CASCADE,
    inputs      jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
