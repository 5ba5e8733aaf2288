-- A template's member may name an earlier member for an input that names another deployment
-- (x-refers-to), by input: {"network_id": "core-net"}. When an environment is opened, the input
-- takes that member's deployment's output, and the member deploys after it.
ALTER TABLE template_components ADD COLUMN refers jsonb NOT NULL DEFAULT '{}';
