import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import postgres from 'postgres'
import { loadConfig } from '../../src/config'
import { appliedMigrations } from '../../src/db/migrate'
import { embeddedMigrations } from '../../src/db/migrations.macro' with { type: 'macro' }
import type { Deps } from '../../src/deps'
import { buildApp, type App } from '../../src/http/app'
import { Worker } from '../../src/jobs/queue'
import { createOutbound } from '../../src/mail/outbound'
import { closeDeps, createDeps } from '../../src/main'
import { campaignJobs } from '../../src/modules/campaigns/jobs'
import { settleEvents } from '../helpers/events'
import { workflowJobs } from '../../src/modules/workflows/jobs'
import { freshPgDatabase, pgReachableSync } from '../helpers/env'
import { TestClock } from '../helpers/clock'
import { until } from '../helpers/worker'
import { deliveryStore } from '../../src/modules/emails/delivery'

/*
 * Upgrades keep everything (issue 39, item 4). Each folder of test/fixtures/upgrade holds a SQLite data dir
 * and a PostgreSQL dump written by an earlier mailctl (scripts/upgrade-fixture.ts, docs/upgrades.md). The
 * current code opens each as `serve` would (createDeps: newer migrations, the key checks), and then every
 * record the old version wrote reads back through the API, the old DKIM key signs new mail, the links in
 * mail the old version sent still work, and the scheduled campaign and the waiting workflow executions go on.
 */

interface Manifest {
  version: string
  commit: string
  store: 'sqlite' | 'pg'
  publicUrl: string
  secret?: string
  project: { id: string; publicKey: string; secretKey: string }
  from: string
  domain: { id: string; name: string; dkimRecordName: string; dkimRecord: string }
  contacts: Array<{ id: string; email: string; subscribed: boolean }>
  templates: string[]
  segment: string
  suppression: string
  webhook: string
  email: { id: string; to: string }
  campaigns: { sent: string; scheduled: string; scheduledFor: string }
  workflow: { id: string; executions: string[] }
  links: { open: string; click: string; clickTarget: string; unsubscribe: string; unsubscribeContact: string }
}

const ROOT = join(import.meta.dir, '..', 'fixtures', 'upgrade')
const versions = existsSync(ROOT) ? readdirSync(ROOT).sort() : []
/** The last migration of each store (their lists differ: a store may need a migration the other does not). */
const LATEST = { sqlite: embeddedMigrations('sqlite').at(-1)?.name, pg: embeddedMigrations('pg').at(-1)?.name }

const dirs: string[] = []
const drops: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const d of drops) await d().catch(() => {})
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
}, 60_000)

/** The fixture's store, laid out anew: the SQLite data dir copied, or the dump loaded into a fresh database. */
async function open(version: string, kind: 'sqlite' | 'pg'): Promise<{ manifest: Manifest; deps: Deps }> {
  const from = join(ROOT, version, kind)
  const manifest = JSON.parse(readFileSync(join(from, 'manifest.json'), 'utf8')) as Manifest
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-upgrade-'))
  dirs.push(dir)
  const dataDir = join(dir, 'data')
  let databaseUrl = `sqlite://${join(dataDir, 'mailctl.db')}`
  if (kind === 'sqlite') {
    cpSync(from, dataDir, { recursive: true, filter: (f) => !f.endsWith('manifest.json') })
  } else {
    const db = await freshPgDatabase()
    drops.push(() => db.drop())
    databaseUrl = db.url
    // A plain pg_dump: psql's meta-commands (\restrict) are not SQL. Its own connection, since the dump
    // empties that session's search_path.
    const dump = readFileSync(join(from, 'dump.sql'), 'utf8').split('\n').filter((l) => !l.startsWith('\\')).join('\n')
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    await sql.unsafe(dump)
    await sql.end()
  }
  const config = loadConfig({
    env: {},
    overrides: {
      dataDir, databaseUrl, logLevel: 'silent', hostname: 'mx.mailctl.test', publicUrl: manifest.publicUrl, outbound: 'capture',
      sqliteSynchronous: 'NORMAL', rateLimitPerMinute: 100_000_000,
      // SQLite: the keys are the data dir's files, as the old version wrote them; PostgreSQL: the settings.
      ...(manifest.secret ? { secret: manifest.secret } : {}),
    },
  })
  const deps = await createDeps(config, { create: false })
  drops.unshift(() => closeDeps(deps))
  return { manifest, deps }
}

for (const version of versions) {
  for (const kind of ['sqlite', 'pg'] as const) {
    const run = existsSync(join(ROOT, version, kind)) && (kind === 'sqlite' || pgReachableSync())
    ;(run ? describe : describe.skip)(`upgrade from ${version} [${kind}]`, () => {
      let m: Manifest
      let deps: Deps
      let app: App
      const call = async (method: string, path: string, body?: unknown) => {
        const headers: Record<string, string> = { authorization: `Bearer ${m.project.secretKey}` }
        if (body !== undefined) headers['content-type'] = 'application/json'
        const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }))
        const text = await res.text()
        return { status: res.status, body: text ? JSON.parse(text) : null }
      }
      const get = async (path: string) => {
        const r = await call('GET', path)
        expect({ path, status: r.status }).toEqual({ path, status: 200 })
        return r.body
      }
      /** The path of a link the old version put in a message (its host is the public URL). */
      const local = (url: string) => new URL(url).pathname + new URL(url).search

      beforeAll(async () => {
        ;({ manifest: m, deps } = await open(version, kind))
        app = buildApp(deps)
      }, 120_000)

      test('the current version migrates it to its latest migration', async () => {
        expect((await appliedMigrations(deps.store)).at(-1)).toBe(LATEST[kind])
      })

      test('every record reads back through the API', async () => {
        for (const c of m.contacts) {
          const got = await get(`/contacts/${c.id}`)
          expect({ email: got.email, subscribed: got.subscribed }).toEqual({ email: c.email, subscribed: c.subscribed })
        }
        expect((await get(`/contacts/${m.contacts[0].id}`)).data).toMatchObject({ firstName: 'Person0', plan: 'pro' })
        const [receipt, newsletter] = [await get(`/templates/${m.templates[0]}`), await get(`/templates/${m.templates[1]}`)]
        expect([receipt.name, receipt.type, newsletter.name, newsletter.type]).toEqual(['Receipt', 'TRANSACTIONAL', 'Newsletter', 'MARKETING'])
        expect((await get(`/segments/${m.segment}`)).name).toBe('Pro plan')
        expect((await get(`/suppressions/${encodeURIComponent(m.suppression)}`)).email).toBe(m.suppression)
        expect(await get(`/webhooks/endpoints/${m.webhook}`)).toMatchObject({ url: 'https://hooks.example.com/mailctl', enabled: false })
        const domains = await get(`/domains/project/${m.project.id}`)
        expect((Array.isArray(domains) ? domains : domains.data).find((d: { id: string }) => d.id === m.domain.id)).toMatchObject({ domain: m.domain.name, verified: true })
        expect(await get(`/emails/${m.email.id}`)).toMatchObject({ status: 'CLICKED' })
        const sent = await get(`/campaigns/${m.campaigns.sent}`)
        expect(sent.status).toBe('SENT')
        expect((await get(`/campaigns/${m.campaigns.sent}/stats`))).toBeTruthy()
        expect((await get(`/campaigns/${m.campaigns.scheduled}`)).status).toBe('SCHEDULED')
        const wf = await get(`/workflows/${m.workflow.id}`)
        expect({ enabled: wf.enabled, steps: wf.steps.map((s: { type: string }) => s.type) }).toEqual({ enabled: true, steps: ['TRIGGER', 'DELAY', 'SEND_EMAIL'] })
        const executions = (await get(`/workflows/${m.workflow.id}/executions?limit=100`)).data as Array<{ id: string; status: string }>
        expect(executions.map((e) => e.id).sort()).toEqual([...m.workflow.executions].sort())
        expect(executions.every((e) => e.status === 'WAITING')).toBe(true)
        // The events: the old version's open and click of the email, and a tracked event.
        const events = async (contactId: string) => {
          const body = await get(`/events/contact/${contactId}?limit=100`)
          return ((Array.isArray(body) ? body : body.data) as Array<{ name: string }>).map((e) => e.name)
        }
        expect(await events(m.contacts[0].id)).toEqual(expect.arrayContaining(['email.open', 'email.click']))
        expect(await events(m.contacts[3].id)).toContain('order.placed')
        expect(await events(m.contacts[1].id)).toContain('signup')
      }, 60_000)

      test('the old links still work: open pixel, click redirect, one-click unsubscribe', async () => {
        const open = await app.handle(new Request(`http://localhost${local(m.links.open)}`))
        expect(open.status).toBe(200)
        expect(open.headers.get('content-type')).toContain('image/')
        const click = await app.handle(new Request(`http://localhost${local(m.links.click)}`, { redirect: 'manual' }))
        expect(click.status).toBe(302)
        expect(click.headers.get('location')).toBe(m.links.clickTarget)
        const who = m.contacts.find((c) => c.email === m.links.unsubscribeContact)
        if (!who) throw new Error('the unsubscribe link\'s contact is not in the manifest')
        expect((await get(`/contacts/${who.id}`)).subscribed).toBe(true)
        const page = await app.handle(new Request(`http://localhost${local(m.links.unsubscribe)}`))
        expect(page.status).toBe(200)
        const done = await app.handle(new Request(`http://localhost${local(m.links.unsubscribe)}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' }))
        expect(done.status).toBeLessThan(300)
        expect((await get(`/contacts/${who.id}`)).subscribed).toBe(false)
        // An altered link is still refused.
        const altered = await app.handle(new Request(`http://localhost${local(m.links.click).slice(0, -3)}xyz`, { redirect: 'manual' }))
        expect(altered.status).not.toBe(302)
      }, 60_000)

      test('the old DKIM key signs new mail, verifying against the DNS record the old version published', async () => {
        const r = await call('POST', '/v1/send', { to: 'person3@example.com', subject: 'After the upgrade', body: '<p>Still signed</p>', from: m.from })
        expect(r.status).toBe(200)
        const pipeline = createOutbound(deps, deliveryStore, { signerThreads: 0, pollMs: 50 })
        pipeline.start()
        try {
          const { mailCapture } = deps.store.t
          let raw = ''
          await until(async () => {
            const rows = await deps.store.db.select().from(mailCapture)
            raw = rows.find((x) => x.subject === 'After the upgrade')?.raw ?? ''
            return raw !== ''
          }, 30_000, 'the new message')
          const record = m.domain.dkimRecord
          const res = await dkimVerify(Buffer.from(raw), {
            resolver: async (name: string, type: string) => {
              if (type === 'TXT' && name === m.domain.dkimRecordName) return [[record]]
              throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
            },
          })
          expect(res.results.map((x: { status: { result: string } }) => x.status.result)).toEqual(['pass'])
        } finally {
          await pipeline.stop()
        }
      }, 60_000)

      test('the scheduled campaign and the waiting executions go on', async () => {
        // Their time comes: the workflow engine's and the job worker's clock two hours past the fixture's
        // schedule (the DELAY is one hour, the campaign is scheduled an hour after the fixture was written).
        const later = new Date(Math.max(Date.now(), Date.parse(m.campaigns.scheduledFor)) + 2 * 3_600_000)
        deps.clock = new TestClock(later)
        // The campaign scheduler reads the wall clock (not deps.clock): while the fixture's schedule is still
        // ahead of it, its time is moved in the database rather than waited for.
        if (Date.parse(m.campaigns.scheduledFor) > Date.now() - 1000) {
          const { campaigns } = deps.store.t
          await deps.store.tx((db) => db.update(campaigns).set({ scheduledFor: new Date(Date.now() - 60_000) }).where(eq(campaigns.id, m.campaigns.scheduled)))
        }
        const worker = new Worker(deps, [...campaignJobs, ...workflowJobs])
        await worker.ensureRecurring()
        const pipeline = createOutbound(deps, deliveryStore, { signerThreads: 0, pollMs: 50 })
        pipeline.start()
        try {
          await until(async () => {
            await worker.drain()
            await settleEvents()
            const c = await get(`/campaigns/${m.campaigns.scheduled}`)
            const ex = (await get(`/workflows/${m.workflow.id}/executions?limit=100`)).data as Array<{ status: string }>
            return c.status === 'SENT' && ex.every((e) => e.status === 'COMPLETED')
          }, 60_000, 'the scheduled campaign sent and the executions completed', 200)
          // Their mail goes out: the campaign to every contact subscribed now, the workflow's (marketing) mail to
          // those of its two contacts still subscribed (the unsubscribe link above may have removed one).
          const subscribed = new Set<string>()
          for (const c of m.contacts) if ((await get(`/contacts/${c.id}`)).subscribed) subscribed.add(c.email)
          const welcomed = ['person1@example.com', 'person2@example.com'].filter((e) => subscribed.has(e)).sort()
          const { mailCapture } = deps.store.t
          const to = (rows: Array<{ subject: string; toAddress: string }>, prefix: string) => rows.filter((x) => x.subject.startsWith(prefix)).map((x) => x.toAddress).sort()
          await until(async () => {
            const rows = await deps.store.db.select().from(mailCapture)
            return to(rows, 'News for').length === welcomed.length && to(rows, 'Summer sale').length === subscribed.size
          }, 30_000, 'the campaign\'s and the workflow\'s mail')
          const rows = await deps.store.db.select().from(mailCapture)
          expect(to(rows, 'News for')).toEqual(welcomed)
          expect(to(rows, 'Summer sale')).toEqual([...subscribed].sort())
        } finally {
          await pipeline.stop()
        }
      }, 120_000)
    })
  }
}

test('there is an upgrade fixture', () => {
  expect(versions.length).toBeGreaterThan(0)
})
