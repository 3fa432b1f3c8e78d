import { pgConnection, type Store } from '../../../db/client'
import { appendChunk, applyChange, CHUNK, type SearchRow } from './chunks'
import { foldText } from './fold'
import type { ProjectIndex } from './index'

/**
 * Keeping a PostgreSQL project's index current. Its commits do not follow any sequence's order, so the
 * triggers of migrations/pg/0009 log the transaction id of every change of a contact's email,
 * subscribed, created_at or project (with its search_key, which orders the copy). An index remembers the
 * snapshot it was last brought to; a catch-up applies what the transactions that snapshot could not see
 * did, read with a new snapshot.
 */

/** Transactions whose log entries are kept; a copy last brought up to date before them is rebuilt. */
const PG_KEEP_XIDS = 1_048_576
let pgPrunedAt = 0

/** A project's index read from the table; null when it holds more than `budget` rows. */
// dialect: the search copy follows SQLite's change log in the request's snapshot, PostgreSQL's by transaction id
export async function buildPg(store: Store, projectId: string, budget: number): Promise<ProjectIndex | null> {
  const pg = pgConnection(store.db)
  // Every change this snapshot cannot see is logged by a transaction it lists as running or at/after xmax.
  const [{ snap }] = await store.guarded(() => pg.unsafe<Array<{ snap: string }>>('SELECT pg_current_snapshot()::text AS snap'), { deadline: true })
  const ix: ProjectIndex = { projectId, fold: false, chunks: [], extra: new Map(), seq: 0, size: 0, used: Date.now() }
  setSnapshot(ix, String(snap))
  let tooBig = false
  // A scan: under the guard, without the read deadline (a large project's may rightly take longer).
  await store.guarded(() => pg.unsafe<Array<SearchRow & { data: string }>>(`SELECT k.search_key::float8 AS "key", c.email AS email, c.subscribed::int AS subscribed,
      round(extract(epoch FROM c.created_at) * 1000)::float8 AS "createdAt", c.data::text AS data
    FROM contact_search_keys k JOIN contacts c ON c.id = k.contact_id
    WHERE k.project_id = $1 AND c.project_id = $1 ORDER BY k.search_key`, [projectId]).cursor(CHUNK, (rows) => {
    if (tooBig) return
    for (const r of rows) r.values = r.data === '{}' ? '' : foldText(r.data)
    appendChunk(ix, rows)
    if (ix.size > budget) tooBig = true
  }))
  return tooBig ? null : ix
}

/** `xmin:xmax:xip,...` (pg_current_snapshot()). */
function setSnapshot(ix: ProjectIndex, snap: string): void {
  const [xmin, xmax, xip] = snap.split(':')
  ix.seq = Number(xmin)
  ix.pgSince = { xmax, xip: `{${xip}}` }
}

/** A logged search_key and its contact now: [key, email, subscribed, createdAt, data], nulls when it is gone. */
type PgChange = [number, string, number, number, string] | [number, null, null, null, null]

/**
 * Applies what the transactions the last applied snapshot could not see (running then, or started
 * since) did, read with the new snapshot in one statement. The range has an upper bound so that a
 * planner without statistics of the log (right after a bulk import) still estimates it narrow and uses
 * the index.
 */
// dialect: the search copy follows SQLite's change log in the request's snapshot, PostgreSQL's by transaction id
export async function catchUpPg(store: Store, ix: ProjectIndex): Promise<'current' | 'gap'> {
  const since = ix.pgSince
  if (!since) return 'gap' // not built by buildPg
  const pg = pgConnection(store.db)
  const [row] = await store.guarded(() => pg.unsafe<Array<{ snap: string; changes: string | PgChange[] }>>(`SELECT pg_current_snapshot()::text AS snap,
    (SELECT coalesce(json_agg(json_build_array(l.search_key, c.email, c.subscribed::int, round(extract(epoch FROM c.created_at) * 1000), c.data::text)), '[]')
      FROM contact_changes l
      LEFT JOIN contact_search_keys k ON k.search_key = l.search_key AND k.project_id = l.project_id
      LEFT JOIN contacts c ON c.id = k.contact_id AND c.project_id = l.project_id
      WHERE (l.xid BETWEEN $2::text::xid8 AND '18446744073709551615'::xid8 OR l.xid = ANY($3::text::xid8[])) AND l.project_id = $1) AS changes`, [ix.projectId, since.xmax, since.xip]), { deadline: true })
  const snap = String(row.snap)
  const xmin = Number(snap.split(':')[0])
  if (ix.seq < xmin - PG_KEEP_XIDS) return 'gap'
  const changes: PgChange[] = typeof row.changes === 'string' ? JSON.parse(row.changes) : row.changes
  // A logged key is brought to its contact as it is now (gone: null; a key never moves to another contact).
  for (const ch of changes) {
    applyChange(ix, Number(ch[0]), ch[1] === null ? null : { key: Number(ch[0]), email: ch[1], subscribed: ch[2], createdAt: ch[3], values: ch[4] === '{}' ? '' : foldText(ch[4]) })
  }
  setSnapshot(ix, snap)
  if (Date.now() - pgPrunedAt > 60_000) {
    pgPrunedAt = Date.now()
    // With the read deadline: a server that stops answering here must not hold this search (and the
    // project's searches queued behind it) any longer than the reads above.
    await store.guarded(() => pg.unsafe('DELETE FROM contact_changes WHERE xid < $1::text::xid8', [String(Math.max(0, xmin - PG_KEEP_XIDS))]), { deadline: true })
  }
  return 'current'
}
