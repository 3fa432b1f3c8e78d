-- Preheaders (issue 36): the preview text an inbox shows after the subject, kept beside the body. The body
-- holds it too, as a hidden block at its top (src/modules/templates/preheader.ts), so every way of sending
-- a template or a campaign shows it without reading this column.
ALTER TABLE templates ADD COLUMN preheader TEXT;
ALTER TABLE campaigns ADD COLUMN preheader TEXT;
