-- A policy may let the requester approve their own operation, where a team has one admin and
-- four eyes are not to be had; a request keeps what its policies said when it was opened.
ALTER TABLE approval_policies ADD COLUMN requester_may_approve boolean NOT NULL DEFAULT false;
ALTER TABLE approval_requests ADD COLUMN requester_may_approve boolean NOT NULL DEFAULT false;
