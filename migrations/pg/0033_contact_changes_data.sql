-- The in-memory copy of a project's contacts (src/modules/contacts/search/) also holds the text values of
-- their custom fields, for the dashboard's search: a change of `data` is logged like one of the email.
DROP TRIGGER contact_changes_au ON contacts;
CREATE TRIGGER contact_changes_au AFTER UPDATE OF id, email, subscribed, created_at, project_id, data ON contacts FOR EACH ROW
  WHEN (OLD.email IS DISTINCT FROM NEW.email OR OLD.subscribed IS DISTINCT FROM NEW.subscribed OR OLD.created_at IS DISTINCT FROM NEW.created_at
    OR OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.id IS DISTINCT FROM NEW.id OR OLD.data IS DISTINCT FROM NEW.data)
  EXECUTE FUNCTION contact_changes_update();
