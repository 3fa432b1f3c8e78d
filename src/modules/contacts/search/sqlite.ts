import type { Database } from 'bun:sqlite'
import { sqliteConnection, type Store } from '../../../db/client'
import { appendChunk, applyChange, CHUNK, type SearchRow } from './chunks'
import { foldText } from './fold'
import type { ProjectIndex } from './index'

/**
 * Keeping a SQLite project's index current: triggers of migration 0009 append the rowid of every
 * inserted, deleted or changed contact (email, subscribed, created_at, project) to `contact_changes` in
 * the same transaction as the change, whoever writes (this process, the track writer thread, the CLI). An
 * index remembers the last `seq` it applied; before answering, it re-reads, in the request's read
 * snapshot, the current row of every rowid logged since, so it holds exactly that snapshot's contacts.
 * The log keeps its last 262,144 entries; an index further behind than that (or than its own size) is
 * rebuilt instead.
 *
 * Building reads the table in rowid order, CHUNK rows per event-loop turn (so other requests run in
 * between); rows change under it, but every change after its first read is in the log and is applied at
 * the end. A VACUUM may renumber rowids: it moves schema_version, which every catch-up checks.
 */

/** Changes applied in one turn; a longer backlog is applied over several turns. */
const CATCH_UP_BATCH = 8192

/**
 * The store's read connection, used synchronously: a catch-up and the scan that follows it run in one
 * event-loop turn, hence in one read snapshot (client.ts), the one the page query of the same turn reads.
 */
function reader(store: Store): Database {
  return sqliteConnection(store.db)
}

export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

interface LogBounds { lo: number | null; hi: number | null; schema: number }

function logBounds(db: Database): LogBounds {
  // Two subqueries: SQLite answers a lone min() or max() from the end of the index, both at once by a scan.
  // schema_version moves on every VACUUM (which may renumber rowids) and schema change: then rebuild.
  return db.query(`SELECT (SELECT min(seq) FROM contact_changes) AS lo, (SELECT max(seq) FROM contact_changes) AS hi,
    (SELECT schema_version FROM pragma_schema_version()) AS schema`).get() as LogBounds
}

/** A logged rowid and its contact now: all null when the contact is gone. */
type Change =
  | { key: number; projectId: string; email: string; subscribed: number; createdAt: number; data: string }
  | { key: number; projectId: null; email: null; subscribed: null; createdAt: null; data: null }

/** A stored `data` (JSON text), folded for the copy. */
function valuesOf(data: string | null): string {
  return !data || data === '{}' ? '' : foldText(data)
}

/** Applies the logged changes after ix.seq, up to `limit` of them; 'gap' when some were pruned from the log. */
function applyLog(db: Database, ix: ProjectIndex, limit: number): 'current' | 'behind' | 'gap' {
  const b = logBounds(db)
  const hi = b.hi ?? 0
  if (b.schema !== ix.schema) return 'gap'
  if (hi === ix.seq) return 'current'
  if (hi < ix.seq || (b.lo ?? 0) > ix.seq + 1) return 'gap'
  if (hi - ix.seq > Math.max(ix.size, 65_536)) return 'gap' // rebuilding reads fewer rows
  const upto = Math.min(hi, ix.seq + limit)
  const changes = db.query<Change, [number, number]>(`SELECT l.contact_rowid AS "key", c.project_id AS "projectId", c.email AS email, c.subscribed AS subscribed,
    c.created_at AS "createdAt", c.data AS data
    FROM contact_changes l LEFT JOIN contacts c ON c.rowid = l.contact_rowid WHERE l.seq > ? AND l.seq <= ? ORDER BY l.seq`).all(ix.seq, upto)
  for (const ch of changes) {
    applyChange(ix, ch.key, ch.projectId === ix.projectId ? { key: ch.key, email: ch.email, subscribed: ch.subscribed, createdAt: ch.createdAt, values: valuesOf(ch.data) } : null)
  }
  ix.seq = upto
  return upto === hi ? 'current' : 'behind'
}

/** Brings `ix` up to this turn's read snapshot, or part of the way ('behind': call again next turn). */
export function catchUpSqlite(store: Store, ix: ProjectIndex): 'current' | 'behind' | 'gap' {
  return applyLog(reader(store), ix, CATCH_UP_BATCH)
}

/** A project's index read from the table; null when it holds more than `budget` rows. */
export async function buildSqlite(store: Store, projectId: string, budget: number): Promise<ProjectIndex | null> {
  const db = reader(store)
  const b = logBounds(db)
  const ix: ProjectIndex = { projectId, fold: true, chunks: [], extra: new Map(), seq: b.hi ?? 0, schema: b.schema, size: 0, used: Date.now() }
  // contacts_project_rowid_idx (migration 0010) holds a project's rows in rowid order.
  const page = db.query<SearchRow & { data: string }, [string, number, number]>(`SELECT rowid AS "key", email, subscribed, created_at AS "createdAt", data
    FROM contacts INDEXED BY contacts_project_rowid_idx WHERE project_id = ? AND rowid > ? ORDER BY rowid LIMIT ?`)
  let after = 0
  for (;;) {
    const rows = page.all(projectId, after, CHUNK)
    for (const r of rows) r.values = valuesOf(r.data)
    appendChunk(ix, rows)
    if (ix.size > budget) return null
    if (rows.length < CHUNK) return ix
    after = rows[rows.length - 1].key
    await nextTurn()
  }
}
