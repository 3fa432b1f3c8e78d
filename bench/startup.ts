/**
 * Speed of starting: the compiled executable, from exec to a first 200 from GET /health, and
 * the time of whole CLI commands. Targets: /health within 300 ms on an existing data dir and 500 ms on a
 * new one (the migrations run), every CLI command within 300 ms. Exits 1 when a median misses its target
 * (benches assert times, tests do not).
 *
 *   node_modules/.bin/bun bench/startup.ts            (BENCH_RUNS=20; BENCH_BIN=path: time that executable)
 *
 * dist/mailctl is built first (`npm run build`) when it is missing or older than a source file; with
 * BENCH_BIN another executable is timed as it is (another build's, to compare build options). Each
 * round runs every case once, in turn, so a burst of load on a shared machine spreads over all of them;
 * one unmeasured round warms the page cache first. serve listens on a free port of 127.0.0.1 with its
 * SMTP ports disabled (0) and MAILCTL_OUTBOUND=capture; /health is polled every millisecond from the
 * exec on. The CPU time (user + system) of the child is printed beside the wall time: it varies less
 * when other processes compete for the cores. MAILCTL_HOSTNAME is not a fully qualified name, so `doctor`
 * makes no DNS queries (their time is the network's, not mailctl's).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort } from '../test/helpers/ports'

const ROOT = resolve(import.meta.dir, '..')
const BIN = process.env.BENCH_BIN ? resolve(process.env.BENCH_BIN) : join(ROOT, 'dist', 'mailctl')
const RUNS = Number(process.env.BENCH_RUNS ?? 20)
const HEALTH_EXISTING_MS = 300
const HEALTH_NEW_MS = 500
const CLI_MS = 300
const SERVE_TIMEOUT_MS = 15_000

/** The newest modification time under the directories the executable is built from. */
function newestSource(): number {
  let newest = statSync(join(ROOT, 'package.json')).mtimeMs
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else newest = Math.max(newest, statSync(p).mtimeMs)
    }
  }
  for (const d of ['cli', 'src', 'migrations']) if (existsSync(join(ROOT, d))) walk(join(ROOT, d))
  return newest
}

async function buildIfStale(): Promise<void> {
  if (process.env.BENCH_BIN) return
  if (existsSync(BIN) && statSync(BIN).mtimeMs >= newestSource()) return
  console.log('building dist/mailctl (npm run build) ...')
  const p = Bun.spawn(['npm', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0) throw new Error(`npm run build failed (${code}): ${out}\n${err}`)
}

const work = mkdtempSync(join(tmpdir(), 'mailctl-startup-'))
const existingDir = join(work, 'existing')

function envFor(dataDir: string, port: number): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: work,
    MAILCTL_DATA_DIR: dataDir,
    MAILCTL_HTTP_HOST: '127.0.0.1',
    MAILCTL_HTTP_PORT: String(port),
    MAILCTL_SMTP_INBOUND_PORT: '0',
    MAILCTL_SMTP_RELAY_PORT: '0',
    MAILCTL_SMTP_SECURE_PORT: '0',
    MAILCTL_OUTBOUND: 'capture',
    MAILCTL_HOSTNAME: 'mailctl-bench',
    MAILCTL_LOG_LEVEL: 'info',
  }
}

interface Sample { wallMs: number; cpuMs: number }

function cpuOf(p: { resourceUsage(): { cpuTime: { user: number | bigint; system: number | bigint } } | undefined }): number {
  const u = p.resourceUsage()
  return u ? (Number(u.cpuTime.user) + Number(u.cpuTime.system)) / 1000 : Number.NaN
}

/** A whole command: exec to exit; a non-zero exit stops the bench (it would time an error path). */
async function timeCommand(args: string[], dataDir: string): Promise<Sample> {
  const t0 = performance.now()
  const p = Bun.spawn([BIN, ...args], { cwd: work, env: envFor(dataDir, freePort()), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  const wallMs = performance.now() - t0
  if (code !== 0) throw new Error(`mailctl ${args.join(' ')} exited ${code}: ${out}${err}`)
  return { wallMs, cpuMs: cpuOf(p) }
}

/** exec -> first 200 from GET /health; then SIGTERM, which must exit 0. CPU time: until the exit. */
async function timeHealth(dataDir: string): Promise<Sample> {
  const port = freePort()
  const url = `http://127.0.0.1:${port}/health`
  const t0 = performance.now()
  const p = Bun.spawn([BIN, 'serve'], { cwd: work, env: envFor(dataDir, port), stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
  const stderr = new Response(p.stderr).text()
  let wallMs = 0
  while (!wallMs) {
    if (p.exitCode !== null) throw new Error(`serve exited ${p.exitCode} before answering /health: ${await stderr}`)
    if (performance.now() - t0 > SERVE_TIMEOUT_MS) {
      p.kill('SIGKILL')
      throw new Error(`serve did not answer /health within ${SERVE_TIMEOUT_MS} ms: ${await stderr}`)
    }
    try {
      const res = await fetch(url, { keepalive: false })
      if (res.status === 200) wallMs = performance.now() - t0
      await res.arrayBuffer()
    } catch {
      await Bun.sleep(1)
    }
  }
  p.kill('SIGTERM')
  const code = await p.exited
  if (code !== 0) throw new Error(`serve exited ${code} on SIGTERM: ${await stderr}`)
  return { wallMs, cpuMs: cpuOf(p) }
}

interface Case { name: string; targetMs: number; run(round: number): Promise<Sample> }

const cases: Case[] = [
  { name: 'serve: /health, existing data dir', targetMs: HEALTH_EXISTING_MS, run: () => timeHealth(existingDir) },
  { name: 'serve: /health, new data dir', targetMs: HEALTH_NEW_MS, run: (round) => timeHealth(join(work, `new-${round}`)) },
  ...[
    ['--help'],
    ['--version'],
    ['project', 'list', '--json'],
    ['doctor'],
    ['migrate'],
    ['queue'],
    ['domain', 'list', 'demo'],
    ['suppression', 'list', 'demo', '--json'],
  ].map((args): Case => ({ name: `mailctl ${args.join(' ')}`, targetMs: CLI_MS, run: () => timeCommand(args, existingDir) })),
]

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]
}

try {
  await buildIfStale()
  const setup = Bun.spawnSync([BIN, 'migrate'], { cwd: work, env: envFor(existingDir, freePort()) })
  if (setup.exitCode !== 0) throw new Error(`migrate failed: ${setup.stderr.toString()}`)
  const created = Bun.spawnSync([BIN, 'project', 'create', '--name', 'demo', '--json'], { cwd: work, env: envFor(existingDir, freePort()) })
  if (created.exitCode !== 0) throw new Error(`project create failed: ${created.stderr.toString()}`)

  const load0 = loadavg()
  const samples = cases.map(() => [] as Sample[])
  for (let round = -1; round < RUNS; round++) {
    for (const [i, c] of cases.entries()) {
      const s = await c.run(round)
      if (round >= 0) samples[i].push(s)
    }
    rmSync(join(work, `new-${round}`), { recursive: true, force: true })
  }
  const load1 = loadavg()

  const fmt = (n: number) => n.toFixed(0).padStart(6)
  console.log(`${process.env.BENCH_BIN ?? 'dist/mailctl'}, ${RUNS} runs per case; load average ${load0.map((v) => v.toFixed(2)).join(' ')} before, ${load1.map((v) => v.toFixed(2)).join(' ')} after (${navigator.hardwareConcurrency} cores)`)
  console.log(`${'case'.padEnd(42)} ${'median'.padStart(6)} ${'p90'.padStart(6)} ${'cpu'.padStart(6)} ${'target'.padStart(6)}  (ms; cpu: median CPU time of the child)`)
  const missed: string[] = []
  for (const [i, c] of cases.entries()) {
    const wall = samples[i].map((s) => s.wallMs).sort((a, b) => a - b)
    const cpu = samples[i].map((s) => s.cpuMs).sort((a, b) => a - b)
    const median = quantile(wall, 0.5)
    const ok = median <= c.targetMs
    if (!ok) missed.push(c.name)
    console.log(`${c.name.padEnd(42)} ${fmt(median)} ${fmt(quantile(wall, 0.9))} ${fmt(quantile(cpu, 0.5))} ${fmt(c.targetMs)}  ${ok ? 'ok' : 'MISSED'}`)
  }
  if (missed.length) {
    console.log(`\nmedian over target: ${missed.join('; ')}`)
    process.exitCode = 1
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
