import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, run, startServe } from './run'
import { loadDashboard } from '../helpers/dashboard'

setDefaultTimeout(180_000)

/**
 * The acceptance check of the foundation issue: `npm run build` makes dist/mailctl, which needs nothing
 * beside it (migrations embedded): run from an empty directory, `migrate` creates ./data (other commands
 * refuse to create a store), and `serve` answers.
 */
const BIN = join(ROOT, 'dist', 'mailctl')
const cwd = mkdtempSync(join(tmpdir(), 'mailctl-bin-'))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

beforeAll(async () => {
  const build = Bun.spawn(['npm', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited])
  if (code !== 0) throw new Error(`npm run build failed (${code}): ${out}\n${err}`)
})

test('npm run build produces an executable dist/mailctl', () => {
  expect(existsSync(BIN)).toBe(true)
})

test('dist/mailctl from an empty directory: project create refuses to create a store; after migrate it prints {id, name, publicKey, secretKey}', async () => {
  const refused = await run([BIN], ['project', 'create', '--name', 'demo', '--json'], {}, cwd)
  expect(refused.code).toBe(2)
  expect(refused.stderr).toStartWith(`error: no mailctl database at ${join(cwd, 'data', 'mailctl.db')}`)
  expect(existsSync(join(cwd, 'data'))).toBe(false)
  expect((await run([BIN], ['--version'], {}, cwd)).stdout).toBe('0.1.0\n')
  expect((await run([BIN], ['migrate'], {}, cwd)).code).toBe(0)
  const res = await run([BIN], ['project', 'create', '--name', 'demo', '--json'], {}, cwd)
  expect(res.stderr).toBe('')
  expect(res.code).toBe(0)
  const out = JSON.parse(res.stdout)
  expect(Object.keys(out).sort()).toEqual(['id', 'name', 'publicKey', 'secretKey'])
  expect(out.name).toBe('demo')
  expect(out.secretKey).toMatch(/^sk_[0-9a-f]{64}$/)
  expect(existsSync(join(cwd, 'data', 'mailctl.db'))).toBe(true)
  expect(existsSync(join(cwd, 'data', 'secret.key'))).toBe(true)
})

test('dist/mailctl serve answers GET /config and /ready and stops on SIGTERM', async () => {
  const s = await startServe([BIN], [], { MAILCTL_HTTP_PORT: '0', MAILCTL_HTTP_HOST: '127.0.0.1', MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_OUTBOUND: 'capture' }, cwd)
  try {
    const res = await fetch(`http://127.0.0.1:${s.port}/config`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { version: string; features: { signup: { disabled: boolean } } }
    expect(body.version).toBe('0.1.0')
    expect(body.features.signup.disabled).toBe(false)
    expect((await fetch(`http://127.0.0.1:${s.port}/ready`)).status).toBe(200)
    const docs = await fetch(`http://127.0.0.1:${s.port}/docs`)
    expect(docs.status).toBe(200)
    expect(await docs.text()).toContain('/users/@me/projects')
    // The dashboard's bundle is embedded: served from an empty directory, without web/ beside it.
    const app = await loadDashboard(`http://127.0.0.1:${s.port}`, '/app/projects')
    expect(app.status).toBe(200)
    expect(app.assets.length).toBeGreaterThanOrEqual(2)
    for (const a of app.assets) expect({ url: a.url, status: a.status }).toEqual({ url: a.url, status: 200 })
    const list = await run([BIN], ['project', 'list', '--json'], {}, cwd)
    expect((JSON.parse(list.stdout) as Array<{ name: string }>).map((p) => p.name)).toEqual(['demo'])
  } finally {
    expect(await s.stop()).toBe(0)
  }
})

test('dist/mailctl serve: authenticated requests log JSON lines only (no "[Sucrose] warning" with minified source)', async () => {
  const created = JSON.parse((await run([BIN], ['project', 'create', '--name', 'sucrose', '--json'], {}, cwd)).stdout) as { secretKey: string; publicKey: string }
  const s = await startServe([BIN], [], { MAILCTL_HTTP_PORT: '0', MAILCTL_HTTP_HOST: '127.0.0.1', MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_OUTBOUND: 'capture' }, cwd)
  try {
    const base = `http://127.0.0.1:${s.port}`
    const call = (method: string, path: string, key: string | null, body?: unknown) => fetch(`${base}${path}`, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
    // The key and session hooks, and the routes with their own transform (send, suppressions).
    expect((await call('GET', '/contacts', created.secretKey)).status).toBe(200)
    expect((await call('POST', '/v1/send', created.secretKey, { to: 'a@b.test', subject: 's', body: 'b', data: 'x' })).status).toBe(422)
    expect((await call('POST', '/suppressions', created.secretKey, { email: ' x@y.test ' })).status).toBe(200)
    expect((await call('POST', '/v1/track', created.publicKey, { event: 'signup', email: 'a@b.test' })).status).toBe(200)
    expect((await call('GET', '/users/@me', null)).status).toBe(401)
    expect((await call('GET', '/contacts', null)).status).toBe(401)
  } finally {
    expect(await s.stop()).toBe(0)
  }
  expect(s.lines.join('\n')).not.toContain('[Sucrose]')
  const notJson = s.lines.filter((l) => { try { JSON.parse(l); return false } catch { return true } })
  expect(notJson).toEqual([])
  expect(s.lines.some((l) => l.includes('"path":"/v1/send"'))).toBe(true)
})

test('dist/mailctl backup takes its snapshot on the embedded worker, restore brings it back, and mcp answers the official SDK client', async () => {
  const created = JSON.parse((await run([BIN], ['project', 'create', '--name', 'archived', '--json'], {}, cwd)).stdout) as { secretKey: string }
  const archive = join(cwd, 'backup.tar')
  const b = await run([BIN], ['backup', archive, '--json'], {}, cwd)
  expect(b.code).toBe(0)
  const restoredDir = join(cwd, 'restored')
  const r = await run([BIN], ['restore', archive, '--json'], { MAILCTL_DATA_DIR: restoredDir }, cwd)
  expect(r.code).toBe(0)
  const names = (JSON.parse((await run([BIN], ['project', 'list', '--json'], { MAILCTL_DATA_DIR: restoredDir }, cwd)).stdout) as Array<{ name: string }>).map((p) => p.name)
  expect(names).toContain('archived')

  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js')
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js')
  const client = new Client({ name: 'binary-test', version: '1.0.0' })
  await client.connect(new StdioClientTransport({ command: BIN, args: ['mcp'], cwd, env: { PATH: process.env.PATH ?? '', MAILCTL_LOG_LEVEL: 'warn', MAILCTL_MCP_KEY: created.secretKey } }))
  try {
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('track_event')
    const res = await client.callTool({ name: 'upsert_contact', arguments: { email: 'bin@example.com' } }) as { isError?: boolean; content: Array<{ text: string }> }
    expect(res.isError).toBeFalsy()
    expect(JSON.parse(res.content[0].text).email).toBe('bin@example.com')
  } finally {
    await client.close()
  }
})
