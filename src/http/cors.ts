import { Elysia } from 'elysia'

/**
 * docs/decisions.md, Public key in the browser: a web page calls POST /v1/track with the project's public
 * key from any origin. That route alone answers CORS: its preflight (OPTIONS) and its answers to requests
 * that carry neither a secret key nor a session cookie, errors included (so the page can read a 401, 422 or
 * 429). `*` never lets a browser send credentials, so the dashboard's cookie cannot ride along; a secret
 * key or a cookie sent from a page gets no CORS headers, and the browser keeps the answer from the page.
 */
export const CORS_PATH = '/v1/track'

const ANSWER: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'x-request-id, ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after',
}

const PREFLIGHT: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST',
  'access-control-allow-headers': 'authorization, content-type, idempotency-key',
  'access-control-max-age': '7200',
}

/** The CORS headers for an answer to `request` on `path`, or null when it gets none. */
export function corsAnswerHeaders(path: string, request: Request): Record<string, string> | null {
  if (path !== CORS_PATH || request.method !== 'POST') return null
  if (request.headers.get('cookie')?.includes('mailctl_session=')) return null
  const auth = request.headers.get('authorization')
  if (auth !== null && /^\s*bearer\s+sk_/i.test(auth)) return null
  return ANSWER
}

/** OPTIONS /v1/track: the preflight, for any origin. Every other route answers OPTIONS with the 404 envelope. */
export function corsRoutes() {
  return new Elysia().options(CORS_PATH, ({ set }) => {
    set.status = 204
    Object.assign(set.headers, PREFLIGHT)
    return ''
  }, { detail: { hide: true } })
}
