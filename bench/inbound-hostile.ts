/**
 * Hostile inbound mail: the time to classify and read each message of a corpus built to make
 * backtracking parsers quadratic (with a backtracking parser, 1 MB of "<" in a text/html body took 357 s). Each message
 * has a budget for its parse; the script exits with status 1 when one is exceeded (benches assert times,
 * tests do not).
 *
 *   node_modules/.bin/bun bench/inbound-hostile.ts
 *
 * "inline" is analyzeInbound on this thread (the CPU cost of the parse, best of 3); "worker" is
 * parseInbound forced through a worker thread (what inbound.process does for messages over 256 KB):
 * start-up of the thread and the copy of the message included, at nice 10, so on a busy machine it
 * waits for the CPU; it is allowed the budget plus WORKER_SLACK_MS.
 */
import { analyzeInbound, parseInbound } from '../src/mail/inbound/analyze'

const WORKER_SLACK_MS = 1500
const KB = 1024
const MB = 1024 * KB
const CRLF = '\r\n'

interface Case { name: string; raw: Buffer; budgetMs: number }

const head = (extra = '') => `From: Mallory <mallory@remote.test>${CRLF}To: info@acme.test${CRLF}Subject: hostile${CRLF}Message-ID: <h@remote.test>${CRLF}${extra}`
const msg = (headers: string, body: string) => Buffer.from(`${headers}${CRLF}${body}`, 'latin1')
const bounceHead = `From: MAILER-DAEMON@mx.remote.test${CRLF}To: b+x@bounce.acme.test${CRLF}Subject: failure notice${CRLF}`
const qmail = `Hi. This is the qmail-send program.${CRLF}${CRLF}<gone@remote.test>:${CRLF}550 5.1.1 user unknown${CRLF}${CRLF}`

function nested(depth: number, leaf: string): string {
  let body = `Content-Type: text/html${CRLF}${CRLF}${leaf}`
  for (let i = 0; i < depth; i++) body = `Content-Type: multipart/mixed; boundary="n${i}"${CRLF}${CRLF}--n${i}${CRLF}Content-Type: text/html${CRLF}${CRLF}${leaf}${CRLF}--n${i}${CRLF}${body}${CRLF}--n${i}--`
  return body
}

function manyParts(n: number): string {
  const parts: string[] = [`Content-Type: multipart/mixed; boundary=M${CRLF}`]
  for (let i = 0; i < n; i++) parts.push(`--M${CRLF}Content-Type: text/plain${CRLF}${CRLF}${'<a@'.repeat(2000)}`)
  parts.push('--M--')
  return parts.join(CRLF)
}

function dsnWithStatus(recipients: number): Buffer {
  const groups = [`Reporting-MTA: dns; mx.remote.test${CRLF}`]
  for (let i = 0; i < recipients; i++) groups.push(`Final-Recipient: rfc822; r${i}@remote.test${CRLF}Action: failed${CRLF}Status: 5.1.1${CRLF}Diagnostic-Code: smtp; 550 ${'<a@'.repeat(100)}${CRLF}`)
  return msg(`${bounceHead}Content-Type: multipart/report; report-type=delivery-status; boundary=R${CRLF}`,
    `--R${CRLF}Content-Type: text/plain${CRLF}${CRLF}failed${CRLF}--R${CRLF}Content-Type: message/delivery-status${CRLF}${CRLF}${groups.join(CRLF)}${CRLF}--R--${CRLF}`)
}

/** Nested multiparts whose boundaries are 100 KB long (RFC 2046 allows 70 characters). */
function longBoundaries(n: number, len: number): string {
  const parts: string[] = []
  for (let i = 0; i < n; i++) {
    const b = `${i}`.padEnd(len, 'b')
    parts.push(`--M${CRLF}Content-Type: multipart/mixed; boundary="${b}"${CRLF}${CRLF}--${b}${CRLF}Content-Type: text/plain${CRLF}${CRLF}x${CRLF}--${b}--`)
  }
  return `${parts.join(CRLF)}${CRLF}--M--${CRLF}`
}

const attachment = Buffer.alloc(10 * MB, 7).toString('base64').replace(/.{76}/g, `$&${CRLF}`)

const corpus: Case[] = [
  { name: 'text/html, 100 KB of "<"', raw: msg(head(`Content-Type: text/html${CRLF}`), '<'.repeat(100 * KB)), budgetMs: 50 },
  { name: 'text/html, 1 MB of "<"', raw: msg(head(`Content-Type: text/html${CRLF}`), `<p>Hi</p>${'<'.repeat(MB)}`), budgetMs: 100 },
  { name: 'text/html, 10 MB of "<"', raw: msg(head(`Content-Type: text/html${CRLF}`), '<'.repeat(10 * MB)), budgetMs: 500 },
  { name: 'text/html, 10 MB of "<a " (unclosed tags)', raw: msg(head(`Content-Type: text/html${CRLF}`), '<a '.repeat(3.4 * MB)), budgetMs: 500 },
  { name: 'text/plain, 10 MB of "@"', raw: msg(head(), '@'.repeat(10 * MB)), budgetMs: 500 },
  { name: 'quoted-printable, 10 MB of "="', raw: msg(head(`Content-Transfer-Encoding: quoted-printable${CRLF}`), '='.repeat(10 * MB)), budgetMs: 1000 },
  { name: 'bounce, 100 KB line "<a@a@a@…"', raw: msg(bounceHead, `${qmail}<${'a@'.repeat(50 * KB)}${CRLF}`), budgetMs: 50 },
  { name: 'bounce, 1 MB line "<a@a@a@…"', raw: msg(bounceHead, `${qmail}<${'a@'.repeat(MB / 2)}${CRLF}`), budgetMs: 100 },
  { name: 'bounce, "<a@b>" + 1 MB of blanks + "x"', raw: msg(bounceHead, `${qmail}<a@b.test>${' \t'.repeat(MB / 2)}x${CRLF}`), budgetMs: 100 },
  { name: 'bounce, 1 MB line of "-" (marker scan)', raw: msg(bounceHead, `${qmail}${'-'.repeat(MB)}${CRLF}`), budgetMs: 100 },
  { name: 'bounce, 10 MB of "<a@" lines', raw: msg(bounceHead, `${qmail}${`<a@${'a@'.repeat(30)}${CRLF}`.repeat(10 * MB / 66)}`), budgetMs: 500 },
  { name: 'DSN, 1,000 recipients with hostile diagnostics', raw: dsnWithStatus(1000), budgetMs: 200 },
  { name: 'From: "<a@a@a@…" (200 KB header)', raw: msg(`From: <${'a@'.repeat(100 * KB)}${CRLF}Subject: x${CRLF}`, 'x'), budgetMs: 100 },
  { name: 'To: "a@……b" (200 KB of dots)', raw: msg(`From: a@remote.test${CRLF}To: a@${'.'.repeat(200 * KB)}b${CRLF}`, 'x'), budgetMs: 100 },
  { name: 'In-Reply-To: "a@a@…<" (200 KB)', raw: msg(`From: a@remote.test${CRLF}In-Reply-To: ${'a@'.repeat(100 * KB)}<${CRLF}`, 'x'), budgetMs: 100 },
  { name: 'References: 60,000 Message-IDs', raw: msg(`From: a@remote.test${CRLF}References: ${'<r@x> '.repeat(40 * KB)}${CRLF}`, 'x'), budgetMs: 100 },
  { name: 'Subject: 200 KB of "=?"', raw: msg(`From: a@remote.test${CRLF}Subject: ${'=?'.repeat(100 * KB)}${CRLF}`, 'x'), budgetMs: 100 },
  { name: 'Content-Type: open quote + 200 KB of ";"', raw: msg(`From: a@remote.test${CRLF}Content-Type: text/plain; a="${';'.repeat(200 * KB)}${CRLF}`, 'x'), budgetMs: 200 },
  { name: 'multiparts nested 20 deep, 100 KB of "<" each', raw: msg(head(), nested(20, '<'.repeat(100 * KB))), budgetMs: 200 },
  { name: '200 parts of "<a@" (part limit)', raw: msg(head(), manyParts(200)), budgetMs: 200 },
  { name: '80 multiparts with 100 KB boundaries', raw: msg(head(`Content-Type: multipart/mixed; boundary=M${CRLF}`), longBoundaries(80, 100 * KB)), budgetMs: 500 },
  { name: 'text + 10 MB base64 attachment', raw: msg(head(`Content-Type: multipart/mixed; boundary=A${CRLF}`), `--A${CRLF}Content-Type: text/plain${CRLF}${CRLF}hello${CRLF}--A${CRLF}Content-Type: application/octet-stream${CRLF}Content-Transfer-Encoding: base64${CRLF}${CRLF}${attachment}${CRLF}--A--${CRLF}`), budgetMs: 1000 },
]

function best(fn: () => unknown, runs = 3): number {
  let min = Number.POSITIVE_INFINITY
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    fn()
    min = Math.min(min, performance.now() - t)
  }
  return min
}

const pad = Math.max(...corpus.map((c) => c.name.length))
let over = 0
console.log(`${'message'.padEnd(pad)}  ${'size'.padStart(9)}  ${'inline'.padStart(9)}  ${'worker'.padStart(9)}  budget  result`)
for (const c of corpus) {
  const result = analyzeInbound(c.raw)
  const inline = best(() => analyzeInbound(c.raw))
  const t = performance.now()
  await parseInbound(c.raw, { inlineBytes: 0 })
  const worker = performance.now() - t
  const ok = inline <= c.budgetMs && worker <= c.budgetMs + WORKER_SLACK_MS
  if (!ok) over++
  const size = c.raw.length >= MB ? `${(c.raw.length / MB).toFixed(1)} MB` : `${(c.raw.length / KB).toFixed(0)} KB`
  console.log(`${c.name.padEnd(pad)}  ${size.padStart(9)}  ${`${inline.toFixed(1)} ms`.padStart(9)}  ${`${worker.toFixed(1)} ms`.padStart(9)}  ${`${c.budgetMs}`.padStart(6)}  ${result.kind}${ok ? '' : '  OVER BUDGET'}`)
}
console.log(over ? `${over} message(s) over budget (the worker is allowed its budget + ${WORKER_SLACK_MS} ms)` : 'every message within its budget')
process.exit(over ? 1 : 0)
