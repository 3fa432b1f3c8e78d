/** Dashboard accounts for tests: verified users created through the service, sessions through POST /auth/login. */
import { desc, eq } from 'drizzle-orm'
import type { TestEnv } from './env'
import { createUser } from '../../src/modules/users/service'

export interface TestUser { id: string; email: string; password: string; cookie: string }

let n = 0
export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}-${Date.now().toString(36)}-${++n}-${Math.random().toString(36).slice(2, 6)}@example.com`
}

/** The `name=value` part of a Set-Cookie header, ready for a Cookie header. */
export function cookieFrom(headers: Headers): string {
  const set = headers.get('set-cookie')
  if (!set) throw new Error('no Set-Cookie header')
  return set.split(';')[0]
}

/** A verified user, logged in over HTTP. */
export async function verifiedUser(env: TestEnv, prefix = 'user'): Promise<TestUser> {
  const email = uniqueEmail(prefix)
  const password = `correct horse ${Math.random().toString(36).slice(2)}`
  const row = await createUser(env.deps, { email, password }, { verified: true })
  const res = await env.request('POST', '/auth/login', { body: { email, password } })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`)
  return { id: row.id, email, password, cookie: cookieFrom(res.headers) }
}

/** A project created over HTTP by `user` (OWNER), with its keys. */
export async function ownedProject(env: TestEnv, user: TestUser, name = `proj-${Math.random().toString(36).slice(2, 8)}`) {
  const res = await env.request('POST', '/users/@me/projects', { cookie: user.cookie, body: { name } })
  if (res.status !== 201) throw new Error(`project create failed: ${res.status} ${res.text}`)
  return res.body as { id: string; name: string; publicKey: string; secretKey: string }
}

/** The newest captured system mail to an address (verification, reset, invitation). */
export async function lastMail(env: TestEnv, to: string, kind?: string) {
  const { mailCapture } = env.store.t
  const rows = await env.store.db.select().from(mailCapture).where(eq(mailCapture.toAddress, to)).orderBy(desc(mailCapture.createdAt), desc(mailCapture.id))
  return rows.find((r) => !kind || r.kind === kind)
}

/** The token a captured mail carries (the `token=` query parameter of its link). */
export function tokenIn(text: string | null | undefined): string {
  const m = /token=([A-Za-z0-9_%-]+)/.exec(text ?? '')
  if (!m) throw new Error(`no token in mail: ${text}`)
  return decodeURIComponent(m[1])
}

/** Invites `email` to the project as `by` and returns the token of the emailed link. */
export async function inviteToken(env: TestEnv, by: TestUser, projectId: string, email: string, role: 'ADMIN' | 'MEMBER' = 'MEMBER'): Promise<{ id: string; token: string }> {
  const res = await env.request('POST', `/projects/${projectId}/members`, { cookie: by.cookie, body: { email, role } })
  if (res.status !== 201 || res.body.status !== 'invited') throw new Error(`invite failed: ${res.status} ${res.text}`)
  return { id: res.body.id, token: tokenIn((await lastMail(env, email, 'invitation'))?.text) }
}

/** A new verified user invited to the project by its owner with `role` (ADMIN or MEMBER), who accepted through the emailed link. */
export async function memberOf(env: TestEnv, owner: TestUser, projectId: string, role: 'ADMIN' | 'MEMBER', prefix = role.toLowerCase()): Promise<TestUser> {
  const u = await verifiedUser(env, prefix)
  const { token } = await inviteToken(env, owner, projectId, u.email, role)
  const res = await env.request('POST', '/users/@me/invitations/accept', { cookie: u.cookie, body: { token } })
  if (res.status !== 200 || res.body.role !== role) throw new Error(`accept failed: ${res.status} ${res.text}`)
  return u
}
