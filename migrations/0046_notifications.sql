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
    -- False for a notification its reader takes by mail only: it is kept for the mail, and
    -- the inbox does not show it.
    inbox      boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    read_at    timestamptz
);
-- A reaction run twice (routing retried) makes no second row.
CREATE UNIQUE INDEX notifications_event_user_key ON notifications (event_id, user_id);
CREATE INDEX notifications_user_idx ON notifications (user_id, created_at DESC, id DESC);
-- The count in every page's header reads only the unread.
CREATE INDEX notifications_unread_idx ON notifications (user_id) WHERE read_at IS NULL AND inbox;

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
    -- Up to when the last digest told; the next tells what came after, unread.
    sent_until timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The SMTP server the operator set (at most one: the singleton column); the password is sealed
-- with the master key. base_url is Nimbus's public address, which mails link to.
CREATE TABLE mail_settings (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    host            text NOT NULL,
    port            integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    tls             text NOT NULL CHECK (tls IN ('none', 'starttls', 'tls')),
    username        text NOT NULL DEFAULT '',
    password        bytea,
    password_key_id text NOT NULL DEFAULT '',
    from_address    text NOT NULL,
    base_url        text NOT NULL,
    set_by          uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- One mail to send: of one notification, or a digest (no notification) of what its reader had
-- not read between since and created_at. A River job sends it, with retries; sent_at or
-- failed_at (the last attempt failed, error says why) records how it ended.
CREATE TABLE notification_mails (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    notification_id uuid REFERENCES notifications (id) ON DELETE CASCADE,
    since           timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    error           text NOT NULL DEFAULT '',
    sent_at         timestamptz,
    failed_at       timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((notification_id IS NULL) = (since IS NOT NULL))
);
CREATE UNIQUE INDEX notification_mails_notification_key ON notification_mails (notification_id) WHERE notification_id IS NOT NULL;
-- The operator's list of failed deliveries reads only those.
CREATE INDEX notification_mails_failed_idx ON notification_mails (failed_at DESC) WHERE failed_at IS NOT NULL;
