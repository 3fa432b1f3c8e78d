import { expect, test } from 'bun:test'
import { and, eq, inArray } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { startWorkerProcess, until } from '../../helpers/worker'
import { ctxFor } from '../../../src/deps'
import { upsertMany } from '../../../src/modules/contacts/service'
import { settleEvents } from '../../helpers/events'
import { mxTo, projectWithDomain, startTestDns } from '../emails/fixture'
import { wfClient } from './fixture'

/**
 * Crash safety of executions: a real `mailctl serve --role worker` runs SEND_EMAIL A -> DELAY 1 minute ->
 * SEND_EMAIL B -> WAIT_FOR_EVENT go -> SEND_EMAIL C for N contacts and is killed with SIGKILL while they all
 * wait in the DELAY, and again while they all wait for the event (whose events arrive while no worker runs).
 * Restarted each time, it resumes every execution; each contact gets A, B and C exactly once.
 *
 * The server's clock is the real one and this suite never sleeps through a delay: once the node has been
 * killed and restarted, the DELAY's due time is moved to now in the database (the durable job and the
 * execution's wait), which is what the passing of that minute would have done.
 */
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'wfcrash.test')
const N = 40

forEachStore('workflow crash safety', (env) => {
  test('kill -9 during a DELAY and during a WAIT_FOR_EVENT: every execution resumes after the restart, one email per step', async () => {
    const tag = Math.random().toString(36).slice(2, 8)
    const p = await projectWithDomain(env, dns, `wc-${tag}.test`)
    const c = wfClient(env, p.secretKey)
    const tpl = async (letter: string) => (await c.call('POST', '/templates', { name: letter, subject: `Mail ${letter} for {{n}}`, body: `<p>${letter} {{n}}</p>`, from: p.from, type: 'TRANSACTIONAL' }, 201)).id as string
    const [a, b, cc] = [await tpl('A'), await tpl('B'), await tpl('C')]
    const wf = await c.create({ name: 'Crash', eventName: `crash-${tag}` })
    const sa = await c.step(wf.id, 'SEND_EMAIL', { templateId: a })
    const d = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'minutes' })
    const sb = await c.step(wf.id, 'SEND_EMAIL', { templateId: b })
    const w = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'go' })
    const sc = await c.step(wf.id, 'SEND_EMAIL', { templateId: cc })
    await c.link(wf.id, wf.steps[0].id, sa.id)
    await c.link(wf.id, sa.id, d.id)
    await c.link(wf.id, d.id, sb.id)
    await c.link(wf.id, sb.id, w.id)
    await c.link(wf.id, w.id, sc.id, 'event')
    await c.enable(wf.id)

    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const addr = (i: number) => `${tag}-${i}@wfcrash.test`
    await env.store.tx((db) => upsertMany(ctx, db, Array.from({ length: N }, (_, i) => ({ email: addr(i), subscribed: true, data: { n: i } })), { defaultSubscribed: true }))
    // The executions start from tracked events (the trigger consumer of this process), before any worker runs.
    for (let i = 0; i < N; i++) {
      expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: addr(i), event: `crash-${tag}` } })).status).toBe(200)
    }
    await settleEvents()

    const { workflowExecutions: ex, jobs } = env.store.t
    const execs = () => env.store.db.select().from(ex).where(eq(ex.workflowId, wf.id))
    const waitingOn = async (what: 'delay' | 'event') => {
      const rows = await execs()
      return rows.length === N && rows.every((e) => e.status === 'WAITING' && (what === 'delay' ? e.waitEvent === null : e.waitEvent === 'go'))
    }
    const { emails } = env.store.t
    // Recorded as delivered: no message of that step is in flight when the node is killed (the outbound
    // queue's own crash rule, a repeat of what was on an open connection, is the campaigns crash test's).
    const delivered = async (templateId: string) => (await env.store.db.select({ id: emails.id }).from(emails)
      .where(and(eq(emails.projectId, p.id), eq(emails.templateId, templateId), eq(emails.status, 'DELIVERED')))).length
    const mine = (subject: string) => sink.received.filter((m) => m.to[0]?.startsWith(`${tag}-`) && m.raw.toString('utf8').includes(`Subject: Mail ${subject}`))
    expect(await execs()).toHaveLength(N)

    // 1. The node sends A and parks every execution in the DELAY; it is killed there.
    let child = startWorkerProcess(env, { mxPort: sink.port, dnsServer: dns.server })
    try {
      await until(() => waitingOn('delay'), 120_000, 'every execution in its DELAY', 20)
      await until(async () => (await delivered(a)) === N, 60_000, 'every A delivered', 20)
    } finally {
      child.kill('SIGKILL')
      await child.exited
    }

    // 2. Restarted; the minute passes (due times moved to now); B goes out and everyone waits for `go`.
    child = startWorkerProcess(env, { mxPort: sink.port, dnsServer: dns.server })
    try {
      const now = new Date()
      await env.store.tx(async (db) => {
        await db.update(ex).set({ waitUntil: now }).where(and(eq(ex.workflowId, wf.id), eq(ex.status, 'WAITING')))
        await db.update(jobs).set({ runAt: now }).where(and(eq(jobs.name, 'workflow.run'), eq(jobs.projectId, p.id), eq(jobs.status, 'queued')))
      })
      await until(() => waitingOn('event'), 120_000, 'every execution waiting for the event', 20)
      await until(async () => (await delivered(b)) === N, 60_000, 'every B delivered', 20)
    } finally {
      child.kill('SIGKILL')
      await child.exited
    }

    // 3. The events arrive while no worker runs; the restarted node resumes every execution.
    for (let i = 0; i < N; i++) {
      expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: addr(i), event: 'go' } })).status).toBe(200)
    }
    await settleEvents()
    expect((await execs()).every((e) => e.status === 'RUNNING')).toBe(true)
    child = startWorkerProcess(env, { mxPort: sink.port, dnsServer: dns.server })
    try {
      await until(async () => (await execs()).every((e) => e.status === 'COMPLETED'), 120_000, 'every execution completed', 20)
      await until(async () => (await delivered(cc)) === N, 60_000, 'every C delivered', 20)
    } finally {
      child.kill('SIGTERM')
      await child.exited
    }

    for (const letter of ['A', 'B', 'C']) {
      const got = mine(letter).map((m) => m.to[0]).sort()
      expect(got).toEqual(Array.from({ length: N }, (_, i) => addr(i)).sort())
    }
    // One email queued per contact and step, whatever the kills interrupted.
    const queued = await env.store.db.select({ to: emails.toAddress, templateId: emails.templateId }).from(emails).where(eq(emails.projectId, p.id))
    expect(queued.length).toBe(3 * N)
    expect(new Set(queued.map((q) => `${q.templateId}:${q.to}`)).size).toBe(3 * N)
    const { workflowStepExecutions: sx } = env.store.t
    const ids = (await execs()).map((e) => e.id)
    const steps = await env.store.db.select().from(sx).where(inArray(sx.executionId, ids))
    // TRIGGER, A, DELAY, B, WAIT, C: one record each.
    expect(steps.length).toBe(N * 6)
    expect(steps.every((s) => s.status === 'COMPLETED')).toBe(true)
  }, 400_000)
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
