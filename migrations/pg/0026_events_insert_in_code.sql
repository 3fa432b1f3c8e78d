-- SQLite only (its event insert triggers moved into the code that inserts events). PostgreSQL keeps the
-- insert triggers of migration 0024: they spread concurrent writers over counter slots, and a row trigger
-- there does not cost the writer what it costs SQLite's.
SELECT 1;
