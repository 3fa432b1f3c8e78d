-- The dashboard's visual editor (issue 36): a template's or campaign's design, the editor's JSON document
-- beside the HTML `body` it produced. NULL for a body written as HTML (every row before this migration,
-- and whatever an API client sends without a design).
ALTER TABLE templates ADD COLUMN design JSONB;
ALTER TABLE campaigns ADD COLUMN design JSONB;
