import { beforeEach, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'
import { insertTestDomain } from '../../helpers/domains'

/**
 * The project's sender defaults (issue 37, item 4): defaultFrom (on a verified domain of the project),
 * defaultFromName and defaultReplyTo, set with PATCH /users/@me/projects/:id and read with the project; the
 * dashboard fills new templates and campaigns from them. Happy, error and security cases on both stores.
 */
forEachStore('project sender defaults', (env) => {
  let owner: TestUser
  beforeEach(async () => { owner = await verifiedUser(env, 'owner') })
  const patch = (cookie: string | undefined, id: string, body: unknown) => env.request('PATCH', `/users/@me/projects/${id}`, { cookie, body })

  test('set, read with the project, change one alone, clear with null', async () => {
    const p = await ownedProject(env, owner)
    await insertTestDomain(env, p.id, 'defaults.test', { verified: true, allowSubdomains: true })
    const res = await patch(owner.cookie, p.id, { defaultFrom: 'News@Defaults.test', defaultFromName: 'Acme news', defaultReplyTo: 'Help@Example.org' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ defaultFrom: 'news@defaults.test', defaultFromName: 'Acme news', defaultReplyTo: 'help@example.org' })
    const list = (await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })).body as Array<Record<string, unknown>>
    expect(list.find((x) => x.id === p.id)).toMatchObject({ defaultFrom: 'news@defaults.test', defaultFromName: 'Acme news', defaultReplyTo: 'help@example.org' })
    // A subdomain of a verified domain that allows them, as for templates; the other defaults stay.
    const sub = await patch(owner.cookie, p.id, { defaultFrom: 'hi@mail.defaults.test' })
    expect(sub.status).toBe(200)
    expect(sub.body).toMatchObject({ defaultFrom: 'hi@mail.defaults.test', defaultFromName: 'Acme news', defaultReplyTo: 'help@example.org' })
    const cleared = await patch(owner.cookie, p.id, { defaultFrom: null, defaultFromName: null, defaultReplyTo: null })
    expect(cleared.body).toMatchObject({ defaultFrom: null, defaultFromName: null, defaultReplyTo: null })
  })

  test('errors: not an email, an unverified domain, a name too long: 422 naming the field; nothing is written', async () => {
    const p = await ownedProject(env, owner)
    await insertTestDomain(env, p.id, 'pending.test', { verified: false })
    for (const [body, field] of [
      [{ defaultFrom: 'not an email' }, 'defaultFrom'], [{ defaultReplyTo: 'nope' }, 'defaultReplyTo'],
      [{ defaultFromName: 'x'.repeat(201) }, 'defaultFromName'], [{ defaultFrom: 'a@pending.test', defaultFromName: 'Pending' }, 'defaultFrom'],
      [{ defaultFrom: 'a@nowhere.test' }, 'defaultFrom'],
    ] as const) {
      const r = await patch(owner.cookie, p.id, body)
      expect(`${JSON.stringify(body)} ${r.status} ${r.body.error.code}`).toBe(`${JSON.stringify(body)} 422 VALIDATION_ERROR`)
      expect(r.body.error.errors[0].field).toBe(field)
    }
    const unverified = await patch(owner.cookie, p.id, { defaultFrom: 'a@pending.test' })
    expect(unverified.body.error.errors[0]).toMatchObject({ field: 'defaultFrom', code: 'unverified_domain' })
    const list = (await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })).body as Array<Record<string, unknown>>
    expect(list.find((x) => x.id === p.id)).toMatchObject({ defaultFrom: null, defaultFromName: null, defaultReplyTo: null })
  })

  test('security: no session 401; MEMBER 403; a stranger 404 and learns nothing of the domains; another project\'s domain is not verified here', async () => {
    const p = await ownedProject(env, owner)
    await insertTestDomain(env, p.id, 'mine.test', { verified: true })
    expect((await patch(undefined, p.id, { defaultFrom: 'a@mine.test' })).status).toBe(401)
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    const byMember = await patch(member.cookie, p.id, { defaultFrom: 'a@mine.test' })
    expect(byMember.status).toBe(403)
    const stranger = await verifiedUser(env, 'stranger')
    for (const body of [{ defaultFrom: 'a@mine.test' }, { defaultFrom: 'a@nowhere.test' }]) {
      const r = await patch(stranger.cookie, p.id, body)
      expect(r.status).toBe(404)
      expect(r.body.error.code).toBe('NOT_FOUND')
    }
    const theirs = await ownedProject(env, stranger)
    const r = await patch(stranger.cookie, theirs.id, { defaultFrom: 'a@mine.test' })
    expect(r.status).toBe(422)
    expect(r.body.error.errors[0].code).toBe('unverified_domain')
    const list = (await env.request('GET', '/users/@me/projects', { cookie: owner.cookie })).body as Array<Record<string, unknown>>
    expect(list.find((x) => x.id === p.id)).toMatchObject({ defaultFrom: null })
  })
})
