import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { dkimKey } from '../../../src/secrets'

const CLI = join(import.meta.dir, '../../../cli/mailctl.ts')

async function cli(env: TestEnv, args: string[]) {
  const proc = Bun.spawn([process.execPath, CLI, ...args], {
    env: { ...process.env, DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir, MAILCTL_JWT_SECRET: 'cli-test', MAILCTL_DKIM_KEY: dkimKey(env.config).toString('base64'), MAILCTL_LOG_LEVEL: 'warn', MAILCTL_SQLITE_SYNCHRONOUS: 'NORMAL' },
    stdout: 'pipe', stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

forEachStore('mailctl contacts import/export', (env) => {
  test('import reports created and failed rows; export writes CSV that imports back unchanged', async () => {
    const p = await env.project()
    const file = join(env.config.dataDir, 'in.csv')
    await Bun.write(file, 'email,plan,seats,subscribed,meta\na@example.com,pro,3,true,"{""x"":1}"\nbad,free,1,,\nb@example.com,"free, annual",,false,\n')
    const imp = await cli(env, ['--json', 'contacts', 'import', p.name, file])
    expect(imp.code).toBe(1)
    expect(JSON.parse(imp.stdout)).toEqual({ created: 2, updated: 0, skipped: 0, failed: 1, errors: [{ row: 3, message: 'Invalid email "bad"' }] })
    const a = await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: { emails: ['a@example.com'] } })
    expect((await env.request('GET', `/contacts/${a.body.results[0].id}`, { key: p.secretKey })).body.data).toEqual({ plan: 'pro', seats: 3, meta: { x: 1 } })

    const exp = await cli(env, ['contacts', 'export', p.id])
    expect(exp.code).toBe(0)
    const lines = exp.stdout.trim().split('\n')
    expect(lines[0]).toBe('id,email,subscribed,createdAt,updatedAt,meta,plan,seats')
    expect(lines.length).toBe(3)
    expect(lines.some((l) => l.includes(',b@example.com,false,') && l.includes('"free, annual"'))).toBe(true)
    const round = join(env.config.dataDir, 'out.csv')
    await Bun.write(round, exp.stdout)
    const again = await cli(env, ['--json', 'contacts', 'import', p.id, round])
    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout)).toMatchObject({ created: 0, updated: 0, skipped: 2, failed: 0 })
  }, 60_000)

  test('errors: unknown project and missing file', async () => {
    const p = await env.project()
    const unknown = await cli(env, ['contacts', 'export', 'no-such-project'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('NOT_FOUND')
    const missing = await cli(env, ['contacts', 'import', p.id, '/nonexistent/file.csv'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('no such file')
  }, 60_000)
})

forEachStore('mailctl contacts import --map (issue 37)', (env) => {
  test('--dry-run shows the mapping and failing rows; --map types a column and renames it; bad flags exit 2', async () => {
    const p = await env.project()
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'old@example.com', data: { plan: 'free' } } })
    const file = join(env.config.dataDir, 'map.csv')
    await Bun.write(file, 'E-Mail,Plan,Seats,Junk\na@example.com,Pro,3,x\nb@example.com,Free,many,y\n')
    const dry = await cli(env, ['--json', 'contacts', 'import', p.id, file, '--map', 'Seats=seats:number', '--dry-run'])
    expect(dry.code).toBe(1)
    const preview = JSON.parse(dry.stdout)
    expect(preview.columns.map((c: { to: string; field?: string }) => `${c.to}:${c.field ?? ''}`)).toEqual(['email:', 'field:plan', 'field:seats', 'field:junk'])
    expect(preview).toMatchObject({ totalRows: 2, failing: 1, errors: [{ row: 3, message: 'Column seats: "many" is not a number' }] })
    const imp = await cli(env, ['--json', 'contacts', 'import', p.id, file, '--map', 'Seats=seats:number', '--map', 'Junk=-'])
    expect(imp.code).toBe(1)
    expect(JSON.parse(imp.stdout)).toMatchObject({ created: 1, failed: 1 })
    const a = await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: { emails: ['a@example.com'] } })
    expect((await env.request('GET', `/contacts/${a.body.results[0].id}`, { key: p.secretKey })).body.data).toEqual({ plan: 'Pro', seats: 3 })
    const bad = await cli(env, ['contacts', 'import', p.id, file, '--map', 'Seats'])
    expect(bad.code).toBe(2)
    const badType = await cli(env, ['contacts', 'import', p.id, file, '--map', 'Seats=seats:float'])
    expect(badType.code).not.toBe(0)
    expect(badType.stderr).toContain('mapping.0.type')
  }, 60_000)
})
