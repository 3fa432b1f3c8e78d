import { beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { byDomain, startSink } from '../../helpers/smtp'
import { claimDue } from '../../../src/mail/outbound/queue-repo'
import type { NewProject } from '../../../src/modules/projects/service'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from './fixture'

/**
 * GET /emails/:id says where an email is in delivery (issue 40, item 8): a deferred email keeps the
 * contract's status SENDING, and `deliveryState` WAITING_RETRY with `nextAttemptAt` says it waits and
 * until when; QUEUED before the first attempt, SENDING while claimed, DONE once the outcome is recorded.
 * Against a real SMTP sink on loopback that defers one domain for 300 s and accepts the others.
 */

setDefaultTimeout(30_000)

const dns = await startTestDns()
const sink = await startSink({ script: byDomain({ 'later.test': (c) => (c.stage === 'data' ? '451 4.7.1 Try again in 300 seconds' : null) }) })
for (const d of ['later.test', 'now.test']) mxTo(dns, d)
const rnd = () => Math.random().toString(36).slice(2, 8)

forEachStore('GET /emails/:id delivery state', (env) => {
  let p: NewProject & { from: string }
  let other: NewProject
  const send = async (to: string) => {
    const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { from: p.from, to, subject: 'Hi', body: '<p>Hi</p>' } })
    expect(res.status).toBe(200)
    return res.body.data.emails[0].email as string
  }
  const get = async (id: string) => {
    const res = await env.request('GET', `/emails/${id}`, { key: p.secretKey })
    expect(res.status).toBe(200)
    return res.body
  }

  beforeAll(async () => {
    p = await projectWithDomain(env, dns, `ds-${rnd()}.test`)
    other = await env.project()
  })

  test('queued, then deferred: status stays SENDING, deliveryState WAITING_RETRY until nextAttemptAt; claimed: SENDING', async () => {
    const id = await send(`w.${rnd()}@later.test`)
    expect(await get(id)).toMatchObject({ status: 'PENDING', deliveryState: 'QUEUED', nextAttemptAt: null })
    await pipelineFor(env).drain()
    const { outboundQueue: q } = env.store.t
    const [row] = await env.store.db.select().from(q).where(eq(q.emailId, id))
    const waiting = await get(id)
    expect(waiting).toMatchObject({ status: 'SENDING', attempts: 1, deliveryState: 'WAITING_RETRY', nextAttemptAt: row.runAt.toISOString() })
    expect(waiting.lastReply).toContain('Try again in 300 seconds')
    expect(Date.parse(waiting.nextAttemptAt)).toBeGreaterThan(Date.now())
    // Claimed by a worker (the retry is due): an attempt is under way.
    const claimed = await claimDue(env.store, 'some-node:worker', 100, 60_000, new Date(row.runAt.getTime() + 1))
    expect(claimed.map((r) => r.emailId)).toContain(id)
    expect(await get(id)).toMatchObject({ status: 'SENDING', deliveryState: 'SENDING', nextAttemptAt: null })
  })

  test('delivered: DONE, no next attempt; another project\'s email is 404', async () => {
    const id = await send(`d.${rnd()}@now.test`)
    await pipelineFor(env).drain()
    expect(await get(id)).toMatchObject({ status: 'DELIVERED', deliveryState: 'DONE', nextAttemptAt: null })
    const res = await env.request('GET', `/emails/${id}`, { key: other.secretKey })
    expect(res.status).toBe(404)
    expect(res.body.error.code).toBe('NOT_FOUND')
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
