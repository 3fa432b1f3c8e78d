import { beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'
import { addDomain, campaignBody } from './fixture'

/** POST /campaigns/:id/unschedule (issue 36, item 8): SCHEDULED back to DRAFT; every other state is a 409. */
forEachStore('POST /campaigns/:id/unschedule', (env) => {
  let p: NewProject
  let q: NewProject
  beforeAll(async () => {
    p = await env.project()
    q = await env.project()
    await addDomain(env, p.id, 'example.com', true)
  })
  const req = (method: string, path: string, body?: unknown, key = p.secretKey) => env.request(method, path, { key, body })
  const future = () => new Date(Date.now() + 86_400_000).toISOString()
  async function scheduled() {
    const c = (await req('POST', '/campaigns', campaignBody())).body.data
    expect((await req('POST', `/campaigns/${c.id}/send`, { scheduledFor: future() })).body.data.status).toBe('SCHEDULED')
    return c.id as string
  }

  test('a SCHEDULED campaign becomes a DRAFT without a time; it can be edited and scheduled again', async () => {
    const id = await scheduled()
    const r = await req('POST', `/campaigns/${id}/unschedule`)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id, status: 'DRAFT', scheduledFor: null })
    expect((await req('GET', `/campaigns/${id}`)).body).toMatchObject({ status: 'DRAFT', scheduledFor: null })
    expect((await req('PUT', `/campaigns/${id}`, campaignBody({ subject: 'Changed' }))).body.subject).toBe('Changed')
    expect((await req('POST', `/campaigns/${id}/send`, { scheduledFor: future() })).body.data.status).toBe('SCHEDULED')
  })

  test('DRAFT, CANCELLED and SENDING answer 409 CONFLICT and change nothing', async () => {
    const draft = (await req('POST', '/campaigns', campaignBody())).body.data.id
    const r = await req('POST', `/campaigns/${draft}/unschedule`)
    expect(r.status).toBe(409)
    expect(r.body.error.code).toBe('CONFLICT')
    expect(r.body.error.message).toMatch(/DRAFT/)
    const cancelled = await scheduled()
    await req('POST', `/campaigns/${cancelled}/cancel`)
    expect((await req('POST', `/campaigns/${cancelled}/unschedule`)).status).toBe(409)
    expect((await req('GET', `/campaigns/${cancelled}`)).body.status).toBe('CANCELLED')
    const sending = (await req('POST', '/campaigns', campaignBody())).body.data.id
    expect((await req('POST', `/campaigns/${sending}/send`, {})).body.data.status).toBe('SENDING')
    expect((await req('POST', `/campaigns/${sending}/unschedule`)).status).toBe(409)
  })

  test('security: no key 401, the public key refused, another project\'s campaign 404, an unknown id 404', async () => {
    const id = await scheduled()
    expect((await env.request('POST', `/campaigns/${id}/unschedule`, { key: null })).status).toBe(401)
    expect((await env.request('POST', `/campaigns/${id}/unschedule`, { key: p.publicKey })).status).toBe(401)
    expect((await req('POST', `/campaigns/${id}/unschedule`, undefined, q.secretKey)).status).toBe(404)
    expect((await req('POST', '/campaigns/00000000-0000-0000-0000-000000000000/unschedule')).status).toBe(404)
    expect((await req('GET', `/campaigns/${id}`)).body.status).toBe('SCHEDULED')
  })
})
