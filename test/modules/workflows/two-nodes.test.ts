import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { and, count, eq, inArray } from 'drizzle-orm'
import { pgReachableSync, TestEnv } from '../../helpers/env'
import { must } from '../../helpers/must'
import { until } from '../../helpers/worker'
import { ctxFor } from '../../../src/deps'
import { dkimKey } from '../../../src/secrets'
import { workflowTriggerConsumer } from '../../../src/modules/workflows/consumer'
import { workflowProject, wfClient } from './fixture'
import { freePort } from '../../helpers/ports'

/**
 * Two `mailctl serve` nodes (api + worker) on one PostgreSQL database: 1,000 events tracked through both
 * nodes' APIs start exactly 1,000 executions, each run once; handing every event again to the trigger
 * consumer from a third process, all at once (what an at-least-once delivery may do), starts none more.
 */
const CLI = join(import.meta.dir, '../../../cli/mailctl.ts')
const N = 1000

;(pgReachableSync() ? describe : describe.skip)('workflows on two nodes [pg]', () => {
  const env = new TestEnv('pg')
  beforeAll(() => env.start())
  // Two nodes stop with their shutdown grace before the database is dropped.
  afterAll(() => env.stop(), 60_000)

  test('1,000 tracked events over two nodes start exactly 1,000 executions; a repeated delivery starts none', async () => {
    const p = await workflowProject(env)
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Two nodes', eventName: 'two-nodes' })
    const u = await c.step(wf.id, 'UPDATE_CONTACT', { data: { visited: true } })
    await c.link(wf.id, wf.steps[0].id, u.id)
    await c.enable(wf.id)

    const nodes = await Promise.all([0, 1].map(async () => {
      const port = freePort()
      const child = Bun.spawn([process.execPath, CLI, 'serve', '--role', 'api', '--role', 'worker'], {
        env: {
          PATH: process.env.PATH ?? '', DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir,
          MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'config.jwtSecret'), MAILCTL_DKIM_KEY: dkimKey(env.config).toString('base64'),
          MAILCTL_HOSTNAME: env.config.hostname, MAILCTL_HTTP_PORT: String(port), MAILCTL_HTTP_HOST: '127.0.0.1',
          MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_RATE_LIMIT_PER_MINUTE: '1000000', MAILCTL_LOG_LEVEL: 'warn',
        },
        stdin: 'ignore', stdout: 'ignore', stderr: 'inherit',
      })
      env.onStop(async () => { child.kill('SIGTERM'); await child.exited })
      await until(async () => { try { return (await fetch(`http://127.0.0.1:${port}/health`)).ok } catch { return false } }, 60_000, 'a node answering /health', 50)
      return `http://127.0.0.1:${port}`
    }))

    let next = 0
    await Promise.all(Array.from({ length: 16 }, async () => {
      for (;;) {
        const i = next++
        if (i >= N) return
        const res = await fetch(`${nodes[i % 2]}/v1/track`, {
          method: 'POST', headers: { authorization: `Bearer ${p.publicKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ email: `n${i}@two.test`, event: 'two-nodes' }),
        })
        expect(res.status).toBe(200)
        await res.arrayBuffer()
      }
    }))

    const { events, workflowExecutions: ex, workflowStepExecutions: sx } = env.store.t
    const completed = async () => Number((await env.store.db.select({ n: count() }).from(ex).where(and(eq(ex.workflowId, wf.id), eq(ex.status, 'COMPLETED'))))[0].n)
    await until(async () => (await completed()) === N, 180_000, 'every execution completed', 200)

    // Every event delivered again, twice at once, from this process: nothing more starts.
    const rows = await env.store.db.select().from(events).where(and(eq(events.projectId, p.id), eq(events.name, 'two-nodes')))
    expect(rows).toHaveLength(N)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await Promise.all([workflowTriggerConsumer.handle(ctx, rows), workflowTriggerConsumer.handle(ctx, rows.slice().reverse())])

    const all = await env.store.db.select({ id: ex.id, triggerEventId: ex.triggerEventId, status: ex.status }).from(ex).where(eq(ex.workflowId, wf.id))
    expect(all).toHaveLength(N)
    expect(new Set(all.map((e) => e.triggerEventId)).size).toBe(N)
    expect(all.every((e) => e.status === 'COMPLETED')).toBe(true)
    // Each ran once: one TRIGGER and one UPDATE_CONTACT record per execution.
    const steps = await env.store.db.select({ n: count() }).from(sx).where(inArray(sx.executionId, all.map((e) => e.id)))
    expect(Number(steps[0].n)).toBe(2 * N)
  }, 400_000)
})
