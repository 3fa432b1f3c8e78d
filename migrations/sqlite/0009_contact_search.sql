-- Contact search (issue 3, GET /contacts?search=) answers from an in-memory copy of each searched
-- project's emails (src/modules/contacts/search-index.ts), kept exact by this log: every insert, delete
-- and change of a contact's email, subscription, creation time or project appends its rowid, in the same
-- transaction, whoever writes (the server, its track writer thread, the CLI). A searching process
-- re-reads the rows logged since its last search. The log keeps its last 262,144 entries (pruned 4,096 at
-- a time); a process further behind rebuilds its copy.
CREATE TABLE contact_changes (
  seq INTEGER PRIMARY KEY,
  contact_rowid INTEGER NOT NULL
);
CREATE TRIGGER contact_changes_ai AFTER INSERT ON contacts BEGIN
  INSERT INTO contact_changes (contact_rowid) VALUES (new.rowid);
END;
CREATE TRIGGER contact_changes_ad AFTER DELETE ON contacts BEGIN
  INSERT INTO contact_changes (contact_rowid) VALUES (old.rowid);
END;
CREATE TRIGGER contact_changes_au AFTER UPDATE OF email, subscribed, created_at, project_id ON contacts
WHEN old.email IS NOT new.email OR old.subscribed IS NOT new.subscribed OR old.created_at IS NOT new.created_at OR old.project_id IS NOT new.project_id
BEGIN
  INSERT INTO contact_changes (contact_rowid) VALUES (new.rowid);
END;
CREATE TRIGGER contact_changes_prune AFTER INSERT ON contact_changes WHEN new.seq % 4096 = 0 BEGIN
  DELETE FROM contact_changes WHERE seq <= new.seq - 262144;
END;

-- The trigram index this replaces cost about 100 us per inserted contact (FTS5 merges its segments on
-- every commit); the log costs a few.
DROP TRIGGER contacts_email_fts_ai;
DROP TRIGGER contacts_email_fts_ad;
DROP TRIGGER contacts_email_fts_au;
DROP TABLE contacts_email_fts;
