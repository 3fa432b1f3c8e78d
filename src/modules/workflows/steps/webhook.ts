import type { FetchLike } from '../../../deps'
import { StepFailure, type StepRunner } from './types'

/**
 * WEBHOOK: one HTTP(S) call, 10 s at most, the response body kept up to 64 KB. The request and the response
 * are recorded on the step execution. A status >= 400, a timeout or a refused address fails the step.
 *
 * The call goes through `deps.webhookFetch`, else `defaultWebhookFetch` below. This module never calls the
 * network itself: the SSRF guard (no loopback, private, link-local, CGNAT, ULA or metadata address, checked
 * at connect time; no redirect to another host; the operator's allow-list) is the shared safe fetch of
 * src/net, which the default is pointed at when it lands.
 */
export const WEBHOOK_TIMEOUT_MS = 10_000
export const MAX_RESPONSE_BYTES = 64 * 1024

/** Until src/net/safe-fetch.ts exists, a WEBHOOK without an injected fetch fails instead of calling out unguarded. */
export const defaultWebhookFetch: FetchLike = async () => {
  throw new StepFailure('WEBHOOK calls are disabled in this build: the SSRF-safe fetch (src/net/safe-fetch) is not installed')
}

/** Reads at most `max` bytes of a response body (the rest is dropped, and the stream cancelled). */
async function cappedText(res: Response, max: number): Promise<{ text: string; truncated: boolean }> {
  if (!res.body) return { text: '', truncated: false }
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  let truncated = false
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (size + value.byteLength > max) {
      chunks.push(value.subarray(0, max - size))
      size = max
      truncated = true
      await reader.cancel().catch(() => {})
      break
    }
    chunks.push(value)
    size += value.byteLength
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks)), truncated }
}

export const webhook: StepRunner = async ({ ctx, step, exec, contact }) => {
  const url = String(step.config.url)
  const method = String(step.config.method ?? 'POST')
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'mailctl-workflows', ...(step.config.headers as Record<string, string> | undefined) }
  const payload = step.config.body !== undefined
    ? step.config.body
    : { workflowId: exec.workflowId, executionId: exec.id, stepId: step.id, contact: { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data }, context: exec.context }
  const body = method === 'GET' ? undefined : (typeof payload === 'string' ? payload : JSON.stringify(payload))
  const request = { url, method, headers, body: body ?? null }
  const call = ctx.deps.webhookFetch ?? defaultWebhookFetch
  let res: Response
  try {
    res = await call(url, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS) })
  } catch (err) {
    const reason = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${WEBHOOK_TIMEOUT_MS / 1000} s` : err instanceof Error ? err.message : String(err)
    return { kind: 'fail', error: `webhook ${method} ${url}: ${reason}`, output: { request } }
  }
  const { text, truncated } = await cappedText(res, MAX_RESPONSE_BYTES)
  const resHeaders: Record<string, string> = {}
  res.headers.forEach((v, k) => { resHeaders[k] = v })
  const response = { status: res.status, headers: resHeaders, body: text, truncated }
  if (res.status >= 300) {
    return { kind: 'fail', error: `webhook ${method} ${url} answered ${res.status}${res.status < 400 ? ' (redirects are not followed)' : ''}`, output: { request, response } }
  }
  return { kind: 'next', status: 'COMPLETED', output: { request, response } }
}

export { StepFailure }
