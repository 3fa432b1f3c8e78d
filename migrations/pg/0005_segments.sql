-- Segments and the filter engine (issue 7).
CREATE TABLE segments (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  slug TEXT NOT NULL,
  description TEXT,
  type TEXT NOT NULL,
  condition JSONB,
  track_membership BOOLEAN NOT NULL DEFAULT false,
  member_count INTEGER NOT NULL DEFAULT 0,
  counted_at TIMESTAMPTZ(3),
  computed_at TIMESTAMPTZ(3),
  created_at TIMESTAMPTZ(3) NOT NULL,
  updated_at TIMESTAMPTZ(3) NOT NULL
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
  created_at TIMESTAMPTZ(3) NOT NULL,
  PRIMARY KEY (segment_id, contact_id)
);
CREATE INDEX segment_members_contact_idx ON segment_members (contact_id);

-- Milliseconds since the epoch of an ISO-8601 date or date-time text ('YYYY-MM-DD', 'YYYY-MM-DDTHH:MM[:SS[.fff]]'
-- with an optional 'Z' or '+HH:MM' offset; no offset means UTC), NULL for anything else. Never raises, unlike
-- a cast, so a contact's malformed value cannot fail a segment query. Day numbers past the month's end roll
-- over (as SQLite's julianday() does), so both stores agree.
CREATE FUNCTION mailctl_date_ms(s TEXT) RETURNS NUMERIC
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  m TEXT[];
  y INTEGER; mo INTEGER; d INTEGER;
  era INTEGER; yoe INTEGER; doy INTEGER; doe INTEGER; days BIGINT;
  ms NUMERIC;
BEGIN
  m := regexp_match(s, '^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?:[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(\.\d{1,9})?)?(Z|z|([+-])([01]\d):([0-5]\d))?)?$');
  IF m IS NULL THEN RETURN NULL; END IF;
  y := m[1]::INTEGER; mo := m[2]::INTEGER; d := m[3]::INTEGER;
  -- days from 1970-01-01 (proleptic Gregorian), H. Hinnant's days_from_civil
  IF mo <= 2 THEN y := y - 1; END IF;
  era := floor(y / 400.0)::INTEGER;
  yoe := y - era * 400;
  doy := (153 * (CASE WHEN mo > 2 THEN mo - 3 ELSE mo + 9 END) + 2) / 5 + d - 1;
  doe := yoe * 365 + yoe / 4 - yoe / 100 + doy;
  days := era::BIGINT * 146097 + doe - 719468;
  ms := days * 86400000::NUMERIC
    + COALESCE(m[4]::NUMERIC, 0) * 3600000 + COALESCE(m[5]::NUMERIC, 0) * 60000
    + COALESCE(m[6]::NUMERIC, 0) * 1000 + COALESCE(('0' || m[7])::NUMERIC, 0) * 1000;
  IF m[9] IS NOT NULL THEN
    ms := ms - (CASE WHEN m[9] = '-' THEN -1 ELSE 1 END) * (m[10]::NUMERIC * 3600000 + m[11]::NUMERIC * 60000);
  END IF;
  RETURN ms;
END
$$;
