-- Consented membership (issue 35, item 4): an invitation is a pending offer until the invitee accepts it,
-- in the dashboard or through the emailed link, whose token is kept here only as its SHA-256.
ALTER TABLE invitations ADD COLUMN token_hash TEXT;
CREATE UNIQUE INDEX invitations_token_hash_uq ON invitations (token_hash);
