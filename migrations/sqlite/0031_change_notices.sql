-- Change notices are PostgreSQL's (migrations/pg/0030_change_notices.sql): on SQLite every process sees
-- any commit through PRAGMA data_version (src/db/client.ts, changeVersion), so nothing is needed here.
SELECT 1;
