import type { Store } from '../../../db/client'
import type { ChunkIndex } from './chunks'
import { buildPg, catchUpPg } from './pg'
import { buildSqlite, catchUpSqlite, nextTurn } from './sqlite'

export { allMatches, pageCandidates, scan, scanText, type Matches } from './chunks'
export { foldText, searchableTerm } from './fold'

/**
 * Part of the contacts repository: an exact, in-memory copy of the searchable columns of a project's
 * contacts (email, subscribed, created_at, and a key: SQLite's rowid, PostgreSQL's search_key), so that
 * GET /contacts?search= counts the matches of any substring (2 letters, a quarter of a million matches)
 * by scanning packed UTF-8 with Buffer#indexOf instead of walking rows in SQL (SQLite's LIKE or FTS5,
 * PostgreSQL's LIKE or pg_trgm: 75-1000 ms on a million rows; the scan 1-25 ms). The scan also picks the
 * few rows that can be on the requested page, which one query then orders exactly.
 *
 * - chunks.ts: the copy itself and its queries (scan, page candidates); no database.
 * - sqlite.ts: building it and keeping it exact on SQLite (a change log read in the request's snapshot).
 * - pg.ts: the same on PostgreSQL (a change log read by transaction id).
 * - this file: one copy per (store, project), brought up to date before each search.
 *
 * Memory: about 45 bytes a contact (MAX_ROWS over all projects of a store, least recently searched
 * dropped first). The first search of a project after the process starts waits for its build (about
 * 0.7 s per million contacts on SQLite, 3-5 s on PostgreSQL).
 */

/** Rows kept in memory over all projects of a store (about 45 bytes each); a larger project is searched in SQL. */
const MAX_ROWS = 4_000_000

export interface ProjectIndex extends ChunkIndex {
  projectId: string
  /** SQLite: the last change-log seq applied. PostgreSQL: the xmin of the snapshot applied. */
  seq: number
  /** SQLite: the schema_version the rowids were read under. */
  schema?: number
  /** PostgreSQL: that snapshot's xmax and in-progress transactions (the changes it could not see). */
  pgSince?: { xmax: string; xip: string }
  /** When it was last searched (Date.now()): the least recent is dropped first. */
  used: number
}

interface Slot { ix: ProjectIndex | null; busy: Promise<void> | null; tooBigUntil: number }

// A cache, not state: an exact copy of rows the database holds, rebuilt from it when dropped; it runs no timer or thread.
const slots = new WeakMap<Store, Map<string, Slot>>()

function evict(all: Map<string, Slot>, keep: string): void {
  const held: Array<{ id: string; slot: Slot; ix: ProjectIndex }> = []
  for (const [id, slot] of all) if (slot.ix) held.push({ id, slot, ix: slot.ix })
  let total = held.reduce((n, h) => n + h.ix.size, 0)
  held.sort((a, b) => a.ix.used - b.ix.used)
  for (const h of held) {
    if (total <= MAX_ROWS) return
    if (h.id === keep) continue
    total -= h.ix.size
    h.slot.ix = null
  }
}

/**
 * As currentIndex, without waiting for a first build: null while the project's copy is not built (this
 * starts its build; `onError` hears of a failure), so that a caller with another way to answer (the
 * dashboard's search, in SQL) does not wait seconds after a restart.
 */
export async function builtIndex(store: Store, projectId: string, onError: (err: unknown) => void): Promise<ProjectIndex | null> {
  const slot = slots.get(store)?.get(projectId)
  if (slot?.ix) return currentIndex(store, projectId)
  if (!slot?.busy && !(slot && slot.tooBigUntil > Date.now())) currentIndex(store, projectId).catch(onError)
  return null
}

/**
 * The project's index, current as of this turn's read snapshot (SQLite) or of a snapshot taken during
 * the call (PostgreSQL); null when the project is too large to hold (then search in SQL). The first call
 * of a project waits for its build.
 */
export async function currentIndex(store: Store, projectId: string): Promise<ProjectIndex | null> {
  let all = slots.get(store)
  if (!all) {
    all = new Map()
    slots.set(store, all)
  }
  let slot = all.get(projectId)
  if (!slot) {
    slot = { ix: null, busy: null, tooBigUntil: 0 }
    all.set(projectId, slot)
  }
  const s = slot
  const projects = all
  const rebuild = async () => {
    s.ix = null
    const held = [...projects.values()].reduce((n, x) => n + (x.ix?.size ?? 0), 0)
    // dialect: the in-memory copy is built from SQLite's change log or from PostgreSQL's transaction ids
    const built = await (store.dialect === 'pg' ? buildPg : buildSqlite)(store, projectId, MAX_ROWS)
    if (!built) { s.tooBigUntil = Date.now() + 60_000; return }
    s.ix = built
    if (held + built.size > MAX_ROWS) evict(projects, projectId)
  }
  for (;;) {
    while (s.busy) await s.busy
    if (s.tooBigUntil > Date.now()) return null
    const ix = s.ix
    // dialect: PostgreSQL catch-ups are queries that run one at a time; SQLite's is synchronous in the request's snapshot
    if (store.dialect === 'pg') {
      // Catch-ups run one at a time, each from a later snapshot than the one before.
      let state = 'gap' as 'current' | 'gap'
      const work = ix ? catchUpPg(store, ix).then((st) => { state = st }) : rebuild()
      s.busy = work.finally(() => { s.busy = null })
      await s.busy
      if (ix && state === 'current' && s.ix === ix) { ix.used = Date.now(); return ix }
      if (ix && state === 'gap' && s.ix === ix) s.ix = null
      continue
    }
    const state = ix ? catchUpSqlite(store, ix) : 'gap'
    if (ix && state === 'current') { ix.used = Date.now(); return ix }
    const work = state === 'behind' ? nextTurn() : rebuild()
    s.busy = work.finally(() => { s.busy = null })
  }
}
