import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { run, SOURCE } from '../../cli/run'
import { must } from '../../helpers/must'
import { dkimKey } from '../../../src/secrets'
import { addDomain, campaignBody } from './fixture'

/** `mailctl campaign list|show|send|cancel PROJECT [ID]`, run from source as a child process on the test's store. */

const cli = (env: TestEnv, args: string[]) => run(SOURCE, args, {
  DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir, MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'jwtSecret'),
  // The test environment's DKIM key, as a setting: on PostgreSQL keys come from the configuration only.
  MAILCTL_DKIM_KEY: dkimKey(env.config).toString('base64'),
})

forEachStore('mailctl campaign', (env) => {
  test('list, send at a time, show with stats, cancel; refusals exit non-zero with the reason', async () => {
    const p = await env.project()
    const domain = `cli-${Math.random().toString(36).slice(2, 8)}.test`
    await addDomain(env, p.id, domain, true)
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ name: 'From the shell', from: `news@${domain}` }) })
    expect(c.status).toBe(200)
    const id = c.body.data.id as string

    const list = await cli(env, ['--json', 'campaign', 'list', p.name])
    expect(list.code).toBe(0)
    expect(JSON.parse(list.stdout)).toMatchObject([{ id, name: 'From the shell', status: 'DRAFT' }])
    const human = await cli(env, ['campaign', 'list', p.id])
    expect(human.stdout).toContain('From the shell')
    expect((await cli(env, ['campaign', 'list', p.id, '--status', 'DONE'])).code).not.toBe(0)

    const at = new Date(Date.now() + 86_400_000).toISOString()
    const sent = await cli(env, ['--json', 'campaign', 'send', p.id, id, '--at', at])
    expect(sent.code).toBe(0)
    expect(JSON.parse(sent.stdout)).toEqual({ id, name: 'From the shell', status: 'SCHEDULED', scheduledFor: at })
    const again = await cli(env, ['campaign', 'send', p.id, id])
    expect(again.code).not.toBe(0)
    expect(again.stderr).toMatch(/only a DRAFT/)

    const shown = await cli(env, ['--json', 'campaign', 'show', p.id, id])
    expect(shown.code).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, status: 'SCHEDULED', scheduledFor: at, stats: { queued: 0, skippedSuppressed: 0 } })
    expect((await cli(env, ['campaign', 'show', p.id, id])).stdout).toMatch(/status\s+SCHEDULED/)

    const cancelled = await cli(env, ['--json', 'campaign', 'cancel', p.id, id])
    expect(cancelled.code).toBe(0)
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ id, status: 'CANCELLED' })
    const twice = await cli(env, ['campaign', 'cancel', p.id, id])
    expect(twice.code).not.toBe(0)
    expect(twice.stderr).toMatch(/CANCELLED/)
    expect((await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body.status).toBe('CANCELLED')

    const other = await env.project()
    const foreign = await cli(env, ['campaign', 'show', other.id, id])
    expect(foreign.code).not.toBe(0)
    expect(foreign.stderr).toMatch(/not found/i)
  }, 60_000)
})
