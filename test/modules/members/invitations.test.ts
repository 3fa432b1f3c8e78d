import { createHash } from 'node:crypto'
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { cookieFrom, inviteToken, lastMail, memberOf, ownedProject, uniqueEmail, verifiedUser } from '../../helpers/accounts'

/** Issue 35, item 4: invitations are offers; only the invitee's answer makes a membership. */
forEachStore('/users/@me/invitations', (env) => {
  const ROUTES: Array<[string, string, unknown?]> = [
    ['GET', '/users/@me/invitations'],
    ['POST', '/users/@me/invitations/accept', { token: 'x'.repeat(43) }],
    ['POST', `/users/@me/invitations/${crypto.randomUUID()}/accept`],
    ['POST', `/users/@me/invitations/${crypto.randomUUID()}/decline`],
  ]

  test('no session, or a key instead of one: 401 on every invitee route', async () => {
    const p = await env.project()
    for (const [method, path, body] of ROUTES) {
      for (const r of [await env.request(method, path, { body }), await env.request(method, path, { body, key: p.secretKey }), await env.request(method, path, { body, key: p.publicKey })]) {
        expect(r.status).toBe(401)
        expect(r.body.error.code).toBe('UNAUTHORIZED')
      }
    }
  })

  test('the token is stored only as its SHA-256; inviting again renews it and the old link stops working', async () => {
    const owner = await verifiedUser(env, 'hash-owner')
    const p = await ownedProject(env, owner)
    const u = await verifiedUser(env, 'hash-invitee')
    const first = await inviteToken(env, owner, p.id, u.email)
    const { invitations } = env.store.t
    const [row] = await env.store.db.select().from(invitations).where(eq(invitations.id, first.id))
    expect(row.tokenHash).toBe(createHash('sha256').update(first.token).digest('hex'))
    expect(JSON.stringify(row)).not.toContain(first.token)
    const second = await inviteToken(env, owner, p.id, u.email, 'ADMIN')
    expect(second.id).toBe(first.id)
    expect(second.token).not.toBe(first.token)
    expect((await env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body: { token: first.token } })).status).toBe(404)
    const ok = await env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body: { token: second.token } })
    expect(ok.body).toEqual({ projectId: p.id, role: 'ADMIN' })
  })

  test("someone else's invitation: 404 by id and by a leaked token, and it stays pending for its invitee", async () => {
    const owner = await verifiedUser(env, 'leak-owner')
    const p = await ownedProject(env, owner)
    const invitee = await verifiedUser(env, 'leak-invitee')
    const thief = await verifiedUser(env, 'leak-thief')
    const inv = await inviteToken(env, owner, p.id, invitee.email)
    for (const r of [
      await env.request('POST', '/users/@me/invitations/accept', { cookie: thief.cookie, body: { token: inv.token } }),
      await env.request('POST', `/users/@me/invitations/${inv.id}/accept`, { cookie: thief.cookie }),
      await env.request('POST', `/users/@me/invitations/${inv.id}/decline`, { cookie: thief.cookie }),
      // The inviter cannot answer for the invitee either.
      await env.request('POST', `/users/@me/invitations/${inv.id}/accept`, { cookie: owner.cookie }),
      await env.request('POST', '/users/@me/invitations/accept', { cookie: owner.cookie, body: { token: inv.token } }),
    ]) {
      expect(r.status).toBe(404)
      expect(r.body.error.code).toBe('NOT_FOUND')
    }
    expect((await env.request('GET', '/users/@me/invitations', { cookie: thief.cookie })).body).toEqual([])
    expect((await env.request('GET', '/users/@me/projects', { cookie: thief.cookie })).body).toEqual([])
    expect((await env.request('GET', '/users/@me/invitations', { cookie: invitee.cookie })).body.map((i: { id: string }) => i.id)).toEqual([inv.id])
  })

  test('decline: 204, the invitation is gone for both sides; a second answer is 404', async () => {
    const owner = await verifiedUser(env, 'decl-owner')
    const p = await ownedProject(env, owner)
    const u = await verifiedUser(env, 'decl-invitee')
    const inv = await inviteToken(env, owner, p.id, u.email)
    expect((await env.request('POST', `/users/@me/invitations/${inv.id}/decline`, { cookie: u.cookie })).status).toBe(204)
    expect((await env.request('GET', '/users/@me/invitations', { cookie: u.cookie })).body).toEqual([])
    expect((await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body.map((m: { email: string }) => m.email)).toEqual([owner.email])
    expect((await env.request('POST', `/users/@me/invitations/${inv.id}/decline`, { cookie: u.cookie })).status).toBe(404)
    expect((await env.request('POST', `/users/@me/invitations/${inv.id}/accept`, { cookie: u.cookie })).status).toBe(404)
    expect((await env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body: { token: inv.token } })).status).toBe(404)
  })

  test('an expired invitation is not listed and cannot be accepted', async () => {
    const owner = await verifiedUser(env, 'exp-owner')
    const p = await ownedProject(env, owner)
    const u = await verifiedUser(env, 'exp-invitee')
    const inv = await inviteToken(env, owner, p.id, u.email)
    const { invitations } = env.store.t
    await env.store.tx((db) => db.update(invitations).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(invitations.id, inv.id)))
    expect((await env.request('GET', '/users/@me/invitations', { cookie: u.cookie })).body).toEqual([])
    expect((await env.request('POST', `/users/@me/invitations/${inv.id}/accept`, { cookie: u.cookie })).status).toBe(404)
    expect((await env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body: { token: inv.token } })).status).toBe(404)
    expect((await env.request('GET', '/users/@me/projects', { cookie: u.cookie })).body).toEqual([])
  })

  test('two concurrent acceptances make one membership', async () => {
    const owner = await verifiedUser(env, 'race-owner')
    const p = await ownedProject(env, owner)
    const u = await verifiedUser(env, 'race-invitee')
    const inv = await inviteToken(env, owner, p.id, u.email)
    const answers = await Promise.all([
      env.request('POST', `/users/@me/invitations/${inv.id}/accept`, { cookie: u.cookie }),
      env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body: { token: inv.token } }),
    ])
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404])
    const team = (await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body
    expect(team.map((m: { email: string; status: string }) => `${m.email}:${m.status}`)).toEqual([`${owner.email}:active`, `${u.email}:active`])
  })

  test('the link proves the address: an unverified account of that address accepts with it and becomes verified', async () => {
    const owner = await verifiedUser(env, 'link-owner')
    const p = await ownedProject(env, owner)
    const email = uniqueEmail('link-unverified')
    await env.request('POST', '/auth/signup', { body: { email, password: 'link invitee password' } })
    const cookie = cookieFrom((await env.request('POST', '/auth/login', { body: { email, password: 'link invitee password' } })).headers)
    const inv = await inviteToken(env, owner, p.id, email)
    expect((await env.request('GET', '/users/@me', { cookie })).body.emailVerified).toBe(false)
    expect((await env.request('POST', '/users/@me/invitations/accept', { cookie, body: { token: inv.token } })).status).toBe(200)
    expect((await env.request('GET', '/users/@me', { cookie })).body.emailVerified).toBe(true)
    expect((await env.request('GET', '/users/@me/projects', { cookie })).body.map((x: { id: string }) => x.id)).toEqual([p.id])
  })

  test('validation: a missing, empty or oversized token is 422', async () => {
    const u = await verifiedUser(env, 'val')
    for (const body of [{}, { token: '' }, { token: 'x'.repeat(201) }, { token: 5 }]) {
      const r = await env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body })
      expect(r.status).toBe(422)
      expect(r.body.error.code).toBe('VALIDATION_ERROR')
    }
  })

  test('inviting: an unverified inviter 403 (no mail); MEMBER 403; non-member 404; another project\'s invitation id 404', async () => {
    const owner = await verifiedUser(env, 'rules-owner')
    const p = await ownedProject(env, owner)
    const q = await ownedProject(env, await verifiedUser(env, 'rules-other'))
    const email = uniqueEmail('fresh')
    await env.request('POST', '/auth/signup', { body: { email, password: 'fresh signup password' } })
    const fresh = cookieFrom((await env.request('POST', '/auth/login', { body: { email, password: 'fresh signup password' } })).headers)
    const own = (await env.request('POST', '/users/@me/projects', { cookie: fresh, body: { name: 'Your bank: verify your account' } })).body
    const target = await verifiedUser(env, 'rules-target')
    const r = await env.request('POST', `/projects/${own.id}/members`, { cookie: fresh, body: { email: target.email, role: 'ADMIN' } })
    expect(r.status).toBe(403)
    expect(r.body.error.code).toBe('FORBIDDEN')
    expect(await lastMail(env, target.email, 'invitation')).toBeUndefined()

    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    expect((await env.request('POST', `/projects/${p.id}/members`, { cookie: member.cookie, body: { email: uniqueEmail() } })).status).toBe(403)
    expect((await env.request('POST', `/projects/${p.id}/members`, { cookie: target.cookie, body: { email: uniqueEmail() } })).status).toBe(404)
    const byAdmin = await env.request('POST', `/projects/${p.id}/members`, { cookie: admin.cookie, body: { email: uniqueEmail('by-admin') } })
    expect(byAdmin.status).toBe(201)
    // Another project's invitation cannot be revoked or changed through this project.
    const other = (await env.request('POST', `/projects/${q.id}/members`, { cookie: (await verifiedUser(env, 'x')).cookie, body: { email: uniqueEmail() } }))
    expect(other.status).toBe(404)
    expect((await env.request('DELETE', `/projects/${p.id}/members/${byAdmin.body.id}`, { cookie: member.cookie })).status).toBe(403)
    const foreign = await inviteToken(env, owner, p.id, uniqueEmail('foreign'))
    const qOwner = await verifiedUser(env, 'q-owner')
    const q2 = await ownedProject(env, qOwner)
    expect((await env.request('DELETE', `/projects/${q2.id}/members/${foreign.id}`, { cookie: qOwner.cookie })).status).toBe(404)
    expect((await env.request('PATCH', `/projects/${q2.id}/members/${foreign.id}`, { cookie: qOwner.cookie, body: { role: 'ADMIN' } })).status).toBe(404)
    expect((await env.request('GET', `/projects/${p.id}/members`, { cookie: owner.cookie })).body.some((m: { id: string }) => m.id === foreign.id)).toBe(true)
  })

  test("the project's name is the inviter's text: kept out of the subject, one line in the body, as it is in the API", async () => {
    const owner = await verifiedUser(env, 'name-owner')
    const name = 'Payroll\r\nBcc: victim@example.com <b>urgent</b>'
    const p = await ownedProject(env, owner, name)
    const u = await verifiedUser(env, 'name-invitee')
    await inviteToken(env, owner, p.id, u.email)
    const mail = await lastMail(env, u.email, 'invitation')
    expect(mail?.subject).not.toContain('Payroll')
    expect(mail?.text).toContain('"Payroll Bcc: victim@example.com <b>urgent</b>"')
    expect(mail?.text).toContain('mailctl does not vouch for it')
    const listed = (await env.request('GET', '/users/@me/invitations', { cookie: u.cookie })).body
    expect(listed[0].projectName).toBe(name)
  })
})
