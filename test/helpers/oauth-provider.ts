/**
 * A fake OAuth provider on 127.0.0.1 speaking both GitHub's and Google's dialects (the endpoints of
 * src/modules/auth/oauth-providers.ts under a base URL): authorize redirects straight back with a code for
 * the account the test chose, the token endpoint checks the client, the code and the redirect URI, and the
 * user endpoints answer for the access token. It records every request it saw.
 */
import { randomBytes } from 'node:crypto'

export interface FakeAccount {
  id: string | number
  email: string
  /** GitHub: the primary address's `verified`; Google: `email_verified`. */
  verified: boolean
  name?: string
  login?: string
  /** GitHub: other addresses of the account (not primary). */
  others?: Array<{ email: string; verified: boolean }>
}

export interface FakeProvider {
  url: string
  clientId: string
  clientSecret: string
  /** The account the next authorize request signs in as. */
  account: FakeAccount
  /**
   * deny: authorize answers error=access_denied; tokenError: the token endpoint refuses every code;
   * userError: the user endpoints answer 500; hang: the token endpoint does not answer until the client gives up.
   */
  mode: 'ok' | 'deny' | 'tokenError' | 'userError' | 'hang'
  /** Every request: method, path and (for the token endpoint) the form. */
  seen: Array<{ method: string; path: string; query: Record<string, string>; form?: Record<string, string>; authorization?: string | null }>
  stop(): void
}

export function startFakeProvider(opts: { clientId?: string; clientSecret?: string } = {}): FakeProvider {
  const codes = new Map<string, { account: FakeAccount; redirectUri: string }>()
  const tokens = new Map<string, FakeAccount>()
  const fake = {
    clientId: opts.clientId ?? `client-${randomBytes(4).toString('hex')}`,
    clientSecret: opts.clientSecret ?? `secret-${randomBytes(8).toString('hex')}`,
    account: { id: 1, email: 'someone@example.com', verified: true },
    mode: 'ok',
    seen: [],
  } as unknown as FakeProvider

  const json = (body: unknown, status = 200) => Response.json(body, { status })
  const accountFor = (req: Request): FakeAccount | undefined => tokens.get((req.headers.get('authorization') ?? '').replace(/^Bearer /, ''))

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const u = new URL(req.url)
      const query = Object.fromEntries(u.searchParams)
      const entry: FakeProvider['seen'][number] = { method: req.method, path: u.pathname, query, authorization: req.headers.get('authorization') }
      fake.seen.push(entry)
      // Authorize (GitHub's and Google's paths): straight back to the client with a code.
      if (req.method === 'GET' && (u.pathname === '/login/oauth/authorize' || u.pathname === '/o/oauth2/v2/auth')) {
        if (query.client_id !== fake.clientId || !query.redirect_uri || query.response_type !== 'code') return json({ error: 'invalid_request' }, 400)
        const back = new URL(query.redirect_uri)
        if (query.state !== undefined) back.searchParams.set('state', query.state)
        if (fake.mode === 'deny') {
          back.searchParams.set('error', 'access_denied')
        } else {
          const code = randomBytes(12).toString('hex')
          codes.set(code, { account: fake.account, redirectUri: query.redirect_uri })
          back.searchParams.set('code', code)
        }
        return new Response(null, { status: 302, headers: { location: back.toString() } })
      }
      if (req.method === 'POST' && (u.pathname === '/login/oauth/access_token' || u.pathname === '/token')) {
        const form = Object.fromEntries(new URLSearchParams(await req.text()))
        entry.form = form
        // Hangs until the client gives up (or 5 s pass), then answers into the void.
        if (fake.mode === 'hang') await new Promise((r) => { req.signal.addEventListener('abort', r); setTimeout(r, 5000) })
        const github = u.pathname === '/login/oauth/access_token'
        const refuse = (error: string) => (github ? json({ error }) : json({ error }, 400))
        if (form.client_id !== fake.clientId || form.client_secret !== fake.clientSecret) return refuse('incorrect_client_credentials')
        const grant = codes.get(form.code ?? '')
        if (fake.mode === 'tokenError' || !grant || grant.redirectUri !== form.redirect_uri) return refuse(github ? 'bad_verification_code' : 'invalid_grant')
        codes.delete(form.code)
        const token = randomBytes(16).toString('hex')
        tokens.set(token, grant.account)
        return json({ access_token: token, token_type: 'bearer', scope: 'read:user,user:email' })
      }
      if (req.method === 'GET' && ['/user', '/user/emails', '/v1/userinfo'].includes(u.pathname)) {
        if (fake.mode === 'userError') return json({ message: 'Server Error' }, 500)
        const a = accountFor(req)
        if (!a) return json({ message: 'Bad credentials' }, 401)
        if (u.pathname === '/user') return json({ id: a.id, login: a.login ?? 'octocat', name: a.name ?? null, email: null })
        if (u.pathname === '/user/emails') {
          return json([
            ...(a.others ?? []).map((o) => ({ ...o, primary: false, visibility: null })),
            { email: a.email, primary: true, verified: a.verified, visibility: 'private' },
          ])
        }
        return json({ sub: String(a.id), email: a.email, email_verified: a.verified, name: a.name })
      }
      return json({ message: 'Not Found' }, 404)
    },
  })
  fake.url = `http://127.0.0.1:${server.port}`
  fake.stop = () => { server.stop(true) }
  return fake
}
