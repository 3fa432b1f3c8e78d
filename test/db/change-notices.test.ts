import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { openStore, type Store } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { createProject, projectForKey, rotateKeys } from '../../src/modules/projects/service'
import { suspend } from '../../src/modules/security/repo'
import { freshPgDatabase, pgReachableSync } from '../helpers/env'

/**
 * The API-key cache (projects/repo.ts byKey) is exact on both stores: two stores on one database stand for
 * two nodes (or the server and the CLI). A key rotated or a project disabled through one is refused by the
 * other from its next look-up on (SQLite: data_version; PostgreSQL: the change notices of db/changes.ts),
 * and by the one that changed it at once.
 */
const until = async (what: string, ok: () => Promise<boolean> | boolean) => {
  for (let i = 0; i < 500; i++) {
    if (await ok()) return
    await Bun.sleep(10)
  }
  throw new Error(`never: ${what}`)
}

for (const kind of ['sqlite', 'pg'] as const) {
  const run = kind === 'sqlite' || pgReachableSync()
  ;(run ? describe : describe.skip)(`API-key cache across processes [${kind}]`, () => {
    let a: Store
    let b: Store
    let cleanup: () => Promise<void>
    beforeAll(async () => {
      if (kind === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'mailctl-notices-'))
        const url = `sqlite://${join(dir, 'mailctl.db')}`
        a = openStore(url)
        await migrate(a)
        b = openStore(url)
        cleanup = async () => rmSync(dir, { recursive: true, force: true })
      } else {
        const db = await freshPgDatabase()
        a = openStore(db.url)
        await migrate(a)
        b = openStore(db.url)
        cleanup = db.drop
      }
    }, 60_000)
    afterAll(async () => {
      await a.close()
      await b.close()
      await cleanup()
    }, 60_000)

    test('a key rotated by one process is refused by the other, and at once by the one that rotated it', async () => {
      const p = await createProject(a, { name: 'cached' })
      // Both caches hold the old keys (on PostgreSQL once their listeners are in place).
      await until('b caches', async () => (await projectForKey(b, p.secretKey)) !== null && b.changeVersion('projects') !== null)
      await until('a caches', async () => (await projectForKey(a, p.publicKey)) !== null && a.changeVersion('projects') !== null)
      expect((await projectForKey(b, p.secretKey))?.project.id).toBe(p.id)
      const rotated = await rotateKeys(a, p.id)
      // The process that rotated: on the very next look-up.
      expect(await projectForKey(a, p.publicKey)).toBeNull()
      expect((await projectForKey(a, rotated.secretKey))?.project.id).toBe(p.id)
      // The other: once the change is visible to it (the next event-loop turn; PostgreSQL: its notice).
      await until('b refuses the old secret key', async () => (await projectForKey(b, p.secretKey)) === null)
      expect((await projectForKey(b, rotated.publicKey))?.project.id).toBe(p.id)
    })

    test('a project disabled by the other process is seen disabled', async () => {
      const p = await createProject(a, { name: 'to-suspend' })
      await until('a caches', async () => (await projectForKey(a, p.secretKey)) !== null && a.changeVersion('projects') !== null)
      expect((await projectForKey(a, p.secretKey))?.project.disabled).toBe(false)
      await b.tx((db) => suspend(b, db, p.id, 'test', new Date()))
      await until('a sees it disabled', async () => (await projectForKey(a, p.secretKey))?.project.disabled === true)
    })

    test('afterCommit runs after the commit, never after a rollback', async () => {
      const seen: string[] = []
      await a.tx(async (db) => {
        a.afterCommit(db, () => seen.push('committed'))
        expect(seen).toEqual([])
      })
      expect(seen).toEqual(['committed'])
      await a.tx(async (db) => {
        a.afterCommit(db, () => seen.push('rolled back'))
        throw new Error('roll back')
      }).catch(() => {})
      expect(seen).toEqual(['committed'])
    })

    if (kind === 'pg') {
      test('while the notice listener is down nothing is cached, and it listens again by itself', async () => {
        const p = await createProject(a, { name: 'listener' })
        await until('listening', () => a.changeVersion('projects') !== null)
        const admin = postgres(a.url, { max: 1, onnotice: () => {} })
        try {
          await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mailctl-changes' AND datname = current_database()`
          await until('a stops vouching for its cache', () => a.changeVersion('projects') === null)
          // A change made while nobody listens on `a` is not missed: nothing was cached meanwhile.
          const rotated = await rotateKeys(b, p.id)
          expect(await projectForKey(a, p.secretKey)).toBeNull()
          await until('listening again', () => a.changeVersion('projects') !== null)
          expect((await projectForKey(a, rotated.secretKey))?.project.id).toBe(p.id)
        } finally { await admin.end() }
      })
    }
  })
}
