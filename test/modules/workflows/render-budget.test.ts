import { afterAll, beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { Worker } from '../../../src/jobs/queue'
import { closeRenderPool } from '../../../src/mail/render'
import { workflowJobs } from '../../../src/modules/workflows/jobs'
import { workflowProject, wfClient, type WfProject } from './fixture'

/**
 * Issue 35 item 1: a SEND_EMAIL step whose template, with this contact's data, passes a render budget
 * fails for that contact with the reason; the same workflow sends to a contact whose data stays within it.
 */
const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
const EACH3 = '<p>{{#each @root.a}}{{#each @root.a}}{{#each @root.a}}x{{/each}}{{/each}}{{/each}}</p>'

afterAll(() => closeRenderPool())

forEachStore('workflow SEND_EMAIL within the render budgets', (env) => {
  let p: WfProject
  let worker: Worker
  beforeAll(async () => {
    p = await workflowProject(env)
    worker = new Worker(env.deps, workflowJobs)
    await worker.ensureRecurring()
  })

  test('the hostile contact\'s execution fails with the render budget named; the other completes', async () => {
    const c = wfClient(env, p.secretKey)
    const tplId = await p.tpl('each3', 'TRANSACTIONAL', 'Hi', EACH3)
    const wf = await c.create({ name: 'hostile', eventName: 'hostile-go' })
    const send = await c.step(wf.id, 'SEND_EMAIL', { templateId: tplId }, 'Mail')
    await c.link(wf.id, wf.steps[0].id, send.id)
    await c.enable(wf.id)
    for (const [email, n] of [['calm@x.test', 2], ['storm@x.test', 200]] as const) {
      expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email, data: { a: keys(n) } } })).status).toBeLessThan(300)
      await c.call('POST', `/workflows/${wf.id}/executions`, { email })
    }
    await worker.drain()
    const execs = (await env.request('GET', `/workflows/${wf.id}/executions?limit=10`, { key: p.secretKey })).body.data as Array<{ status: string; error: string | null; contactId: string }>
    const byStatus = Object.fromEntries(execs.map((e) => [e.status, e]))
    expect(Object.keys(byStatus).sort()).toEqual(['COMPLETED', 'FAILED'])
    expect(byStatus.FAILED.error).toContain('could not be rendered: body: rendering needs more than 200,000 steps')
  }, 30_000)
})
