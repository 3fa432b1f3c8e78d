import { sql } from 'drizzle-orm'
import { measureJson } from '../modules/contacts/data'
import type { Db, Store } from './client'

/**
 * Data repairs: steps written in TypeScript that `migrate` applies once, after the SQL migrations, and
 * records in schema_migrations like them (a step needs what SQL cannot do, such as parsing JSON that the
 * database itself cannot read).
 */
export interface Repair { name: string; run(store: Store, db: Db): Promise<void> }

/** Documents nested this deep are beyond SQLite's JSON functions (its JSON_MAX_DEPTH is 1,000 levels). */
const SQLITE_JSON_DEPTH = 1000

/**
 * Before contact data was limited to 10 levels, a track could store contact data nested 1,000 levels or
 * more. SQLite's JSON functions then fail ("malformed JSON") on every query that reads the data of the
 * project's contacts (custom fields, segments). Each such contact keeps every field SQLite can read and
 * loses those it cannot (the values nested that deep); its updated_at is left alone. Event data is not
 * repaired: the service reads it with SQLite's JSON functions only for the email.* events it writes itself.
 */
async function unreadableContactData(store: Store, db: Db): Promise<void> {
  const rows = await store.rows<{ id: string; data: string }>(sql`SELECT id, data FROM contacts WHERE NOT json_valid(data)`, db)
  for (const row of rows) {
    let parsed: unknown = null
    try { parsed = JSON.parse(row.data) } catch { /* not JSON at all: nothing to keep */ }
    const kept: Record<string, unknown> = {}
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      for (const [key, value] of Object.entries(parsed)) {
        if (measureJson(value, SQLITE_JSON_DEPTH - 1) === 'too_deep') continue
        const [check] = await store.rows<{ ok: number }>(sql`SELECT json_valid(${JSON.stringify({ [key]: value })}) AS ok`, db)
        if (check?.ok) kept[key] = value
      }
    }
    await store.exec(sql`UPDATE contacts SET data = ${JSON.stringify(kept)} WHERE id = ${row.id}`, db)
  }
}

export const REPAIRS: Record<'sqlite' | 'pg', Repair[]> = {
  sqlite: [{ name: '0012_unreadable_contact_data', run: unreadableContactData }],
  // PostgreSQL refused such data when it was written (its parser's stack limit) or reads it back whole.
  pg: [],
}
