import { and, asc, count, eq, inArray, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { allMatches, currentIndex, pageCandidates, scan, type Matches } from './search'

/** The only SQL of the contacts module. Every function takes the project id. */

export type ContactRow = typeof import('../../db/schema').pgSchema.contacts.$inferSelect

// ---------------------------------------------------------------------------------------------------
// The upsert hot path (every track, send and relay recipient). On SQLite it runs as statements compiled
// once on the writer connection (bun:sqlite caches `query()`), off drizzle's query builder: building a
// query cost several times more than running it. PostgreSQL keeps drizzle.

interface SqliteStatement { get(...p: unknown[]): unknown; all(...p: unknown[]): unknown[]; run(...p: unknown[]): { changes: number } }
interface SqliteClient { query(text: string): SqliteStatement }

/** The bun:sqlite connection under a drizzle handle (inside `store.tx`: the writer). */
export function sqliteClient(db: Db): SqliteClient {
  return (db as unknown as { $client: SqliteClient }).$client
}

interface RawContact { id: string; project_id: string; email: string; subscribed: number; data: string; created_at: number; updated_at: number }

const CONTACT_COLS = 'id, project_id, email, subscribed, data, created_at, updated_at'

function fromRaw(r: RawContact): ContactRow {
  return {
    id: r.id, projectId: r.project_id, email: r.email, subscribed: r.subscribed === 1, data: JSON.parse(r.data) as Record<string, unknown>,
    createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  }
}

/**
 * The contact row of (project, email); on PostgreSQL the row is locked (FOR UPDATE) so that a
 * read-modify-write of its data and subscription inside `db`'s transaction is not lost to a concurrent
 * writer. SQLite has one writer, so the transaction already excludes others.
 */
export async function findByEmailForUpdate(store: Store, db: Db, projectId: string, email: string): Promise<ContactRow | null> {
  if (store.dialect === 'sqlite') {
    const r = sqliteClient(db).query(`SELECT ${CONTACT_COLS} FROM contacts WHERE project_id = ? AND email = ?`).get(projectId, email) as RawContact | null
    return r ? fromRaw(r) : null
  }
  const c = store.t.contacts
  const [row] = await db.select().from(c).where(and(eq(c.projectId, projectId), eq(c.email, email))).limit(1).for('update')
  return row ?? null
}

/** Rows of these emails (already normalised), locked on PostgreSQL like `findByEmailForUpdate`. */
export async function findByEmailsForUpdate(store: Store, db: Db, projectId: string, emails: string[]): Promise<ContactRow[]> {
  if (!emails.length) return []
  if (store.dialect === 'sqlite') {
    // One cached statement for any number of emails: the list travels as one JSON parameter.
    const rows = sqliteClient(db).query(`SELECT ${CONTACT_COLS} FROM contacts WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))`)
      .all(projectId, JSON.stringify(emails)) as RawContact[]
    return rows.map(fromRaw)
  }
  const rows = await store.rows<PgContact>(sql`
    SELECT ${sql.raw(CONTACT_COLS)} FROM contacts
    WHERE project_id = ${projectId} AND email IN (SELECT jsonb_array_elements_text(${JSON.stringify(emails)}::jsonb))
    ORDER BY email FOR UPDATE`, db)
  return rows.map(fromPg)
}

interface PgContact { id: string; project_id: string; email: string; subscribed: boolean; data: Record<string, unknown>; created_at: Date | string; updated_at: Date | string }

function fromPg(r: PgContact): ContactRow {
  return {
    id: r.id, projectId: r.project_id, email: r.email, subscribed: r.subscribed, data: r.data,
    createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  }
}

/** Inserts the contact unless (project, email) exists; null when another writer got there first. */
export async function insertIfAbsent(store: Store, db: Db, row: ContactRow): Promise<ContactRow | null> {
  if (store.dialect === 'sqlite') {
    const r = sqliteClient(db).query(`INSERT INTO contacts (${CONTACT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_id, email) DO NOTHING`)
      .run(row.id, row.projectId, row.email, row.subscribed ? 1 : 0, JSON.stringify(row.data), row.createdAt.getTime(), row.updatedAt.getTime())
    return r.changes === 1 ? row : null
  }
  const c = store.t.contacts
  const rows = await db.insert(c).values(row).onConflictDoNothing({ target: [c.projectId, c.email] }).returning()
  return rows[0] ?? null
}

/** Writes subscribed, data and updated_at of `row` (the upsert's update). */
export async function saveState(store: Store, db: Db, row: ContactRow): Promise<void> {
  if (store.dialect === 'sqlite') {
    sqliteClient(db).query('UPDATE contacts SET subscribed = ?, data = ?, updated_at = ? WHERE project_id = ? AND id = ?')
      .run(row.subscribed ? 1 : 0, JSON.stringify(row.data), row.updatedAt.getTime(), row.projectId, row.id)
    return
  }
  const c = store.t.contacts
  await db.update(c).set({ subscribed: row.subscribed, data: row.data, updatedAt: row.updatedAt }).where(and(eq(c.projectId, row.projectId), eq(c.id, row.id)))
}

/** Inserts many; returns the rows actually inserted (those whose email was free). */
export async function insertManyIfAbsent(store: Store, db: Db, rows: ContactRow[]): Promise<ContactRow[]> {
  if (!rows.length) return []
  if (store.dialect === 'sqlite') {
    const inserted: ContactRow[] = []
    for (const row of rows) if (await insertIfAbsent(store, db, row)) inserted.push(row)
    return inserted
  }
  // One JSON parameter instead of 7 per row: PostgreSQL expands it with jsonb_to_recordset.
  const payload = JSON.stringify(rows.map((r) => ({
    id: r.id, project_id: r.projectId, email: r.email, subscribed: r.subscribed, data: r.data,
    created_at: r.createdAt.toISOString(), updated_at: r.updatedAt.toISOString(),
  })))
  const done = new Set((await store.rows<{ email: string }>(sql`
    INSERT INTO contacts (${sql.raw(CONTACT_COLS)})
    SELECT id, project_id, email, subscribed, data, created_at, updated_at
    FROM jsonb_to_recordset(${payload}::jsonb) AS x(id text, project_id text, email text, subscribed boolean, data jsonb, created_at timestamptz, updated_at timestamptz)
    ON CONFLICT (project_id, email) DO NOTHING RETURNING email`, db)).map((r) => r.email))
  return rows.filter((r) => done.has(r.email))
}

export type ContactSet = Partial<Pick<ContactRow, 'email' | 'subscribed' | 'data' | 'updatedAt'>>

export async function updateById(store: Store, db: Db, projectId: string, id: string, set: ContactSet): Promise<ContactRow | null> {
  const c = store.t.contacts
  const [row] = await db.update(c).set(set).where(and(eq(c.projectId, projectId), eq(c.id, id))).returning()
  return row ?? null
}

export async function findById(store: Store, db: Db, projectId: string, id: string, forUpdate = false): Promise<ContactRow | null> {
  if (store.dialect === 'sqlite') {
    // GET /contacts/:id runs this on every call: a statement compiled once on the connection (reader or writer).
    const r = sqliteClient(db).query(`SELECT ${CONTACT_COLS} FROM contacts WHERE project_id = ? AND id = ?`).get(projectId, id) as RawContact | null
    return r ? fromRaw(r) : null
  }
  const c = store.t.contacts
  let q = db.select().from(c).where(and(eq(c.projectId, projectId), eq(c.id, id))).limit(1)
  if (forUpdate && store.dialect === 'pg') q = q.for('update') as typeof q
  const [row] = await q
  return row ?? null
}

export async function findByIds(store: Store, db: Db, projectId: string, ids: string[], forUpdate = false): Promise<ContactRow[]> {
  if (!ids.length) return []
  const c = store.t.contacts
  let q = db.select().from(c).where(and(eq(c.projectId, projectId), inArray(c.id, ids)))
  if (forUpdate && store.dialect === 'pg') q = q.orderBy(asc(c.id)).for('update') as typeof q
  return q
}

export async function deleteById(store: Store, db: Db, projectId: string, id: string): Promise<boolean> {
  const c = store.t.contacts
  const rows = await db.delete(c).where(and(eq(c.projectId, projectId), eq(c.id, id))).returning({ id: c.id })
  return rows.length > 0
}

export async function deleteByIds(store: Store, db: Db, projectId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return []
  const c = store.t.contacts
  const rows = await db.delete(c).where(and(eq(c.projectId, projectId), inArray(c.id, ids))).returning({ id: c.id })
  return rows.map((r) => r.id)
}

/** Sets `subscribed` on those of `ids` whose state differs; returns the ids changed. */
export async function setSubscribed(store: Store, db: Db, projectId: string, ids: string[], subscribed: boolean, now: Date): Promise<string[]> {
  if (!ids.length) return []
  const c = store.t.contacts
  const rows = await db.update(c).set({ subscribed, updatedAt: now })
    .where(and(eq(c.projectId, projectId), inArray(c.id, ids), eq(c.subscribed, !subscribed)))
    .returning({ id: c.id })
  return rows.map((r) => r.id)
}

export async function lookupEmails(store: Store, projectId: string, emails: string[]): Promise<Array<Pick<ContactRow, 'id' | 'email' | 'subscribed'>>> {
  if (!emails.length) return []
  const c = store.t.contacts
  return store.db.select({ id: c.id, email: c.email, subscribed: c.subscribed }).from(c)
    .where(and(eq(c.projectId, projectId), inArray(c.email, emails)))
}

// ---------------------------------------------------------------------------------------------------
// Cursor list

export type SortKey = 'createdAt' | 'email'
export type SortDir = 'asc' | 'desc'

export interface ListFilter {
  search?: string
  subscribed?: boolean
}

/** The position after the last row of a page: the sort value and the id of that row. */
export interface After { value: string | number; id: string }

/** LIKE pattern for a case-insensitive substring (emails are stored lower-cased). */
function likePattern(term: string): string {
  return `%${term.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`
}

/**
 * The list queries (a page, the total) as SQL text compiled once per shape and reused: the page of every
 * GET /contacts is built from these, and drizzle's query builder cost several times more than the query.
 * The shape (sort, direction, keyset, filters) picks the text; values travel as parameters. Both stores
 * accept the same text; they differ only in how a row comes back (fromStore).
 */
type Param = string | number | null
interface ListQuery { text: string; params: Param[] }

function listWhere(store: Store, projectId: string, f: ListFilter, params: Param[]): string {
  params.push(projectId)
  let where = `project_id = $${params.length}`
  if (f.subscribed !== undefined) where += ` AND subscribed = ${store.dialect === 'pg' ? String(f.subscribed) : f.subscribed ? 1 : 0}`
  if (f.search) {
    params.push(likePattern(f.search))
    where += ` AND email LIKE $${params.length} ESCAPE '\\'`
  }
  return where
}

/** Rows strictly after `after` in (sort, id) order; the range lets both stores walk the (project_id, created_at, id) index. */
function keysetText(store: Store, sort: SortKey, dir: SortDir, after: After, params: Param[]): string {
  const cmp = dir === 'asc' ? '>' : '<'
  if (sort === 'email') {
    params.push(String(after.value))
    return ` AND email ${cmp} $${params.length}`
  }
  const at = Number(after.value)
  params.push(store.dialect === 'pg' ? new Date(at).toISOString() : at, after.id)
  const [t, id] = [params.length - 1, params.length]
  return ` AND created_at ${cmp}= $${t} AND (created_at ${cmp} $${t} OR id ${cmp} $${id})`
}

function pageQuery(store: Store, projectId: string, f: ListFilter, sort: SortKey, dir: SortDir, limit: number, after: After | null): ListQuery {
  const params: Param[] = []
  let text = `SELECT ${CONTACT_COLS} FROM contacts WHERE ${listWhere(store, projectId, f, params)}`
  if (after) text += keysetText(store, sort, dir, after, params)
  const d = dir === 'asc' ? 'ASC' : 'DESC'
  params.push(limit)
  text += sort === 'email' ? ` ORDER BY email ${d}` : ` ORDER BY created_at ${d}, id ${d}`
  text += ` LIMIT $${params.length}`
  return { text, params }
}

const compiled = new WeakMap<Store, Map<string, (...p: Param[]) => Promise<unknown[]>>>()

/** Runs a read through `store.prepared`, compiling each distinct text once per store. */
function runCompiled<T>(store: Store, q: ListQuery): Promise<T[]> {
  let byText = compiled.get(store)
  if (!byText) compiled.set(store, (byText = new Map()))
  let run = byText.get(q.text)
  if (!run) byText.set(q.text, (run = store.prepared(q.text)))
  return run(...q.params) as Promise<T[]>
}

function fromStore(store: Store, r: RawContact | PgContact): ContactRow {
  return store.dialect === 'pg' ? fromPg(r as PgContact) : fromRaw(r as RawContact)
}

/**
 * How a list query finds contacts whose email contains the search term: from the project's in-memory
 * search index (search-index.ts), brought up to date first (SQLite: this turn's read snapshot;
 * PostgreSQL: a snapshot taken by the catch-up). The scan gives the exact total and the keys (rowid,
 * search_key) of the rows that can be on the page, which one query orders and pages, rechecking each
 * row's email, project and state. The plan is resolved once, by whichever of listPage and countMatching
 * runs first. A project too large to hold in memory searches in SQL (LIKE; pg_trgm on PostgreSQL).
 */
export type SearchPlan =
  | { kind: 'plain' }
  | { kind: 'indexed'; matches?: Promise<Matches | null> }

export async function planSearch(_store: Store, f: ListFilter): Promise<SearchPlan> {
  return f.search ? { kind: 'indexed' } : { kind: 'plain' }
}

/**
 * PostgreSQL orders emails by the database's collation, which the index does not know: with email
 * order, up to this many matches are all handed to the page query; more are dense enough that the walk
 * of the (project_id, email) index meets a page quickly.
 */
const PG_EMAIL_CANDIDATES = 10_000

/** A page of contacts among those of `keys` (contact_search_keys) on PostgreSQL, rechecked like rawConds. */
async function pgCandidatePage(store: Store, projectId: string, f: ListFilter, keys: number[], sort: SortKey, dir: SortDir, limit: number, after: After | null): Promise<ContactRow[]> {
  const cmp = dir === 'asc' ? sql`>` : sql`<`
  const d = dir === 'asc' ? sql`ASC` : sql`DESC`
  if (!keys.length) return []
  const parts: SQL[] = [sql`k.project_id = ${projectId}`, sql`k.search_key = ANY(${`{${keys.join(',')}}`}::bigint[])`, sql`c.project_id = ${projectId}`, sql`c.email LIKE ${likePattern(f.search ?? '')} ESCAPE '\\'`]
  if (f.subscribed !== undefined) parts.push(sql`c.subscribed = ${f.subscribed}`)
  if (after && sort === 'email') parts.push(sql`c.email ${cmp} ${String(after.value)}`)
  if (after && sort === 'createdAt') parts.push(sql`(c.created_at, c.id) ${cmp} (${new Date(Number(after.value)).toISOString()}::timestamptz, ${after.id})`)
  const order = sort === 'email' ? sql`c.email ${d}` : sql`c.created_at ${d}, c.id ${d}`
  const rows = await store.rows<PgContact>(sql`
    SELECT ${sql.raw(CONTACT_COLS.split(', ').map((col) => `c.${col}`).join(', '))} FROM contact_search_keys k JOIN contacts c ON c.id = k.contact_id
    WHERE ${sql.join(parts, sql` AND `)} ORDER BY ${order} LIMIT ${limit}`)
  return rows.map(fromPg)
}

function resolveMatches(store: Store, projectId: string, f: ListFilter, plan: SearchPlan & { kind: 'indexed' }): Promise<Matches | null> {
  return (plan.matches ??= currentIndex(store, projectId).then((ix) => ix && scan(ix, f.search!.toLowerCase(), f.subscribed)))
}

/** Raw SQL of the filter over `c` (the SQLite queries driven by collected rowids). */
function rawConds(projectId: string, f: ListFilter, extra: SQL[] = []): SQL {
  const parts: SQL[] = [sql`c.project_id = ${projectId}`, sql`c.email LIKE ${likePattern(f.search ?? '')} ESCAPE '\\'`]
  if (f.subscribed !== undefined) parts.push(sql`c.subscribed = ${f.subscribed ? 1 : 0}`)
  return sql.join([...parts, ...extra], sql` AND `)
}

/**
 * One page in (sort, id) order strictly after `after`. Keyset paging: rows inserted while a client pages
 * never shift the rows it has not seen yet, so no row is skipped or repeated.
 */
export async function listPage(store: Store, projectId: string, f: ListFilter, sort: SortKey, dir: SortDir, limit: number, after: After | null, plan: SearchPlan = { kind: 'plain' }): Promise<ContactRow[]> {
  const matches = plan.kind === 'indexed' ? await resolveMatches(store, projectId, f, plan) : null
  if (matches && store.dialect === 'pg') {
    if (sort !== 'email') return pgCandidatePage(store, projectId, f, pageCandidates(matches, sort, dir, limit, after), sort, dir, limit, after)
    if (matches.total <= PG_EMAIL_CANDIDATES) return pgCandidatePage(store, projectId, f, allMatches(matches), sort, dir, limit, after)
  } else if (matches) {
    const rowids = pageCandidates(matches, sort, dir, limit, after)
    if (!rowids.length) return []
    const keyset: SQL[] = []
    const cmp = dir === 'asc' ? sql`>` : sql`<`
    if (after && sort === 'email') keyset.push(sql`c.email ${cmp} ${String(after.value)}`)
    if (after && sort === 'createdAt') keyset.push(sql`(c.created_at, c.id) ${cmp} (${Number(after.value)}, ${after.id})`)
    const d = dir === 'asc' ? sql`ASC` : sql`DESC`
    const order = sort === 'email' ? sql`c.email ${d}` : sql`c.created_at ${d}, c.id ${d}`
    const rows = await store.rows<RawContact>(sql`
      SELECT ${sql.raw(CONTACT_COLS.split(', ').map((col) => `c.${col}`).join(', '))}
      FROM json_each(${JSON.stringify(rowids)}) j CROSS JOIN contacts c ON c.rowid = j.value
      WHERE ${rawConds(projectId, f, keyset)}
      ORDER BY ${order} LIMIT ${limit}`)
    return rows.map(fromRaw)
  }
  const rows = await runCompiled<RawContact | PgContact>(store, pageQuery(store, projectId, f, sort, dir, limit, after))
  return rows.map((r) => fromStore(store, r))
}

/** The exact number of matching contacts (see SearchPlan). */
export async function countMatching(store: Store, projectId: string, f: ListFilter, plan: SearchPlan = { kind: 'plain' }): Promise<number> {
  const matches = plan.kind === 'indexed' ? await resolveMatches(store, projectId, f, plan) : null
  if (matches) return matches.total
  const params: Param[] = []
  const text = `SELECT count(*) AS n FROM contacts WHERE ${listWhere(store, projectId, f, params)}`
  const [row] = await runCompiled<{ n: number | string }>(store, { text, params })
  return Number(row?.n ?? 0)
}

/** Every contact of the project in creation order, `batch` rows at a time (CLI export). */
export async function* iterateAll(store: Store, projectId: string, batch = 1000): AsyncGenerator<ContactRow[]> {
  let after: After | null = null
  for (;;) {
    const rows = await listPage(store, projectId, {}, 'createdAt', 'asc', batch, after)
    if (!rows.length) return
    yield rows
    const last = rows[rows.length - 1]
    after = { value: last.createdAt.getTime(), id: last.id }
    if (rows.length < batch) return
  }
}

// ---------------------------------------------------------------------------------------------------
// Custom fields (the keys of contacts.data)

export type FieldKind = 'string' | 'number' | 'boolean' | 'date' | 'object' | 'array' | 'null'

export async function countContacts(store: Store, projectId: string): Promise<number> {
  return countMatching(store, projectId, {})
}

/** (key, kind, contacts) for every key of every contact's data. Strings that start like an ISO date are 'date'. */
export async function fieldKinds(store: Store, projectId: string): Promise<Array<{ key: string; kind: FieldKind; n: number }>> {
  const rows = store.dialect === 'pg'
    ? await store.rows<{ key: string; kind: FieldKind; n: number | string }>(sql`
        SELECT e.key AS key,
          CASE jsonb_typeof(e.value)
            WHEN 'string' THEN CASE WHEN (e.value #>> '{}') ~ '^\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}|$)' THEN 'date' ELSE 'string' END
            ELSE jsonb_typeof(e.value) END AS kind,
          count(*) AS n
        FROM contacts c, jsonb_each(c.data) e
        WHERE c.project_id = ${projectId}
        GROUP BY 1, 2`)
    : await store.rows<{ key: string; kind: FieldKind; n: number }>(sql`
        SELECT j.key AS key,
          CASE
            WHEN j.type IN ('true', 'false') THEN 'boolean'
            WHEN j.type IN ('integer', 'real') THEN 'number'
            WHEN j.type = 'text' AND (j.value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
              OR j.value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]*') THEN 'date'
            WHEN j.type = 'text' THEN 'string'
            ELSE j.type END AS kind,
          count(*) AS n
        FROM contacts c, json_each(c.data) j
        WHERE c.project_id = ${projectId}
        GROUP BY 1, 2`)
  return rows.map((r) => ({ key: r.key, kind: r.kind, n: Number(r.n) }))
}

/** How many contacts of the project have the key `field` in their data. */
export async function fieldCount(store: Store, projectId: string, field: string): Promise<number> {
  const [row] = store.dialect === 'pg'
    ? await store.rows<{ n: string | number }>(sql`SELECT count(*) AS n FROM contacts WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL`)
    : await store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts c WHERE c.project_id = ${projectId} AND EXISTS (SELECT 1 FROM json_each(c.data) j WHERE j.key = ${field})`)
  return Number(row?.n ?? 0)
}

/** Distinct values of a custom field with their counts, most frequent first. */
export async function fieldValues(store: Store, projectId: string, field: string, limit: number, search?: string): Promise<{ values: Array<{ value: unknown; count: number }>; distinct: number }> {
  if (store.dialect === 'pg') {
    const filter = search ? sql` AND (data ->> ${field}::text) ILIKE ${likePattern(search)} ESCAPE '\\'` : sql``
    const rows = await store.rows<{ value: unknown; n: string | number }>(sql`
      SELECT data -> ${field}::text AS value, count(*) AS n FROM contacts
      WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL${filter}
      GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${limit}`)
    const [d] = await store.rows<{ n: string | number }>(sql`
      SELECT count(DISTINCT data -> ${field}::text) AS n FROM contacts
      WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL${filter}`)
    return { values: rows.map((r) => ({ value: r.value, count: Number(r.n) })), distinct: Number(d?.n ?? 0) }
  }
  const filter = search ? sql` AND CAST(j.value AS TEXT) LIKE ${likePattern(search)} ESCAPE '\\'` : sql``
  const rows = await store.rows<{ value: unknown; type: string; n: number }>(sql`
    SELECT j.value AS value, j.type AS type, count(*) AS n
    FROM contacts c, json_each(c.data) j
    WHERE c.project_id = ${projectId} AND j.key = ${field}${filter}
    GROUP BY j.type, j.value ORDER BY 3 DESC, 1 LIMIT ${limit}`)
  const [d] = await store.rows<{ n: number }>(sql`
    SELECT count(*) AS n FROM (SELECT 1 FROM contacts c, json_each(c.data) j
      WHERE c.project_id = ${projectId} AND j.key = ${field}${filter} GROUP BY j.type, j.value)`)
  const decode = (value: unknown, type: string): unknown => {
    if (type === 'true') return true
    if (type === 'false') return false
    if (type === 'object' || type === 'array') return JSON.parse(String(value))
    return value
  }
  return { values: rows.map((r) => ({ value: decode(r.value, r.type), count: Number(r.n) })), distinct: Number(d?.n ?? 0) }
}

/** Counts of subscribed true/false (the one standard field with a useful value list). */
export async function subscribedValues(store: Store, projectId: string): Promise<Array<{ value: boolean; count: number }>> {
  const c = store.t.contacts
  const rows = await store.db.select({ value: c.subscribed, n: count() }).from(c).where(eq(c.projectId, projectId)).groupBy(c.subscribed)
  return rows.map((r) => ({ value: Boolean(r.value), count: Number(r.n) })).sort((a, b) => b.count - a.count)
}

/** Removes `field` from the data of every contact of the project; returns how many contacts changed. */
export async function deleteField(store: Store, db: Db, projectId: string, field: string, now: Date): Promise<number> {
  if (store.dialect === 'pg') {
    const rows = await store.rows<{ id: string }>(sql`
      UPDATE contacts SET data = data - ${field}::text, updated_at = ${now.toISOString()}
      WHERE project_id = ${projectId} AND (data -> ${field}::text) IS NOT NULL RETURNING id`, db)
    return rows.length
  }
  const has = sql`EXISTS (SELECT 1 FROM json_each(contacts.data) j WHERE j.key = ${field})`
  if (!/["\\]/.test(field)) {
    // A quoted JSON path label addresses any key without a double quote or backslash.
    const rows = await store.rows<{ id: string }>(sql`
      UPDATE contacts SET data = json_remove(data, ${`$."${field}"`}), updated_at = ${now.getTime()}
      WHERE project_id = ${projectId} AND ${has} RETURNING id`, db)
    return rows.length
  }
  const rows = await store.rows<{ id: string; data: string }>(sql`SELECT id, data FROM contacts WHERE project_id = ${projectId} AND ${has}`, db)
  for (const r of rows) {
    const data = JSON.parse(r.data) as Record<string, unknown>
    delete data[field]
    await store.exec(sql`UPDATE contacts SET data = ${JSON.stringify(data)}, updated_at = ${now.getTime()} WHERE id = ${r.id}`, db)
  }
  return rows.length
}

// ---------------------------------------------------------------------------------------------------
// CSV uploads

export type ImportRow = typeof import('../../db/schema').pgSchema.contactImports.$inferSelect

export async function insertImport(store: Store, db: Db, row: ImportRow): Promise<void> {
  await db.insert(store.t.contactImports).values(row)
}

export async function findImport(store: Store, projectId: string, id: string): Promise<ImportRow | null> {
  const t = store.t.contactImports
  const [row] = await store.db.select().from(t).where(and(eq(t.projectId, projectId), eq(t.id, id))).limit(1)
  return row ?? null
}

export async function deleteImport(store: Store, db: Db, projectId: string, id: string): Promise<void> {
  const t = store.t.contactImports
  await db.delete(t).where(and(eq(t.projectId, projectId), eq(t.id, id)))
}

/** True when `err` is a unique-constraint violation (both stores). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errno?: unknown; message?: unknown; cause?: unknown } | null
  if (!e) return false
  if (e.code === '23505' || e.code === 'SQLITE_CONSTRAINT_UNIQUE') return true
  if (typeof e.message === 'string' && e.message.includes('UNIQUE constraint failed')) return true
  return e.cause ? isUniqueViolation(e.cause) : false
}
