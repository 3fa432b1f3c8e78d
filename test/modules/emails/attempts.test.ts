import { beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { byDomain, rejectRecipients, startSink, tempFailThenAccept } from '../../helpers/smtp'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'
import * as emailsRepo from '../../../src/modules/emails/repo'
import { Worker } from '../../../src/jobs/queue'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import type { NewProject } from '../../../src/modules/projects/service'
import { mxTo, pipelineFor, projectWithDomain, startTestDns, verifiedDomain } from './fixture'

/**
 * GET /emails/:id/attempts (every delivery attempt with its SMTP reply) and GET /emails/:id/headers (the
 * header section as the pipeline builds it), against a real SMTP sink on loopback.
 */

setDefaultTimeout(30_000)

const dns = await startTestDns()
const sink = await startSink({
  script: byDomain({
    'grey.test': tempFailThenAccept(1, '451 4.7.1 Greylisted, please try again in 1 seconds'),
    'reject.test': rejectRecipients('550 5.1.1 <user> No such user here'),
  }),
})
for (const d of ['dest.test', 'grey.test', 'reject.test']) mxTo(dns, d)
const rnd = () => Math.random().toString(36).slice(2, 8)

async function until(cond: () => Promise<boolean>, what: string, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

forEachStore('GET /emails/:id/attempts and /headers', (env) => {
  let p: NewProject & { from: string; domain: string }
  let other: NewProject & { from: string }
  const send = async (body: Record<string, unknown>, key = p.secretKey) => {
    const res = await env.request('POST', '/v1/send', { key, body: { from: p.from, subject: 'Hello', body: '<p>Hi</p>', ...body } })
    expect(res.status).toBe(200)
    return res.body.data.emails[0].email as string
  }
  const status = async (id: string) => (await env.request('GET', `/emails/${id}`, { key: p.secretKey })).body.status as string

  beforeAll(async () => {
    p = await projectWithDomain(env, dns, `att-${rnd()}.test`)
    other = await projectWithDomain(env, dns, `att-other-${rnd()}.test`)
  })

  test('451 then 250: two attempts, each with the server and its SMTP reply, oldest first', async () => {
    const id = await send({ to: `g.${rnd()}@grey.test` })
    const before = await env.request('GET', `/emails/${id}/attempts`, { key: p.secretKey })
    expect(before.status).toBe(200)
    expect(before.body).toEqual({ data: [], attempts: 0, complete: true })
    const pl = pipelineFor(env)
    pl.start()
    await until(async () => (await status(id)) === 'DELIVERED', 'the greylisted delivery')
    await pl.stop()
    const res = await env.request('GET', `/emails/${id}/attempts`, { key: p.secretKey })
    expect(res.status).toBe(200)
    expect(res.body.attempts).toBe(2)
    expect(res.body.complete).toBe(true)
    const [first, second] = res.body.data
    expect(first).toMatchObject({ attempt: 1, outcome: 'deferred', smtpCode: 451, enhancedCode: '4.7.1', host: `mx.grey.test[127.0.0.1]:${sink.port}` })
    expect(first.reply).toContain('Greylisted')
    expect(Date.parse(first.nextAttemptAt)).toBeGreaterThan(Date.parse(first.at))
    expect(second).toMatchObject({ attempt: 2, outcome: 'accepted', smtpCode: 250, host: `mx.grey.test[127.0.0.1]:${sink.port}`, nextAttemptAt: null })
    expect(second.reply).toMatch(/^250/)
    expect(Date.parse(second.at)).toBeGreaterThanOrEqual(Date.parse(first.at))
  })

  test('a 550 at RCPT: one attempt, bounced, with the reply', async () => {
    const id = await send({ to: `gone.${rnd()}@reject.test` })
    await pipelineFor(env).drain()
    const res = await env.request('GET', `/emails/${id}/attempts`, { key: p.secretKey })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ attempts: 1, complete: true })
    expect(res.body.data).toHaveLength(1)
    expect(res.body.data[0]).toMatchObject({ attempt: 1, outcome: 'bounced', smtpCode: 550, enhancedCode: '5.1.1' })
    expect(res.body.data[0].reply).toContain('No such user')
  })

  test('an attempt recorded before attempts were kept shows the record\'s last reply', async () => {
    const id = await send({ to: `old.${rnd()}@dest.test` })
    await env.store.tx((db) => emailsRepo.recordDeferral(env.store, db, id, 1, '421 4.4.2 Connection dropped', new Date()))
    const res = await env.request('GET', `/emails/${id}/attempts`, { key: p.secretKey })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ attempts: 1, complete: true })
    expect(res.body.data).toEqual([expect.objectContaining({ attempt: 1, outcome: 'deferred', reply: '421 4.4.2 Connection dropped', smtpCode: 421 })])
  })

  test('headers: the header section as built for delivery, with the custom headers, without a DKIM signature', async () => {
    const to = `h.${rnd()}@dest.test`
    const id = await send({ to: { name: 'Ada Lovelace', email: to }, subject: 'Your invoice', headers: { 'X-Order': 'A-17' }, reply: `support@${p.domain}` })
    const res = await env.request('GET', `/emails/${id}/headers`, { key: p.secretKey })
    expect(res.status).toBe(200)
    const record = (await env.request('GET', `/emails/${id}`, { key: p.secretKey })).body
    const field = (name: string) => (res.body.fields as Array<{ name: string; value: string }>).find((f) => f.name.toLowerCase() === name.toLowerCase())?.value
    expect(field('From')).toBe(p.from)
    expect(field('To')).toBe(`Ada Lovelace <${to}>`)
    expect(field('Subject')).toBe('Your invoice')
    expect(field('Message-ID')).toBe(record.messageId)
    expect(field('Reply-To')).toBe(`support@${p.domain}`)
    expect(field('X-Order')).toBe('A-17')
    expect(field('Feedback-ID')).toContain(p.id)
    expect(field('Content-Type')).toContain('multipart/alternative')
    expect(field('DKIM-Signature')).toBeUndefined()
    expect(res.body.raw).toContain('Subject: Your invoice\n')
    expect(res.body.note).toContain('DKIM-Signature')
    // What the sink received carries the same headers (and the signature).
    await pipelineFor(env).drain()
    const [got] = sink.byMessageId(record.messageId)
    const head = got.raw.toString('utf8').split('\r\n\r\n')[0]
    expect(head).toContain('X-Order: A-17')
    expect(head).toContain('Subject: Your invoice')
    expect(head).toContain('DKIM-Signature:')
  })

  test('headers of campaign mail (stored without content): rendered as at delivery, with the one-click unsubscribe headers', async () => {
    const q = await projectWithDomain(env, dns, `att-camp-${rnd()}.test`)
    const to = `reader.${rnd()}@dest.test`
    expect((await env.request('POST', '/contacts', { key: q.secretKey, body: { email: to, subscribed: true, data: { firstName: 'Ada' } } })).status).toBeLessThan(300)
    const c = await env.request('POST', '/campaigns', { key: q.secretKey, body: { name: 'News', subject: 'News for {{firstName}}', body: '<p>Hi {{firstName}}</p>', from: q.from, audienceType: 'ALL' } })
    expect(c.status).toBe(200)
    expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: q.secretKey, body: {} })).status).toBe(200)
    await new Worker(env.deps, [campaignSendJob({ batchSize: 10 })]).drain()
    const feed = await env.request('GET', `/activity?type=email&campaignId=${c.body.data.id}`, { key: q.secretKey })
    expect(feed.body.data).toHaveLength(1)
    const id = feed.body.data[0].id as string
    const res = await env.request('GET', `/emails/${id}/headers`, { key: q.secretKey })
    expect(res.status).toBe(200)
    const field = (name: string) => (res.body.fields as Array<{ name: string; value: string }>).find((f) => f.name.toLowerCase() === name.toLowerCase())?.value
    expect(field('Subject')).toBe('News for Ada')
    expect(field('List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click')
    expect(field('List-Unsubscribe')).toMatch(/^<http:\/\/localhost:3000\/unsubscribe\/[^>]+>, <mailto:/)
    expect(field('Feedback-ID')).toBe(`${c.body.data.id}:${q.id}:mailctl`)
    expect(field('Content-Type')).toContain('multipart/alternative')
    await pipelineFor(env).drain()
    const [got] = sink.byMessageId(field('Message-ID') ?? '')
    const head = got.raw.toString('utf8').split('\r\n\r\n')[0].replace(/\r\n[ \t]+/g, ' ')
    expect(head).toContain(`List-Unsubscribe: ${field('List-Unsubscribe')}`)
  })

  test('errors: an unknown id is 404 NOT_FOUND; a route that does not exist is 404', async () => {
    for (const path of ['attempts', 'headers']) {
      const res = await env.request('GET', `/emails/${Bun.randomUUIDv7()}/${path}`, { key: p.secretKey })
      expect(res.status).toBe(404)
      expect(res.body.success).toBe(false)
      expect(res.body.error.code).toBe('NOT_FOUND')
      const junk = await env.request('GET', `/emails/not-an-id/${path}`, { key: p.secretKey })
      expect(junk.status).toBe(404)
    }
  })

  test('security: no key and a public key are 401; another project\'s key is 404', async () => {
    const id = await send({ to: `s.${rnd()}@dest.test` })
    const mineOther = (await env.request('POST', '/v1/send', { key: other.secretKey, body: { from: other.from, to: `o.${rnd()}@dest.test`, subject: 's', body: 'b' } })).body.data.emails[0].email
    for (const path of ['attempts', 'headers']) {
      expect((await env.request('GET', `/emails/${id}/${path}`)).status).toBe(401)
      const pub = await env.request('GET', `/emails/${id}/${path}`, { key: p.publicKey })
      expect(pub.status).toBe(401)
      expect(pub.body.error.code).toBe('INVALID_API_KEY')
      expect((await env.request('GET', `/emails/${id}/${path}`, { key: other.secretKey })).status).toBe(404)
      expect((await env.request('GET', `/emails/${mineOther}/${path}`, { key: p.secretKey })).status).toBe(404)
    }
  })

  test('dashboard sessions: every role reads them; a user who is not a member gets 404', async () => {
    const owner: TestUser = await verifiedUser(env, 'owner')
    const project = await ownedProject(env, owner)
    const domain = `att-dash-${rnd()}.test`
    await verifiedDomain(env, dns, project.id, domain)
    const id = (await env.request('POST', '/v1/send', { key: project.secretKey, body: { from: `hi@${domain}`, to: `d.${rnd()}@dest.test`, subject: 's', body: 'b' } })).body.data.emails[0].email
    const admin = await memberOf(env, owner, project.id, 'ADMIN')
    const member = await memberOf(env, owner, project.id, 'MEMBER')
    const stranger = await verifiedUser(env, 'stranger')
    for (const path of ['attempts', 'headers']) {
      for (const u of [owner, admin, member]) {
        const res = await env.request('GET', `/emails/${id}/${path}`, { cookie: u.cookie, headers: { 'x-project-id': project.id } })
        expect({ path, status: res.status }).toEqual({ path, status: 200 })
      }
      expect((await env.request('GET', `/emails/${id}/${path}`, { cookie: stranger.cookie, headers: { 'x-project-id': project.id } })).status).toBe(404)
      expect((await env.request('GET', `/emails/${id}/${path}`, { cookie: owner.cookie })).status).toBe(401)
    }
  }, 60_000)
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
