-- Change notices (src/db/changes.ts): every statement that changes a watched table announces it on the
-- channel mailctl_changes, delivered to the listening nodes when its transaction commits. A node keeps an
-- exact cache of such a table (the projects' API keys, read on every request) by dropping it on a notice.
-- A statement trigger: one notice per statement (and PostgreSQL folds equal notices of a transaction).
CREATE FUNCTION mailctl_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mailctl_changes', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE TRIGGER projects_change_notice AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON projects
  FOR EACH STATEMENT EXECUTE FUNCTION mailctl_notify_change();
