/**
 * Rendering a body made by the visual editor against the hand-written body of bench/campaign.ts,
 * per recipient as the campaign fan-out does: subject, HTML and text alternative. Single core, runs
 * alternated; "cpu" is renders per second of this process's CPU time (fairer on a shared machine).
 *
 *   node_modules/.bin/bun bench/design-render.ts      BENCH_SECONDS=2 per run, BENCH_ROUNDS=3
 */
import { join } from 'node:path'
import { renderEmail, templateVariables } from '../src/mail/render'

const design = await Bun.file(join(import.meta.dir, 'fixtures', 'design-body.txt')).text()
const handWritten = `<html><body><h1>Hello {{firstName}}</h1>${'<p>News of the season. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. <a href="https://bench-sender.test/shop">Shop now</a></p>'.repeat(20)}</body></html>`
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

function run(body: string): { wall: number; cpu: number } {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let n = 0
  while (performance.now() - t0 < SECONDS * 1000) {
    for (let i = 0; i < 100; i++, n++) {
      const vars = templateVariables({ contact: { id: `c${n}`, email: `user${n}@sink.test`, data: n % 2 ? { firstName: `User ${n}` } : {} } })
      renderEmail({ subject: 'News for {{firstName}}', body }, vars)
    }
  }
  const wall = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return { wall: Math.round(n / wall), cpu: Math.round(n / ((cpu.user + cpu.system) / 1e6)) }
}

run(design)
run(handWritten)
const out: Record<string, Array<{ wall: number; cpu: number }>> = { design: [], handWritten: [] }
for (let r = 0; r < ROUNDS; r++) {
  out.design.push(run(design))
  out.handWritten.push(run(handWritten))
}
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const d = median(out.design.map((x) => x.cpu))
const h = median(out.handWritten.map((x) => x.cpu))
console.log(JSON.stringify({
  bodyChars: { design: design.length, handWritten: handWritten.length },
  rendersPerCpuSecond: { design: out.design.map((x) => x.cpu), handWritten: out.handWritten.map((x) => x.cpu) },
  rendersPerWallSecond: { design: out.design.map((x) => x.wall), handWritten: out.handWritten.map((x) => x.wall) },
  medianRatioDesignToHandWritten: Math.round((d / h) * 1000) / 1000,
}, null, 2))
