import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openStore, type Store } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { freshPgDatabase, pgReachableSync } from '../helpers/env'

/**
 * store.afterCommit: what must not happen before the data is visible to everyone (a job's wake-up, which
 * made a woken worker on another node claim before the job's commit and need a second claim later) runs
 * after the outermost commit, and never after a rollback.
 */
for (const kind of ['sqlite', 'pg'] as const) {
  const run = kind === 'sqlite' || pgReachableSync()
  ;(run ? describe : describe.skip)(`store.afterCommit [${kind}]`, () => {
    let store: Store
    let other: Store
    let cleanup: () => Promise<void>
    beforeAll(async () => {
      if (kind === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'mailctl-after-commit-'))
        const url = `sqlite://${join(dir, 'mailctl.db')}`
        store = openStore(url)
        await migrate(store)
        other = openStore(url)
        cleanup = async () => rmSync(dir, { recursive: true, force: true })
      } else {
        const db = await freshPgDatabase()
        store = openStore(db.url)
        await migrate(store)
        other = openStore(db.url)
        cleanup = db.drop
      }
    }, 60_000)
    afterAll(async () => {
      await store.close()
      await other.close()
      await cleanup()
    }, 60_000)

    const count = async (s: Store, id: string) => Number((await s.rows<{ n: number }>(sql`SELECT count(*) AS n FROM projects WHERE id = ${id}`))[0].n)

    test('runs after the commit, when another connection already sees the row; never after a rollback', async () => {
      const id = `ac-${Math.random().toString(36).slice(2, 8)}`
      const seen: number[] = []
      let ran: Promise<void> = Promise.resolve()
      await store.tx(async (db) => {
        await store.exec(sql`INSERT INTO projects (id, name, public_key, secret_key_hash, disabled, tracking_enabled, settings, created_at, updated_at)
          VALUES (${id}, 'p', ${`pk_${id}`}, ${`h_${id}`}, ${kind === 'pg' ? sql`false` : sql`0`}, ${kind === 'pg' ? sql`true` : sql`1`}, '{}', ${kind === 'pg' ? sql`now()` : sql`0`}, ${kind === 'pg' ? sql`now()` : sql`0`})`, db)
        store.afterCommit(db, () => { ran = (async () => { other.refresh(); seen.push(await count(other, id)) })() })
        expect(seen).toEqual([])
      })
      await ran
      expect(seen).toEqual([1])
      await store.tx(async (db) => {
        store.afterCommit(db, () => seen.push(-1))
        throw new Error('roll back')
      }).catch(() => {})
      expect(seen).toEqual([1])
    })

    test('outside a transaction it runs at once', () => {
      const seen: string[] = []
      store.afterCommit(store.db, () => seen.push('now'))
      expect(seen).toEqual(['now'])
    })
  })
}
