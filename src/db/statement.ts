/**
 * One SQL text run on either store inside a transaction, for short per-request statements where
 * drizzle's query builder costs more than the statement (idempotency keys, the tracking switch, the
 * events' interest look-up). The repo writes the text once, with `$1`, `$2`... placeholders, in SQL both
 * stores read; the store-specific part is here:
 * - SQLite: a statement compiled once on the transaction's connection (bun:sqlite caches `query(text)` by
 *   its text), placeholders as `?1`, `?2`...;
 * - PostgreSQL: the same text through drizzle's `sql` template on the transaction's connection.
 * Rows come back raw, as Store.prepared gives them: on SQLite booleans are 0/1, timestamps epoch ms and
 * JSON text; bind times with `momentParam` (dialect.ts) and map the rows in the repo.
 */
import { sql, type SQL } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from './client'

type Param = string | number | null

/** A text split at its placeholders, once per text: the SQLite spelling and PostgreSQL's parts. */
interface Compiled { sqlite: string; parts: string[]; slots: number[] }

// A cache, not state: each text is compiled the same way whenever it is asked for. Texts are constants of
// the code, or the interest look-up, which changes only when a consumer is registered.
const compiled = new Map<string, Compiled>()
const MAX_TEXTS = 500

function compile(text: string): Compiled {
  let c = compiled.get(text)
  if (!c) {
    const pieces = text.split(/\$(\d+)/)
    const parts: string[] = []
    const slots: number[] = []
    pieces.forEach((p, i) => { if (i % 2 === 0) parts.push(p); else slots.push(Number(p) - 1) })
    if (compiled.size >= MAX_TEXTS) compiled.clear()
    c = { sqlite: text.replace(/\$(\d+)/g, '?$1'), parts, slots }
    compiled.set(text, c)
  }
  return c
}

/** Runs `text` with `params` in `db` (a transaction's handle, or `store.db` for a read) and answers its rows. */
export async function statementRows<T = Record<string, unknown>>(store: Store, db: Db, text: string, ...params: Param[]): Promise<T[]> {
  const c = compile(text)
  // dialect: SQLite runs the text compiled once on the connection, PostgreSQL through drizzle's session of the transaction
  if (store.dialect === 'sqlite') return sqliteConnection(db).query(c.sqlite).all(...params) as T[]
  const chunks: SQL[] = []
  c.parts.forEach((part, i) => {
    chunks.push(sql.raw(part))
    if (i < c.slots.length) chunks.push(sql`${params[c.slots[i] as number] ?? null}`)
  })
  return store.rows<T>(sql.join(chunks), db)
}
