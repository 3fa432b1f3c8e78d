-- The contacts of one project in rowid order (an index on project_id alone ends with the rowid): the
-- search copy (src/modules/contacts/search-index.ts) is built from it chunk by chunk, instead of walking
-- the whole table in rowid order, which for a small project in a large shared database meant one long scan.
CREATE INDEX contacts_project_rowid_idx ON contacts (project_id);
