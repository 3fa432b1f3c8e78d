-- The processes that hold leases (src/jobs/nodes.ts): one row per running node with its heartbeat. A lease
-- is dead when its holder's node row is stale or gone; hostname and pid are only shown to operators.
CREATE TABLE nodes (
  id TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
);
