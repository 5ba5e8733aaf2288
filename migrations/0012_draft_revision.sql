-- A component's draft counts its changes, so that a publish names the draft it reviewed and a
-- draft changed since is refused rather than published unseen.
ALTER TABLE components ADD COLUMN revision integer NOT NULL DEFAULT 1 CHECK (revision > 0);
