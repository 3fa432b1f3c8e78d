-- Issue 11 (database growth per recipient): emails_campaign_idx (campaign_id, status) served the campaign
-- counts by status, which come from the campaign's counters since migration 0019; every read of a campaign's
-- emails walks emails_campaign_created_idx (campaign_id, created_at, id) instead (migration 0024).
-- Email events are stored without the email's base from this version on (src/modules/events/email-base.ts):
-- rows stored before keep their full data and read the same, so nothing is rewritten here.
DROP INDEX emails_campaign_idx;
