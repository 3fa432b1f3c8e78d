import { expect, test } from 'bun:test'
import { storageFailure } from '../../src/db/failures'
import { DatabaseUnavailableError, PgGuard } from '../../src/db/pg-guard'

/**
 * The guard of PostgreSQL calls (src/db/pg-guard.ts) on its own: the bound on waiting calls (load is shed,
 * not queued), the deadline of reads, and fail-fast until the probe answers. The outage itself, on a real
 * server, is in test/http/storage.test.ts.
 */

test('calls beyond the bound are refused at once; a read past its deadline is refused alone; a connection failure refuses every call until the probe answers', async () => {
  let healthy = true
  const changes: boolean[] = []
  const guard = new PgGuard(async () => { if (!healthy) throw new Error('still down') }, { maxWaiting: 2, probeMs: 5, onChange: (down) => changes.push(down) })
  const never = () => new Promise<never>(() => {})
  const releases: Array<() => void> = []
  const held = () => new Promise<void>((r) => { releases.push(r) })
  const a = guard.run(held)
  const b = guard.run(async () => 1)
  expect(await b).toBe(1)
  const c = guard.run(held)
  const refused = await guard.run(async () => 2).catch((e) => e)
  expect(refused).toBeInstanceOf(DatabaseUnavailableError)
  expect(String(refused.message)).toContain('overloaded')
  expect(storageFailure(refused)).toBe('unavailable')
  for (const r of releases) r()
  await Promise.all([a, c])
  expect(guard.down).toBe(false)

  const late = await guard.run(never, 20).catch((e) => e)
  expect(late).toBeInstanceOf(DatabaseUnavailableError)
  expect(String(late.message)).toContain('did not answer within 20 ms')
  expect(guard.down).toBe(false)

  healthy = false
  const refusedConnection = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  expect(await guard.run(async () => { throw refusedConnection }).catch((e) => e)).toBe(refusedConnection)
  expect(guard.down).toBe(true)
  // Down: refused at once, without calling.
  let called = false
  expect(await guard.run(async () => { called = true }).catch((e) => e)).toBeInstanceOf(DatabaseUnavailableError)
  expect(called).toBe(false)
  healthy = true
  while (guard.down) await Bun.sleep(5)
  expect(await guard.run(async () => 3)).toBe(3)
  expect(changes).toEqual([true, false])
  guard.stop()
})
