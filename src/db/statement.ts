/**
 * One SQL text run on either store inside a transaction, for short per-request statements where
 * drizzle's query builder costs more than the statement (idempotency keys, the tracking switch, the
 * events' interest look-up). The repo writes the text once, with `$1`, `$2`... placeholders, in SQL both
 * stores read; the store-specific part is here:
 * - SQLite: a statement compiled once on the transaction's connection (bun:sqlite caches `query(text)` by
 *   its text), placeholders as `?1`, `?2`...;
 * - PostgreSQL: the same text through drizzle's `sql` template on the transaction's connection.
 * `IN $n[]` tests a value against a list bound as ONE parameter (pass an array): SQLite reads it with
 * json_each, PostgreSQL as an array of jsonb_array_elements_text (as inJsonList in dialect.ts, and for the
 * same reasons: hundreds of ids, and PostgreSQL's limit of 65,535 parameters). A list holds text: it is
 * compared with text columns (ids, emails, names) on both stores.
 * Rows come back raw, as Store.prepared gives them: on SQLite booleans are 0/1, timestamps epoch ms and
 * JSON text; bind times with `momentParam` (dialect.ts) and map the rows in the repo (`fromRaw` of
 * sqlite-statements.ts maps a row of whole columns by the table's own mappers on either store).
 */
import { sql, type SQL } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from './client'

type Param = string | number | null | readonly string[]

/** `IN $n[]`: a list parameter. */
const LIST = /\bIN \$(\d+)\[\]/g

/** A text split at its placeholders, once per text: the SQLite spelling and PostgreSQL's parts. */
interface Compiled { sqlite: string; parts: string[]; slots: number[] }

// A cache, not state: each text is compiled the same way whenever it is asked for. Texts are constants of
// the code, or the interest look-up, which changes only when a consumer is registered.
const compiled = new Map<string, Compiled>()
const MAX_TEXTS = 500

/** Placeholders (`$n`) in `text`. */
const countSlots = (text: string) => text.match(/\$\d+/g)?.length ?? 0

/**
 * Refuses what the rewriting below would get wrong, at the first run of the text: a placeholder inside a
 * quoted string or a comment (both stores would read it as a parameter), and `NOT IN $n[]` (PostgreSQL
 * has no `NOT = ANY`; write `NOT (x IN $n[])`).
 */
function checkText(text: string) {
  if (/\bNOT\s+IN\s+\$\d+\[\]/i.test(text)) throw new Error(`statementRows: NOT IN $n[] is not supported (write NOT (x IN $n[])): ${text}`)
  const bare = text.replace(/'(?:[^']|'')*'/g, "''").replace(/--[^\n]*/g, '').replace(/\/\*[\s\S]*?\*\//g, '')
  if (countSlots(bare) !== countSlots(text)) throw new Error(`statementRows: a placeholder inside a quoted string or a comment: ${text}`)
}

function compile(text: string): Compiled {
  let c = compiled.get(text)
  if (!c) {
    checkText(text)
    const pg = text.replace(LIST, '= ANY (ARRAY(SELECT jsonb_array_elements_text($$$1::jsonb)))')
    const pieces = pg.split(/\$(\d+)/)
    const parts: string[] = []
    const slots: number[] = []
    pieces.forEach((p, i) => { if (i % 2 === 0) parts.push(p); else slots.push(Number(p) - 1) })
    if (compiled.size >= MAX_TEXTS) compiled.clear()
    c = { sqlite: text.replace(LIST, 'IN (SELECT value FROM json_each($$$1))').replace(/\$(\d+)/g, '?$1'), parts, slots }
    compiled.set(text, c)
  }
  return c
}

/** Runs `text` with `params` in `db` (a transaction's handle, or `store.db` for a read) and answers its rows. */
export async function statementRows<T = Record<string, unknown>>(store: Store, db: Db, text: string, ...given: Param[]): Promise<T[]> {
  const c = compile(text)
  const params = given.map((p) => (Array.isArray(p) ? JSON.stringify(p) : p as string | number | null))
  // dialect: SQLite runs the text compiled once on the connection, PostgreSQL through drizzle's session of the transaction
  if (store.dialect === 'sqlite') return sqliteConnection(db).query(c.sqlite).all(...params) as T[]
  const chunks: SQL[] = []
  c.parts.forEach((part, i) => {
    chunks.push(sql.raw(part))
    if (i < c.slots.length) chunks.push(sql`${params[c.slots[i] as number] ?? null}`)
  })
  return store.rows<T>(sql.join(chunks), db)
}
