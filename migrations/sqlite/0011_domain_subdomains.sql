-- A verified domain covers senders at its subdomains only when its owner says so (off by default): DMARC's
-- relaxed alignment lets such mail pass, which is exactly why it must be a choice.
ALTER TABLE domains ADD COLUMN allow_subdomains INTEGER NOT NULL DEFAULT 0;
