import { expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { ctxFor } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { addSuppression } from '../../../src/modules/suppressions/service'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../emails/fixture'

/** A FILTERED campaign delivered through the real pipeline (direct MX delivery) to a loopback SMTP sink. */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
const rnd = () => Math.random().toString(36).slice(2, 8)

forEachStore('campaign delivery', (env) => {
  test('each matching subscribed, unsuppressed contact receives one message with its own variables and the one-click headers', async () => {
    const tag = rnd()
    const p = await projectWithDomain(env, dns, `camp-${tag}.test`)
    const people = [
      { local: `${tag}-a`, plan: 'pro', subscribed: true },
      { local: `${tag}-b`, plan: 'pro', subscribed: true },
      { local: `${tag}-c`, plan: 'pro', subscribed: true },
      { local: `${tag}-unsub`, plan: 'pro', subscribed: false },
      { local: `${tag}-supp`, plan: 'pro', subscribed: true },
      { local: `${tag}-basic`, plan: 'basic', subscribed: true },
    ]
    for (const x of people) {
      const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `${x.local}@dest.test`, subscribed: x.subscribed, data: { plan: x.plan, firstName: x.local } } })
      expect(r.status).toBeLessThan(300)
    }
    await addSuppression(ctxFor(env.deps, p.id, { kind: 'cli' }), { email: `${tag}-supp@dest.test` })
    const c = await env.request('POST', '/campaigns', {
      key: p.secretKey,
      body: {
        name: 'Launch', subject: 'Hi {{firstName}}', body: '<p>Dear {{firstName}}, <a href="{{unsubscribeUrl}}">unsubscribe</a></p>', from: p.from,
        audienceType: 'FILTERED', audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
      },
    })
    expect(c.status).toBe(200)
    expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: p.secretKey, body: {} })).status).toBe(200)
    await new Worker(env.deps, [campaignSendJob({ batchSize: 2 })]).drain()
    await pipelineFor(env).drain()

    const expected = [`${tag}-a@dest.test`, `${tag}-b@dest.test`, `${tag}-c@dest.test`]
    const mine = sink.received.filter((m) => m.to.some((t) => t.startsWith(`${tag}-`)))
    expect(mine.flatMap((m) => m.to).sort()).toEqual(expected)
    for (const m of mine) {
      const raw = m.raw.toString('utf8')
      const local = m.to[0].split('@')[0]
      expect(raw).toMatch(new RegExp(`^Subject: Hi ${local}\\r?$`, 'm'))
      expect(raw).toContain(`Dear ${local}`)
      // The body places {{unsubscribeUrl}} itself: no footer is added.
      expect(raw).not.toContain('You receive this email')
      // The one-click https link, then the mailto (counters.test.ts follows both).
      expect(raw).toMatch(/^List-Unsubscribe:\s+<http:\/\/localhost:3000\/unsubscribe\/[^>]+>,\s+<mailto:u\+[^>]+\?subject=unsubscribe>/m)
      expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m)
    }
    const stats = await env.request('GET', `/campaigns/${c.body.data.id}/stats`, { key: p.secretKey })
    // The direct transport records DELIVERED when the recipient's MX accepts the message.
    expect(stats.body).toMatchObject({ status: 'SENT', totalRecipients: 5, queued: 3, pending: 0, sent: 3, delivered: 3, bounced: 0, failed: 0, skippedUnsubscribed: 1, skippedSuppressed: 1 })
    const camp = await env.request('GET', `/campaigns/${c.body.data.id}`, { key: p.secretKey })
    expect(camp.body).toMatchObject({ status: 'SENT', totalRecipients: 5, sentCount: 3, deliveredCount: 3, openedCount: 0, clickedCount: 0, bouncedCount: 0 })
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
