import { beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import { upsertMany } from '../../../src/modules/contacts/service'
import { abWinnerJob, campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { AB_WINNER_JOB } from '../../../src/modules/campaigns/service'
import { chooseWinner, cutsOf, drawOf, variantOf } from '../../../src/modules/campaigns/abtest'
import { recordOpen } from '../../../src/modules/tracking/service'
import { renderDeferred } from '../../../src/modules/campaigns/render'
import { loadForDelivery } from '../../../src/modules/emails/repo'
import type { NewProject } from '../../../src/modules/projects/service'
import { addDomain, campaignBody } from './fixture'

const N = 200
const AB = {
  variants: [{ subject: 'A: hello {{firstName}}' }, { subject: 'B: news for {{firstName}}', body: '<p>Body B for {{firstName}}</p>' }],
  testPercent: 20, metric: 'opens', waitMinutes: 30,
}

test('the draw: exact group sizes, even variants, the same draw again for the same seed', () => {
  const ids = Array.from({ length: 1000 }, (_, i) => `c-${i}`)
  const draws = ids.map((id) => drawOf('seed', id))
  const state = { cuts: cutsOf(draws, { testPercent: 10, variants: [{ subject: 'a' }, { subject: 'b' }, { subject: 'c' }] }) }
  const sizes = [0, 0, 0]
  for (const d of draws) {
    const v = variantOf(state, d)
    if (v !== null) sizes[v]++
  }
  expect(sizes).toEqual([33, 33, 34])
  expect(ids.map((id) => drawOf('seed', id))).toEqual(draws)
  expect(ids.map((id) => drawOf('other', id))).not.toEqual(draws)
})

test('the winner: the rate by the metric, ties by the other metric then the first, and no engagement at all', () => {
  const c = (index: number, recipients: number, opened: number, clicked: number) => ({ index, recipients, opened, clicked })
  expect(chooseWinner([c(0, 10, 2, 0), c(1, 10, 5, 0)], 'opens', 2).winner).toBe(1)
  // Rates, not counts: 3 of 5 beats 4 of 10.
  expect(chooseWinner([c(0, 10, 4, 0), c(1, 5, 3, 0)], 'opens', 2).winner).toBe(1)
  expect(chooseWinner([c(0, 10, 4, 1), c(1, 10, 4, 3)], 'opens', 2).winner).toBe(1)
  expect(chooseWinner([c(0, 10, 4, 1), c(1, 10, 4, 1), c(2, 10, 1, 0)], 'opens', 3).winner).toBe(0)
  const none = chooseWinner([c(0, 10, 0, 0), c(1, 10, 0, 0)], 'clicks', 2)
  expect(none.winner).toBe(0)
  expect(none.reason).toContain('No clicks or opens')
})

forEachStore('campaign A/B tests', (env) => {
  let p: NewProject
  let other: NewProject
  let from: string
  const clock = env.clock

  beforeAll(async () => {
    clock.set(Date.parse('2030-03-01T09:00:00Z'))
    p = await env.project()
    other = await env.project()
    const domain = `ab${Math.random().toString(36).slice(2, 8)}.test`
    await addDomain(env, p.id, domain, true)
    from = `news@${domain}`
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await env.store.tx((db) => upsertMany(ctx, db, Array.from({ length: N }, (_, i) => ({ email: `ab${i}@dest.test`, subscribed: true, data: { firstName: `F${i}` } })), { defaultSubscribed: true }))
  }, 60_000)

  const create = (over: Record<string, unknown> = {}, key = p.secretKey) => env.request('POST', '/campaigns', { key, body: campaignBody({ from, abTest: AB, ...over }) })

  test('create and read back the test; bad values are 422 naming the field', async () => {
    const c = await create()
    expect(c.status).toBe(200)
    expect(c.body.data.abTest).toEqual(AB)
    expect(c.body.data.abTestStatus).toBeNull()
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ ...AB, variants: [AB.variants[0]] }, 'variants'],
      [{ ...AB, variants: [...AB.variants, ...AB.variants, AB.variants[0]] }, 'variants'],
      [{ ...AB, testPercent: 4 }, 'testPercent'],
      [{ ...AB, testPercent: 51 }, 'testPercent'],
      [{ ...AB, metric: 'revenue' }, 'metric'],
      [{ ...AB, waitMinutes: 9 }, 'waitMinutes'],
      [{ ...AB, waitMinutes: 1441 }, 'waitMinutes'],
      [{ ...AB, variants: [{ subject: '' }, { subject: 'b' }] }, 'subject'],
    ]
    for (const [abTest, field] of bad) {
      const r = await create({ abTest })
      if (r.status !== 422) throw new Error(`accepted: ${JSON.stringify(abTest)}`)
      expect(r.body.success).toBe(false)
      expect(r.body.error.code).toBe('VALIDATION_ERROR')
      expect(JSON.stringify(r.body.error.errors)).toContain(field)
    }
    // A variant that does not compile names the variant.
    const broken = await create({ abTest: { ...AB, variants: [AB.variants[0], { subject: 'B {{#if}}' }] } })
    expect(broken.status).toBe(422)
    expect(broken.body.error.errors[0].field).toBe('abTest.variants.1')
    // PUT replaces it (and drops it when absent).
    const id = c.body.data.id as string
    const put = await env.request('PUT', `/campaigns/${id}`, { key: p.secretKey, body: campaignBody({ from, abTest: { ...AB, testPercent: 50, metric: 'clicks' } }) })
    expect(put.status).toBe(200)
    expect(put.body.abTest.testPercent).toBe(50)
    const bare = await env.request('PUT', `/campaigns/${id}`, { key: p.secretKey, body: campaignBody({ from }) })
    expect(bare.body.abTest).toBeNull()
    const badPut = await env.request('PUT', `/campaigns/${id}`, { key: p.secretKey, body: campaignBody({ from, abTest: { ...AB, metric: 'x' } }) })
    expect(badPut.status).toBe(422)
  })

  test('security: no key, a public key, another project\'s campaign', async () => {
    const c = await create()
    const id = c.body.data.id as string
    expect((await env.request('POST', '/campaigns', { body: campaignBody({ from, abTest: AB }) })).status).toBe(401)
    expect((await env.request('POST', '/campaigns', { key: p.publicKey, body: campaignBody({ from, abTest: AB }) })).status).toBe(401)
    expect((await env.request('PUT', `/campaigns/${id}`, { key: other.secretKey, body: campaignBody({ from, abTest: AB }) })).status).toBe(404)
    expect((await env.request('GET', `/campaigns/${id}/stats`, { key: other.secretKey })).status).toBe(404)
  })

  /** Runs the campaign jobs due on the test clock; `crashAfter` makes the fan-out fail once after that many batches. */
  async function drain(crashAfter?: number) {
    let crashed = false
    const send = campaignSendJob({
      batchSize: 30,
      afterBatch: ({ index }) => {
        if (crashAfter !== undefined && !crashed && index === crashAfter) {
          crashed = true
          throw new Error('injected crash after a committed batch')
        }
      },
    })
    const worker = new Worker(env.deps, [send, abWinnerJob])
    await worker.drain()
    // A failed run is retried after its backoff: move the clock past it and run again.
    if (crashed) {
      clock.advance(120_000)
      await new Worker(env.deps, [campaignSendJob({ batchSize: 30 }), abWinnerJob]).drain()
    }
  }

  async function emailsOf(id: string) {
    const { emails, campaignRecipients: r } = env.store.t
    return env.store.db.select({ id: emails.id, to: emails.toAddress, subject: emails.subject, variant: r.variant })
      .from(emails).leftJoin(r, and(eq(r.campaignId, emails.campaignId), eq(r.contactId, emails.contactId))).where(eq(emails.campaignId, id))
  }

  test('test group, a crash in it, the wait, the winner by opens (crash between), then the rest: everyone once', async () => {
    const c = await create()
    const id = c.body.data.id as string
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: {} })).status).toBe(200)
    await drain(2)

    // The test group: 20% of 200, 20 per variant, each email with its variant's subject.
    const test1 = await emailsOf(id)
    expect(test1.length).toBe(40)
    expect(test1.filter((e) => e.variant === 0).length).toBe(20)
    expect(test1.filter((e) => e.variant === 1).length).toBe(20)
    for (const e of test1) expect(e.subject.startsWith(e.variant === 0 ? 'A: hello F' : 'B: news for F')).toBe(true)
    let got = (await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body
    expect(got.status).toBe('SENDING')
    expect(got.abTestStatus.phase).toBe('WAITING')
    expect(Date.parse(got.abTestStatus.decideAt)).toBe(clock.now() + 30 * 60_000)

    // Variant B's body is its own, A's the campaign's: both rendered at fan-out (a variant has a body).
    const loaded = await loadForDelivery(env.store, test1.map((e) => e.id))
    expect(loaded.every((e) => e.hasContent)).toBe(true)
    for (const e of loaded) {
      const v = test1.find((x) => x.id === e.id)?.variant
      expect(e.html ?? '').toContain(v === 1 ? 'Body B for F' : 'code')
    }

    // B is opened more.
    for (const e of test1.filter((x) => x.variant === 1).slice(0, 6)) await recordOpen(env.deps, e.id)
    for (const e of test1.filter((x) => x.variant === 0).slice(0, 2)) await recordOpen(env.deps, e.id)
    const stats = (await env.request('GET', `/campaigns/${id}/stats`, { key: p.secretKey })).body
    expect(stats.variants.map((v: { recipients: number; opened: number }) => [v.recipients, v.opened])).toEqual([[20, 2], [20, 6]])

    // Not yet: nothing more before the wait ends.
    await drain()
    expect((await emailsOf(id)).length).toBe(40)

    // The wait ends. The winner job runs twice (a crash after its commit retries it): one decision, one send.
    clock.advance(30 * 60_000)
    const { jobs } = env.store.t
    await new Worker(env.deps, [abWinnerJob]).drain()
    await env.store.tx((db) => db.update(jobs).set({ status: 'queued', runAt: clock.date() }).where(and(eq(jobs.name, AB_WINNER_JOB), eq(jobs.uniqueKey, id))))
    await drain(1)

    got = (await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body
    expect(got.status).toBe('SENT')
    expect(got.abTestStatus).toMatchObject({ phase: 'WINNER', winner: 1 })
    expect(got.abTestStatus.reason).toContain('Variant B')
    const all = await emailsOf(id)
    expect(all.length).toBe(N)
    expect(new Set(all.map((e) => e.to)).size).toBe(N)
    const rest = all.filter((e) => e.variant === null)
    expect(rest.length).toBe(N - 40)
    for (const e of rest) expect(e.subject.startsWith('B: news for F')).toBe(true)
    // The rest is rendered at delivery with the winner's body.
    const restLoaded = await loadForDelivery(env.store, rest.slice(0, 5).map((e) => e.id))
    expect(restLoaded.some((e) => e.hasContent)).toBe(false)
    await renderDeferred(env.deps, restLoaded)
    for (const e of restLoaded) expect(e.html ?? '').toContain('Body B for F')
    expect(got.totalRecipients).toBe(N)
    const final = (await env.request('GET', `/campaigns/${id}/stats`, { key: p.secretKey })).body
    expect(final.variants.map((v: { winner: boolean }) => v.winner)).toEqual([false, true])
  }, 120_000)

  test('no engagement: the first variant wins and goes to the rest', async () => {
    const c = await create({ abTest: { ...AB, testPercent: 10, waitMinutes: 10 } })
    const id = c.body.data.id as string
    await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: {} })
    await drain()
    expect((await emailsOf(id)).length).toBe(20)
    clock.advance(10 * 60_000)
    await drain()
    const got = (await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body
    expect(got.status).toBe('SENT')
    expect(got.abTestStatus.winner).toBe(0)
    const all = await emailsOf(id)
    expect(all.length).toBe(N)
    for (const e of all.filter((x) => x.variant === null)) expect(e.subject.startsWith('A: hello')).toBe(true)
  }, 120_000)

  test('a cancel during the wait: no winner is sent', async () => {
    const c = await create()
    const id = c.body.data.id as string
    await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: {} })
    await drain()
    expect((await env.request('POST', `/campaigns/${id}/cancel`, { key: p.secretKey })).status).toBe(200)
    clock.advance(30 * 60_000)
    await drain()
    expect((await emailsOf(id)).length).toBe(40)
    expect((await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body.status).toBe('CANCELLED')
  }, 60_000)
})
