import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore } from '../../../src/db/client'
import { ctxFor, type Deps } from '../../../src/deps'
import { systemClock } from '../../../src/clock'
import { suppress } from '../../../src/modules/suppressions/service'
import { freshPgDatabase, pgReachableSync } from '../../helpers/env'
import { run, SOURCE } from '../../cli/run'

/** `mailctl suppression list|add|remove PROJECT [EMAIL]` from source, on SQLite and PostgreSQL. */

setDefaultTimeout(60_000)
const dir = mkdtempSync(join(tmpdir(), 'mailctl-supp-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

for (const kind of ['sqlite', 'pg'] as const) {
  ;(kind === 'sqlite' || pgReachableSync() ? describe : describe.skip)(`mailctl suppression [${kind}]`, () => {
    const dataDir = join(dir, kind)
    let url = `sqlite://${join(dataDir, 'mailctl.db')}`
    let drop: (() => Promise<void>) | null = null
    const env = () => ({ MAILCTL_DATA_DIR: dataDir, DATABASE_URL: url, MAILCTL_SECRET: 's'.repeat(32) })
    const mailctl = (args: string[]) => run(SOURCE, args, env())
    // The store of the suite exists before any test, so each test runs alone on its own kind of store.
    beforeAll(async () => {
      if (kind === 'pg') {
        const db = await freshPgDatabase()
        url = db.url
        drop = db.drop
      }
      // Only serve and migrate create a store.
      expect((await mailctl(['migrate'])).code).toBe(0)
    })
    afterAll(async () => { await drop?.() }, 60_000)

    test('list shows hard bounces, complaints and manual entries; remove makes an address sendable again', async () => {
      const created = await mailctl(['project', 'create', '--name', `Supp ${kind}`, '--json'])
      expect(created.code).toBe(0)
      const project = JSON.parse(created.stdout) as { id: string; name: string }
      // A hard bounce and a complaint, as the inbound processing records them.
      const store = openStore(url)
      try {
        const ctx = ctxFor({ store, clock: systemClock } as Deps, project.id, { kind: 'job', name: 'test' })
        await store.tx(async (db) => {
          await suppress(ctx, db, { email: 'Gone@Example.org', reason: 'bounce', emailId: Bun.randomUUIDv7(), detail: '550 5.1.1 user unknown' })
          await suppress(ctx, db, { email: 'angry@example.org', reason: 'complaint', detail: 'complaint (abuse)' })
        })
      } finally {
        await store.close()
      }
      const added = await mailctl(['suppression', 'add', project.name, 'manual@example.org', '--note', 'asked by phone', '--json'])
      expect(added.code).toBe(0)
      expect(JSON.parse(added.stdout)).toMatchObject({ email: 'manual@example.org', reason: 'manual', detail: 'asked by phone' })

      const list = await mailctl(['suppression', 'list', project.id, '--json'])
      expect(list.code).toBe(0)
      const rows = JSON.parse(list.stdout) as Array<{ email: string; reason: string }>
      expect(rows.map((r) => [r.email, r.reason]).sort()).toEqual([['angry@example.org', 'complaint'], ['gone@example.org', 'bounce'], ['manual@example.org', 'manual']])
      const bounces = JSON.parse((await mailctl(['suppression', 'list', project.id, '--reason', 'bounce', '--json'])).stdout) as Array<{ email: string }>
      expect(bounces.map((r) => r.email)).toEqual(['gone@example.org'])
      const human = await mailctl(['suppression', 'list', project.id])
      expect(human.stdout.split('\n')[0]).toMatch(/^EMAIL\s+REASON\s+SINCE/)
      expect(human.stdout).toContain('550 5.1.1 user unknown')

      const removed = await mailctl(['suppression', 'remove', project.id, 'GONE@example.org', '--json'])
      expect(removed.code).toBe(0)
      expect(JSON.parse(removed.stdout)).toEqual({ email: 'gone@example.org', removed: true })
      const again = await mailctl(['suppression', 'remove', project.id, 'gone@example.org'])
      expect(again.code).toBe(1)
      expect(again.stderr.trim()).toBe('error: NOT_FOUND: Suppression not found')
      const after = JSON.parse((await mailctl(['suppression', 'list', project.id, '--json'])).stdout) as Array<{ email: string }>
      expect(after.map((r) => r.email).sort()).toEqual(['angry@example.org', 'manual@example.org'])
    })

    test('usage errors: missing arguments without a terminal, bad --reason (exit 2); unknown project (exit 1)', async () => {
      const missing = await mailctl(['suppression', 'remove'])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain('PROJECT is required')
      const reason = await mailctl(['suppression', 'list', 'x', '--reason', 'spite'])
      expect(reason.code).toBe(2)
      const unknown = await mailctl(['suppression', 'list', 'no-such-project'])
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toContain('NOT_FOUND')
    })
  })
}
