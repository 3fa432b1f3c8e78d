import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { forEachStore, pgReachableSync, TestEnv } from '../../helpers/env'
import { contactMadeAndGone, RACED_EMAIL_PREFIX } from '../../helpers/races'
import { until } from '../../helpers/worker'
import { ctxFor } from '../../../src/deps'
import { isRetryableConflict, LostRaceError } from '../../../src/db/group-commit'
import { againIfVanished, ContactVanishedError, upsertContact, upsertMany, type UpsertInput } from '../../../src/modules/contacts/service'
import { importCsv } from '../../../src/modules/contacts/import'
import { applyDataRules } from '../../../src/modules/contacts/data'

test('data rules: the pure function', () => {
  const existing = { plan: 'pro', n: 1, nested: { a: 1 } }
  expect(applyDataRules(existing, { plan: '' })).toEqual({ data: existing, changed: false, templateData: existing })
  expect(applyDataRules(existing, { plan: null }).data).toEqual({ n: 1, nested: { a: 1 } })
  expect(applyDataRules(existing, { nested: { a: 1 } }).changed).toBe(false)
  expect(applyDataRules(existing, { nested: { a: 2 } }).data.nested).toEqual({ a: 2 })
  const t = applyDataRules(existing, { code: { value: 'X1', persistent: false }, kept: { value: 7, persistent: true } })
  expect(t.data).toEqual({ ...existing, kept: 7 })
  expect(t.templateData).toEqual({ ...existing, kept: 7, code: 'X1' })
  const r = applyDataRules({}, { id: 1, service_id: 1, service_email: 1, email: 'x', unsubscribeUrl: 1, subscribeUrl: 1, manageUrl: 1, ok: true })
  expect(r.data).toEqual({ ok: true })
  expect(existing).toEqual({ plan: 'pro', n: 1, nested: { a: 1 } })
})

forEachStore('upsertContact', (env) => {
  test('creates, updates, emits one event per real subscription change', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const a = await upsertContact(ctx, { email: '  Ann@Example.COM ', data: { plan: 'free', tmp: { value: 'x', persistent: false } } }, { defaultSubscribed: true })
    expect(a.isNew).toBe(true)
    expect(a.contact.email).toBe('ann@example.com')
    expect(a.contact.subscribed).toBe(true)
    expect(a.contact.data).toEqual({ plan: 'free' })
    expect(a.templateData).toEqual({ plan: 'free', tmp: 'x' })
    const b = await upsertContact(ctx, { email: 'ann@example.com', subscribed: false }, { defaultSubscribed: true })
    expect(b.isNew).toBe(false)
    expect(b.isUpdate).toBe(true)
    expect(b.contact.id).toBe(a.contact.id)
    expect(b.events.map((e) => e.name)).toEqual(['contact.unsubscribed'])
    const c = await upsertContact(ctx, { email: 'ann@example.com', subscribed: false }, { defaultSubscribed: true })
    expect(c.events).toEqual([])
    const d = await upsertContact(ctx, { email: 'ann@example.com' }, { defaultSubscribed: true })
    expect(d.contact.subscribed).toBe(false)
    const rows = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id}`)
    expect(Number(rows[0].n)).toBe(1)
  })

  test('againIfVanished: runs the write again after a lost race or a deadlock, at most three times; other errors at once; inside a transaction once', async () => {
    const store = env.store
    let runs = 0
    expect(await againIfVanished(store, async () => { if (++runs < 3) throw new ContactVanishedError('a@example.com'); return 'done' })).toBe('done')
    expect(runs).toBe(3)
    runs = 0
    const lost = await againIfVanished(store, async () => { runs++; throw new ContactVanishedError('b@example.com') }).catch((e: unknown) => e)
    expect(lost).toBeInstanceOf(ContactVanishedError)
    // Lost on every run: the API answers 409 (a LostRaceError is an AppError), and the group commit runs it again.
    expect(lost).toMatchObject({ status: 409, code: 'CONFLICT' })
    expect(isRetryableConflict(lost)).toBe(true)
    expect(runs).toBe(3)
    runs = 0
    await expect(againIfVanished(store, async () => { runs++; throw new Error('disk full') })).rejects.toThrow('disk full')
    expect(runs).toBe(1)
    // A deadlock's loser (PostgreSQL's 40P01, under drizzle's wrapper) runs again too.
    runs = 0
    const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' })
    expect(await againIfVanished(store, async () => { if (++runs < 2) throw new Error('Failed query', { cause: deadlock }); return 'done' })).toBe('done')
    expect(runs).toBe(2)
    // A deadlock on every run ends as the 409 of a lost race, the driver's error as its cause.
    runs = 0
    const stuck = await againIfVanished(store, async () => { runs++; throw new Error('Failed query', { cause: deadlock }) }).catch((e: unknown) => e)
    expect(stuck).toBeInstanceOf(LostRaceError)
    expect(stuck).toMatchObject({ status: 409, code: 'CONFLICT', cause: { message: 'Failed query', cause: deadlock } })
    expect(runs).toBe(3)
    // Inside a transaction a `tx` joins it: run again there, the first run's writes would still stand.
    runs = 0
    const joined = await store.tx(() => againIfVanished(store, async () => { runs++; throw new ContactVanishedError('c@example.com') })).catch((e: unknown) => e)
    expect(joined).toBeInstanceOf(ContactVanishedError)
    expect(runs).toBe(1)
  })

  test('concurrent upserts of one new email settle on one contact', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      upsertContact(ctx, { email: 'race@example.com', data: { [`k${i}`]: i } }, { defaultSubscribed: true })))
    expect(new Set(results.map((r) => r.contact.id)).size).toBe(1)
    expect(results.filter((r) => r.isNew).length).toBe(1)
    const rows = await env.store.rows<{ data: unknown }>(sql`SELECT data FROM contacts WHERE project_id = ${p.id}`)
    expect(rows.length).toBe(1)
    const data = typeof rows[0].data === 'string' ? JSON.parse(rows[0].data) : rows[0].data
    expect(Object.keys(data as object).length).toBe(20)
  })

  test('upsertMany in concurrent transactions: one creates each new contact, the others update it; no data is lost', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const runs = await Promise.all(Array.from({ length: 10 }, (_, i) => env.store.tx((db) => upsertMany(ctx, db, [
      { email: 'shared@example.com', data: { [`k${i}`]: i } },
      { email: `own${i}@example.com`, subscribed: i % 2 === 0 },
    ], { defaultSubscribed: true }))))
    expect(runs.filter((r) => r.outcomes[0] === 'created').length).toBe(1)
    expect(runs.filter((r) => r.outcomes[0] === 'updated').length).toBe(9)
    expect(runs.every((r) => r.outcomes[1] === 'created')).toBe(true)
    expect(new Set(runs.map((r) => r.contacts[0].id)).size).toBe(1)
    const rows = await env.store.rows<{ email: string; data: unknown }>(sql`SELECT email, data FROM contacts WHERE project_id = ${p.id} AND email = 'shared@example.com'`)
    const data = typeof rows[0].data === 'string' ? JSON.parse(rows[0].data) : rows[0].data
    expect(Object.keys(data as object).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `k${i}`).sort())
    const n = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts WHERE project_id = ${p.id}`)
    expect(Number(n[0].n)).toBe(11)
  })
})

/**
 * upsertMany on PostgreSQL inserts the batch's new contacts, then reads every contact of the batch FOR
 * UPDATE. A contact that exists when the insert runs (so the insert skips it) and is deleted before the
 * read sees it is neither inserted nor found: the batch reads it once more, and updates the contact that
 * replaced it, or fails when there is none (its caller runs it again the safe way). The interleaving is
 * made, not hoped for: another connection holds the contact's row lock, the batch's read waits for it,
 * and that connection deletes the row (and may insert a new one) before it commits.
 */
const pg = new TestEnv('pg')
describe.skipIf(!pgReachableSync())('upsertMany: a contact deleted between its insert and its read [pg]', () => {
  beforeAll(() => pg.start(), 60_000)
  afterAll(() => pg.stop(), 60_000)

  /** The batch, run while another connection holds `email`'s row and runs `change` on it once the batch's read waits for it. */
  async function interleaved(projectId: string, email: string, inputs: UpsertInput[], change: (q: postgres.TransactionSql) => Promise<unknown>) {
    const ctx = ctxFor(pg.deps, projectId, { kind: 'cli' })
    return interleavedWith(projectId, email, () => pg.store.tx((db) => upsertMany(ctx, db, inputs, { defaultSubscribed: true })), change)
  }

  /** `work`, run while another connection holds `email`'s row and runs `change` on it once work's read waits for it. */
  async function interleavedWith<T>(projectId: string, email: string, work: () => Promise<T>, change: (q: postgres.TransactionSql) => Promise<unknown>): Promise<{ r?: T; err?: unknown }> {
    const other = postgres(pg.config.databaseUrl, { max: 1, onnotice: () => {} })
    try {
      let locked!: () => void
      let proceed!: () => void
      const isLocked = new Promise<void>((r) => { locked = r })
      const mayChange = new Promise<void>((r) => { proceed = r })
      const holder = other.begin(async (q) => {
        await q`SELECT id FROM contacts WHERE project_id = ${projectId} AND email = ${email} FOR UPDATE`
        locked()
        await mayChange
        await change(q)
      })
      await isLocked
      const batch = work().then((r) => ({ r }), (err: unknown) => ({ err }))
      // The batch's insert has skipped the contact (it exists) and its read waits for our lock.
      await until(async () => (await pg.store.rows(sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%' AND pid <> pg_backend_pid()`)).length > 0, 10_000, 'the batch\'s read to wait for the row lock')
      proceed()
      await holder
      return await batch
    } finally {
      await other.end()
    }
  }

  const contactsNamed = async (projectId: string, email: string) =>
    pg.store.rows<{ id: string; data: Record<string, unknown> }>(sql`SELECT id, data FROM contacts WHERE project_id = ${projectId} AND email = ${email}`)

  test('deleted and made again by another writer: the batch updates the contact that replaced it', async () => {
    const p = await pg.project()
    const ctx = ctxFor(pg.deps, p.id, { kind: 'cli' })
    const first = await upsertContact(ctx, { email: 'replaced@example.com', data: { plan: 'free' } }, { defaultSubscribed: true })
    const replacement = `replacement-${Bun.randomUUIDv7()}`
    const { r, err } = await interleaved(p.id, 'replaced@example.com', [{ email: 'replaced@example.com', data: { seats: 3 } }, { email: 'new@example.com' }], async (q) => {
      await q`DELETE FROM contacts WHERE id = ${first.contact.id}`
      await q`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (${replacement}, ${p.id}, 'replaced@example.com', true, ${q.json({ origin: 'other' })}, now(), now())`
    }) as { r?: Awaited<ReturnType<typeof upsertMany>>; err?: unknown }
    expect(err).toBeUndefined()
    expect(r?.outcomes).toEqual(['updated', 'created'])
    expect(r?.contacts[0].id).toBe(replacement)
    expect(await contactsNamed(p.id, 'replaced@example.com')).toEqual([{ id: replacement, data: { origin: 'other', seats: 3 } }])
    expect(await contactsNamed(p.id, 'new@example.com')).toHaveLength(1)
  }, 60_000)

  test('deleted by another writer and not made again: the batch fails, and nothing of it is written', async () => {
    const p = await pg.project()
    const ctx = ctxFor(pg.deps, p.id, { kind: 'cli' })
    const first = await upsertContact(ctx, { email: 'gone@example.com' }, { defaultSubscribed: true })
    const { r, err } = await interleaved(p.id, 'gone@example.com', [{ email: 'gone@example.com', data: { seats: 3 } }, { email: 'other@example.com' }], async (q) => {
      await q`DELETE FROM contacts WHERE id = ${first.contact.id}`
    }) as { r?: unknown; err?: unknown }
    expect(r).toBeUndefined()
    expect((err as Error).message).toBe('The contact gone@example.com was deleted by another request while it was written; send the request again')
    expect(await contactsNamed(p.id, 'gone@example.com')).toEqual([])
    expect(await contactsNamed(p.id, 'other@example.com')).toEqual([])
  }, 60_000)

  test('a CSV import whose contact is deleted by another writer mid-batch runs that batch again: the import completes and makes the contact anew', async () => {
    const p = await pg.project()
    const ctx = ctxFor(pg.deps, p.id, { kind: 'cli' })
    await upsertContact(ctx, { email: 'deleted-mid-import@example.com', data: { plan: 'free' } }, { defaultSubscribed: true })
    const csv = 'email,plan\ndeleted-mid-import@example.com,pro\nfresh-import@example.com,team\n'
    const { r, err } = await interleavedWith(p.id, 'deleted-mid-import@example.com', () => importCsv(ctx, csv, async () => {}), async (q) => {
      await q`DELETE FROM contacts WHERE project_id = ${p.id} AND email = 'deleted-mid-import@example.com'`
    })
    expect(err).toBeUndefined()
    // The first run rolled back whole; the second found the contact gone and created it, with the row's data.
    expect(r).toMatchObject({ created: 2, updated: 0, failed: 0, errors: [] })
    expect((await contactsNamed(p.id, 'deleted-mid-import@example.com')).map((c) => c.data)).toEqual([{ plan: 'pro' }])
    expect(await contactsNamed(p.id, 'fresh-import@example.com')).toHaveLength(1)
  }, 60_000)
})

/**
 * A single upsert (POST /contacts) finds no contact, then its insert meets one that another writer made
 * meanwhile, and that contact is deleted before the upsert reads it (contactMadeAndGone). The upsert's
 * transaction rolls back and runs again, which creates the contact.
 */
const pgOne = new TestEnv('pg')
describe.skipIf(!pgReachableSync())('upsertContact: its contact made and deleted by others between its read, insert and read again [pg]', () => {
  beforeAll(() => pgOne.start(), 60_000)
  afterAll(() => pgOne.stop(), 60_000)

  test('the upsert runs again and creates the contact; POST /contacts does not fail', async () => {
    const p = await pgOne.project()
    const ctx = ctxFor(pgOne.deps, p.id, { kind: 'cli' })
    const email = `${RACED_EMAIL_PREFIX}@example.com`
    const { r, err, madeId } = await contactMadeAndGone(pgOne, p.id, email, () => upsertContact(ctx, { email, data: { plan: 'pro' } }, { defaultSubscribed: true }))
    expect(err).toBeUndefined()
    if (!r) throw new Error('the upsert answered nothing')
    expect(r.isNew).toBe(true)
    const rows = await pgOne.store.rows<{ id: string }>(sql`SELECT id FROM contacts WHERE project_id = ${p.id} AND email = ${email}`)
    expect(rows.map((x) => x.id)).toEqual([r.contact.id])
    expect(r.contact.id).not.toBe(madeId)
  }, 60_000)
})
