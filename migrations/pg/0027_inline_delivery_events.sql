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
CREATE FUNCTION activity_counts_emails_inline() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM projects WHERE id = NEW.project_id) THEN RETURN NULL; END IF;
  INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n)
    VALUES (NEW.project_id, 'email.delivery', activity_hour(NEW.delivered_at), activity_slot(), CASE WHEN NEW.inline_events IS NULL THEN -1 ELSE 1 END)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;
CREATE TRIGGER activity_counts_emails_inline AFTER UPDATE OF inline_events ON emails
FOR EACH ROW WHEN ((OLD.inline_events IS NULL) IS DISTINCT FROM (NEW.inline_events IS NULL)) EXECUTE FUNCTION activity_counts_emails_inline();

-- A deleted contact's events go with it (events.contact_id cascades) while its emails stay (contact_id is
-- set to NULL): its inline events go too.
CREATE FUNCTION emails_inline_contact_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE emails SET inline_events = NULL WHERE contact_id = OLD.id AND inline_events IS NOT NULL;
  RETURN OLD;
END $$;
CREATE TRIGGER emails_inline_contact_bd BEFORE DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION emails_inline_contact_delete();
