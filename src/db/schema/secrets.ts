import type { Cols } from '../columns'

/**
 * One row per key ('jwt', 'dkim'): a fingerprint of the key the database was first served with
 * (HMAC-SHA256 keyed with the key, src/secrets.ts), never the key. A node with another key refuses to start.
 */
export function secretTables(c: Cols) {
  const secretChecks = c.table('secret_checks', {
    name: c.text('name').primaryKey(),
    fingerprint: c.text('fingerprint').notNull(),
    createdAt: c.ts('created_at').notNull(),
  })
  return { secretChecks }
}
