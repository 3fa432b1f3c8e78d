import { beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { workflowProject, wfClient, type WfProject } from './fixture'

/** The workflow routes: happy, error and security cases (no key, public key, another project's ids). */
forEachStore('workflows API', (env) => {
  let p: WfProject
  let other: WfProject
  let welcome: string
  beforeAll(async () => {
    p = await workflowProject(env)
    other = await workflowProject(env)
    welcome = await p.tpl('Welcome', 'TRANSACTIONAL', 'Welcome {{firstName}}', '<p>Hi {{firstName}}</p>')
  })

  test('create: triggerType EVENT, enabled false, one TRIGGER step; list and get', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Onboarding', eventName: 'signup', enabled: true, triggerType: 'SCHEDULE' })
    expect(wf).toMatchObject({ name: 'Onboarding', triggerType: 'EVENT', triggerConfig: { eventName: 'signup' }, enabled: false, allowReentry: false, transitions: [] })
    expect(wf.steps).toHaveLength(1)
    expect(wf.steps[0]).toMatchObject({ type: 'TRIGGER' })
    const viaConfig = await c.create({ name: 'Alt', triggerConfig: { eventName: 'purchase' }, allowReentry: true })
    expect(viaConfig).toMatchObject({ triggerConfig: { eventName: 'purchase' }, allowReentry: true })
    const list = await c.call('GET', '/workflows?pageSize=1')
    expect(list).toMatchObject({ page: 1, pageSize: 1, total: 2, totalPages: 2 })
    expect(list.data[0].id).toBe(viaConfig.id)
    expect((await c.call('GET', '/workflows?search=onboard')).data.map((w: { id: string }) => w.id)).toEqual([wf.id])
    expect((await c.call('GET', `/workflows/${wf.id}`)).id).toBe(wf.id)
  })

  test('create errors: missing name or event is 422', async () => {
    const r = await env.request('POST', '/workflows', { key: p.secretKey, body: { eventName: 'x' } })
    expect(r.status).toBe(422)
    expect(r.body.error.code).toBe('VALIDATION_ERROR')
    const r2 = await env.request('POST', '/workflows', { key: p.secretKey, body: { name: 'x' } })
    expect(r2.status).toBe(422)
    expect(r2.body.error.errors[0].field).toBe('eventName')
  })

  test('security: no key 401, public key 401, another project\'s workflow 404 on every route', async () => {
    const wf = await wfClient(env, p.secretKey).create({ name: 'Mine', eventName: 'signup' })
    expect((await env.request('GET', '/workflows')).status).toBe(401)
    const pub = await env.request('GET', '/workflows', { key: p.publicKey })
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
    expect((await env.request('POST', '/workflows', { key: p.publicKey, body: { name: 'x', eventName: 'y' } })).status).toBe(401)
    const stepId = wf.steps[0].id
    const foreign: Array<[string, string, unknown?]> = [
      ['GET', `/workflows/${wf.id}`], ['PATCH', `/workflows/${wf.id}`, { name: 'stolen' }], ['DELETE', `/workflows/${wf.id}`],
      ['POST', `/workflows/${wf.id}/steps`, { type: 'EXIT', config: {} }], ['PATCH', `/workflows/${wf.id}/steps/${stepId}`, { name: 'x' }],
      ['DELETE', `/workflows/${wf.id}/steps/${stepId}`], ['POST', `/workflows/${wf.id}/transitions`, { fromStepId: stepId, toStepId: stepId }],
      ['DELETE', `/workflows/${wf.id}/transitions/x`], ['POST', `/workflows/${wf.id}/executions`, { email: 'a@b.test' }],
      ['GET', `/workflows/${wf.id}/executions`], ['GET', `/workflows/${wf.id}/executions/x`], ['DELETE', `/workflows/${wf.id}/executions/x`],
      ['POST', `/workflows/${wf.id}/executions/cancel-all`],
    ]
    for (const [method, path, body] of foreign) {
      const r = await env.request(method, path, { key: other.secretKey, body })
      expect(`${method} ${path} ${r.status}`).toBe(`${method} ${path} 404`)
    }
    expect((await env.request('GET', `/workflows/${wf.id}`, { key: p.secretKey })).body.name).toBe('Mine')
  })

  test('steps: configs are checked per type (422 naming config.<key>), templates must be of the project', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Configs', eventName: 'signup' })
    const bad: Array<[string, Record<string, unknown>, string]> = [
      ['SEND_EMAIL', {}, 'config.templateId'],
      ['SEND_EMAIL', { templateId: crypto.randomUUID() }, 'config.templateId'],
      ['SEND_EMAIL', { templateId: welcome, recipient: { type: 'CUSTOM' } }, 'config.recipient.email'],
      ['DELAY', { amount: 0, unit: 'days' }, 'config.amount'],
      ['DELAY', { amount: 1, unit: 'weeks' }, 'config.unit'],
      ['DELAY', { amount: 366, unit: 'days' }, 'config.amount'],
      ['WAIT_FOR_EVENT', { timeout: 10 }, 'config.eventName'],
      ['WAIT_FOR_EVENT', { eventName: 'x', timeout: -1 }, 'config.timeout'],
      ['CONDITION', { field: 'data.plan', operator: 'bogus', value: 1 }, 'config'],
      ['CONDITION', { field: 'context.plan', operator: 'within', value: 1 }, 'config.operator'],
      ['WEBHOOK', { url: 'ftp://x.test/' }, 'config.url'],
      ['WEBHOOK', { url: 'https://x.test/', headers: { 'X-A': 'a\r\nb' } }, 'config.headers'],
      ['UPDATE_CONTACT', {}, 'config'],
    ]
    for (const [type, config, field] of bad) {
      const r = await env.request('POST', `/workflows/${wf.id}/steps`, { key: p.secretKey, body: { type, config } })
      expect(`${type} ${JSON.stringify(config)} ${r.status}`).toBe(`${type} ${JSON.stringify(config)} 422`)
      expect(r.body.error.errors.map((e: { field: string }) => e.field).some((f: string) => f.startsWith(field))).toBe(true)
    }
    // Another project's template is not found in this one.
    const foreignTpl = await other.tpl('Theirs', 'TRANSACTIONAL', 'S', '<p>b</p>')
    expect((await env.request('POST', `/workflows/${wf.id}/steps`, { key: p.secretKey, body: { type: 'SEND_EMAIL', config: { templateId: foreignTpl } } })).status).toBe(422)
    expect((await env.request('POST', `/workflows/${wf.id}/steps`, { key: p.secretKey, body: { type: 'TRIGGER', config: {} } })).status).toBe(422)
    const ok = await c.step(wf.id, 'SEND_EMAIL', { templateId: welcome }, 'Welcome mail')
    expect(ok).toMatchObject({ type: 'SEND_EMAIL', name: 'Welcome mail', config: { templateId: welcome, recipient: { type: 'CONTACT' } } })
    const hook = await c.step(wf.id, 'WEBHOOK', { url: 'https://hooks.test/x', method: 'put' })
    expect(hook.config.method).toBe('PUT')
    const upd = await c.call('PATCH', `/workflows/${wf.id}/steps/${ok.id}`, { name: 'Renamed', position: { x: 10, y: 20 } })
    expect(upd).toMatchObject({ name: 'Renamed', position: { x: 10, y: 20 } })
    expect((await env.request('PATCH', `/workflows/${wf.id}/steps/${ok.id}`, { key: p.secretKey, body: { config: { templateId: 'nope' } } })).status).toBe(422)
    expect((await env.request('PATCH', `/workflows/${wf.id}/steps/${crypto.randomUUID()}`, { key: p.secretKey, body: { name: 'x' } })).status).toBe(404)
  })

  test('transitions: branches per step type, one way out, no way into the trigger', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Branches', eventName: 'signup' })
    const trigger = wf.steps[0].id
    const cond = await c.step(wf.id, 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' })
    const exit = await c.step(wf.id, 'EXIT', {})
    const wait = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'purchase', timeout: 60 })
    await c.link(wf.id, trigger, cond.id)
    const dup = await env.request('POST', `/workflows/${wf.id}/transitions`, { key: p.secretKey, body: { fromStepId: trigger, toStepId: exit.id } })
    expect(dup.status).toBe(409)
    const noBranch = await env.request('POST', `/workflows/${wf.id}/transitions`, { key: p.secretKey, body: { fromStepId: cond.id, toStepId: exit.id } })
    expect(noBranch.status).toBe(422)
    expect(noBranch.body.error.errors[0].field).toBe('branch')
    expect((await env.request('POST', `/workflows/${wf.id}/transitions`, { key: p.secretKey, body: { fromStepId: cond.id, toStepId: exit.id, branch: 'event' } })).status).toBe(422)
    expect((await env.request('POST', `/workflows/${wf.id}/transitions`, { key: p.secretKey, body: { fromStepId: exit.id, toStepId: cond.id } })).status).toBe(422)
    expect((await env.request('POST', `/workflows/${wf.id}/transitions`, { key: p.secretKey, body: { fromStepId: cond.id, toStepId: trigger, branch: 'yes' } })).status).toBe(422)
    expect((await env.request('POST', `/workflows/${wf.id}/transitions`, { key: p.secretKey, body: { fromStepId: crypto.randomUUID(), toStepId: exit.id } })).status).toBe(422)
    const yes = await c.link(wf.id, cond.id, wait.id, 'yes')
    expect(yes).toMatchObject({ fromStepId: cond.id, toStepId: wait.id, branch: 'yes' })
    expect((await env.request('POST', `/workflows/${wf.id}/transitions`, { key: p.secretKey, body: { fromStepId: cond.id, toStepId: exit.id, branch: 'yes' } })).status).toBe(409)
    await c.call('DELETE', `/workflows/${wf.id}/transitions/${yes.id}`, undefined, 204)
    expect((await env.request('DELETE', `/workflows/${wf.id}/transitions/${yes.id}`, { key: p.secretKey })).status).toBe(404)
    expect((await c.call('GET', `/workflows/${wf.id}`)).transitions).toHaveLength(1)
  })

  test('enabling validates the graph: each fault names its step (422), and editing an enabled workflow is checked the same way', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Graph', eventName: 'signup' })
    const trigger = wf.steps[0].id
    const send = await c.step(wf.id, 'SEND_EMAIL', { templateId: welcome }, 'Hello')
    const cond = await c.step(wf.id, 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' }, 'Is pro')
    const wait = await c.step(wf.id, 'WAIT_FOR_EVENT', { eventName: 'purchase', timeout: 60 }, 'Buy')
    const lonely = await c.step(wf.id, 'EXIT', {}, 'Lonely')
    await c.link(wf.id, trigger, send.id)
    await c.link(wf.id, send.id, cond.id)
    await c.link(wf.id, cond.id, wait.id, 'yes')
    const r = await env.request('PATCH', `/workflows/${wf.id}`, { key: p.secretKey, body: { enabled: true } })
    expect(r.status).toBe(422)
    const faults = r.body.error.errors as Array<{ field: string; message: string; code: string }>
    const at = (id: string) => faults.filter((f) => f.field === `steps.${id}`).map((f) => f.code)
    expect(at(cond.id)).toContain('missing_branch')
    expect(faults.find((f) => f.field === `steps.${cond.id}`)?.message).toContain('step "Is pro" (CONDITION)')
    expect(at(wait.id)).toEqual(['missing_branch', 'missing_branch'])
    expect(at(lonely.id)).toEqual(['unreachable'])
    expect((await c.call('GET', `/workflows/${wf.id}`)).enabled).toBe(false)

    // A cycle without a pause: CONDITION no -> SEND -> CONDITION.
    const end = await c.step(wf.id, 'EXIT', {}, 'End')
    await c.call('DELETE', `/workflows/${wf.id}/steps/${lonely.id}`, undefined, 204)
    await c.link(wf.id, cond.id, send.id, 'no')
    await c.link(wf.id, wait.id, end.id, 'event')
    await c.link(wf.id, wait.id, end.id, 'timeout')
    const cyc = await env.request('PATCH', `/workflows/${wf.id}`, { key: p.secretKey, body: { enabled: true } })
    expect(cyc.status).toBe(422)
    expect(cyc.body.error.errors.map((e: { code: string }) => e.code)).toEqual(['cycle'])
    // Through a DELAY the loop is allowed.
    const noEdge = (await c.call('GET', `/workflows/${wf.id}`)).transitions.find((t: { branch: string | null }) => t.branch === 'no')
    await c.call('DELETE', `/workflows/${wf.id}/transitions/${noEdge.id}`, undefined, 204)
    const pause = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'days' }, 'Pause')
    await c.link(wf.id, cond.id, pause.id, 'no')
    await c.link(wf.id, pause.id, send.id)
    const on = await c.enable(wf.id)
    expect(on.enabled).toBe(true)

    // Edits of an enabled workflow that break it are refused, and change nothing.
    const cut = await env.request('DELETE', `/workflows/${wf.id}/transitions/${on.transitions.find((t: { fromStepId: string }) => t.fromStepId === trigger).id}`, { key: p.secretKey })
    expect(cut.status).toBe(422)
    expect((await env.request('POST', `/workflows/${wf.id}/steps`, { key: p.secretKey, body: { type: 'EXIT', config: {} } })).status).toBe(422)
    const noTimeout = await env.request('PATCH', `/workflows/${wf.id}/steps/${wait.id}`, { key: p.secretKey, body: { config: { eventName: 'purchase' } } })
    expect(noTimeout.status).toBe(422)
    expect(noTimeout.body.error.errors[0].field).toBe(`steps.${wait.id}`)
    const after = await c.call('GET', `/workflows/${wf.id}`)
    expect(after.transitions).toHaveLength(on.transitions.length)
    expect(after.steps).toHaveLength(on.steps.length)
    // A harmless edit passes.
    expect((await c.call('PATCH', `/workflows/${wf.id}/steps/${pause.id}`, { config: { amount: 2, unit: 'hours' } })).config).toEqual({ amount: 2, unit: 'hours' })
  })

  test('delete a step with splice reconnects its neighbours; the trigger cannot be deleted', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Splice', eventName: 'signup' })
    const trigger = wf.steps[0].id
    const a = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'minutes' })
    const b = await c.step(wf.id, 'EXIT', {})
    await c.link(wf.id, trigger, a.id)
    await c.link(wf.id, a.id, b.id)
    await c.enable(wf.id)
    // Without splice the exit would be cut off: refused while enabled.
    expect((await env.request('DELETE', `/workflows/${wf.id}/steps/${a.id}`, { key: p.secretKey })).status).toBe(422)
    await c.call('DELETE', `/workflows/${wf.id}/steps/${a.id}?splice=true`, undefined, 204)
    const after = await c.call('GET', `/workflows/${wf.id}`)
    expect(after.steps.map((s: { id: string }) => s.id)).toEqual([trigger, b.id])
    expect(after.transitions).toMatchObject([{ fromStepId: trigger, toStepId: b.id, branch: null }])
    const r = await env.request('DELETE', `/workflows/${wf.id}/steps/${trigger}`, { key: p.secretKey })
    expect(r.status).toBe(422)
    expect((await env.request('DELETE', `/workflows/${wf.id}/steps/${crypto.randomUUID()}`, { key: p.secretKey })).status).toBe(404)
  })

  test('executions: start (404 unknown contact, 409 on re-entry), list by status, get, cancel one and all; delete refused while active', async () => {
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Runs', eventName: 'signup' })
    const d = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'days' })
    await c.link(wf.id, wf.steps[0].id, d.id)
    const emails = ['r1@x.test', 'r2@x.test', 'r3@x.test']
    for (const email of emails) expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email } })).status).toBeLessThan(300)
    const e1 = await c.call('POST', `/workflows/${wf.id}/executions`, { email: 'R1@x.test', context: { plan: 'pro' } })
    expect(e1).toMatchObject({ workflowId: wf.id, status: 'RUNNING', context: { plan: 'pro' }, triggerEventId: null })
    const again = await env.request('POST', `/workflows/${wf.id}/executions`, { key: p.secretKey, body: { email: 'r1@x.test' } })
    expect(again.status).toBe(409)
    expect((await env.request('POST', `/workflows/${wf.id}/executions`, { key: p.secretKey, body: { email: 'nobody@x.test' } })).status).toBe(404)
    expect((await env.request('POST', `/workflows/${wf.id}/executions`, { key: p.secretKey, body: {} })).status).toBe(422)
    // Another project's contact is not found here.
    const theirs = await env.request('POST', '/contacts', { key: other.secretKey, body: { email: 'theirs@x.test' } })
    expect((await env.request('POST', `/workflows/${wf.id}/executions`, { key: p.secretKey, body: { contactId: theirs.body.id } })).status).toBe(404)
    await c.call('POST', `/workflows/${wf.id}/executions`, { email: 'r2@x.test' })
    await c.call('POST', `/workflows/${wf.id}/executions`, { email: 'r3@x.test' })

    const page1 = await c.call('GET', `/workflows/${wf.id}/executions?limit=2`)
    expect(page1).toMatchObject({ total: 3, hasMore: true })
    const page2 = await c.call('GET', `/workflows/${wf.id}/executions?limit=2&cursor=${page1.cursor}`)
    expect(page2).toMatchObject({ total: 0, hasMore: false })
    expect([...page1.data, ...page2.data].map((e: { id: string }) => e.id)).toContain(e1.id)
    expect((await env.request('GET', `/workflows/${wf.id}/executions?status=BOGUS`, { key: p.secretKey })).status).toBe(400)

    const got = await c.call('GET', `/workflows/${wf.id}/executions/${e1.id}`)
    expect(got).toMatchObject({ id: e1.id, steps: [] })
    const conflict = await env.request('DELETE', `/workflows/${wf.id}`, { key: p.secretKey })
    expect(conflict.status).toBe(409)
    expect(conflict.body.error.code).toBe('CONFLICT')

    const cancelled = await c.call('DELETE', `/workflows/${wf.id}/executions/${e1.id}`)
    expect(cancelled.status).toBe('CANCELLED')
    expect((await env.request('DELETE', `/workflows/${wf.id}/executions/${e1.id}`, { key: p.secretKey })).status).toBe(409)
    expect((await c.call('GET', `/workflows/${wf.id}/executions?status=CANCELLED`)).data.map((e: { id: string }) => e.id)).toEqual([e1.id])
    expect(await c.call('POST', `/workflows/${wf.id}/executions/cancel-all`)).toEqual({ cancelled: 2 })
    expect((await c.call('GET', `/workflows/${wf.id}/executions?status=RUNNING`)).total).toBe(0)
    await c.call('DELETE', `/workflows/${wf.id}`, undefined, 204)
    expect((await env.request('GET', `/workflows/${wf.id}`, { key: p.secretKey })).status).toBe(404)
  })

  test('fields, and the usage of templates and events', async () => {
    const c = wfClient(env, p.secretKey)
    const tpl = await p.tpl('Used', 'TRANSACTIONAL', 'S', '<p>b</p>')
    const wf = await c.create({ name: 'Uses', eventName: 'used-event' })
    const s = await c.step(wf.id, 'SEND_EMAIL', { templateId: tpl })
    const usage = await c.call('GET', `/templates/${tpl}/usage`)
    expect(usage).toMatchObject({ inUse: true, workflowSteps: [{ workflowId: wf.id, stepId: s.id, enabled: false }] })
    expect((await env.request('DELETE', `/templates/${tpl}`, { key: p.secretKey })).status).toBe(409)
    const ev = await c.call('GET', '/events/used-event/usage')
    expect(ev.workflows).toMatchObject([{ id: wf.id, where: 'trigger' }])
    const fields = await c.call('GET', '/workflows/fields')
    expect(fields.contact.map((f: { field: string }) => f.field)).toContain('email')
    expect(fields.event.map((f: { field: string }) => f.field)).toContain('context.event.name')
  })
})
