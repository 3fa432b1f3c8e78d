import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { closeRenderPool } from '../../../src/mail/render'
import { Worker } from '../../../src/jobs/queue'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from './fixture'

/**
 * Issue 35 item 1 through the API: a hostile template or body is answered within its budget (a 422
 * naming the limit) at save, preview (POST /campaigns/:id/test) and send time, and a campaign recipient
 * whose data takes the render past a budget fails alone, with the reason. The per-test timeout is the
 * only clock: before the budgets these took from seconds to minutes, or answered 500.
 */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
const rnd = () => Math.random().toString(36).slice(2, 8)
const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
const EACH3 = '<p>{{#each @root.a}}{{#each @root.a}}{{#each @root.a}}x{{/each}}{{/each}}{{/each}}</p>'

afterAll(() => closeRenderPool())

forEachStore('hostile renders', (env) => {
  let p: Awaited<ReturnType<typeof projectWithDomain>>
  beforeAll(async () => {
    p = await projectWithDomain(env, dns, `hostile-${rnd()}.test`)
  })
  const send = (body: Record<string, unknown>) => env.request('POST', '/v1/send', { key: p.secretKey, body: { to: `h-${rnd()}@dest.test`, from: p.from, subject: 's', ...body } })
  const fieldCodes = (res: { body: { error?: { errors?: Array<{ field: string; code: string }> } } }) => (res.body.error?.errors ?? []).map((e) => `${e.field}:${e.code}`)

  describe('POST /v1/send', () => {
    test('three nested {{#each @root.a}} over 200 keys: 422 render_work_limit', async () => {
      const res = await send({ body: EACH3, data: { a: keys(200) } })
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe('VALIDATION_ERROR')
      expect(fieldCodes(res)).toEqual(['body:render_work_limit'])
      expect(res.body.error.message).toContain('200,000 steps')
      // The same template with small data is sent.
      expect((await send({ body: EACH3, data: { a: keys(2) } })).status).toBe(200)
    }, 10_000)

    test('Markdown "> " x 200,000: 422 render_depth_limit (was a 500: the parser overflowed its stack)', async () => {
      const res = await send({ body: '> '.repeat(200_000), type: 'markdown' })
      expect(res.status).toBe(422)
      expect(fieldCodes(res)).toEqual(['body:render_depth_limit'])
    }, 10_000)

    test('Markdown "_a" x 300,000: 422 render_time_limit once its deadline passes (was about 270 s)', async () => {
      const res = await send({ body: '_a'.repeat(300_000), type: 'markdown' })
      expect(res.status).toBe(422)
      expect(fieldCodes(res)).toEqual(['body:render_time_limit'])
      expect(res.body.error.message).toContain('2,000 ms')
      // The deadline counts the render thread's CPU time, at most 20 s of wall-clock time on a busy machine.
    }, 30_000)

    test('a body of "<a " x 300,000 and one of unclosed <a href=" x 100,000 are sent', async () => {
      expect((await send({ body: '<a '.repeat(300_000) })).status).toBe(200)
      expect((await send({ body: `<p>x</p>${'<a href="'.repeat(100_000)}` })).status).toBe(200)
    }, 15_000)
  })

  describe('templates: save and send', () => {
    test('a subject with {{#each}} is refused at save (422 invalid_template); a hostile body saved is refused at send with its data', async () => {
      const bad = await env.request('POST', '/templates', { key: p.secretKey, body: { name: 'loop', subject: '{{#each a}}x{{/each}}', body: '<p>b</p>', from: p.from } })
      expect(bad.status).toBe(422)
      expect(fieldCodes(bad)).toEqual(['subject:invalid_template'])
      const tpl = await env.request('POST', '/templates', { key: p.secretKey, body: { name: 'each', subject: 'Hi', body: EACH3, from: p.from, type: 'TRANSACTIONAL' } })
      expect(tpl.status).toBe(201)
      const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: `t-${rnd()}@dest.test`, template: tpl.body.id, data: { a: keys(200) } } })
      expect(res.status).toBe(422)
      expect(fieldCodes(res)).toEqual(['body:render_work_limit'])
    }, 10_000)
  })

  describe('campaigns: preview and recipients', () => {
    test('POST /campaigns/:id/test to a contact whose data takes the body past its budget: 422 render_work_limit', async () => {
      const email = `prev-${rnd()}@dest.test`
      expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email, data: { a: keys(200) } } })).status).toBeLessThan(300)
      const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: { name: 'Hostile', subject: 'Hi', body: EACH3, from: p.from, audienceType: 'ALL' } })
      expect(c.status).toBe(200)
      const res = await env.request('POST', `/campaigns/${c.body.data.id}/test`, { key: p.secretKey, body: { email } })
      expect(res.status).toBe(422)
      expect(fieldCodes(res)).toEqual(['body:render_work_limit'])
    }, 10_000)

    test('a recipient whose data takes the body or the subject past a budget fails with the reason; the others are delivered', async () => {
      const q = await projectWithDomain(env, dns, `camp-${rnd()}.test`)
      const tag = rnd()
      const people = [
        { email: `${tag}-ok@dest.test`, data: { a: keys(2), name: 'ok' } },
        { email: `${tag}-work@dest.test`, data: { a: keys(200), name: 'work' } },
        { email: `${tag}-subject@dest.test`, data: { a: keys(1), name: 'n'.repeat(9_000) } },
      ]
      for (const x of people) {
        expect((await env.request('POST', '/contacts', { key: q.secretKey, body: { email: x.email, subscribed: true, data: x.data } })).status).toBeLessThan(300)
      }
      const c = await env.request('POST', '/campaigns', { key: q.secretKey, body: { name: 'H', subject: 'Hi {{name}} {{name}}', body: EACH3, from: q.from, audienceType: 'ALL', type: 'TRANSACTIONAL' } })
      expect(c.status).toBe(200)
      expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: q.secretKey, body: {} })).status).toBe(200)
      await new Worker(env.deps, [campaignSendJob({ batchSize: 10 })]).drain()
      await pipelineFor(env).drain()
      const { emails } = env.store.t
      const rows = await env.store.db.select({ id: emails.id, to: emails.toAddress }).from(emails).where(eq(emails.projectId, q.id))
      const byTo = new Map(rows.map((r) => [r.to, r.id]))
      const reason = async (to: string) => (await env.request('GET', `/emails/${byTo.get(to)}`, { key: q.secretKey })).body
      expect((await reason(`${tag}-ok@dest.test`)).status).toBe('DELIVERED')
      const work = await reason(`${tag}-work@dest.test`)
      expect(work.status).toBe('FAILED')
      expect(work.lastReply).toContain('200,000 steps')
      const subject = await reason(`${tag}-subject@dest.test`)
      expect(subject.status).toBe('FAILED')
      expect(subject.lastReply).toContain('subject: the rendered result is longer than 16,384 characters')
      expect(sink.received.filter((m) => m.to.some((t) => t.startsWith(`${tag}-`))).flatMap((m) => m.to)).toEqual([`${tag}-ok@dest.test`])
    }, 20_000)
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
