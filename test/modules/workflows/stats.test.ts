import { beforeAll, expect, test } from 'bun:test'
import { Worker } from '../../../src/jobs/queue'
import { workflowJobs } from '../../../src/modules/workflows/jobs'
import { forEachStore } from '../../helpers/env'
import { workflowProject, wfClient, type WfProject } from './fixture'

/**
 * GET /workflows/:id/stats (per-step counts on the dashboard's graph) and POST
 * /workflows/:id/executions/:executionId/continue (a test run's "continue now"), issue 37 item 5: happy,
 * error and security cases on both stores. The engine's clock is the test's.
 */
forEachStore('workflow step stats and continue now', (env) => {
  const clock = env.clock
  let p: WfProject
  let other: WfProject
  let worker: Worker
  beforeAll(async () => {
    clock.set(Date.now())
    p = await workflowProject(env)
    other = await workflowProject(env)
    worker = new Worker(env.deps, workflowJobs)
  })
  const req = (method: string, path: string, key: string | null = p.secretKey) => env.request(method, path, { key })
  const contact = async (email: string) => {
    const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email } })
    expect(r.status).toBeLessThan(300)
  }

  /** trigger -> DELAY 1 day -> WAIT_FOR_EVENT "never" (no timeout); and one with a timeout -> EXIT. */
  async function build() {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: `Stats ${Math.random()}`, eventName: 'stats-signup' })
    const delay = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'days' }, 'A day')
    const wait = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'purchase', timeout: 3600 }, 'Purchase or an hour')
    const waitForever = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'never' }, 'Forever')
    const exit = await c.step(wf.id, 'EXIT', { reason: 'bought' }, 'Done')
    await c.link(wf.id, wf.steps[0].id, delay.id)
    await c.link(wf.id, delay.id, wait.id)
    await c.link(wf.id, wait.id, exit.id, 'event')
    await c.link(wf.id, wait.id, waitForever.id, 'timeout')
    await c.link(wf.id, waitForever.id, exit.id, 'event')
    return { c, wf, trigger: wf.steps[0].id, delay: delay.id, wait: wait.id, waitForever: waitForever.id, exit: exit.id }
  }
  const stats = async (wf: string) => {
    const r = await req('GET', `/workflows/${wf}/stats`)
    expect(r.status).toBe(200)
    return new Map((r.body.data as Array<{ stepId: string; entered: number; waiting: number; completed: number; failed: number }>).map((s) => [s.stepId, s]))
  }

  test('stats count entered, waiting, completed and failed per step; continue now ends a DELAY, then a timed wait by its timeout branch', async () => {
    const g = await build()
    await contact('ada@stats.test')
    await contact('bob@stats.test')
    const zero = await stats(g.wf.id)
    expect(zero.size).toBe(5)
    expect(zero.get(g.delay)).toEqual({ stepId: g.delay, entered: 0, waiting: 0, completed: 0, failed: 0 })

    const ada = await g.c.call('POST', `/workflows/${g.wf.id}/executions`, { email: 'ada@stats.test' })
    const bob = await g.c.call('POST', `/workflows/${g.wf.id}/executions`, { email: 'bob@stats.test' })
    await worker.drain()
    let s = await stats(g.wf.id)
    expect(s.get(g.trigger)).toMatchObject({ entered: 2, completed: 2, waiting: 0 })
    expect(s.get(g.delay)).toMatchObject({ entered: 2, waiting: 2, completed: 0, failed: 0 })
    const bobBefore = (await req('GET', `/workflows/${g.wf.id}/executions/${bob.id}`)).body

    // Continue now: Ada's DELAY ends at once, her run goes on to the next wait (an hour's timeout).
    const r = await req('POST', `/workflows/${g.wf.id}/executions/${ada.id}/continue`)
    expect(r.status).toBe(200)
    expect(r.body.waitingFor.until).toBe(clock.date().toISOString())
    await worker.drain()
    let a = (await req('GET', `/workflows/${g.wf.id}/executions/${ada.id}`)).body
    expect(a.status).toBe('WAITING')
    expect(a.currentStepId).toBe(g.wait)
    expect(a.steps.find((x: { stepId: string }) => x.stepId === g.delay)).toMatchObject({ status: 'COMPLETED', output: { dueAt: clock.date().toISOString() } })
    // Bob still waits for his own day.
    const bobAfter = (await req('GET', `/workflows/${g.wf.id}/executions/${bob.id}`)).body
    expect(bobAfter).toMatchObject({ status: 'WAITING', currentStepId: g.delay, waitingFor: bobBefore.waitingFor })
    s = await stats(g.wf.id)
    expect(s.get(g.delay)).toMatchObject({ entered: 2, waiting: 1, completed: 1 })
    expect(s.get(g.wait)).toMatchObject({ entered: 1, waiting: 1, completed: 0 })

    // Again: the wait for "purchase" times out now and takes its timeout branch, to a wait without a timeout.
    expect((await req('POST', `/workflows/${g.wf.id}/executions/${ada.id}/continue`)).status).toBe(200)
    await worker.drain()
    a = (await req('GET', `/workflows/${g.wf.id}/executions/${ada.id}`)).body
    expect(a).toMatchObject({ status: 'WAITING', currentStepId: g.waitForever })
    expect(a.steps.find((x: { stepId: string }) => x.stepId === g.wait)).toMatchObject({ status: 'COMPLETED', output: { timedOut: true } })
    s = await stats(g.wf.id)
    expect(s.get(g.wait)).toMatchObject({ entered: 1, waiting: 0, completed: 1 })
    expect(s.get(g.waitForever)).toMatchObject({ entered: 1, waiting: 1 })

    // A wait for an event without a timeout cannot be skipped: 409, and it still waits.
    const forever = await req('POST', `/workflows/${g.wf.id}/executions/${ada.id}/continue`)
    expect(forever.status).toBe(409)
    expect(forever.body.error.code).toBe('CONFLICT')
    expect(forever.body.error.message).toContain('without a timeout')
    expect((await req('GET', `/workflows/${g.wf.id}/executions/${ada.id}`)).body.status).toBe('WAITING')
    // An ended execution: 409.
    expect((await req('DELETE', `/workflows/${g.wf.id}/executions/${bob.id}`)).status).toBe(200)
    const ended = await req('POST', `/workflows/${g.wf.id}/executions/${bob.id}/continue`)
    expect(ended.status).toBe(409)
    expect(ended.body.error.message).toContain('CANCELLED')
    s = await stats(g.wf.id)
    expect(s.get(g.delay)).toMatchObject({ entered: 2, waiting: 0 })
  })

  test('errors: an unknown workflow or execution is 404 in the envelope', async () => {
    const g = await build()
    for (const [method, path] of [['GET', '/workflows/nope/stats'], ['POST', '/workflows/nope/executions/x/continue'], ['POST', `/workflows/${g.wf.id}/executions/nope/continue`]]) {
      const r = await req(method, path)
      expect(`${method} ${path} ${r.status} ${r.body.error.code}`).toBe(`${method} ${path} 404 NOT_FOUND`)
    }
  })

  test('security: no key and the public key are 401; another project\'s workflow and execution are 404', async () => {
    const g = await build()
    await contact('cy@stats.test')
    const ex = await g.c.call('POST', `/workflows/${g.wf.id}/executions`, { email: 'cy@stats.test' })
    await worker.drain()
    for (const [method, path] of [['GET', `/workflows/${g.wf.id}/stats`], ['POST', `/workflows/${g.wf.id}/executions/${ex.id}/continue`]]) {
      expect((await req(method, path, null)).status).toBe(401)
      expect((await req(method, path, p.publicKey)).status).toBe(401)
      const r = await req(method, path, other.secretKey)
      expect(`${method} ${path} ${r.status}`).toBe(`${method} ${path} 404`)
    }
    // Another project's workflow id with this project's execution id, and the other way round.
    const theirs = await wfClient(env, other.secretKey).create({ name: 'Theirs', eventName: 'x' })
    expect((await req('POST', `/workflows/${theirs.id}/executions/${ex.id}/continue`)).status).toBe(404)
    expect((await req('GET', `/workflows/${g.wf.id}/executions/${ex.id}`)).body.status).toBe('WAITING')
  })
})
