import { afterAll, beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { Worker } from '../../../src/jobs/queue'
import { workflowJobs } from '../../../src/modules/workflows/jobs'
import { rawServer, type RawRequest } from '../../helpers/raw-http'
import { workflowProject, wfClient } from './fixture'

/**
 * Issue 35, item 12: WEBHOOK steps on the wire, seen by a raw TCP server on 127.0.0.1 that records the
 * bytes of each request and the connection it came on. A step's headers cannot add a second framing, and
 * two projects' steps never share a connection.
 */
forEachStore('WEBHOOK steps on the wire', (env) => {
  let raw: ReturnType<typeof rawServer>
  beforeAll(() => {
    raw = rawServer()
    env.deps.config.webhookAllowHosts = ['127.0.0.1']
  })
  afterAll(() => {
    for (const s of raw.sockets) s.destroy()
    raw.server.close()
  })

  test('one framing header per request, and no connection carries two projects\' requests', async () => {
    const worker = new Worker(env.deps, workflowJobs)
    const projects = [await workflowProject(env), await workflowProject(env)]
    for (const [n, p] of projects.entries()) {
      const c = wfClient(env, p.secretKey)
      const wf = await c.create({ name: 'Wire', eventName: `wire-${n}` })
      const headers = { 'Transfer-Encoding': 'chunked', 'Content-Length': '1', Connection: 'keep-alive, Upgrade', 'X-Project': p.id }
      const h = await c.step(wf.id, 'WEBHOOK', { url: `http://127.0.0.1:${raw.port()}/p${n}`, headers }, 'Wire')
      await c.link(wf.id, wf.steps[0].id, h.id)
      await c.enable(wf.id)
      for (let i = 0; i < 3; i++) {
        const email = `wire${i}@p${n}.test`
        expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email } })).status).toBeLessThan(300)
        await c.call('POST', `/workflows/${wf.id}/executions`, { email })
      }
    }
    await worker.drain()
    expect(raw.requests).toHaveLength(6)
    const projectOf = (r: RawRequest) => r.headers.find(([k]) => k === 'x-project')?.[1]
    for (const r of raw.requests) {
      expect(r.headers.filter(([k]) => k === 'content-length' || k === 'transfer-encoding')).toEqual([['content-length', String(Buffer.byteLength(r.body))]])
      expect(JSON.parse(r.body)).toMatchObject({ contact: { email: expect.stringContaining('@p') } })
    }
    const owners = new Map<number, Set<string | undefined>>()
    for (const r of raw.requests) owners.set(r.socket, (owners.get(r.socket) ?? new Set()).add(projectOf(r)))
    for (const set of owners.values()) expect(set.size).toBe(1)
    expect(new Set(raw.requests.map(projectOf))).toEqual(new Set(projects.map((p) => p.id)))
  })
})
