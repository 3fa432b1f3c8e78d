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
CREATE TABLE segment_members (
  segment_id TEXT NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  -- No foreign key: the segment's own cascades it, and each key checked per row slows bulk membership writes.
  project_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (segment_id, contact_id)
) WITHOUT ROWID;
CREATE INDEX segment_members_contact_idx ON segment_members (contact_id);
