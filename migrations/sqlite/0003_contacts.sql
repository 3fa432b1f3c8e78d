-- Contacts and events (issue 3): CSV uploads awaiting their import job, and list/search indexes.
CREATE TABLE contact_imports (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  filename TEXT NOT NULL,
  size INTEGER NOT NULL,
  content BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX contact_imports_project_idx ON contact_imports (project_id);

-- Substring search of emails (GET /contacts?search=): a trigram full-text index over contacts.email,
-- kept in step by triggers. It maps FTS rows to contacts by rowid: after a VACUUM (which may renumber
-- the rowids of a table without an INTEGER PRIMARY KEY) rebuild it with
--   INSERT INTO contacts_email_fts (contacts_email_fts) VALUES ('rebuild');
-- Searches recheck the email, so a stale index can miss rows but never return a wrong one.
CREATE VIRTUAL TABLE contacts_email_fts USING fts5 (email, content = 'contacts', content_rowid = 'rowid', tokenize = 'trigram');
CREATE TRIGGER contacts_email_fts_ai AFTER INSERT ON contacts BEGIN
  INSERT INTO contacts_email_fts (rowid, email) VALUES (new.rowid, new.email);
END;
CREATE TRIGGER contacts_email_fts_ad AFTER DELETE ON contacts BEGIN
  INSERT INTO contacts_email_fts (contacts_email_fts, rowid, email) VALUES ('delete', old.rowid, old.email);
END;
CREATE TRIGGER contacts_email_fts_au AFTER UPDATE OF email ON contacts BEGIN
  INSERT INTO contacts_email_fts (contacts_email_fts, rowid, email) VALUES ('delete', old.rowid, old.email);
  INSERT INTO contacts_email_fts (rowid, email) VALUES (new.rowid, new.email);
END;
INSERT INTO contacts_email_fts (contacts_email_fts) VALUES ('rebuild');
