/**
 * DKIM signing, single thread: our signer (src/mail/dkim.ts) against nodemailer's (nodemailer/lib/dkim)
 * and mailauth's (dkimSign), on the same composed messages, relaxed/relaxed, RSA-2048 and Ed25519
 * (nodemailer signs RSA only). Every signer's output is first verified with mailauth's dkimVerify;
 * a signer whose signature does not verify is reported and not timed. Prints figures, asserts nothing.
 *
 *   node_modules/.bin/bun bench/dkim.ts        (BENCH_SECONDS=0.5 per round by default, 5 rounds)
 *
 * Signers are timed in interleaved rounds (one round of each, then again), and the median round is
 * printed, so that load from other processes hits every signer alike. "cpu µs" is this process's CPU
 * time per message, the fairer figure on a shared machine. "sig" is the share of that time taken by
 * the asymmetric signature alone (one crypto sign() over a header block of the same size, parsed key).
 *
 * How each signer is called, as an application would call it:
 * - ours: dkimSign(raw, {domain, selector, privateKeyPem}) -> the signed message (parsed keys are cached)
 * - nodemailer: new DKIM({domainName, keySelector, privateKey}).sign(raw) -> a stream of the signed
 *   message; once with the PEM string (parsed on every message) and once with a KeyObject
 * - mailauth: dkimSign(raw, {signatureData: [{signingDomain, selector, privateKey}]}) -> the header
 *   (the key is a PEM string or Buffer, parsed on every message)
 */
import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import type { Readable } from 'node:stream'
import { dkimSign as mailauthSign } from 'mailauth/lib/dkim/sign'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import NodemailerDkim from 'nodemailer/lib/dkim'
import { dkimSign as ourSign } from '../src/mail/dkim'
import { composeMessageSync, type OutboundMessage } from '../src/mail/mime'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 0.5)
const ROUNDS = 5
const DOMAIN = 'example.com'
const SELECTOR = 'bench'

type KeyType = 'rsa' | 'ed25519'
interface BenchKey { type: KeyType; pem: string; object: KeyObject; record: string }

function makeKey(type: KeyType): BenchKey {
  const { privateKey, publicKey } = type === 'rsa'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : generateKeyPairSync('ed25519')
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const der = publicKey.export({ type: 'spki', format: 'der' })
  // Ed25519 records carry the raw 32-byte key (RFC 8463), RSA records the SubjectPublicKeyInfo.
  const p = type === 'rsa' ? der.toString('base64') : der.subarray(der.length - 32).toString('base64')
  return { type, pem, object: createPrivateKey(pem), record: `v=DKIM1; k=${type}; p=${p}` }
}

/** A newsletter-like HTML body of about `size` characters, with its plain-text alternative. */
function html(size: number): string {
  let out = '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Update</title></head><body><table width="600">'
  for (let i = 0; out.length < size - 40; i++) {
    out += `<tr><td><p style="color:#333">Paragraph ${i}: product news, <a href="https://example.com/a/${i}">read more</a>.</p></td></tr>\n`
  }
  return `${out}</table></body></html>`
}

function message(withAttachment: boolean): OutboundMessage {
  const body = html(withAttachment ? 4_000 : 3_600)
  const attachment = Buffer.alloc(33_000)
  for (let i = 0; i < attachment.length; i++) attachment[i] = (i * 7919) & 0xff
  return {
    messageId: `<bench-${withAttachment ? 'att' : 'html'}@example.com>`,
    date: Date.UTC(2026, 10, 25, 10, 0, 0),
    from: { name: 'Example News', address: 'news@example.com' },
    to: { name: 'Reader', address: 'reader@dest.test' },
    replyTo: 'help@example.com',
    subject: 'Your monthly update: product news and highlights',
    html: body,
    text: body.replace(/<[^>]+>/g, ''),
    listUnsubscribe: { 'List-Unsubscribe': '<https://example.com/u/abc>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    attachments: withAttachment
      ? [{ filename: 'report.pdf', content: attachment.toString('base64'), contentType: 'application/pdf', disposition: 'attachment' }]
      : [],
  }
}

function readAll(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => resolve(Buffer.concat(chunks)))
    stream.on('error', reject)
  })
}

interface Signer {
  name: string
  /** Returns the signed message (the DKIM-Signature field followed by the message). */
  sign(raw: Buffer): Buffer | Promise<Buffer>
  sync: boolean
}

function signers(key: BenchKey): Signer[] {
  const ours: Signer = {
    name: 'ours',
    sync: true,
    sign: (raw) => ourSign(raw, { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.pem }),
  }
  const mailauth: Signer = {
    name: 'mailauth',
    sync: false,
    sign: async (raw) => {
      // mailauth signs what signatureData lists; its type declarations also want the fields at the top.
      const data = { signingDomain: DOMAIN, selector: SELECTOR, privateKey: key.pem, canonicalization: 'relaxed/relaxed' }
      const r = await mailauthSign(raw, { ...data, signatureData: [data] })
      if (!r.signatures) throw new Error(`mailauth did not sign: ${JSON.stringify(r.errors)}`)
      return Buffer.concat([Buffer.from(r.signatures, 'latin1'), raw])
    },
  }
  if (key.type !== 'rsa') return [ours, mailauth]
  const pemSigner = new NodemailerDkim({ domainName: DOMAIN, keySelector: SELECTOR, privateKey: key.pem })
  const objectSigner = new NodemailerDkim({ domainName: DOMAIN, keySelector: SELECTOR, privateKey: key.object })
  return [
    ours,
    { name: 'nodemailer (PEM)', sync: false, sign: (raw) => readAll(pemSigner.sign(raw)) },
    { name: 'nodemailer (KeyObject)', sync: false, sign: (raw) => readAll(objectSigner.sign(raw)) },
    mailauth,
  ]
}

/** mailauth's verdict on a signed message: its one signature must pass, relaxed/relaxed. */
async function verifies(signed: Buffer, key: BenchKey): Promise<string> {
  const r = await dkimVerify(signed, { resolver: async () => [[key.record]] })
  if (r.results.length !== 1) return `${r.results.length} signatures`
  const res = r.results[0]
  if (res.status.result !== 'pass') return `${res.status.result}${res.status.comment ? ` (${res.status.comment})` : ''}`
  if (res.format !== 'relaxed/relaxed') return `canonicalisation ${res.format}`
  return 'pass'
}

interface Round { perSec: number; cpuUs: number; wallUs: number }

async function round(s: Signer, raw: Buffer): Promise<Round> {
  let n = 0
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const until = t0 + SECONDS * 1000
  if (s.sync) {
    while (performance.now() < until) {
      for (let i = 0; i < 20; i++) s.sign(raw)
      n += 20
    }
  } else {
    while (performance.now() < until) {
      for (let i = 0; i < 20; i++) await s.sign(raw)
      n += 20
    }
  }
  const wall = performance.now() - t0
  const cpu = process.cpuUsage(c0)
  return { perSec: (n * 1000) / wall, wallUs: (wall * 1000) / n, cpuUs: (cpu.user + cpu.system) / n }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** CPU µs of one bare signature over `bytes` bytes with a parsed key, and of parsing the PEM. */
function primitives(key: BenchKey, bytes: number): { sigUs: number; parseUs: number } {
  const data = Buffer.alloc(bytes, 0x61)
  const one = () => (key.type === 'rsa' ? sign('sha256', data, key.object) : sign(null, data.subarray(0, 32), key.object))
  for (let i = 0; i < 50; i++) one()
  const runs: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    let n = 0
    const c0 = process.cpuUsage()
    const until = performance.now() + SECONDS * 400
    while (performance.now() < until) { one(); n++ }
    const c = process.cpuUsage(c0)
    runs.push((c.user + c.system) / n)
  }
  const parses: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = process.cpuUsage()
    for (let i = 0; i < 200; i++) createPrivateKey(key.pem)
    const c = process.cpuUsage(c0)
    parses.push((c.user + c.system) / 200)
  }
  return { sigUs: median(runs), parseUs: median(parses) }
}

const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })

const messages = [
  { label: 'HTML, no attachment', raw: composeMessageSync(message(false)) },
  { label: 'HTML + attachment', raw: composeMessageSync(message(true)) },
]

console.log(`DKIM signing, one thread, relaxed/relaxed; ${ROUNDS} interleaved rounds of ${SECONDS}s, median round`)
let wrong = 0
for (const type of ['rsa', 'ed25519'] as const) {
  const key = makeKey(type)
  // The signed header block is about this long (the DKIM-Signature field with b= empty, plus ~10 fields).
  const headerBytes = messages[0].raw.indexOf('\r\n\r\n') + 400
  const prim = primitives(key, headerBytes)
  console.log(`\n${type === 'rsa' ? 'RSA-2048' : 'Ed25519'}: one bare signature ${fmt(prim.sigUs, 1)} µs CPU; parsing the PEM key ${fmt(prim.parseUs, 1)} µs`)
  for (const m of messages) {
    console.log(`  ${m.label}, ${fmt(m.raw.length)} bytes`)
    const list = signers(key)
    // The verifier must refuse a changed body, or its "pass" below would mean nothing.
    const tampered = Buffer.from((await list[0].sign(m.raw)).toString('latin1').replace('Paragraph 1:', 'Paragraph 2:'), 'latin1')
    if ((await verifies(tampered, key)) === 'pass') throw new Error('the verifier accepted a changed body')
    const ok: Signer[] = []
    for (const s of list) {
      const verdict = await verifies(await s.sign(m.raw), key)
      if (verdict === 'pass') ok.push(s)
      else {
        wrong++
        console.log(`    ${s.name.padEnd(24)} DOES NOT VERIFY: ${verdict} (not timed)`)
      }
    }
    for (const s of ok) for (let i = 0; i < 100; i++) await s.sign(m.raw) // warm-up
    const rounds = new Map<string, Round[]>(ok.map((s) => [s.name, []]))
    for (let r = 0; r < ROUNDS; r++) for (const s of ok) rounds.get(s.name)?.push(await round(s, m.raw))
    for (const s of ok) {
      const rs = rounds.get(s.name) ?? []
      const perSec = median(rs.map((x) => x.perSec))
      const cpuUs = median(rs.map((x) => x.cpuUs))
      const wallUs = median(rs.map((x) => x.wallUs))
      console.log(`    ${s.name.padEnd(24)} verifies; ${fmt(perSec).padStart(7)} signs/s  ${fmt(wallUs, 1).padStart(7)} µs wall  ${fmt(cpuUs, 1).padStart(7)} µs cpu  sig ${fmt((100 * prim.sigUs) / cpuUs)}%`)
    }
  }
}
if (wrong) console.log(`\n${wrong} signature(s) did not verify`)
