-- The activity feed's counters (issue 13 performance): items per project, kind ('email' for the emails,
-- else the event name of the feed's event types) and UTC hour (epoch ms), kept by triggers in the
-- transaction that writes, whoever writes (the server, the CLI, a cascade from a deleted contact). So the
-- first page's total, /activity/types and the windowed counts read a few counter rows instead of
-- counting millions of emails and events. Concurrent writers of one project and hour would queue on one
-- row until they commit: each transaction adds to one of 8 rows (`slot`, from its transaction id), and
-- readers sum them.
-- No row may be written between the back-fill below and the triggers (another node during a rolling
-- deploy): the migration's transaction holds these locks until it commits.
LOCK TABLE emails IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE activity_counts (
  project_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  hour BIGINT NOT NULL,
  slot INTEGER NOT NULL DEFAULT 0,
  n BIGINT NOT NULL,
  PRIMARY KEY (project_id, kind, hour, slot)
);

CREATE FUNCTION activity_hour(at TIMESTAMPTZ) RETURNS BIGINT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$ SELECT (floor(extract(epoch FROM at) / 3600) * 3600000)::bigint $$;
CREATE FUNCTION activity_kind(name TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$ SELECT name IN ('email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed') $$;

INSERT INTO activity_counts (project_id, kind, hour, slot, n)
  SELECT project_id, 'email', activity_hour(created_at), 0, count(*) FROM emails GROUP BY project_id, activity_hour(created_at);
INSERT INTO activity_counts (project_id, kind, hour, slot, n)
  SELECT project_id, name, activity_hour(created_at), 0, count(*) FROM events WHERE activity_kind(name) GROUP BY project_id, name, activity_hour(created_at);

-- Inserts and deletes are counted once per statement (a bulk insert pays one grouped upsert), in key
-- order so that two statements lock shared rows in the same order. No foreign key to projects: a deleted
-- project's rows go with the project (its trigger below), and the rows its cascade deletes are not
-- counted down (the project is gone by then).
CREATE FUNCTION activity_slot() RETURNS INTEGER LANGUAGE sql VOLATILE AS $$ SELECT (pg_current_xact_id()::text::bigint % 8)::int $$;

CREATE FUNCTION activity_counts_emails_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n)
    SELECT project_id, 'email', activity_hour(created_at), activity_slot(), count(*) FROM new_rows
    GROUP BY project_id, activity_hour(created_at) ORDER BY 1, 3
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;
CREATE FUNCTION activity_counts_emails_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n)
    SELECT o.project_id, 'email', activity_hour(o.created_at), activity_slot(), -count(*) FROM old_rows o
    WHERE EXISTS (SELECT 1 FROM projects p WHERE p.id = o.project_id)
    GROUP BY o.project_id, activity_hour(o.created_at) ORDER BY 1, 3
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;
CREATE FUNCTION activity_counts_events_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n)
    SELECT project_id, name, activity_hour(created_at), activity_slot(), count(*) FROM new_rows WHERE activity_kind(name)
    GROUP BY project_id, name, activity_hour(created_at) ORDER BY 1, 2, 3
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;
CREATE FUNCTION activity_counts_events_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n)
    SELECT o.project_id, o.name, activity_hour(o.created_at), activity_slot(), -count(*) FROM old_rows o
    WHERE activity_kind(o.name) AND EXISTS (SELECT 1 FROM projects p WHERE p.id = o.project_id)
    GROUP BY o.project_id, o.name, activity_hour(o.created_at) ORDER BY 1, 2, 3
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;
-- Moves between projects, kinds or hours: rare (nothing does it today), so once per row, filtered by WHEN.
CREATE FUNCTION activity_counts_move(p_old TEXT, k_old TEXT, at_old TIMESTAMPTZ, p_new TEXT, k_new TEXT, at_new TIMESTAMPTZ) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  IF k_old IS NOT NULL THEN
    INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n) VALUES (p_old, k_old, activity_hour(at_old), activity_slot(), -1)
      ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n - 1;
  END IF;
  IF k_new IS NOT NULL THEN
    INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n) VALUES (p_new, k_new, activity_hour(at_new), activity_slot(), 1)
      ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n + 1;
  END IF;
END $$;
CREATE FUNCTION activity_counts_emails_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM activity_counts_move(OLD.project_id, 'email', OLD.created_at, NEW.project_id, 'email', NEW.created_at);
  RETURN NULL;
END $$;
CREATE FUNCTION activity_counts_events_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM activity_counts_move(OLD.project_id, CASE WHEN activity_kind(OLD.name) THEN OLD.name END, OLD.created_at,
    NEW.project_id, CASE WHEN activity_kind(NEW.name) THEN NEW.name END, NEW.created_at);
  RETURN NULL;
END $$;
CREATE FUNCTION activity_counts_project_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM activity_counts WHERE project_id = OLD.id;
  RETURN NULL;
END $$;

CREATE TRIGGER activity_counts_emails_ai AFTER INSERT ON emails REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION activity_counts_emails_insert();
CREATE TRIGGER activity_counts_emails_ad AFTER DELETE ON emails REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION activity_counts_emails_delete();
CREATE TRIGGER activity_counts_emails_au AFTER UPDATE OF project_id, created_at ON emails FOR EACH ROW
  WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR activity_hour(OLD.created_at) IS DISTINCT FROM activity_hour(NEW.created_at))
  EXECUTE FUNCTION activity_counts_emails_update();
CREATE TRIGGER activity_counts_events_ai AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION activity_counts_events_insert();
CREATE TRIGGER activity_counts_events_ad AFTER DELETE ON events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION activity_counts_events_delete();
CREATE TRIGGER activity_counts_events_au AFTER UPDATE OF project_id, name, created_at ON events FOR EACH ROW
  WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.name IS DISTINCT FROM NEW.name OR activity_hour(OLD.created_at) IS DISTINCT FROM activity_hour(NEW.created_at))
  EXECUTE FUNCTION activity_counts_events_update();
CREATE TRIGGER activity_counts_projects_ad AFTER DELETE ON projects FOR EACH ROW EXECUTE FUNCTION activity_counts_project_delete();

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
UPDATE events e SET campaign_id = m.campaign_id FROM emails m WHERE m.id = e.email_id AND m.campaign_id IS NOT NULL;
CREATE FUNCTION events_campaign() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT m.campaign_id INTO NEW.campaign_id FROM emails m WHERE m.id = NEW.email_id;
  RETURN NEW;
END $$;
CREATE TRIGGER events_campaign_bi BEFORE INSERT ON events FOR EACH ROW
  WHEN (NEW.email_id IS NOT NULL AND NEW.campaign_id IS NULL) EXECUTE FUNCTION events_campaign();
CREATE INDEX events_campaign_name_created_idx ON events (campaign_id, name, created_at, id) WHERE campaign_id IS NOT NULL;
