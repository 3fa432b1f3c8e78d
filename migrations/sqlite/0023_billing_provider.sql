-- Payment-provider billing (issue 13): each project's customer and subscription at the provider, as the
-- provider's webhook reports them, and the provider events already applied (one row per event id).
CREATE TABLE billing_subscriptions (
  project_id TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
  customer_id TEXT,
  subscription_id TEXT,
  status TEXT NOT NULL,
  price_id TEXT,
  current_period_end INTEGER,
  cancel_at_period_end INTEGER NOT NULL DEFAULT 0,
  last_invoice_paid_at INTEGER,
  event_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX billing_subscriptions_customer_idx ON billing_subscriptions (customer_id);

CREATE TABLE billing_events (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  project_id TEXT,
  outcome TEXT NOT NULL,
  received_at INTEGER NOT NULL
);
