import type { TestEnv } from '../../helpers/env'
import { insertTestDomain } from '../../helpers/domains'
import type { NewProject } from '../../../src/modules/projects/service'

/** A project with a verified sender domain and one template of each kind the tests need. */
export async function workflowProject(env: TestEnv, domain = `wf-${Math.random().toString(36).slice(2, 8)}.test`) {
  const p = await env.project()
  await insertTestDomain(env, p.id, domain, { verified: true })
  const tpl = async (name: string, type: string, subject: string, body: string) => {
    const r = await env.request('POST', '/templates', { key: p.secretKey, body: { name, subject, body, from: `hello@${domain}`, type } })
    if (r.status !== 201) throw new Error(`template: ${r.status} ${r.text}`)
    return r.body.id as string
  }
  return { ...p, domain, tpl }
}

export type WfProject = NewProject & { domain: string; tpl: (name: string, type: string, subject: string, body: string) => Promise<string> }

/** Small client of the workflow routes for one project's key: each call asserts the status it expects. */
export function wfClient(env: TestEnv, key: string) {
  const call = async (method: string, path: string, body?: unknown, expected = method === 'POST' && /\/workflows(\/[^/]+\/(steps|transitions|executions))?$/.test(path) ? 201 : 200) => {
    const r = await env.request(method, path, { key, body })
    if (r.status !== expected) throw new Error(`${method} ${path}: expected ${expected}, got ${r.status} ${r.text}`)
    return r.body
  }
  return {
    call,
    create: (body: Record<string, unknown>) => call('POST', '/workflows', body),
    step: (wf: string, type: string, config: Record<string, unknown>, name?: string) => call('POST', `/workflows/${wf}/steps`, { type, config, ...(name ? { name } : {}) }),
    link: (wf: string, fromStepId: string, toStepId: string, branch?: string) => call('POST', `/workflows/${wf}/transitions`, { fromStepId, toStepId, ...(branch ? { branch } : {}) }),
    enable: (wf: string) => call('PATCH', `/workflows/${wf}`, { enabled: true }),
  }
}
