import { beforeEach, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { cookieFrom, lastMail, memberOf, ownedProject, tokenIn, uniqueEmail, verifiedUser, type TestUser } from '../../helpers/accounts'

forEachStore('/projects/:id/members', (env) => {
  let owner: TestUser
  // A fresh owner per test: no test depends on what another left behind.
  beforeEach(async () => { owner = await verifiedUser(env, 'owner') })

  test('list: the owner alone at first; 401 without a session', async () => {
    const p = await ownedProject(env, owner)
    const res = await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })
    expect(res.status).toBe(200)
    expect(res.body).toEqual([{ id: owner.id, userId: owner.id, email: owner.email, name: null, role: 'OWNER', status: 'active', createdAt: expect.any(String) }])
    expect((await env.request('GET', `/projects/${p.id}/members`)).status).toBe(401)
    expect((await env.request('GET', `/projects/${p.id}/members`, { key: p.secretKey })).status).toBe(401)
  })

  test('invite: a pending invitation whether or not the address has an account; the same answer shape either way; membership only on acceptance', async () => {
    const p = await ownedProject(env, owner, 'Team project')
    const u = await verifiedUser(env, 'joiner')
    const unknown = uniqueEmail('nobody')
    const a = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: u.email.toUpperCase(), role: 'ADMIN' } })
    const b = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: unknown, role: 'ADMIN' } })
    for (const [res, email] of [[a, u.email], [b, unknown]] as const) {
      expect(res.status).toBe(201)
      expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'email', 'expiresAt', 'id', 'name', 'role', 'status', 'userId'])
      expect(res.body).toMatchObject({ userId: null, name: null, email, role: 'ADMIN', status: 'invited' })
      expect(res.body.id).not.toBe(u.id)
      const mail = await lastMail(env, email, 'invitation')
      expect(mail?.text).toContain('/app/invitations?token=')
      expect(mail?.subject).toBe(`${owner.email} invited you to a project on mailctl`)
    }
    // The two mails differ only in the address and the token.
    const strip = (t: string | null | undefined, email: string) => (t ?? '').replaceAll(email, 'X').replace(/token=[\w-]+/, 'token=T')
    expect(strip((await lastMail(env, u.email, 'invitation'))?.text, u.email)).toBe(strip((await lastMail(env, unknown, 'invitation'))?.text, unknown))
    // Not a member yet: no project for them, no access, and the team lists the invitation as pending.
    expect((await env.request('GET', '/users/@me/projects', { cookie: u.cookie })).body).toEqual([])
    expect((await env.request('GET', `/projects/${p.id}/members`, { cookie: u.cookie })).status).toBe(404)
    expect((await env.request('GET', '/contacts', { cookie: u.cookie, headers: { 'x-project-id': p.id } })).status).toBe(404)
    const team = (await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body
    expect(team.map((m: { email: string; status: string }) => `${m.email}:${m.status}`)).toEqual([`${owner.email}:active`, `${u.email}:invited`, `${unknown}:invited`])

    const mine = await env.request('GET', '/users/@me/invitations', { cookie: u.cookie })
    expect(mine.status).toBe(200)
    expect(mine.body).toEqual([{ id: a.body.id, projectId: p.id, projectName: 'Team project', role: 'ADMIN', invitedBy: owner.email, createdAt: expect.any(String), expiresAt: expect.any(String) }])
    const accepted = await env.request('POST', `/users/@me/invitations/${a.body.id}/accept`, { cookie: u.cookie })
    expect(accepted.status).toBe(200)
    expect(accepted.body).toEqual({ projectId: p.id, role: 'ADMIN' })
    const theirs = await env.request('GET', '/users/@me/projects', { cookie: u.cookie })
    expect(theirs.body.map((x: { id: string; role: string }) => `${x.id}:${x.role}`)).toEqual([`${p.id}:ADMIN`])
    expect((await env.request('GET', '/users/@me/invitations', { cookie: u.cookie })).body).toEqual([])
    // Answered: accepting again is 404; inviting a member is 409.
    expect((await env.request('POST', `/users/@me/invitations/${a.body.id}/accept`, { cookie: u.cookie })).status).toBe(404)
    const again = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: u.email } })
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('CONFLICT')
    expect((await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: owner.email } })).status).toBe(409)
  })

  test('an unknown address: signing up and verifying joins nothing; the invitation waits in the list, and the link works', async () => {
    const p = await ownedProject(env, owner)
    const email = uniqueEmail('invitee')
    const res = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email } })
    expect(res.status).toBe(201)
    const token = tokenIn((await lastMail(env, email, 'invitation'))?.text)
    expect((await env.request('POST', '/auth/signup', { body: { email, password: 'invitee password' } })).status).toBe(202)
    const cookie = cookieFrom((await env.request('POST', '/auth/login', { body: { email, password: 'invitee password' } })).headers)
    // Unverified: no invitations listed, none answerable by id.
    expect((await env.request('GET', '/users/@me/invitations', { cookie })).body).toEqual([])
    expect((await env.request('POST', `/users/@me/invitations/${res.body.id}/accept`, { cookie })).status).toBe(404)
    const verify = tokenIn((await lastMail(env, email, 'verify-email'))?.text)
    expect((await env.request('POST', '/auth/verify-email', { body: { token: verify } })).status).toBe(200)
    expect((await env.request('GET', '/users/@me/projects', { cookie })).body).toEqual([])
    expect((await env.request('GET', '/users/@me/invitations', { cookie })).body.map((i: { id: string }) => i.id)).toEqual([res.body.id])
    // The emailed link accepts it.
    const accepted = await env.request('POST', '/users/@me/invitations/accept', { cookie, body: { token } })
    expect(accepted.status).toBe(200)
    expect(accepted.body).toEqual({ projectId: p.id, role: 'MEMBER' })
    const after = (await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body
    expect(after.map((m: { email: string; status: string }) => `${m.email}:${m.status}`)).toEqual([`${owner.email}:active`, `${email}:active`])
    expect((await env.request('POST', '/users/@me/invitations/accept', { cookie, body: { token } })).status).toBe(404)
  })

  test('invite validation: 422 for a bad address or role (OWNER cannot be invited)', async () => {
    const p = await ownedProject(env, owner)
    for (const body of [{ email: 'nope' }, {}, { email: uniqueEmail(), role: 'OWNER' }, { email: uniqueEmail(), role: 'GOD' }]) {
      const res = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body })
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe('VALIDATION_ERROR')
    }
  })

  test('a MEMBER may read the team but not invite, change roles or remove others (403)', async () => {
    const p = await ownedProject(env, owner)
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    expect((await env.request('GET', `/projects/${p.id}/members`, { cookie: member.cookie })).status).toBe(200)
    const tries = [
      await env.request('POST', `/projects/${p.id}/members`, { cookie: member.cookie, body: { email: uniqueEmail() } }),
      await env.request('PATCH', `/projects/${p.id}/members/${admin.id}`, { cookie: member.cookie, body: { role: 'MEMBER' } }),
      await env.request('PATCH', `/projects/${p.id}/members/${member.id}`, { cookie: member.cookie, body: { role: 'ADMIN' } }),
      await env.request('DELETE', `/projects/${p.id}/members/${admin.id}`, { cookie: member.cookie }),
    ]
    for (const r of tries) {
      expect(r.status).toBe(403)
      expect(r.body.error.code).toBe('FORBIDDEN')
    }
  })

  test('change role: ADMIN may demote and promote between ADMIN and MEMBER; never touch the owner', async () => {
    const p = await ownedProject(env, owner)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const up = await env.request('PATCH', `/projects/${p.id}/members/${member.id}`, { cookie: admin.cookie, body: { role: 'ADMIN' } })
    expect(up.status).toBe(200)
    expect(up.body).toMatchObject({ userId: member.id, role: 'ADMIN', status: 'active' })
    const demoteOwner = await env.request('PATCH', `/projects/${p.id}/members/${owner.id}`, { cookie: admin.cookie, body: { role: 'MEMBER' } })
    expect(demoteOwner.status).toBe(403)
    const grab = await env.request('PATCH', `/projects/${p.id}/members/${admin.id}`, { cookie: admin.cookie, body: { role: 'OWNER' } })
    expect(grab.status).toBe(403)
    expect((await env.request('PATCH', `/projects/${p.id}/members/${member.id}`, { cookie: admin.cookie, body: { role: 'BOSS' } })).status).toBe(422)
    expect((await env.request('PATCH', `/projects/${p.id}/members/${Bun.randomUUIDv7()}`, { cookie: admin.cookie, body: { role: 'MEMBER' } })).status).toBe(404)
    const roles = (await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body
    expect(Object.fromEntries(roles.map((m: { userId: string; role: string }) => [m.userId, m.role]))).toEqual({ [owner.id]: 'OWNER', [admin.id]: 'ADMIN', [member.id]: 'ADMIN' })
  })

  test('ownership transfer: only the owner; the previous owner becomes ADMIN; the owner cannot just demote themselves', async () => {
    const p = await ownedProject(env, owner)
    const heir = await memberOf(env, owner, p.id, 'MEMBER')
    const self = await env.request('PATCH', `/projects/${p.id}/members/${owner.id}`, { cookie: owner.cookie, body: { role: 'ADMIN' } })
    expect(self.status).toBe(409)
    const res = await env.request('PATCH', `/projects/${p.id}/members/${heir.id}`, { cookie: owner.cookie, body: { role: 'OWNER' } })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ userId: heir.id, role: 'OWNER' })
    const roles = (await env.request('GET', `/projects/${p.id}/members`, { cookie: heir.cookie })).body
    expect(Object.fromEntries(roles.map((m: { userId: string; role: string }) => [m.userId, m.role]))).toEqual({ [owner.id]: 'ADMIN', [heir.id]: 'OWNER' })
    // The former owner is now an ADMIN: no more deleting the project.
    expect((await env.request('DELETE', `/users/@me/projects/${p.id}`, { cookie: owner.cookie })).status).toBe(403)
    expect((await env.request('DELETE', `/users/@me/projects/${p.id}`, { cookie: heir.cookie })).status).toBe(204)
  })

  test('remove: ADMIN removes a member (who loses access at once); the owner cannot be removed or leave; others may leave', async () => {
    const p = await ownedProject(env, owner)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const leaver = await memberOf(env, owner, p.id, 'MEMBER', 'leaver')
    const res = await env.request('DELETE', `/projects/${p.id}/members/${member.id}`, { cookie: admin.cookie })
    expect(res.status).toBe(204)
    expect((await env.request('GET', `/projects/${p.id}/setup-state`, { cookie: member.cookie })).status).toBe(404)
    expect((await env.request('GET', '/users/@me/projects', { cookie: member.cookie })).body).toEqual([])
    expect((await env.request('DELETE', `/projects/${p.id}/members/${member.id}`, { cookie: admin.cookie })).status).toBe(404)
    const removeOwner = await env.request('DELETE', `/projects/${p.id}/members/${owner.id}`, { cookie: admin.cookie })
    expect(removeOwner.status).toBe(403)
    const ownerLeaves = await env.request('DELETE', `/projects/${p.id}/members/${owner.id}`, { cookie: owner.cookie })
    expect(ownerLeaves.status).toBe(409)
    expect((await env.request('DELETE', `/projects/${p.id}/members/${leaver.id}`, { cookie: leaver.cookie })).status).toBe(204)
    const team = (await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body
    expect(team.map((m: { userId: string }) => m.userId).sort()).toEqual([owner.id, admin.id].sort())
  })

  test('invitations: role change and revocation by invitation id; a revoked invitation cannot be accepted by link or in the list', async () => {
    const p = await ownedProject(env, owner)
    const u = await verifiedUser(env, 'revoked')
    const inv = (await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: u.email } })).body
    const token = tokenIn((await lastMail(env, u.email, 'invitation'))?.text)
    const changed = await env.request('PATCH', `/projects/${p.id}/members/${inv.id}`, { cookie: owner.cookie, body: { role: 'ADMIN' } })
    expect(changed.status).toBe(200)
    expect(changed.body).toMatchObject({ id: inv.id, status: 'invited', role: 'ADMIN' })
    expect((await env.request('GET', '/users/@me/invitations', { cookie: u.cookie })).body[0]).toMatchObject({ id: inv.id, role: 'ADMIN' })
    expect((await env.request('PATCH', `/projects/${p.id}/members/${inv.id}`, { cookie: owner.cookie, body: { role: 'OWNER' } })).status).toBe(409)
    expect((await env.request('DELETE', `/projects/${p.id}/members/${inv.id}`, { cookie: owner.cookie })).status).toBe(204)
    expect((await env.request('GET', '/users/@me/invitations', { cookie: u.cookie })).body).toEqual([])
    expect((await env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body: { token } })).status).toBe(404)
    expect((await env.request('POST', `/users/@me/invitations/${inv.id}/accept`, { cookie: u.cookie })).status).toBe(404)
    expect((await env.request('GET', '/users/@me/projects', { cookie: u.cookie })).body).toEqual([])
    expect((await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body.map((m: { email: string }) => m.email)).toEqual([owner.email])
  })
})
