/**
 * Per-message CPU of a campaign message's build steps, in µs, for the visual editor's body
 * (bench/fixtures/design-body.txt) against bench/campaign.ts's hand-written one, through the functions a
 * signer thread runs: subject, body (HTML and text, the recipient's subscription links, the unsubscribe
 * footer when the body has no link of its own), click and open tracking, MIME composition (quoted-printable) and DKIM
 * (body hash and RSA-2048 signature), each timed alone over many messages, alternated. Single thread;
 * the figures are CPU time of this process (fairer on a shared machine; say the load next to them).
 *
 *   BUN_JSC_useFTLJIT=0 node_modules/.bin/bun bench/render-steps.ts   (the JIT tiers `serve` runs with, ADR 0012)
 *     BENCH_MESSAGES=2000 per step and body, BENCH_ROUNDS=3
 */
import { generateKeyPairSync } from 'node:crypto'
import { join } from 'node:path'
import { renderCampaignBody, renderCampaignSubject, type Recipient } from '../src/mail/render/campaign'
import { rewriteForTracking } from '../src/mail/render/tracking'
import { composeMessageSync } from '../src/mail/mime'
import { dkimSign } from '../src/mail/dkim'

const design = await Bun.file(join(import.meta.dir, 'fixtures', 'design-body.txt')).text()
const handWritten = `<html><body><h1>Hello {{firstName}}</h1>${'<p>News of the season. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. <a href="https://bench-sender.test/shop">Shop now</a></p>'.repeat(20)}</body></html>`
const N = Number(process.env.BENCH_MESSAGES ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const links = { secret: 'bench-secret-bench-secret-bench-secret', config: { publicUrl: 'https://mail.bench-sender.test' } }
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
const key = { domain: 'bench-sender.test', selector: 'bench', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() }
const projectId = '01a22013-3aeb-7472-a1b9-33c15220102c'
const uuid = (n: number) => `01a22013-${(n % 65536).toString(16).padStart(4, '0')}-7543-96b6-cd36d1da5dcb`

interface Msg { emailId: string; contact: Recipient; html: string; text: string; raw: Buffer }

function messages(): Msg[] {
  return Array.from({ length: N }, (_, n) => {
    return { emailId: uuid(n + 1), contact: { id: uuid(n), email: `user${n}@sink.test`, data: { firstName: `User ${n}`, plan: 'pro' } }, html: '', text: '', raw: Buffer.alloc(0) }
  })
}

/** µs of CPU per message for each step, the steps run in order over all messages (each step's input is the previous one's output). */
function steps(body: string): Record<string, number> {
  const ms = messages()
  const out: Record<string, number> = {}
  const time = (name: string, fn: (m: Msg) => void) => {
    const c0 = process.cpuUsage()
    for (const m of ms) fn(m)
    const c = process.cpuUsage(c0)
    out[name] = Math.round(((c.user + c.system) / N) * 10) / 10
  }
  const campaign = { id: uuid(7), projectId, subject: 'News for {{firstName}}', body, type: 'MARKETING' }
  time('subject', (m) => { renderCampaignSubject(links, campaign, m.contact, m.emailId) })
  time('body', (m) => { ({ html: m.html, text: m.text } = renderCampaignBody(links, campaign, m.contact, m.emailId)) })
  time('tracking', (m) => { m.html = rewriteForTracking(links, { emailId: m.emailId, html: m.html, trackingEnabled: true }) })
  time('mime', (m) => {
    m.raw = composeMessageSync({ messageId: `<${m.emailId}@bench-sender.test>`, date: 1795834460000, from: { name: 'Bench', address: 'hello@bench-sender.test' }, to: { address: 'user@sink.test' }, subject: 'News for User', html: m.html, text: m.text, listUnsubscribe: { 'List-Unsubscribe': '<https://mail.bench-sender.test/unsubscribe/x>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } })
  })
  time('dkim', (m) => { dkimSign(m.raw, key, { time: 1795834460 }) })
  out.total = Math.round(Object.values(out).reduce((a, b) => a + b, 0) * 10) / 10
  out.htmlBytes = ms[0].html.length
  out.textBytes = ms[0].text.length
  out.messageBytes = ms[0].raw.length
  return out
}

steps(design)
steps(handWritten)
const runs: Record<string, Array<Record<string, number>>> = { design: [], handWritten: [] }
for (let r = 0; r < ROUNDS; r++) {
  runs.design.push(steps(design))
  runs.handWritten.push(steps(handWritten))
}
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const summary: Record<string, Record<string, number>> = {}
for (const [name, rs] of Object.entries(runs)) {
  summary[name] = {}
  for (const k of Object.keys(rs[0])) summary[name][k] = median(rs.map((r) => r[k]))
}
console.log(JSON.stringify({ microsecondsPerMessageMedian: summary, messages: N, rounds: ROUNDS }, null, 1))
