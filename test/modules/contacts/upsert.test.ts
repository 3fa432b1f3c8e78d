import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { upsertContact, upsertMany } from '../../../src/modules/contacts/service'
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
