import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createPrivateKey, createPublicKey } from 'node:crypto'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { loadConfig } from '../../src/config'
import { ctxFor } from '../../src/deps'
import { buildApp } from '../../src/http/app'
import { closeDeps, createDeps } from '../../src/main'
import { signingKeyFor } from '../../src/modules/domains/service'
import { copyStore } from '../../src/ops/copy'
import { insertTestDomain } from '../helpers/domains'
import { freshPgDatabase, pgReachableSync, TestEnv } from '../helpers/env'
import { must } from '../helpers/must'
import { wfClient } from '../modules/workflows/fixture'

/*
 * `mailctl store copy` (issue 39 item 3): a SQLite install, written to while the copy runs, into fresh
 * PostgreSQL databases; every table with the same ids and verified; values PostgreSQL cannot store are
 * reported per row and nothing is left in the target; a non-empty target needs --force.
 */

const run = pgReachableSync()
const env = new TestEnv('sqlite', { rateLimitPerMinute: 100_000_000 })
const drops: Array<() => Promise<void>> = []

beforeAll(() => env.start(), 60_000)
afterAll(async () => {
  await env.stop()
  for (const d of drops) await d().catch(() => {})
}, 60_000)

async function emptyPg(): Promise<string> {
  const db = await freshPgDatabase()
  drops.push(() => db.drop())
  return db.url
}

async function pgRows(url: string, text: string): Promise<Array<Record<string, unknown>>> {
  const c = postgres(url, { max: 1, onnotice: () => {} })
  try { return await c.unsafe(text) } finally { await c.end() }
}

async function sqliteCount(table: string): Promise<number> {
  const [{ n }] = await env.store.rows<{ n: number }>(sql.raw(`SELECT count(*) AS n FROM "${table}"`))
  return n
}

;(run ? describe : describe.skip)('store copy', () => {
  let projectKey: string
  let projectId: string
  let domain: string
  let publicDer: Buffer

  test('copies every table with the same ids while the install writes, verifies them, and the new nodes work with the printed settings', async () => {
    const p = await env.project()
    projectKey = p.secretKey
    projectId = p.id
    domain = `copy-${Date.now().toString(36)}.test`
    const { keys } = await insertTestDomain(env, p.id, domain, { verified: true })
    publicDer = Buffer.from(keys.publicKey, 'base64')
    const tpl = await env.request('POST', '/templates', { key: p.secretKey, body: { name: 'Welcome', subject: 'Hi', body: '<p>Hello</p>', from: `hello@${domain}`, type: 'TRANSACTIONAL' } })
    expect(tpl.status).toBe(201)
    const welcome = tpl.body.id as string
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Copy me', eventName: 'signup' })
    const wait = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'purchase', timeout: 86_400 }, 'Purchase?')
    const bought = await c.step(wf.id, 'EXIT', { reason: 'purchased' }, 'Bought')
    const gone = await c.step(wf.id, 'EXIT', { reason: 'timed out' }, 'Gone')
    await c.link(wf.id, wf.steps[0].id, wait.id)
    await c.link(wf.id, wait.id, bought.id, 'event')
    await c.link(wf.id, wait.id, gone.id, 'timeout')
    await c.enable(wf.id)
    for (let i = 0; i < 20; i++) {
      expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: `c${i}@copy.test`, event: 'signup', data: { i, nested: { list: [1, 'two', null] } } } })).status).toBe(200)
    }
    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'queued@copy.test', template: welcome } })
    expect(sent.status).toBeLessThan(300)
    await env.request('POST', '/suppressions', { key: p.secretKey, body: { email: 'never@copy.test' } })

    const url = await emptyPg()
    let writing = true
    let written = 0
    const writer = (async () => {
      while (writing) {
        const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `during${written}@copy.test` } })
        expect(r.status).toBeLessThan(300)
        written++
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    const result = await copyStore(env.deps, url)
    writing = false
    await writer
    expect(written).toBeGreaterThan(0)
    expect(result.unstorable).toEqual([])
    expect(result.ok).toBe(true)
    expect(result.tables.every((t) => t.ok)).toBe(true)
    for (const name of ['projects', 'domains', 'contacts', 'events', 'emails', 'outbound_queue', 'jobs', 'workflows', 'workflow_steps', 'templates', 'secret_checks', 'activity_counts']) {
      expect(result.tables.map((t) => t.name)).toContain(name)
    }
    // Each table holds what the SQLite snapshot held, with the same ids.
    for (const t of result.tables) {
      const [{ n }] = await pgRows(url, `SELECT count(*)::int AS n FROM "${t.name}"`)
      expect({ table: t.name, n }).toEqual({ table: t.name, n: t.rows })
    }
    const contacts = must(result.tables.find((t) => t.name === 'contacts'), 'contacts').rows
    expect(contacts).toBeLessThanOrEqual(await sqliteCount('contacts'))
    for (const [table, id] of [['outbound_queue', 'email_id'], ['workflow_steps', 'id'], ['events', 'id'], ['emails', 'id']]) {
      const ids = (await env.store.rows<{ id: string }>(sql.raw(`SELECT ${id} AS id FROM ${table} ORDER BY ${id} LIMIT 50`))).map((r) => r.id)
      expect(ids.length).toBeGreaterThan(0)
      const there = (await pgRows(url, `SELECT ${id} AS id FROM ${table} WHERE ${id} IN (${ids.map((i) => `'${i}'`).join(',')})`)).map((r) => r.id as string).sort()
      expect(there).toEqual([...ids].sort())
    }
    // The contact search's PostgreSQL-only tables were rebuilt as the contacts arrived.
    const [{ n: searchKeys }] = await pgRows(url, 'SELECT count(*)::int AS n FROM contact_search_keys')
    expect(searchKeys).toBe(contacts)
    expect(Object.keys(result.settings).sort()).toEqual(['MAILCTL_DKIM_KEY', 'MAILCTL_JWT_SECRET'])

    // A node on the new database, with the printed settings: it starts (the keys match those recorded),
    // answers the project's key and signs with the domain's DKIM key.
    const config = loadConfig({ env: {}, overrides: { dataDir: env.config.dataDir, databaseUrl: url, logLevel: 'silent', jwtSecret: result.settings.MAILCTL_JWT_SECRET, dkimKey: result.settings.MAILCTL_DKIM_KEY } })
    const deps = await createDeps(config, { create: false })
    try {
      const res = await buildApp(deps).handle(new Request(`http://localhost/workflows/${wf.id}`, { headers: { authorization: `Bearer ${projectKey}` } }))
      expect(res.status).toBe(200)
      const key = must(await signingKeyFor(ctxFor(deps, projectId, { kind: 'cli' }), domain), 'signing key')
      const derived = createPublicKey(createPrivateKey(key.privateKeyPem)).export({ format: 'der', type: 'spki' })
      expect(Buffer.from(derived).equals(publicDer)).toBe(true)
    } finally {
      await closeDeps(deps)
    }
  }, 120_000)

  test('an install already on PostgreSQL is refused before the target is touched', async () => {
    const pg = new TestEnv('pg')
    await pg.start()
    try {
      const url = await emptyPg()
      const err = await copyStore(pg.deps, url).then(() => null, (e: Error) => e)
      expect(err?.message).toMatch(/store copy reads a SQLite install: DATABASE_URL is PostgreSQL already/)
      expect(await pgRows(url, "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).toEqual([{ n: 0 }])
    } finally { await pg.stop() }
  }, 60_000)

  test('a target that is not empty is refused without --force and replaced with it', async () => {
    const url = await emptyPg()
    expect((await copyStore(env.deps, url)).ok).toBe(true)
    const err = await copyStore(env.deps, url).then(() => null, (e: Error) => e)
    expect(err?.message).toMatch(/not empty/)
    const again = await copyStore(env.deps, url, { force: true })
    expect(again.ok).toBe(true)
  }, 120_000)

  test('values PostgreSQL cannot store are reported per row, never changed, and nothing is left in the target', async () => {
    const p = await env.project()
    const bad = `bad-${Date.now().toString(36)}.test`
    await insertTestDomain(env, p.id, bad, { verified: true })
    const a = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'nul@copy.test' } })
    const b = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'surrogate@copy.test' } })
    const nulJson = '{"note":"a\\u0000b"}'
    const loneJson = '{"name":"\\ud800"}'
    await env.store.exec(sql`UPDATE contacts SET data = ${nulJson} WHERE id = ${a.body.id}`)
    await env.store.exec(sql`UPDATE contacts SET data = ${loneJson} WHERE id = ${b.body.id}`)
    const tpl = await env.request('POST', '/templates', { key: p.secretKey, body: { name: 'nul', subject: 's', body: 'b', from: `hello@${bad}`, type: 'MARKETING' } })
    expect(tpl.status).toBe(201)
    await env.store.exec(sql`UPDATE templates SET name = ${'with\u0000nul'} WHERE id = ${tpl.body.id}`)

    const url = await emptyPg()
    const result = await copyStore(env.deps, url)
    expect(result.ok).toBe(false)
    const reported = result.unstorable.map((u) => `${u.table} ${JSON.stringify(u.key)} ${u.column}`).sort()
    expect(reported).toEqual([
      `contacts {"id":"${a.body.id}"} data`,
      `contacts {"id":"${b.body.id}"} data`,
      `templates {"id":"${tpl.body.id}"} name`,
    ].sort())
    expect(result.unstorable.find((u) => u.key.id === a.body.id)?.problem).toMatch(/NUL/)
    expect(result.unstorable.find((u) => u.key.id === b.body.id)?.problem).toMatch(/surrogate/)
    // The target is as it was (empty) and the source unchanged.
    const [{ n }] = await pgRows(url, "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")
    expect(n).toBe(0)
    const [row] = await env.store.rows<{ data: string }>(sql`SELECT data FROM contacts WHERE id = ${a.body.id}`)
    expect(row.data).toBe(nulJson)
    // Once fixed in the source, the copy goes through.
    await env.store.exec(sql`UPDATE contacts SET data = '{}' WHERE id IN (${a.body.id}, ${b.body.id})`)
    await env.store.exec(sql`UPDATE templates SET name = 'fixed' WHERE id = ${tpl.body.id}`)
    expect((await copyStore(env.deps, url)).ok).toBe(true)
  }, 120_000)
})
