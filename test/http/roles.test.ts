import { expect, test } from 'bun:test'
import { forEachStore } from '../helpers/env'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../helpers/accounts'

/**
 * Issue 35, item 7: webhook endpoints (they receive every event of the project) and a domain's
 * allowSubdomains are OWNER and ADMIN actions (docs/decisions.md, Member roles). A MEMBER still reads them.
 */
forEachStore('integrations are for OWNER and ADMIN', (env) => {
  const as = (u: TestUser, projectId: string) => ({ cookie: u.cookie, headers: { 'x-project-id': projectId } })

  test('a MEMBER cannot create, change, rotate, replay or delete webhook endpoints; an ADMIN can; both read', async () => {
    const owner = await verifiedUser(env, 'owner')
    const p = await ownedProject(env, owner)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const body = { url: 'https://hooks.example.com/mailctl', events: ['email.sent'] }
    const refused = await env.request('POST', '/webhooks/endpoints', { ...as(member, p.id), body })
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe('FORBIDDEN')
    expect(refused.body.error.message).toContain('MEMBER')
    const made = await env.request('POST', '/webhooks/endpoints', { ...as(admin, p.id), body })
    expect(made.status).toBe(201)
    const id = made.body.id
    for (const [method, path, b] of [
      ['PATCH', `/webhooks/endpoints/${id}`, { url: 'https://elsewhere.example.com/' }],
      ['POST', `/webhooks/endpoints/${id}/rotate-secret`, undefined],
      ['POST', `/webhooks/endpoints/${id}/replay`, { since: new Date(0).toISOString() }],
      ['POST', `/webhooks/endpoints/${id}/deliveries/${crypto.randomUUID()}/replay`, undefined],
      ['DELETE', `/webhooks/endpoints/${id}`, undefined],
    ] as const) {
      const res = await env.request(method, path, { ...as(member, p.id), body: b })
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 403 })
    }
    expect((await env.request('GET', '/webhooks/endpoints', as(member, p.id))).status).toBe(200)
    expect((await env.request('GET', `/webhooks/endpoints/${id}`, as(member, p.id))).status).toBe(200)
    // The secret key keeps every right.
    expect((await env.request('POST', `/webhooks/endpoints/${id}/rotate-secret`, { key: p.secretKey })).status).toBe(200)
    expect((await env.request('DELETE', `/webhooks/endpoints/${id}`, as(admin, p.id))).status).toBe(204)
  })

  test('a MEMBER cannot change a domain\'s allowSubdomains; an ADMIN and the key can', async () => {
    const owner = await verifiedUser(env, 'owner')
    const p = await ownedProject(env, owner)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const name = () => `roles-${Math.random().toString(36).slice(2, 8)}.example.com`
    // Nor set it when adding a domain.
    const early = await env.request('POST', '/domains', { ...as(member, p.id), body: { projectId: p.id, domain: name(), allowSubdomains: true } })
    expect(early.status).toBe(403)
    expect((await env.request('POST', '/domains', { ...as(member, p.id), body: { projectId: p.id, domain: name() } })).status).toBe(201)
    const domain = await env.request('POST', '/domains', { key: p.secretKey, body: { projectId: p.id, domain: name() } })
    expect(domain.status).toBe(201)
    const path = `/domains/${domain.body.id}`
    const refused = await env.request('PATCH', path, { ...as(member, p.id), body: { allowSubdomains: true } })
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe('FORBIDDEN')
    expect((await env.request('PATCH', path, { ...as(admin, p.id), body: { allowSubdomains: true } })).body.allowSubdomains).toBe(true)
    expect((await env.request('PATCH', path, { key: p.secretKey, body: { allowSubdomains: false } })).body.allowSubdomains).toBe(false)
    expect((await env.request('GET', `/domains/project/${p.id}`, as(member, p.id))).status).toBe(200)
  })
})
