import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { lastMail, ownedProject, tokenIn, uniqueEmail, verifiedUser } from '../../helpers/accounts'
import { accountJobs, sweepAccounts } from '../../../src/modules/auth/jobs'
import { enqueue, Worker } from '../../../src/jobs/queue'
import { allJobs } from '../../../src/jobs/registry'

forEachStore('accounts sweep job', (env) => {
  test('deletes expired sessions, tokens and invitations and long-revoked sessions; keeps live ones', async () => {
    const u = await verifiedUser(env, 'sweep')
    const live = await verifiedUser(env, 'sweep-live')
    const p = await ownedProject(env, u)
    const pendingEmail = uniqueEmail('pending')
    const expiredEmail = uniqueEmail('lapsed')
    await env.request('POST', `/projects/${p.id}/members`, { cookie: u.cookie, body: { email: pendingEmail } })
    await env.request('POST', `/projects/${p.id}/members`, { cookie: u.cookie, body: { email: expiredEmail } })
    await env.request('POST', '/auth/request-password-reset', { body: { email: u.email } })
    await env.request('POST', '/auth/request-password-reset', { body: { email: live.email } })
    expect(tokenIn((await lastMail(env, live.email, 'password-reset'))?.text)).toBeTruthy()

    const { sessions, authTokens, invitations } = env.store.t
    const past = new Date(Date.now() - 3 * 24 * 3600_000)
    await env.store.tx(async (db) => {
      await db.update(sessions).set({ revokedAt: past }).where(eq(sessions.userId, u.id))
      await db.update(authTokens).set({ expiresAt: past }).where(eq(authTokens.userId, u.id))
      await db.update(invitations).set({ expiresAt: past }).where(eq(invitations.email, expiredEmail))
    })
    const swept = await sweepAccounts(env.store, env.clock.date())
    expect(swept).toEqual({ sessions: 1, tokens: 1, invitations: 1 })
    expect((await env.store.db.select().from(sessions).where(eq(sessions.userId, live.id))).length).toBe(1)
    expect((await env.store.db.select().from(authTokens).where(eq(authTokens.userId, live.id))).length).toBe(1)
    expect((await env.store.db.select().from(invitations).where(eq(invitations.email, pendingEmail))).length).toBe(1)
    expect((await env.request('GET', '/users/@me', { cookie: live.cookie })).status).toBe(200)
    expect(await sweepAccounts(env.store, env.clock.date())).toEqual({ sessions: 0, tokens: 0, invitations: 0 })
  })

  test('is registered with the workers and runs as a job', async () => {
    expect(allJobs.map((j) => j.name)).toContain('housekeeping.accounts-sweep')
    const w = new Worker(env.deps, accountJobs)
    await enqueue(env.store, 'housekeeping.accounts-sweep', {}, { wake: null, now: new Date() })
    expect(await w.drain()).toBe(1)
  })
})
