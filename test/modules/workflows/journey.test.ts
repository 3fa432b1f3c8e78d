import { beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { ctxFor } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import { settleEvents } from '../../helpers/events'
import { addSuppression } from '../../../src/modules/suppressions/service'
import { workflowJobs } from '../../../src/modules/workflows/jobs'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../emails/fixture'
import { wfClient } from './fixture'

/**
 * The welcome journey of issue 12 on the test clock, delivered through the real pipeline to a loopback SMTP
 * sink: track signup -> SEND_EMAIL welcome -> DELAY 2 days -> WAIT_FOR_EVENT purchase (timeout 3 days);
 * purchase -> EXIT; timeout -> CONDITION data.plan equals pro -> SEND_EMAIL reminder (MARKETING) or EXIT.
 * Five days pass in a few seconds: the engine and the job worker read the same moved clock.
 */
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'journey.test')
const DAY = 86_400_000

forEachStore('workflow welcome journey', (env) => {
  const clock = env.clock
  beforeAll(() => clock.set(Date.now()))

  test('every branch: purchase exits, pro gets the reminder, basic exits; suppressed and repeated signups send nothing more', async () => {
    const tag = Math.random().toString(36).slice(2, 8)
    const p = await projectWithDomain(env, dns, `wj-${tag}.test`)
    const c = wfClient(env, p.secretKey)
    const tpl = async (name: string, type: string, subject: string, body: string) =>
      (await c.call('POST', '/templates', { name, subject, body, from: p.from, type }, 201)).id as string
    const welcome = await tpl('Welcome', 'TRANSACTIONAL', 'Welcome {{firstName}}', '<p>Hello {{firstName}}, plan {{plan}}</p>')
    const reminder = await tpl('Reminder', 'MARKETING', 'Still thinking, {{firstName}}?', '<p>Pro offer for {{firstName}}</p>')

    const wf = await c.create({ name: 'Welcome journey', eventName: 'signup' })
    const trigger = wf.steps[0].id
    const send1 = await c.step(wf.id, 'SEND_EMAIL', { templateId: welcome }, 'Welcome mail')
    const delay = await c.step(wf.id, 'DELAY', { amount: 2, unit: 'days' }, 'Two days')
    const wait = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'purchase', timeout: 3 * 86_400 }, 'Purchase?')
    const bought = await c.step(wf.id, 'EXIT', { reason: 'purchased' }, 'Bought')
    const cond = await c.step(wf.id, 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' }, 'Pro?')
    const send2 = await c.step(wf.id, 'SEND_EMAIL', { templateId: reminder }, 'Reminder')
    const basic = await c.step(wf.id, 'EXIT', { reason: 'not pro' }, 'Basic')
    await c.link(wf.id, trigger, send1.id)
    await c.link(wf.id, send1.id, delay.id)
    await c.link(wf.id, delay.id, wait.id)
    await c.link(wf.id, wait.id, bought.id, 'event')
    await c.link(wf.id, wait.id, cond.id, 'timeout')
    await c.link(wf.id, cond.id, send2.id, 'yes')
    await c.link(wf.id, cond.id, basic.id, 'no')
    await c.enable(wf.id)

    const who = { alice: 'pro', bob: 'pro', carol: 'basic', erin: 'pro' } as const
    const addr = (n: string) => `${tag}-${n}@journey.test`
    await addSuppression(ctxFor(env.deps, p.id, { kind: 'cli' }), { email: addr('erin') })
    for (const [n, plan] of Object.entries(who)) {
      const r = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: addr(n), event: 'signup', data: { plan, firstName: n } } })
      expect(r.status).toBe(200)
    }
    // A second signup of alice: allowReentry is false, so it starts nothing.
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: addr('alice'), event: 'signup' } })).status).toBe(200)
    await settleEvents()

    const worker = new Worker(env.deps, workflowJobs)
    // The recurring wake job (DELAYs due, WAIT_FOR_EVENT timeouts), as `serve` queues it at start.
    await worker.ensureRecurring()
    const pipeline = pipelineFor(env)
    const mine = () => sink.received.filter((m) => m.to[0]?.startsWith(`${tag}-`))
    const executions = async () => {
      const list = await c.call('GET', `/workflows/${wf.id}/executions?limit=100`)
      const byEmail = new Map<string, { id: string; status: string; exitReason: string | null }>()
      for (const e of list.data) {
        const contact = await c.call('GET', `/contacts/${e.contactId}`)
        byEmail.set(contact.email.split('@')[0].slice(tag.length + 1), e)
      }
      return byEmail
    }

    // Day 0: the welcome mail (not to the suppressed address), then everyone waits two days.
    await worker.drain()
    await pipeline.drain()
    expect(mine().map((m) => m.to[0]).sort()).toEqual([addr('alice'), addr('bob'), addr('carol')])
    let ex = await executions()
    expect(ex.size).toBe(4)
    for (const e of ex.values()) expect(e.status).toBe('WAITING')
    const erin = await c.call('GET', `/workflows/${wf.id}/executions/${ex.get('erin')?.id}`)
    expect(erin.steps.map((s: { stepType: string; status: string }) => `${s.stepType}:${s.status}`)).toEqual(['TRIGGER:COMPLETED', 'SEND_EMAIL:SKIPPED', 'DELAY:SCHEDULED'])
    expect(erin.steps[1].output).toMatchObject({ skipped: 'suppressed' })

    // One day later nothing is due.
    clock.advance(DAY)
    await worker.drain()
    for (const e of (await executions()).values()) expect(e.status).toBe('WAITING')
    expect((await c.call('GET', `/workflows/${wf.id}/executions/${ex.get('bob')?.id}`)).steps.map((s: { status: string }) => s.status)).toEqual(['COMPLETED', 'COMPLETED', 'SCHEDULED'])
    // Two days and a second: the DELAY ends, the WAIT_FOR_EVENT begins.
    clock.advance(DAY + 1000)
    await worker.drain()
    ex = await executions()
    for (const e of ex.values()) expect(e.status).toBe('WAITING')
    const aliceWaiting = await c.call('GET', `/workflows/${wf.id}/executions/${ex.get('alice')?.id}`)
    expect(aliceWaiting.waitingFor).toMatchObject({ eventName: 'purchase' })
    expect(aliceWaiting.steps[2]).toMatchObject({ stepType: 'DELAY', status: 'COMPLETED' })
    expect(aliceWaiting.steps[2].output.lateMs).toBeGreaterThanOrEqual(0)

    // Alice buys (and an unrelated contact's purchase resumes nobody else).
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: addr('alice'), event: 'purchase', data: { amount: 42 } } })).status).toBe(200)
    await settleEvents()
    await worker.drain()
    ex = await executions()
    expect(ex.get('alice')).toMatchObject({ status: 'EXITED', exitReason: 'purchased' })
    expect(ex.get('bob')?.status).toBe('WAITING')

    // Three more days: the others time out; pro gets the reminder, basic exits.
    clock.advance(3 * DAY + 1000)
    await worker.drain()
    await pipeline.drain()
    ex = await executions()
    expect(ex.get('bob')?.status).toBe('COMPLETED')
    expect(ex.get('carol')).toMatchObject({ status: 'EXITED', exitReason: 'not pro' })
    expect(ex.get('erin')?.status).toBe('COMPLETED')
    const got = mine()
    expect(got.map((m) => m.to[0]).sort()).toEqual([addr('alice'), addr('bob'), addr('bob'), addr('carol')])
    const reminders = got.filter((m) => m.raw.toString('utf8').includes('Still thinking'))
    expect(reminders.map((m) => m.to[0])).toEqual([addr('bob')])
    const raw = reminders[0].raw.toString('utf8')
    expect(raw).toMatch(/^List-Unsubscribe:\s+<http:\/\/localhost:3000\/unsubscribe\/[^>]+>/m)
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m)
    expect(raw).toContain('Pro offer for bob')
    const welcomeRaw = got.find((m) => m.to[0] === addr('carol'))?.raw.toString('utf8') ?? ''
    expect(welcomeRaw).toContain('Hello carol, plan basic')
    expect(welcomeRaw).not.toMatch(/^List-Unsubscribe:/m)

    const bob = await c.call('GET', `/workflows/${wf.id}/executions/${ex.get('bob')?.id}`)
    expect(bob.steps.map((s: { stepType: string; status: string }) => `${s.stepType}:${s.status}`)).toEqual([
      'TRIGGER:COMPLETED', 'SEND_EMAIL:COMPLETED', 'DELAY:COMPLETED', 'WAIT_FOR_EVENT:COMPLETED', 'CONDITION:COMPLETED', 'SEND_EMAIL:COMPLETED',
    ])
    expect(bob.steps[3].output).toMatchObject({ timedOut: true })
    expect(bob.steps[4].output).toEqual({ result: true })
    for (const s of bob.steps) expect(s.finishedAt).not.toBeNull()
    // Nothing is left to run, and a later purchase resumes nothing.
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: addr('bob'), event: 'purchase' } })).status).toBe(200)
    await settleEvents()
    clock.advance(10 * DAY)
    await worker.drain()
    await pipeline.drain()
    expect(mine()).toHaveLength(4)
    expect([...(await executions()).values()].map((e) => e.status).sort()).toEqual(['COMPLETED', 'COMPLETED', 'EXITED', 'EXITED'])
  }, 60_000)
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
