import { beforeEach, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'
import { hashSecret } from '../../../src/modules/projects/keys'
import { projectForKey } from '../../../src/modules/projects/service'
import { PROJECT_DATA_TABLES } from '../../../src/modules/projects/repo'
import * as domainsRepo from '../../../src/modules/domains/repo'

async function addContact(env: TestEnv, key: string, email = `c-${Math.random().toString(36).slice(2)}@example.com`) {
  const res = await env.request('POST', '/contacts', { key, body: { email } })
  expect(res.status).toBeOneOf([200, 201])
  return res.body.id as string
}

forEachStore('/users/@me/projects', (env) => {
  let owner: TestUser
  // A fresh owner per test: no test depends on what another left behind.
  beforeEach(async () => { owner = await verifiedUser(env, 'owner') })

  test('create: 201 with both keys once, the creator is OWNER; the hash is never shown', async () => {
    const res = await env.request('POST', '/users/@me/projects', { cookie: owner.cookie, body: { name: 'Shop', ignored: true } })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(String), name: 'Shop', publicKey: expect.stringMatching(/^pk_[0-9a-f]{64}$/), secretKey: expect.stringMatching(/^sk_[0-9a-f]{64}$/),
      disabled: false, trackingEnabled: true, sendRatePerSecond: null, defaultFrom: null, defaultFromName: null, defaultReplyTo: null,
      role: 'OWNER', createdAt: expect.any(String), updatedAt: expect.any(String),
    })
    const { projects } = env.store.t
    const [row] = await env.store.db.select().from(projects).where(eq(projects.id, res.body.id))
    expect(row.secretKeyHash).toBe(hashSecret(res.body.secretKey))
    const list = await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })
    expect(list.status).toBe(200)
    expect(list.body.find((p: { id: string }) => p.id === res.body.id)).toMatchObject({ name: 'Shop', role: 'OWNER' })
    expect(list.text).not.toContain('secretKey')
    expect(list.text).not.toContain(row.secretKeyHash)
    expect(list.text).not.toContain(res.body.secretKey)
  })

  test('create: 422 for a missing, empty or too long name; 401 without a session', async () => {
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 42 }]) {
      const res = await env.request('POST', '/users/@me/projects', { cookie: owner.cookie, body })
      expect(res.status).toBe(422)
      expect(res.body.error.errors[0].field).toBe('name')
    }
    expect((await env.request('POST', '/users/@me/projects', { body: { name: 'x' } })).status).toBe(401)
    expect((await env.request('GET', '/users/@me/projects')).status).toBe(401)
  })

  test('list: only the projects the user is a member of', async () => {
    const other = await verifiedUser(env, 'other')
    const theirs = await ownedProject(env, other)
    const mine = await ownedProject(env, owner)
    const list = (await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })).body as Array<{ id: string }>
    expect(list.map((p) => p.id)).toContain(mine.id)
    expect(list.map((p) => p.id)).not.toContain(theirs.id)
    const cliProject = await env.project()
    expect(list.map((p) => p.id)).not.toContain(cliProject.id)
  })

  test('PATCH: OWNER and ADMIN change name and tracking; MEMBER 403; 422 on bad input', async () => {
    const p = await ownedProject(env, owner)
    const res = await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { name: 'Renamed', trackingEnabled: false } })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: p.id, name: 'Renamed', trackingEnabled: false, role: 'OWNER' })
    expect(res.text).not.toContain('secretKey')
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    const byAdmin = await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: admin.cookie, body: { trackingEnabled: true } })
    expect(byAdmin.status).toBe(200)
    expect(byAdmin.body).toMatchObject({ name: 'Renamed', trackingEnabled: true, role: 'ADMIN' })
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const byMember = await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: member.cookie, body: { name: 'Mine now' } })
    expect(byMember.status).toBe(403)
    expect(byMember.body.error.code).toBe('FORBIDDEN')
    expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { trackingEnabled: 'no' } })).status).toBe(422)
    expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { name: '' } })).status).toBe(422)
    const list = (await env.request('GET', '/users/@me/projects', { cookie: member.cookie })).body as Array<{ id: string; name: string }>
    expect(list.find((x) => x.id === p.id)?.name).toBe('Renamed')
  })

  test('regenerate-keys: new keys in the response; the old ones stop working at once', async () => {
    const p = await ownedProject(env, owner)
    expect((await env.request('GET', '/contacts?limit=1', { key: p.secretKey })).status).toBe(200)
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'signed-up' } })).status).toBe(200)
    const res = await env.request('POST', `/users/@me/projects/${p.id}/regenerate-keys`, { cookie: owner.cookie })
    expect(res.status).toBe(200)
    expect(res.body.id).toBe(p.id)
    expect(res.body.secretKey).toMatch(/^sk_[0-9a-f]{64}$/)
    expect(res.body.publicKey).toMatch(/^pk_[0-9a-f]{64}$/)
    expect(res.body.secretKey).not.toBe(p.secretKey)
    expect(res.body.publicKey).not.toBe(p.publicKey)

    const oldSecret = await env.request('GET', '/contacts?limit=1', { key: p.secretKey })
    expect(oldSecret.status).toBe(401)
    expect(oldSecret.body.error.code).toBe('INVALID_API_KEY')
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'x' } })).status).toBe(401)
    expect(await projectForKey(env.deps.store, p.secretKey)).toBeNull()
    expect(await projectForKey(env.deps.store, p.publicKey)).toBeNull()
    expect((await projectForKey(env.deps.store, res.body.secretKey))?.project.id).toBe(p.id)
    expect((await env.request('GET', '/contacts?limit=1', { key: res.body.secretKey })).status).toBe(200)
    expect((await env.request('POST', '/v1/track', { key: res.body.publicKey, body: { email: 'a@example.com', event: 'x' } })).status).toBe(200)
  })

  test('regenerate-keys: ADMIN may, MEMBER 403 (keys unchanged)', async () => {
    const p = await ownedProject(env, owner)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    expect((await env.request('POST', `/users/@me/projects/${p.id}/regenerate-keys`, { cookie: admin.cookie })).status).toBe(200)
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const before = (await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })).body.find((x: { id: string }) => x.id === p.id).publicKey
    const res = await env.request('POST', `/users/@me/projects/${p.id}/regenerate-keys`, { cookie: member.cookie })
    expect(res.status).toBe(403)
    const after = (await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })).body.find((x: { id: string }) => x.id === p.id).publicKey
    expect(after).toBe(before)
  })

  test('reset: wipes the project data in every registered table, keeps keys, team and other projects', async () => {
    const p = await ownedProject(env, owner)
    const other = await ownedProject(env, owner)
    await addContact(env, p.secretKey)
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'r@example.com', event: 'visited' } })
    const otherContact = await addContact(env, other.secretKey)
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const before = await env.request('GET', '/contacts', { key: p.secretKey })
    expect(before.body.data.length).toBe(2)

    const res = await env.request('POST', `/users/@me/projects/${p.id}/reset`, { cookie: owner.cookie })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: p.id, role: 'OWNER' })
    for (const table of PROJECT_DATA_TABLES) {
      const rows = await env.store.rows<{ n: number | string }>(sql`SELECT COUNT(*) AS n FROM ${sql.identifier(table)} WHERE project_id = ${p.id}`)
      expect({ table, n: Number(rows[0].n) }).toEqual({ table, n: 0 })
    }
    const after = await env.request('GET', '/contacts', { key: p.secretKey })
    expect(after.status).toBe(200)
    expect(after.body.data).toEqual([])
    expect((await env.request('GET', `/contacts/${otherContact}`, { key: other.secretKey })).status).toBe(200)
    const team = await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })
    expect(team.body.map((m: { email: string }) => m.email)).toContain(member.email)
  })

  test('reset and delete: OWNER only (ADMIN and MEMBER 403)', async () => {
    const p = await ownedProject(env, owner)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const contact = await addContact(env, p.secretKey)
    for (const u of [admin, member]) {
      expect((await env.request('POST', `/users/@me/projects/${p.id}/reset`, { cookie: u.cookie })).status).toBe(403)
      expect((await env.request('DELETE', `/users/@me/projects/${p.id}`, { cookie: u.cookie })).status).toBe(403)
    }
    expect((await env.request('GET', `/contacts/${contact}`, { key: p.secretKey })).status).toBe(200)
  })

  test('delete: 204, then the project and its keys are gone', async () => {
    const p = await ownedProject(env, owner)
    await addContact(env, p.secretKey)
    const res = await env.request('DELETE', `/users/@me/projects/${p.id}`, { cookie: owner.cookie })
    expect(res.status).toBe(204)
    expect(res.text).toBe('')
    expect((await env.request('GET', '/contacts', { key: p.secretKey })).status).toBe(401)
    expect((await env.request('PATCH', `/users/@me/projects/${p.id}`, { cookie: owner.cookie, body: { name: 'x' } })).status).toBe(404)
    expect((await env.request('DELETE', `/users/@me/projects/${p.id}`, { cookie: owner.cookie })).status).toBe(404)
    const { contacts } = env.store.t
    expect(await env.store.db.select().from(contacts).where(eq(contacts.projectId, p.id))).toEqual([])
  })
})

forEachStore('/projects/:id/setup-state', (env) => {
  test('steps turn done as the project gets data; any member may read; others 404', async () => {
    const owner = await verifiedUser(env, 'setup')
    const p = await ownedProject(env, owner)
    const first = await env.request('GET', `/projects/${p.id}/setup-state`, { cookie: owner.cookie })
    expect(first.status).toBe(200)
    expect(first.body.projectId).toBe(p.id)
    const done = (body: { steps: Array<{ id: string; done: boolean }> }) => Object.fromEntries(body.steps.map((s) => [s.id, s.done]))
    expect(done(first.body)).toMatchObject({ project: true, domain: false, contact: false, event: false })
    expect(first.body.completed).toBe(false)
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 's@example.com', event: 'signed-up' } })
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const second = await env.request('GET', `/projects/${p.id}/setup-state`, { cookie: member.cookie })
    expect(second.status).toBe(200)
    expect(done(second.body)).toMatchObject({ project: true, domain: false, contact: true, event: true })
    expect(second.body.completed).toBe(false)
    // Verifying a sending domain is a step (issue 37, item 6): an unverified domain does not count.
    const added = await env.request('POST', '/domains', { key: p.secretKey, body: { projectId: p.id, domain: 'setup.example.com' } })
    expect(added.status).toBe(201)
    expect(done((await env.request('GET', `/projects/${p.id}/setup-state`, { cookie: owner.cookie })).body)).toMatchObject({ domain: false })
    const now = new Date()
    await env.deps.store.tx((db) => domainsRepo.saveCheck(env.deps.store, db, p.id, added.body.id, { verified: true, checks: {}, lastCheckedAt: now, verifiedAt: now, updatedAt: now }))
    const third = await env.request('GET', `/projects/${p.id}/setup-state`, { cookie: owner.cookie })
    expect(done(third.body)).toMatchObject({ project: true, domain: true, contact: true, event: true })
    expect(third.body.completed).toBe(true)
    const stranger = await verifiedUser(env, 'stranger')
    expect((await env.request('GET', `/projects/${p.id}/setup-state`, { cookie: stranger.cookie })).status).toBe(404)
    expect((await env.request('GET', `/projects/${p.id}/setup-state`)).status).toBe(401)
    expect((await env.request('GET', `/projects/${p.id}/setup-state`, { key: p.secretKey })).status).toBe(401)
  })
})

forEachStore('tenancy: project A cannot reach project B', (env) => {
  test("A's user gets 404 on every dashboard route of B, and nothing of B changes", async () => {
    const alice = await verifiedUser(env, 'alice')
    const bob = await verifiedUser(env, 'bob')
    const a = await ownedProject(env, alice, 'A')
    const b = await ownedProject(env, bob, 'B')
    const bobMate = await memberOf(env, bob, b.id, 'MEMBER')
    const c = alice.cookie
    const tries = [
      await env.request('PATCH', `/users/@me/projects/${b.id}`, { cookie: c, body: { name: 'pwned' } }),
      await env.request('POST', `/users/@me/projects/${b.id}/regenerate-keys`, { cookie: c }),
      await env.request('POST', `/users/@me/projects/${b.id}/reset`, { cookie: c }),
      await env.request('DELETE', `/users/@me/projects/${b.id}`, { cookie: c }),
      await env.request('GET', `/projects/${b.id}/setup-state`, { cookie: c }),
      await env.request('GET', `/projects/${b.id}/members`, { cookie: c }),
      await env.request('POST', `/projects/${b.id}/members`, { cookie: c, body: { email: alice.email, role: 'ADMIN' } }),
      await env.request('PATCH', `/projects/${b.id}/members/${bobMate.id}`, { cookie: c, body: { role: 'ADMIN' } }),
      await env.request('DELETE', `/projects/${b.id}/members/${bobMate.id}`, { cookie: c }),
      await env.request('DELETE', `/projects/${b.id}/members/${bob.id}`, { cookie: c }),
    ]
    for (const r of tries) {
      expect(r.status).toBe(404)
      expect(r.body.error.code).toBe('NOT_FOUND')
    }
    const list = await env.request('GET', '/users/@me/projects', { cookie: c })
    expect(list.body.map((p: { id: string }) => p.id)).toEqual([a.id])
    const bobs = (await env.request('GET', '/users/@me/projects', { cookie: bob.cookie })).body[0]
    expect(bobs).toMatchObject({ id: b.id, name: 'B', publicKey: b.publicKey })
    expect((await env.request('GET', '/contacts?limit=1', { key: b.secretKey })).status).toBe(200)
    const team = (await env.request('GET', `/projects/${b.id}/members`, { cookie: bob.cookie })).body
    expect(team.map((m: { email: string; role: string }) => `${m.email}:${m.role}`).sort()).toEqual([`${bob.email}:OWNER`, `${bobMate.email}:MEMBER`].sort())
  })

  test("A's key cannot read or change B's contacts (404), and lists only A's data", async () => {
    const a = await env.project('key-A')
    const b = await env.project('key-B')
    const bContact = await addContact(env, b.secretKey, 'b-only@example.com')
    expect((await env.request('GET', `/contacts/${bContact}`, { key: a.secretKey })).status).toBe(404)
    expect((await env.request('PATCH', `/contacts/${bContact}`, { key: a.secretKey, body: { subscribed: false } })).status).toBe(404)
    expect((await env.request('DELETE', `/contacts/${bContact}`, { key: a.secretKey })).status).toBe(404)
    const listA = await env.request('GET', '/contacts', { key: a.secretKey })
    expect(listA.body.data).toEqual([])
    const stillB = await env.request('GET', `/contacts/${bContact}`, { key: b.secretKey })
    expect(stillB.status).toBe(200)
    expect(stillB.body.subscribed).toBe(true)
  })
})
