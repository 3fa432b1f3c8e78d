-- Contact search (issue 3, GET /contacts?search=) answers from an in-memory copy of each searched
-- project's emails (src/modules/contacts/search-index.ts), kept exact by a log: every insert, delete and
-- change of a contact's email, subscription, creation time or project appends (transaction id, project,
-- contact, search key), whoever writes. A searching process re-reads the contacts logged by transactions
-- not finished at its previous catch-up (xid >= that snapshot's xmin). Entries of transactions older than
-- the last 1,048,576 are pruned by searching processes; a copy older than that is rebuilt.
--
-- contact_search_keys gives each contact a stable number (PostgreSQL has no stable rowid) that orders
-- the copy and fetches a page's candidates.
-- No contact may be written between the back-fill below and the triggers that log later writes (another
-- node during a rolling deploy): the migration's transaction holds this lock until it commits.
LOCK TABLE contacts IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE contact_search_keys (
  contact_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  search_key BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE UNIQUE INDEX contact_search_keys_project_idx ON contact_search_keys (project_id, search_key);
INSERT INTO contact_search_keys (contact_id, project_id) SELECT id, project_id FROM contacts ORDER BY created_at, id;

CREATE TABLE contact_changes (
  xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  project_id TEXT NOT NULL,
  search_key BIGINT NOT NULL
);
CREATE INDEX contact_changes_xid_idx ON contact_changes (xid);

-- Keys are kept by these triggers rather than a foreign key: a cascade would delete a key before the
-- trigger could log it. Inserts and deletes are logged once per statement (a bulk import pays set-based
-- inserts, not a function call per row); updates, rare and filtered by WHEN, once per row.
CREATE FUNCTION contact_changes_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH k AS (INSERT INTO contact_search_keys (contact_id, project_id) SELECT id, project_id FROM new_rows RETURNING project_id, search_key)
  INSERT INTO contact_changes (project_id, search_key) SELECT project_id, search_key FROM k;
  RETURN NULL;
END $$;
CREATE FUNCTION contact_changes_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH k AS (DELETE FROM contact_search_keys k USING old_rows o WHERE k.contact_id = o.id RETURNING o.project_id, k.search_key)
  INSERT INTO contact_changes (project_id, search_key) SELECT project_id, search_key FROM k;
  RETURN NULL;
END $$;
CREATE FUNCTION contact_changes_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE k BIGINT;
BEGIN
  UPDATE contact_search_keys SET contact_id = NEW.id, project_id = NEW.project_id WHERE contact_id = OLD.id RETURNING search_key INTO k;
  IF k IS NOT NULL THEN
    INSERT INTO contact_changes (project_id, search_key) VALUES (OLD.project_id, k);
    IF NEW.project_id IS DISTINCT FROM OLD.project_id THEN INSERT INTO contact_changes (project_id, search_key) VALUES (NEW.project_id, k); END IF;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER contact_changes_ai AFTER INSERT ON contacts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_changes_insert();
CREATE TRIGGER contact_changes_ad AFTER DELETE ON contacts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_changes_delete();
CREATE TRIGGER contact_changes_au AFTER UPDATE OF id, email, subscribed, created_at, project_id ON contacts FOR EACH ROW
  WHEN (OLD.email IS DISTINCT FROM NEW.email OR OLD.subscribed IS DISTINCT FROM NEW.subscribed OR OLD.created_at IS DISTINCT FROM NEW.created_at
    OR OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.id IS DISTINCT FROM NEW.id)
  EXECUTE FUNCTION contact_changes_update();
