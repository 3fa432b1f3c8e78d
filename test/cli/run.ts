/** Runs mailctl (the source program or the built binary) as a child process, without a terminal. */
import { join, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dir, '..', '..')
export const BUN = join(ROOT, 'node_modules', '.bin', 'bun')
export const SOURCE = [BUN, join(ROOT, 'cli', 'mailctl.ts')]

export interface Run { code: number; stdout: string; stderr: string }

/** Only the variables mailctl needs: the caller's MAILCTL_*, DATABASE_URL and REDIS_URL are not inherited. */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const v = process.env[k]
    if (v) env[k] = v
  }
  return { MAILCTL_LOG_LEVEL: 'warn', ...env, ...extra }
}

export async function run(cmd: string[], args: string[], env: Record<string, string>, cwd = ROOT): Promise<Run> {
  const p = Bun.spawn([...cmd, ...args], { cwd, env: cleanEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, stdout, stderr }
}

/**
 * How long startServe waits for serve's start line before it kills it and fails with what it printed:
 * under the 60 s timeouts of the tests that call it, so that its message shows.
 */
const START_DEADLINE_MS = 45_000

/**
 * Starts `serve`, waits for its "http listening" log line and for its start line (HTTP answers before
 * the workers and SMTP have started; the start line comes once all have), and returns the port and a
 * stop function. A serve that exits first, or has not started within START_DEADLINE_MS (it is then
 * killed), fails with what it printed.
 */
export async function startServe(cmd: string[], args: string[], env: Record<string, string>, cwd = ROOT) {
  const p = Bun.spawn([...cmd, 'serve', ...args], { cwd, env: cleanEnv({ MAILCTL_LOG_LEVEL: 'info', ...env }), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  let late = false
  const deadline = setTimeout(() => { late = true; p.kill('SIGKILL') }, START_DEADLINE_MS)
  // stderr is read all along (the human start line goes there), so the child never blocks on it either.
  let stderr = ''
  let started = () => {}
  const startLine = new Promise<void>((resolve) => { started = resolve })
  const stderrDone = (async () => {
    const decoder = new TextDecoder()
    const r = p.stderr.getReader()
    for (;;) {
      const { value, done } = await r.read()
      if (done) break
      stderr += decoder.decode(value, { stream: true })
      if (/ is running: .*\n/.test(stderr)) started()
    }
    started()
  })()
  const reader = p.stdout.getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  let port = 0
  const lines: string[] = []
  while (!port) {
    const { value, done } = await reader.read()
    if (done) {
      const code = await p.exited
      await stderrDone
      clearTimeout(deadline)
      throw new Error(`serve ${late ? `had not started within ${START_DEADLINE_MS} ms (killed)` : `exited before listening (code ${code})`}: ${lines.join('\n')} ${buffered} ${stderr}`)
    }
    buffered += decoder.decode(value, { stream: true })
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      lines.push(line)
      try {
        const rec = JSON.parse(line) as { msg?: string; port?: number }
        if (rec.msg === 'http listening' && rec.port) port = rec.port
      } catch { /* not a log line */ }
    }
  }
  // Keep draining stdout so the child never blocks on a full pipe; a line split across reads is kept whole.
  const drained = (async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buffered += decoder.decode(value, { stream: true })
      const parts = buffered.split('\n')
      buffered = parts.pop() ?? ''
      lines.push(...parts.filter(Boolean))
    }
    if (buffered) lines.push(buffered)
  })()
  await startLine
  clearTimeout(deadline)
  if (late) {
    await drained
    await stderrDone
    throw new Error(`serve had not started within ${START_DEADLINE_MS} ms (killed): ${lines.join('\n')} ${stderr}`)
  }
  return {
    port,
    lines,
    pid: p.pid,
    /** Sends a signal (SIGKILL: a crash); `exited` resolves with the exit code. */
    kill: (signal: NodeJS.Signals) => p.kill(signal),
    exited: p.exited,
    /** What serve wrote on stderr so far. */
    stderr: () => stderr,
    /** SIGTERM, then the exit code (graceful shutdown exits 0). */
    async stop(): Promise<number> {
      p.kill('SIGTERM')
      const code = await p.exited
      await drained
      await stderrDone
      return code
    },
  }
}
