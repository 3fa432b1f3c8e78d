-- A change of a contact's email, subscription, creation time or data is logged once per UPDATE statement,
-- from its transition tables, instead of by a plpgsql call per row that also rewrote the contact's
-- search key row: a batch of tracks that changes the data of twenty contacts paid twenty calls, twenty
-- key rows rewritten and twenty single-row inserts. Rows whose id or project changes (a move the key
-- row must follow) are still handled one by one by contact_changes_update().
DROP TRIGGER contact_changes_au ON contacts;
CREATE TRIGGER contact_changes_au AFTER UPDATE OF id, project_id ON contacts FOR EACH ROW
  WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.id IS DISTINCT FROM NEW.id)
  EXECUTE FUNCTION contact_changes_update();
CREATE FUNCTION contact_changes_update_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO contact_changes (project_id, search_key)
  SELECT n.project_id, k.search_key
  FROM new_rows n
  JOIN old_rows o ON o.id = n.id AND o.project_id = n.project_id
  JOIN contact_search_keys k ON k.contact_id = n.id
  WHERE o.email IS DISTINCT FROM n.email OR o.subscribed IS DISTINCT FROM n.subscribed
    OR o.created_at IS DISTINCT FROM n.created_at OR o.data IS DISTINCT FROM n.data;
  RETURN NULL;
END $$;
-- A trigger with transition tables cannot name columns: it runs for every UPDATE of contacts, and the
-- WHERE above keeps only the rows whose logged columns changed.
CREATE TRIGGER contact_changes_aus AFTER UPDATE ON contacts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION contact_changes_update_rows();
