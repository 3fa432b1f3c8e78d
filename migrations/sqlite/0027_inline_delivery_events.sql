-- A direct delivery's email.sent and email.delivery are read from the email's row instead of being two
-- rows of events (src/modules/events/inline.ts, issue 11: 1.5 KB per recipient). `inline_events` is NULL
-- for an email whose delivery events are rows (every email before this migration, and those of a project
-- with event consumers); 0 or 1 for one whose two events are its row's (1: the session used TLS).
ALTER TABLE emails ADD COLUMN inline_events INTEGER;

-- The keyset reads of those events newest first: the project's (events list, activity feed, counts) and
-- a campaign's (its activity). By contact or by email, the emails' own indexes find the few rows.
CREATE INDEX emails_inline_project_idx ON emails (project_id, delivered_at, id) WHERE inline_events IS NOT NULL;
CREATE INDEX emails_inline_campaign_idx ON emails (campaign_id, delivered_at, id) WHERE inline_events IS NOT NULL AND campaign_id IS NOT NULL;

-- email.delivery is a counted type (activity_counts, migration 0024): an email whose events become its
-- row's counts one, and one whose events are written out as rows (inline.ts, spillInlineEvents) counts
-- that one down before the rows count it again.
CREATE TRIGGER activity_counts_emails_inline AFTER UPDATE OF inline_events ON emails
WHEN (old.inline_events IS NULL) <> (new.inline_events IS NULL) AND EXISTS (SELECT 1 FROM projects WHERE id = new.project_id) BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n)
    VALUES (new.project_id, 'email.delivery', new.delivered_at / 3600000 * 3600000, 0, CASE WHEN new.inline_events IS NULL THEN -1 ELSE 1 END)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n + excluded.n;
END;

-- A deleted contact's events go with it (events.contact_id cascades) while its emails stay (contact_id is
-- set to NULL): its inline events go too.
CREATE TRIGGER emails_inline_contact_bd BEFORE DELETE ON contacts BEGIN
  UPDATE emails SET inline_events = NULL WHERE contact_id = old.id AND inline_events IS NOT NULL;
END;
