-- The in-memory copy of a project's contacts (src/modules/contacts/search/) also holds the text values of
-- their custom fields, for the dashboard's search: a change of `data` is logged like one of the email.
DROP TRIGGER contact_changes_au;
CREATE TRIGGER contact_changes_au AFTER UPDATE OF email, subscribed, created_at, project_id, data ON contacts
WHEN old.email IS NOT new.email OR old.subscribed IS NOT new.subscribed OR old.created_at IS NOT new.created_at OR old.project_id IS NOT new.project_id
  OR old.data IS NOT new.data
BEGIN
  INSERT INTO contact_changes (contact_rowid) VALUES (new.rowid);
END;
