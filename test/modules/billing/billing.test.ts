import { beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ctxFor } from '../../../src/deps'
import { AppError } from '../../../src/errors'
import { chargeUsage, checkCap, periodOf } from '../../../src/modules/billing/service'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'
import { insertTestDomain } from '../../helpers/domains'
import { forEachStore } from '../../helpers/env'

forEachStore('usage caps and billing', (env) => {
  let owner: TestUser
  let admin: TestUser
  let member: TestUser
  let stranger: TestUser
  let p: { id: string; secretKey: string; publicKey: string }

  beforeAll(async () => {
    owner = await verifiedUser(env, 'owner')
    p = await ownedProject(env, owner)
    admin = await memberOf(env, owner, p.id, 'ADMIN')
    member = await memberOf(env, owner, p.id, 'MEMBER')
    stranger = await verifiedUser(env, 'stranger')
    await insertTestDomain(env, p.id, 'acme.test', { verified: true })
  }, 60_000)

  const limits = (u: TestUser | null, body?: unknown, id = p.id) =>
    env.request(body === undefined ? 'GET' : 'PUT', `/users/@me/projects/${id}/billing-limits`, { cookie: u?.cookie, body })
  const consumption = (u: TestUser | null, id = p.id) => env.request('GET', `/users/@me/projects/${id}/billing-consumption`, { cookie: u?.cookie })
  const send = (to: string[]) => env.request('POST', '/v1/send', { key: p.secretKey, body: { to, from: 'hello@acme.test', subject: 'Hi', body: '<p>Hi</p>' } })
  const emailCount = async () => (await env.store.db.select().from(env.store.t.emails).where(eq(env.store.t.emails.projectId, p.id))).length

  test('caps start unset; OWNER and ADMIN set them (others keep theirs), a MEMBER reads but cannot change them', async () => {
    const first = await limits(member)
    expect(first.status).toBe(200)
    expect(first.body).toEqual({ transactional: null, campaigns: null, workflows: null, inbound: null })
    const set = await limits(owner, { transactional: 3, campaigns: 0 })
    expect(set.status).toBe(200)
    expect(set.body).toEqual({ transactional: 3, campaigns: 0, workflows: null, inbound: null })
    const byAdmin = await limits(admin, { workflows: 100 })
    expect(byAdmin.body).toEqual({ transactional: 3, campaigns: 0, workflows: 100, inbound: null })
    const byMember = await limits(member, { transactional: 1_000_000 })
    expect(byMember.status).toBe(403)
    expect(byMember.body.error.code).toBe('FORBIDDEN')
    expect((await limits(member)).body.transactional).toBe(3)
  })

  test('bad caps -> 422; no session 401; a project the user is not a member of -> 404', async () => {
    for (const body of [{ transactional: -1 }, { campaigns: 'lots' }, { inbound: 1.5 }]) {
      const res = await limits(owner, body)
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe('VALIDATION_ERROR')
      // The field and a message a person can act on (the dashboard shows it on the field), not TypeBox's "Expected union value".
      const field = Object.keys(body)[0]
      expect(res.body.error.errors[0]).toMatchObject({ field, message: `${field}: expected a whole number of emails, 0 or more, or null for no cap` })
    }
    expect((await limits(null)).status).toBe(401)
    expect((await consumption(null)).status).toBe(401)
    expect((await limits(stranger)).status).toBe(404)
    expect((await limits(stranger, { transactional: null })).status).toBe(404)
    expect((await consumption(stranger)).status).toBe(404)
    // An API key is not a session.
    expect((await env.request('GET', `/users/@me/projects/${p.id}/billing-limits`, { key: p.secretKey })).status).toBe(401)
  })

  test('sends are counted; at the transactional cap 429 BILLING_LIMIT_EXCEEDED and nothing is queued; the campaign cap of 0 does not block them', async () => {
    expect((await send(['a@dest.test', 'b@dest.test'])).status).toBe(200)
    let c = await consumption(member)
    expect(c.status).toBe(200)
    const period = periodOf(new Date())
    expect(c.body).toMatchObject({ periodStart: period.start.toISOString(), periodEnd: period.end.toISOString(), transactional: 2, campaigns: 0, workflows: 0, inbound: 0 })
    expect(c.body.limits.transactional).toBe(3)
    // Two more would pass the cap of 3: the whole request is refused, nothing queued or counted.
    const over = await send(['c@dest.test', 'd@dest.test'])
    expect(over.status).toBe(429)
    expect(over.body.error.code).toBe('BILLING_LIMIT_EXCEEDED')
    expect(over.body.error.message).toContain('transactional')
    expect(over.body.error.details).toMatchObject({ category: 'transactional', cap: 3, used: 2, requested: 2 })
    expect(await emailCount()).toBe(2)
    expect((await send(['c@dest.test'])).status).toBe(200)
    expect((await send(['e@dest.test'])).status).toBe(429)
    c = await consumption(owner)
    expect(c.body.transactional).toBe(3)
    // Lifting the cap lets mail through again.
    await limits(owner, { transactional: null })
    expect((await send(['e@dest.test'])).status).toBe(200)
    expect((await consumption(owner)).body.transactional).toBe(4)
  })

  test('checkCap (campaigns ask before starting) and inbound charging', async () => {
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await expect(checkCap(ctx, 'campaigns', 1)).rejects.toMatchObject({ code: 'BILLING_LIMIT_EXCEEDED', status: 429 })
    expect(await checkCap(ctx, 'transactional', 1_000)).toMatchObject({ cap: null, remaining: null })
    expect(await checkCap(ctx, 'workflows', 100)).toMatchObject({ cap: 100, used: 0, remaining: 0 })
    await expect(checkCap(ctx, 'workflows', 101)).rejects.toBeInstanceOf(AppError)
    await limits(owner, { inbound: 1 })
    expect(await env.store.tx((db) => chargeUsage(ctx, db, { inbound: 1 }, { throwOnExceed: false }))).toBeNull()
    expect(await env.store.tx((db) => chargeUsage(ctx, db, { inbound: 1 }, { throwOnExceed: false }))).toBe('inbound')
    expect((await consumption(owner)).body.inbound).toBe(1)
  })

  test('another project\'s caps and consumption are its own', async () => {
    const q = await ownedProject(env, stranger)
    expect((await limits(stranger, undefined, q.id)).body.transactional).toBeNull()
    expect((await consumption(stranger, q.id)).body.transactional).toBe(0)
    expect((await limits(owner, undefined, q.id)).status).toBe(404)
  })

  test('payment-provider billing is off: checkout, portal, invoices and the webhook say so; /config reports it', async () => {
    for (const [method, path] of [['POST', 'checkout'], ['POST', 'billing-portal'], ['GET', 'billing-invoices']] as const) {
      const res = await env.request(method, `/users/@me/projects/${p.id}/${path}`, { cookie: owner.cookie })
      expect(res.status).toBe(404)
      expect(res.body.error.message).toContain('not enabled')
      expect((await env.request(method, `/users/@me/projects/${p.id}/${path}`, { cookie: member.cookie })).status).toBe(403)
      expect((await env.request(method, `/users/@me/projects/${p.id}/${path}`)).status).toBe(401)
    }
    const hook = await env.request('POST', '/webhooks/incoming/stripe', { body: { type: 'invoice.paid' } })
    expect(hook.status).toBe(404)
    expect(hook.body.error.message).toContain('not enabled')
    expect((await env.request('GET', '/config')).body.features.billing).toEqual({ enabled: false })
    expect((await consumption(owner)).body.subscription).toBeNull()
    // A signed-looking delivery changes nothing either.
    const signed = await env.request('POST', '/webhooks/incoming/stripe', { raw: '{"id":"evt_1"}', headers: { 'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` } })
    expect(signed.status).toBe(404)
  })
})
