-- Contacts and events (issue 3): CSV uploads awaiting their import job, and list/search indexes.
CREATE TABLE contact_imports (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  filename TEXT NOT NULL,
  size INTEGER NOT NULL,
  content BYTEA NOT NULL,
  created_at TIMESTAMPTZ(3) NOT NULL
);
CREATE INDEX contact_imports_project_idx ON contact_imports (project_id);

-- Substring search of emails (GET /contacts?search=): a trigram GIN index when the pg_trgm extension
-- can be created (it is a trusted extension: the database owner may create it). Without it searches
-- still work, by scanning.
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN insufficient_privilege OR undefined_file THEN
  RAISE NOTICE 'pg_trgm unavailable: contact search will scan';
END $$;
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    EXECUTE 'CREATE INDEX contacts_email_trgm_idx ON contacts USING gin (email gin_trgm_ops)';
  END IF;
END $$;
