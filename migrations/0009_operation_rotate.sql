-- The secret inputs an update makes up anew, instead of keeping the deployment's.
ALTER TABLE operations ADD COLUMN rotate text[] NOT NULL DEFAULT '{}';
