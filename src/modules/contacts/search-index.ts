import type { Store } from '../../db/client'

/**
 * Part of the contacts repository: an exact, in-memory copy of the searchable columns of a project's
 * contacts (email, subscribed, created_at, and a key: SQLite's rowid, PostgreSQL's search_key), so that
 * GET /contacts?search= counts the matches of any substring (2 letters, a quarter of a million matches)
 * by scanning packed UTF-8 with Buffer#indexOf instead of walking rows in SQL (SQLite's LIKE or FTS5,
 * PostgreSQL's LIKE or pg_trgm: 75-1000 ms on a million rows; the scan 1-25 ms). The scan also picks the
 * few rows that can be on the requested page, which one query then orders exactly.
 *
 * Exactness. Triggers of migration 0009 append the rowid of every inserted, deleted or changed contact
 * (email, subscribed, created_at, project) to `contact_changes` in the same transaction as the change,
 * whoever writes (this process, the track writer thread, the CLI). An index remembers the last `seq` it
 * applied; before answering, it re-reads, in the request's read snapshot, the current row of every rowid
 * logged since, so it holds exactly that snapshot's contacts. The log keeps its last 262,144 entries; an
 * index further behind than that (or than its own size) is rebuilt instead. PostgreSQL (whose commits
 * do not follow any sequence's order) logs transaction ids instead: see catchUpPg.
 *
 * Building reads the table in rowid order, CHUNK rows per event-loop turn (so other requests run in
 * between); rows change under it, but every change after its first read is in the log and is applied at
 * the end. A VACUUM may renumber rowids: it moves schema_version, which every catch-up checks.
 *
 * Memory: about 45 bytes a contact (MAX_ROWS over all projects of a store, least recently searched
 * dropped first). The first search of a project after the process starts waits for its build (about
 * 0.7 s per million contacts on SQLite, 3-5 s on PostgreSQL).
 */

const SHIFT = 12
const CHUNK = 1 << SHIFT
const MASK = CHUNK - 1
/** Changes applied in one turn; a longer backlog is applied over several turns. */
const CATCH_UP_BATCH = 8192
/** Rows kept in memory over all projects of a store (about 45 bytes each); a larger project is searched in SQL. */
const MAX_ROWS = 4_000_000

interface Row { r: number; e: string; s: number; t: number }

interface Chunk {
  rowids: Float64Array // ascending
  created: Float64Array
  subs: Uint8Array
  dead: Uint8Array
  /**
   * The emails as UTF-8, ASCII-lower-cased (SQLite's LIKE folds ASCII only), each followed by '\n'. Bytes,
   * not a JS string: Buffer#indexOf finds a 9-letter term 5-10 times faster than String#indexOf, and
   * Buffer#compare orders byte ranges as SQLite's BINARY collation does.
   */
  text: Buffer
  /** Byte offset of each line in `text`, and text.length last. */
  starts: Int32Array
  n: number
  live: number
  /** line -> the stored email (UTF-8), where it differs from its line in `text`. */
  stored: Map<number, Buffer> | null
}

interface Extra { r: number; e: string; bytes: Buffer; low: Buffer; s: number; t: number }

export interface ProjectIndex {
  projectId: string
  /** SQLite's LIKE folds ASCII case; PostgreSQL's does not (its text holds the emails as stored). */
  fold: boolean
  chunks: Chunk[]
  /** Rows added since the chunks were made, by rowid; folded into chunks every CHUNK rows. */
  extra: Map<number, Extra>
  /** SQLite: the last change-log seq applied. PostgreSQL: the xmin of the snapshot applied. */
  seq: number
  /** SQLite: the schema_version the rowids were read under. */
  schema?: number
  /** PostgreSQL: that snapshot's xmax and in-progress transactions (the changes it could not see). */
  pgSince?: { xmax: string; xip: string }
  size: number
  used: number
}

const UPPER = /[A-Z]/

function asciiLower(s: string): string {
  return UPPER.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s
}

function makeChunk(rows: Row[], fold: boolean): Chunk {
  const n = rows.length
  const rowids = new Float64Array(n)
  const created = new Float64Array(n)
  const subs = new Uint8Array(n)
  const starts = new Int32Array(n + 1)
  const parts = new Array<string>(n)
  let stored: Map<number, Buffer> | null = null
  for (let i = 0; i < n; i++) {
    const row = rows[i]
    const low = fold ? asciiLower(row.e) : row.e
    if (low !== row.e) (stored ??= new Map()).set(i, Buffer.from(row.e))
    rowids[i] = row.r
    created[i] = row.t
    subs[i] = row.s ? 1 : 0
    parts[i] = low
  }
  const text = Buffer.from(n ? parts.join('\n') + '\n' : '')
  if (text.length === parts.reduce((k, x) => k + x.length + 1, 0)) {
    for (let i = 0, pos = 0; i <= n; i++) { starts[i] = pos; if (i < n) pos += parts[i].length + 1 }
  } else {
    for (let i = 0, pos = 0; i <= n; i++) { starts[i] = pos; if (i < n) pos += Buffer.byteLength(parts[i]) + 1 }
  }
  return { rowids, created, subs, dead: new Uint8Array(n), text, starts, n, live: n, stored }
}

function lineEmail(c: Chunk, line: number): string {
  const s = c.stored?.get(line)
  return s ? s.toString() : c.text.toString('utf8', c.starts[line], c.starts[line + 1] - 1)
}

function chunkRows(c: Chunk): Row[] {
  const rows: Row[] = []
  for (let i = 0; i < c.n; i++) if (!c.dead[i]) rows.push({ r: c.rowids[i], e: lineEmail(c, i), s: c.subs[i], t: c.created[i] })
  return rows
}

/** The chunk holding rowid `r` alive, and its line; chunks cover ascending, disjoint rowid ranges. */
function locate(ix: ProjectIndex, r: number): [Chunk, number] | null {
  const cs = ix.chunks
  let lo = 0
  let hi = cs.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cs[mid].rowids[cs[mid].n - 1] < r) lo = mid + 1
    else hi = mid
  }
  const c = cs[lo]
  if (!c || c.rowids[0] > r || c.rowids[c.n - 1] < r) return null
  let a = 0
  let b = c.n - 1
  while (a <= b) {
    const m = (a + b) >> 1
    const v = c.rowids[m]
    if (v === r) return c.dead[m] ? null : [c, m]
    if (v < r) a = m + 1
    else b = m - 1
  }
  return null
}

function remove(ix: ProjectIndex, r: number): void {
  if (ix.extra.delete(r)) { ix.size--; return }
  const found = locate(ix, r)
  if (!found) return
  const [c, line] = found
  c.dead[line] = 1
  c.live--
  ix.size--
  if (c.live * 2 < c.n) {
    const i = ix.chunks.indexOf(c)
    if (c.live === 0) ix.chunks.splice(i, 1)
    else ix.chunks[i] = makeChunk(chunkRows(c), ix.fold)
  }
}

function add(ix: ProjectIndex, row: Row): void {
  const bytes = Buffer.from(row.e)
  const low = ix.fold ? asciiLower(row.e) : row.e
  ix.extra.set(row.r, { r: row.r, e: row.e, bytes, low: low === row.e ? bytes : Buffer.from(low), s: row.s ? 1 : 0, t: row.t })
  ix.size++
  if (ix.extra.size >= CHUNK) fold(ix)
}

/**
 * Moves the extra rows into chunks: rowids past the last chunk make new chunks; the others (a changed
 * email, a rowid SQLite reused after deleting the largest ones) are merged into the chunk whose range
 * they fall in, which splits when it outgrows CHUNK. Ranges stay ascending and disjoint.
 */
function fold(ix: ProjectIndex): void {
  const rows: Row[] = [...ix.extra.values()].map((x) => ({ r: x.r, e: x.e, s: x.s, t: x.t })).sort((a, b) => a.r - b.r)
  ix.extra.clear()
  const cs = ix.chunks
  const lastMax = cs.length ? cs[cs.length - 1].rowids[cs[cs.length - 1].n - 1] : -Infinity
  const into = new Map<number, Row[]>()
  const tail: Row[] = []
  for (const row of rows) {
    if (row.r > lastMax) { tail.push(row); continue }
    let lo = 0
    let hi = cs.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cs[mid].rowids[cs[mid].n - 1] < row.r) lo = mid + 1
      else hi = mid
    }
    const list = into.get(lo)
    if (list) list.push(row)
    else into.set(lo, [row])
  }
  for (const ci of [...into.keys()].sort((a, b) => b - a)) {
    const merged = chunkRows(cs[ci]).concat(into.get(ci)!).sort((a, b) => a.r - b.r)
    const parts: Chunk[] = []
    for (let i = 0; i < merged.length; i += CHUNK) parts.push(makeChunk(merged.slice(i, i + CHUNK), ix.fold))
    cs.splice(ci, 1, ...parts)
  }
  for (let i = 0; i < tail.length; i += CHUNK) cs.push(makeChunk(tail.slice(i, i + CHUNK), ix.fold))
}

/** Brings one logged rowid to its current row (null: deleted); in place when the email is unchanged. */
function applyChange(ix: ProjectIndex, r: number, row: Row | null): void {
  if (row) {
    const x = ix.extra.get(r)
    if (x && x.e === row.e) { x.s = row.s ? 1 : 0; x.t = row.t; return }
    const found = x ? null : locate(ix, r)
    if (found && lineEmail(found[0], found[1]) === row.e) {
      found[0].subs[found[1]] = row.s ? 1 : 0
      found[0].created[found[1]] = row.t
      return
    }
  }
  remove(ix, r)
  if (row) add(ix, row)
}

// ---------------------------------------------------------------------------------------------------
// Keeping indexes current

interface SqliteReader { query(text: string): { get(...p: unknown[]): unknown; all(...p: unknown[]): unknown[] } }

/**
 * The store's read connection, used synchronously: a catch-up and the scan that follows it run in one
 * event-loop turn, hence in one read snapshot (client.ts), the one the page query of the same turn reads.
 */
function reader(store: Store): SqliteReader {
  return (store.db as unknown as { $client: SqliteReader }).$client
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

interface LogBounds { lo: number | null; hi: number | null; schema: number }

function logBounds(db: SqliteReader): LogBounds {
  // Two subqueries: SQLite answers a lone min() or max() from the end of the index, both at once by a scan.
  // schema_version moves on every VACUUM (which may renumber rowids) and schema change: then rebuild.
  return db.query(`SELECT (SELECT min(seq) FROM contact_changes) AS lo, (SELECT max(seq) FROM contact_changes) AS hi,
    (SELECT schema_version FROM pragma_schema_version()) AS schema`).get() as LogBounds
}

interface Change { r: number; p: string | null; e: string | null; s: number | null; t: number | null }

/** Applies the logged changes after ix.seq, up to `limit` of them; 'gap' when some were pruned from the log. */
function applyLog(db: SqliteReader, ix: ProjectIndex, limit: number): 'current' | 'behind' | 'gap' {
  const b = logBounds(db)
  const hi = b.hi ?? 0
  if (b.schema !== ix.schema) return 'gap'
  if (hi === ix.seq) return 'current'
  if (hi < ix.seq || (b.lo ?? 0) > ix.seq + 1) return 'gap'
  if (hi - ix.seq > Math.max(ix.size, 65_536)) return 'gap' // rebuilding reads fewer rows
  const upto = Math.min(hi, ix.seq + limit)
  const changes = db.query(`SELECT l.contact_rowid AS r, c.project_id AS p, c.email AS e, c.subscribed AS s, c.created_at AS t
    FROM contact_changes l LEFT JOIN contacts c ON c.rowid = l.contact_rowid WHERE l.seq > ? AND l.seq <= ? ORDER BY l.seq`).all(ix.seq, upto) as Change[]
  for (const ch of changes) applyChange(ix, ch.r, ch.p === ix.projectId ? { r: ch.r, e: ch.e!, s: ch.s!, t: ch.t! } : null)
  ix.seq = upto
  return upto === hi ? 'current' : 'behind'
}

async function build(store: Store, projectId: string, budget: number): Promise<ProjectIndex | null> {
  const db = reader(store)
  const b = logBounds(db)
  const ix: ProjectIndex = { projectId, fold: true, chunks: [], extra: new Map(), seq: b.hi ?? 0, schema: b.schema, size: 0, used: Date.now() }
  // contacts_project_rowid_idx (migration 0010) holds a project's rows in rowid order.
  const page = db.query('SELECT rowid AS r, email AS e, subscribed AS s, created_at AS t FROM contacts INDEXED BY contacts_project_rowid_idx WHERE project_id = ? AND rowid > ? ORDER BY rowid LIMIT ?')
  let after = 0
  for (;;) {
    const rows = page.all(projectId, after, CHUNK) as Row[]
    if (rows.length) ix.chunks.push(makeChunk(rows, true))
    ix.size += rows.length
    if (ix.size > budget) return null
    if (rows.length < CHUNK) return ix
    after = rows[rows.length - 1].r
    await nextTurn()
  }
}

// PostgreSQL: search_key orders the copy; the log is read by transaction id (migrations/pg/0009).

/** Transactions whose log entries are kept; a copy last brought up to date before them is rebuilt. */
const PG_KEEP_XIDS = 1_048_576
let pgPrunedAt = 0

interface PgClient {
  unsafe(text: string, params?: unknown[]): Promise<Array<Record<string, unknown>>> & { cursor(n: number, fn: (rows: Array<Record<string, unknown>>) => Promise<void> | void): Promise<void> }
}

function pgClient(store: Store): PgClient {
  return (store.db as unknown as { $client: PgClient }).$client
}

async function buildPg(store: Store, projectId: string, budget: number): Promise<ProjectIndex | null> {
  const pg = pgClient(store)
  // Every change this snapshot cannot see is logged by a transaction it lists as running or at/after xmax.
  const [{ snap }] = await pg.unsafe('SELECT pg_current_snapshot()::text AS snap')
  const ix: ProjectIndex = { projectId, fold: false, chunks: [], extra: new Map(), seq: 0, size: 0, used: Date.now() }
  setSnapshot(ix, String(snap))
  let tooBig = false
  await pg.unsafe(`SELECT k.search_key::float8 AS r, c.email AS e, c.subscribed::int AS s, round(extract(epoch FROM c.created_at) * 1000)::float8 AS t
    FROM contact_search_keys k JOIN contacts c ON c.id = k.contact_id
    WHERE k.project_id = $1 AND c.project_id = $1 ORDER BY k.search_key`, [projectId]).cursor(CHUNK, (rows) => {
    if (tooBig) return
    ix.chunks.push(makeChunk(rows as unknown as Row[], false))
    ix.size += rows.length
    if (ix.size > budget) tooBig = true
  })
  return tooBig ? null : ix
}

/** `xmin:xmax:xip,...` (pg_current_snapshot()). */
function setSnapshot(ix: ProjectIndex, snap: string): void {
  const [xmin, xmax, xip] = snap.split(':')
  ix.seq = Number(xmin)
  ix.pgSince = { xmax, xip: `{${xip}}` }
}

/**
 * Applies what the transactions the last applied snapshot could not see (running then, or started
 * since) did, read with the new snapshot in one statement. The range has an upper bound so that a
 * planner without statistics of the log (right after a bulk import) still estimates it narrow and uses
 * the index.
 */
async function catchUpPg(store: Store, ix: ProjectIndex): Promise<'current' | 'gap'> {
  const pg = pgClient(store)
  const [row] = await pg.unsafe(`SELECT pg_current_snapshot()::text AS snap,
    (SELECT coalesce(json_agg(json_build_array(l.search_key, c.email, c.subscribed::int, round(extract(epoch FROM c.created_at) * 1000))), '[]')
      FROM contact_changes l
      LEFT JOIN contact_search_keys k ON k.search_key = l.search_key AND k.project_id = l.project_id
      LEFT JOIN contacts c ON c.id = k.contact_id AND c.project_id = l.project_id
      WHERE (l.xid BETWEEN $2::text::xid8 AND '18446744073709551615'::xid8 OR l.xid = ANY($3::text::xid8[])) AND l.project_id = $1) AS changes`, [ix.projectId, ix.pgSince!.xmax, ix.pgSince!.xip])
  const snap = String(row.snap)
  const xmin = Number(snap.split(':')[0])
  if (ix.seq < xmin - PG_KEEP_XIDS) return 'gap'
  const changes = (typeof row.changes === 'string' ? JSON.parse(row.changes) : row.changes) as Array<[number, string | null, number | null, number | null]>
  // A logged key is brought to its contact as it is now (gone: null; a key never moves to another contact).
  for (const [key, e, sub, t] of changes) applyChange(ix, Number(key), e === null ? null : { r: Number(key), e, s: sub!, t: t! })
  setSnapshot(ix, snap)
  if (Date.now() - pgPrunedAt > 60_000) {
    pgPrunedAt = Date.now()
    await pg.unsafe('DELETE FROM contact_changes WHERE xid < $1::text::xid8', [String(Math.max(0, xmin - PG_KEEP_XIDS))])
  }
  return 'current'
}

interface Slot { ix: ProjectIndex | null; busy: Promise<void> | null; tooBigUntil: number }

const slots = new WeakMap<Store, Map<string, Slot>>()

function evict(all: Map<string, Slot>, keep: string): void {
  const held = [...all.entries()].filter(([, s]) => s.ix)
  let total = held.reduce((n, [, s]) => n + s.ix!.size, 0)
  held.sort((a, b) => a[1].ix!.used - b[1].ix!.used)
  for (const [id, s] of held) {
    if (total <= MAX_ROWS) return
    if (id === keep) continue
    total -= s.ix!.size
    s.ix = null
  }
}

/**
 * The project's index, current as of this turn's read snapshot (SQLite) or of a snapshot taken during
 * the call (PostgreSQL); null when the project is too large to hold (then search in SQL). The first call
 * of a project waits for its build.
 */
export async function currentIndex(store: Store, projectId: string): Promise<ProjectIndex | null> {
  let all = slots.get(store)
  if (!all) slots.set(store, (all = new Map()))
  let slot = all.get(projectId)
  if (!slot) all.set(projectId, (slot = { ix: null, busy: null, tooBigUntil: 0 }))
  const s = slot
  const rebuild = async () => {
    s.ix = null
    const held = [...all.values()].reduce((n, x) => n + (x.ix?.size ?? 0), 0)
    const built = await (store.dialect === 'pg' ? buildPg : build)(store, projectId, MAX_ROWS)
    if (!built) { s.tooBigUntil = Date.now() + 60_000; return }
    s.ix = built
    if (held + built.size > MAX_ROWS) evict(all, projectId)
  }
  for (;;) {
    while (s.busy) await s.busy
    if (s.tooBigUntil > Date.now()) return null
    const ix = s.ix
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
    const state = ix ? applyLog(reader(store), ix, CATCH_UP_BATCH) : 'gap'
    if (state === 'current') { ix!.used = Date.now(); return ix }
    const work = state === 'behind' ? nextTurn() : rebuild()
    s.busy = work.finally(() => { s.busy = null })
  }
}

// ---------------------------------------------------------------------------------------------------
// Searching

/** The matches of one search, in the snapshot the index was current for. */
export interface Matches {
  total: number
  ix: ProjectIndex
  /** chunk index * CHUNK + line */
  hits: number[]
  extra: Extra[]
}

/**
 * Contacts whose email contains `term` (lower-cased), as SQLite's LIKE with the escaped pattern finds
 * them (ASCII case folded), optionally of one subscription state.
 */
export function scan(ix: ProjectIndex, term: string, subscribed?: boolean): Matches {
  const want = subscribed === undefined ? -1 : subscribed ? 1 : 0
  const needle = Buffer.from(ix.fold ? asciiLower(term) : term)
  const len = needle.length
  const hits: number[] = []
  for (let ci = 0; ci < ix.chunks.length; ci++) {
    const { text, starts, dead, subs, n } = ix.chunks[ci]
    const base = ci << SHIFT
    let line = 0
    let from = 0
    let seen = 0 // lines before this one are decided
    let found = 0
    for (;;) {
      if (seen >= 64 && found * 2 >= seen) {
        // Most lines match: testing each line in JS beats a native call per match (5x for 1 letter).
        for (let l = seen; l < n; l++) {
          if (lineHas(text, starts[l], starts[l + 1] - 1, needle) && !dead[l] && (want < 0 || subs[l] === want)) hits.push(base + l)
        }
        break
      }
      const j = text.indexOf(needle, from)
      if (j < 0) break
      while (starts[line + 1] <= j) line++
      const next = starts[line + 1]
      if (j + len >= next) { from = j + 1; continue } // runs into the next line
      if (!dead[line] && (want < 0 || subs[line] === want)) hits.push(base + line)
      found++
      seen = line + 1
      from = next
    }
  }
  const extra: Extra[] = []
  for (const x of ix.extra.values()) if (x.low.includes(needle) && (want < 0 || x.s === want)) extra.push(x)
  return { total: hits.length + extra.length, ix, hits, extra }
}

/** True when text[start, end) contains `needle`. */
function lineHas(text: Buffer, start: number, end: number, needle: Buffer): boolean {
  const n = needle.length
  const first = needle[0]
  for (let p = start; p + n <= end; p++) {
    if (text[p] !== first) continue
    let k = 1
    while (k < n && text[p + k] === needle[k]) k++
    if (k === n) return true
  }
  return false
}

/** An email as a byte range (the stored email, UTF-8): Buffer#compare is SQLite's BINARY order. */
interface Key { buf: Buffer; start: number; end: number; r: number }

/** Byte order of buf[start, end) and key (memcmp, then length). */
function cmpBytes(buf: Buffer, start: number, end: number, key: Key): number {
  const kb = key.buf
  const ks = key.start
  const n = Math.min(end - start, key.end - ks)
  for (let i = 0; i < n; i++) {
    const d = buf[start + i] - kb[ks + i]
    if (d !== 0) return d
  }
  return end - start - (key.end - ks)
}

/**
 * Rowids of the matches that can be on the page of `limit` rows after `after`; the page query orders them
 * exactly (with the id), applies the keyset and keeps `limit`.
 */
export function pageCandidates(m: Matches, sort: 'createdAt' | 'email', dir: 'asc' | 'desc', limit: number, after: { value: string | number; id: string } | null): number[] {
  const { ix, hits, extra } = m
  const chunks = ix.chunks
  const asc = dir === 'asc'
  const out: number[] = []
  if (sort === 'createdAt') {
    // Rows at the keyset's own created_at are all candidates (the page query tells seen from unseen by
    // id); of the rows strictly past it, the first `limit` by created_at, with their ties.
    const lo = after && asc ? Number(after.value) : -Infinity
    const hi = after && !asc ? Number(after.value) : Infinity
    // The `limit` best created_at past the keyset, in a heap of sign * t (its root: the edge). Hits come
    // in rowid order, which mostly follows created_at: walking from the favourable end, few enter.
    const sign = asc ? -1 : 1
    const heap = new Float64Array(Math.max(1, limit))
    let size = 0
    const offer = (t: number) => {
      if (!(t > lo && t < hi)) return
      const v = sign * t
      if (size < limit) {
        let i = size++
        heap[i] = v
        while (i > 0) {
          const p = (i - 1) >> 1
          if (heap[p] <= heap[i]) break
          const x = heap[p]; heap[p] = heap[i]; heap[i] = x
          i = p
        }
      } else if (v > heap[0]) {
        heap[0] = v
        for (let i = 0; ;) {
          const l = 2 * i + 1
          const r = l + 1
          let m = i
          if (l < size && heap[l] < heap[m]) m = l
          if (r < size && heap[r] < heap[m]) m = r
          if (m === i) break
          const x = heap[m]; heap[m] = heap[i]; heap[i] = x
          i = m
        }
      }
    }
    // (CHUNK is 2^SHIFT: a hit's chunk and line by shift and mask.)
    if (asc) {
      for (let i = 0; i < hits.length; i++) {
        const t = chunks[hits[i] >> SHIFT].created[hits[i] & MASK]
        if (size < limit || -t > heap[0]) offer(t)
      }
    } else {
      for (let i = hits.length - 1; i >= 0; i--) {
        const t = chunks[hits[i] >> SHIFT].created[hits[i] & MASK]
        if (size < limit || t > heap[0]) offer(t)
      }
    }
    for (const x of extra) offer(x.t)
    let min = lo
    let max = hi
    if (size === limit && limit > 0) {
      if (asc) max = -heap[0]
      else min = heap[0]
    }
    const bound = after ? Number(after.value) : NaN
    for (let i = 0; i < hits.length; i++) {
      const c = chunks[hits[i] >> SHIFT]
      const t = c.created[hits[i] & MASK]
      if ((t >= min && t <= max) || t === bound) out.push(c.rowids[hits[i] & MASK])
    }
    for (const x of extra) if ((x.t >= min && x.t <= max) || x.t === bound) out.push(x.r)
    return out
  }
  // Emails are unique in a project: the first `limit` strictly past the keyset, kept sorted. Most hits
  // lose to the current last of `best` within their first bytes: compared in place, nothing allocated.
  const boundBuf = after ? Buffer.from(String(after.value)) : null
  const bound: Key | null = boundBuf ? { buf: boundBuf, start: 0, end: boundBuf.length, r: 0 } : null
  const sign = asc ? 1 : -1
  const best: Key[] = []
  const consider = (buf: Buffer, start: number, end: number, r: number) => {
    if (bound && sign * cmpBytes(buf, start, end, bound) <= 0) return
    if (best.length === limit && sign * cmpBytes(buf, start, end, best[limit - 1]) >= 0) return
    const k: Key = { buf, start, end, r }
    let a = 0
    let b = best.length
    while (a < b) {
      const mid = (a + b) >> 1
      if (sign * cmpBytes(buf, start, end, best[mid]) > 0) a = mid + 1
      else b = mid
    }
    best.splice(a, 0, k)
    if (best.length > limit) best.pop()
  }
  for (let i = 0; i < hits.length; i++) {
    const c = chunks[(hits[i] / CHUNK) | 0]
    const line = hits[i] % CHUNK
    const st = c.stored?.get(line)
    if (st) consider(st, 0, st.length, c.rowids[line])
    else consider(c.text, c.starts[line], c.starts[line + 1] - 1, c.rowids[line])
  }
  for (const x of extra) consider(x.bytes, 0, x.bytes.length, x.r)
  for (const k of best) out.push(k.r)
  return out
}

/** Every match's key (rowid or search_key). */
export function allMatches(m: Matches): number[] {
  const out: number[] = []
  for (const h of m.hits) out.push(m.ix.chunks[(h / CHUNK) | 0].rowids[h % CHUNK])
  for (const x of m.extra) out.push(x.r)
  return out
}
