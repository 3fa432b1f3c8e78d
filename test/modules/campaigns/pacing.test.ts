import { expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { memberOf, ownedProject, verifiedUser } from '../../helpers/accounts'
import { Worker } from '../../../src/jobs/queue'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { PACING_LOOKAHEAD_MS } from '../../../src/modules/campaigns/fanout'
import { PRIORITY } from '../../../src/modules/emails/service'
import { addDomain, campaignBody } from './fixture'

/**
 * A project's sending rate: campaign mail is queued spread at that rate (run_at of the outbound queue),
 * shared by every campaign of the project; transactional mail goes ahead, due at once. The fan-out waits
 * (injected sleep) rather than queue far ahead of its pacing.
 */

forEachStore('campaign sending rate', (env) => {
  async function world(rate: number | null, contacts: number) {
    const owner = await verifiedUser(env, 'pace')
    const p = await ownedProject(env, owner)
    const patched = await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { sendRatePerSecond: rate } })
    expect(patched.status).toBe(200)
    expect(patched.body.sendRatePerSecond).toBe(rate)
    const domain = `p${Math.random().toString(36).slice(2, 10)}.test`
    await addDomain(env, p.id, domain, true)
    for (let i = 0; i < contacts; i++) await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `c${i}@dest.test` } })
    return { ...p, owner, from: `news@${domain}` }
  }

  async function campaign(p: { secretKey: string; from: string }) {
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ from: p.from }) })
    expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: p.secretKey })).status).toBe(200)
    return c.body.data.id as string
  }

  async function runAts(env: TestEnv, campaignId: string): Promise<number[]> {
    const { emails, outboundQueue: q } = env.store.t
    const rows = await env.store.db.select({ runAt: q.runAt, priority: q.priority }).from(q).innerJoin(emails, eq(emails.id, q.emailId))
      .where(eq(emails.campaignId, campaignId)).orderBy(asc(q.runAt))
    expect(rows.every((r) => r.priority === PRIORITY.bulk)).toBe(true)
    return rows.map((r) => new Date(r.runAt).getTime())
  }

  test('PATCH sets and clears the project rate (OWNER or ADMIN; a MEMBER gets 403; bad values 422); GET shows it', async () => {
    const owner = await verifiedUser(env, 'rate')
    const p = await ownedProject(env, owner)
    expect((await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })).body.find((x: { id: string }) => x.id === p.id).sendRatePerSecond).toBeNull()
    for (const bad of [0, -3, 1.5, 'fast', 2_000_000]) {
      expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { sendRatePerSecond: bad } })).status).toBe(422)
    }
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: member.cookie, body: { sendRatePerSecond: 5 } })).status).toBe(403)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: admin.cookie, body: { sendRatePerSecond: 5 } })).body.sendRatePerSecond).toBe(5)
    // Other settings are kept; null goes back to the server default.
    expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { name: 'Renamed' } })).body).toMatchObject({ name: 'Renamed', sendRatePerSecond: 5 })
    expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { sendRatePerSecond: null } })).body.sendRatePerSecond).toBeNull()
  }, 30_000) // three users log in (password hashing): slow on a busy machine

  test('10 messages per second: each campaign email is due 100 ms after the one before, across two campaigns of the project; transactional mail is due at once', async () => {
    const p = await world(10, 12)
    const slept: number[] = []
    const worker = new Worker(env.deps, [campaignSendJob({ batchSize: 5, sleep: async (ms) => { slept.push(ms) } })])
    const first = await campaign(p)
    const second = await campaign(p)
    const before = Date.now()
    await worker.drain()
    const a = await runAts(env, first)
    const b = await runAts(env, second)
    expect(a.length).toBe(12)
    expect(b.length).toBe(12)
    // One project pace: the 24 emails follow one another 100 ms apart, whichever campaign they belong to.
    const all = [...a, ...b].sort((x, y) => x - y)
    for (let i = 1; i < all.length; i++) expect(all[i] - all[i - 1]).toBe(100)
    expect(all[0]).toBeGreaterThanOrEqual(before - 1000)
    // 2.4 s of mail is within the look-ahead: no wait was needed.
    expect(slept.filter((ms) => ms > 0)).toEqual([])

    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'tx@dest.test', from: p.from, subject: 'Receipt', body: '<p>Thanks</p>' } })
    expect(sent.status).toBe(200)
    const q = env.store.t.outboundQueue
    const [tx] = await env.store.db.select({ runAt: q.runAt, priority: q.priority }).from(q).where(eq(q.emailId, sent.body.data.emails[0].email))
    expect(tx.priority).toBe(PRIORITY.transactional)
    expect(new Date(tx.runAt).getTime()).toBeLessThan(all[all.length - 1])
  })

  test('a slow rate: the fan-out waits before queueing mail due beyond the look-ahead, instead of filling the queue', async () => {
    const p = await world(1, 12)
    const slept: number[] = []
    const id = await campaign(p)
    await new Worker(env.deps, [campaignSendJob({ batchSize: 4, sleep: async (ms) => { slept.push(ms) } })]).drain()
    const at = await runAts(env, id)
    for (let i = 1; i < at.length; i++) expect(at[i] - at[i - 1]).toBe(1000)
    // Batches of 4 s at 1/s: the second and third end 8 s and 12 s on, beyond the 5 s look-ahead, so the fan-out waited.
    expect(slept.length).toBeGreaterThanOrEqual(2)
    expect(slept.every((ms) => ms > 0 && ms <= 12_000 - PACING_LOOKAHEAD_MS)).toBe(true)
  })

  test('no rate (the default): campaign mail is due at once', async () => {
    const p = await world(null, 3)
    expect(env.config.sendRatePerSecond).toBeNull()
    const id = await campaign(p)
    const before = Date.now()
    await new Worker(env.deps, [campaignSendJob()]).drain()
    const at = await runAts(env, id)
    expect(at.length).toBe(3)
    expect(Math.max(...at)).toBeLessThanOrEqual(Date.now())
    expect(Math.min(...at)).toBeGreaterThanOrEqual(before - 1000)
  })
})
