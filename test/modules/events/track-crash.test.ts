import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { startWorkerProcess, until } from '../../helpers/worker'
import { freePort } from '../../helpers/ports'

/**
 * kill -9 of a real server under concurrent tracks: every track answered 200 before the kill is in the
 * database afterwards. On PostgreSQL the tracks are group-committed a batch at a time (db/group-commit.ts,
 * events/track-write.ts trackBatch), and each answer must come only after its batch's commit.
 */

const delivery = { mxPort: 2525, dnsServer: '127.0.0.1:5353' }

forEachStore('track crash safety', (env) => {
  test('kill -9 mid-load: no answered track is lost', async () => {
    const p = await env.project()
    const port = freePort()
    const api = startWorkerProcess(env, delivery, { role: 'api', httpPort: port, env: { MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000' } })
    const answered: string[] = []
    let killed = false
    try {
      await until(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok === true, 30_000, 'the API node', 20)
      // 32 clients sending back to back (new and repeated contacts), until the node is killed after some answers.
      await Promise.all(Array.from({ length: 32 }, async (_, c) => {
        for (let i = 0; !killed; i++) {
          const res = await fetch(`http://127.0.0.1:${port}/v1/track`, {
            method: 'POST', headers: { authorization: `Bearer ${p.publicKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ email: `c${c}-${i % 3}@example.com`, event: 'crash.load', data: { i } }),
          }).catch(() => null)
          if (!res) return
          if (res.status === 200 && !killed) answered.push(((await res.json()) as { data: { event: string } }).data.event)
          if (answered.length >= 300 && !killed) {
            killed = true
            api.kill('SIGKILL')
          }
        }
      }))
    } finally {
      if (!killed) api.kill('SIGKILL')
      await api.exited
    }
    expect(answered.length).toBeGreaterThanOrEqual(300)
    const ids = new Set((await env.store.rows<{ id: string }>(sql`SELECT id FROM events WHERE project_id = ${p.id} AND name = 'crash.load'`)).map((r) => r.id))
    expect(answered.filter((id) => !ids.has(id))).toEqual([])
  }, 90_000)
})
