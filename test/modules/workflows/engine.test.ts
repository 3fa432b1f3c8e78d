import { beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import { settleEvents } from '../../helpers/events'
import type { EventRow } from '../../../src/modules/events/stream'
import { workflowTriggerConsumer, workflowWaitConsumer } from '../../../src/modules/workflows/consumer'
import { workflowJobs } from '../../../src/modules/workflows/jobs'
import { compareContext } from '../../../src/modules/workflows/steps/condition'
import { workflowProject, wfClient, type WfProject } from './fixture'

/**
 * The engine without mail delivery: triggers (idempotent per event id), allowReentry, waits, CONDITION on the
 * execution context, WEBHOOK to a loopback receiver, UPDATE_CONTACT emitting its event, failures and cancels.
 */
forEachStore('workflow engine', (env) => {
  const clock = env.clock
  let p: WfProject
  let worker: Worker
  const hits: Array<{ method: string; path: string; body: string; headers: Record<string, string> }> = []
  let receiver: ReturnType<typeof Bun.serve>
  beforeAll(async () => {
    clock.set(Date.now())
    p = await workflowProject(env)
    worker = new Worker(env.deps, workflowJobs)
    await worker.ensureRecurring()
    receiver = Bun.serve({
      hostname: '127.0.0.1', port: 0,
      async fetch(req) {
        const url = new URL(req.url)
        const headers: Record<string, string> = {}
        req.headers.forEach((v, k) => { headers[k] = v })
        hits.push({ method: req.method, path: url.pathname, body: await req.text(), headers })
        if (url.pathname === '/fail') return new Response('nope', { status: 503 })
        if (url.pathname === '/redirect') return new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/' } })
        if (url.pathname === '/big') return new Response('x'.repeat(200_000))
        return Response.json({ ok: true })
      },
    })
    env.onStop(() => receiver.stop(true))
    // The allow-listed loopback receiver (MAILCTL_WEBHOOK_ALLOW_HOSTS): the only host these tests call.
    env.deps.config.webhookAllowHosts = ['127.0.0.1']
  })

  const contact = async (email: string, data: Record<string, unknown> = {}) => {
    const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email, data } })
    expect(r.status).toBeLessThan(300)
    return r.body.id as string
  }
  const execsOf = async (wf: string) => (await env.request('GET', `/workflows/${wf}/executions?limit=100`, { key: p.secretKey })).body.data as Array<{ id: string; status: string; error: string | null; contactId: string }>
  const detail = async (wf: string, id: string) => (await env.request('GET', `/workflows/${wf}/executions/${id}`, { key: p.secretKey })).body

  test('the same event record never starts two executions of a workflow: repeated and concurrent deliveries', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Idem', eventName: 'idem', allowReentry: true })
    const d = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'hours' })
    await c.link(wf.id, wf.steps[0].id, d.id)
    await c.enable(wf.id)
    const cid = await contact('idem@x.test')
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const ev = (id: string): EventRow => ({ id, projectId: p.id, contactId: cid, name: 'idem', data: {}, emailId: null, createdAt: new Date() })
    const e1 = ev(Bun.randomUUIDv7())
    await Promise.all([workflowTriggerConsumer.handle(ctx, [e1]), workflowTriggerConsumer.handle(ctx, [e1]), workflowTriggerConsumer.handle(ctx, [e1])])
    await workflowTriggerConsumer.handle(ctx, [e1])
    expect(await execsOf(wf.id)).toHaveLength(1)
    await worker.drain()
    // allowReentry: a second event does not start another while the first is active...
    await workflowTriggerConsumer.handle(ctx, [ev(Bun.randomUUIDv7())])
    expect(await execsOf(wf.id)).toHaveLength(1)
    // ...but does once it has ended; and the first event, delivered again, still starts nothing.
    clock.advance(2 * 3_600_000)
    await worker.drain()
    expect((await execsOf(wf.id))[0].status).toBe('COMPLETED')
    await workflowTriggerConsumer.handle(ctx, [e1])
    expect(await execsOf(wf.id)).toHaveLength(1)
    await workflowTriggerConsumer.handle(ctx, [ev(Bun.randomUUIDv7())])
    expect(await execsOf(wf.id)).toHaveLength(2)
    // A disabled workflow starts nothing.
    await c.call('PATCH', `/workflows/${wf.id}`, { enabled: false })
    await workflowTriggerConsumer.handle(ctx, [ev(Bun.randomUUIDv7())])
    expect(await execsOf(wf.id)).toHaveLength(2)
    await c.call('POST', `/workflows/${wf.id}/executions/cancel-all`)
  })

  test('a wait is resumed once by its event; an event older than the wait, or a repeated one, resumes nothing', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Waits', eventName: 'w-start' })
    const w = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'w-go' })
    const d = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'days' })
    await c.link(wf.id, wf.steps[0].id, w.id)
    await c.link(wf.id, w.id, d.id, 'event')
    await c.enable(wf.id)
    const cid = await contact('wait@x.test')
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const old: EventRow = { id: Bun.randomUUIDv7(), projectId: p.id, contactId: cid, name: 'w-go', data: {}, emailId: null, createdAt: new Date(Date.now() - 60_000) }
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'wait@x.test', event: 'w-start' } })).status).toBe(200)
    await settleEvents()
    await worker.drain()
    const [e] = await execsOf(wf.id)
    expect(e.status).toBe('WAITING')
    await workflowWaitConsumer.handle(ctx, [old])
    expect((await execsOf(wf.id))[0].status).toBe('WAITING')
    await Bun.sleep(2)
    const go: EventRow = { ...old, id: Bun.randomUUIDv7(), createdAt: new Date() }
    await Promise.all([workflowWaitConsumer.handle(ctx, [go]), workflowWaitConsumer.handle(ctx, [go])])
    await worker.drain()
    const after = await detail(wf.id, e.id)
    expect(after.status).toBe('WAITING')
    expect(after.steps.map((s: { stepType: string; status: string }) => `${s.stepType}:${s.status}`)).toEqual(['TRIGGER:COMPLETED', 'WAIT_FOR_EVENT:COMPLETED', 'DELAY:SCHEDULED'])
    expect(after.steps[1].output).toMatchObject({ eventId: go.id })
    await workflowWaitConsumer.handle(ctx, [go])
    expect((await detail(wf.id, e.id)).steps).toHaveLength(3)
    await c.call('POST', `/workflows/${wf.id}/executions/cancel-all`)
  })

  test('WEBHOOK to an allowed loopback receiver keeps request and response; a failing one marks the execution FAILED with the reason while others go on', async () => {
    const c = wfClient(env, p.secretKey)
    const mk = async (name: string, path: string) => {
      const wf = await c.create({ name, eventName: `hook-${name}` })
      const h = await c.step(wf.id, 'WEBHOOK', { url: `http://127.0.0.1:${receiver.port}${path}`, headers: { 'X-Token': 'abc' } }, 'Notify')
      const u = await c.step(wf.id, 'UPDATE_CONTACT', { data: { notified: true } })
      await c.link(wf.id, wf.steps[0].id, h.id)
      await c.link(wf.id, h.id, u.id)
      return c.enable(wf.id)
    }
    const ok = await mk('ok', '/ok')
    const bad = await mk('bad', '/fail')
    const redirect = await mk('redirect', '/redirect')
    const big = await mk('big', '/big')
    await contact('hook@x.test', { plan: 'pro' })
    for (const wf of [ok, bad, redirect, big]) await c.call('POST', `/workflows/${wf.id}/executions`, { email: 'hook@x.test', context: { order: 7 } })
    await worker.drain()
    const [eOk] = await execsOf(ok.id)
    expect(eOk.status).toBe('COMPLETED')
    const dOk = await detail(ok.id, eOk.id)
    expect(dOk.steps[1]).toMatchObject({ stepType: 'WEBHOOK', status: 'COMPLETED', output: { request: { method: 'POST' }, response: { status: 200, body: '{"ok":true}' } } })
    const hit = hits.find((h) => h.path === '/ok')
    expect(hit?.headers['x-token']).toBe('abc')
    expect(JSON.parse(hit?.body ?? '{}')).toMatchObject({ workflowId: ok.id, executionId: eOk.id, contact: { email: 'hook@x.test', data: { plan: 'pro' } }, context: { order: 7 } })
    expect((await c.call('GET', `/contacts/${eOk.contactId}`)).data).toMatchObject({ notified: true })

    const [eBad] = await execsOf(bad.id)
    expect(eBad.status).toBe('FAILED')
    expect(eBad.error).toContain('step "Notify" (WEBHOOK)')
    expect(eBad.error).toContain('answered 503')
    const dBad = await detail(bad.id, eBad.id)
    expect(dBad.steps[1]).toMatchObject({ status: 'FAILED', output: { response: { status: 503, body: 'nope' } } })
    expect(dBad.steps).toHaveLength(2)
    // A redirect to another host is not followed (the receiver never sees a second request from it).
    const [eRed] = await execsOf(redirect.id)
    expect(eRed.status).toBe('FAILED')
    expect(eRed.error).toContain('redirect from 127.0.0.1')
    expect(hits.filter((h) => h.path === '/redirect')).toHaveLength(1)
    // The response kept is capped.
    const dBig = await detail(big.id, (await execsOf(big.id))[0].id)
    expect(dBig.steps[1].output.response.truncated).toBe(true)
    expect(dBig.steps[1].output.response.body.length).toBe(64 * 1024)
  })

  test('a WEBHOOK step to a loopback host that is not allowed fails with the guard refusal, and nothing is called', async () => {
    env.deps.config.webhookAllowHosts = []
    try {
      const c = wfClient(env, p.secretKey)
      const wf = await c.create({ name: 'guarded', eventName: 'hook-guarded' })
      const h = await c.step(wf.id, 'WEBHOOK', { url: `http://127.0.0.1:${receiver.port}/guarded` }, 'Guarded')
      await c.link(wf.id, wf.steps[0].id, h.id)
      await c.enable(wf.id)
      await contact('guarded@x.test')
      await c.call('POST', `/workflows/${wf.id}/executions`, { email: 'guarded@x.test' })
      await worker.drain()
      const [e] = await execsOf(wf.id)
      expect(e.status).toBe('FAILED')
      expect(e.error).toContain('step "Guarded" (WEBHOOK)')
      expect(hits.filter((x) => x.path === '/guarded')).toHaveLength(0)
    } finally {
      env.deps.config.webhookAllowHosts = ['127.0.0.1']
    }
  })

  test('CONDITION on the execution context; UPDATE_CONTACT unsubscribing emits contact.unsubscribed, which triggers another workflow', async () => {
    const c = wfClient(env, p.secretKey)
    const goodbye = await c.create({ name: 'Goodbye', eventName: 'contact.unsubscribed' })
    const bye = await c.step(goodbye.id, 'EXIT', { reason: 'said goodbye' })
    await c.link(goodbye.id, goodbye.steps[0].id, bye.id)
    await c.enable(goodbye.id)

    const wf = await c.create({ name: 'Ctx', eventName: 'ctx-start' })
    const cond = await c.step(wf.id, 'CONDITION', { field: 'context.event.data.amount', operator: 'greaterThan', value: 100 })
    const unsub = await c.step(wf.id, 'UPDATE_CONTACT', { subscribed: false, data: { big: true } })
    const small = await c.step(wf.id, 'EXIT', { reason: 'small' })
    await c.link(wf.id, wf.steps[0].id, cond.id)
    await c.link(wf.id, cond.id, unsub.id, 'yes')
    await c.link(wf.id, cond.id, small.id, 'no')
    await c.enable(wf.id)
    for (const [email, amount] of [['big@x.test', 500], ['small@x.test', 5]] as const) {
      expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email, event: 'ctx-start', data: { amount: { value: amount, persistent: false } } } })).status).toBe(200)
    }
    await settleEvents()
    await worker.drain()
    await settleEvents()
    await worker.drain()
    const execs = await execsOf(wf.id)
    const byStatus = execs.map((e) => e.status).sort()
    expect(byStatus).toEqual(['COMPLETED', 'EXITED'])
    const bigExec = execs.find((e) => e.status === 'COMPLETED')
    const bigContact = await c.call('GET', `/contacts/${bigExec?.contactId}`)
    expect(bigContact).toMatchObject({ email: 'big@x.test', subscribed: false, data: { big: true } })
    const byes = await execsOf(goodbye.id)
    expect(byes.map((e) => [e.contactId, e.status])).toEqual([[bigContact.id, 'EXITED']])
    const { events } = env.store.t
    const unsubEvents = await env.store.db.select().from(events).where(and(eq(events.projectId, p.id), eq(events.name, 'contact.unsubscribed')))
    expect(unsubEvents.map((e) => e.contactId)).toEqual([bigContact.id])
    expect(compareContext('5', 'lessThan', 10)).toBe(true)
    expect(compareContext(['a', 'b'], 'contains', 'b')).toBe(true)
    expect(compareContext(undefined, 'exists', null)).toBe(false)
  })

  test('cancelling stops the pending steps: a cancelled DELAY never runs its next step', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Cancel', eventName: 'cancel-start' })
    const d = await c.step(wf.id, 'DELAY', { amount: 10, unit: 'minutes' })
    const u = await c.step(wf.id, 'UPDATE_CONTACT', { data: { shouldNot: 'happen' } })
    await c.link(wf.id, wf.steps[0].id, d.id)
    await c.link(wf.id, d.id, u.id)
    await c.enable(wf.id)
    const cid = await contact('cancel@x.test')
    const e = await c.call('POST', `/workflows/${wf.id}/executions`, { contactId: cid })
    await worker.drain()
    expect((await detail(wf.id, e.id)).status).toBe('WAITING')
    // The wait shows in /activity/upcoming with its resume time, and leaves it once cancelled.
    const upcoming = async () => ((await env.request('GET', '/activity/upcoming?limit=100', { key: p.secretKey })).body.data as Array<{ kind: string; id: string; title: string; detail: { stepType: string } }>).filter((x) => x.kind === 'workflow' && x.id === e.id)
    expect(await upcoming()).toMatchObject([{ kind: 'workflow', id: e.id, title: 'Cancel', detail: { stepType: 'DELAY' } }])
    const cancelled = await c.call('DELETE', `/workflows/${wf.id}/executions/${e.id}`)
    expect(await upcoming()).toHaveLength(0)
    expect(cancelled.steps.map((s: { stepType: string; status: string }) => `${s.stepType}:${s.status}`)).toEqual(['TRIGGER:COMPLETED', 'DELAY:SKIPPED'])
    clock.advance(3_600_000)
    await worker.drain()
    expect((await detail(wf.id, e.id)).status).toBe('CANCELLED')
    expect((await c.call('GET', `/contacts/${cid}`)).data.shouldNot).toBeUndefined()
    // Deleting it is allowed now; its records go with it.
    await c.call('DELETE', `/workflows/${wf.id}`, undefined, 204)
  })
})
