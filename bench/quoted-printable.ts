/**
 * quotedPrintable (src/mail/mime.ts), one thread, CPU µs per call on four bodies: the visual editor's
 * (bench/fixtures/design-body.txt, HTML with a few "·"), bench/campaign.ts's hand-written HTML (ASCII),
 * a Russian text and a Chinese text (paragraphs of about 6 KB of UTF-8). Prints figures, asserts nothing.
 *
 *   node_modules/.bin/bun bench/quoted-printable.ts     (BENCH_SECONDS=0.3 per round, BENCH_ROUNDS=9)
 *
 * BENCH_QP_BASELINE=<path of another mime.ts> times that module's quotedPrintable too, in interleaved
 * rounds (one round of each, then again), so that load from other processes hits both alike; the
 * outputs are first compared (they must be the same bytes). The median round is printed. BENCH_ONLY=<the
 * start of a body's name> times that body alone.
 */
import { join } from 'node:path'
import { quotedPrintable } from '../src/mail/mime'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 0.3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9)

const russian = Array.from({ length: 24 }, (_, i) =>
  `${i}. Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация южных губерний даст мощный толчок.`).join('\n')
const chinese = Array.from({ length: 24 }, (_, i) =>
  `${i}。我能吞下玻璃而不伤身体。天地玄黄，宇宙洪荒。日月盈昃，辰宿列张。寒来暑往，秋收冬藏。闰余成岁，律吕调阳。云腾致雨，露结为霜。`).join('\n')
const bodies: Record<string, string> = {
  'design body (visual editor)': await Bun.file(join(import.meta.dir, 'fixtures', 'design-body.txt')).text(),
  'hand-written body (campaign bench)': `<html><body><h1>Hello {{firstName}}</h1>${'<p>News of the season. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. <a href="https://bench-sender.test/shop">Shop now</a></p>'.repeat(20)}</body></html>`,
  'Russian text': russian,
  'Chinese text': chinese,
}

type Encoder = (text: string) => string
const encoders: Record<string, Encoder> = { current: quotedPrintable }
if (process.env.BENCH_QP_BASELINE) encoders.baseline = (await import(process.env.BENCH_QP_BASELINE)).quotedPrintable as Encoder

/**
 * Texts differing in their first characters, as personalised messages do: JavaScriptCore caches the
 * result of some string operations (a global regex replace of the same string), which one text repeated
 * would measure instead of the encoder.
 */
const variantsOf = (text: string) => Array.from({ length: 64 }, (_, k) => `${k}${text}`)

/** CPU µs per call over one round of about SECONDS. */
function round(encode: Encoder, texts: string[]): number {
  let calls = 0
  const start = process.cpuUsage()
  const until = performance.now() + SECONDS * 1000
  let sink = 0
  while (performance.now() < until) {
    for (const text of texts) sink += encode(text).length
    calls += texts.length
  }
  const used = process.cpuUsage(start)
  if (sink < 0) console.log(sink)
  return (used.user + used.system) / calls
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`load ${(await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')}`)
for (const [name, text] of Object.entries(bodies)) {
  if (process.env.BENCH_ONLY && !name.startsWith(process.env.BENCH_ONLY)) continue
  const outputs = Object.values(encoders).map((e) => e(text))
  if (outputs.some((o) => o !== outputs[0])) throw new Error(`${name}: the encoders disagree`)
  const texts = variantsOf(text)
  for (const e of Object.values(encoders)) round(e, texts)
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(encoders).map((e) => [e, []]))
  for (let r = 0; r < ROUNDS; r++) {
    // Each encoder first in every other round: the first of a round tends to run on a warmer or colder machine.
    const order = r % 2 ? Object.entries(encoders).reverse() : Object.entries(encoders)
    for (const [e, encode] of order) times[e].push(round(encode, texts))
  }
  const figures = Object.entries(times).map(([e, t]) => `${e} ${median(t).toFixed(1)} µs (rounds ${Math.min(...t).toFixed(1)}-${Math.max(...t).toFixed(1)})`)
  console.log(`${name}, ${Buffer.byteLength(text)} bytes, ${text.split('\n').length} lines: ${figures.join(', ')}`)
}
