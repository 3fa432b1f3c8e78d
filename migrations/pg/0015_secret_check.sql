-- Fingerprints of the keys the database was first served with (HMAC-SHA256 keyed with each key, never the
-- key): a node started with other keys (MAILCTL_SECRET) refuses to start instead of failing to decrypt.
CREATE TABLE secret_checks (
  name TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  created_at TIMESTAMPTZ(3) NOT NULL
);
