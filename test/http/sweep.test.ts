import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../helpers/env'
import { memberOf, ownedProject, verifiedUser } from '../helpers/accounts'

/**
 * The security sweep (issue 35, Figures): every route of the route table, walked (never listed by hand),
 * gets the documented refusal for no credentials, the wrong kind of key, another project's key, a
 * non-member's session and a lesser role. Routes without credentials must be in the documented public list.
 */

interface Route { method: string; path: string; hooks: Record<string, unknown> }
type Auth = 'key' | 'track' | 'session' | 'none'

/** The routes that need no credentials (docs/decisions.md, API.md): anything else must declare its security. */
const PUBLIC = [
  /^GET \/(health|ready|metrics|config|docs|openapi\.json|)$/, /^(GET|POST) \/auth\//, /^(GET|POST) \/(unsubscribe|subscribe|manage)\/:token$/,
  /^GET \/t\/[oc]\/:token$/, /^POST \/webhooks\/(notifications|incoming\/:provider)$/, /^GET \/uploads\/:name$/,
  /^OPTIONS \/v1\/track$/, /^GET \/app(\/\*)?$/, /^GET \/app-assets\/:name$/,
]

/** Bodies that pass validation, where a route validates before it looks at the project. */
const VALID: Record<string, unknown> = {
  'POST /projects/:id/members': { email: 'invitee@example.com', role: 'MEMBER' },
  'PATCH /projects/:id/members/:userId': { role: 'ADMIN' },
  'POST /users/@me/invitations/accept': { token: 'x'.repeat(43) },
}

function authOf(r: Route): Auth {
  const detail = (r.hooks.detail ?? {}) as { security?: unknown }
  const s = JSON.stringify(detail.security ?? [])
  if (s.includes('publicKey')) return 'track'
  if (s.includes('secretKey')) return 'key'
  if (s.includes('session')) return 'session'
  return 'none'
}

const rolesOf = (r: Route) => ((r.hooks.detail ?? {}) as { 'x-roles'?: string[] })['x-roles'] ?? null

function walk(env: TestEnv): Array<Route & { auth: Auth }> {
  return (env.app.routes as Route[]).map((r) => ({ ...r, auth: authOf(r) }))
}

/** A path for the route: `:id`-like parameters filled from `ids` (by the route's prefix), else a fresh uuid. */
function fill(path: string, ids: Record<string, string>): string {
  return path.replace(/:([A-Za-z]+)/g, (_m, name: string) => {
    const prefix = path.slice(1, path.indexOf(`:${name}`) - 1)
    return ids[`${prefix}:${name}`] ?? ids[name] ?? crypto.randomUUID()
  })
}

forEachStore('security sweep over the route table', (env) => {
  test('every route declares its credentials or is documented as public', () => {
    const undeclared = walk(env).filter((r) => r.auth === 'none' && !PUBLIC.some((re) => re.test(`${r.method} ${r.path}`)))
    expect(undeclared.map((r) => `${r.method} ${r.path}`)).toEqual([])
    expect(walk(env).filter((r) => r.auth === 'key').length).toBeGreaterThan(80)
  })

  test('no key, a wrong key, the wrong kind of key, another project\'s key, a non-member, a lesser role', async () => {
    const owner = await verifiedUser(env, 'sweep-owner')
    const a = await ownedProject(env, owner)
    const b = await env.project()
    const member = await memberOf(env, owner, a.id, 'MEMBER')
    const stranger = await verifiedUser(env, 'sweep-stranger')
    // Resources of project A, so that another project's key asks for things that exist.
    const contact = (await env.request('POST', '/contacts', { key: a.secretKey, body: { email: 'sweep@example.com' } })).body.id
    const segment = (await env.request('POST', '/segments', { key: a.secretKey, body: { name: 'Sweep', type: 'STATIC' } })).body.id
    const workflow = (await env.request('POST', '/workflows', { key: a.secretKey, body: { name: 'Sweep', eventName: 'sweep' } })).body.id
    const domain = (await env.request('POST', '/domains', { key: a.secretKey, body: { projectId: a.id, domain: `sweep-${Math.random().toString(36).slice(2, 8)}.example.com` } })).body.id
    const endpoint = (await env.request('POST', '/webhooks/endpoints', { key: a.secretKey, body: { url: 'https://hooks.example.com/x', events: ['email.sent'] } })).body.id
    // An invitation of project A addressed to someone else: the invitee routes answer 404 to anyone else.
    const invitation = (await env.request('POST', `/projects/${a.id}/members`, { cookie: owner.cookie, body: { email: 'sweep-invitee@example.com' } })).body.id
    const ids: Record<string, string> = {
      'contacts:id': contact, 'events/contact:contactId': contact, 'segments:id': segment, 'workflows:id': workflow,
      'domains:id': domain, 'domains/project:projectId': a.id, 'webhooks/endpoints:id': endpoint,
      'users/@me/projects:id': a.id, 'users/@me/invitations:id': invitation, 'projects:id': a.id, id: a.id,
    }
    const failures: string[] = []
    let invitee = 0
    const check = (label: string, got: { status: number; body: { error?: { code?: string } } }, status: number, code?: string) => {
      if (got.status !== status || (code && got.body?.error?.code !== code)) failures.push(`${label}: ${got.status} ${got.body?.error?.code ?? ''} (want ${status}${code ? ` ${code}` : ''})`)
    }
    for (const r of walk(env)) {
      const path = fill(r.path, ids)
      const label = `${r.method} ${r.path}`
      const body = r.method === 'GET' || r.method === 'DELETE' ? undefined : (VALID[label] ?? {})
      if (r.auth === 'key' || r.auth === 'track') {
        check(`${label} no key`, await env.request(r.method, path, { body }), 401, 'UNAUTHORIZED')
        check(`${label} unknown key`, await env.request(r.method, path, { body, key: `sk_${'0'.repeat(64)}` }), 401, 'INVALID_API_KEY')
        if (r.auth === 'key') check(`${label} public key`, await env.request(r.method, path, { body, key: a.publicKey }), 401, 'INVALID_API_KEY')
        if (/:/.test(r.path)) {
          const other = await env.request(r.method, path, { body, key: b.secretKey })
          if (other.status !== 404 && other.status !== 422) failures.push(`${label} another project's key: ${other.status}`)
        }
        const nonMember = await env.request(r.method, path, { body, cookie: stranger.cookie, headers: { 'x-project-id': a.id } })
        check(`${label} non-member session`, nonMember, 404, 'NOT_FOUND')
        if (rolesOf(r) && !rolesOf(r)?.includes('MEMBER')) {
          check(`${label} MEMBER`, await env.request(r.method, path, { body, cookie: member.cookie, headers: { 'x-project-id': a.id } }), 403, 'FORBIDDEN')
        }
      } else if (r.auth === 'session') {
        check(`${label} no session`, await env.request(r.method, path, { body }), 401, 'UNAUTHORIZED')
        check(`${label} a key instead`, await env.request(r.method, path, { body, key: a.secretKey }), 401, 'UNAUTHORIZED')
        if (/\/(projects|users\/@me\/projects)\/:id/.test(r.path)) {
          check(`${label} non-member session`, await env.request(r.method, path, { body, cookie: stranger.cookie }), 404)
        }
        // Someone else's invitation (by id or by a token that is not theirs): 404 (issue 35, item 4).
        if (r.method === 'POST' && /^\/users\/@me\/invitations\//.test(r.path)) {
          check(`${label} someone else's invitation`, await env.request(r.method, path, { body, cookie: stranger.cookie }), 404, 'NOT_FOUND')
          check(`${label} the inviter`, await env.request(r.method, path, { body, cookie: owner.cookie }), 404, 'NOT_FOUND')
          invitee += 1
        }
      }
    }
    expect(failures).toEqual([])
    // The invitee routes were walked: accept by token, accept and decline by id.
    expect(invitee).toBe(3)
  }, 120_000)
})
