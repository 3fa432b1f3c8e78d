import { safeFetch, safeFetchOptions, SafeFetchError, type SafeResponse } from '../../../net/safe-fetch'
import type { StepRunner } from './types'

/**
 * WEBHOOK: one HTTP(S) call, 10 s at most, the response body kept up to 64 KB. The request and the response
 * are recorded on the step execution. A status >= 300, a timeout or a refused address fails the step.
 *
 * The call is the shared SSRF-safe fetch of src/net/safe-fetch.ts: no loopback, private, link-local, CGNAT,
 * ULA or metadata address (checked on the resolved address, at connect time), redirects followed only to
 * the same host and port or an allowed host:port (any other fails the step), the operator's allow-list
 * (MAILCTL_WEBHOOK_ALLOW_HOSTS), one framing header, and connections kept alive only within the project.
 */
export const WEBHOOK_TIMEOUT_MS = 10_000
export const MAX_RESPONSE_BYTES = 64 * 1024

export const webhook: StepRunner = async ({ ctx, step, exec, contact }) => {
  const url = String(step.config.url)
  const method = String(step.config.method ?? 'POST')
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'mailctl-workflows', ...(step.config.headers as Record<string, string> | undefined) }
  const payload = step.config.body !== undefined
    ? step.config.body
    : { workflowId: exec.workflowId, executionId: exec.id, stepId: step.id, contact: { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data }, context: exec.context }
  const body = method === 'GET' ? undefined : (typeof payload === 'string' ? payload : JSON.stringify(payload))
  const request = { url, method, headers, body: body ?? null }
  let res: SafeResponse
  try {
    res = await safeFetch(url, { method, headers, body }, {
      ...safeFetchOptions(ctx.deps.config), timeoutMs: WEBHOOK_TIMEOUT_MS, maxBodyBytes: MAX_RESPONSE_BYTES,
      // Keep-alive connections are this project's alone.
      pool: ctx.projectId,
    })
  } catch (err) {
    const reason = err instanceof SafeFetchError && err.code === 'timeout' ? `no answer within ${WEBHOOK_TIMEOUT_MS / 1000} s` : err instanceof Error ? err.message : String(err)
    return { kind: 'fail', error: `webhook ${method} ${url}: ${reason}`, output: { request } }
  }
  const response = { status: res.status, headers: res.headers, body: res.body, truncated: res.truncated }
  if (res.status >= 300) {
    return { kind: 'fail', error: `webhook ${method} ${url} answered ${res.status}`, output: { request, response } }
  }
  return { kind: 'next', status: 'COMPLETED', output: { request, response } }
}
