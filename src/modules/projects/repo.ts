import { and, asc, eq, or, sql, type SQL } from 'drizzle-orm'
import { compiledRead, type Db, type Store } from '../../db/client'
import { statementRows } from '../../db/statement'

function columns(store: Store) {
  const { projects, members } = store.t
  return {
    id: projects.id, name: projects.name, publicKey: projects.publicKey, disabled: projects.disabled,
    trackingEnabled: projects.trackingEnabled, settings: projects.settings, role: members.role, createdAt: projects.createdAt, updatedAt: projects.updatedAt,
  }
}

/** The projects a user is a member of, with their role (never the secret key hash). */
export async function forUser(store: Store, db: Db, userId: string) {
  const { projects, members } = store.t
  return db.select(columns(store)).from(members).innerJoin(projects, eq(projects.id, members.projectId))
    .where(eq(members.userId, userId)).orderBy(asc(projects.createdAt), asc(projects.id))
}

export async function oneForUser(store: Store, db: Db, userId: string, projectId: string) {
  const { projects, members } = store.t
  const [row] = await db.select(columns(store)).from(members).innerJoin(projects, eq(projects.id, members.projectId))
    .where(and(eq(members.userId, userId), eq(members.projectId, projectId))).limit(1)
  return row
}

export interface NewProjectRow { id: string; name: string; publicKey: string; secretKeyHash: string; ownerUserId: string | null; now: Date }

/** A project and, when given, its OWNER membership (in the caller's transaction). */
export async function insert(store: Store, db: Db, p: NewProjectRow): Promise<void> {
  const { projects, members } = store.t
  await db.insert(projects).values({
    id: p.id, name: p.name, publicKey: p.publicKey, secretKeyHash: p.secretKeyHash,
    disabled: false, trackingEnabled: true, settings: {}, createdAt: p.now, updatedAt: p.now,
  })
  if (p.ownerUserId) await db.insert(members).values({ projectId: p.id, userId: p.ownerUserId, role: 'OWNER', createdAt: p.now })
}

/** Replaces both keys; false when the project does not exist. */
export async function setKeys(store: Store, db: Db, projectId: string, publicKey: string, secretKeyHash: string, now: Date): Promise<boolean> {
  const { projects } = store.t
  const rows = await db.update(projects).set({ publicKey, secretKeyHash, updatedAt: now }).where(eq(projects.id, projectId)).returning({ id: projects.id })
  return rows.length > 0
}

/** Projects whose id or name is `idOrName`, oldest first (at most `limit`). */
export async function byIdOrName(store: Store, db: Db, idOrName: string, limit: number) {
  const { projects } = store.t
  return db.select().from(projects).where(or(eq(projects.id, idOrName), eq(projects.name, idOrName)))
    .orderBy(projects.createdAt, projects.id).limit(limit)
}

/** One project's row by id (the dashboard's guard, after it checked membership). */
export async function byId(store: Store, db: Db, projectId: string): Promise<ProjectRow | undefined> {
  const { projects } = store.t
  const [row] = await db.select().from(projects).where(eq(projects.id, projectId)).limit(1)
  return row
}

/** Every project (the CLI's list), oldest first, without the secret key hash. */
export async function all(store: Store, db: Db) {
  const { projects } = store.t
  return db.select({ id: projects.id, name: projects.name, publicKey: projects.publicKey, disabled: projects.disabled, createdAt: projects.createdAt })
    .from(projects).orderBy(projects.createdAt)
}

export async function update(store: Store, db: Db, projectId: string, patch: { name?: string; trackingEnabled?: boolean }, now: Date): Promise<void> {
  const { projects } = store.t
  await db.update(projects).set({ ...patch, updatedAt: now }).where(eq(projects.id, projectId))
}

/** Sets (or, with null, removes) one key of the project's settings. */
export async function setSetting(store: Store, db: Db, projectId: string, key: string, value: unknown, now: Date): Promise<void> {
  const { projects } = store.t
  const [row] = await db.select({ settings: projects.settings }).from(projects).where(eq(projects.id, projectId)).limit(1)
  if (!row) return
  const settings: Record<string, unknown> = { ...(row.settings ?? {}) }
  if (value === null) delete settings[key]
  else settings[key] = value
  await db.update(projects).set({ settings, updatedAt: now }).where(eq(projects.id, projectId))
}

/** The project's settings (an empty object for an unknown project). */
export async function settingsOf(store: Store, db: Db, projectId: string): Promise<Record<string, unknown>> {
  const { projects } = store.t
  const [row] = await db.select({ settings: projects.settings }).from(projects).where(eq(projects.id, projectId)).limit(1)
  return row?.settings ?? {}
}

export async function remove(store: Store, db: Db, projectId: string): Promise<void> {
  const { projects } = store.t
  await db.delete(projects).where(eq(projects.id, projectId))
}

export type ProjectRow = typeof import('../../db/schema').pgSchema.projects.$inferSelect

interface RawProject {
  id: string; name: string; public_key: string; secret_key_hash: string; disabled: boolean | number; tracking_enabled: boolean | number
  settings: Record<string, unknown> | string; created_at: Date | number | string; updated_at: Date | number | string
}

const COLUMNS = 'id, name, public_key, secret_key_hash, disabled, tracking_enabled, settings, created_at, updated_at'
const byKeyStatements = {
  public: compiledRead<RawProject>(`SELECT ${COLUMNS} FROM projects WHERE public_key = $1 LIMIT 1`),
  secret: compiledRead<RawProject>(`SELECT ${COLUMNS} FROM projects WHERE secret_key_hash = $1 LIMIT 1`),
}
/** PostgreSQL only (byKeysTogether): the keys as one JSON array parameter. */
const byKeysStatements = {
  public: compiledRead<RawProject>(`SELECT ${COLUMNS} FROM projects WHERE public_key = ANY (ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))`),
  secret: compiledRead<RawProject>(`SELECT ${COLUMNS} FROM projects WHERE secret_key_hash = ANY (ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))`),
}

type KeyKind = keyof typeof byKeyStatements
interface KeyWaiter { resolve: (row: RawProject | undefined) => void; reject: (err: unknown) => void }
interface KeyLookups { public: Map<string, KeyWaiter[]>; secret: Map<string, KeyWaiter[]>; scheduled: boolean }
// Not state between turns: the look-ups asked during one turn, read together at the next (empty otherwise).
const keyLookups = new WeakMap<Store, KeyLookups>()

/**
 * PostgreSQL: the key look-ups asked for during one turn of the event loop are read with one statement
 * at the start of the next turn, instead of a round trip (and a backend's parse, plan and execute) each.
 * Every request of a batch arrived before its statement started, so a key rotated or disabled by a commit
 * that a client saw answered fails on that client's next request, as with a look-up per request.
 */
function byKeysTogether(store: Store, kind: KeyKind, value: string): Promise<RawProject | undefined> {
  let lookups = keyLookups.get(store)
  if (!lookups) {
    lookups = { public: new Map(), secret: new Map(), scheduled: false }
    keyLookups.set(store, lookups)
  }
  const batch = lookups
  return new Promise((resolve, reject) => {
    const waiting = batch[kind].get(value)
    if (waiting) waiting.push({ resolve, reject })
    else batch[kind].set(value, [{ resolve, reject }])
    if (!batch.scheduled) {
      batch.scheduled = true
      setImmediate(() => {
        batch.scheduled = false
        for (const k of ['public', 'secret'] as const) {
          const asked = batch[k]
          if (!asked.size) continue
          batch[k] = new Map()
          void readKeys(store, k, asked)
        }
      })
    }
  })
}

async function readKeys(store: Store, kind: KeyKind, asked: Map<string, KeyWaiter[]>): Promise<void> {
  try {
    const keys = [...asked.keys()]
    const rows = keys.length === 1 ? await byKeyStatements[kind](store)(keys[0]) : await byKeysStatements[kind](store)(JSON.stringify(keys))
    const found = new Map(rows.map((r) => [kind === 'public' ? r.public_key : r.secret_key_hash, r]))
    for (const [key, waiters] of asked) for (const w of waiters) w.resolve(found.get(key))
  } catch (err) {
    for (const waiters of asked.values()) for (const w of waiters) w.reject(err)
  }
}

function toProject(r: RawProject): ProjectRow {
  return {
    id: r.id, name: r.name, publicKey: r.public_key, secretKeyHash: r.secret_key_hash,
    disabled: Boolean(r.disabled), trackingEnabled: Boolean(r.tracking_enabled),
    settings: typeof r.settings === 'string' ? JSON.parse(r.settings) : r.settings,
    createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  }
}

/**
 * Key look-ups kept per store. A cache, not state: dropping it costs the next look-ups their query.
 * - `version` a number (SQLite): exact, dropped as soon as anyone commits to the database (byKey).
 * - `version` null (PostgreSQL, where another node's commit cannot be seen without a query): kept only for
 *   writes that confirm the key in their own transaction (byKeyConfirmedInWrite, confirmKeys).
 */
const keyCache = new WeakMap<Store, { version: number | null; rows: Map<string, ProjectRow> }>()
const KEY_CACHE_MAX = 10_000
const cacheKeyOf = (kind: 'public' | 'secret', value: string) => (kind === 'public' ? value : `#${value}`)

/**
 * The project of an API key: by the public key in clear or by the SHA-256 of the secret key. Runs on every
 * authenticated request: a prepared statement, and on SQLite a cache that is valid only while
 * `store.dataVersion()` is unchanged, so a rotated key fails on the very next request whichever process
 * rotated it. On PostgreSQL another node's commit cannot be seen without a query, and a key must stop
 * working with the commit that rotates or disables it (docs/decisions.md, API keys): no cache there (but
 * for writes that confirm the key themselves, byKeyConfirmedInWrite), and the look-ups of one turn share a
 * statement (byKeysTogether). The returned row is frozen (shared between requests).
 */
export async function byKey(store: Store, kind: 'public' | 'secret', value: string): Promise<ProjectRow | undefined> {
  const version = store.dataVersion()
  const cacheKey = cacheKeyOf(kind, value)
  let cache = version === null ? undefined : keyCache.get(store)
  if (version !== null) {
    if (!cache || cache.version !== version || cache.rows.size >= KEY_CACHE_MAX) {
      cache = { version, rows: new Map() }
      keyCache.set(store, cache)
    }
    const hit = cache.rows.get(cacheKey)
    if (hit) return hit
  }
  const raw = version === null ? await byKeysTogether(store, kind, value) : (await byKeyStatements[kind](store)(value))[0]
  if (!raw) return undefined
  const row = Object.freeze(toProject(raw))
  // Only if nothing was committed while the query ran (else the row may already be stale for the new version).
  if (cache && store.dataVersion() === cache.version) cache.rows.set(cacheKey, row)
  return row
}

/**
 * The project of an API key for a write that confirms the key in its own transaction (confirmKeys): on a
 * store whose commits by others cannot be seen without a query (PostgreSQL, `dataVersion()` null), a key
 * seen before is answered from memory, `cached: true`, and the write must confirm it before it commits
 * (POST /v1/track: the track batch's first round trip carries the check, so a request costs no look-up of
 * its own). Elsewhere byKey's answer, `cached: false`. Only projects that are not disabled are kept: a
 * disabled one is refused from its fresh row, and enabled again it is seen at once.
 */
export async function byKeyConfirmedInWrite(store: Store, kind: 'public' | 'secret', value: string): Promise<{ row: ProjectRow; cached: boolean } | undefined> {
  if (store.dataVersion() !== null) {
    const row = await byKey(store, kind, value)
    return row && { row, cached: false }
  }
  const cacheKey = cacheKeyOf(kind, value)
  const hit = keyCache.get(store)?.rows.get(cacheKey)
  if (hit) return { row: hit, cached: true }
  const row = await byKey(store, kind, value)
  if (!row) return undefined
  if (!row.disabled) {
    let cache = keyCache.get(store)
    if (!cache || cache.rows.size >= KEY_CACHE_MAX) {
      cache = { version: null, rows: new Map() }
      keyCache.set(store, cache)
    }
    cache.rows.set(cacheKey, row)
  }
  return { row, cached: false }
}

/** Drops a key kept by byKeyConfirmedInWrite (a write found it stale). */
export function forgetKey(store: Store, kind: 'public' | 'secret', value: string): void {
  const cache = keyCache.get(store)
  if (cache?.version === null) cache.rows.delete(cacheKeyOf(kind, value))
}

/** A key answered from memory (byKeyConfirmedInWrite), to be confirmed in the write's transaction. */
export interface KeyConfirm { projectId: string; kind: 'public' | 'secret'; value: string }

/**
 * In `db`'s transaction: whether each key still opens its project, enabled (one statement for all). A
 * rotation or a disable committed before this statement began is seen: a client that was answered the
 * rotation sends its next request after it, so that request's write fails the check.
 */
export async function confirmKeys(store: Store, db: Db, checks: readonly KeyConfirm[]): Promise<boolean[]> {
  const rows = await statementRows<{ id: string; public_key: string; secret_key_hash: string; disabled: boolean | number }>(
    store, db, 'SELECT id, public_key, secret_key_hash, disabled FROM projects WHERE id IN $1[]', [...new Set(checks.map((c) => c.projectId))])
  const byId = new Map(rows.map((r) => [r.id, r]))
  return checks.map((c) => {
    const r = byId.get(c.projectId)
    return r !== undefined && !r.disabled && (c.kind === 'public' ? r.public_key === c.value : r.secret_key_hash === c.value)
  })
}

/**
 * The tables holding a project's data, wiped by POST /users/@me/projects/:id/reset (one transaction) and
 * emptied before DELETE. Keys, settings, members and invitations are kept by a reset.
 * A module that adds project data adds its table HERE, before the tables it references
 * (rows are deleted in this order, so children come first).
 */
export const PROJECT_DATA_TABLES: readonly string[] = [
  'analytics_hourly',
  'email_stats',
  'campaign_stats',
  'campaign_unsubscribes',
  'send_pacing',
  'inbound_messages',
  'events',
  'contacts',
  'jobs',
  'idempotency_keys',
  'mail_capture',
  'campaigns',
  'segment_members',
  'segments',
]

/**
 * Onboarding steps of GET /projects/:id/setup-state: a step is done when its query finds a row of the
 * project. A module adds its step here (`sql` gets the project id; keep it to one indexed `SELECT 1`).
 */
const SETUP_STEPS: ReadonlyArray<{ id: string; title: string; done: (projectId: string) => SQL }> = [
  // verified_at is set while the domain is verified and cleared when it stops being so (domains/service.ts).
  { id: 'domain', title: 'Verify a sending domain', done: (p) => sql`SELECT 1 AS x FROM domains WHERE project_id = ${p} AND verified_at IS NOT NULL LIMIT 1` },
  { id: 'contact', title: 'Add a contact', done: (p) => sql`SELECT 1 AS x FROM contacts WHERE project_id = ${p} LIMIT 1` },
  {
    id: 'event', title: 'Track an event with POST /v1/track',
    done: (p) => sql`SELECT 1 AS x FROM events WHERE project_id = ${p} AND name NOT LIKE 'email.%' AND name NOT LIKE 'contact.%' AND name NOT LIKE 'segment.%' LIMIT 1`,
  },
]

export async function wipeProjectData(store: Store, db: Db, projectId: string): Promise<void> {
  // The emails stay; the delivery events read from their rows (events/inline.ts) go with the events.
  await store.exec(sql`UPDATE emails SET inline_events = NULL WHERE project_id = ${projectId} AND inline_events IS NOT NULL`, db)
  for (const table of PROJECT_DATA_TABLES) {
    await store.exec(sql`DELETE FROM ${sql.identifier(table)} WHERE project_id = ${projectId}`, db)
  }
}

/** Each onboarding step of SETUP_STEPS with whether the project has done it. */
export async function setupSteps(store: Store, projectId: string): Promise<Array<{ id: string; title: string; done: boolean }>> {
  const steps: Array<{ id: string; title: string; done: boolean }> = []
  for (const step of SETUP_STEPS) {
    const rows = await store.rows(step.done(projectId))
    steps.push({ id: step.id, title: step.title, done: rows.length > 0 })
  }
  return steps
}
