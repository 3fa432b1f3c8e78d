import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pkg from '../../package.json'
import { run, SOURCE, startServe } from './run'
import { freePort } from '../helpers/ports'

/** `mailctl serve` and its ports: a busy port stops it (issue 18 #10), 465 moves (#12), one start line. */

setDefaultTimeout(60_000)

const root = mkdtempSync(join(tmpdir(), 'mailctl-serve-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const dataDir = () => join(root, `d${++n}`)

/** Holds a port the way a server that allows sharing does (SO_REUSEPORT, as Elysia asks by default). */
function holdShared(): { port: number; stop(): void } {
  const other = Bun.serve({ port: 0, hostname: '127.0.0.1', reusePort: true, fetch: () => new Response('the other server') })
  return { port: other.port ?? 0, stop: () => other.stop(true) }
}

const quiet = { MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_HTTP_HOST: '127.0.0.1', MAILCTL_OUTBOUND: 'capture' }

describe('a busy HTTP port', () => {
  test('stops serve with one clear line naming MAILCTL_HTTP_PORT, even when the other server allows sharing', async () => {
    const other = holdShared()
    try {
      const res = await run(SOURCE, ['serve', '--role', 'api'], { ...quiet, MAILCTL_DATA_DIR: dataDir(), MAILCTL_HTTP_PORT: String(other.port) })
      expect(res.code).toBe(1)
      expect(res.stderr.trim().split('\n')).toEqual([
        `error: MAILCTL_HTTP_PORT: 127.0.0.1:${other.port} is already in use (another mailctl serve?): stop that process or choose another port, or set MAILCTL_HTTP_REUSE_PORT=true to share it on purpose`,
      ])
      expect(res.stdout).not.toContain('"http listening"')
      // the other server still has the port to itself
      expect(await (await fetch(`http://127.0.0.1:${other.port}/`)).text()).toBe('the other server')
    } finally {
      other.stop()
    }
  })

  test('a port held without sharing is refused the same way', async () => {
    const held: Server = createServer()
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', () => r()))
    const port = (held.address() as { port: number }).port
    try {
      const res = await run(SOURCE, ['serve', '--role', 'api'], { ...quiet, MAILCTL_DATA_DIR: dataDir(), MAILCTL_HTTP_PORT: String(port) })
      expect(res.code).toBe(1)
      expect(res.stderr).toStartWith(`error: MAILCTL_HTTP_PORT: 127.0.0.1:${port} is already in use`)
    } finally {
      await new Promise<void>((r) => held.close(() => r()))
    }
  })

  test('MAILCTL_HTTP_REUSE_PORT=true shares it on purpose', async () => {
    const other = holdShared()
    try {
      const s = await startServe(SOURCE, ['--role', 'api'], { ...quiet, MAILCTL_DATA_DIR: dataDir(), MAILCTL_HTTP_PORT: String(other.port), MAILCTL_HTTP_REUSE_PORT: 'true' })
      expect(s.port).toBe(other.port)
      expect(await s.stop()).toBe(0)
    } finally {
      other.stop()
    }
  })
})

test('a busy SMTP port stops serve naming its setting', async () => {
  const held: Server = createServer()
  await new Promise<void>((r) => held.listen(0, '0.0.0.0', () => r()))
  const port = (held.address() as { port: number }).port
  try {
    const res = await run(SOURCE, ['serve', '--role', 'smtp'], { ...quiet, MAILCTL_DATA_DIR: dataDir(), MAILCTL_SMTP_INBOUND_PORT: String(port) })
    expect(res.code).toBe(1)
    expect(res.stderr.trim().split('\n')).toEqual([`error: MAILCTL_SMTP_INBOUND_PORT: 0.0.0.0:${port} is already in use (another mailctl serve?): stop that process or choose another port`])
  } finally {
    await new Promise<void>((r) => held.close(() => r()))
  }
})

const certDir = mkdtempSync(join(tmpdir(), 'mailctl-serve-tls-'))
afterAll(() => rmSync(certDir, { recursive: true, force: true }))
const made = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(certDir, 'key.pem'), '-out', join(certDir, 'cert.pem'), '-days', '2', '-subj', '/CN=serve.mailctl.test'], { stderr: 'pipe' })

test.skipIf(made.exitCode !== 0 && !process.env.CI)('MAILCTL_SMTP_SECURE_PORT moves implicit TLS; serve prints one start line with the API, docs and SMTP ports', async () => {
  expect(made.exitCode).toBe(0)
  const [relay, secure] = [freePort(), freePort()]
  const s = await startServe(SOURCE, ['--role', 'api', '--role', 'smtp'], {
    ...quiet, MAILCTL_DATA_DIR: dataDir(), MAILCTL_HTTP_PORT: '0', MAILCTL_SMTP_RELAY_PORT: String(relay), MAILCTL_SMTP_SECURE_PORT: String(secure),
    MAILCTL_SMTP_TLS_CERT: join(certDir, 'cert.pem'), MAILCTL_SMTP_TLS_KEY: join(certDir, 'key.pem'),
  })
  try {
    const config = (await (await fetch(`http://127.0.0.1:${s.port}/config`)).json()) as { features: { smtp: { ports: unknown } } }
    expect(config.features.smtp.ports).toEqual({ submission: relay, secure })
    // the implicit-TLS listener answers on the moved port
    const tls = await Bun.connect({ hostname: '127.0.0.1', port: secure, tls: { rejectUnauthorized: false }, socket: { data() {} } })
    tls.end()
    for (let i = 0; i < 100 && !s.stderr().includes('\n'); i++) await Bun.sleep(20)
    expect(s.stderr()).toBe(`mailctl ${pkg.version} is running: API http://127.0.0.1:${s.port}/v1/; docs http://127.0.0.1:${s.port}/docs; public URL http://localhost:3000; SMTP submission ${relay}, implicit TLS ${secure} (Ctrl-C stops)\n`)
    // every stdout line stays JSON
    for (const line of s.lines) expect(() => JSON.parse(line)).not.toThrow()
    // JSON log lines are flushed every few milliseconds: the start line on stderr may come first.
    const relayLine = () => s.lines.map((l) => JSON.parse(l) as { msg: string; securePort?: number }).find((l) => l.msg === 'smtp relay listening')
    for (let i = 0; i < 250 && !relayLine(); i++) await Bun.sleep(20)
    expect(relayLine()?.securePort).toBe(secure)
  } finally {
    expect(await s.stop()).toBe(0)
  }
})

