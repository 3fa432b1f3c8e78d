/**
 * The sender gate (assertSenderAllowed) runs once per message: checks per second on each store,
 * sequentially and 64 at a time, with the decrypted-key cache warm. Prints figures, asserts nothing.
 *
 *   node_modules/.bin/bun bench/sender-gate.ts [--pg]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TestEnv } from '../test/helpers/env'
import { ctxFor } from '../src/deps'
import { insertTestDomain } from '../test/helpers/domains'
import { generateDkimKeyPair } from '../src/modules/domains/keys'
import { assertSenderAllowed } from '../src/modules/domains/service'

async function run(kind: 'sqlite' | 'pg') {
  const env = new TestEnv(kind)
  await env.start()
  try {
    const p = await env.project()
    for (let i = 0; i < 50; i++) {
      await insertTestDomain(env, p.id, `d${i}.example.com`, { verified: true, allowSubdomains: true, keys: await generateDkimKeyPair() })
    }
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const from = (i: number) => `sender${i}@news.d${i % 50}.example.com`
    for (let i = 0; i < 200; i++) await assertSenderAllowed(ctx, from(i)) // warm the key cache
    const n = 20_000
    let t = performance.now()
    for (let i = 0; i < n; i++) await assertSenderAllowed(ctx, from(i))
    const seq = n / ((performance.now() - t) / 1000)
    t = performance.now()
    let next = 0
    await Promise.all(Array.from({ length: 64 }, async () => { while (next < n) await assertSenderAllowed(ctx, from(next++)) }))
    const par = n / ((performance.now() - t) / 1000)
    console.log(`${kind}: ${Math.round(seq)} checks/s sequential, ${Math.round(par)} checks/s with 64 concurrent (${n} checks, 50 verified domains that allow subdomains, parent-domain match)`)
  } finally {
    await env.stop()
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bench-gate-'))
try {
  await run('sqlite')
  if (process.argv.includes('--pg')) await run('pg')
} finally {
  rmSync(dir, { recursive: true, force: true })
}
