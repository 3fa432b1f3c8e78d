/**
 * What a signer thread does for each campaign message (src/mail/signer-worker.ts: `buildOutbound`, that is
 * the body's render, the unsubscribe footer, click and open tracking, MIME composition and, with a key,
 * DKIM; then the SMTP DATA content), for the visual editor's body (bench/fixtures/design-body.txt) against
 * bench/campaign.ts's hand-written one, in alternated rounds. The campaign object is copied every 32
 * messages, as a post to a thread copies it once per batch.
 *
 * The figure is CPU µs per message of this thread alone (Linux: /proc schedstat of the main thread, so
 * the JIT and GC threads are not counted; elsewhere the process's CPU time): fairer than throughput on a
 * shared machine; say the load next to it.
 *
 *   BUN_JSC_useFTLJIT=0 node_modules/.bin/bun bench/campaign-build.ts   (the JIT tiers `serve` runs with, ADR 0012)
 *     BENCH_MESSAGES=2000 per round and body, BENCH_ROUNDS=5 (after 2 rounds of warm-up), BENCH_DKIM=0 without the signature
 */
import { generateKeyPairSync } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { OutboundMessage } from '../src/mail/mime'
import { dataContent } from '../src/mail/outbound/data-content'
import { buildOutbound } from '../src/mail/signer'

const design = await Bun.file(join(import.meta.dir, 'fixtures', 'design-body.txt')).text()
const handWritten = `<html><body><h1>Hello {{firstName}}</h1>${'<p>News of the season. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. <a href="https://bench-sender.test/shop">Shop now</a></p>'.repeat(20)}</body></html>`
const N = Number(process.env.BENCH_MESSAGES ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const DKIM = process.env.BENCH_DKIM !== '0'
const links = { secret: 'bench-secret-shared-by-every-node', config: { publicUrl: 'https://mail.bench-sender.test' } }
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
const key = { domain: 'bench-sender.test', selector: 'bench', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() }
const projectId = '01a22013-3aeb-7472-a1b9-33c15220102c'
const uuid = (n: number) => `01a22013-${(n % 65536).toString(16).padStart(4, '0')}-7543-96b6-${n.toString(16).padStart(12, '0')}`

/** CPU µs of this thread (Linux), or of the process. */
function cpuMicros(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000
  } catch {
    const c = process.cpuUsage()
    return c.user + c.system
  }
}

let messageBytes = 0
async function round(body: string): Promise<number> {
  let campaign = { id: uuid(7), projectId, subject: 'News for {{firstName}}', body, type: 'MARKETING' }
  const c0 = cpuMicros()
  for (let n = 0; n < N; n++) {
    if (n % 32 === 0) campaign = structuredClone(campaign)
    const emailId = uuid(n + 100_000)
    const m: OutboundMessage = {
      messageId: `<${emailId}@bench-sender.test>`, date: 1795834460000, from: { name: 'Bench', address: 'hello@bench-sender.test' }, to: { address: `user${n}@sink.test` },
      subject: `News for User ${n}`, listUnsubscribe: { 'List-Unsubscribe': `<https://mail.bench-sender.test/unsubscribe/${emailId}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
      campaign: { emailId, tracking: true, contact: { id: uuid(n), email: `user${n}@sink.test`, data: { firstName: `User ${n}`, plan: 'pro' } }, campaign },
    }
    messageBytes = dataContent(await buildOutbound(m, DKIM ? key : null, links)).length
  }
  return Math.round(((cpuMicros() - c0) / N) * 10) / 10
}

const runs: Record<'design' | 'handWritten', number[]> = { design: [], handWritten: [] }
const bytes = { design: 0, handWritten: 0 }
for (let r = -2; r < ROUNDS; r++) {
  for (const [name, body] of [['design', design], ['handWritten', handWritten]] as const) {
    const us = await round(body)
    bytes[name] = messageBytes
    if (r >= 0) runs[name].push(us)
  }
}
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(JSON.stringify({
  cpuMicrosPerMessage: { design: median(runs.design), handWritten: median(runs.handWritten) },
  rounds: runs, dkim: DKIM, messageBytes: bytes, messages: N, loadAverage: loadavg().map((v) => Math.round(v * 100) / 100),
}))
