/**
 * The in-memory copy of a project's searchable contact columns, and its queries: pure data structures,
 * no database (index.ts says what it is for, sqlite.ts and pg.ts keep it current).
 *
 * Rows live in chunks of at most CHUNK rows over ascending, disjoint key ranges; each chunk packs its
 * emails into one UTF-8 buffer that a search scans with Buffer#indexOf. Rows added since the chunks were
 * made wait in `extra` until there are CHUNK of them. A removed row is marked dead; a chunk that is more
 * than half dead is rebuilt.
 */

const SHIFT = 12
export const CHUNK = 1 << SHIFT
const MASK = CHUNK - 1

/** One contact as the index holds it. */
export interface SearchRow {
  /** SQLite's rowid, PostgreSQL's search_key: orders the copy and names the row to the page query. */
  key: number
  /** As stored. */
  email: string
  /** 1 or 0. */
  subscribed: number
  /** created_at, epoch ms. */
  createdAt: number
  /** Its custom fields as their stored JSON text, folded (fold.ts); absent or '': none. */
  values?: string
}

interface Chunk {
  keys: Float64Array // ascending
  createdAt: Float64Array
  subscribed: Uint8Array
  dead: Uint8Array
  /**
   * The emails as UTF-8, ASCII-lower-cased (SQLite's LIKE folds ASCII only), each followed by '\n'. Bytes,
   * not a JS string: Buffer#indexOf finds a 9-letter term 5-10 times faster than String#indexOf, and
   * Buffer#compare orders byte ranges as SQLite's BINARY collation does.
   */
  text: Buffer
  /** Byte offset of each line in `text`, and text.length last. */
  starts: Int32Array
  /** Lines (rows) in the chunk, dead ones included. */
  n: number
  /** Lines not dead. */
  live: number
  /** line -> the stored email (UTF-8), where it differs from its line in `text`. */
  stored: Map<number, Buffer> | null
  /** The rows' folded `values` as UTF-8, one line each like `text`; null when no row has any. */
  vtext: Buffer | null
  /** Byte offset of each line in `vtext`, and vtext.length last. */
  vstarts: Int32Array | null
}

/** A row not yet in a chunk. */
export interface ExtraRow {
  key: number
  email: string
  /** The stored email as UTF-8 (page order). */
  bytes: Buffer
  /** The email as searched (ASCII-lower-cased when folding); `bytes` itself when that is the same. */
  low: Buffer
  subscribed: number
  createdAt: number
  /** The folded custom fields, as SearchRow's and as UTF-8. */
  values: string
  vbytes: Buffer
}

/** The rows of one project. */
export interface ChunkIndex {
  /** SQLite's LIKE folds ASCII case; PostgreSQL's does not (its text holds the emails as stored). */
  fold: boolean
  chunks: Chunk[]
  /** Rows added since the chunks were made, by key; folded into chunks every CHUNK rows. */
  extra: Map<number, ExtraRow>
  /** Rows held (live lines and extra rows). */
  size: number
}

const UPPER = /[A-Z]/

function asciiLower(s: string): string {
  return UPPER.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s
}

function makeChunk(rows: SearchRow[], fold: boolean): Chunk {
  const n = rows.length
  const keys = new Float64Array(n)
  const createdAt = new Float64Array(n)
  const subscribed = new Uint8Array(n)
  const parts = new Array<string>(n)
  let stored: Map<number, Buffer> | null = null
  for (let i = 0; i < n; i++) {
    const row = rows[i]
    const low = fold ? asciiLower(row.email) : row.email
    if (low !== row.email) {
      if (!stored) stored = new Map()
      stored.set(i, Buffer.from(row.email))
    }
    keys[i] = row.key
    createdAt[i] = row.createdAt
    subscribed[i] = row.subscribed ? 1 : 0
    parts[i] = low
  }
  const [text, starts] = pack(parts)
  let vtext: Buffer | null = null
  let vstarts: Int32Array | null = null
  if (rows.some((r) => r.values)) [vtext, vstarts] = pack(rows.map((r) => r.values ?? ''))
  return { keys, createdAt, subscribed, dead: new Uint8Array(n), text, starts, n, live: n, stored, vtext, vstarts }
}

/** Lines joined by '\n' as UTF-8, and the byte offset of each line (the length last). */
function pack(parts: string[]): [Buffer, Int32Array] {
  const n = parts.length
  const starts = new Int32Array(n + 1)
  const text = Buffer.from(n ? `${parts.join('\n')}\n` : '')
  if (text.length === parts.reduce((k, x) => k + x.length + 1, 0)) {
    for (let i = 0, pos = 0; i <= n; i++) { starts[i] = pos; if (i < n) pos += parts[i].length + 1 }
  } else {
    for (let i = 0, pos = 0; i <= n; i++) { starts[i] = pos; if (i < n) pos += Buffer.byteLength(parts[i]) + 1 }
  }
  return [text, starts]
}

function lineValues(c: Chunk, line: number): string {
  return c.vtext && c.vstarts ? c.vtext.toString('utf8', c.vstarts[line], c.vstarts[line + 1] - 1) : ''
}

/**
 * Appends `rows` (ascending keys, all above those held, at most CHUNK) as a new chunk: how an index is
 * built, page by page in key order.
 */
export function appendChunk(ix: ChunkIndex, rows: SearchRow[]): void {
  if (rows.length) ix.chunks.push(makeChunk(rows, ix.fold))
  ix.size += rows.length
}

function lineEmail(c: Chunk, line: number): string {
  const s = c.stored?.get(line)
  return s ? s.toString() : c.text.toString('utf8', c.starts[line], c.starts[line + 1] - 1)
}

function chunkRows(c: Chunk): SearchRow[] {
  const rows: SearchRow[] = []
  for (let i = 0; i < c.n; i++) if (!c.dead[i]) rows.push({ key: c.keys[i], email: lineEmail(c, i), subscribed: c.subscribed[i], createdAt: c.createdAt[i], values: lineValues(c, i) })
  return rows
}

/** The chunk holding `key` alive, and its line; chunks cover ascending, disjoint key ranges. */
function locate(ix: ChunkIndex, key: number): [Chunk, number] | null {
  const cs = ix.chunks
  let lo = 0
  let hi = cs.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cs[mid].keys[cs[mid].n - 1] < key) lo = mid + 1
    else hi = mid
  }
  const c = cs[lo]
  if (!c || c.keys[0] > key || c.keys[c.n - 1] < key) return null
  let a = 0
  let b = c.n - 1
  while (a <= b) {
    const m = (a + b) >> 1
    const v = c.keys[m]
    if (v === key) return c.dead[m] ? null : [c, m]
    if (v < key) a = m + 1
    else b = m - 1
  }
  return null
}

function remove(ix: ChunkIndex, key: number): void {
  if (ix.extra.delete(key)) { ix.size--; return }
  const found = locate(ix, key)
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

function add(ix: ChunkIndex, row: SearchRow): void {
  const bytes = Buffer.from(row.email)
  const low = ix.fold ? asciiLower(row.email) : row.email
  const values = row.values ?? ''
  ix.extra.set(row.key, { key: row.key, email: row.email, bytes, low: low === row.email ? bytes : Buffer.from(low), subscribed: row.subscribed ? 1 : 0, createdAt: row.createdAt, values, vbytes: Buffer.from(values) })
  ix.size++
  if (ix.extra.size >= CHUNK) fold(ix)
}

/**
 * Moves the extra rows into chunks: keys past the last chunk make new chunks; the others (a changed
 * email, a rowid SQLite reused after deleting the largest ones) are merged into the chunk whose range
 * they fall in, which splits when it outgrows CHUNK. Ranges stay ascending and disjoint.
 */
function fold(ix: ChunkIndex): void {
  const rows: SearchRow[] = [...ix.extra.values()]
    .map((x) => ({ key: x.key, email: x.email, subscribed: x.subscribed, createdAt: x.createdAt, values: x.values }))
    .sort((a, b) => a.key - b.key)
  ix.extra.clear()
  const cs = ix.chunks
  const lastMax = cs.length ? cs[cs.length - 1].keys[cs[cs.length - 1].n - 1] : -Infinity
  const into = new Map<number, SearchRow[]>()
  const tail: SearchRow[] = []
  for (const row of rows) {
    if (row.key > lastMax) { tail.push(row); continue }
    let lo = 0
    let hi = cs.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cs[mid].keys[cs[mid].n - 1] < row.key) lo = mid + 1
      else hi = mid
    }
    const list = into.get(lo)
    if (list) list.push(row)
    else into.set(lo, [row])
  }
  for (const [ci, list] of [...into.entries()].sort((a, b) => b[0] - a[0])) {
    const merged = chunkRows(cs[ci]).concat(list).sort((a, b) => a.key - b.key)
    const parts: Chunk[] = []
    for (let i = 0; i < merged.length; i += CHUNK) parts.push(makeChunk(merged.slice(i, i + CHUNK), ix.fold))
    cs.splice(ci, 1, ...parts)
  }
  for (let i = 0; i < tail.length; i += CHUNK) cs.push(makeChunk(tail.slice(i, i + CHUNK), ix.fold))
}

/**
 * Brings one key to its current row (`row`; null: deleted, or no longer of this project); in place when
 * the email is unchanged. A key not held is added.
 */
export function applyChange(ix: ChunkIndex, key: number, row: SearchRow | null): void {
  if (row) {
    const x = ix.extra.get(key)
    const values = row.values ?? ''
    if (x && x.email === row.email && x.values === values) { x.subscribed = row.subscribed ? 1 : 0; x.createdAt = row.createdAt; return }
    const found = x ? null : locate(ix, key)
    if (found && lineEmail(found[0], found[1]) === row.email && lineValues(found[0], found[1]) === values) {
      found[0].subscribed[found[1]] = row.subscribed ? 1 : 0
      found[0].createdAt[found[1]] = row.createdAt
      return
    }
  }
  remove(ix, key)
  if (row) add(ix, row)
}

// ---------------------------------------------------------------------------------------------------
// Searching

/** The matches of one search. */
export interface Matches {
  total: number
  ix: ChunkIndex
  /** chunk index * CHUNK + line */
  hits: number[]
  extra: ExtraRow[]
}

/**
 * Rows whose email contains `term` (the caller lower-cases it), as SQLite's LIKE with the escaped pattern
 * finds them (ASCII case folded) or, without `fold`, PostgreSQL's LIKE does; optionally of one
 * subscription state.
 */
export function scan(ix: ChunkIndex, term: string, subscribed?: boolean): Matches {
  const want = subscribed === undefined ? -1 : subscribed ? 1 : 0
  const needle = Buffer.from(ix.fold ? asciiLower(term) : term)
  const len = needle.length
  const hits: number[] = []
  for (let ci = 0; ci < ix.chunks.length; ci++) {
    const { text, starts, dead, subscribed: subs, n } = ix.chunks[ci]
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
  const extra: ExtraRow[] = []
  for (const x of ix.extra.values()) if (x.low.includes(needle) && (want < 0 || x.subscribed === want)) extra.push(x)
  return { total: hits.length + extra.length, ix, hits, extra }
}

/**
 * The dashboard's search (POST /contacts/query): rows whose email contains `emailTerm` (as `scan` finds it)
 * or whose folded custom fields contain `valuesTerm` (folded by the caller, fold.ts): candidates, a superset
 * of the matches, which SQL then tests exactly.
 */
export function scanText(ix: ChunkIndex, emailTerm: string, valuesTerm: string): Matches {
  const byEmail = scan(ix, emailTerm)
  const needle = Buffer.from(valuesTerm)
  const len = needle.length
  const found: number[] = []
  for (let ci = 0; ci < ix.chunks.length; ci++) {
    const { vtext, vstarts, dead } = ix.chunks[ci]
    if (!vtext || !vstarts) continue
    const base = ci << SHIFT
    let line = 0
    let from = 0
    for (;;) {
      const j = vtext.indexOf(needle, from)
      if (j < 0) break
      while (vstarts[line + 1] <= j) line++
      const next = vstarts[line + 1]
      if (j + len >= next) { from = j + 1; continue } // runs into the next line
      if (!dead[line]) found.push(base + line)
      from = next
    }
  }
  let hits = byEmail.hits
  if (found.length) {
    // Both lists ascend (chunk, line): merged without repeats.
    const merged: number[] = []
    let a = 0
    let b = 0
    while (a < hits.length || b < found.length) {
      const x = a < hits.length ? hits[a] : Infinity
      const y = b < found.length ? found[b] : Infinity
      if (x <= y) { merged.push(x); a++; if (x === y) b++ } else { merged.push(y); b++ }
    }
    hits = merged
  }
  const extra = byEmail.extra
  const inExtra = new Set(extra.map((x) => x.key))
  for (const x of ix.extra.values()) if (!inExtra.has(x.key) && x.vbytes.includes(needle)) extra.push(x)
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

/** An email as a byte range (the stored email, UTF-8), and its row's key: Buffer#compare is SQLite's BINARY order. */
interface EmailBytes { buf: Buffer; start: number; end: number; key: number }

/** Byte order of buf[start, end) and `email` (memcmp, then length). */
function cmpBytes(buf: Buffer, start: number, end: number, email: EmailBytes): number {
  const kb = email.buf
  const ks = email.start
  const n = Math.min(end - start, email.end - ks)
  for (let i = 0; i < n; i++) {
    const d = buf[start + i] - kb[ks + i]
    if (d !== 0) return d
  }
  return end - start - (email.end - ks)
}

/**
 * Keys of the matches that can be on the page of `limit` rows after `after`; the page query orders them
 * exactly (with the id), applies the keyset and keeps `limit`. By createdAt: every match at the keyset's
 * own createdAt, and the first `limit` past it with their ties. By email: exactly the first `limit` past
 * the keyset, in byte order (emails are unique in a project).
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
    // in key order, which mostly follows created_at: walking from the favourable end, few enter.
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
        const t = chunks[hits[i] >> SHIFT].createdAt[hits[i] & MASK]
        if (size < limit || -t > heap[0]) offer(t)
      }
    } else {
      for (let i = hits.length - 1; i >= 0; i--) {
        const t = chunks[hits[i] >> SHIFT].createdAt[hits[i] & MASK]
        if (size < limit || t > heap[0]) offer(t)
      }
    }
    for (const x of extra) offer(x.createdAt)
    let min = lo
    let max = hi
    if (size === limit && limit > 0) {
      if (asc) max = -heap[0]
      else min = heap[0]
    }
    const bound = after ? Number(after.value) : NaN
    for (let i = 0; i < hits.length; i++) {
      const c = chunks[hits[i] >> SHIFT]
      const t = c.createdAt[hits[i] & MASK]
      if ((t >= min && t <= max) || t === bound) out.push(c.keys[hits[i] & MASK])
    }
    for (const x of extra) if ((x.createdAt >= min && x.createdAt <= max) || x.createdAt === bound) out.push(x.key)
    return out
  }
  // Emails are unique in a project: the first `limit` strictly past the keyset, kept sorted. Most hits
  // lose to the current last of `best` within their first bytes: compared in place, nothing allocated.
  const boundBuf = after ? Buffer.from(String(after.value)) : null
  const bound: EmailBytes | null = boundBuf ? { buf: boundBuf, start: 0, end: boundBuf.length, key: 0 } : null
  const sign = asc ? 1 : -1
  const best: EmailBytes[] = []
  const consider = (buf: Buffer, start: number, end: number, key: number) => {
    if (bound && sign * cmpBytes(buf, start, end, bound) <= 0) return
    if (best.length === limit && sign * cmpBytes(buf, start, end, best[limit - 1]) >= 0) return
    const k: EmailBytes = { buf, start, end, key }
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
    if (st) consider(st, 0, st.length, c.keys[line])
    else consider(c.text, c.starts[line], c.starts[line + 1] - 1, c.keys[line])
  }
  for (const x of extra) consider(x.bytes, 0, x.bytes.length, x.key)
  for (const k of best) out.push(k.key)
  return out
}

/** Every match's key. */
export function allMatches(m: Matches): number[] {
  const out: number[] = []
  for (const h of m.hits) out.push(m.ix.chunks[(h / CHUNK) | 0].keys[h % CHUNK])
  for (const x of m.extra) out.push(x.key)
  return out
}
