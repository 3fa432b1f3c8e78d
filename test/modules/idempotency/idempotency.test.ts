import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { badRequest } from '../../../src/errors'
import { claimIn } from '../../../src/modules/idempotency/repo'
import { idempotencyClaim, keepFailed, sweepExpiredKeys, withIdempotency } from '../../../src/modules/idempotency/service'
import { must } from '../../helpers/must'
import { againIfVanished } from '../../../src/modules/contacts/service'

async function keyRow(env: TestEnv, projectId: string, key: string) {
  const [r] = await env.store.rows<{ status_code: number | null }>(sql`SELECT status_code FROM idempotency_keys WHERE project_id = ${projectId} AND key = ${key}`)
  return r ? { statusCode: r.status_code === null ? null : Number(r.status_code) } : null
}

forEachStore('idempotency keys', (env) => {
  const req = { method: 'POST', path: '/v1/x', body: { a: 1 } }

  test('withIdempotency: 2xx keeps the key with its status, a reuse is 409 and does not run; 4xx frees it; 5xx keeps it', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    let runs = 0
    expect(await withIdempotency(ctx, 'k1', req, async () => { runs++; return 'done' })).toBe('done')
    expect(await keyRow(env, p.id, 'k1')).toEqual({ statusCode: 200 })
    const reused = await withIdempotency(ctx, 'k1', { ...req, body: { a: 2 } }, async () => { runs++ }).catch((e) => e)
    expect(reused.code).toBe('IDEMPOTENCY_KEY_REUSED')
    expect(reused.opts.details).toMatchObject({ key: 'k1', originalRequest: { method: 'POST', path: '/v1/x', sameBody: false }, originalStatusCode: 200 })
    expect(runs).toBe(1)
    await withIdempotency(ctx, 'k4', req, async () => { throw badRequest('no') }).catch(() => {})
    expect(await keyRow(env, p.id, 'k4')).toBeNull()
    await withIdempotency(ctx, 'k5', req, async () => { throw new Error('boom') }).catch(() => {})
    expect(await keyRow(env, p.id, 'k5')).toEqual({ statusCode: 500 })
    // A write that met concurrent writes on every run (a deadlock each time) answers 409 "send the request
    // again", so the key is freed for that: the resend runs.
    const deadlock = Object.assign(new Error('Failed query'), { cause: Object.assign(new Error('deadlock detected'), { code: '40P01' }) })
    const conflicted = await withIdempotency(ctx, 'k6', req, () => againIfVanished(env.store, async () => { throw deadlock })).catch((e) => e)
    expect(conflicted).toMatchObject({ status: 409, code: 'CONFLICT' })
    expect(await keyRow(env, p.id, 'k6')).toBeNull()
    expect(await withIdempotency(ctx, 'k6', req, async () => 'sent again')).toBe('sent again')
    const bad = await withIdempotency(ctx, 'bad\nkey', req, async () => 1).catch((e) => e)
    expect(bad.code).toBe('VALIDATION_ERROR')
  })

  test('claims in one transaction settle on the key: one claims, the others see its row', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const claim = must(idempotencyClaim(ctx, 'race', req), 'a claim')
    const results = await Promise.all(Array.from({ length: 10 }, () => env.store.tx((db) => claimIn(env.store, db, claim, 200))))
    expect(results.filter((r) => r === null).length).toBe(1)
    for (const r of results.filter((x) => x !== null)) expect(r).toMatchObject({ method: 'POST', path: '/v1/x', requestHash: claim.requestHash, statusCode: 200 })
  })

  test('keepFailed records a 5xx and leaves a 4xx free; expired keys are swept and can be claimed again', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await keepFailed(ctx, must(idempotencyClaim(ctx, 'f5', req), 'a claim'), new Error('boom'))
    expect(await keyRow(env, p.id, 'f5')).toEqual({ statusCode: 500 })
    await keepFailed(ctx, must(idempotencyClaim(ctx, 'f4', req), 'a claim'), badRequest('no'))
    expect(await keyRow(env, p.id, 'f4')).toBeNull()
    const old = { ...must(idempotencyClaim(ctx, 'old', req), 'a claim'), nowMs: Date.now() - 10_000, expiresAtMs: Date.now() - 1 }
    expect(await env.store.tx((db) => claimIn(env.store, db, old, 200))).toBeNull()
    // An expired row does not hold its key.
    expect(await env.store.tx((db) => claimIn(env.store, db, must(idempotencyClaim(ctx, 'old', req), 'a claim'), 200))).toBeNull()
    await env.store.tx((db) => claimIn(env.store, db, { ...old, key: 'old2' }, 200))
    await sweepExpiredKeys(ctx, env.clock.date())
    expect(await keyRow(env, p.id, 'old2')).toBeNull()
    expect(await keyRow(env, p.id, 'old')).toEqual({ statusCode: 200 })
  })

  // ---- at the HTTP edge (POST /v1/track and /events/track carry the header) ----

  const track = (key: string | null, idem: string | null, body: unknown = { email: 'idem@example.com', event: 'paid' }, path = '/v1/track') =>
    env.request('POST', path, { key, body, headers: idem === null ? {} : { 'idempotency-key': idem } })
  async function eventCount(projectId: string) {
    const [r] = await env.store.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${projectId}`)
    return Number(r.n)
  }

  test('HTTP: one key per project, whatever the path and key kind: the reuse is 409 with the original request and runs nothing', async () => {
    const p = await env.project()
    expect((await track(p.publicKey, 'order-1')).status).toBe(200)
    const again = await track(p.secretKey, 'order-1', { email: 'idem@example.com', event: 'paid' }, '/events/track')
    expect(again.status).toBe(409)
    expect(again.body.error).toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED', statusCode: 409,
      details: { key: 'order-1', originalRequest: { method: 'POST', path: '/v1/track', sameBody: true }, originalStatusCode: 200, originalRequestAt: expect.any(String) },
    })
    expect((await track(p.publicKey, 'order-1', { email: 'other@example.com', event: 'paid' })).body.error.details.originalRequest.sameBody).toBe(false)
    expect(await eventCount(p.id)).toBe(1)
    // A key past its expiry is claimed again.
    await env.store.exec(sql`UPDATE idempotency_keys SET expires_at = created_at WHERE project_id = ${p.id}`)
    expect((await track(p.publicKey, 'order-1')).status).toBe(200)
    expect(await eventCount(p.id)).toBe(2)
  })

  test('HTTP: a malformed key is 422 VALIDATION_ERROR on the Idempotency-Key field and performs nothing', async () => {
    const p = await env.project()
    for (const bad of ['x'.repeat(256), 'tab\there', 'caf\u00e9']) {
      const r = await track(p.publicKey, bad)
      expect(r.status).toBe(422)
      expect(r.body.error.code).toBe('VALIDATION_ERROR')
      expect(r.body.error.errors[0]).toMatchObject({ field: 'Idempotency-Key', code: 'invalid_string' })
    }
    expect((await track(p.publicKey, 'x'.repeat(255))).status).toBe(200)
    expect(await eventCount(p.id)).toBe(1)
  })

  test('HTTP: without a valid API key the key is not claimed; another project\'s same key is its own', async () => {
    const p = await env.project()
    const q = await env.project()
    const none = await track(null, 'shared')
    expect(none.status).toBe(401)
    expect(none.body.error.code).toBe('UNAUTHORIZED')
    const unknown = await track('pk_not_a_real_key', 'shared')
    expect(unknown.status).toBe(401)
    expect(unknown.body.error.code).toBe('INVALID_API_KEY')
    // The public key is not accepted on /events/track (secret only): refused before any claim.
    const pub = await track(p.publicKey, 'shared', undefined, '/events/track')
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
    expect((await track(q.publicKey, 'shared')).status).toBe(200)
    expect((await track(p.publicKey, 'shared')).status).toBe(200)
    expect((await track(q.publicKey, 'shared')).status).toBe(409)
    const held = await track(p.publicKey, 'shared')
    expect(held.status).toBe(409)
    expect(held.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED')
    expect(await eventCount(p.id)).toBe(1)
    expect(await eventCount(q.id)).toBe(1)
  })
})
