-- Contact search (issue 3, GET /contacts?search=) answers from an in-memory copy of each searched
-- project's emails (src/modules/contacts/search-index.ts), kept exact by a log: every insert, delete and
-- change of a contact's email, subscription, creation time or project appends (transaction id, project,
-- contact, search key), whoever writes. A searching process re-reads the contacts logged by transactions
-- not finished at its previous catch-up (xid >= that snapshot's xmin). Entries of transactions older than
-- the last 1,048,576 are pruned by searching processes; a copy older than that is rebuilt.
--
-- contact_search_keys gives each contact a stable number (PostgreSQL has no stable rowid) that orders
-- the copy and fetches a page's candidates.
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

-- Keys are kept by this trigger rather than a foreign key: a cascade would delete a key before the
-- trigger could log it.
CREATE FUNCTION contact_changes_log() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE k BIGINT;
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO contact_search_keys (contact_id, project_id) VALUES (NEW.id, NEW.project_id) RETURNING search_key INTO k;
    INSERT INTO contact_changes (project_id, search_key) VALUES (NEW.project_id, k);
  ELSIF TG_OP = 'DELETE' THEN
    DELETE FROM contact_search_keys WHERE contact_id = OLD.id RETURNING search_key INTO k;
    IF k IS NOT NULL THEN INSERT INTO contact_changes (project_id, search_key) VALUES (OLD.project_id, k); END IF;
  ELSE
    UPDATE contact_search_keys SET contact_id = NEW.id, project_id = NEW.project_id WHERE contact_id = OLD.id RETURNING search_key INTO k;
    IF k IS NOT NULL THEN
      INSERT INTO contact_changes (project_id, search_key) VALUES (OLD.project_id, k);
      IF NEW.project_id IS DISTINCT FROM OLD.project_id THEN INSERT INTO contact_changes (project_id, search_key) VALUES (NEW.project_id, k); END IF;
    END IF;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER contact_changes_ai AFTER INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION contact_changes_log();
CREATE TRIGGER contact_changes_ad AFTER DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION contact_changes_log();
CREATE TRIGGER contact_changes_au AFTER UPDATE OF id, email, subscribed, created_at, project_id ON contacts FOR EACH ROW
  WHEN (OLD.email IS DISTINCT FROM NEW.email OR OLD.subscribed IS DISTINCT FROM NEW.subscribed OR OLD.created_at IS DISTINCT FROM NEW.created_at
    OR OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.id IS DISTINCT FROM NEW.id)
  EXECUTE FUNCTION contact_changes_log();
