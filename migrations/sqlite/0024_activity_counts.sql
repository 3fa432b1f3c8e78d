-- The activity feed's counters (issue 13 performance): items per project, kind ('email' for the emails,
-- else the event name of the feed's event types) and UTC hour, kept by triggers in the transaction that
-- writes, whoever writes (the server, its track writer, the CLI, a cascade from a deleted contact). So the
-- first page's total, /activity/types and the windowed counts read a few counter rows instead of
-- counting millions of emails and events. `slot` spreads PostgreSQL's concurrent writers over several
-- rows; SQLite has one writer, so it is always 0 here.
CREATE TABLE activity_counts (
  project_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  hour INTEGER NOT NULL,
  slot INTEGER NOT NULL DEFAULT 0,
  n INTEGER NOT NULL,
  PRIMARY KEY (project_id, kind, hour, slot)
) WITHOUT ROWID;

INSERT INTO activity_counts (project_id, kind, hour, slot, n)
  SELECT project_id, 'email', created_at / 3600000 * 3600000, 0, count(*) FROM emails GROUP BY project_id, created_at / 3600000;
INSERT INTO activity_counts (project_id, kind, hour, slot, n)
  SELECT project_id, name, created_at / 3600000 * 3600000, 0, count(*) FROM events
  WHERE name IN ('email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed')
  GROUP BY project_id, name, created_at / 3600000;

-- No foreign key to projects: a deleted project's rows go with the project (the last trigger), and the
-- rows its cascade deletes are not counted down (the project is gone by then).
CREATE TRIGGER activity_counts_emails_ai AFTER INSERT ON emails BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (new.project_id, 'email', new.created_at / 3600000 * 3600000, 0, 1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER activity_counts_emails_ad AFTER DELETE ON emails WHEN EXISTS (SELECT 1 FROM projects WHERE id = old.project_id) BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (old.project_id, 'email', old.created_at / 3600000 * 3600000, 0, -1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n - 1;
END;
CREATE TRIGGER activity_counts_emails_au AFTER UPDATE OF project_id, created_at ON emails
WHEN old.project_id IS NOT new.project_id OR old.created_at / 3600000 IS NOT new.created_at / 3600000 BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (old.project_id, 'email', old.created_at / 3600000 * 3600000, 0, -1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n - 1;
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (new.project_id, 'email', new.created_at / 3600000 * 3600000, 0, 1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER activity_counts_events_ai AFTER INSERT ON events
WHEN new.name IN ('email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed') BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (new.project_id, new.name, new.created_at / 3600000 * 3600000, 0, 1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER activity_counts_events_ad AFTER DELETE ON events
WHEN old.name IN ('email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed')
  AND EXISTS (SELECT 1 FROM projects WHERE id = old.project_id) BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (old.project_id, old.name, old.created_at / 3600000 * 3600000, 0, -1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n - 1;
END;
CREATE TRIGGER activity_counts_events_au_old AFTER UPDATE OF project_id, name, created_at ON events
WHEN (old.project_id IS NOT new.project_id OR old.name IS NOT new.name OR old.created_at / 3600000 IS NOT new.created_at / 3600000)
  AND old.name IN ('email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed') BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (old.project_id, old.name, old.created_at / 3600000 * 3600000, 0, -1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n - 1;
END;
CREATE TRIGGER activity_counts_events_au_new AFTER UPDATE OF project_id, name, created_at ON events
WHEN (old.project_id IS NOT new.project_id OR old.name IS NOT new.name OR old.created_at / 3600000 IS NOT new.created_at / 3600000)
  AND new.name IN ('email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed') BEGIN
  INSERT INTO activity_counts (project_id, kind, hour, slot, n) VALUES (new.project_id, new.name, new.created_at / 3600000 * 3600000, 0, 1)
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER activity_counts_projects_ad AFTER DELETE ON projects BEGIN
  DELETE FROM activity_counts WHERE project_id = old.id;
END;

-- Every filter of the feed walks an index in (created_at, id) order, newest first, and stops after a page:
-- one keyset read per event type (type, and the default of every type), by contact, by campaign, by status.
DROP INDEX events_project_name_created_idx;
CREATE INDEX events_project_name_created_idx ON events (project_id, name, created_at, id);
DROP INDEX events_contact_created_idx;
CREATE INDEX events_contact_created_idx ON events (contact_id, created_at, id);
DROP INDEX emails_contact_idx;
CREATE INDEX emails_contact_idx ON emails (contact_id, created_at, id);
CREATE INDEX emails_campaign_created_idx ON emails (campaign_id, created_at, id) WHERE campaign_id IS NOT NULL;
CREATE INDEX emails_project_status_created_idx ON emails (project_id, status, created_at, id);

-- The feed of one campaign lists its emails and their events: each event of a campaign email carries the
-- campaign (set by this trigger, whoever inserts; an email's campaign never changes), so a campaign's
-- events are read newest first from their own index instead of gathering and sorting all of them.
ALTER TABLE events ADD COLUMN campaign_id TEXT;
UPDATE events SET campaign_id = (SELECT m.campaign_id FROM emails m WHERE m.id = events.email_id)
  WHERE email_id IN (SELECT id FROM emails WHERE campaign_id IS NOT NULL);
CREATE TRIGGER events_campaign_ai AFTER INSERT ON events
WHEN new.email_id IS NOT NULL AND new.campaign_id IS NULL BEGIN
  UPDATE events SET campaign_id = (SELECT m.campaign_id FROM emails m WHERE m.id = new.email_id)
  WHERE rowid = new.rowid AND EXISTS (SELECT 1 FROM emails m WHERE m.id = new.email_id AND m.campaign_id IS NOT NULL);
END;
CREATE INDEX events_campaign_name_created_idx ON events (campaign_id, name, created_at, id) WHERE campaign_id IS NOT NULL;
