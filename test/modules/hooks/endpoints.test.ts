import { expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'

/**
 * /webhooks/endpoints: create (the secret shown once), list, get, update, delete, rotate; the delivery
 * log and replays answer 404 for another project's endpoint. Deliveries themselves: delivery.test.ts.
 */
forEachStore('webhook endpoints API', (env) => {
  const req = (method: string, path: string, key: string | null, body?: unknown) => env.request(method, path, { key, body })
  const create = async (p: NewProject, body: Record<string, unknown> = {}) => {
    const res = await req('POST', '/webhooks/endpoints', p.secretKey, { url: 'https://hooks.example.com/in', ...body })
    expect(res.status).toBe(201)
    return res.body
  }

  async function expectUnauthorized(method: string, path: string, p: NewProject, body?: unknown) {
    const none = await req(method, path, null, body)
    expect(none.status).toBe(401)
    expect(none.body.error.code).toBe('UNAUTHORIZED')
    const pub = await req(method, path, p.publicKey, body)
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
    const wrong = await req(method, path, 'sk_not_a_real_key', body)
    expect(wrong.status).toBe(401)
  }

  test('POST: 201 with the secret once; GET and the list never show it', async () => {
    const p = await env.project()
    const made = await create(p, { eventTypes: ['email.*', 'contact.unsubscribed', 'email.*'], description: 'CRM' })
    expect(made).toEqual({
      id: expect.any(String), url: 'https://hooks.example.com/in', description: 'CRM', eventTypes: ['email.*', 'contact.unsubscribed'], enabled: true,
      disabledReason: null, disabledAt: null, failingSince: null, previousSecretExpiresAt: null, createdAt: expect.any(String), updatedAt: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    })
    const got = await req('GET', `/webhooks/endpoints/${made.id}`, p.secretKey)
    expect(got.status).toBe(200)
    expect(got.body.secret).toBeUndefined()
    expect(got.text).not.toContain(made.secret.slice(6))
    const list = await req('GET', '/webhooks/endpoints', p.secretKey)
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([made.id])
    expect(list.text).not.toContain(made.secret.slice(6))
    // Stored encrypted, not as given.
    const { webhookEndpoints } = env.store.t
    const [row] = await env.store.db.select().from(webhookEndpoints)
    expect(JSON.stringify(row)).not.toContain(made.secret.slice(6))
    // Defaults: every event.
    expect((await create(p)).eventTypes).toEqual(['*'])
  })

  test('POST: bad URLs and bodies are 422; no key, a public key, an unknown key 401', async () => {
    const p = await env.project()
    for (const body of [
      {}, { url: 'ftp://example.com/' }, { url: 'not a url' }, { url: 'http://127.0.0.1/x' }, { url: 'http://localhost:8080/' },
      { url: 'http://[::1]/' }, { url: 'http://169.254.169.254/latest/meta-data' }, { url: 'http://10.1.2.3/' }, { url: 'http://127.1/' },
      { url: 'https://ok.example.com/', eventTypes: [] }, { url: 'https://ok.example.com/', eventTypes: [''] }, { url: 'https://ok.example.com/', description: 'x'.repeat(501) },
    ]) {
      const bad = await req('POST', '/webhooks/endpoints', p.secretKey, body)
      expect(bad.status).toBe(422)
      expect(bad.body.error.code).toBe('VALIDATION_ERROR')
    }
    const literal = await req('POST', '/webhooks/endpoints', p.secretKey, { url: 'http://169.254.169.254/' })
    expect(literal.body.error.errors[0]).toMatchObject({ field: 'url', code: 'forbidden_address' })
    await expectUnauthorized('POST', '/webhooks/endpoints', p, { url: 'https://hooks.example.com/' })
    await expectUnauthorized('GET', '/webhooks/endpoints', p)
    expect((await req('GET', '/webhooks/endpoints', p.secretKey)).body.data).toEqual([])
  })

  test('an allow-list entry with a port allows that port only (issue 35, item 13)', async () => {
    const p = await env.project()
    const before = env.deps.config.webhookAllowHosts
    env.deps.config.webhookAllowHosts = ['10.1.2.3:8080']
    try {
      const other = await req('POST', '/webhooks/endpoints', p.secretKey, { url: 'http://10.1.2.3:6379/' })
      expect(other.status).toBe(422)
      expect(other.body.error.errors[0]).toMatchObject({ field: 'url', code: 'forbidden_address' })
      expect((await req('POST', '/webhooks/endpoints', p.secretKey, { url: 'http://10.1.2.3/' })).status).toBe(422)
      expect((await req('POST', '/webhooks/endpoints', p.secretKey, { url: 'http://10.1.2.3:8080/hook' })).status).toBe(201)
    } finally {
      env.deps.config.webhookAllowHosts = before
    }
  })

  test('PATCH: url, types, description, enabled; 404 for an unknown id and for another project\'s', async () => {
    const p = await env.project()
    const q = await env.project()
    const made = await create(p)
    const patched = await req('PATCH', `/webhooks/endpoints/${made.id}`, p.secretKey, { url: 'https://other.example.com/h', eventTypes: ['segment.*'], description: null, enabled: false })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ url: 'https://other.example.com/h', eventTypes: ['segment.*'], description: null, enabled: false, disabledReason: null, disabledAt: expect.any(String) })
    const again = await req('PATCH', `/webhooks/endpoints/${made.id}`, p.secretKey, { enabled: true })
    expect(again.body).toMatchObject({ enabled: true, disabledAt: null })
    expect((await req('PATCH', `/webhooks/endpoints/${made.id}`, p.secretKey, { url: 'http://192.168.0.1/' })).status).toBe(422)
    for (const path of [`/webhooks/endpoints/${made.id}`, '/webhooks/endpoints/nope']) {
      const other = await req('PATCH', path, q.secretKey, { enabled: false })
      expect(other.status).toBe(404)
      expect(other.body.error.code).toBe('NOT_FOUND')
      expect((await req('GET', path, q.secretKey)).status).toBe(404)
      expect((await req('DELETE', path, q.secretKey)).status).toBe(404)
      expect((await req('POST', `${path}/rotate-secret`, q.secretKey)).status).toBe(404)
      expect((await req('GET', `${path}/deliveries`, q.secretKey)).status).toBe(404)
      expect((await req('GET', `${path}/attempts`, q.secretKey)).status).toBe(404)
      expect((await req('GET', `${path}/deliveries/x`, q.secretKey)).status).toBe(404)
      expect((await req('POST', `${path}/deliveries/x/replay`, q.secretKey)).status).toBe(404)
      expect((await req('POST', `${path}/replay`, q.secretKey, { since: new Date(0).toISOString() })).status).toBe(404)
    }
    expect((await req('GET', `/webhooks/endpoints/${made.id}`, p.secretKey)).body.enabled).toBe(true)
    await expectUnauthorized('PATCH', `/webhooks/endpoints/${made.id}`, p, { enabled: false })
  })

  test('rotate-secret: a new secret shown once, the old one kept for 24 hours', async () => {
    const p = await env.project()
    const made = await create(p)
    const rotated = await req('POST', `/webhooks/endpoints/${made.id}/rotate-secret`, p.secretKey)
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).toMatch(/^whsec_/)
    expect(rotated.body.secret).not.toBe(made.secret)
    const hours = (Date.parse(rotated.body.previousSecretExpiresAt) - Date.now()) / 3600_000
    expect(Math.round(hours)).toBe(24)
    expect((await req('GET', `/webhooks/endpoints/${made.id}`, p.secretKey)).body.previousSecretExpiresAt).toBe(rotated.body.previousSecretExpiresAt)
    await expectUnauthorized('POST', `/webhooks/endpoints/${made.id}/rotate-secret`, p)
  })

  test('DELETE: 204, then 404', async () => {
    const p = await env.project()
    const made = await create(p)
    await expectUnauthorized('DELETE', `/webhooks/endpoints/${made.id}`, p)
    expect((await req('DELETE', `/webhooks/endpoints/${made.id}`, p.secretKey)).status).toBe(204)
    expect((await req('GET', `/webhooks/endpoints/${made.id}`, p.secretKey)).status).toBe(404)
    expect((await req('DELETE', `/webhooks/endpoints/${made.id}`, p.secretKey)).status).toBe(404)
  })

  test('replay: the body needs a date-time; a disabled endpoint is 409', async () => {
    const p = await env.project()
    const made = await create(p)
    expect((await req('POST', `/webhooks/endpoints/${made.id}/replay`, p.secretKey, { since: 'yesterday' })).status).toBe(422)
    expect((await req('POST', `/webhooks/endpoints/${made.id}/replay`, p.secretKey, { since: new Date(0).toISOString() })).body).toEqual({ replayed: 0, ids: [] })
    await req('PATCH', `/webhooks/endpoints/${made.id}`, p.secretKey, { enabled: false })
    const refused = await req('POST', `/webhooks/endpoints/${made.id}/replay`, p.secretKey, { since: new Date(0).toISOString() })
    expect(refused.status).toBe(409)
    expect(refused.body.error.code).toBe('CONFLICT')
    expect((await req('GET', `/webhooks/endpoints/${made.id}/deliveries?limit=0`, p.secretKey)).status).toBe(400)
    expect((await req('GET', `/webhooks/endpoints/${made.id}/deliveries?status=odd`, p.secretKey)).status).toBe(400)
  })
})
