import { afterAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { forEachStore, TestEnv } from './helpers/env'
import { closeDeps, composeDeps, createDeps, unwireConsumers, wireConsumers } from '../src/main'
import { ctxFor, type Deps } from '../src/deps'
import { eventUsage, fieldUsage } from '../src/modules/contacts/usage'
import { track } from '../src/modules/events/service'
import { forgetSegmentHintCache } from '../src/modules/segments/jobs'
import { settleEvents } from './helpers/events'
import { computeKey } from '../src/modules/segments/service'
import { segmentUsers } from '../src/modules/segments/usage'
import { dkimKey } from '../src/secrets'

/**
 * The consumers of the process-wide registries (segment hints on the event stream, segment usage, field and
 * event usage) are plugged in by the composition root only: importing a module registers nothing. Every
 * test here first removes the wiring, then shows that the path under test (wireConsumers, createDeps, the
 * test environment) puts it back.
 */
afterAll(() => wireConsumers())

const cond = (field: string, operator: string, value?: unknown) =>
  ({ logic: 'AND', groups: [{ filters: [{ field, operator, ...(value !== undefined ? { value } : {}) }] }] })

forEachStore('composition root wiring', (env) => {
  /** A project with a tracked segment on data.plan and the event "signup", and one referring to it. */
  async function fixture() {
    const p = await env.project()
    const req = (method: string, path: string, body?: unknown) => env.request(method, path, { key: p.secretKey, body })
    expect((await req('POST', '/contacts', { email: 'a@x.io', data: { plan: 'pro' } })).status).toBe(201)
    expect((await req('POST', '/events/track', { email: 'a@x.io', event: 'signup' })).status).toBe(200)
    const condition = { logic: 'OR', groups: [cond('data.plan', 'equals', 'pro').groups[0], cond('event.signup', 'triggered').groups[0]] }
    const seg = await req('POST', '/segments', { name: 'Pro or signed up', condition, trackMembership: true })
    expect(seg.status).toBe(201)
    const outer = await req('POST', '/segments', { name: 'Outer', condition: cond(`segment.${seg.body.id}`, 'memberOfSegment') })
    expect(outer.status).toBe(201)
    return { p, req, seg: seg.body as { id: string; name: string }, outer: outer.body as { id: string; name: string } }
  }

  async function queuedComputes(deps: Deps, segmentId: string) {
    const j = deps.store.t.jobs
    return deps.store.db.select().from(j).where(and(eq(j.uniqueKey, computeKey(segmentId)), eq(j.status, 'queued')))
  }

  /** What the three registries answer for the fixture, through `deps`. */
  async function observe(deps: Deps, f: Awaited<ReturnType<typeof fixture>>) {
    const ctx = ctxFor(deps, f.p.id, { kind: 'cli' })
    forgetSegmentHintCache()
    await deps.store.tx((db) => db.delete(deps.store.t.jobs).where(eq(deps.store.t.jobs.uniqueKey, computeKey(f.seg.id))))
    await track(ctx, { email: 'b@x.io', event: 'signup' }, undefined, '/events/track')
    await settleEvents()
    return {
      field: (await fieldUsage(ctx, 'plan')).segments.map((s) => s.id),
      event: (await eventUsage(ctx, 'signup')).segments.map((s) => s.id),
      users: (await segmentUsers(ctx, f.seg.id)).map((u) => u.id),
      hints: (await queuedComputes(deps, f.seg.id)).length,
    }
  }
  const none = { field: [], event: [], users: [], hints: 0 }

  test('without wiring nothing is registered; wireConsumers plugs in usage, segment users and hints, once', async () => {
    const f = await fixture()
    const wired = { field: [f.seg.id], event: [f.seg.id], users: [f.outer.id], hints: 1 }
    try {
      unwireConsumers()
      expect(await observe(env.deps, f)).toEqual(none)
      wireConsumers()
      wireConsumers()
      expect(await observe(env.deps, f)).toEqual(wired)
      // The HTTP report sees the same providers, each once.
      const u = await f.req('GET', '/contacts/fields/plan/usage')
      expect(u.body).toMatchObject({ inUse: true, segments: [{ id: f.seg.id, name: f.seg.name, where: 'condition' }] })
      expect((await f.req('GET', '/events/signup/usage')).body.segments).toEqual([{ id: f.seg.id, name: f.seg.name, where: 'condition' }])
      const del = await f.req('DELETE', `/segments/${f.seg.id}`)
      expect(del.status).toBe(409)
    } finally {
      wireConsumers()
    }
  })

  test('createDeps (serve, the CLI, the relay, the jobs) wires them', async () => {
    const f = await fixture()
    unwireConsumers()
    // The test environment's own keys, as settings (on PostgreSQL createDeps takes keys only from those).
    const deps = await createDeps({ ...env.config, dkimKey: dkimKey(env.config).toString('base64') }, { migrate: false })
    try {
      expect(await observe(deps, f)).toEqual({ field: [f.seg.id], event: [f.seg.id], users: [f.outer.id], hints: 1 })
    } finally {
      await closeDeps(deps)
      wireConsumers()
    }
  })

  test('createDeps builds what the process runs on its store (deps.runtime) and starts none of it; a runtime of another store is refused', async () => {
    const deps = await createDeps({ ...env.config, dkimKey: dkimKey(env.config).toString('base64') }, { migrate: false })
    try {
      const { runtime } = deps
      expect(runtime.store).toBe(deps.store)
      // The node's row is written when its first worker joins, not when the deps are built.
      const { nodes } = deps.store.t
      expect(await deps.store.db.select().from(nodes).where(eq(nodes.id, runtime.node.id))).toEqual([])
      // A track writer on a file-backed SQLite store only; its threads start at the first track.
      expect(runtime.trackWriter === null).toBe(env.kind === 'pg')
      expect(runtime.outbox.route === null).toBe(env.kind === 'pg')
      expect(() => composeDeps({ ...deps, runtime: env.deps.runtime })).toThrow('another store')
    } finally {
      await closeDeps(deps)
    }
  })

  test('the test environment builds its deps through the same wiring', async () => {
    const f = await fixture()
    unwireConsumers()
    const other = new TestEnv(env.kind)
    try {
      await other.start()
      expect(await observe(env.deps, f)).toEqual({ field: [f.seg.id], event: [f.seg.id], users: [f.outer.id], hints: 1 })
    } finally {
      await other.stop()
      wireConsumers()
    }
  }, 20_000)
})
