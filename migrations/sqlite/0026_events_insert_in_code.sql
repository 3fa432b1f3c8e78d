-- The two insert triggers of events (migration 0024) move into the code that inserts events on SQLite
-- (src/modules/events/repo.ts insertEvents, segments/repo.ts appendSameEvents): it sets campaign_id and
-- adds the counted types to activity_counts itself. An insert trigger made every event insert cost about
-- a quarter more, even when its WHEN was false, and the track writer thread inserts one per track. The
-- delete and update triggers stay (a contact's cascade, a moved event).
DROP TRIGGER events_campaign_ai;
DROP TRIGGER activity_counts_events_ai;
