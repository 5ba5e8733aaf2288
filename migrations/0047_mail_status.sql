-- A mail's life on the lifecycle contract (notification.MailMachine): pending through its
-- attempts, then sent, or failed after its last; sent_at and failed_at keep when.
ALTER TABLE notification_mails ADD COLUMN status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'sent', 'failed'));
UPDATE notification_mails
SET status = CASE WHEN sent_at IS NOT NULL THEN 'sent' WHEN failed_at IS NOT NULL THEN 'failed' ELSE 'pending' END;
