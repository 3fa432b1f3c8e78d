import { describe, expect, test } from 'bun:test'
import { allMatches, appendChunk, applyChange, CHUNK, pageCandidates, scan, scanText, type ChunkIndex, type SearchRow } from '../../../../src/modules/contacts/search/chunks'
import { foldText, searchableTerm } from '../../../../src/modules/contacts/search/fold'

/**
 * The search index's chunk structure on its own, no database: every answer is compared with a plain
 * model (a Map of rows, filtered and sorted in JS) as SQLite's LIKE and ORDER BY would give it.
 */

function emptyIndex(fold: boolean): ChunkIndex {
  return { fold, chunks: [], extra: new Map(), size: 0 }
}

function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase())
}

/** A deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const NAMES = ['ab', 'anna', 'Bob', 'carla', 'zed', 'x_y', 'jösé', 'ZOË', '日本']
const DOMAINS = ['gmail.com', 'ex.io', 'abc.org', 'Mail.AB.net']

function email(i: number, salt = ''): string {
  return `${NAMES[i % NAMES.length]}${salt}${i}@${DOMAINS[(i >> 3) % DOMAINS.length]}`
}

function row(key: number, i = key, salt = ''): SearchRow {
  return { key, email: email(i, salt), subscribed: i % 4 === 0 ? 0 : 1, createdAt: 1_700_000_000_000 + Math.floor(i / 3) * 1000 }
}

/** The rows and the index kept side by side. */
class Model {
  rows = new Map<number, SearchRow>()
  constructor(readonly ix: ChunkIndex) {}
  build(rows: SearchRow[]) {
    for (let i = 0; i < rows.length; i += CHUNK) appendChunk(this.ix, rows.slice(i, i + CHUNK))
    for (const r of rows) this.rows.set(r.key, r)
  }
  set(r: SearchRow) {
    applyChange(this.ix, r.key, r)
    this.rows.set(r.key, r)
  }
  delete(key: number) {
    applyChange(this.ix, key, null)
    this.rows.delete(key)
  }
  /** Keys of the rows LIKE would find, ascending. */
  matching(term: string, subscribed?: boolean): number[] {
    const t = this.ix.fold ? asciiLower(term) : term
    return [...this.rows.values()]
      .filter((r) => (this.ix.fold ? asciiLower(r.email) : r.email).includes(t) && (subscribed === undefined || r.subscribed === (subscribed ? 1 : 0)))
      .map((r) => r.key)
      .sort((a, b) => a - b)
  }
}

function sorted(keys: number[]): number[] {
  return [...keys].sort((a, b) => a - b)
}

/** Chunks cover ascending, disjoint key ranges; sizes add up. */
function checkShape(m: Model) {
  const { ix } = m
  let last = -Infinity
  let live = 0
  for (const c of ix.chunks) {
    expect(c.n).toBeGreaterThan(0)
    expect(c.n).toBeLessThanOrEqual(CHUNK)
    for (let i = 0; i < c.n; i++) {
      expect(c.keys[i]).toBeGreaterThan(last)
      last = c.keys[i]
      if (!c.dead[i]) live++
    }
  }
  expect(ix.size).toBe(live + ix.extra.size)
  expect(ix.size).toBe(m.rows.size)
}

const TERMS = ['a', 'ab', 'AB', 'ex.io', 'x_y', 'ö', 'é1', '日本', 'zoë', '@', '7@', 'nomatch', 'io\nab']

function checkScans(m: Model) {
  for (const term of TERMS) {
    for (const subscribed of [undefined, true, false]) {
      const found = scan(m.ix, term, subscribed)
      const want = m.matching(term, subscribed)
      expect({ term, subscribed, keys: sorted(allMatches(found)) }).toEqual({ term, subscribed, keys: want })
      expect(found.total).toBe(want.length)
    }
  }
}

describe('scan', () => {
  test('finds substrings as LIKE does: ASCII case folded, multi-byte UTF-8, never across two emails', () => {
    const m = new Model(emptyIndex(true))
    m.build([
      { key: 1, email: 'ab@x.io', subscribed: 1, createdAt: 1 },
      { key: 2, email: 'cd@y.io', subscribed: 0, createdAt: 2 },
      { key: 5, email: 'Ann@Ex.IO', subscribed: 1, createdAt: 3 },
      { key: 9, email: 'jösé@ex.io', subscribed: 1, createdAt: 4 },
    ])
    expect(sorted(allMatches(scan(m.ix, 'io\ncd')))).toEqual([])
    expect(sorted(allMatches(scan(m.ix, 'o\nc')))).toEqual([])
    expect(sorted(allMatches(scan(m.ix, 'x.io\n')))).toEqual([])
    expect(sorted(allMatches(scan(m.ix, 'ann@ex')))).toEqual([5])
    expect(sorted(allMatches(scan(m.ix, 'ANN')))).toEqual([5])
    expect(sorted(allMatches(scan(m.ix, 'ö')))).toEqual([9])
    expect(sorted(allMatches(scan(m.ix, 'sé@')))).toEqual([9])
    expect(sorted(allMatches(scan(m.ix, '.io')))).toEqual([1, 2, 5, 9])
    expect(sorted(allMatches(scan(m.ix, 'ab@')))).toEqual([1])
    expect(sorted(allMatches(scan(m.ix, '.io', false)))).toEqual([2])
    expect(scan(m.ix, '.io', true).total).toBe(3)
    expect(scan(emptyIndex(true), 'a').total).toBe(0)
  })

  test('without folding (PostgreSQL) case is kept', () => {
    const m = new Model(emptyIndex(false))
    m.build([
      { key: 1, email: 'Ann@Ex.io', subscribed: 1, createdAt: 1 },
      { key: 2, email: 'ann@ex.io', subscribed: 1, createdAt: 2 },
    ])
    expect(sorted(allMatches(scan(m.ix, 'ann')))).toEqual([2])
    expect(sorted(allMatches(scan(m.ix, 'Ann')))).toEqual([1])
    checkScans(m)
  })

  test('a term in most emails (the line-by-line path) and in few give the same answers as the model', { timeout: 60_000 }, () => {
    const m = new Model(emptyIndex(true))
    m.build(Array.from({ length: 3 * CHUNK + 100 }, (_, i) => row(i + 1)))
    checkShape(m)
    checkScans(m)
  })
})

describe('changes', () => {
  test('inserts, removals, renames and state changes keep every answer exact, across folds, merges and rebuilds', { timeout: 60_000 }, () => {
    const m = new Model(emptyIndex(true))
    // Even keys only: the odd ones later fall inside existing chunks.
    m.build(Array.from({ length: 2 * CHUNK }, (_, i) => row(2 * (i + 1))))
    checkShape(m)
    const rnd = random(17)
    // New keys past the end, then a batch that fills `extra` and folds it into new chunks.
    for (let k = 4 * CHUNK + 2; k < 4 * CHUNK + 50; k++) m.set(row(k))
    checkScans(m)
    for (let k = 5 * CHUNK; k < 6 * CHUNK + 10; k++) m.set(row(k))
    checkShape(m)
    checkScans(m)
    // Odd keys inside the first chunks' ranges: merged there on the next fold, which splits them.
    for (let k = 1; k < 2 * CHUNK; k += 2) m.set(row(k))
    for (let k = 7 * CHUNK; m.ix.extra.size > 0; k++) m.set(row(k))
    checkShape(m)
    checkScans(m)
    // Renames (in chunks and in extra), state and created_at changes in place.
    const keys = [...m.rows.keys()]
    for (let i = 0; i < 3000; i++) {
      const key = keys[Math.floor(rnd() * keys.length)]
      const cur = m.rows.get(key)
      if (!cur) continue
      const pick = rnd()
      if (pick < 0.4) m.set({ ...cur, email: email(key, 'Re') })
      else if (pick < 0.7) m.set({ ...cur, subscribed: cur.subscribed ? 0 : 1 })
      else m.set({ ...cur, createdAt: cur.createdAt + 5 })
    }
    checkShape(m)
    checkScans(m)
    // Removing most of a chunk rebuilds it; removing all of one drops it; removing an absent key does nothing.
    const first = m.ix.chunks[0]
    const firstKeys = Array.from(first.keys.subarray(0, first.n))
    for (const key of firstKeys.slice(0, Math.ceil(firstKeys.length * 0.6))) m.delete(key)
    expect(m.ix.chunks[0]).not.toBe(first)
    checkShape(m)
    const second = m.ix.chunks[1]
    for (const key of Array.from(second.keys.subarray(0, second.n))) m.delete(key)
    expect(m.ix.chunks).not.toContain(second)
    m.delete(10 ** 9)
    for (let i = 0; i < 500; i++) m.delete(keys[Math.floor(rnd() * keys.length)])
    checkShape(m)
    checkScans(m)
    // The largest keys deleted and given out again (SQLite reuses them): the copy follows.
    const top = sorted([...m.rows.keys()]).slice(-300)
    for (const key of top) m.delete(key)
    for (const key of top) m.set(row(key, key, 'New'))
    checkShape(m)
    checkScans(m)
  })
})

// ---------------------------------------------------------------------------------------------------
// Paging: the candidates must give the same page as the whole set would, by the page query's own rules.

/** An id unrelated to key order, as contact ids are. */
function idOf(key: number): string {
  return ((key * 2_654_435_761) >>> 0).toString(16).padStart(8, '0')
}

type After = { value: string | number; id: string } | null

const utf8 = new Map<string, Buffer>()

function bytes(s: string): Buffer {
  let b = utf8.get(s)
  if (!b) {
    b = Buffer.from(s)
    utf8.set(s, b)
  }
  return b
}

function byteCmp(a: string, b: string): number {
  return Buffer.compare(bytes(a), bytes(b))
}

/** The page query: keyset, order (with the id) and limit over `keys`. */
function pageOf(m: Model, keys: number[], sort: 'createdAt' | 'email', dir: 'asc' | 'desc', limit: number, after: After): SearchRow[] {
  const sign = dir === 'asc' ? 1 : -1
  const cmp = (a: SearchRow, b: { value: string | number; id: string }) => sort === 'email'
    ? byteCmp(a.email, String(b.value))
    : a.createdAt - Number(b.value) || (idOf(a.key) < b.id ? -1 : idOf(a.key) > b.id ? 1 : 0)
  const rows = keys.map((k) => m.rows.get(k)).filter((r): r is SearchRow => r !== undefined)
  return rows
    .filter((r) => !after || sign * cmp(r, after) > 0)
    .sort((a, b) => sign * cmp(a, { value: sort === 'email' ? b.email : b.createdAt, id: idOf(b.key) }))
    .slice(0, limit)
}

/**
 * What pageCandidates promises by created_at, and no more: the matches at the keyset's own created_at,
 * and the first `limit` strictly past it with their ties.
 */
function createdAtCandidates(m: Model, all: number[], dir: 'asc' | 'desc', limit: number, after: After): number[] {
  const sign = dir === 'asc' ? 1 : -1
  const t = (k: number) => m.rows.get(k)?.createdAt ?? NaN
  const bound = after ? Number(after.value) : NaN
  const past = all.filter((k) => !after || sign * (t(k) - bound) > 0).map(t).sort((a, b) => sign * (a - b))
  const edge = past.length >= limit ? past[limit - 1] : sign * Infinity
  return sorted(all.filter((k) => t(k) === bound || ((!after || sign * (t(k) - bound) > 0) && sign * (t(k) - edge) <= 0)))
}

function walk(m: Model, term: string, subscribed: boolean | undefined, sort: 'createdAt' | 'email', dir: 'asc' | 'desc', limit: number) {
  const found = scan(m.ix, term, subscribed)
  const all = allMatches(found)
  const seen: number[] = []
  let after: After = null
  for (;;) {
    const candidates = pageCandidates(found, sort, dir, limit, after)
    const page = pageOf(m, candidates, sort, dir, limit, after)
    expect(page.map((r) => r.key)).toEqual(pageOf(m, all, sort, dir, limit, after).map((r) => r.key))
    if (sort === 'email') expect(sorted(candidates)).toEqual(sorted(page.map((r) => r.key)))
    else expect(sorted(candidates)).toEqual(createdAtCandidates(m, all, dir, limit, after))
    seen.push(...page.map((r) => r.key))
    if (page.length < limit) break
    const last = page[page.length - 1]
    after = { value: sort === 'email' ? last.email : last.createdAt, id: idOf(last.key) }
  }
  expect(sorted(seen)).toEqual(m.matching(term, subscribed))
  return seen
}

describe('pageCandidates', () => {
  const m = new Model(emptyIndex(true))
  // Small chunks (any size up to CHUNK is valid) so that walking every page stays quick; three rows per
  // created_at (ties across page edges); some rows in extra; a stored email with capitals.
  // created_at does not follow key order here (it mostly does in a real table).
  const shuffled = (key: number): SearchRow => ({ ...row(key), createdAt: 1_700_000_000_000 + (((key * 7919) % 300) >> 1) * 1000 })
  for (let c = 0; c < 6; c++) m.build(Array.from({ length: 150 }, (_, i) => shuffled(c * 150 + i + 1)))
  for (let k = 1000; k < 1100; k++) m.set(shuffled(k))
  m.set({ ...row(3), email: 'AB3@ex.io' })

  test('by created_at, both ways: every page equals the one the whole set gives, ties included', { timeout: 60_000 }, () => {
    for (const dir of ['asc', 'desc'] as const) {
      for (const limit of [1, 2, 3, 7, 50, 10_000]) walk(m, 'ab', undefined, 'createdAt', dir, limit)
      walk(m, 'a', true, 'createdAt', dir, 25)
      walk(m, '.org', false, 'createdAt', dir, 4)
    }
  })

  test('by email, both ways: exactly the next `limit` in byte order (stored capitals sort first)', { timeout: 60_000 }, () => {
    for (const dir of ['asc', 'desc'] as const) {
      for (const limit of [1, 3, 50, 10_000]) walk(m, 'ab', undefined, 'email', dir, limit)
      walk(m, 'ö', undefined, 'email', dir, 5)
      walk(m, 'a', false, 'email', dir, 40)
    }
    const first = pageCandidates(scan(m.ix, 'ab3@'), 'email', 'asc', 1, null)
    expect(first).toEqual([3])
  })

  test('a keyset past the last match, a term with no match, and a created_at tie at the keyset', () => {
    const found = scan(m.ix, 'ab')
    expect(pageCandidates(found, 'email', 'asc', 10, { value: '\u{10FFFF}', id: '' })).toEqual([])
    expect(pageCandidates(found, 'createdAt', 'asc', 10, { value: Number.MAX_SAFE_INTEGER, id: '' })).toEqual([])
    expect(pageCandidates(scan(m.ix, 'nomatch'), 'createdAt', 'desc', 10, null)).toEqual([])
    // Every row at the keyset's own created_at is a candidate, whatever the id.
    const t = m.rows.get(10)?.createdAt ?? 0
    const tied = [...m.rows.values()].filter((r) => r.createdAt === t).map((r) => r.key)
    expect(tied.length).toBeGreaterThan(1)
    const c = pageCandidates(scan(m.ix, '@'), 'createdAt', 'asc', 1, { value: t, id: 'zzzzzzzz' })
    for (const key of tied) expect(c).toContain(key)
  })
})

describe('scanText: the emails and the folded custom fields', () => {
  test('candidates are the rows whose email or folded fields hold the term, through changes, deletes and folds', () => {
    const m = new Model(emptyIndex(true))
    const fields = (i: number) => (i % 7 === 0 ? '' : foldText(JSON.stringify({ name: i % 5 === 0 ? `Anna Müller ${i}` : `User ${i}`, city: i % 3 ? 'Köln' : 'Ørsted' })))
    m.build(Array.from({ length: CHUNK * 2 + 100 }, (_, i) => ({ ...row(i + 1, i), values: fields(i) })))
    // Rows changed, added past the chunks (extra) and deleted, some in the chunks' ranges.
    for (let i = 0; i < 300; i++) m.set({ ...row(i * 13 + 1, i, 'n'), values: foldText(JSON.stringify({ name: i % 2 ? 'Zoë' : 'müller' })) })
    for (let i = 0; i < 50; i++) m.set({ ...row(CHUNK * 3 + i, i, 'x'), values: i % 2 ? foldText('{"name":"MÜLLER"}') : '' })
    for (let i = 0; i < 40; i++) m.delete(i * 17 + 5)
    const expected = (emailTerm: string, valuesTerm: string) => [...m.rows.values()]
      .filter((r) => asciiLower(r.email).includes(emailTerm) || (r.values ?? '').includes(valuesTerm))
      .map((r) => r.key).sort((a, b) => a - b)
    for (const term of ['muller', 'MÜLLER', 'zoe', 'köln', 'orsted', 'anna', 'user 1', 'name', 'bob', '@ex.io', 'nothing-here']) {
      const got = allMatches(scanText(m.ix, term.toLowerCase(), foldText(term))).sort((a, b) => a - b)
      expect({ term, got }).toEqual({ term, got: expected(term.toLowerCase(), foldText(term)) })
    }
  })

  test('folding: Latin letters to their base, other scripts to one case, each character to one', () => {
    expect(foldText('Müller ÆRØ Ñandú')).toBe('muller ærø nandu')
    expect(foldText('ΣΟΦΊΑ ς')).toBe(foldText('σοφία σ'))
    expect(foldText('straße İ')).toBe('straße i')
    expect(foldText('{"Plan":"PRO"}')).toBe('{"plan":"pro"}')
    expect(searchableTerm('müller')).toBe(true)
    for (const t of ['a"b', 'a\\b', 'a/b', 'a\nb', '', '\ud83d']) expect(searchableTerm(t)).toBe(false)
  })
})
