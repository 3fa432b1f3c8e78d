import { expect, test } from 'bun:test'
import { eq, inArray, sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../helpers/env'
import { projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { openStore } from '../../src/db/client'
import { claimDue, type QueueRow } from '../../src/mail/outbound/queue-repo'
import { OutcomeRecorder } from '../../src/mail/outbound/recorder'
import type { Outcome } from '../../src/mail/outbound/store'
import { parseReply } from '../../src/mail/outbound/replies'
import type { Delivery } from '../../src/mail/outbound/types'
import { emailEvents, loadForDelivery } from '../../src/modules/emails/repo'
import { deliveryStore } from '../../src/modules/emails/delivery'

/**
 * The delivery pipeline's batched writes (issue 33, item 5): a claim takes many rows in one statement and
 * never hands a row out twice, also to two nodes claiming at once; the recorder writes a batch of outcomes
 * of every kind together, each email with its own fields; an outcome the store refuses fails alone.
 */

const rnd = () => Math.random().toString(36).slice(2, 8)
const dns = await startTestDns()

/** Queues `n` emails through /v1/send (50 recipients a request); returns their ids. */
async function queued(env: TestEnv, n: number): Promise<string[]> {
  const p = await projectWithDomain(env, dns, `batch-${rnd()}.test`)
  const ids: string[] = []
  for (let i = 0; i < n; i += 50) {
    const to = Array.from({ length: Math.min(50, n - i) }, (_, k) => `r${i + k}-${rnd()}@dest-${rnd()}.test`)
    const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { from: p.from, to, subject: 'Hi', body: '<p>Hi</p>' } })
    expect(res.status).toBe(200)
    ids.push(...res.body.data.emails.map((e: { email: string }) => e.email))
  }
  return ids
}

/** Claims every due row among `ids` for `worker` and pairs each with its email, as the pipeline does. */
async function claimed(env: TestEnv, worker: string, ids: string[]): Promise<Map<string, { row: QueueRow; email: Outcome['email'] }>> {
  const rows = (await claimDue(env.store, worker, 1000, 60_000, new Date())).filter((r) => ids.includes(r.emailId))
  const emails = new Map((await loadForDelivery(env.store, rows.map((r) => r.emailId))).map((e) => [e.id, e]))
  return new Map(rows.map((r) => [r.emailId, { row: r, email: emails.get(r.emailId) as Outcome['email'] }]))
}

function outcome(c: { row: QueueRow; email: Outcome['email'] }, delivery: Delivery): Outcome {
  return { email: c.email, queue: c.row, delivery, envelopeFrom: 'bounce@example.test', size: 1234, at: new Date() }
}

forEachStore('batched delivery writes', (env) => {
  test('a claim takes many rows at once, marks their emails SENDING, and skips the domains it is told to', async () => {
    const ids = await queued(env, 60)
    const { emails, outboundQueue: q } = env.store.t
    const [skipped] = await env.store.db.select({ domain: q.domain }).from(q).where(eq(q.emailId, ids[0]))
    const rows = (await claimDue(env.store, `claim-${rnd()}:1`, 1000, 60_000, new Date(), [skipped.domain])).filter((r) => ids.includes(r.emailId))
    expect(rows).toHaveLength(59)
    expect(rows.map((r) => r.emailId)).not.toContain(ids[0])
    for (const r of rows) {
      expect(r.lockedBy).toStartWith('claim-')
      expect(r.lockedUntil).toBeInstanceOf(Date)
      expect(r.runAt.getTime()).toBe(r.lockedUntil?.getTime() ?? 0)
      expect(r.createdAt).toBeInstanceOf(Date)
    }
    const statuses = await env.store.db.select({ id: emails.id, status: emails.status }).from(emails).where(inArray(emails.id, ids))
    expect(statuses.filter((s) => s.status === 'SENDING').map((s) => s.id).sort()).toEqual(rows.map((r) => r.emailId).sort())
    expect(statuses.find((s) => s.id === ids[0])?.status).toBe('PENDING')
  })

  test('two nodes claiming at once never get the same row, and together get every row', async () => {
    const ids = new Set(await queued(env, 300))
    // A second store on the same database: another node's connections.
    const other = openStore(env.store.url, { sqliteSynchronous: 'NORMAL' })
    try {
      const taken: string[][] = [[], []]
      await Promise.all([env.store, other].map(async (store, i) => {
        for (;;) {
          const rows = await claimDue(store, `node${i}-${rnd()}:1`, 17, 60_000, new Date())
          if (!rows.length) return
          taken[i].push(...rows.map((r) => r.emailId).filter((id) => ids.has(id)))
        }
      }))
      const all = [...taken[0], ...taken[1]]
      expect(new Set(all).size).toBe(all.length)
      expect(new Set(all)).toEqual(ids)
      // On PostgreSQL both took part (a claim of 17 rows cannot take them all); SQLite's single writer
      // may serve one node's claims one after the other.
      if (env.store.dialect === 'pg') {
        expect(taken[0].length).toBeGreaterThan(0)
        expect(taken[1].length).toBeGreaterThan(0)
      }
    } finally {
      await other.close()
    }
  }, 120_000)

  test('a batch of outcomes of every kind is written together, each email with its own status, facts, queue row and events', async () => {
    const ids = await queued(env, 5)
    const worker = `rec-${rnd()}:1`
    const c = await claimed(env, worker, ids)
    expect(c.size).toBe(5)
    const [delivered, relayed, bounced, failed, deferred] = ids.map((id) => c.get(id) as { row: QueueRow; email: Outcome['email'] })
    const recorder = new OutcomeRecorder(env.deps, deliveryStore, { workerId: worker, windowMs: 200 })
    await Promise.all([
      recorder.record(outcome(delivered, { kind: 'accepted', final: true, host: 'mx.dest.test', reply: parseReply('250 2.0.0 Ok: queued as A1'), secure: false })),
      recorder.record(outcome(relayed, { kind: 'accepted', final: false, host: 'relay.test', reply: parseReply('250 2.0.0 Ok: queued as B2'), secure: true })),
      recorder.record(outcome(bounced, { kind: 'bounced', host: 'mx.dest.test', reply: parseReply('550 5.1.1 No such user'), suppress: false })),
      recorder.record(outcome(failed, { kind: 'failed', reason: 'The message could not be built' })),
      recorder.record(outcome(deferred, { kind: 'deferred', host: 'mx.dest.test', reply: parseReply('451 4.7.1 Greylisted, please try again in 300 seconds'), throttle: false })),
    ])
    const { emails: e, outboundQueue: q } = env.store.t
    const rows = new Map((await env.store.db.select().from(e).where(inArray(e.id, ids))).map((r) => [r.id, r]))
    const row = (id: string) => rows.get(id) as NonNullable<ReturnType<typeof rows.get>>
    expect(row(delivered.email.id)).toMatchObject({ status: 'DELIVERED', attempts: 1, lastReply: '250 2.0.0 Ok: queued as A1', deliveredTo: 'mx.dest.test', size: 1234 })
    expect(row(delivered.email.id).deliveredAt).toBeInstanceOf(Date)
    expect(row(delivered.email.id).sentAt).toBeInstanceOf(Date)
    expect(row(relayed.email.id)).toMatchObject({ status: 'SENT', attempts: 1, lastReply: '250 2.0.0 Ok: queued as B2', deliveredTo: 'relay.test', deliveredAt: null })
    expect(row(bounced.email.id)).toMatchObject({ status: 'BOUNCED', attempts: 1, bounceType: 'hard', lastReply: '550 5.1.1 No such user', deliveredTo: 'mx.dest.test', sentAt: null })
    expect(row(bounced.email.id).bouncedAt).toBeInstanceOf(Date)
    expect(row(failed.email.id)).toMatchObject({ status: 'FAILED', attempts: 1, lastReply: 'The message could not be built' })
    expect(row(failed.email.id).failedAt).toBeInstanceOf(Date)
    expect(row(deferred.email.id)).toMatchObject({ status: 'SENDING', attempts: 1, lastReply: '451 4.7.1 Greylisted, please try again in 300 seconds' })
    // Finals leave the queue; the deferral is rescheduled at the server's hint, no longer leased.
    const left = await env.store.db.select().from(q).where(inArray(q.emailId, ids))
    expect(left.map((r) => r.emailId)).toEqual([deferred.email.id])
    expect(left[0]).toMatchObject({ attempts: 1, lockedBy: null, lockedUntil: null, lastError: '451 4.7.1 Greylisted, please try again in 300 seconds' })
    expect(left[0].runAt.getTime()).toBeGreaterThan(Date.now() + 250_000)
    const names = async (id: string) => (await emailEvents(env.store, delivered.email.projectId, id, ['email.sent', 'email.delivery', 'email.bounce', 'email.failed', 'email.deferred'])).map((v) => v.name).sort()
    expect(await names(delivered.email.id)).toEqual(['email.delivery', 'email.sent'])
    expect(await names(relayed.email.id)).toEqual(['email.sent'])
    expect(await names(bounced.email.id)).toEqual(['email.bounce'])
    expect(await names(failed.email.id)).toEqual(['email.failed'])
    expect(await names(deferred.email.id)).toEqual(['email.deferred'])
  })

  test('a deferral whose lease another worker took meanwhile is not written by the old holder', async () => {
    const ids = await queued(env, 2)
    const worker = `old-${rnd()}:1`
    const c = await claimed(env, worker, ids)
    const [mine, lost] = ids.map((id) => c.get(id) as { row: QueueRow; email: Outcome['email'] })
    const { outboundQueue: q, emails: e } = env.store.t
    await env.store.tx((db) => db.update(q).set({ lockedBy: 'new-holder:1' }).where(eq(q.emailId, lost.email.id)))
    const recorder = new OutcomeRecorder(env.deps, deliveryStore, { workerId: worker, windowMs: 200 })
    const reply = parseReply('451 4.3.0 Try later')
    await Promise.all([mine, lost].map((x) => recorder.record(outcome(x, { kind: 'deferred', host: null, reply, throttle: false }))))
    const rows = new Map((await env.store.db.select().from(q).where(inArray(q.emailId, ids))).map((r) => [r.emailId, r]))
    expect(rows.get(mine.email.id)).toMatchObject({ attempts: 1, lockedBy: null })
    expect(rows.get(lost.email.id)).toMatchObject({ attempts: 0, lockedBy: 'new-holder:1' })
    const attempts = new Map((await env.store.db.select({ id: e.id, attempts: e.attempts }).from(e).where(inArray(e.id, ids))).map((r) => [r.id, r.attempts]))
    expect(attempts.get(mine.email.id)).toBe(1)
    expect(attempts.get(lost.email.id)).toBe(0)
  })

  test('one outcome the store refuses fails alone: the others of its batch are recorded', async () => {
    const ids = await queued(env, 4)
    const worker = `fail-${rnd()}:1`
    const c = await claimed(env, worker, ids)
    const bad = ids[2]
    // A row-level refusal by the database (as a constraint would): updating this one email raises.
    const trigger = `refuse_${rnd()}`
    if (env.store.dialect === 'sqlite') {
      await env.store.tx((db) => env.store.exec(sql.raw(`CREATE TRIGGER ${trigger} BEFORE UPDATE ON emails WHEN NEW.id = '${bad}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`), db))
    } else {
      await env.store.tx((db) => env.store.exec(sql.raw(`CREATE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`), db))
      await env.store.tx((db) => env.store.exec(sql.raw(`CREATE TRIGGER ${trigger} BEFORE UPDATE ON emails FOR EACH ROW WHEN (NEW.id = '${bad}') EXECUTE FUNCTION ${trigger}()`), db))
    }
    try {
      const recorder = new OutcomeRecorder(env.deps, deliveryStore, { workerId: worker, windowMs: 200 })
      const results = await Promise.allSettled(ids.map((id) => recorder.record(outcome(c.get(id) as { row: QueueRow; email: Outcome['email'] }, {
        kind: 'accepted', final: true, host: 'mx.dest.test', reply: parseReply('250 2.0.0 Ok'), secure: false,
      }))))
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
      const { emails: e, outboundQueue: q } = env.store.t
      const statuses = new Map((await env.store.db.select({ id: e.id, status: e.status }).from(e).where(inArray(e.id, ids))).map((r) => [r.id, r.status]))
      for (const id of ids) expect(statuses.get(id)).toBe(id === bad ? 'SENDING' : 'DELIVERED')
      // The refused one is still queued, leased: it goes out again after its lease, as after a crash.
      const left = await env.store.db.select({ id: q.emailId, lockedBy: q.lockedBy }).from(q).where(inArray(q.emailId, ids))
      expect(left).toEqual([{ id: bad, lockedBy: worker }])
    } finally {
      await env.store.tx((db) => env.store.exec(sql.raw(`DROP TRIGGER ${trigger}${env.store.dialect === 'pg' ? ' ON emails' : ''}`), db))
    }
  })
}, { dnsServers: [dns.server] })
