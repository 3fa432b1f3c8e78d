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

  test('invite a verified account: it joins at once, is told by mail, and sees the project', async () => {
    const p = await ownedProject(env, owner, 'Team project')
    const u = await verifiedUser(env, 'joiner')
    const res = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: u.email.toUpperCase(), role: 'ADMIN' } })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ id: u.id, userId: u.id, email: u.email, role: 'ADMIN', status: 'active' })
    const mail = await lastMail(env, u.email, 'invitation')
    expect(mail?.subject).toContain('Team project')
    const theirs = await env.request('GET', '/users/@me/projects', { cookie: u.cookie })
    expect(theirs.body.map((x: { id: string; role: string }) => `${x.id}:${x.role}`)).toEqual([`${p.id}:ADMIN`])
    const again = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: u.email } })
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('CONFLICT')
    expect((await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email: owner.email } })).status).toBe(409)
  })

  test('invite an unknown address: a pending invitation, accepted when that address signs up and verifies', async () => {
    const p = await ownedProject(env, owner)
    const email = uniqueEmail('invitee')
    const res = await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email } })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ userId: null, email, role: 'MEMBER', status: 'invited', expiresAt: expect.any(String) })
    expect((await lastMail(env, email, 'invitation'))?.text).toContain('/signup?email=')
    const team = (await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body
    expect(team.map((m: { email: string; status: string }) => `${m.email}:${m.status}`)).toEqual([`${owner.email}:active`, `${email}:invited`])

    expect((await env.request('POST', '/auth/signup', { body: { email, password: 'invitee password' } })).status).toBe(202)
    const cookie = cookieFrom((await env.request('POST', '/auth/login', { body: { email, password: 'invitee password' } })).headers)
    // Not yet: the address is unverified, so the invitation is not claimed by whoever signed up with it.
    expect((await env.request('GET', '/users/@me/projects', { cookie })).body).toEqual([])
    expect((await env.request('GET', `/projects/${p.id}/members`, { cookie })).status).toBe(404)
    const token = tokenIn((await lastMail(env, email, 'verify-email'))?.text)
    expect((await env.request('POST', '/auth/verify-email', { body: { token } })).status).toBe(200)
    const mine = (await env.request('GET', '/users/@me/projects', { cookie })).body
    expect(mine.map((x: { id: string; role: string }) => `${x.id}:${x.role}`)).toEqual([`${p.id}:MEMBER`])
    const after = (await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body
    expect(after.map((m: { email: string; status: string }) => `${m.email}:${m.status}`)).toEqual([`${owner.email}:active`, `${email}:active`])
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

  test('invitations: role change and cancellation by invitation id; a cancelled invitation is not accepted later', async () => {
    const p = await ownedProject(env, owner)
    const email = uniqueEmail('cancelled')
    const inv = (await env.request('POST', `/projects/${p.id}/members`, { cookie: owner.cookie, body: { email } })).body
    const changed = await env.request('PATCH', `/projects/${p.id}/members/${inv.id}`, { cookie: owner.cookie, body: { role: 'ADMIN' } })
    expect(changed.status).toBe(200)
    expect(changed.body).toMatchObject({ id: inv.id, status: 'invited', role: 'ADMIN' })
    expect((await env.request('PATCH', `/projects/${p.id}/members/${inv.id}`, { cookie: owner.cookie, body: { role: 'OWNER' } })).status).toBe(409)
    expect((await env.request('DELETE', `/projects/${p.id}/members/${inv.id}`, { cookie: owner.cookie })).status).toBe(204)
    await env.request('POST', '/auth/signup', { body: { email, password: 'cancelled password' } })
    const signup = await env.request('POST', '/auth/login', { body: { email, password: 'cancelled password' } })
    const token = tokenIn((await lastMail(env, email, 'verify-email'))?.text)
    await env.request('POST', '/auth/verify-email', { body: { token } })
    expect((await env.request('GET', '/users/@me/projects', { cookie: cookieFrom(signup.headers) })).body).toEqual([])
  })
})
