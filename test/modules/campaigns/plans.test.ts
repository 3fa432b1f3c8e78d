import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openStore } from '../../../src/db/client'
import { migrate } from '../../../src/db/migrate'
import { audienceBatchQuery, contactsByIdsQuery } from '../../../src/modules/campaigns/repo'

// SQLite only: the query plans of the campaign's walks over contacts. With the project's index, each
// fan-out batch (and each delivery batch's contact look-up) cost time in proportion to the project's
// contacts, which made a large campaign quadratic. Both must stay on the primary key.
const dir = mkdtempSync(join(tmpdir(), 'mailctl-plans-'))
const store = openStore(`sqlite://${join(dir, 'mailctl.db')}`)
afterAll(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

/** SQLite's plan of a statement (its parameters left unbound: the plan does not depend on them). */
async function planOf(query: { toSQL(): { sql: string } }): Promise<string> {
  const rows = await store.rows<{ detail: string }>(sql.raw(`EXPLAIN QUERY PLAN ${query.toSQL().sql}`))
  return rows.map((r) => r.detail).join('\n')
}

test('the fan-out walks the audience by primary key, without sorting the project\'s contacts', async () => {
  await migrate(store)
  const projectId = Bun.randomUUIDv7()
  const plan = await planOf(audienceBatchQuery(store, store.db, projectId, sql`${store.t.contacts.subscribed} = 1`, Bun.randomUUIDv7(), 500))
  expect(plan).toContain('sqlite_autoindex_contacts_1')
  expect(plan).not.toContain('TEMP B-TREE')
  expect(plan).not.toContain('contacts_project')
})

test('a delivery batch looks its contacts up by primary key, however many ids it names', async () => {
  const ids = Array.from({ length: 300 }, () => Bun.randomUUIDv7())
  const plan = await planOf(contactsByIdsQuery(store, store.db, Bun.randomUUIDv7(), ids))
  expect(plan).toContain('sqlite_autoindex_contacts_1')
  expect(plan).not.toContain('contacts_project')
})
