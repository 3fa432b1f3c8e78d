import { beforeAll, expect, test } from 'bun:test'
import { ctxFor } from '../../../src/deps'
import { enableProject, enforce } from '../../../src/modules/security/service'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'
import { forEachStore, type TestEnv } from '../../helpers/env'

/** `sent` email.sent and `bounced` email.bounce events in the last hour (a bounce storm when bounced is high). */
async function traffic(env: TestEnv, projectId: string, sent: number, bounced: number, complained = 0) {
  const now = Date.now()
  const row = (name: string, i: number) => ({ id: Bun.randomUUIDv7(), projectId, contactId: null, name, data: {}, emailId: null, createdAt: new Date(now - 60_000 - i) })
  await env.store.tx((db) => db.insert(env.store.t.events).values([
    ...Array.from({ length: sent }, (_, i) => row('email.sent', i)),
    ...Array.from({ length: bounced }, (_, i) => row('email.bounce', i)),
    ...Array.from({ length: complained }, (_, i) => row('email.complaint', i)),
  ]))
}

forEachStore('project security', (env) => {
  let owner: TestUser
  let member: TestUser
  let stranger: TestUser
  let p: { id: string; secretKey: string; publicKey: string }

  beforeAll(async () => {
    owner = await verifiedUser(env, 'owner')
    p = await ownedProject(env, owner)
    member = await memberOf(env, owner, p.id, 'MEMBER')
    stranger = await verifiedUser(env, 'stranger')
  }, 60_000)

  const security = (u: TestUser | null, path = `/users/@me/projects/${p.id}/security`) => env.request('GET', path, { cookie: u?.cookie })
  const check = () => enforce(ctxFor(env.deps, p.id, { kind: 'job', name: 'test' }))

  test('below the minimum volume nothing is enforced; a warning above the warning threshold', async () => {
    await traffic(env, p.id, 50, 25)
    expect(await check()).toBeNull()
    let s = await security(member)
    expect(s.status).toBe(200)
    expect(s.body).toMatchObject({ windowDays: 7, sent: 50, bounced: 25, bounceRate: 0.5, status: 'ok', suspensions: [] })
    expect(s.body.thresholds).toEqual({ bounceWarning: 0.05, bounceSuspend: 0.1, complaintWarning: 0.001, complaintSuspend: 0.003, minimumSent: 100 })
    // 100 more sent, no more bounces: 25 / 150 = 16.7% is over the suspension threshold too; first check the warning alone
    // on another project: 6 bounces of 100.
    const q = await ownedProject(env, owner)
    await traffic(env, q.id, 100, 6)
    s = await security(owner, `/projects/${q.id}/security`)
    expect(s.body).toMatchObject({ status: 'warning', bounceRate: 0.06 })
    expect(s.body.warnings[0]).toContain('bounce rate 6.0%')
    expect(await enforce(ctxFor(env.deps, q.id, { kind: 'job', name: 'test' }))).toBeNull()
  })

  test('a bounce storm suspends the project: its API calls get 403 PROJECT_DISABLED, the reason is recorded; the OWNER lifts it', async () => {
    await traffic(env, p.id, 100, 0)
    const why = await check()
    expect(why).toContain('bounce rate 16.7%')
    const refused = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'a@dest.test', from: 'x@acme.test', subject: 'S', body: 'B' } })
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe('PROJECT_DISABLED')
    expect((await env.request('GET', '/contacts', { key: p.secretKey })).status).toBe(403)
    const s = await security(member)
    expect(s.body.status).toBe('suspended')
    expect(s.body.suspensions).toHaveLength(1)
    expect(s.body.suspensions[0]).toMatchObject({ reason: why, liftedAt: null })
    // Checking again changes nothing.
    expect(await check()).toBeNull()
    // A MEMBER cannot lift it; a stranger does not see the project.
    expect((await env.request('POST', `/users/@me/projects/${p.id}/enable`, { cookie: member.cookie })).status).toBe(403)
    expect((await env.request('POST', `/users/@me/projects/${p.id}/enable`, { cookie: stranger.cookie })).status).toBe(404)
    const lifted = await env.request('POST', `/users/@me/projects/${p.id}/enable`, { cookie: owner.cookie })
    expect(lifted.status).toBe(200)
    expect(lifted.body.status).toBe('ok')
    expect(lifted.body.suspensions[0].liftedAt).not.toBeNull()
    // The window starts at the lift: the same storm does not suspend it again.
    expect(lifted.body.sent).toBe(0)
    expect(await check()).toBeNull()
    expect((await env.request('GET', '/contacts', { key: p.secretKey })).status).toBe(200)
  })

  test('complaints suspend too; `mailctl project enable` (enableProject by the CLI) lifts it', async () => {
    const q = await ownedProject(env, owner)
    await traffic(env, q.id, 1000, 0, 4)
    expect(await enforce(ctxFor(env.deps, q.id, { kind: 'job', name: 'test' }))).toContain('complaint rate 0.40%')
    expect((await env.request('GET', '/contacts', { key: q.secretKey })).status).toBe(403)
    expect(await enableProject(env.deps, q.id, 'cli')).toEqual({ enabled: true })
    expect(await enableProject(env.deps, q.id, 'cli')).toEqual({ enabled: false })
    expect((await env.request('GET', '/contacts', { key: q.secretKey })).status).toBe(200)
  })

  test('security: no session 401, not a member 404 on both paths', async () => {
    expect((await security(null)).status).toBe(401)
    expect((await security(stranger)).status).toBe(404)
    expect((await security(stranger, `/projects/${p.id}/security`)).status).toBe(404)
    expect((await env.request('GET', `/projects/${p.id}/security`, { key: p.secretKey })).status).toBe(401)
  })
})
