-- Segments and the filter engine (issue 7).
CREATE TABLE segments (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  slug TEXT NOT NULL,
  description TEXT,
  type TEXT NOT NULL,
  condition TEXT,
  track_membership INTEGER NOT NULL DEFAULT 0,
  member_count INTEGER NOT NULL DEFAULT 0,
  counted_at INTEGER,
  computed_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX segments_project_slug_uq ON segments (project_id, slug);
CREATE INDEX segments_project_created_idx ON segments (project_id, created_at, id);

-- STATIC segments: the managed member list. Tracked DYNAMIC segments: the membership of the last compute.
-- Only contact_id has a foreign key (a deleted contact leaves every segment): a key checked per row doubles
-- the cost of writing 100,000 memberships, so the rows of a segment are deleted with it (segments repo) and
-- those of a project with its data (PROJECT_DATA_TABLES).
CREATE TABLE segment_members (
  segment_id TEXT NOT NULL,
  contact_id TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (segment_id, contact_id)
) WITHOUT ROWID;
CREATE INDEX segment_members_contact_idx ON segment_members (contact_id);
