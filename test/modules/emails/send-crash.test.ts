import { afterAll, expect, test } from 'bun:test'
import { inArray } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { startWorkerProcess, until } from '../../helpers/worker'
import { projectWithDomain, startTestDns } from './fixture'
import { freePort } from '../../helpers/ports'

/**
 * kill -9 of a real API node under concurrent POST /v1/send: every email answered 200 before the kill is
 * in the database afterwards, queued for delivery (its outbound row), with its recipient's contact. The
 * sends of a batch are group-committed together (db/group-commit.ts runMany, emails/service.ts sendBatch):
 * an answer must come only after its batch's commit, on both stores.
 */

const dns = await startTestDns()
afterAll(() => dns.close())

forEachStore('send crash safety', (env) => {
  test('kill -9 mid-load: no answered send is lost', async () => {
    const p = await projectWithDomain(env, dns, `send-crash-${Math.random().toString(36).slice(2, 8)}.test`)
    const port = freePort()
    // The API role only: the node queues, nothing delivers, so every answered email must still be queued.
    const api = startWorkerProcess(env, { mxPort: 2525, dnsServer: dns.server }, { role: 'api', httpPort: port, env: { MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000' } })
    const answered: Array<{ email: string; contact: { id: string } }> = []
    let killed = false
    try {
      await until(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok === true, 30_000, 'the API node', 20)
      // 32 clients sending back to back (new and repeated recipients), until the node is killed after some answers.
      await Promise.all(Array.from({ length: 32 }, async (_, c) => {
        for (let i = 0; !killed; i++) {
          const res = await fetch(`http://127.0.0.1:${port}/v1/send`, {
            method: 'POST', headers: { authorization: `Bearer ${p.secretKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ to: `c${c}-${i % 3}@dest.test`, from: p.from, subject: `Crash ${i}`, body: '<p>x</p>' }),
          }).catch(() => null)
          if (!res) return
          if (res.status === 200 && !killed) answered.push(...((await res.json()) as { data: { emails: Array<{ email: string; contact: { id: string } }> } }).data.emails)
          if (answered.length >= 200 && !killed) {
            killed = true
            api.kill('SIGKILL')
          }
        }
      }))
    } finally {
      if (!killed) api.kill('SIGKILL')
      await api.exited
    }
    expect(answered.length).toBeGreaterThanOrEqual(200)
    const ids = answered.map((a) => a.email)
    const { emails, outboundQueue, contacts } = env.store.t
    const stored = new Set((await env.store.db.select({ id: emails.id }).from(emails).where(inArray(emails.id, ids))).map((r) => r.id))
    const queued = new Set((await env.store.db.select({ id: outboundQueue.emailId }).from(outboundQueue).where(inArray(outboundQueue.emailId, ids))).map((r) => r.id))
    const known = new Set((await env.store.db.select({ id: contacts.id }).from(contacts).where(inArray(contacts.id, answered.map((a) => a.contact.id)))).map((r) => r.id))
    expect(ids.filter((id) => !stored.has(id))).toEqual([])
    expect(ids.filter((id) => !queued.has(id))).toEqual([])
    expect(answered.filter((a) => !known.has(a.contact.id)).map((a) => a.email)).toEqual([])
  }, 90_000)
}, { dnsServers: [dns.server] })
