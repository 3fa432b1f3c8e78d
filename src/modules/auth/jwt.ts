import { createHmac, timingSafeEqual } from 'node:crypto'

/** HS256 JSON Web Tokens for the dashboard session cookie (docs/decisions.md, Dashboard sessions). */
const b64url = (buf: Buffer | string) => Buffer.from(buf).toString('base64url')

export interface SessionClaims { sub: string; iat: number; exp: number; [k: string]: unknown }

export function signJwt(claims: Record<string, unknown>, secret: string, ttlSeconds: number, now: number): string {
  const iat = Math.floor(now / 1000)
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))
  const payload = b64url(JSON.stringify({ ...claims, iat, exp: iat + ttlSeconds }))
  const sig = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')
  return `${header}.${payload}.${sig}`
}

export function verifyJwt(token: string, secret: string, now: number): SessionClaims | null {
  const parts = token.split('.')
  if (parts.length !== 3) return null
  const [header, payload, sig] = parts
  const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest()
  const given = Buffer.from(sig, 'base64url')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  try {
    const h = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))
    if (h.alg !== 'HS256') return null
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as SessionClaims
    if (typeof claims.sub !== 'string' || typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return null
    return claims
  } catch {
    return null
  }
}
