import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { openStore, type Store } from '../../../src/db/client'
import { migrate } from '../../../src/db/migrate'
import { createProject, projectForKey, projectForKeyConfirmedInWrite, rotateKeys } from '../../../src/modules/projects/service'
import { freshPgDatabase, pgReachableSync } from '../../helpers/env'

/**
 * PostgreSQL: the API-key look-ups of one turn of the event loop share one statement (projects/repo.ts,
 * byKeysTogether), and a rotated key still fails on the next request after the rotation's commit.
 */
describe.skipIf(!pgReachableSync())('API-key look-ups read together [pg]', () => {
  let store: Store
  let drop: () => Promise<void>
  beforeAll(async () => {
    const db = await freshPgDatabase()
    drop = db.drop
    store = openStore(db.url)
    await migrate(store)
  }, 60_000)
  afterAll(async () => {
    await store.close()
    await drop()
  })

  /**
   * The store with its compiled reads counted: every look-up by key is a compiled read (Store.prepared),
   * run once per call of the function it returns.
   */
  const counted = () => {
    let runs = 0
    const view = new Proxy(store, {
      get(target, prop) {
        if (prop === 'prepared') {
          return (text: string) => {
            const run = target.prepared(text)
            return (...params: Array<string | number | null>) => { runs++; return run(...params) }
          }
        }
        const v = Reflect.get(target, prop)
        return typeof v === 'function' ? v.bind(target) : v
      },
    })
    return { view, runs: () => runs }
  }

  test('public and secret keys of several projects, known and unknown, asked at once: each gets its own project, with one statement per kind', async () => {
    const a = await createProject(store, { name: 'a' })
    const b = await createProject(store, { name: 'b' })
    const { view, runs } = counted()
    const asked = Array.from({ length: 60 }, (_, i) => [a.publicKey, b.publicKey, a.secretKey, b.secretKey, 'pk_unknown', 'sk_unknown'][i % 6])
    const got = await Promise.all(asked.map((k) => projectForKey(view, k)))
    for (let i = 0; i < asked.length; i++) {
      const want = [a.id, b.id, a.id, b.id, null, null][i % 6]
      expect(got[i]?.project.id ?? null).toBe(want)
      if (want) expect(got[i]?.kind).toBe(i % 6 < 2 ? 'public' : 'secret')
    }
    // One statement for the public keys and one for the secret ones (a statement per key would be 60).
    expect(runs()).toBe(2)
    // Asked in separate turns, each look-up reads again.
    for (const k of [a.publicKey, a.publicKey]) expect((await projectForKey(view, k))?.project.id).toBe(a.id)
    expect(runs()).toBe(4)
  })

  test('for a write that confirms it (/v1/track), a key seen before is answered from memory, with the check to run; a disabled project is not kept', async () => {
    const p = await createProject(store, { name: 'kept' })
    const { view, runs } = counted()
    const first = await projectForKeyConfirmedInWrite(view, p.publicKey)
    expect(first?.project.id).toBe(p.id)
    expect(first?.confirm).toBeUndefined()
    expect(runs()).toBe(1)
    const again = await Promise.all([projectForKeyConfirmedInWrite(view, p.publicKey), projectForKeyConfirmedInWrite(view, p.secretKey)])
    expect(again[0]?.confirm).toEqual({ projectId: p.id, kind: 'public', value: p.publicKey })
    expect(again[1]?.confirm).toBeUndefined()
    expect(runs()).toBe(2)
    // Other routes still look every key up.
    await projectForKey(view, p.publicKey)
    expect(runs()).toBe(3)
    const off = await createProject(store, { name: 'off' })
    await store.exec(sql`UPDATE projects SET disabled = true WHERE id = ${off.id}`)
    for (let i = 0; i < 2; i++) expect((await projectForKeyConfirmedInWrite(view, off.publicKey))?.confirm).toBeUndefined()
    expect(runs()).toBe(5)
  })

  test('a key rotated by a committed transaction fails on the next look-up', async () => {
    const p = await createProject(store, { name: 'rotated' })
    expect((await projectForKey(store, p.publicKey))?.project.id).toBe(p.id)
    const fresh = await rotateKeys(store, p.id)
    const [old, oldSecret, next] = await Promise.all([projectForKey(store, p.publicKey), projectForKey(store, p.secretKey), projectForKey(store, fresh.publicKey)])
    expect(old).toBeNull()
    expect(oldSecret).toBeNull()
    expect(next?.project.id).toBe(p.id)
    await store.exec(sql`UPDATE projects SET disabled = true WHERE id = ${p.id}`)
    expect((await projectForKey(store, fresh.publicKey))?.project.disabled).toBe(true)
  })
})
