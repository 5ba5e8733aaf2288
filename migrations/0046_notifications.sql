-- Each person's inbox: one row per person an event of Nimbus's own concerns, made by the
-- notifications' reaction as the event is routed. The event is named, not referenced: the log
-- forgets old events, the inbox keeps them until their reader is gone.
CREATE TABLE notifications (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    event_id   uuid NOT NULL,
    tenant_id  uuid REFERENCES tenants (id) ON DELETE CASCADE,
    kind       text NOT NULL,
    title      text NOT NULL,
    link       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    read_at    timestamptz
);
-- A reaction run twice (routing retried) makes no second row.
CREATE UNIQUE INDEX notifications_event_user_key ON notifications (event_id, user_id);
CREATE INDEX notifications_user_idx ON notifications (user_id, created_at DESC, id DESC);
-- The count in every page's header reads only the unread.
CREATE INDEX notifications_unread_idx ON notifications (user_id) WHERE read_at IS NULL;

-- What a person turned away from the defaults, kind by kind: a missing row is the kind's
-- default (package notification holds them).
CREATE TABLE notification_preferences (
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       text NOT NULL,
    inbox      boolean NOT NULL,
    email      boolean NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, kind)
);

-- Those who asked for one mail a day of what they have not read instead of single mails.
CREATE TABLE notification_digests (
    user_id    uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);
