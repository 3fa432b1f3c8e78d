import { expect, spyOn, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { AppError } from '../../../src/errors'
import { generateDkimKeyPair } from '../../../src/modules/domains/keys'
import { insertTestDomain } from '../../helpers/domains'
import { assertSenderAllowed, signingKeyFor } from '../../../src/modules/domains/service'
import * as repo from '../../../src/modules/domains/repo'
import * as client from '../../../src/db/client'

/** The sender gate, on rows written directly (the DNS-driven flow is covered in domains.test.ts). */
forEachStore('sender gate', (env) => {
  // A key pair of its own per domain: the tests tell domains apart by their keys.
  const addDomain = async (projectId: string, domain: string, verified: boolean, allowSubdomains = false) =>
    insertTestDomain(env, projectId, domain, { verified, allowSubdomains, keys: await generateDkimKeyPair() })

  test('a verified domain passes, exactly; its subdomains, other and pending domains get 403 INTERNAL_SERVER_ERROR', async () => {
    const p = await env.project()
    const other = await env.project()
    const { id, keys } = await addDomain(p.id, 'example.com', true)
    await addDomain(p.id, 'pending.org', false)
    await addDomain(other.id, 'other.net', true)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })

    const v = await assertSenderAllowed(ctx, 'Hello@Example.COM')
    expect(v).toMatchObject({ domainId: id, domain: 'example.com', privateKeyPem: keys.privateKeyPem, returnPathDomain: env.config.hostname, returnPathVerified: false })
    expect((await signingKeyFor(ctx, 'deep.sub.example.com'))?.domainId).toBe(id)
    expect(await signingKeyFor(ctx, 'pending.org')).toBeNull()

    for (const addr of ['boss@payroll.example.com', 'a@deep.sub.example.com', 'a@pending.org', 'a@other.net', 'a@notexample.com', 'a@com', 'nonsense']) {
      const err = await assertSenderAllowed(ctx, addr).then(() => null, (e) => e)
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).status).toBe(403)
      expect((err as AppError).code).toBe('INTERNAL_SERVER_ERROR')
    }
  })

  test('the gate reads a domain\'s version as a number, so its decrypted signing key is read from the store once', async () => {
    const p = await env.project()
    const { id } = await addDomain(p.id, 'versioned.example', true)
    const [row] = await repo.verifiedAmong(env.deps.store, env.deps.store.db, p.id, ['versioned.example'])
    expect(Number.isFinite(row.version)).toBe(true)
    const [stored] = await env.deps.store.db.select({ at: env.deps.store.t.domains.updatedAt }).from(env.deps.store.t.domains).where(eq(env.deps.store.t.domains.id, id))
    expect(row.version).toBe(stored.at.getTime())
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const reads = spyOn(repo, 'privateKeyBlob')
    try {
      await assertSenderAllowed(ctx, 'a@versioned.example')
      await assertSenderAllowed(ctx, 'b@versioned.example')
      expect(reads).toHaveBeenCalledTimes(1)
    } finally {
      reads.mockRestore()
    }
  })

  test('with allowSubdomains, subdomains pass too and the most specific verified domain signs', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await addDomain(p.id, 'parent.io', true, true)
    const { id: sub } = await addDomain(p.id, 'news.parent.io', true)
    expect((await assertSenderAllowed(ctx, 'x@news.parent.io')).domainId).toBe(sub)
    // news.parent.io does not allow subdomains, but parent.io does: it covers them.
    expect((await assertSenderAllowed(ctx, 'x@a.news.parent.io')).domain).toBe('parent.io')
    expect((await assertSenderAllowed(ctx, 'x@parent.io')).domain).toBe('parent.io')
    // more parents than one statement looks up at once
    expect((await assertSenderAllowed(ctx, 'x@a.b.c.d.e.f.g.h.i.j.parent.io')).domain).toBe('parent.io')
    expect((await assertSenderAllowed(ctx, 'x@a.b.c.d.e.f.g.h.i.j.news.parent.io')).domain).toBe('parent.io')
  })

  test('a cached key is never served once the domain is pending again or deleted', async () => {
    const p = await env.project()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const { id } = await addDomain(p.id, 'flip.dev', true)
    await assertSenderAllowed(ctx, 'a@flip.dev')
    const { domains } = env.store.t
    await env.store.tx((db) => db.update(domains).set({ verified: false, updatedAt: new Date() }).where(eq(domains.id, id)))
    await expect(assertSenderAllowed(ctx, 'a@flip.dev')).rejects.toThrow(/not verified/)
    await env.store.tx((db) => db.update(domains).set({ verified: true, updatedAt: new Date() }).where(eq(domains.id, id)))
    expect((await assertSenderAllowed(ctx, 'a@flip.dev')).domainId).toBe(id)
    await env.store.tx((db) => repo.deleteById(env.store, db, p.id, id))
    await expect(assertSenderAllowed(ctx, 'a@flip.dev')).rejects.toThrow(/not verified/)
  })

  test('look-ups of one turn: each sender gets its own project\'s answer (on PostgreSQL one statement per project and domain); a domain unverified before a look-up is refused', async () => {
    const p = await env.project()
    const q = await env.project()
    const { id } = await addDomain(p.id, 'turn.example', true)
    await addDomain(q.id, 'other-turn.example', true)
    const ctxP = ctxFor(env.deps, p.id, { kind: 'cli' })
    const ctxQ = ctxFor(env.deps, q.id, { kind: 'cli' })
    const statements = spyOn(client, 'pgConnection')
    let outcomes: Array<string | number>
    try {
      const asked = [
        ...Array.from({ length: 10 }, (_, i) => assertSenderAllowed(ctxP, `a${i}@turn.example`)),
        assertSenderAllowed(ctxQ, 'x@turn.example'),
        assertSenderAllowed(ctxQ, 'y@other-turn.example'),
      ]
      outcomes = (await Promise.allSettled(asked)).map((r) => (r.status === 'fulfilled' ? r.value.domain : (r.reason as AppError).status))
      if (env.store.dialect === 'pg') expect(statements).toHaveBeenCalledTimes(3)
    } finally {
      statements.mockRestore()
    }
    expect(outcomes).toEqual([...Array.from({ length: 10 }, () => 'turn.example'), 403, 'other-turn.example'])
    const d = env.deps.store.t.domains
    await env.deps.store.tx(async (db) => { await db.update(d).set({ verified: false }).where(eq(d.id, id)) })
    expect(await assertSenderAllowed(ctxP, 'a@turn.example').then(() => 200, (e: AppError) => e.status)).toBe(403)
  })
})
