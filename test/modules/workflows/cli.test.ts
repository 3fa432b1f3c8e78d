import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { run, SOURCE } from '../../cli/run'
import { must } from '../../helpers/must'
import { dkimKey } from '../../../src/secrets'
import { workflowProject, wfClient } from './fixture'

/** `mailctl workflow list|show|executions PROJECT ...`, run from source as a child process on the test's store. */

const cli = (env: TestEnv, args: string[]) => run(SOURCE, args, {
  DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir, MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'jwtSecret'),
  MAILCTL_DKIM_KEY: dkimKey(env.config).toString('base64'),
})

forEachStore('mailctl workflow', (env) => {
  test('list, show with steps and counts, executions and one execution; bad input exits non-zero', async () => {
    const p = await workflowProject(env)
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'From the shell', eventName: 'signup' })
    const d = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'days' }, 'Wait a day')
    await c.link(wf.id, wf.steps[0].id, d.id)
    await c.enable(wf.id)
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'cli@x.test' } })
    const e = await c.call('POST', `/workflows/${wf.id}/executions`, { email: 'cli@x.test' })

    const list = await cli(env, ['--json', 'workflow', 'list', p.name])
    expect(list.code).toBe(0)
    expect(JSON.parse(list.stdout)).toMatchObject([{ id: wf.id, name: 'From the shell', enabled: true, triggerConfig: { eventName: 'signup' } }])
    expect((await cli(env, ['workflow', 'list', p.id])).stdout).toContain('From the shell')

    const shown = await cli(env, ['--json', 'workflow', 'show', p.id, wf.id])
    expect(shown.code).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: wf.id, steps: [{ type: 'TRIGGER' }, { type: 'DELAY', name: 'Wait a day' }], executions: { RUNNING: 1, COMPLETED: 0 } })
    expect((await cli(env, ['workflow', 'show', p.id, wf.id])).stdout).toMatch(/Trigger -> Wait a day/)

    const execs = await cli(env, ['--json', 'workflow', 'executions', p.id, wf.id, '--status', 'RUNNING'])
    expect(execs.code).toBe(0)
    expect(JSON.parse(execs.stdout).map((x: { id: string }) => x.id)).toEqual([e.id])
    const one = await cli(env, ['--json', 'workflow', 'executions', p.id, wf.id, e.id])
    expect(JSON.parse(one.stdout)).toMatchObject({ id: e.id, status: 'RUNNING', steps: [] })
    expect((await cli(env, ['workflow', 'executions', p.id, wf.id, '--status', 'DONE'])).code).not.toBe(0)
    const missing = await cli(env, ['workflow', 'show', p.id, crypto.randomUUID()])
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toMatch(/not found/i)
  }, 60_000)
})
