-- One insert path for events on both stores: the code that inserts events (src/modules/events/repo.ts,
-- insertEvents and insertSameEvents, the only writers of events) sets campaign_id from the event's email
-- and adds the counted types to activity_counts itself, as it already did on SQLite (migration 0026 there).
-- The two insert triggers go; the delete and update triggers stay (a contact's cascade, a moved event).
DROP TRIGGER events_campaign_bi ON events;
DROP FUNCTION events_campaign();
DROP TRIGGER activity_counts_events_ai ON events;
DROP FUNCTION activity_counts_events_insert();
